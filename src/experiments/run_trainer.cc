#include "asyncrl/experiments/run_trainer.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/models.h"
#include "asyncrl/agents/policy_script.h"
#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/envs/fault_injection.h"
#include "asyncrl/envs/games/connect_four_solver.h"
#include "asyncrl/envs/games/self_play_env.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/envs/wrappers.h"
#include "asyncrl/experiments/curriculum/curriculum_extension.h"
#include "asyncrl/experiments/evaluator.h"
#include "asyncrl/experiments/final_evaluation.h"
#include "asyncrl/experiments/hosts/hosts_extension.h"
#include "asyncrl/experiments/learner/learner_extension.h"
#include "asyncrl/experiments/policy_collapse.h"
#include "asyncrl/experiments/python_env/python_env.h"
#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/experiments/self_play/self_play.h"
#include "asyncrl/experiments/self_play/self_play_extension.h"
#include "asyncrl/experiments/time_budget.h"
#include "asyncrl/experiments/train_agent_async.h"
#include "asyncrl/experiments/training_returns.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/gif_file.h"
#include "asyncrl/misc/json.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/output_file.h"
#include "asyncrl/misc/picture.h"
#include "asyncrl/misc/platform/blas_kernel.h"
#include "asyncrl/misc/platform/process_group.h"
#include "asyncrl/misc/seeding.h"
#include "asyncrl/misc/tensorboard.h"
#include "asyncrl/misc/validate.h"
#include "asyncrl/misc/version.h"

namespace asyncrl {

namespace fs = std::filesystem;

std::unique_ptr<Env> DefaultEnv(const EnvContext& context) {
  EnvOptions options;
  options.max_episode_steps = context.max_episode_len;
  options.reward_scale = context.reward_scale;
  options.kwargs = context.env_kwargs;
  return MakeEnv(context.env, options);
}

std::unique_ptr<Agent> MakeA3C(const AgentContext& context) {
  if (context.flags == nullptr) {
    throw std::invalid_argument("MakeA3C: the context has no flags");
  }
  auto model = DefaultModelRegistry().Make(
      context.flags->arch, context.observation_space, context.action_space,
      context.flags->network);
  if (context.flags->algorithm == "ppo") {
    PPOOptions options = PpoOptions(*context.flags);
    options.seed = context.seed;
    return std::make_unique<PPO>(std::move(model), context.observation_space,
                                 context.action_space, options);
  }
  A3COptions options = context.flags->agent;
  options.seed = context.seed;
  return std::make_unique<A3C>(std::move(model), context.observation_space,
                               context.action_space, options);
}

namespace {

// --record: every frame of the recorded environment into one GIF.
class GifFrameSink : public FrameSink {
 public:
  explicit GifFrameSink(const std::string& path) : gif_(path) {}
  void Frame(const Env& env) override {
    if (env.Render(picture_)) gif_.AddFrame(picture_);
  }
  int64_t frames() const { return gif_.frames(); }
  void Save() { gif_.Save(); }

 private:
  GifRecording gif_;
  Picture picture_;
};

// Raised by SIGINT/SIGTERM during a finished run's final evaluation.
std::atomic<int32_t> final_eval_stop{0};

// One program run: the parsed flags and the plugins, with the defaults
// filled in.
class TrainerRun {
 public:
  TrainerRun(const RunFlags& flags, const TrainerPlugins& plugins)
      : f_(flags), plugins_(plugins) {
    if (!plugins_.make_env) plugins_.make_env = DefaultEnv;
    custom_agent_ = static_cast<bool>(plugins_.make_agent);
    if (!custom_agent_) plugins_.make_agent = MakeA3C;
  }

  // Training and evaluation environments; ASYNCRL_INJECT_FAULT makes one
  // worker's training environment fail on purpose (for testing).
  MakeEnvFn EnvFactory(std::optional<FaultSpec> fault) const {
    return [this, fault](int idx, bool test) {
      EnvContext context;
      context.env = f_.env;
      context.env_kwargs = f_.env_kwargs;
      context.process_idx = idx;
      context.test = test;
      context.reward_scale = test ? 1.0 : f_.reward_scale_factor;
      context.max_episode_len = f_.train.max_episode_len;
      std::unique_ptr<Env> env = plugins_.make_env(context);
      if (!env) {
        throw std::invalid_argument(plugins_.program + ": make_env(" + f_.env +
                                    ") returned null");
      }
      // --env-param, checked against the probe when the flags were parsed;
      // applied from the first Reset.
      for (const auto& [name, value] : f_.env_params) {
        env->SetParameter(name, value);
      }
      if (f_.scale_observations) {
        env = std::make_unique<ScaleObservations>(std::move(env));
      }
      if (fault && !test && fault->worker == idx) {
        env = std::make_unique<FaultyEnv>(std::move(env), *fault);
      }
      return env;
    };
  }

  MakeAgentFn AgentFactory(const Space& obs, const Space& act) const {
    return [this, obs, act](int idx) -> std::unique_ptr<Agent> {
      // Every process builds the same initial network; the shared
      // parameters are the parent's anyway.
      torch::manual_seed(static_cast<uint64_t>(f_.train.seed));
      AgentContext context;
      context.process_idx = idx;
      context.observation_space = obs;
      context.action_space = act;
      // With several hosts, each its own (ForThisHost).
      context.seed = static_cast<uint64_t>(TrainEnvSeed(
          idx, ForThisHost(f_.train, f_.dist).seed, f_.train.processes));
      context.flags = &f_;
      return plugins_.make_agent(context);
    };
  }

  // The built-in features, then the program's own extensions.
  Extensions AssembleExtensions() const {
    Extensions extensions;
    // First: its column comes right after the agent's statistics.
    extensions.push_back(std::make_shared<TrainingReturnsExtension>());
    extensions.push_back(std::make_shared<PolicyCollapseExtension>());
    extensions.push_back(std::make_shared<TimeBudgetExtension>());
    if (f_.curriculum) {
      extensions.push_back(
          std::make_shared<CurriculumExtension>(f_.curriculum));
    }
    extensions.push_back(std::make_shared<SelfPlayExtension>(f_.self_play));
    if (f_.learner.enabled) {
      extensions.push_back(
          std::make_shared<LearnerExtension>(f_.learner, f_.agent.t_max));
    }
    if (f_.dist.Enabled()) {
      extensions.push_back(std::make_shared<HostsExtension>(f_.dist));
    }
    if (plugins_.extensions) {
      AppendProgramOwn(plugins_.extensions(f_),
                       "an extension of the program is null", &extensions);
    }
    return extensions;
  }

  int Demo(const Space& obs, const Space& act) const {
    std::unique_ptr<Agent> agent = AgentFactory(obs, act)(0);
    LoadInto(*agent, "load", f_.train.load);
    auto env = EnvFactory(std::nullopt)(0, true);
    env->Reset(EvalEnvSeed(0, f_.train.seed, 1));
    std::optional<GifFrameSink> record;
    if (!f_.record_file.empty()) {
      try {
        record.emplace(f_.record_file);
      } catch (const std::runtime_error& e) {
        throw FlagError("--record=" + f_.record_file +
                        " is invalid; accepted: a file this program can "
                        "write (" +
                        e.what() + ")");
      }
    }
    SelfPlayEnv* game = FindSelfPlayEnv(*env);
    if (record) {
      // A game records its own moves (both sides'); other environments
      // record through their outermost wrapper.
      if (game != nullptr) {
        game->RecordTo(&*record);
      } else {
        env->RecordTo(&*record);
      }
    }
    if (game != nullptr) {
      DemoGame(*agent, *game);
    } else {
      const EvalStats s = Summarize(
          RunEvaluation(*agent, *env, f_.train.eval_n_steps,
                        f_.train.eval_n_episodes, f_.train.max_episode_len));
      std::cout << "n_runs: " << s.episodes << " mean: " << s.mean
                << " median: " << s.median << " stdev: " << s.stdev
                << std::endl;
    }
    if (record) {
      record->Save();
      Log(LogLevel::kInfo, "Recorded " + std::to_string(record->frames()) +
                               " frames to " + f_.record_file);
    }
    return 0;
  }

  // --export FILE --load DIR: the loaded agent's policy as TorchScript.
  int Export(const Space& obs, const Space& act) const {
    std::unique_ptr<Agent> agent = AgentFactory(obs, act)(0);
    LoadInto(*agent, "load", f_.train.load);
    auto* actor_critic = dynamic_cast<ActorCriticAgent*>(agent.get());
    if (actor_critic == nullptr) {
      throw FlagError("--export=" + f_.export_file +
                      " is invalid; accepted: an agent derived from "
                      "ActorCriticAgent (" +
                      plugins_.program + "'s make_agent returns another)");
    }
    ExportOptions options;
    std::unique_ptr<Env> env = EnvFactory(std::nullopt)(0, true);
    if (const auto* scale = dynamic_cast<const ScaleObservations*>(env.get())) {
      options.scaling = {scale->factor(), scale->offset()};
    }
    options.info = {{"env", f_.env},
                    {"arch", custom_agent_ ? "custom" : f_.arch},
                    {"hidden-sizes", f_.network.hidden_sizes},
                    {"activation", f_.network.activation},
                    {"conv-channels", f_.network.conv_channels},
                    {"algorithm", f_.algorithm},
                    {"checkpoint", f_.train.load},
                    {"asyncrl_version", Version()}};
    torch::jit::Module module;
    try {
      module = ExportPolicy(*actor_critic, options);
    } catch (const std::invalid_argument& e) {
      throw FlagError("--export=" + f_.export_file +
                      " is invalid; accepted: an agent whose model can be "
                      "written as TorchScript (" +
                      e.what() + ")");
    }
    SaveScriptModule(module, f_.export_file);
    Log(LogLevel::kInfo,
        "Exported the policy of " + f_.train.load + " to " + f_.export_file);
    return 0;
  }

  // A game's --demo: --eval-n-runs games against each evaluation opponent,
  // half of them moving first, as a table.
  void DemoGame(Agent& agent, SelfPlayEnv& game) const {
    const std::vector<OpponentRecord> records = PlayAgainstOpponents(
        agent, game, f_.self_play.EvalOpponents(game.game().Name()),
        f_.train.eval_n_episodes);
    std::printf("%-12s %7s  %-22s %-22s %s\n", "opponent", "games",
                "moving first: W/D/L", "moving second: W/D/L",
                "win/draw/loss rate");
    for (const OpponentRecord& r : records) {
      const std::string first = std::to_string(r.wins[0]) + "/" +
                                std::to_string(r.draws[0]) + "/" +
                                std::to_string(r.losses[0]);
      const std::string second = std::to_string(r.wins[1]) + "/" +
                                 std::to_string(r.draws[1]) + "/" +
                                 std::to_string(r.losses[1]);
      std::printf("%-12s %7lld  %-22s %-22s %.3f/%.3f/%.3f\n",
                  r.opponent.c_str(), static_cast<long long>(r.Games()),
                  first.c_str(), second.c_str(), r.WinRate(), r.DrawRate(),
                  r.LossRate());
    }
    // Connect Four: the solver's judge, as every evaluation reports it.
    if (game.game().Name() == "ConnectFour") {
      std::printf("judge: %.3f of %zu positions keep their value\n",
                  JudgeAgreement(agent), ConnectFourJudgeSet().size());
    }
    std::fflush(stdout);
  }

  int Train(int argc, const char* const* argv, const Space& obs,
            const Space& act) const {
    std::optional<FaultSpec> fault;
    try {
      fault = FaultSpecFromEnvironment();
    } catch (const std::invalid_argument& e) {
      throw FlagError(e.what());
    }
    if (custom_agent_) CheckCustomAgent(obs, act);
    CheckCheckpointFits(obs, act);
    // Built before anything is written: a program's extension may refuse.
    const Extensions extensions = AssembleExtensions();
    CheckRunFits(obs, act, fault, extensions);
    std::error_code ec;
    const bool outdir_existed = fs::exists(f_.outdir, ec);
    std::unique_ptr<RunLock> lock;
    // A resumed folder as the lock found it, for a run the hosts refuse
    // before it trains (the only refusal after the folder is written).
    std::optional<RunFolderSnapshot> before;
    const fs::path run =
        OpenRunFolder(argc, argv, &lock, f_.dist.Enabled() ? &before : nullptr);

    TrainOptions options = f_.train;
    options.outdir = run.string();
    if (f_.quiet || f_.log_level == "warning" || f_.log_level == "error") {
      options.progress_interval = std::chrono::milliseconds(0);
    }
    TrainResult result =
        TrainAgentAsync(options, EnvFactory(fault), AgentFactory(obs, act),
                        StepHooks(options.steps), &std::cout, extensions);
    if (result.refused) {
      UndoRefusedRun(run, outdir_existed, before, &lock, &result.message);
    }
    if (result.exit_code == 0 && !result.refused) {
      // The run is done: an evaluation that fails says so and the run still
      // ends well (a full disk, an environment that refuses the seed).
      try {
        FinalEvaluations(result, run, &result.notes);
      } catch (const std::exception& e) {
        Log(LogLevel::kWarning,
            std::string("the final evaluation failed: ") + e.what());
        result.notes.push_back(std::string("final evaluation: failed (") +
                               e.what() + "); the run's checkpoints are whole");
      }
    }
    return Report(result, run);
  }

 private:
  // An option an extension refuses, named as the flag that set it where
  // one did ("--buffer-mib=0.0001 is invalid; ..."), else as it is.
  [[noreturn]] void ThrowAsFlag(const InvalidOption& e) const {
    const std::string flag = FlagName(e.field());
    if (f_.resolved.count(flag) != 0) {
      throw FlagError("--" + flag + "=" + e.value() +
                      " is invalid; accepted: " + e.accepted());
    }
    throw e;
  }

  // What the checkpoints and, on a resume, scores.txt's columns need of
  // the run (the agent's size, the extensions' state), checked before
  // anything is written.
  void CheckRunFits(const Space& obs, const Space& act,
                    const std::optional<FaultSpec>& fault,
                    const Extensions& extensions) const {
    try {
      CheckCheckpointSize(f_.train, EnvFactory(fault), AgentFactory(obs, act),
                          extensions);
    } catch (const InvalidOption& e) {
      ThrowAsFlag(e);
    } catch (const std::invalid_argument& e) {
      throw FlagError(e.what());
    }
    if (f_.resume.empty()) return;
    // A resume whose options change scores.txt's columns is refused
    // before command.txt and args.json are rewritten.
    TrainOptions resumed = f_.train;
    resumed.outdir = f_.resume_run;
    try {
      CheckScoresTable(resumed, EnvFactory(fault), AgentFactory(obs, act),
                       extensions);
    } catch (const InvalidOption& e) {
      ThrowAsFlag(e);  // An option an extension refuses: its own message.
    } catch (const std::invalid_argument& e) {
      throw FlagError("--resume=" + f_.resume + " is invalid: " + e.what());
    }
  }

  // A run the hosts refused before it trained: its folder removed (a new
  // run; --outdir too when this run created it) or restored as the lock
  // found it (a resume), the lock released, and `message` saying which.
  void UndoRefusedRun(const fs::path& run, bool outdir_existed,
                      const std::optional<RunFolderSnapshot>& before,
                      std::unique_ptr<RunLock>* lock,
                      std::string* message) const {
    const std::string problem = f_.resume.empty()
                                    ? RunFolderSnapshot(run, false).Restore()
                                : before ? before->Restore()
                                         : "no snapshot of it was taken";
    lock->reset();
    std::error_code ec;
    if (f_.resume.empty() && !outdir_existed) fs::remove(f_.outdir, ec);
    if (problem.empty() && f_.resume.empty()) {
      *message += "; nothing was trained: " + run.string() + " was removed";
    } else if (problem.empty()) {
      *message += "; nothing was trained: " + run.string() + " is as it was";
    } else {
      *message += "; leaving " + run.string() + " as it was failed: " + problem;
    }
  }
  // A finished run's final agent and best/ on fresh episodes
  // (experiments/final_evaluation.h): final_eval.tsv, TensorBoard, and the
  // lines the run ends with. Not for games (their measure is the
  // opponents' table, --demo) nor on hosts other than rank 0 (which
  // holds the checkpoints).
  void FinalEvaluations(const TrainResult& result, const fs::path& run,
                        std::vector<std::string>* notes) const {
    if (f_.final_eval_n_runs == 0 || f_.dist.node_rank != 0) return;
    FinalEvaluationSetup setup;
    setup.run = run;
    setup.steps = f_.train.steps;
    setup.global_step = result.global_step;
    setup.episodes = f_.final_eval_n_runs;
    setup.seed = f_.train.seed;
    setup.max_episode_len = f_.train.max_episode_len > 0
                                ? f_.train.max_episode_len
                                : kFinalEvalEpisodeCap;
    std::unique_ptr<Env> probe = EnvFactory(std::nullopt)(0, true);
    if (FindSelfPlayEnv(*probe) != nullptr) return;
    const MakeAgentFn make_agent =
        AgentFactory(probe->ObservationSpace(), probe->ActionSpace());
    probe.reset();
    setup.make_agent = [make_agent] { return make_agent(0); };
    setup.make_env = [this] { return EnvFactory(std::nullopt)(0, true); };
    // In a child process: this one never starts an embedded Python (a
    // Python environment's interpreter would live on in it), and what the
    // evaluation leaves ends with the child. SIGINT or SIGTERM ends the
    // evaluation (the run is done): nothing of it is written, and the run
    // ends as it would have.
    final_eval_stop.store(0);
    setup.stop = &final_eval_stop;
    struct sigaction action {};
    action.sa_handler = [](int) { final_eval_stop.store(1); };
    sigemptyset(&action.sa_mask);
    struct sigaction old_int {};
    struct sigaction old_term {};
    sigaction(SIGINT, &action, &old_int);
    sigaction(SIGTERM, &action, &old_term);
    std::string reply;
    int status = 0;
    try {
      reply = EvaluateInChild(setup, result.global_step, &status);
    } catch (...) {
      sigaction(SIGINT, &old_int, nullptr);
      sigaction(SIGTERM, &old_term, nullptr);
      throw;
    }
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    if (final_eval_stop.load() != 0 || (!reply.empty() && reply[0] == 'S')) {
      notes->push_back("final evaluation: stopped by a signal; not written");
      return;
    }
    if (WIFSIGNALED(status)) {
      throw std::runtime_error("its process was killed by " +
                               SignalName(WTERMSIG(status)));
    }
    if (reply.empty() || reply[0] == 'E') {
      throw std::runtime_error(reply.empty() ? "its process exited without "
                                               "an answer"
                                             : reply.substr(1));
    }
    std::istringstream lines(reply.substr(1));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) notes->push_back(line);
    }
  }

  // Forks a child that evaluates (EvaluateAndWrite) and answers through a
  // pipe: "D" and the lines to print, "S" stopped, "E" and an error.
  // Returns the answer; *status is the child's wait status.
  std::string EvaluateInChild(const FinalEvaluationSetup& setup,
                              int64_t global_step, int* status) const {
    int fds[2];
    if (pipe(fds) != 0) {
      throw std::runtime_error(std::string("pipe failed: ") +
                               std::strerror(errno));
    }
    std::fflush(stdout);
    std::cout.flush();
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) {
      const std::string error = std::strerror(errno);
      close(fds[0]);
      close(fds[1]);
      throw std::runtime_error("fork failed: " + error);
    }
    if (pid == 0) {
      close(fds[0]);
      std::string out;
      int code = 0;
      try {
        out = EvaluateAndWrite(setup, global_step);
      } catch (const std::exception& e) {
        out = std::string("E") + e.what();
        code = 1;
      }
      std::cout.flush();
      std::fflush(stdout);
      std::fflush(stderr);
      size_t done = 0;
      while (done < out.size()) {
        const ssize_t w = write(fds[1], out.data() + done, out.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += static_cast<size_t>(w);
      }
      _exit(code);
    }
    close(fds[1]);
    std::string reply;
    char buf[4096];
    bool forwarded = false;
    for (;;) {
      const ssize_t r = read(fds[0], buf, sizeof(buf));
      if (r < 0 && errno == EINTR) {
        // A signal to this process alone (kill PID) reaches the child too.
        if (final_eval_stop.load() != 0 && !forwarded) {
          kill(pid, SIGTERM);
          forwarded = true;
        }
        continue;
      }
      if (r <= 0) break;
      reply.append(buf, static_cast<size_t>(r));
    }
    close(fds[0]);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
    return reply;
  }

  // The evaluation itself (in the child): final_eval.tsv, the run's
  // TensorBoard file; "D" and the lines to print, or "S" when a signal
  // stopped it.
  std::string EvaluateAndWrite(const FinalEvaluationSetup& setup,
                               int64_t global_step) const {
    const std::vector<FinalEvaluation> rows =
        EvaluateFinalAgents(setup, f_.quiet ? nullptr : &std::cout);
    if (final_eval_stop.load() != 0) return "S";
    if (rows.empty()) return "D";
    const fs::path& run = setup.run;
    WriteOutputFile((run / "final_eval.tsv").string(),
                    FinalEvaluationTable(rows), "final_eval");
    {
      // Into the run's events file (the newest, if a resume made another).
      std::string file;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(run, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("events.out.tfevents.", 0) == 0 && name > file) {
          file = name;
        }
      }
      EventWriter events(run.string(), file);
      for (const FinalEvaluation& r : rows) {
        events.WriteScalar("final_eval/" + r.agent + "_" + r.action + "_mean",
                           global_step, r.stats.mean, WallTimeSeconds());
      }
    }
    std::string out = "D";
    for (const std::string& line : DescribeFinalEvaluations(rows)) {
      out += line + "\n";
    }
    out += "final evaluation written to " + (run / "final_eval.tsv").string();
    return out;
  }

  // The step hooks of a run of `steps`: --lr-decay's, --beta-decay's, then
  // the program's own (an empty one is refused).
  std::vector<StepHook> StepHooks(int64_t steps) const {
    std::vector<StepHook> hooks;
    if (f_.lr_decay) {
      hooks.push_back(
          LinearLearningRateDecay(f_.agent.optimizer.lr, 0.0, steps));
    }
    if (f_.beta_decay) {
      hooks.push_back(LinearEntropyWeightDecay(f_.agent.beta, 0.0, steps));
    }
    if (plugins_.step_hooks) {
      AppendProgramOwn(plugins_.step_hooks(f_),
                       "step_hooks returned an empty hook", &hooks);
    }
    return hooks;
  }

  // Appends the program's own `items` (its extensions or step hooks) to
  // `to`; an empty one is refused with `problem`, named after the program.
  template <typename T>
  void AppendProgramOwn(std::vector<T> items, const std::string& problem,
                        std::vector<T>* to) const {
    for (T& item : items) {
      if (!item) {
        throw std::invalid_argument(plugins_.program + ": " + problem);
      }
      to->push_back(std::move(item));
    }
  }

  // Loads checkpoint `dir` (given as --flag) into `agent`; one the agent
  // cannot take (another environment, network or agent) is an invalid
  // flag, exit 2.
  static void LoadInto(Agent& agent, const std::string& flag,
                       const std::string& dir) {
    try {
      agent.Load(dir);
    } catch (const std::runtime_error& e) {
      throw FlagError("--" + flag + "=" + dir + " is invalid: " + e.what());
    }
  }

  // The checkpoint --resume or --load names, tried on an agent of this run
  // before anything is written (it was refused only after the run folder,
  // args.json and command.txt were).
  void CheckCheckpointFits(const Space& obs, const Space& act) const {
    const bool resume = !f_.resume.empty();
    const std::string& dir = resume ? f_.resume : f_.train.load;
    if (dir.empty()) return;
    std::unique_ptr<Agent> probe = AgentFactory(obs, act)(0);
    LoadInto(*probe, resume ? "resume" : "load", dir);
  }

  // A program's own agent is built once before anything is written, so
  // that one refusing the environment's spaces (std::invalid_argument) is
  // an invalid-input error with nothing created. A3C's network was checked
  // with the flags.
  void CheckCustomAgent(const Space& obs, const Space& act) const {
    std::unique_ptr<Agent> probe;
    try {
      probe = AgentFactory(obs, act)(0);
    } catch (const InvalidOption& e) {
      const std::string field = FlagName(e.field());
      for (const FlagSpec& flag : plugins_.flags) {
        if (flag.name == field) {
          throw FlagError("--" + field + "=" + e.value() +
                          " is invalid; accepted: " + e.accepted());
        }
      }
      throw;
    }
    if (f_.train.envs_per_process > 1 &&
        dynamic_cast<BatchAgent*>(probe.get()) == nullptr) {
      throw FlagError(
          "--envs-per-process=" + std::to_string(f_.train.envs_per_process) +
          " is invalid; accepted: 1 (agent type '" + probe->Type() +
          "' does not act on batches)");
    }
  }

  // The run folder: the resumed run's, or a new one; locked for this run
  // (*lock), then command.txt (appended to on resume) and args.json.
  // `before` (if not null): the resumed folder's files once it is locked,
  // before this run writes.
  fs::path OpenRunFolder(int argc, const char* const* argv,
                         std::unique_ptr<RunLock>* lock,
                         std::optional<RunFolderSnapshot>* before) const {
    std::string command;
    for (int a = 0; a < argc; ++a) {
      command += (a ? " " : "") + ShellQuote(argv[a]);
    }
    fs::path run;
    if (!f_.resume.empty()) {
      run = f_.resume_run;
      try {
        *lock = std::make_unique<RunLock>(run);
      } catch (const RunLocked& e) {
        throw FlagError("--resume=" + f_.resume + " is invalid; accepted: " +
                        "a run no other trainer is running (" + e.what() + ")");
      } catch (const std::runtime_error& e) {
        // A folder this user cannot write (read-only, another owner).
        throw FlagError("--resume=" + f_.resume + " is invalid; accepted: " +
                        "a run folder this user can write (" + e.what() + ")");
      }
      if (before != nullptr) before->emplace(run, /*existed=*/true);
      std::cout << "results in " << run.string() << " (resuming from "
                << f_.resume << " at step " << f_.resume_step << ")"
                << std::endl;
      for (const auto& change : f_.resume_changes) {
        std::cout << "resume: changed " << change << std::endl;
      }
      std::ifstream old_command(CommandPath(run.string()));
      std::stringstream previous;
      previous << old_command.rdbuf();
      WriteFileAtomically(CommandPath(run.string()),
                          previous.str() + command + "\n");
    } else {
      run = MakeRunDir(f_.outdir);
      *lock = std::make_unique<RunLock>(run);
      std::cout << "results in " << run.string() << std::endl;
      WriteFileAtomically(CommandPath(run.string()), command + "\n");
    }
    if (!f_.defaults_note.empty()) Log(LogLevel::kInfo, f_.defaults_note);
    if (f_.curriculum) {
      for (const auto& warning : f_.curriculum->warnings) {
        Log(LogLevel::kWarning, warning);
      }
    }
    Json::Object args;
    for (const auto& [key, value] : f_.resolved) args[key] = value;
    WriteFileAtomically(ArgsPath(run.string()), Json(args).Dump(2) + "\n");
    return run;
  }

  // The end of the run on stdout (done) or stderr (failed): its exit code.
  int Report(const TrainResult& result, const fs::path& run) const {
    if (result.exit_code != 0) {
      std::cerr << plugins_.program << ": " << result.message << std::endl;
      // How each other worker ended, when this host's workers are the story
      // (not when another host stopped the run); the first failure is the
      // line above.
      const GroupReport& report = result.report;
      for (const WorkerEnd& w : report.workers) {
        if (report.Ok()) break;
        if (w.process_idx == report.first_failure) continue;
        std::cerr << plugins_.program << ":   " << w.Describe() << std::endl;
      }
      if (!result.except_dir.empty()) {
        std::cerr << plugins_.program << ": saved " << result.except_dir
                  << std::endl;
      }
      return result.exit_code;
    }
    std::cout << "finished at step " << result.global_step << " after "
              << result.episodes << " episodes; results in " << run.string()
              << std::endl;
    for (const std::string& note : result.notes) {
      std::cout << note << std::endl;
    }
    return 0;
  }

  const RunFlags& f_;
  TrainerPlugins plugins_;
  bool custom_agent_ = false;
};

int Run(int argc, const char* const* argv, const TrainerPlugins& plugins) {
  // A file-size limit (ulimit -f) must fail a write with EFBIG, reported
  // and cleaned up like a full disk, not kill the program silently.
  signal(SIGXFSZ, SIG_IGN);
  RegisterPythonEnvironments(DefaultEnvRegistry());
  FlagContext context;
  context.program = plugins.program;
  context.a3c_agent = !plugins.make_agent;
  context.program_flags = plugins.flags;
  if (plugins.make_env) {
    context.probe_env = [&plugins](const std::string& env) {
      EnvContext probe;
      probe.env = env;
      probe.test = true;
      return plugins.make_env(probe);
    };
  }
  const RunFlags f = ParseRunFlags(argc, argv, context);
  if (f.help) {
    std::cout << f.help_text;
    return 0;
  }
  if (f.version) {
    std::cout << plugins.program << " " << Version() << " (" << BuildRevision()
              << ")\n";
    const std::string kernel = CurrentBlasKernel();
    std::cout << "blas: " << BlasLibrary()
              << (kernel.empty() ? "" : " (OpenBLAS kernel " + kernel + ")")
              << "\n";
    return 0;
  }
  SetLogLevel(ParseLogLevel(f.log_level));
  ConfigureTorchForFork();
  const TrainerRun run(f, plugins);
  std::unique_ptr<Env> probe = run.EnvFactory(std::nullopt)(0, true);
  const Space obs = probe->ObservationSpace();
  const Space act = probe->ActionSpace();
  probe.reset();
  if (f.demo) return run.Demo(obs, act);
  if (!f.export_file.empty()) return run.Export(obs, act);
  return run.Train(argc, argv, obs, act);
}

}  // namespace

int RunTrainer(int argc, const char* const* argv,
               const TrainerPlugins& plugins) {
  const std::string& name = plugins.program;
  // Before anything else: may restart the program with a faster OpenBLAS
  // kernel (misc/platform/blas_kernel.h).
  EnsureBestBlasKernel(argc, argv);
  // A reader of the output that goes away (`| head`, a killed `tee`, a
  // closed terminal's pipe) must not kill the run: a write to the broken
  // pipe fails with EPIPE instead of raising SIGPIPE, the output is
  // dropped, and training, checkpoints and scores.txt go on as before
  // (docs/reliability.md). The workers inherit it.
  signal(SIGPIPE, SIG_IGN);
  try {
    return Run(argc, argv, plugins);
  } catch (const FlagError& e) {
    std::cerr << name << ": " << e.what() << std::endl;
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << name << ": " << e.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << std::endl;
    return 1;
  }
}

}  // namespace asyncrl
