#include "asyncrl/experiments/train_agent_async.h"

#include <gperftools/profiler.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>

#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/experiments/evaluator.h"
#include "asyncrl/experiments/learning_curve.h"
#include "asyncrl/experiments/metrics.h"
#include "asyncrl/experiments/progress.h"
#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/experiments/snapshot.h"
#include "asyncrl/experiments/train_loop.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/tensorboard.h"
#include "asyncrl/misc/timers.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double WallTime() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Starts a CPU profile of this process for its lifetime when asked.
class ProfileScope {
 public:
  ProfileScope(bool enabled, const fs::path& dir, const std::string& who) {
    if (!enabled) return;
    const std::string path =
        (dir / ("profile-" + who + "-" + std::to_string(getpid()) + ".prof"))
            .string();
    active_ = ProfilerStart(path.c_str()) != 0;
    if (!active_) {
      throw std::runtime_error("--profile: cannot start a profile at " + path);
    }
  }
  ~ProfileScope() {
    if (active_) ProfilerStop();
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  bool active_ = false;
};

// Writes this process's timer tree to <dir>/timers-<idx>.json when the
// worker ends, also when it ends by an exception.
class TimerFileScope {
 public:
  TimerFileScope(const fs::path& dir, int idx)
      : path_(dir / ("timers-" + std::to_string(idx) + ".json")) {
    TimerTree::Process().Clear();
  }
  ~TimerFileScope() {
    const fs::path tmp = path_.string() + ".tmp";
    std::ofstream out(tmp, std::ios::trunc);
    out << TimerTree::Process().ToJson().Dump(2) << "\n";
    if (out.flush()) {
      std::error_code ec;
      fs::rename(tmp, path_, ec);
    }
  }
  TimerFileScope(const TimerFileScope&) = delete;
  TimerFileScope& operator=(const TimerFileScope&) = delete;

 private:
  fs::path path_;
};

// The summary of every worker's timers-<i>.json, or "" if none is readable.
std::string TimerSummary(const fs::path& dir, int processes) {
  std::vector<Json> trees;
  for (int i = 0; i < processes; ++i) {
    std::ifstream in(dir / ("timers-" + std::to_string(i) + ".json"));
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    try {
      trees.push_back(Json::Parse(text.str()));
    } catch (const std::runtime_error&) {
      // A worker killed while writing leaves no (or a partial) file.
    }
  }
  if (trees.empty()) return "";
  return "time per timer, summed over " + std::to_string(trees.size()) +
         " workers:\n" + FormatTimerSummary(MergeTimerTrees(trees));
}

// Writes a worker's agent statistics (Agent::Statistics) at the end of its
// loop to <dir>/statistics-<idx>.tsv, "name<TAB>value" lines in the agent's
// order, for the summary below.
void WriteStatistics(const fs::path& dir, int idx, const Agent& agent) {
  const fs::path path = dir / ("statistics-" + std::to_string(idx) + ".tsv");
  const fs::path tmp = path.string() + ".tmp";
  std::ofstream out(tmp, std::ios::trunc);
  out.precision(17);
  for (const auto& s : agent.Statistics())
    out << s.name << "\t" << s.value << "\n";
  if (out.flush()) {
    std::error_code ec;
    fs::rename(tmp, path, ec);
  }
}

// Each statistic over the workers' statistics-<i>.tsv: the mean, and the
// maximum for names ending in "_max"; "" if none is readable.
std::string StatisticsSummary(const fs::path& dir, int processes) {
  std::vector<std::string> names;
  std::map<std::string, std::vector<double>> values;
  int files = 0;
  for (int i = 0; i < processes; ++i) {
    std::ifstream in(dir / ("statistics-" + std::to_string(i) + ".tsv"));
    if (!in) continue;  // A worker that failed writes none.
    // "name<TAB>value" lines; strtod reads nan and inf too.
    std::string line;
    while (std::getline(in, line)) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos) continue;
      const std::string name = line.substr(0, tab);
      const double value = std::strtod(line.c_str() + tab + 1, nullptr);
      if (values.count(name) == 0) names.push_back(name);
      values[name].push_back(value);
    }
    ++files;
  }
  if (files == 0) return "";
  std::string out = "agent statistics over the last 100 updates, mean of " +
                    std::to_string(files) + " workers (max for *_max):\n";
  for (const auto& name : names) {
    const std::vector<double>& v = values[name];
    const bool is_max =
        name.size() > 4 && name.compare(name.size() - 4, 4, "_max") == 0;
    double x = is_max ? v[0] : 0.0;
    for (double value : v) x = is_max ? std::max(x, value) : x + value;
    if (!is_max) x /= static_cast<double>(v.size());
    char line[128];
    std::snprintf(line, sizeof(line), "  %-26s %12.6g\n", name.c_str(), x);
    out += line;
  }
  return out;
}

// How often the parent drains the metrics pipe and looks at the workers.
constexpr std::chrono::milliseconds kTickInterval{100};

// The parent's periodic work: metrics to TensorBoard, the learning curve,
// the status line.
class ParentMonitor {
 public:
  ParentMonitor(const TrainOptions& options, ControlBlock& control,
                MetricsChannel& metrics, EventWriter& events,
                Progress& progress)
      : options_(options),
        control_(control),
        metrics_(metrics),
        events_(events),
        progress_(progress),
        last_rate_time_(Clock::now()),
        last_rate_step_(control.global_step.load()) {}

  void Tick(bool final_tick) {
    metrics_.Drain([this](const MetricRecord& r) {
      events_.WriteScalar(r.tag, r.step, r.value, r.wall_time);
    });
    const auto now = Clock::now();
    const double dt =
        std::chrono::duration<double>(now - last_rate_time_).count();
    if (dt >= 1.0 || final_tick) {
      const int64_t step = control_.global_step.load();
      if (dt > 0) {
        events_.WriteScalar("train/steps_per_s", step,
                            (step - last_rate_step_) / dt, WallTime());
      }
      last_rate_time_ = now;
      last_rate_step_ = step;
    }
    ReportCurriculum(final_tick || dt >= 1.0);
    if (final_tick || dt >= 1.0) ReportSelfPlay();
    events_.Flush();
    std::error_code ec;
    const auto size =
        fs::file_size(fs::path(options_.outdir) / "scores.txt", ec);
    if (!ec && size != scores_size_) {
      scores_size_ = size;
      WriteLearningCurve(options_.outdir, options_.env_name);
    }
    if (final_tick) {
      progress_.Finish();
    } else {
      progress_.Update();
    }
  }

 private:
  // Logs each lesson advance once, in order (the workers advance and
  // record; the parent speaks), with curriculum/<parameter>/lesson and /value
  // (the lesson's value, a sampler's mean) at its step; every parameter's
  // lesson and value again when `periodic`.
  void ReportCurriculum(bool periodic) {
    if (!options_.curriculum) return;
    const auto& params = options_.curriculum->parameters;
    const CurriculumBlock& block = control_.curriculum;
    const int64_t advances = block.advances.load(std::memory_order_acquire);
    if (advances - reported_ > CurriculumBlock::kRecords) {
      Log(LogLevel::kWarning,
          "curriculum: " +
              std::to_string(advances - reported_ - CurriculumBlock::kRecords) +
              " lesson advances happened too fast to be reported");
      reported_ = advances - CurriculumBlock::kRecords;
    }
    for (; reported_ < advances; ++reported_) {
      // A copy, checked: a slot overwritten meanwhile (more than kRecords
      // advances since) must not index out of range.
      const CurriculumBlock::Advance record =
          block.records[reported_ % CurriculumBlock::kRecords];
      if (record.parameter < 0 ||
          record.parameter >= static_cast<int32_t>(params.size())) {
        continue;
      }
      const auto& p = params[static_cast<size_t>(record.parameter)];
      if (record.lesson < 1 ||
          record.lesson >= static_cast<int32_t>(p.lessons.size())) {
        continue;
      }
      const auto& before = p.lessons[static_cast<size_t>(record.lesson - 1)];
      const auto& now = p.lessons[static_cast<size_t>(record.lesson)];
      Log(LogLevel::kInfo,
          "curriculum: lesson " + std::to_string(record.lesson + 1) + " of " +
              std::to_string(p.lessons.size()) + " of " + p.parameter + " ('" +
              now.name + "'): " + before.value.Describe() + " -> " +
              now.value.Describe() + " at step " + std::to_string(record.step));
      WriteLesson(p, record.lesson, record.step);
    }
    if (!periodic) return;
    const int64_t step = control_.global_step.load();
    for (size_t i = 0; i < params.size(); ++i) {
      WriteLesson(params[i], block.lesson[i].load(), step);
    }
  }

  // selfplay/elo, /snapshots (in the pool), /rated_games.
  void ReportSelfPlay() {
    const SelfPlayBlock& block = control_.self_play;
    if (block.enabled.load() == 0) return;
    const int64_t step = control_.global_step.load();
    const double wall = WallTime();
    events_.WriteScalar("selfplay/elo", step, block.elo.load(), wall);
    events_.WriteScalar("selfplay/snapshots", step,
                        static_cast<double>(std::min<int64_t>(
                            block.taken.load(), block.window)),
                        wall);
    events_.WriteScalar("selfplay/rated_games", step,
                        static_cast<double>(block.rated_games.load()), wall);
  }

  void WriteLesson(const ParameterSchedule& p, int32_t lesson, int64_t step) {
    const double wall = WallTime();
    const std::string tag = "curriculum/" + p.parameter;
    events_.WriteScalar(tag + "/lesson", step, lesson, wall);
    events_.WriteScalar(tag + "/value", step,
                        p.lessons[static_cast<size_t>(lesson)].value.Mean(),
                        wall);
  }

  const TrainOptions& options_;
  ControlBlock& control_;
  MetricsChannel& metrics_;
  EventWriter& events_;
  Progress& progress_;
  int64_t reported_ = 0;  // Curriculum advances already reported.
  Clock::time_point last_rate_time_;
  int64_t last_rate_step_;
  uintmax_t scores_size_ = 0;
};

}  // namespace

TrainResult TrainAgentAsync(const TrainOptions& given,
                            const MakeEnvFn& make_env,
                            const MakeAgentFn& make_agent,
                            const std::vector<StepHook>& hooks,
                            std::ostream* log) {
  given.Validate();
  const TrainOptions options = given.ForThisHost();
  const bool hosts = options.dist.Enabled();
  if (hosts && !options.dist.Loopback()) {
    Log(LogLevel::kWarning,
        "dist: --master-addr=" + options.dist.master_addr +
            " is not a loopback address: the hosts' traffic (store and "
            "Gloo) is unauthenticated and unencrypted; keep it inside a "
            "trusted network");
  } else if (hosts && options.dist.node_rank == 0) {
    Log(LogLevel::kWarning,
        "dist: rank 0's store listens on port " +
            std::to_string(options.dist.Port()) +
            " of every interface, not only loopback (LibTorch 1.13's "
            "TCPStore cannot bind one address), unauthenticated: keep the "
            "port closed to untrusted networks");
  }
  {
    std::error_code ec;
    fs::create_directories(options.outdir, ec);
    if (ec || !fs::is_directory(options.outdir)) {
      throw std::invalid_argument(
          "outdir=" + options.outdir +
          " is invalid; accepted: a directory that exists or can be created" +
          (ec ? " (" + ec.message() + ")" : std::string()));
    }
  }
  ConfigureTorchForFork();
  if (hosts) {
    // A host that dies leaves sockets whose next write raises SIGPIPE in
    // the others (Gloo and the store do not all write with MSG_NOSIGNAL),
    // which would kill them silently, without <t>_except/: the write fails
    // with EPIPE instead and is reported. The workers inherit it.
    signal(SIGPIPE, SIG_IGN);
  }
  const auto start = Clock::now();
  const fs::path outdir(options.outdir);

  // The parent's agent lays out the shared state and saves _except.
  std::unique_ptr<Agent> parent_agent = make_agent(0);
  if (!parent_agent) throw std::invalid_argument("make_agent(0) returned null");
  if (options.envs_per_process > 1 &&
      dynamic_cast<const BatchAgent*>(parent_agent.get()) == nullptr) {
    throw InvalidOption("envs_per_process",
                        std::to_string(options.envs_per_process),
                        "1 (agent type '" + parent_agent->Type() +
                            "' does not act on batches)");
  }
  const SharedStateSizes sizes = parent_agent->SharedSizes();
  // A two-player game trains by self-play (experiments/self_play.h): a pool
  // of snapshots in the region, opponents per episode, evaluation against
  // fixed opponents.
  std::string game_name;
  std::vector<std::string> game_opponents;
  {
    std::unique_ptr<Env> probe = make_env(0, /*test=*/true);
    if (SelfPlayEnv* game = FindSelfPlayEnv(*probe)) {
      game_name = game->game().Name();
      game_opponents = options.self_play.EvalOpponents(game_name);
      if (options.eval_interval > 0 && options.eval_n_steps > 0) {
        throw InvalidOption("eval_n_steps",
                            std::to_string(options.eval_n_steps),
                            "0 for a two-player game (evaluations play "
                            "eval_n_episodes games per opponent)");
      }
    }
  }
  const bool self_play = !game_name.empty();
  const int64_t pool_floats =
      self_play ? sizes.params * options.self_play.snapshot_window : 0;
  SharedRegion region(sizes.params, sizes.optimizer, pool_floats);
  ControlBlock& control = region.control();
  if (self_play) {
    SelfPlayBlock& block = control.self_play;
    block.pool = region.pool();
    block.params = sizes.params;
    block.window = options.self_play.snapshot_window;
    block.interval = options.self_play.snapshot_interval;
    block.enabled.store(1);
  }
  parent_agent->BindShared({region.params(), region.optimizer_state(),
                            &region.control().agent_counters},
                           /*initialize=*/true);
  if (!options.resume.empty()) {
    LoadSnapshot(options.resume, LoadMode::kResume, *parent_agent, control,
                 options.curriculum.get());
    if (control.global_step.load() >= options.steps) {
      throw std::invalid_argument("resume=" + options.resume + " is at step " +
                                  std::to_string(control.global_step.load()) +
                                  "; accepted: a checkpoint before steps=" +
                                  std::to_string(options.steps));
    }
  } else {
    if (!options.load.empty()) {
      LoadSnapshot(options.load, LoadMode::kAgentOnly, *parent_agent, control);
    }
    // The evaluation schedule counts from the offset, as the reference's
    // evaluator does with step_offset.
    control.global_step.store(options.step_offset);
    control.prev_eval_t.store(options.step_offset -
                              options.step_offset %
                                  std::max<int64_t>(options.eval_interval, 1));
  }
  control.start_step = control.global_step.load();
  control.MarkStart();
  if (self_play && control.self_play.taken.load() == 0) {
    // The pool starts with the initial (or loaded) parameters; the next
    // snapshot is due at the next multiple of the interval.
    SelfPlayBlock& block = control.self_play;
    SnapshotPool(block).Take(region.params(), control.start_step.load(),
                             block.elo.load());
    block.next_step.store((control.start_step.load() / block.interval + 1) *
                          block.interval);
  }
  // Several hosts: formed, checked and synced by this thread, started once
  // the workers are forked.
  std::unique_ptr<HostCoordinator> coordinator;
  if (hosts) {
    coordinator = std::make_unique<HostCoordinator>(
        options.dist, control, region.params(), sizes.params,
        region.optimizer_state(), sizes.optimizer, options.config);
    if (options.dist.node_rank == 0 && options.checkpoint_interval > 0) {
      // Rank 0's periodic checkpoints: at the first average after each
      // multiple of the interval, named by the global step then (its
      // workers see only some step numbers; the hosts' steps are counted
      // at the averages).
      const int64_t interval = options.checkpoint_interval;
      auto last =
          std::make_shared<int64_t>(control.start_step.load() / interval);
      coordinator->OnAveraged([&, interval, last](int64_t total) {
        if (total / interval <= *last) return;
        *last = total / interval;
        SaveSnapshot(
            *parent_agent, control, options,
            (outdir / (std::to_string(total) + "_checkpoint")).string());
        PruneCheckpoints(options.outdir, options.keep_checkpoints);
      });
    }
  }
  std::vector<std::string> stat_names;
  for (const auto& s : parent_agent->Statistics()) stat_names.push_back(s.name);
  if (options.curriculum && options.curriculum->HasLessons()) {
    stat_names.push_back("lessons");  // AsyncEvaluator::Record.
  }
  if (self_play) {
    for (const std::string& opponent : game_opponents) {
      for (const char* what : {"win_", "draw_", "loss_"}) {
        stat_names.push_back(what + opponent);
      }
    }
    stat_names.push_back("elo");
  }
  if (options.eval_interval > 0) {
    AsyncEvaluator::WriteHeader(options.outdir, stat_names);
  }

  MetricsChannel metrics;
  EventWriter events(options.outdir);
  const bool is_tty = log == &std::cout && isatty(fileno(stdout)) != 0;
  Progress progress(options, control, start, log, is_tty);
  ParentMonitor monitor(options, control, metrics, events, progress);
  std::unique_ptr<ProfileScope> parent_profile;

  ProcessGroupOptions group;
  group.num_workers = options.processes;
  // A late SIGINT/SIGTERM must not kill the parent while it saves
  // <t>_except/: the group leaves them blocked until this returns.
  group.keep_stop_signals_blocked = true;
  sigset_t signal_mask_before;
  pthread_sigmask(SIG_BLOCK, nullptr, &signal_mask_before);
  struct ReleaseOnReturn {
    const sigset_t& before;
    bool armed = false;
    ~ReleaseOnReturn() {
      if (armed) ReleaseStopSignals(before);
    }
  } release{signal_mask_before};
  group.stop_flag = &control.stop;
  group.grace = options.grace;
  // Workers that batch environments finish thousands of short episodes a
  // second (MinAtar early on): drain the metrics pipe often enough that
  // its 16k records never fill.
  group.tick_interval = kTickInterval;
  group.on_started = [&](const std::vector<pid_t>& pids) {
    if (coordinator) coordinator->Start();
    parent_profile =
        std::make_unique<ProfileScope>(options.profile, outdir, "parent");
    if (LogEnabled(LogLevel::kDebug)) {
      std::string list;
      for (pid_t p : pids)
        list += (list.empty() ? "" : " ") + std::to_string(p);
      Log(LogLevel::kDebug, "trainer: " + std::to_string(pids.size()) +
                                " workers started (pids " + list + ")");
    }
  };
  group.on_tick = [&monitor] { monitor.Tick(/*final_tick=*/false); };
  group.on_stop_signal = [](int sig) {
    Log(LogLevel::kWarning, SignalName(sig) +
                                " received: stopping the workers and saving "
                                "a checkpoint (send it again to stop at once)");
  };

  TrainResult result;
  release.armed = true;  // RunProcessGroup leaves them blocked, even on throw.
  result.report = RunProcessGroup(group, [&](int idx) {
    ProfileScope profile(options.profile, outdir, std::to_string(idx));
    TimerFileScope timers(outdir, idx);
    // A resumed run's folder may hold the previous run's file: only this
    // run's end may leave one.
    std::error_code ignored;
    fs::remove(outdir / ("statistics-" + std::to_string(idx) + ".tsv"),
               ignored);
    WorkerContext ctx;
    ctx.process_idx = idx;
    ctx.options = &options;
    ctx.control = &control;
    ctx.metrics = &metrics;
    std::unique_ptr<Agent> agent = make_agent(idx);
    if (!agent) {
      throw std::invalid_argument("make_agent(" + std::to_string(idx) +
                                  ") returned null");
    }
    agent->BindShared({region.params(), region.optimizer_state(),
                       &region.control().agent_counters},
                      /*initialize=*/false);
    ctx.agent = agent.get();
    for (int j = 0; j < options.envs_per_process; ++j) {
      ctx.envs.push_back(make_env(idx, /*test=*/false));
    }
    std::unique_ptr<AsyncEvaluator> evaluator;
    if (options.eval_interval > 0) {
      ctx.eval_env = make_env(idx, /*test=*/true);
      evaluator = std::make_unique<AsyncEvaluator>(options, control, &metrics);
      ctx.evaluator = evaluator.get();
    }
    ctx.hooks = &hooks;
    std::unique_ptr<CurriculumRunner> curriculum;
    if (options.curriculum && !options.curriculum->empty()) {
      // Each worker its own stream of draws, fixed by --seed.
      std::seed_seq seq{static_cast<uint64_t>(options.seed),
                        static_cast<uint64_t>(idx), uint64_t{0xC0441C}};
      std::array<uint64_t, 1> seed{};
      seq.generate(seed.begin(), seed.end());
      curriculum = std::make_unique<CurriculumRunner>(
          *options.curriculum, control.curriculum, options.steps,
          options.reward_scale, seed[0]);
      ctx.curriculum = curriculum.get();
    }
    // Self-play: each training game's opponent, per environment.
    std::vector<std::unique_ptr<SelfPlayProvider>> providers;
    if (self_play) {
      const LearnerSide side = ParseLearnerSide(options.self_play.learner_side);
      for (size_t j = 0; j < ctx.envs.size(); ++j) {
        SelfPlayEnv* game = FindSelfPlayEnv(*ctx.envs[j]);
        if (game == nullptr) continue;
        std::seed_seq seq{static_cast<uint64_t>(options.seed),
                          static_cast<uint64_t>(idx), static_cast<uint64_t>(j),
                          uint64_t{0x5E1F}};
        std::array<uint64_t, 1> seed{};
        seq.generate(seed.begin(), seed.end());
        providers.push_back(std::make_unique<SelfPlayProvider>(
            options.self_play, control.self_play,
            [&make_agent, idx] { return make_agent(idx); }, region.params(),
            control.global_step, seed[0]));
        game->SetLearnerSide(side);
        game->SetOpponentProvider(providers.back().get());
      }
    }
    std::unique_ptr<StepLeases> leases;
    if (hosts) {
      if (!WaitForHosts(control)) return;
      leases = std::make_unique<StepLeases>(options.dist, options.steps);
      ctx.leases = leases.get();
    }
    TrainLoop(ctx);
    WriteStatistics(outdir, idx, *agent);
  });
  if (coordinator) {
    // Every host finishes together: the last average waits for the others.
    const GroupReport& r = result.report;
    std::string why;
    if (r.first_failure >= 0) {
      why = r.workers[r.first_failure].Describe();
    } else if (r.stop_signal != 0) {
      why = "stopped by " + SignalName(r.stop_signal);
    }
    coordinator->LocalEnded(
        r.Ok() ? HostCoordinator::LocalEnd::kDone
               : HostCoordinator::LocalEnd::kFailed,
        "rank " + std::to_string(options.dist.node_rank) + ": " + why);
    coordinator->Join();
    result.parameter_digest = coordinator->ParameterDigest();
    result.host_rounds = coordinator->Rounds();
  }
  parent_profile.reset();
  monitor.Tick(/*final_tick=*/true);
  if (log != nullptr && options.progress_interval.count() > 0) {
    *log << TimerSummary(outdir, options.processes)
         << StatisticsSummary(outdir, options.processes) << std::flush;
  }

  result.global_step = control.global_step.load();
  result.episodes = control.episodes.load();
  result.metrics_dropped = metrics.dropped();
  if (result.metrics_dropped > 0) {
    Log(LogLevel::kWarning,
        "metrics: " + std::to_string(result.metrics_dropped) +
            " TensorBoard records were dropped (the metrics pipe was full; "
            "the parent drains it every " +
            std::to_string(kTickInterval.count()) + " ms)");
  }
  const GroupReport& report = result.report;
  const std::string rank =
      hosts ? "rank " + std::to_string(options.dist.node_rank) + ": " : "";
  if (coordinator && coordinator->LostHost()) {
    result.exit_code = 1;
    result.message = coordinator->Message();
  } else if (coordinator && report.Ok()) {
    if (coordinator->ExitCode() == 0) {
      // Rank 0 saves what the hosts' last average is.
      if (options.dist.node_rank == 0 &&
          coordinator->TotalSteps() == options.steps) {
        SaveSnapshot(
            *parent_agent, control, options,
            (outdir / (std::to_string(options.steps) + "_finish")).string());
      }
      return result;
    }
    result.exit_code = coordinator->ExitCode();
    result.message = coordinator->Message();
    // Refused, or the hosts never met: nothing was trained.
    if (!coordinator->Formed() || result.exit_code == 2) return result;
  } else if (report.Ok()) {
    return result;
  } else if (report.first_failure >= 0) {
    result.exit_code = 1;
    result.message = rank + report.workers[report.first_failure].Describe();
  } else {
    result.exit_code = 128 + report.stop_signal;
    result.message = rank + "stopped by " + SignalName(report.stop_signal);
  }
  if (coordinator && coordinator->Formed()) {
    // The hosts' steps at the last average plus this host's since.
    control.global_step.store(coordinator->StepsNow());
    result.global_step = control.global_step.load();
  }
  result.except_dir =
      (outdir / (std::to_string(result.global_step) + "_except")).string();
  try {
    SaveSnapshot(*parent_agent, control, options, result.except_dir);
  } catch (const std::exception& e) {
    result.message += "; saving " + result.except_dir + " failed: " + e.what();
    result.except_dir.clear();
  }
  return result;
}

}  // namespace asyncrl
