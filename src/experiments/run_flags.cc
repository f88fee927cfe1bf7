// The command line as a pipeline of stages, in the order ParseRunFlags runs
// them (declare, merge the sources, resolve, probe the environment, its
// family's defaults, the run's inputs, the structs' rules, record, the
// resume check). Over 500 lines on purpose: each stage is under 80 lines,
// and reading them in order in one file is how the command line is
// understood; the sources' merge is flag_sources.cc.
#include "asyncrl/experiments/run_flags.h"

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>
#include <variant>

#include "asyncrl/agents/models.h"
#include "asyncrl/agents/targets.h"
#include "asyncrl/envs/games/self_play_env.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/envs/wrappers.h"
#include "asyncrl/experiments/flag_sources.h"
#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/config_file.h"
#include "asyncrl/misc/json.h"
#include "asyncrl/misc/output_file.h"
#include "asyncrl/misc/picture.h"
#include "asyncrl/misc/seeding.h"
#include "asyncrl/misc/strings.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace po = boost::program_options;

// The flag that fills an options field: t_max -> t-max, with the few
// flags that keep the reference's names.
std::string FlagName(const std::string& field) {
  static const std::map<std::string, std::string> kRenamed = {
      {"eval_n_episodes", "eval-n-runs"},
      {"reward_scale", "reward-scale-factor"},
      {"max_episode_steps", "max-episode-len"}};
  const auto it = kRenamed.find(field);
  if (it != kRenamed.end()) return it->second;
  std::string flag = field;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

namespace {

// A value with its default, shown in --help as written ("0.99", not
// boost's round-trip "0.98999999999999999").
template <typename T>
po::typed_value<T>* Value(T* target, const std::common_type_t<T>& default_value,
                          const std::string& shown = "") {
  return po::value(target)->default_value(
      default_value, shown.empty() ? FormatValue(default_value) : shown);
}

// Declares `flags` (misc/flag_spec.h) in `desc`, each with its field's
// current value as the default (none for an empty string: such flags are
// "given or not").
void AddFlags(const FlagSpecs& flags, po::options_description* desc) {
  for (const FlagSpec& flag : flags) {
    std::visit(
        [&](auto* target) {
          using T = std::remove_pointer_t<decltype(target)>;
          if constexpr (std::is_same_v<T, bool>) {
            desc->add_options()(flag.name.c_str(), po::bool_switch(target),
                                flag.help.c_str());
          } else if constexpr (std::is_same_v<T, std::string>) {
            if (target->empty()) {
              desc->add_options()(flag.name.c_str(), po::value(target),
                                  flag.help.c_str());
            } else {
              desc->add_options()(flag.name.c_str(),
                                  Value(target, *target, flag.shown_default),
                                  flag.help.c_str());
            }
          } else {
            desc->add_options()(flag.name.c_str(),
                                Value(target, *target, flag.shown_default),
                                flag.help.c_str());
          }
        },
        flag.target);
  }
}

// Runs `validate` (checks written with misc/validate.h's Require, fields
// named as in the options structs or as flags) and reports its first
// invalid field as the flag that filled it.
template <typename F>
void AsFlags(F validate) {
  try {
    validate();
  } catch (const InvalidOption& e) {
    throw FlagError("--" + FlagName(e.field()) + "=" + e.value() +
                    " is invalid; accepted: " + e.accepted());
  }
}

// Options whose change breaks a run: the network and its inputs.
// (--algorithm is checked first, with the other algorithm's flags:
// CheckAlgorithm.)
const std::set<std::string> kBreaking = {"env",
                                         "arch",
                                         "hidden-sizes",
                                         "activation",
                                         "conv-channels",
                                         "scale-observations",
                                         "normalize-observations",
                                         "normalize-observations-clip",
                                         "optimizer"};

// The flags in `flags` (name, then the value now and the default), each at
// its default: one set elsewhere is refused, naming who reads it
// (`reason`, e.g. "with --optimizer rmsprop: only --optimizer adam reads
// it").
using FlagDefaults =
    std::vector<std::pair<std::string, std::pair<std::string, std::string>>>;
void RequireDefaults(const FlagDefaults& flags, const std::string& reason) {
  for (const auto& [key, values] : flags) {
    if (values.first == values.second) continue;
    throw FlagError("--" + key + "=" + values.first +
                    " is invalid; accepted: " +
                    (values.second.empty() ? "''" : values.second) +
                    " (the default) " + reason);
  }
}

// --algorithm, and no flag set (away from its default) that only the other
// algorithm reads. A resume restores every recorded flag, so "set" is
// "not at the default", not "given".
void CheckAlgorithm(const RunFlags& f) {
  Require(f.algorithm == "a3c" || f.algorithm == "ppo", "algorithm",
          f.algorithm, "a3c, ppo");
  if (!f.resume.empty()) {
    // Said first: the other algorithm's recorded flags would be refused
    // below with a message about them. A run recorded before --algorithm
    // existed trained A3C.
    const auto saved = f.resume_saved.find("algorithm");
    const std::string before =
        saved == f.resume_saved.end() ? "a3c" : saved->second;
    if (before != f.algorithm) {
      throw FlagError("--algorithm=" + f.algorithm +
                      " is invalid; accepted: " + before +
                      ", the resumed run's value (start a new run to change "
                      "it)");
    }
  }
  const A3COptions a3c;
  const PPOOptions ppo;
  const FlagDefaults a3c_only = {
      {"policy-target", {f.agent.policy_target, a3c.policy_target}},
      {"value-target", {f.agent.value_target, a3c.value_target}},
      {"vtrace-rho-bar",
       {FormatValue(f.agent.vtrace_rho_bar), FormatValue(a3c.vtrace_rho_bar)}},
      {"vtrace-c-bar",
       {FormatValue(f.agent.vtrace_c_bar), FormatValue(a3c.vtrace_c_bar)}},
      {"fresh-params",
       {FormatValue(f.agent.fresh_params), FormatValue(a3c.fresh_params)}}};
  const FlagDefaults ppo_only = {
      {"epochs", {FormatValue(f.ppo.epochs), FormatValue(ppo.epochs)}},
      {"minibatches",
       {FormatValue(f.ppo.minibatches), FormatValue(ppo.minibatches)}},
      {"clip-range",
       {FormatValue(f.ppo.clip_range), FormatValue(ppo.clip_range)}},
      {"clip-value-range",
       {FormatValue(f.ppo.clip_value_range),
        FormatValue(ppo.clip_value_range)}}};
  const bool is_ppo = f.algorithm == "ppo";
  RequireDefaults(is_ppo ? a3c_only : ppo_only,
                  "with --algorithm " + f.algorithm + ": only --algorithm " +
                      (is_ppo ? "a3c" : "ppo") + " reads it");
}

// --env-param: NAME=VALUE items (each argument may hold several, separated
// by commas), checked against the parameters `env` declares.
void ParseEnvParams(Env& env, RunFlags* f) {
  f->env_params.clear();
  for (const std::string& arg : f->env_param_args) {
    std::stringstream items(arg);
    std::string item;
    while (std::getline(items, item, ',')) {
      const size_t eq = item.find('=');
      double value = 0;
      bool number = false;
      if (eq != std::string::npos && eq > 0) {
        try {
          size_t used = 0;
          value = std::stod(item.substr(eq + 1), &used);
          number = used == item.size() - eq - 1;
        } catch (const std::exception&) {
        }
      }
      Require(number, "env_param", item, "NAME=VALUE with a number VALUE");
      const std::string name = item.substr(0, eq);
      try {
        env.SetParameter(name, value);
      } catch (const std::invalid_argument&) {
        std::string accepted;
        for (const EnvParameter& p : env.Parameters()) {
          if (p.name == name) {
            accepted = name + "=VALUE with VALUE in [" + FormatValue(p.min) +
                       ", " + FormatValue(p.max) + "]" +
                       (p.integer ? ", a whole number" : "");
          }
        }
        if (accepted.empty()) {
          std::vector<std::string> names;
          for (const EnvParameter& p : env.Parameters())
            names.push_back(p.name);
          accepted = names.empty()
                         ? "none: " + env.Name() + " declares no parameters"
                         : "NAME=VALUE with NAME one of " + JoinNames(names);
        }
        Require(false, "env_param", item, accepted);
      }
      f->env_params.emplace_back(name, value);
    }
  }
}

// What the command line holds before it reaches the structs: the
// evaluation length and successful score (completed by ResolveEvaluation)
// and the config file's path.
struct Extras {
  int64_t eval_n_runs = 10;
  int64_t eval_n_steps = 0;
  double successful_score = 0;
  std::string config_file;
};

// The reference's gym example scales rewards by this; an environment
// family may declare otherwise (TrainingDefaults).

// train_a3c's departures from the reference example's settings, all here.
// The reference example's own defaults where they differ from the structs',
// then where train_a3c departs from them, measured: every task reached its
// score sooner in wall time (docs/training.md, "Defaults"; docs/targets/). The
// structs keep the reference's values for library users. 16 environments per
// worker only for agents that act on batches (the built-in A3C); a
// program's own agent may not.
void ApplyProgramDefaults(const FlagContext& context, RunFlags* f) {
  const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  f->train.processes = cores > 0 ? cores : 1;
  f->train.steps = 80000000;
  f->train.eval_interval = 100000;
  f->agent.optimizer.lr = 2e-3;
  f->agent.optimizer.eps = 1e-5;
  // Against a collapsed policy with many workers
  // (docs/results/2026-12-06-many-workers.md).
  f->agent.lr_warmup_updates = 500;
  f->agent.lag_tolerance = 8;
  if (context.a3c_agent) f->train.envs_per_process = 16;
}

// An environment that is not a two-player game: no self-play flag set
// away from its default (--snapshot-window on CartPole was accepted and
// unused).
void CheckNoGameFlags(const RunFlags& f) {
  const SelfPlayOptions d;
  const SelfPlayOptions& o = f.self_play;
  RequireDefaults(
      {{"play-against-latest-ratio",
        {FormatValue(o.play_against_latest_ratio),
         FormatValue(d.play_against_latest_ratio)}},
       {"snapshot-interval",
        {FormatValue(o.snapshot_interval), FormatValue(d.snapshot_interval)}},
       {"snapshot-window",
        {FormatValue(o.snapshot_window), FormatValue(d.snapshot_window)}},
       {"elo-k", {FormatValue(o.elo_k), FormatValue(d.elo_k)}},
       {"initial-elo",
        {FormatValue(o.initial_elo), FormatValue(d.initial_elo)}},
       {"swap-steps", {FormatValue(o.swap_steps), FormatValue(d.swap_steps)}},
       {"eval-score", {o.eval_score, d.eval_score}},
       {"learner-side", {o.learner_side, d.learner_side}}},
      "with --env " + f.env + ": only two-player games read it");
}

// --learner: its flags only with it; with it, one host, >= 2 processes,
// A3C, and a policy target that corrects for the segments' age (vtrace
// unless one is given). A program's own agent is checked by the trainer
// (LearnerExtension::CheckAgent).
void CheckLearnerFlags(const po::variables_map& vm, const FlagContext& context,
                       RunFlags& f) {
  const LearnerOptions& o = f.learner;
  const LearnerOptions d;
  if (!o.enabled) {
    RequireDefaults(
        {{"maximum-segments",
          {FormatValue(o.maximum_segments), FormatValue(d.maximum_segments)}},
         {"buffer-mib", {FormatValue(o.buffer_mib), FormatValue(d.buffer_mib)}},
         {"minimum-segments",
          {FormatValue(o.minimum_segments), FormatValue(d.minimum_segments)}},
         {"batch-size", {FormatValue(o.batch_size), FormatValue(d.batch_size)}},
         {"reuse", {FormatValue(o.reuse), FormatValue(d.reuse)}}},
        "without --learner: only --learner reads it");
    return;
  }
  if (f.dist.Enabled()) {
    throw FlagError(
        "--learner=true is invalid; accepted: false with --nnodes=" +
        std::to_string(f.dist.nnodes) +
        " (one learner for several hosts is not implemented)");
  }
  if (f.train.processes < 2) {
    throw FlagError("--processes=" + std::to_string(f.train.processes) +
                    " is invalid; accepted: an integer >= 2 with --learner "
                    "(the last process learns, the others act)");
  }
  if (!context.a3c_agent) return;
  if (f.algorithm != "a3c") {
    throw FlagError("--algorithm=" + f.algorithm +
                    " is invalid; accepted: a3c with --learner (the learner "
                    "trains A3C's loss on its batches)");
  }
  if (vm.count("policy-target") == 0 || vm["policy-target"].defaulted()) {
    f.agent.policy_target = "vtrace";
  }
  const PolicyTarget target = f.agent.PolicyTargetKind();
  if (!CorrectsOffPolicy(target)) {
    throw FlagError("--policy-target=" + f.agent.policy_target +
                    " is invalid; accepted: vtrace or upgo with --learner "
                    "(the segments were acted with older parameters than the "
                    "learner's; these targets correct for it)");
  }
}

// No flag set (away from the program's default) that only the other
// optimizer reads: --adam-beta1 with RMSprop was accepted and unused.
void CheckOptimizerFlags(const FlagContext& context, const RunFlags& f) {
  RunFlags defaults;
  ApplyProgramDefaults(context, &defaults);
  const OptimizerOptions& o = f.agent.optimizer;
  const OptimizerOptions& d = defaults.agent.optimizer;
  auto pair = [](double now, double fallback) {
    return std::make_pair(FormatValue(now), FormatValue(fallback));
  };
  RequireDefaults(
      o.adam() ? FlagDefaults{{"rmsprop-epsilon", pair(o.eps, d.eps)},
                              {"rmsprop-alpha", pair(o.alpha, d.alpha)}}
               : FlagDefaults{{"adam-beta1", pair(o.adam_beta1, d.adam_beta1)},
                              {"adam-beta2", pair(o.adam_beta2, d.adam_beta2)},
                              {"adam-epsilon", pair(o.adam_eps, d.adam_eps)}},
      "with --optimizer " + o.kind + ": only --optimizer " +
          (o.adam() ? "rmsprop" : "adam") + " reads it");
}

// The run's own flags (the ones no options struct of the library fills).
po::options_description RunOwnFlags(RunFlags& f, Extras& x) {
  po::options_description run("Run");
  run.add_options()("help", "print this help and exit")(
      "version", "print the version and exit")(
      "config", po::value(&x.config_file),
      "read 'key = value' lines (flag names without --) from FILE; the command "
      "line wins")("env", Value(&f.env, f.env),
                   "environment name: a built-in one, a program's own, or "
                   "python:MODULE:FACTORY (a Python environment, "
                   "docs/own-environment.md)")(
      "env-kwargs", po::value(&f.env_kwargs),
      "keyword arguments for --env's factory, a JSON object (e.g. "
      "'{\"size\": 8}'; python:MODULE:FACTORY only)")(
      "env-param", po::value(&f.env_param_args),
      "set a parameter of the environment: NAME=VALUE, repeatable or "
      "comma-separated (train and evaluation environments; the names and "
      "ranges --env declares are in docs/environments.md); given on the "
      "command line, "
      "it replaces the config file's")(
      "curriculum", po::value(&f.curriculum_file),
      "YAML file of environment parameters for training: constants, "
      "samplers drawn per episode, curricula of lessons (ML-Agents' "
      "environment_parameters; docs/environments.md)")(
      "outdir", Value(&f.outdir, f.outdir),
      "each run gets a new folder under this directory")(
      "reward-scale-factor", po::value(&f.reward_scale_factor),
      "multiply training rewards by this (default: the environment "
      "family's: 0.01 for classic control as the reference's gym example; 1 "
      "for image observations as its Atari example, for two-player games and "
      "for environments of no built-in family)")(
      "scale-observations", po::bool_switch(&f.scale_observations),
      "map every observation element from its bounds to [-1, 1] (training, "
      "evaluation and --demo; needs an observation space with finite "
      "bounds)")("eval-n-runs", po::value(&x.eval_n_runs),
                 "evaluation episodes (default 10)")(
      "eval-n-steps", po::value(&x.eval_n_steps),
      "evaluation steps (instead of --eval-n-runs)")(
      "successful-score", po::value(&x.successful_score),
      "stop when an evaluation mean reaches this")(
      "final-eval-n-runs", Value(&f.final_eval_n_runs, f.final_eval_n_runs),
      "when the run ends, evaluate its final agent and best/ on this many "
      "fresh episodes each (seeds no evaluation used; greedy and sampled "
      "actions), into final_eval.tsv; 0: no final evaluation")(
      "no-save-best-so-far-agent", po::bool_switch(&f.no_save_best),
      "never write best/ (the reference's save_best_so_far_agent=False); the "
      "best score is still kept")("demo", po::bool_switch(&f.demo),
                                  "evaluate the --load agent and exit")(
      "record", po::value(&f.record_file),
      "with --demo: write the evaluation episodes to this file as an "
      "animated GIF, one frame a step (and one for each episode's start; in "
      "two-player games one a move), drawn as gym draws them; no display "
      "needed")(
      "export", po::value(&f.export_file),
      "write the --load agent's policy to this file as a TorchScript module "
      "(torch.jit.load in Python, torch::jit::load in C++) and exit")(
      "resume", po::value(&f.resume),
      "continue the run of this checkpoint (<run>/<checkpoint>) in its "
      "folder, with its options unless given again")(
      "quiet", po::bool_switch(&f.quiet),
      "no status line and no timer summary")("log-level",
                                             Value(&f.log_level, f.log_level),
                                             "debug, info, warning or error");
  return run;
}

// Every flag, each declared by the options struct it fills (their current
// values are the defaults), grouped as --help shows them.
po::options_description DeclareFlags(const FlagContext& context, RunFlags& f,
                                     Extras& x) {
  po::options_description trainer("Trainer");
  FlagSpecs trainer_flags;
  for (FlagSpecs group : {f.train.Flags(), f.dist.Flags(), f.self_play.Flags(),
                          f.learner.Flags()}) {
    trainer_flags.insert(trainer_flags.end(), group.begin(), group.end());
  }
  for (FlagSpec& flag : trainer_flags) {
    if (flag.name == "processes") flag.shown_default = "number of cores";
  }
  AddFlags(trainer_flags, &trainer);
  po::options_description agent("A3C agent");
  agent.add_options()(
      "arch", Value(&f.arch, f.arch),
      "network: auto (by the spaces), fc-softmax, fc-gaussian, minatar-conv, "
      "atari-conv, or one of them with -lstm")(
      "lr-decay", po::bool_switch(&f.lr_decay),
      "decay the learning rate linearly to 0 over --steps")(
      "beta-decay", po::bool_switch(&f.beta_decay),
      "decay the entropy weight (--beta) linearly to 0 over --steps")(
      "algorithm", Value(&f.algorithm, f.algorithm),
      "a3c (the reference's), or ppo: PPO's clipped surrogate with GAE "
      "targets, several passes in minibatches over each rollout, every "
      "minibatch one step of the shared optimizer (agents/ppo.h)");
  AddFlags(f.network.Flags(), &agent);
  AddFlags(f.agent.Flags(), &agent);
  AddFlags(f.ppo.Flags(), &agent);
  po::options_description desc(context.program +
                               ": train an agent with asynchronous worker "
                               "processes.\nOptions");
  desc.add(RunOwnFlags(f, x)).add(trainer).add(agent);
  if (!context.program_flags.empty()) {
    po::options_description program(context.program);
    AddFlags(context.program_flags, &program);
    desc.add(program);
  }
  return desc;
}

// The evaluation length (--eval-n-runs or --eval-n-steps), the successful
// score and the log level.
void ResolveEvaluation(const po::variables_map& vm, const Extras& x,
                       RunFlags& f) {
  TrainOptions& t = f.train;
  const bool runs_given = vm.count("eval-n-runs") > 0;
  const bool steps_given = vm.count("eval-n-steps") > 0;
  Require(!(runs_given && steps_given), "eval-n-steps",
          FormatValue(x.eval_n_steps),
          "not together with --eval-n-runs (give one of them)");
  if (steps_given) {
    Require(x.eval_n_steps >= 1, "eval-n-steps", FormatValue(x.eval_n_steps),
            "an integer >= 1");
    t.eval_n_steps = x.eval_n_steps;
    t.eval_n_episodes = 0;
  } else {
    Require(x.eval_n_runs >= 1, "eval-n-runs", FormatValue(x.eval_n_runs),
            "an integer >= 1");
    t.eval_n_episodes = x.eval_n_runs;
  }
  Require(f.final_eval_n_runs >= 0 && f.final_eval_n_runs <= 100000,
          "final-eval-n-runs", FormatValue(f.final_eval_n_runs),
          "an integer in [0, 100000] (0: no final evaluation)");
  if (vm.count("successful-score")) {
    Require(t.eval_interval > 0 || f.demo, "successful-score",
            x.successful_score, "only with --eval-interval > 0");
    // In --demo the score is not used (and evaluation may be off).
    if (!f.demo) t.successful_score = x.successful_score;
  }
  static const std::vector<std::string> kLevels = {"debug", "info", "warning",
                                                   "error"};
  Require(
      std::find(kLevels.begin(), kLevels.end(), f.log_level) != kLevels.end(),
      "log-level", f.log_level, JoinNames(kLevels));
}

// The environment --env names, with --env-param and --scale-observations
// applied: its spaces decide the rest.
std::unique_ptr<Env> ProbeEnvironment(const FlagContext& context, RunFlags& f) {
  std::unique_ptr<Env> env;
  if (context.probe_env) {
    try {
      env = context.probe_env(f.env);
    } catch (const std::invalid_argument& e) {
      Require(false, "env", f.env, e.what());
    }
    Require(env != nullptr, "env", f.env, "an environment the program knows");
  } else {
    Require(DefaultEnvRegistry().Contains(f.env), "env", f.env,
            DefaultEnvRegistry().Accepted());
    const bool prefixed = DefaultEnvRegistry().MatchesPrefix(f.env);
    if (!f.env_kwargs.empty()) {
      Require(prefixed, "env-kwargs", f.env_kwargs,
              "nothing for " + f.env +
                  " (keyword arguments are for python:MODULE:FACTORY)");
      bool object = false;
      try {
        object = Json::Parse(f.env_kwargs).IsObject();
      } catch (const std::exception&) {
      }
      Require(object, "env-kwargs", f.env_kwargs,
              "a JSON object of keyword arguments, e.g. '{\"size\": 8}'");
    }
    EnvOptions options;
    options.kwargs = f.env_kwargs;
    try {
      env = MakeEnv(f.env, options);
    } catch (const InvalidOption& e) {
      throw;
    } catch (const std::invalid_argument& e) {
      // A Python environment's message starts with its name, which the
      // line already shows.
      std::string why = e.what();
      if (why.rfind(f.env + ": ", 0) == 0) why = why.substr(f.env.size() + 2);
      Require(false, "env", f.env,
              prefixed ? "python:MODULE:FACTORY that builds an environment "
                         "asyncrl can train (here: " +
                             why + ")"
                       : why);
    }
  }
  ParseEnvParams(*env, &f);
  if (f.scale_observations) {
    try {
      env = std::make_unique<ScaleObservations>(std::move(env));
    } catch (const std::invalid_argument& e) {
      Require(false, "scale-observations", "true",
              std::string("an environment whose observations have finite "
                          "bounds (") +
                  e.what() + ")");
    }
  }
  return env;
}

// --normalize-observations where the run can keep one set of statistics:
// vector observations (image planes are binary), no snapshot opponents
// (they act without the run's statistics). Several hosts combine theirs at
// each round (hosts/host_coordinator.h).
void CheckNormalizeObservations(Env& env) {
  const Space& obs = env.ObservationSpace();
  Require(obs.shape.size() == 1, "normalize-observations", true,
          "false for observation space " + obs.ToString() +
              " (only vectors are normalized; image planes such as "
              "MinAtar's are binary)");
  Require(FindSelfPlayEnv(env) == nullptr, "normalize-observations", true,
          "false for a two-player game (snapshot opponents act without the "
          "run's statistics)");
}

// PPO's --minibatches against what a rollout holds.
void FitMinibatches(bool recurrent, RunFlags& f) {
  // A minibatch is rows of the rollout, or a recurrent model's whole
  // sequences (one per environment copy): more minibatches than that
  // were silently capped while args.json recorded the number asked for.
  const int64_t units = recurrent ? f.train.envs_per_process
                                  : f.agent.t_max * f.train.envs_per_process;
  // The default asks for no particular number: it becomes what fits, and
  // is recorded as such.
  if (f.ppo.minibatches == PPOOptions().minibatches) {
    f.ppo.minibatches =
        static_cast<int>(std::min<int64_t>(f.ppo.minibatches, units));
  }
  Require(f.ppo.minibatches <= units, "minibatches", f.ppo.minibatches,
          "at most " + std::to_string(units) + " (" +
              (recurrent ? "the rollout's sequences: --envs-per-process"
                         : "the rollout's rows: --t-max x "
                           "--envs-per-process") +
              ")");
}

// What the environment's family declares (envs/registry.h) where no source
// gave the flag; then the network --arch names, checked against the
// spaces. Returns what --arch auto stands for ("" for a program's own
// agent).
// A user's vector environment (python:MODULE:FACTORY returning one): a
// worker trains its copies, so --envs-per-process is its num_envs (taken
// when not given, said in the run's first lines), and its copies end their
// own episodes (no --max-episode-len).
void ApplyVectorEnvironment(const po::variables_map& vm, const Env& env,
                            RunFlags& f, std::vector<std::string>* applied) {
  const int64_t copies = env.BatchCopies();
  if (copies == 0) return;
  if (vm.count("envs-per-process") == 0 || vm["envs-per-process"].defaulted()) {
    f.train.envs_per_process = static_cast<int>(copies);
    applied->push_back("--envs-per-process " + std::to_string(copies) +
                       " (its num_envs)");
  }
  Require(f.train.envs_per_process == copies, "envs-per-process",
          f.train.envs_per_process,
          std::to_string(copies) + " (" + f.env +
              " is a vector environment of " + std::to_string(copies) +
              " copies, its num_envs)");
  Require(f.train.max_episode_len == 0, "max-episode-len",
          f.train.max_episode_len,
          "0 for a vector environment (its copies end their own episodes: "
          "give it its own time limit)");
}

std::string ApplyEnvironmentDefaults(const po::variables_map& vm,
                                     const FlagContext& context, Env& env,
                                     RunFlags& f) {
  if (context.a3c_agent) {
    Require(DefaultModelRegistry().Contains(f.arch), "arch", f.arch,
            JoinNames(DefaultModelRegistry().Names()));
  } else {
    f.network.RequireAuto("the program's own agent builds its network");
  }
  const TrainingDefaults family = TrainingDefaultsFor(f.env, env);
  std::vector<std::string> applied;
  if (vm.count("reward-scale-factor") == 0) {
    f.reward_scale_factor = family.reward_scale.value_or(1.0);
    applied.push_back("--reward-scale-factor " +
                      FormatValue(f.reward_scale_factor));
  }
  if (family.entropy_weight && context.a3c_agent && vm.count("beta") &&
      vm["beta"].defaulted()) {
    f.agent.beta = *family.entropy_weight;
    applied.push_back("--beta " + FormatValue(f.agent.beta));
  }
  ApplyVectorEnvironment(vm, env, f, &applied);
  if (!applied.empty()) {
    f.defaults_note =
        "environment defaults: " + JoinNames(applied) + " (" + f.env + ": " +
        (family.family.empty()
             ? std::string("an environment of no built-in family, so its "
                           "rewards are unscaled")
             : family.family) +
        "; a flag given on the command line or in --config wins)";
  }
  std::string auto_arch;
  bool recurrent = false;
  try {
    if (context.a3c_agent) {
      recurrent = DefaultModelRegistry()
                      .Make(f.arch, env.ObservationSpace(), env.ActionSpace(),
                            f.network)
                      ->StateSize() > 0;
      auto_arch = AutoArch(env.ObservationSpace(), env.ActionSpace());
    }
  } catch (const InvalidOption&) {
    throw;  // Names its own flag.
  } catch (const std::invalid_argument& e) {
    Require(false, "arch", f.arch, e.what());
  }
  // Games train both sides where the agent can: A3C and PPO with a
  // feed-forward arch. A recurrent arch, or a program's own agent, trains
  // the learner's side unless --train-sides says otherwise.
  if (FindSelfPlayEnv(env) != nullptr &&
      (vm.count("train-sides") == 0 || vm["train-sides"].defaulted()) &&
      (!context.a3c_agent || recurrent)) {
    f.self_play.train_sides = "learner";
  }
  // Asked for, it is refused before anything is written (a program's own
  // agent is checked by the trainer: TrainerExtension::CheckAgent).
  Require(FindSelfPlayEnv(env) == nullptr || !recurrent ||
              !f.self_play.TrainsBothSides(),
          "train-sides", f.self_play.train_sides,
          "learner (both: a recurrent arch's state would run through both "
          "players' turns)");
  CheckLearnerFlags(vm, context, f);
  if (f.dist.Enabled() && f.train.train_seconds > 0) {
    throw FlagError("--train-seconds=" + FormatValue(f.train.train_seconds) +
                    " is invalid; accepted: 0 with --nnodes=" +
                    std::to_string(f.dist.nnodes) +
                    " (a clock shared by several hosts is not implemented)");
  }
  if (context.a3c_agent) CheckAlgorithm(f);
  if (context.a3c_agent && f.algorithm == "ppo") FitMinibatches(recurrent, f);
  if (context.a3c_agent && f.agent.normalize_observations) {
    CheckNormalizeObservations(env);
  }
  return auto_arch;
}

// Whether the network `arch` with `network` puts tanh between its layers,
// as the model it builds describes itself (nullopt: an arch whose
// activation is fixed, or one that cannot be built here).
std::optional<bool> BuiltWithTanh(const std::string& arch,
                                  const NetworkOptions& network,
                                  const Env& env) {
  try {
    const std::optional<DenseDescription> d =
        DefaultModelRegistry()
            .Make(arch, env.ObservationSpace(), env.ActionSpace(), network)
            ->Describe();
    if (d && d->lstm.empty() && d->image.empty()) return d->tanh;
  } catch (const std::invalid_argument&) {
  }
  return std::nullopt;
}

// --load: activations have no parameters, so a checkpoint of the other
// activation would load without a complaint: the network its recorded
// options build is compared with this run's (a checkpoint recorded before
// --activation existed used its arch's own). A checkpoint that cannot be
// read is left for --load's own check.
void CheckLoadedActivation(const Env& env, const RunFlags& f) {
  proto::Checkpoint checkpoint;
  try {
    checkpoint = LoadCheckpointDir(f.train.load);
  } catch (const std::exception&) {
    return;
  }
  const auto& config = checkpoint.metadata().config();
  auto recorded = [&](const char* key) {
    const auto it = config.find(key);
    return it == config.end() ? std::string("auto") : it->second;
  };
  NetworkOptions saved;
  saved.activation = recorded("activation");
  const std::optional<bool> saved_tanh =
      BuiltWithTanh(recorded("arch"), saved, env);
  const std::optional<bool> tanh = BuiltWithTanh(f.arch, f.network, env);
  if (!saved_tanh || !tanh || *saved_tanh == *tanh) return;
  throw FlagError("--activation=" + f.network.activation +
                  " is invalid; accepted: " + (*saved_tanh ? "tanh" : "relu") +
                  ", the --load checkpoint's (" + (*tanh ? "tanh" : "relu") +
                  " would run its parameters through another network)");
}

// What the run reads besides flags: the --load checkpoint, a game's
// opponents, the --curriculum file.
void CheckRunInputs(const po::variables_map& vm, Env& env, RunFlags& f) {
  TrainOptions& t = f.train;
  if (!t.load.empty()) {
    Require(
        std::filesystem::is_regular_file(std::filesystem::path(t.load) /
                                         kCheckpointFileName),
        "load", t.load,
        std::string("a checkpoint directory holding ") + kCheckpointFileName);
  }
  Require(!f.demo || !t.load.empty(), "demo", "true",
          "only with --load DIR (the agent to evaluate)");
  if (vm.count("export")) {
    Require(!f.export_file.empty(), "export", "''",
            "a file name in an existing folder");
    Require(!t.load.empty(), "export", f.export_file,
            "only with --load DIR (the agent to export)");
    Require(!f.demo, "export", f.export_file, "not with --demo");
    const std::string problem = OutputFileProblem(f.export_file);
    Require(problem.empty(), "export", f.export_file,
            "a file name in an existing folder (" + problem + ")");
  }
  if (vm.count("record")) {
    Require(f.demo, "record", f.record_file,
            "only with --demo --load DIR (the episodes to record)");
    const std::string problem = OutputFileWritable(f.record_file);
    Require(problem.empty(), "record", f.record_file,
            "a file name in an existing folder this program can write (" +
                problem + ")");
    Picture picture;
    Require(env.Render(picture), "record", f.record_file,
            "an environment with a picture (" + env.Name() + " has none)");
  }
  if (SelfPlayEnv* game = FindSelfPlayEnv(env)) {
    Require(vm.count("eval-n-steps") == 0, "eval-n-steps",
            FormatValue(t.eval_n_steps),
            "not with a two-player game (--eval-n-runs: games per opponent)");
    f.self_play.EvalOpponents(game->game().Name());
  } else {
    Require(vm.count("eval-opponents") == 0, "eval-opponents",
            f.self_play.eval_opponents,
            "only with a two-player game (--env " +
                JoinNames(DefaultGameRegistry().Names()) + ")");
  }
  t.env_name = f.env;
  t.reward_scale = f.reward_scale_factor;
  t.save_best_so_far_agent = !f.no_save_best;
  if (f.curriculum_file.empty()) return;
  try {
    // Recorded absolute, so --resume finds it from any directory.
    f.curriculum_file = std::filesystem::absolute(f.curriculum_file)
                            .lexically_normal()
                            .string();
    Curriculum curriculum = Curriculum::Load(f.curriculum_file);
    curriculum.CheckAgainst(env);
    f.curriculum = std::make_shared<const Curriculum>(std::move(curriculum));
  } catch (const CurriculumError& e) {
    throw FlagError(std::string("--curriculum: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw FlagError("--curriculum: " + f.curriculum_file + ": " + e.what());
  }
}

// Each options struct's own rules (reported as the flags that filled it).
void ValidateStructs(RunFlags& f) {
  TrainOptions& t = f.train;
  t.outdir = f.outdir;  // The run directory is chosen later.
  t.Validate();
  f.dist.Validate();
  if (f.dist.Enabled()) {
    f.dist.ValidateWith(t);
    f.dist.CheckResolves();
  }
  if (f.curriculum) f.curriculum->Validate();
  f.self_play.Validate();
  f.learner.Validate();
  f.agent.Validate();
  if (f.algorithm == "ppo") PpoOptions(f).Validate();
  EnvOptions env_options;
  env_options.max_episode_steps = t.max_episode_len;
  env_options.reward_scale = f.reward_scale_factor;
  env_options.Validate();
}

// A variables_map value as args.json records it.
std::string AsText(const boost::any& any) {
  std::string text;
  if (any.type() == typeid(std::string)) {
    text = boost::any_cast<std::string>(any);
  } else if (any.type() == typeid(int)) {
    text = FormatValue(boost::any_cast<int>(any));
  } else if (any.type() == typeid(int64_t)) {
    text = FormatValue(boost::any_cast<int64_t>(any));
  } else if (any.type() == typeid(double)) {
    text = FormatValue(boost::any_cast<double>(any));
  } else if (any.type() == typeid(bool)) {
    text = boost::any_cast<bool>(any) ? "true" : "false";
  } else if (any.type() == typeid(std::vector<std::string>)) {
    for (const std::string& item :
         boost::any_cast<std::vector<std::string>>(any)) {
      text += (text.empty() ? "" : ",") + item;
    }
  }
  return text;
}

// Every resolved option as text (args.json, checkpoints), with the values
// the stages completed (the network auto stands for, the defaults the
// environment's family chose).
void RecordResolved(const po::variables_map& vm, const FlagContext& context,
                    const std::string& auto_arch, RunFlags& f) {
  for (const auto& [key, value] : vm) {
    if (key == "help" || key == "version") continue;
    f.resolved[key] = AsText(value.value());
  }
  if (!vm.count("eval-n-runs") && !vm.count("eval-n-steps")) {
    f.resolved["eval-n-runs"] = "10";
  }
  if (vm.count("reward-scale-factor") == 0) {
    f.resolved["reward-scale-factor"] = FormatValue(f.reward_scale_factor);
  }
  // args.json and checkpoints record the network actually built.
  if (f.arch == "auto" && !auto_arch.empty()) f.arch = auto_arch;
  if (!f.curriculum_file.empty()) f.resolved["curriculum"] = f.curriculum_file;
  f.resolved["arch"] = f.arch;
  f.resolved["lr"] = FormatValue(f.agent.optimizer.lr);
  f.resolved["rmsprop-epsilon"] = FormatValue(f.agent.optimizer.eps);
  if (context.a3c_agent) f.resolved["beta"] = FormatValue(f.agent.beta);
  f.resolved["train-sides"] = f.self_play.train_sides;
  // --learner's default (vtrace) when none was given.
  f.resolved["policy-target"] = f.agent.policy_target;
  // A vector environment's num_envs where no flag gave it.
  f.resolved["envs-per-process"] = FormatValue(f.train.envs_per_process);
  if (context.a3c_agent && f.algorithm == "ppo") {
    f.resolved["minibatches"] = FormatValue(f.ppo.minibatches);
  }
}

// A curriculum file changed since the resumed run: other parameters or
// other lessons are refused (the saved lessons would mean other ones; they
// used to be matched by name and clamped silently), other values or
// completion criteria are said as a change.
void CheckResumedCurriculum(const proto::Checkpoint& checkpoint, RunFlags& f) {
  std::vector<std::string> before, now;
  for (const auto& saved : checkpoint.curriculum()) {
    before.push_back(saved.parameter());
  }
  if (f.curriculum) {
    for (const auto& p : f.curriculum->parameters) now.push_back(p.parameter);
  }
  auto refuse = [&](const std::string& what) {
    throw FlagError(
        "--curriculum=" +
        (f.curriculum_file.empty() ? std::string("(none)")
                                   : f.curriculum_file) +
        " is invalid; accepted: a file with the resumed run's parameters "
        "and lessons (" +
        what + "; start a new run with --load to change them)");
  };
  std::vector<std::string> sorted_before = before, sorted_now = now;
  std::sort(sorted_before.begin(), sorted_before.end());
  std::sort(sorted_now.begin(), sorted_now.end());
  if (sorted_before != sorted_now) {
    refuse("parameters: " +
           (before.empty() ? std::string("none") : JoinNames(before)) +
           " in the checkpoint, " +
           (now.empty() ? std::string("none") : JoinNames(now)) + " now");
  }
  for (const auto& saved : checkpoint.curriculum()) {
    if (saved.lesson_names_size() == 0) continue;  // Not recorded then.
    const ParameterSchedule& p = *std::find_if(
        f.curriculum->parameters.begin(), f.curriculum->parameters.end(),
        [&](const ParameterSchedule& q) {
          return q.parameter == saved.parameter();
        });
    const std::vector<std::string> saved_names(saved.lesson_names().begin(),
                                               saved.lesson_names().end());
    std::vector<std::string> names;
    for (const Lesson& l : p.lessons) names.push_back(l.name);
    if (saved_names != names) {
      refuse("parameter '" + p.parameter + "': lessons " +
             JoinNames(saved_names) + " in the checkpoint, " +
             JoinNames(names) + " now");
    }
    if (saved.description() != p.Describe()) {
      f.resume_changes.push_back("curriculum parameter " + p.parameter + ": " +
                                 saved.description() + " -> " + p.Describe());
    }
  }
}

// The network `arch` builds with `network`: its parameters' names and
// shapes and its activation; nullopt if it cannot be built.
std::optional<std::string> NetworkSignature(const std::string& arch,
                                            const NetworkOptions& network,
                                            const Env& env) {
  try {
    const std::shared_ptr<ActorCriticModel> model = DefaultModelRegistry().Make(
        arch, env.ObservationSpace(), env.ActionSpace(), network);
    std::string out;
    for (const auto& p : model->named_parameters()) {
      out += p.key() + " [";
      for (const int64_t d : p.value().sizes()) out += std::to_string(d) + ",";
      out += "] ";
    }
    // An arch that does not describe itself (a program's own) cannot say
    // its activation: no signature, so a change is refused.
    const std::optional<DenseDescription> d = model->Describe();
    if (!d) return std::nullopt;
    return out + (d->tanh ? "tanh" : "relu");
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

// Whether `key` is one of NetworkOptions' flags (the network's shape).
bool IsNetworkFlag(const std::string& key) {
  NetworkOptions network;
  for (const FlagSpec& spec : network.Flags()) {
    if (spec.name == key) return true;
  }
  return false;
}

// Whether the resumed run's recorded --hidden-sizes, --activation and
// --conv-channels and this run's build the same network (auto and the
// arch's own widths, 016,8 and 16,8: the text differs, the network does
// not).
bool SameNetworkAsResumed(const Env& env, const RunFlags& f) {
  auto saved = [&f](const char* key) {
    const auto it = f.resume_saved.find(key);
    return it == f.resume_saved.end() ? std::string("auto") : it->second;
  };
  NetworkOptions before;
  before.hidden_sizes = saved("hidden-sizes");
  before.activation = saved("activation");
  before.conv_channels = saved("conv-channels");
  const std::string& arch = f.resolved.at("arch");
  const std::optional<std::string> a = NetworkSignature(arch, before, env);
  const std::optional<std::string> b = NetworkSignature(arch, f.network, env);
  return a && b && *a == *b;
}

// --resume: what changed against the resumed run (a breaking option
// refused), and the checkpoint checked before anything is written.
void CheckResume(const po::variables_map& vm, const std::string& auto_arch,
                 const Env& env, const FlagContext& context, RunFlags& f) {
  std::vector<std::string> changes;
  for (const auto& key : f.resume_changes) {
    std::string before = f.resume_saved.at(key);
    // Runs before args.json recorded the resolved network say "auto".
    if (key == "arch" && before == "auto") before = auto_arch;
    const std::string& now = f.resolved[key];
    if (before == now) continue;
    if (IsNetworkFlag(key) && context.a3c_agent &&
        SameNetworkAsResumed(env, f)) {
      continue;
    }
    if (kBreaking.count(key)) {
      throw FlagError("--" + key + "=" + now + " is invalid; accepted: " +
                      before + ", the resumed run's value (start a new run " +
                      "with --load to change it)");
    }
    changes.push_back(key + ": " + before + " -> " + now);
  }
  f.resume_changes = changes;
  // A breaking option the resumed run did not record (it was made before
  // the option existed) ran with the option's default: giving it changes
  // the run.
  for (const std::string& key : kBreaking) {
    if (f.resume_saved.count(key) == 0 && vm.count(key) &&
        !vm[key].defaulted()) {
      throw FlagError("--" + key + "=" + f.resolved[key] +
                      " is invalid; accepted: not given (the resumed run "
                      "was recorded before --" +
                      key +
                      " existed; start a "
                      "new run with --load to set it)");
    }
  }
  proto::Checkpoint checkpoint;
  try {
    checkpoint = LoadCheckpointDir(f.resume);
  } catch (const std::runtime_error& e) {
    throw FlagError("--resume=" + f.resume + " is invalid: " + e.what());
  }
  CheckResumedCurriculum(checkpoint, f);
  f.resume_step = checkpoint.global_step();
  Require(f.resume_step < f.train.steps, "steps", FormatValue(f.train.steps),
          "more than the checkpoint's step " + FormatValue(f.resume_step));
  f.train.resume = f.resume;
}

}  // namespace

// The stages, in order: declare (with train_a3c's defaults), merge the
// sources, then check and complete (evaluation, environment and its
// family's defaults, the run's inputs, each struct's rules), record.
PPOOptions PpoOptions(const RunFlags& flags) {
  PPOOptions o = flags.ppo;
  static_cast<ActorCriticOptions&>(o) =
      static_cast<const ActorCriticOptions&>(flags.agent);
  o.beta = flags.agent.beta;
  o.lambda = flags.agent.lambda;
  o.normalize_advantages = flags.agent.normalize_advantages;
  return o;
}

RunFlags ParseRunFlags(int argc, const char* const* argv,
                       const FlagContext& context) {
  RunFlags f;
  Extras x;
  ApplyProgramDefaults(context, &f);
  const po::options_description desc = DeclareFlags(context, f, x);
  po::variables_map vm;
  MergeSources(argc, argv, desc, vm, &f);
  std::ostringstream help;
  help << desc;
  f.help_text = help.str();
  f.help = vm.count("help") > 0;
  f.version = vm.count("version") > 0;
  if (f.help || f.version) return f;
  AsFlags([&] {
    ResolveEvaluation(vm, x, f);
    std::unique_ptr<Env> env = ProbeEnvironment(context, f);
    const std::string auto_arch =
        ApplyEnvironmentDefaults(vm, context, *env, f);
    CheckRunInputs(vm, *env, f);
    if (context.a3c_agent && !f.train.load.empty()) {
      CheckLoadedActivation(*env, f);
    }
    ValidateStructs(f);
    RecordResolved(vm, context, auto_arch, f);
    if (!f.resume.empty()) CheckResume(vm, auto_arch, *env, context, f);
    // After the resume's own checks: a resumed run's recorded values are
    // what these compare, and a changed --optimizer is said as such first.
    CheckOptimizerFlags(context, f);
    if (FindSelfPlayEnv(*env) == nullptr) CheckNoGameFlags(f);
    f.train.config = f.resolved;
  });
  return f;
}

}  // namespace asyncrl
