// Options of the asynchronous trainer (TrainAgentAsync), with the
// reference's semantics. Plain struct with documented defaults; Validate()
// names the first bad field.
#ifndef ASYNCRL_EXPERIMENTS_TRAIN_OPTIONS_H_
#define ASYNCRL_EXPERIMENTS_TRAIN_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "asyncrl/misc/flag_spec.h"

namespace asyncrl {

struct TrainOptions {
  // The most worker processes, and environments per process, a run takes.
  static constexpr int kMaxWorkers = 4096;
  // The longest window of train_returns_window (its shared ring's size).
  static constexpr int64_t kMaxTrainReturnsWindow = 10000;

  // The defaults of steps, eval_interval and eval_n_episodes are
  // train_agent_async's (8e7, 1e6, 10); train_a3c sets its own (run_flags.cc).
  int processes = 1;         // Worker processes, [1, kMaxWorkers].
  int64_t steps = 80000000;  // Global steps to train, >= 1.
  // Wall-clock seconds of training after which the run ends as if its
  // steps were spent (RunTrainer's TimeBudgetExtension,
  // experiments/time_budget.h); 0: no limit.
  double train_seconds = 0;
  int envs_per_process =
      1;  // K environments stepped as a batch, [1, kMaxWorkers].
  // Environment seeds follow misc/seeding.h; >= 0 and
  // seed * processes * envs_per_process < 2^31 - 1.
  int64_t seed = 0;
  // Longest episode in steps, in training and evaluation; 0 leaves it to
  // the environment's own time limit.
  int64_t max_episode_len = 0;
  // Evaluation: every eval_interval global steps (0 = never), exactly one
  // of eval_n_steps / eval_n_episodes > 0 (as the reference: set
  // eval_n_episodes to 0 when giving eval_n_steps).
  int64_t eval_interval = 1000000;
  int64_t eval_n_steps = 0;
  int64_t eval_n_episodes = 10;
  // Stop when an evaluation mean reaches this and save successful/.
  std::optional<double> successful_score;
  // Save best/ whenever an evaluation beats the best so far (the
  // reference's save_best_so_far_agent); off, the best score is still kept
  // (the status line, checkpoints) but best/ is never written.
  bool save_best_so_far_agent = true;
  // The run directory (created if missing): scores.txt and checkpoints go
  // here.
  std::string outdir;
  // Start from this checkpoint directory's agent ("" = a fresh agent):
  // parameters and optimizer statistics only. The step and episode counters,
  // the evaluation schedule and the best score start fresh, as the
  // reference's --load.
  std::string load;
  // The global step counter starts here, and the evaluation schedule at
  // this rounded down to eval_interval (the reference's step_offset, whose
  // evaluator does the same; its asynchronous trainer leaves the counter at
  // 0, its synchronous one starts it here as we do); < steps. Not with
  // `resume`.
  int64_t step_offset = 0;
  // Continue the run of this checkpoint directory exactly ("" = no): agent,
  // step and episode counters, best score, evaluation schedule, elapsed
  // time. Not with `load`.
  std::string resume;
  // Save <t>_checkpoint/ every checkpoint_interval global steps (0 = never),
  // keeping the newest keep_checkpoints of them.
  int64_t checkpoint_interval = 0;
  int keep_checkpoints = 5;
  // Workers get this long to stop by themselves before SIGKILL.
  std::chrono::milliseconds grace{3000};
  // Once the step budget is spent (or an evaluation succeeded), a worker
  // that makes no progress (a training or evaluation step, a save) for
  // this many seconds is killed and the run fails naming it: a stopped or
  // hung worker would otherwise hold the run for ever. > 0.
  double finish_timeout = 60.0;
  // A worker that makes no step for this long is named in a warning (it
  // may be stopped, hung, or in an environment step that long; 0: never).
  std::chrono::milliseconds stall_warning{120000};
  // The parent prints a status line this often (0 = never).
  std::chrono::milliseconds progress_interval{5000};
  // Each worker pins the C library's heap thresholds as it starts
  // (misc/platform/heap.h: no heap churn around updates, whatever the
  // parent allocated before fork). Off for a program that brings its own
  // allocator settings.
  bool pin_heap_thresholds = true;
  // Write a gperftools CPU profile per process to
  // <outdir>/profile-<process_idx>-<pid>.prof (the parent's: profile-parent-).
  bool profile = false;
  // The mean return of the last this many training episodes (environment
  // units) in scores.txt's train_mean, the status line and the end of the
  // run (RunTrainer's TrainingReturnsExtension,
  // experiments/training_returns.h); 0: off. [0, kMaxTrainReturnsWindow].
  int64_t train_returns_window = 100;
  // A collapsed policy is named (RunTrainer's PolicyCollapseExtension,
  // experiments/policy_collapse.h): an evaluating agent's average entropy
  // below this fraction of the largest a policy over the actions can have
  // (ln n, discrete actions only) while the evaluations' means stay at the
  // first evaluations'. [0, 1); 0: never checked.
  double collapse_entropy = 0.01;
  // End the run when the policy collapses (exit status 3, <t>_except/).
  bool stop_on_collapse = false;
  // Recorded in every checkpoint's metadata.
  std::map<std::string, std::string> config;
  std::string env_name;
  // What the training environments multiply rewards by (an extension that
  // measures returns in the environment's units divides it out).
  double reward_scale = 1.0;

  // Throws InvalidOption (misc/validate.h), a std::invalid_argument:
  // "<field>=<value> is invalid; accepted: ...".
  void Validate() const;
  // Its command-line flags (misc/flag_spec.h); the evaluation length and
  // successful score are the program's (experiments/run_flags.h).
  FlagSpecs Flags();
};

// A training return in the environment's units: `scaled_return` divided by
// the reward_scale the training environments multiplied rewards by (a scale
// of 0, which --reward-scale-factor accepts, leaves nothing to divide out).
inline double EnvironmentUnits(double scaled_return, double reward_scale) {
  return reward_scale != 0 ? scaled_return / reward_scale : scaled_return;
}

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_TRAIN_OPTIONS_H_
