// train_a3c: trains an A3C agent with asynchronous worker processes, or with
// --demo evaluates a saved one. Exit status: 0 success, 1 a worker failed,
// 2 invalid flags, 130/143 stopped by SIGINT/SIGTERM.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "a3c_flags.h"
#include "agents/a3c.h"
#include "agents/models.h"
#include "envs/fault_injection.h"
#include "envs/registry.h"
#include "experiments/evaluator.h"
#include "experiments/snapshot.h"
#include "experiments/train_agent_async.h"
#include "misc/build_info.h"
#include "misc/checkpoint.h"
#include "misc/json.h"
#include "misc/logging.h"
#include "misc/seeding.h"
#include "misc/torch_setup.h"

namespace asyncrl {
namespace {

namespace fs = std::filesystem;

std::string ShellQuote(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789-_=./:,+") == std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Writes `text` to `path` through a temporary file and a rename.
void WriteFileAtomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) {
      throw std::runtime_error("cannot write " + tmp.string() + ": " +
                               std::strerror(errno));
    }
  }
  fs::rename(tmp, path);
}

// A new directory under `outdir` named by the current time; never reuses an
// existing one.
fs::path MakeRunDir(const std::string& outdir) {
  std::error_code ec;
  fs::create_directories(outdir, ec);
  if (ec) {
    throw FlagError("--outdir=" + outdir +
                    " is invalid; accepted: a directory that can be created "
                    "and written (" +
                    ec.message() + ")");
  }
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          now.time_since_epoch())
                          .count() %
                      1000000;
  std::tm tm{};
  localtime_r(&secs, &tm);
  char stamp[64];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
  char name[96];
  std::snprintf(name, sizeof(name), "%s.%06lld", stamp,
                static_cast<long long>(micros));
  for (int i = 0;; ++i) {
    fs::path dir = fs::path(outdir) /
                   (i == 0 ? std::string(name)
                           : std::string(name) + "-" + std::to_string(i));
    if (mkdir(dir.c_str(), 0755) == 0) return dir;
    if (errno != EEXIST) {
      throw FlagError("--outdir=" + outdir +
                      " is invalid; accepted: a writable directory (creating " +
                      dir.string() + " failed: " + std::strerror(errno) + ")");
    }
  }
}

// Training and evaluation environments; ASYNCRL_INJECT_FAULT makes one
// worker's training environment fail on purpose (for testing).
MakeEnvFn EnvFactory(const A3CFlags& f, std::optional<FaultSpec> fault) {
  return [&f, fault](int idx, bool test) {
    EnvOptions options;
    options.max_episode_steps = f.train.max_episode_len;
    options.reward_scale = test ? 1.0 : f.reward_scale_factor;
    std::unique_ptr<Env> env = MakeEnv(f.env, options);
    if (fault && !test && fault->worker == idx) {
      env = std::make_unique<FaultyEnv>(std::move(env), *fault);
    }
    return env;
  };
}

MakeAgentFn AgentFactory(const A3CFlags& f, const Space& obs,
                         const Space& act) {
  return [&f, obs, act](int idx) -> std::unique_ptr<Agent> {
    torch::manual_seed(static_cast<uint64_t>(f.train.seed));
    A3COptions options = f.agent;
    options.seed = static_cast<uint64_t>(
        TrainEnvSeed(idx, f.train.seed, f.train.processes));
    return std::make_unique<A3C>(DefaultModelRegistry().Make(f.arch, obs, act),
                                 obs, act, options);
  };
}

int Demo(const A3CFlags& f, const Space& obs, const Space& act) {
  std::unique_ptr<Agent> agent = AgentFactory(f, obs, act)(0);
  agent->Load(f.train.load);
  auto env = EnvFactory(f, std::nullopt)(0, true);
  env->Reset(EvalEnvSeed(0, f.train.seed, 1));
  const EvalStats s = Summarize(
      RunEvaluation(*agent, *env, f.train.eval_n_steps, f.train.eval_n_episodes,
                    f.train.max_episode_len));
  std::cout << "n_runs: " << s.episodes << " mean: " << s.mean
            << " median: " << s.median << " stdev: " << s.stdev << std::endl;
  return 0;
}

int Main(int argc, char** argv) {
  A3CFlags f;
  try {
    f = ParseA3CFlags(argc, argv);
  } catch (const FlagError& e) {
    std::cerr << "train_a3c: " << e.what() << std::endl;
    return 2;
  }
  if (f.help) {
    std::cout << f.help_text;
    return 0;
  }
  if (f.version) {
    std::cout << "train_a3c " << kVersion << " (" << kBuildRevision << ")\n";
    return 0;
  }
  SetLogLevel(ParseLogLevel(f.log_level));
  ConfigureTorchForFork();
  auto probe = MakeEnv(f.env);
  const Space obs = probe->ObservationSpace();
  const Space act = probe->ActionSpace();
  if (f.demo) return Demo(f, obs, act);
  std::optional<FaultSpec> fault;
  try {
    fault = FaultSpecFromEnvironment();
  } catch (const std::invalid_argument& e) {
    throw FlagError(e.what());
  }

  fs::path run;
  std::string command;
  for (int a = 0; a < argc; ++a) {
    command += (a ? " " : "") + ShellQuote(argv[a]);
  }
  if (!f.resume.empty()) {
    // Check the checkpoint before anything is written.
    proto::Checkpoint checkpoint;
    try {
      checkpoint = LoadCheckpointDir(f.resume);
    } catch (const std::runtime_error& e) {
      throw FlagError("--resume=" + f.resume + " is invalid: " + e.what());
    }
    if (checkpoint.global_step() >= f.train.steps) {
      throw FlagError("--steps=" + std::to_string(f.train.steps) +
                      " is invalid; accepted: more than the checkpoint's "
                      "step " +
                      std::to_string(checkpoint.global_step()));
    }
    run = f.resume_run;
    std::cout << "results in " << run.string() << " (resuming from " << f.resume
              << " at step " << checkpoint.global_step() << ")" << std::endl;
    for (const auto& change : f.resume_changes) {
      std::cout << "resume: changed " << change << std::endl;
    }
    std::ifstream old_command(run / "command.txt");
    std::stringstream previous;
    previous << old_command.rdbuf();
    WriteFileAtomically(run / "command.txt", previous.str() + command + "\n");
  } else {
    run = MakeRunDir(f.outdir);
    std::cout << "results in " << run.string() << std::endl;
    WriteFileAtomically(run / "command.txt", command + "\n");
  }
  Json::Object args;
  for (const auto& [key, value] : f.resolved) args[key] = value;
  WriteFileAtomically(run / "args.json", Json(args).Dump(2) + "\n");

  TrainOptions options = f.train;
  options.outdir = run.string();
  if (f.quiet || f.log_level == "warning" || f.log_level == "error") {
    options.progress_interval = std::chrono::milliseconds(0);
  }
  std::vector<StepHook> hooks;
  if (f.lr_decay) {
    hooks.push_back(
        LinearLearningRateDecay(f.agent.optimizer.lr, 0.0, options.steps));
  }
  const TrainResult result =
      TrainAgentAsync(options, EnvFactory(f, fault), AgentFactory(f, obs, act),
                      hooks, &std::cout);
  if (result.exit_code != 0) {
    std::cerr << "train_a3c: " << result.message << std::endl;
    for (const WorkerEnd& w : result.report.workers) {
      std::cerr << "train_a3c:   " << w.Describe() << std::endl;
    }
    if (!result.except_dir.empty()) {
      std::cerr << "train_a3c: saved " << result.except_dir << std::endl;
    }
    return result.exit_code;
  }
  std::cout << "finished at step " << result.global_step << " after "
            << result.episodes << " episodes; results in " << run.string()
            << std::endl;
  return 0;
}

}  // namespace
}  // namespace asyncrl

int main(int argc, char** argv) {
  try {
    return asyncrl::Main(argc, argv);
  } catch (const asyncrl::FlagError& e) {
    std::cerr << "train_a3c: " << e.what() << std::endl;
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "train_a3c: " << e.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "train_a3c: " << e.what() << std::endl;
    return 1;
  }
}
