// The trainer's command line (the reference example's flags and defaults),
// parsed with Boost.Program_options into the plain option structs it fills:
// TrainOptions, A3COptions and the run's own settings. train_a3c and every
// program built on RunTrainer (experiments/run_trainer.h) share it.
#ifndef ASYNCRL_EXPERIMENTS_RUN_FLAGS_H_
#define ASYNCRL_EXPERIMENTS_RUN_FLAGS_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/models.h"
#include "asyncrl/agents/ppo.h"
#include "asyncrl/envs/env.h"
#include "asyncrl/experiments/curriculum/curriculum.h"
#include "asyncrl/experiments/hosts/hosts_options.h"
#include "asyncrl/experiments/learner/learner_options.h"
#include "asyncrl/experiments/self_play/self_play.h"
#include "asyncrl/experiments/train_options.h"
#include "asyncrl/misc/flag_spec.h"

namespace asyncrl {

struct RunFlags;
// The options of --algorithm ppo: PPO's own flags and A3C's of the same
// meaning (acting, optimizer, t_max, gamma, normalization, beta, lambda,
// normalize_advantages).
PPOOptions PpoOptions(const RunFlags& flags);

struct RunFlags {
  TrainOptions train;
  A3COptions agent;
  // --algorithm: a3c, or ppo (agents/ppo.h), whose own options are `ppo`'s
  // and whose others are `agent`'s flags of the same meaning (PpoOptions).
  std::string algorithm = "a3c";
  PPOOptions ppo;
  std::string env = "CartPole-v1";
  // --env-kwargs: keyword arguments for an environment that takes them (a
  // JSON object; python:MODULE:FACTORY's factory gets them), "" for none.
  std::string env_kwargs;
  // --env-param NAME=VALUE (repeatable, or comma-separated): parameters of
  // every environment of the run (envs/env.h), checked against --env's
  // declarations; in the order given, a later one overriding an earlier.
  std::vector<std::string> env_param_args;
  std::vector<std::pair<std::string, double>> env_params;
  // --curriculum FILE: samplers and lessons of the training environments'
  // parameters (experiments/curriculum/curriculum.h), parsed into
  // `curriculum` (null without the flag).
  std::string curriculum_file;
  std::shared_ptr<const Curriculum> curriculum;
  // Two-player games (experiments/self_play/self_play.h): the snapshot
  // pool, the opponents of training and evaluation, ratings. Used when the
  // environment is a game (envs/games/self_play_env.h).
  SelfPlayOptions self_play;
  // Hosts that train this model together (experiments/hosts/); nnodes 1:
  // this host alone.
  DistOptions dist;
  // --learner: a learner process beside the workers
  // (experiments/learner/).
  LearnerOptions learner;
  std::string arch = "auto";
  // --hidden-sizes, --activation, --conv-channels: the network's shape
  // (agents/models.h's NetworkOptions).
  NetworkOptions network;
  std::string outdir = "results";
  double reward_scale_factor = 1.0;
  // Which of the environment family's defaults this run took, and why
  // (one line the run prints first; empty when the flags gave them all).
  std::string defaults_note;
  // --scale-observations: every environment wrapped in ScaleObservations
  // (envs/wrappers.h): observations from their bounds to [-1, 1].
  bool scale_observations = false;
  bool lr_decay = false;
  bool beta_decay = false;
  // --no-save-best-so-far-agent: TrainOptions::save_best_so_far_agent off.
  bool no_save_best = false;
  bool demo = false;
  // --export FILE: the --load agent's policy written as a TorchScript module
  // (agents/policy_script.h) instead of training.
  std::string export_file;
  // --record FILE (with --demo): the evaluation episodes as an animated GIF.
  std::string record_file;
  // Episodes the final agent and best/ are each evaluated on when the run
  // ends (experiments/final_evaluation.h); 0: none.
  int64_t final_eval_n_runs = 100;
  bool quiet = false;
  // --resume: the checkpoint directory and the run folder it belongs to.
  std::string resume;
  std::string resume_run;
  int64_t resume_step = 0;  // The resumed checkpoint's global step.
  // Options the command line changed relative to the resumed run's
  // args.json: "lr: 0.0007 -> 0.0005".
  std::vector<std::string> resume_changes;
  std::map<std::string, std::string> resume_saved;  // The run's args.json.
  std::string log_level = "info";
  bool help = false;
  bool version = false;
  std::string help_text;
  // Every resolved option as text, for args.json and checkpoints.
  std::map<std::string, std::string> resolved;
};

// Thrown for any invalid flag; what() is the one-line message
// "--flag=value is invalid; accepted: ..." (exit status 2).
class FlagError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the parser needs to know about the program it parses for.
struct FlagContext {
  // The program's name, first in --help and --version.
  std::string program = "train_a3c";
  // Builds the environment named by --env to read its spaces (image
  // observations get their own defaults); it throws std::invalid_argument
  // for an unknown name. Empty: the registry (envs/registry.h), and --env
  // must name a registered environment.
  std::function<std::unique_ptr<Env>(const std::string& env)> probe_env;
  // Whether the agent is the built-in A3C, built from --arch: then --arch
  // is checked against the spaces. A program with its own agent ignores it.
  bool a3c_agent = true;
  // The program's own flags (shown under its name in --help, recorded in
  // args.json, restored by --resume); each fills the variable it points to.
  FlagSpecs program_flags;
};

// The flag that fills an options field, as InvalidOption names it: t_max ->
// t-max, plus the few flags that keep the reference's names
// (eval_n_episodes -> eval-n-runs).
std::string FlagName(const std::string& field);

// Parses and validates argv (and --config FILE). Checks everything that can
// be checked without side effects: ranges, conflicts, environment and arch
// names, the --load directory. Creates nothing. Throws FlagError.
RunFlags ParseRunFlags(int argc, const char* const* argv,
                       const FlagContext& context = {});

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_RUN_FLAGS_H_
