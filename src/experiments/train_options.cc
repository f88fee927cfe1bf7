#include "asyncrl/experiments/train_options.h"

#include <cmath>

#include "asyncrl/misc/seeding.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {

void TrainOptions::Validate() const {
  Require(processes >= 1 && processes <= kMaxWorkers, "processes", processes,
          "an integer in [1, " + std::to_string(kMaxWorkers) + "]");
  Require(steps >= 1, "steps", steps, "an integer >= 1");
  Require(std::isfinite(train_seconds) && train_seconds >= 0 &&
              train_seconds <= 1e9,
          "train_seconds", train_seconds,
          "0 (no limit) or a number of seconds in (0, 1e9]");
  Require(step_offset >= 0 && step_offset < steps, "step_offset", step_offset,
          "an integer in [0, steps)");
  Require(envs_per_process >= 1 && envs_per_process <= kMaxWorkers,
          "envs_per_process", envs_per_process,
          "an integer in [1, " + std::to_string(kMaxWorkers) + "]");
  Require(seed >= 0, "seed", seed, "an integer >= 0");
  // Every environment gets its own seed below kMaxSeed (misc/seeding.h).
  const int64_t streams = int64_t{processes} * envs_per_process;
  Require(seed <= (kMaxSeed - streams) / streams, "seed", seed,
          "seed * processes * envs_per_process < " + std::to_string(kMaxSeed));
  Require(max_episode_len >= 0, "max_episode_len", max_episode_len,
          "0 (the environment's limit) or a positive integer");
  Require(std::isfinite(finish_timeout) && finish_timeout > 0 &&
              finish_timeout <= 1e9,
          "finish_timeout", finish_timeout, "a number of seconds in (0, 1e9]");
  Require(eval_interval >= 0, "eval_interval", eval_interval,
          "0 (no evaluation) or a positive integer");
  Require(eval_n_steps >= 0, "eval_n_steps", eval_n_steps,
          "a non-negative integer");
  Require(eval_n_episodes >= 0, "eval_n_episodes", eval_n_episodes,
          "a non-negative integer");
  if (eval_interval > 0) {
    Require(
        (eval_n_steps > 0) != (eval_n_episodes > 0),
        "eval_n_steps/eval_n_episodes",
        std::to_string(eval_n_steps) + "/" + std::to_string(eval_n_episodes),
        "exactly one of them > 0");
  }
  if (successful_score) {
    Require(std::isfinite(*successful_score), "successful_score",
            *successful_score, "a finite number");
    Require(eval_interval > 0, "successful_score", *successful_score,
            "only with evaluation on (eval_interval > 0)");
  }
  Require(checkpoint_interval >= 0, "checkpoint_interval", checkpoint_interval,
          "0 (no periodic checkpoints) or a positive integer");
  Require(keep_checkpoints >= 1, "keep_checkpoints", keep_checkpoints,
          "an integer >= 1");
  Require(train_returns_window >= 0 &&
              train_returns_window <= kMaxTrainReturnsWindow,
          "train_returns_window", train_returns_window,
          "an integer in [0, " + std::to_string(kMaxTrainReturnsWindow) +
              "] (0: off)");
  Require(collapse_entropy >= 0 && collapse_entropy < 1, "collapse_entropy",
          collapse_entropy, "a number in [0, 1) (0: never checked)");
  Require(!stop_on_collapse || collapse_entropy > 0, "stop_on_collapse",
          stop_on_collapse,
          "only with collapse_entropy (--collapse-entropy) above 0");
  Require(!outdir.empty(), "outdir", "\"\"", "a directory path");
  Require(load.empty() || resume.empty(), "load", load,
          "not together with resume (resume continues a run, load starts a "
          "new one from its agent)");
  Require(resume.empty() || step_offset == 0, "step_offset", step_offset,
          "0 with resume (it continues at the checkpoint's step)");
}

FlagSpecs TrainOptions::Flags() {
  FlagSpecs flags = {
      {"processes", "worker processes", &processes},
      {"steps", "global steps to train", &steps},
      {"train-seconds",
       "end the run after this many seconds of training, counted from the "
       "workers' start, as if its steps were spent: <step>_finish/ is saved "
       "and is the final agent (0: no limit; Sample Factory's "
       "train_for_seconds; a resumed run has only the budget its own command "
       "gives)",
       &train_seconds},
      {"step-offset",
       "start the global step counter and the evaluation schedule here "
       "(with --load; the reference's step_offset)",
       &step_offset},
      {"envs-per-process", "environments each worker steps as a batch",
       &envs_per_process},
      {"seed", "random seed (workers derive theirs)", &seed},
      {"max-episode-len",
       "longest episode in steps, training and evaluation: replaces a "
       "built-in environment's time limit (it may be longer) and cuts any "
       "episode (0: the environment's limit)",
       &max_episode_len},
      {"eval-interval", "evaluate every this many global steps (0: never)",
       &eval_interval},
      {"load",
       "start from this checkpoint's agent (parameters and optimizer "
       "statistics); steps, episodes, evaluation schedule and best score "
       "start fresh",
       &load},
      {"checkpoint-interval",
       "save <steps>_checkpoint/ every this many global steps (0: never)",
       &checkpoint_interval},
      {"keep-checkpoints", "how many periodic checkpoints to keep",
       &keep_checkpoints},
      {"finish-timeout",
       "once the steps are spent, kill a worker that makes no step or save "
       "for this many seconds and fail the run naming it",
       &finish_timeout},
      {"train-returns-window",
       "scores.txt's train_mean, the status line and the run's end report "
       "the mean return of the last this many training episodes "
       "(environment units; 0: off)",
       &train_returns_window},
      {"collapse-entropy",
       "warn once (status line: COLLAPSED) when the policy's entropy falls "
       "below this fraction of its largest (ln of the number of actions) "
       "while the evaluation means stay at the first evaluations' "
       "(discrete actions; 0: never)",
       &collapse_entropy},
      {"stop-on-collapse",
       "end the run when the policy collapses (--collapse-entropy): "
       "<steps>_except/ is saved and the exit status is 3",
       &stop_on_collapse},
      {"profile",
       "write a CPU profile per process to profile-<process_idx>-<pid>.prof "
       "(read with google-pprof --text)",
       &profile}};
  return flags;
}

}  // namespace asyncrl
