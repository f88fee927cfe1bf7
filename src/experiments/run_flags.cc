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
#include "asyncrl/envs/games/self_play_env.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/envs/wrappers.h"
#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/config_file.h"
#include "asyncrl/misc/json.h"
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
po::typed_value<T>* Value(T* target,
                          const std::common_type_t<T>& default_value) {
  return po::value(target)->default_value(default_value,
                                          FormatValue(default_value));
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
              desc->add_options()(flag.name.c_str(), Value(target, *target),
                                  flag.help.c_str());
            }
          } else {
            desc->add_options()(flag.name.c_str(), Value(target, *target),
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

// Options that describe this invocation, not the run: never taken from, or
// compared with, a resumed run's args.json.
const std::set<std::string> kPerInvocation = {
    "resume", "load",      "demo",  "config",  "help",       "version",
    "outdir", "log-level", "quiet", "profile", "step-offset"};

// train_a3c's entropy weight for two-player games (A3C's default, the
// reference's 0.01, for everything else).
constexpr double kGameBeta = 0.1;

// Options whose change breaks a run: the network and its inputs.
const std::set<std::string> kBreaking = {"env", "arch", "scale-observations"};

std::map<std::string, std::string> ReadArgsJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw FlagError("--resume: " + path +
                    " is missing; accepted: a checkpoint "
                    "inside a run folder made by train_a3c");
  }
  std::stringstream text;
  text << in.rdbuf();
  std::map<std::string, std::string> args;
  try {
    const Json json = Json::Parse(text.str());
    for (const auto& [key, value] : json.object()) {
      args[key] = value.string();
    }
  } catch (const std::runtime_error& e) {
    throw FlagError("--resume: " + path + " is unreadable: " + e.what());
  }
  return args;
}

// Fills every option the command line did not give from the resumed run's
// args.json (boost replaces defaulted values, never given ones).
void StoreResumedOptions(po::variables_map& vm,
                         const po::options_description& desc, RunFlags* f) {
  const std::filesystem::path ckpt(vm["resume"].as<std::string>());
  if (!std::filesystem::is_regular_file(ckpt / kCheckpointFileName)) {
    throw FlagError("--resume=" + ckpt.string() +
                    " is invalid; accepted: a checkpoint directory holding " +
                    kCheckpointFileName);
  }
  if (vm.count("load")) {
    throw FlagError("--load=" + vm["load"].as<std::string>() +
                    " is invalid; accepted: not together with --resume");
  }
  const std::filesystem::path run =
      std::filesystem::absolute(ckpt).lexically_normal().parent_path();
  const auto saved = ReadArgsJson(ArgsPath(run.string()));
  const bool eval_given = vm.count("eval-n-runs") || vm.count("eval-n-steps");
  std::string text;
  for (const auto& [key, value] : saved) {
    if (kPerInvocation.count(key)) continue;
    if (eval_given && (key == "eval-n-runs" || key == "eval-n-steps")) continue;
    if (vm.count(key) && !vm[key].defaulted()) {
      f->resume_changes.push_back(key);  // Compared once values are known.
      continue;
    }
    text += key + " = " + value + "\n";
  }
  std::istringstream in(text);
  po::store(po::parse_config_file(in, desc), vm);
  f->resume_run = run.string();
  f->resume_saved = saved;
}

// --demo --load DIR: the environment, network and episode limit of the
// checkpoint's run unless the command line gives them. A checkpoint that
// cannot be read is left for --load's own check to report.
void StoreDemoOptions(po::variables_map& vm,
                      const po::options_description& desc) {
  proto::Checkpoint checkpoint;
  try {
    checkpoint = LoadCheckpointDir(vm["load"].as<std::string>());
  } catch (const std::exception&) {
    return;
  }
  std::string text;
  for (const char* key :
       {"env", "arch", "max-episode-len", "scale-observations"}) {
    const auto it = checkpoint.metadata().config().find(key);
    if (it == checkpoint.metadata().config().end()) continue;
    if (vm.count(key) && !vm[key].defaulted()) continue;
    text += std::string(key) + " = " + it->second + "\n";
  }
  std::istringstream in(text);
  po::store(po::parse_config_file(in, desc), vm);
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

// Checks the options ParseRunFlags filled and completes the ones that
// depend on others (evaluation length, image defaults, the network "auto"
// stands for). The rules of each options struct are its Validate(); the
// checks here are about flags alone (which were given, names to look up).
void ValidateFlags(const po::variables_map& vm, const FlagContext& context,
                   int64_t eval_n_runs, int64_t eval_n_steps,
                   double successful_score, RunFlags* flags) {
  RunFlags& f = *flags;
  TrainOptions& t = f.train;
  A3COptions& a = f.agent;
  const bool runs_given = vm.count("eval-n-runs") > 0;
  const bool steps_given = vm.count("eval-n-steps") > 0;
  Require(!(runs_given && steps_given), "eval-n-steps",
          FormatValue(eval_n_steps),
          "not together with --eval-n-runs (give one of them)");
  if (steps_given) {
    Require(eval_n_steps >= 1, "eval-n-steps", FormatValue(eval_n_steps),
            "an integer >= 1");
    t.eval_n_steps = eval_n_steps;
  } else {
    Require(eval_n_runs >= 1, "eval-n-runs", FormatValue(eval_n_runs),
            "an integer >= 1");
    t.eval_n_episodes = eval_n_runs;
  }
  if (vm.count("successful-score")) {
    Require(t.eval_interval > 0 || f.demo, "successful-score", successful_score,
            "only with --eval-interval > 0");
    // In --demo the score is not used (and evaluation may be off).
    if (!f.demo) t.successful_score = successful_score;
  }
  static const std::vector<std::string> kLevels = {"debug", "info", "warning",
                                                   "error"};
  Require(
      std::find(kLevels.begin(), kLevels.end(), f.log_level) != kLevels.end(),
      "log-level", f.log_level, JoinNames(kLevels));
  std::unique_ptr<Env> env;
  std::string auto_arch;  // What --arch auto means for this environment.
  if (context.probe_env) {
    try {
      env = context.probe_env(f.env);
    } catch (const std::invalid_argument& e) {
      Require(false, "env", f.env, e.what());
    }
    Require(env != nullptr, "env", f.env, "an environment the program knows");
  } else {
    Require(DefaultEnvRegistry().Contains(f.env), "env", f.env,
            JoinNames(DefaultEnvRegistry().Names()));
    env = MakeEnv(f.env);
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
  if (context.a3c_agent) {
    Require(DefaultModelRegistry().Contains(f.arch), "arch", f.arch,
            JoinNames(DefaultModelRegistry().Names()));
  }
  {
    // Image observations (MinAtar) get their own reward scale, as the
    // reference's Atari example does not scale rewards.
    const bool image = env->ObservationSpace().shape.size() == 3;
    // Games' results (1, 0, -1) are not scaled either: the entropy bonus
    // would drown them.
    const bool game = FindSelfPlayEnv(*env) != nullptr;
    if (vm.count("reward-scale-factor") == 0) {
      f.reward_scale_factor = image || game ? 1.0 : 0.01;
    }
    // Games' entropy weight: with 0.01, pure self-play collapses onto a few
    // lines (measured, README "Two-player games"); 0.1 keeps it exploring.
    if (game && context.a3c_agent && vm.count("beta") &&
        vm["beta"].defaulted()) {
      a.beta = kGameBeta;
    }
    try {
      if (context.a3c_agent) {
        DefaultModelRegistry().Make(f.arch, env->ObservationSpace(),
                                    env->ActionSpace());
        auto_arch = AutoArch(env->ObservationSpace(), env->ActionSpace());
      }
    } catch (const std::invalid_argument& e) {
      Require(false, "arch", f.arch, e.what());
    }
  }
  if (!t.load.empty()) {
    Require(
        std::filesystem::is_regular_file(std::filesystem::path(t.load) /
                                         kCheckpointFileName),
        "load", t.load,
        std::string("a checkpoint directory holding ") + kCheckpointFileName);
  }
  Require(!f.demo || !t.load.empty(), "demo", "true",
          "only with --load DIR (the agent to evaluate)");

  if (SelfPlayEnv* game = FindSelfPlayEnv(*env)) {
    Require(!steps_given, "eval-n-steps", FormatValue(eval_n_steps),
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
  if (!f.curriculum_file.empty()) {
    try {
      // Recorded absolute, so --resume finds it from any directory.
      f.curriculum_file = std::filesystem::absolute(f.curriculum_file)
                              .lexically_normal()
                              .string();
      Curriculum curriculum = Curriculum::Load(f.curriculum_file);
      curriculum.CheckAgainst(*env);
      f.curriculum = std::make_shared<const Curriculum>(std::move(curriculum));
    } catch (const CurriculumError& e) {
      throw FlagError(std::string("--curriculum: ") + e.what());
    } catch (const std::invalid_argument& e) {
      throw FlagError("--curriculum: " + f.curriculum_file + ": " + e.what());
    }
  }
  t.outdir = f.outdir;  // The run directory is chosen later.
  // Each options struct's own rules, reported as the flags that filled it.
  f.dist.Validate();
  t.Validate();
  if (f.dist.Enabled()) f.dist.ValidateWith(t);
  if (f.curriculum) f.curriculum->Validate();
  f.self_play.Validate();
  a.Validate();
  EnvOptions env_options;
  env_options.max_episode_steps = t.max_episode_len;
  env_options.reward_scale = f.reward_scale_factor;
  env_options.Validate();
  for (const auto& [key, value] : vm) {
    if (key == "help" || key == "version") continue;
    const auto& any = value.value();
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
    f.resolved[key] = text;
  }
  if (!runs_given && !steps_given) f.resolved["eval-n-runs"] = "10";
  if (vm.count("reward-scale-factor") == 0) {
    f.resolved["reward-scale-factor"] = FormatValue(f.reward_scale_factor);
  }
  // args.json and checkpoints record the network actually built.
  if (f.arch == "auto" && !auto_arch.empty()) f.arch = auto_arch;
  if (!f.curriculum_file.empty()) f.resolved["curriculum"] = f.curriculum_file;
  f.resolved["arch"] = f.arch;
  f.resolved["lr"] = FormatValue(a.optimizer.lr);
  f.resolved["rmsprop-epsilon"] = FormatValue(a.optimizer.eps);
  if (context.a3c_agent) f.resolved["beta"] = FormatValue(a.beta);
  if (!f.resume.empty()) {
    std::vector<std::string> changes;
    for (const auto& key : f.resume_changes) {
      std::string before = f.resume_saved.at(key);
      // Runs before args.json recorded the resolved network say "auto".
      if (key == "arch" && before == "auto") before = auto_arch;
      const std::string& now = f.resolved[key];
      if (before == now) continue;
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
    // Check the checkpoint before anything is written.
    proto::Checkpoint checkpoint;
    try {
      checkpoint = LoadCheckpointDir(f.resume);
    } catch (const std::runtime_error& e) {
      throw FlagError("--resume=" + f.resume + " is invalid: " + e.what());
    }
    f.resume_step = checkpoint.global_step();
    Require(f.resume_step < t.steps, "steps", FormatValue(t.steps),
            "more than the checkpoint's step " + FormatValue(f.resume_step));
    t.resume = f.resume;
  }
  t.config = f.resolved;
}

}  // namespace

RunFlags ParseRunFlags(int argc, const char* const* argv,
                       const FlagContext& context) {
  RunFlags f;
  TrainOptions& t = f.train;
  A3COptions& a = f.agent;
  const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  int64_t eval_n_runs = 10;
  int64_t eval_n_steps = 0;
  double successful_score = 0;
  std::string config_file;

  // The reference example's defaults where they differ from the structs'.
  t.processes = cores > 0 ? cores : 1;
  t.steps = 80000000;
  t.eval_interval = 100000;
  // Where train_a3c departs from the reference's settings, measured: every
  // task reached its score sooner in wall time (README "Defaults";
  // docs/targets/). The structs keep the reference's values for library
  // users. 16 environments per worker only for agents that act on batches
  // (the built-in A3C); a program's own agent may not.
  a.optimizer.lr = 2e-3;
  a.optimizer.eps = 1e-5;
  if (context.a3c_agent) t.envs_per_process = 16;
  po::options_description run("Run");
  run.add_options()("help", "print this help and exit")(
      "version", "print the version and exit")(
      "config", po::value(&config_file),
      "read 'key = value' lines (flag names without --) from FILE; the command "
      "line wins")("env", Value(&f.env, f.env), "environment name")(
      "env-param", po::value(&f.env_param_args),
      "set a parameter of the environment: NAME=VALUE, repeatable or "
      "comma-separated (train and evaluation environments; the names and "
      "ranges --env declares are in the README); given on the command line, "
      "it replaces the config file's")(
      "curriculum", po::value(&f.curriculum_file),
      "YAML file of environment parameters for training: constants, "
      "samplers drawn per episode, curricula of lessons (ML-Agents' "
      "environment_parameters; README, \"Curricula\")")(
      "outdir", Value(&f.outdir, f.outdir),
      "each run gets a new folder under this directory")(
      "reward-scale-factor", po::value(&f.reward_scale_factor),
      "multiply training rewards by this (default: 0.01 as the reference's "
      "gym example, 1 for image observations as its Atari example)")(
      "scale-observations", po::bool_switch(&f.scale_observations),
      "map every observation element from its bounds to [-1, 1] (training, "
      "evaluation and --demo; needs an observation space with finite "
      "bounds)")("eval-n-runs", po::value(&eval_n_runs),
                 "evaluation episodes (default 10)")(
      "eval-n-steps", po::value(&eval_n_steps),
      "evaluation steps (instead of --eval-n-runs)")(
      "successful-score", po::value(&successful_score),
      "stop when an evaluation mean reaches this")(
      "demo", po::bool_switch(&f.demo), "evaluate the --load agent and exit")(
      "resume", po::value(&f.resume),
      "continue the run of this checkpoint (<run>/<checkpoint>) in its "
      "folder, with its options unless given again")(
      "quiet", po::bool_switch(&f.quiet),
      "no status line and no timer summary")("log-level",
                                             Value(&f.log_level, f.log_level),
                                             "debug, info, warning or error");
  po::options_description trainer("Trainer");
  FlagSpecs trainer_flags = t.Flags();
  FlagSpecs dist_flags = f.dist.Flags();
  trainer_flags.insert(trainer_flags.end(), dist_flags.begin(),
                       dist_flags.end());
  FlagSpecs game_flags = f.self_play.Flags();
  trainer_flags.insert(trainer_flags.end(), game_flags.begin(),
                       game_flags.end());
  for (FlagSpec& flag : trainer_flags) {
    if (flag.name == "processes") flag.help += " (default: number of cores)";
  }
  AddFlags(trainer_flags, &trainer);
  po::options_description agent("A3C agent");
  agent.add_options()(
      "arch", Value(&f.arch, f.arch),
      "network: auto (by the spaces), fc-softmax, fc-gaussian, minatar-conv, "
      "atari-conv, or one of them with -lstm")(
      "lr-decay", po::bool_switch(&f.lr_decay),
      "decay the learning rate linearly to 0 over --steps");
  FlagSpecs a3c_flags = a.Flags();
  AddFlags(a3c_flags, &agent);
  po::options_description desc(context.program +
                               ": train an agent with asynchronous worker "
                               "processes.\nOptions");
  desc.add(run).add(trainer).add(agent);
  po::options_description program(context.program);
  if (!context.program_flags.empty()) {
    AddFlags(context.program_flags, &program);
    desc.add(program);
  }

  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      std::ifstream in(path);
      if (!in) {
        throw FlagError("--config=" + path +
                        " is invalid; accepted: a readable file of 'key = "
                        "value' lines");
      }
      std::stringstream text;
      text << in.rdbuf();
      std::vector<std::string> args;
      try {
        for (const auto& [key, value] : ParseConfigText(text.str())) {
          if (key == "config") {
            throw std::invalid_argument(
                "'config' cannot be set in a config file");
          }
          const po::option_description* option =
              desc.find_nothrow(key, /*approx=*/false);
          if (option != nullptr && option->semantic()->max_tokens() == 0) {
            // A switch such as lr-decay: true/false.
            if (value == "true" || value == "1" || value == "yes") {
              args.push_back("--" + key);
            } else if (value != "false" && value != "0" && value != "no") {
              throw std::invalid_argument(key + " = " + value +
                                          ": accepted: true or false");
            }
            continue;
          }
          args.push_back("--" + key + "=" + value);
        }
      } catch (const std::invalid_argument& e) {
        throw FlagError("--config=" + path + " is invalid: " + e.what());
      }
      // Stored after the command line, so the command line wins.
      po::store(po::command_line_parser(args).options(desc).run(), vm);
    }
    if (vm.count("resume")) {
      if (vm.count("step-offset") && !vm["step-offset"].defaulted()) {
        throw FlagError(
            "--step-offset=" + FormatValue(vm["step-offset"].as<int64_t>()) +
            " is invalid; accepted: not together with --resume (it continues "
            "at the checkpoint's step)");
      }
      StoreResumedOptions(vm, desc, &f);
    }
    if (vm.count("demo") && vm["demo"].as<bool>() && vm.count("load")) {
      StoreDemoOptions(vm, desc);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw FlagError(e.what());
  }
  std::ostringstream help;
  help << desc;
  f.help_text = help.str();
  f.help = vm.count("help") > 0;
  f.version = vm.count("version") > 0;
  if (f.help || f.version) return f;

  AsFlags([&] {
    ValidateFlags(vm, context, eval_n_runs, eval_n_steps, successful_score, &f);
  });
  return f;
}

}  // namespace asyncrl
