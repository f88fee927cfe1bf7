#include "asyncrl/experiments/train_agent_async.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/experiments/evaluator.h"
#include "asyncrl/experiments/learning_curve.h"
#include "asyncrl/experiments/metrics.h"
#include "asyncrl/experiments/progress.h"
#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/experiments/run_summary.h"
#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/experiments/snapshot.h"
#include "asyncrl/experiments/train_loop.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/platform/heap.h"
#include "asyncrl/misc/tensorboard.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

void RequireCheckpointFits(const SharedStateSizes& sizes,
                           const Extensions& extensions) {
  const uint64_t agent = static_cast<uint64_t>(sizes.params) * sizeof(float);
  const uint64_t optimizer =
      static_cast<uint64_t>(sizes.optimizer) * sizeof(float) +
      static_cast<uint64_t>(sizes.state_bytes);
  uint64_t total = agent + optimizer;
  std::string parts = "parameters " + std::to_string(agent) +
                      ", optimizer and agent state " +
                      std::to_string(optimizer);
  for (const auto& extension : extensions) {
    const uint64_t bytes = extension->SharedBytes(sizes);
    if (bytes == 0) continue;
    total += bytes;
    parts += ", " + extension->Name() + " " + std::to_string(bytes);
  }
  if (total <= kMaxCheckpointBytes) return;
  throw std::invalid_argument(
      "this run's checkpoints would hold " + std::to_string(total) +
      " bytes (" + parts + "), over the " +
      std::to_string(kMaxCheckpointBytes) +
      " one checkpoint can hold (Protobuf's 2 GiB message limit): it could "
      "save no checkpoint at all; a smaller network (--hidden-sizes) or, in "
      "a game, fewer snapshots (--snapshot-window) fits");
}

// An environment for the columns and spaces of the run: the evaluation one,
// or the training one when there is none (workers then evaluate on theirs).
std::unique_ptr<Env> ProbeEnv(const MakeEnvFn& make_env) {
  std::unique_ptr<Env> probe = make_env(0, /*test=*/true);
  return probe ? std::move(probe) : make_env(0, /*test=*/false);
}

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// How often the parent drains the metrics pipe and looks at the workers.
constexpr std::chrono::milliseconds kTickInterval{100};

// The parent's periodic work: metrics to TensorBoard, the extensions'
// reports, the learning curve, the status line.
class ParentMonitor {
 public:
  ParentMonitor(const TrainOptions& options, ControlBlock& control,
                MetricsChannel& metrics, EventWriter& events,
                Progress& progress, const Extensions& extensions)
      : options_(options),
        control_(control),
        metrics_(metrics),
        events_(events),
        progress_(progress),
        extensions_(extensions),
        last_rate_time_(Clock::now()),
        last_rate_step_(control.global_step.load()) {}

  void Tick(bool final_tick) {
    metrics_.Drain([this](const MetricRecord& r) {
      if (EpisodeMeans::Averaged(r.tag)) {
        episode_means_.Add(r);
      } else {
        events_.WriteScalar(r.tag, r.step, r.value, r.wall_time);
      }
    });
    const auto now = Clock::now();
    const double dt =
        std::chrono::duration<double>(now - last_rate_time_).count();
    const bool periodic = dt >= 1.0 || final_tick;
    if (periodic) {
      episode_means_.Flush([this](const std::string& tag, int64_t step,
                                  double mean, double wall_time) {
        events_.WriteScalar(tag, step, mean, wall_time);
      });
      const int64_t step = control_.global_step.load();
      if (dt > 0) {
        events_.WriteScalar("train/steps_per_s", step,
                            (step - last_rate_step_) / dt, WallTimeSeconds());
      }
      last_rate_time_ = now;
      last_rate_step_ = step;
    }
    for (const auto& extension : extensions_) {
      extension->Report(events_, periodic);
    }
    if (!events_.Flush() && !warned_events_) {
      warned_events_ = true;
      Log(LogLevel::kWarning,
          "TensorBoard: cannot write " + events_.path() + " (" +
              events_.first_error() +
              "): its records are dropped until it can take them again; "
              "the file keeps every whole record written before");
    }
    std::error_code ec;
    const auto size = fs::file_size(ScoresPath(options_.outdir), ec);
    if (!ec && size != scores_size_) {
      scores_size_ = size;
      const std::vector<ScoreRow> rows =
          ReadScores(ScoresPath(options_.outdir));
      WriteLearningCurve(options_.outdir, options_.env_name, rows);
      for (const auto& extension : extensions_) extension->ScoresRead(rows);
    }
    if (final_tick) {
      progress_.Finish();
    } else {
      progress_.Update();
    }
  }

 private:
  const TrainOptions& options_;
  ControlBlock& control_;
  MetricsChannel& metrics_;
  EventWriter& events_;
  EpisodeMeans episode_means_;
  bool warned_events_ = false;
  Progress& progress_;
  const Extensions& extensions_;
  Clock::time_point last_rate_time_;
  int64_t last_rate_step_;
  uintmax_t scores_size_ = 0;
};

// The words of every extension's Status(), for the status line.
std::string ExtensionStatus(const Extensions& extensions) {
  std::string words;
  for (const auto& extension : extensions) {
    const std::string w = extension->Status();
    if (!w.empty()) words += (words.empty() ? "" : "  ") + w;
  }
  return words;
}

// Leaves SIGINT/SIGTERM as RunProcessGroup left them (blocked, so that a
// late one cannot kill the parent while it saves <t>_except/) until the
// trainer returns.
struct ReleaseStopSignalsOnReturn {
  sigset_t before;
  bool armed = false;
  ReleaseStopSignalsOnReturn() { pthread_sigmask(SIG_BLOCK, nullptr, &before); }
  ~ReleaseStopSignalsOnReturn() { Now(); }
  void Now() {
    if (armed) ReleaseStopSignals(before);
    armed = false;
  }
};

// One run of the trainer, in the order of its phases: Prepare (folder, the
// parent's agent, the extensions), LayOutSharedState, RestoreState,
// WriteScoresHeader, RunWorkers (each worker: RunWorker), Conclude.
class Trainer {
 public:
  Trainer(const TrainOptions& options, const MakeEnvFn& make_env,
          const MakeAgentFn& make_agent, const std::vector<StepHook>& hooks,
          std::ostream* log, const Extensions& extensions)
      : options_(options),
        make_env_(make_env),
        make_agent_(make_agent),
        hooks_(hooks),
        log_(log),
        extensions_(extensions),
        outdir_(options.outdir) {}
  // An extension's Release may take a while (a coordinator that is
  // unwinding waits for its thread): a stop signal is not left blocked
  // meanwhile.
  ~Trainer() {
    release_.Now();
    for (const auto& extension : extensions_) extension->Release();
  }
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  TrainResult Run() {
    Prepare();
    LayOutSharedState();
    RestoreState();
    WriteScoresHeader();
    RunWorkers();
    return Conclude();
  }

 private:
  // Everything that can refuse the run, before the shared state exists.
  void Prepare() {
    std::error_code ec;
    fs::create_directories(options_.outdir, ec);
    if (ec || !fs::is_directory(options_.outdir)) {
      throw std::invalid_argument(
          "outdir=" + options_.outdir +
          " is invalid; accepted: a directory that exists or can be created" +
          (ec ? " (" + ec.message() + ")" : std::string()));
    }
    ConfigureTorchForFork();
    // A file-size limit (ulimit -f) fails a write with EFBIG, which is
    // reported and cleaned up like a full disk, instead of killing the
    // process that writes (SIGXFSZ) silently. The workers inherit it.
    signal(SIGXFSZ, SIG_IGN);
    // The parent's agent lays out the shared state and saves _except.
    parent_agent_ = make_agent_(0);
    if (!parent_agent_) {
      throw std::invalid_argument("make_agent(0) returned null");
    }
    if (options_.envs_per_process > 1 &&
        dynamic_cast<const BatchAgent*>(parent_agent_.get()) == nullptr) {
      throw InvalidOption("envs_per_process",
                          std::to_string(options_.envs_per_process),
                          "1 (agent type '" + parent_agent_->Type() +
                              "' does not act on batches)");
    }
    sizes_ = parent_agent_->SharedSizes();
    std::unique_ptr<Env> probe = ProbeEnv(make_env_);
    if (!probe) {
      throw std::invalid_argument("make_env(0) returned null");
    }
    columns_ =
        ConfiguredScoreColumns(options_, *probe, *parent_agent_, extensions_);
    RequireCheckpointFits(sizes_, extensions_);
    // A resume whose columns differ from its scores.txt's is refused
    // before anything is written.
    if (options_.eval_interval > 0) {
      AsyncEvaluator::CheckHeader(options_.outdir, columns_);
    }
  }

  void LayOutSharedState() {
    std::vector<size_t> extension_bytes;
    for (const auto& extension : extensions_) {
      extension_bytes.push_back(extension->SharedBytes(sizes_));
    }
    region_ = std::make_unique<SharedRegion>(
        sizes_.params, sizes_.optimizer, extension_bytes,
        static_cast<size_t>(sizes_.state_bytes));
    ControlBlock& control = region_->control();
    const RunInfo run = Info();
    for (size_t i = 0; i < extensions_.size(); ++i) {
      extensions_[i]->Place(region_->extension(i), run);
    }
    parent_agent_->BindShared({region_->params(), region_->optimizer_state(),
                               &control.agent_counters, region_->agent_state()},
                              /*initialize=*/true);
    parent_bound_ = true;
  }

  RunInfo Info() {
    RunInfo run;
    run.options = &options_;
    run.control = &region_->control();
    run.params = region_->params();
    run.optimizer_state = region_->optimizer_state();
    run.sizes = sizes_;
    if (parent_bound_) run.statistics = parent_agent_->SharedStatistics();
    run.save = [this](const std::string& dir) {
      SaveSnapshot(*parent_agent_, region_->control(), options_, extensions_,
                   dir);
    };
    return run;
  }

  // --resume, --load or a fresh start; then the extensions start.
  void RestoreState() {
    ControlBlock& control = region_->control();
    if (!options_.resume.empty()) {
      LoadSnapshot(options_.resume, LoadMode::kResume, *parent_agent_, control,
                   extensions_);
      if (control.global_step.load() >= options_.steps) {
        throw std::invalid_argument("resume=" + options_.resume +
                                    " is at step " +
                                    std::to_string(control.global_step.load()) +
                                    "; accepted: a checkpoint before steps=" +
                                    std::to_string(options_.steps));
      }
    } else {
      if (!options_.load.empty()) {
        LoadSnapshot(options_.load, LoadMode::kAgentOnly, *parent_agent_,
                     control);
      }
      // The evaluation schedule counts from the offset, as the reference's
      // evaluator does with step_offset.
      control.global_step.store(options_.step_offset);
      control.prev_eval_t.store(
          options_.step_offset -
          options_.step_offset % std::max<int64_t>(options_.eval_interval, 1));
    }
    control.start_step = control.global_step.load();
    control.MarkStart();
    const RunInfo run = Info();
    for (const auto& extension : extensions_) extension->Start(run);
  }

  // scores.txt's header: the agent's statistics, then each extension's
  // columns.
  void WriteScoresHeader() const {
    if (options_.eval_interval <= 0) return;
    AsyncEvaluator::WriteHeader(options_.outdir, columns_);
  }

  void RunWorkers() {
    ControlBlock& control = region_->control();
    EventWriter events(options_.outdir);
    const bool is_tty = log_ == &std::cout && isatty(fileno(stdout)) != 0;
    Progress progress(options_, control, start_, log_, is_tty,
                      [this] { return ExtensionStatus(extensions_); });
    ParentMonitor monitor(options_, control, metrics_, events, progress,
                          extensions_);
    std::unique_ptr<ProfileScope> parent_profile;

    ProcessGroupOptions group;
    group.num_workers = options_.processes;
    // A late SIGINT/SIGTERM must not kill the parent while it saves
    // <t>_except/: the group leaves them blocked until this returns.
    group.keep_stop_signals_blocked = true;
    group.stop_flag = &control.stop;
    group.grace = options_.grace;
    // Workers that batch environments finish thousands of short episodes a
    // second (MinAtar early on): drain the metrics pipe often enough that
    // its 16k records never fill.
    group.tick_interval = kTickInterval;
    group.on_started = [&](const std::vector<pid_t>& pids) {
      for (const auto& extension : extensions_) extension->WorkersStarted();
      parent_profile =
          std::make_unique<ProfileScope>(options_.profile, outdir_, "parent");
      if (LogEnabled(LogLevel::kDebug)) {
        std::string list;
        for (pid_t p : pids) {
          list += (list.empty() ? "" : " ") + std::to_string(p);
        }
        Log(LogLevel::kDebug, "trainer: " + std::to_string(pids.size()) +
                                  " workers started (pids " + list + ")");
      }
    };
    group.on_tick = [&monitor] { monitor.Tick(/*final_tick=*/false); };
    // Once the budget is spent (or an evaluation succeeded) every worker
    // ends within a batch, an evaluation or a save, all of which report
    // progress: one that makes none for finish_timeout never will.
    group.work_done = [this, &control] {
      return control.global_step.load() >= options_.steps ||
             control.training_done.load() != 0;
    };
    group.finish_timeout = std::chrono::milliseconds(
        static_cast<int64_t>(options_.finish_timeout * 1000.0));
    group.stall_warning = options_.stall_warning;
    group.on_stall = [](int idx, pid_t pid, std::chrono::milliseconds idle) {
      Log(LogLevel::kWarning,
          "worker " + std::to_string(idx) + " (pid " + std::to_string(pid) +
              ") has made no step for " + std::to_string(idle.count() / 1000) +
              " s (stopped, hung, or in one very long environment step); "
              "the others go on, and once the steps are spent it is "
              "killed if it is still silent");
    };
    group.on_stop_signal = [](int sig) {
      Log(LogLevel::kWarning,
          SignalName(sig) +
              " received: stopping the workers and saving "
              "a checkpoint (send it again to stop at once)");
    };
    release_.armed = true;  // RunProcessGroup leaves them blocked, even on
                            // throw.
    result_.report =
        RunProcessGroup(group, [this](int idx) { RunWorker(idx); });
    for (const auto& extension : extensions_) {
      extension->WorkersEnded(result_.report);
    }
    parent_profile.reset();
    monitor.Tick(/*final_tick=*/true);
    if (events.lost() > 0) {
      Log(LogLevel::kWarning, "TensorBoard: " + std::to_string(events.lost()) +
                                  " records could not be written to " +
                                  events.path() + " (" + events.first_error() +
                                  ")");
    }
    if (log_ != nullptr && options_.progress_interval.count() > 0) {
      *log_ << TimerSummary(outdir_, options_.processes)
            << StatisticsSummary(outdir_, options_.processes) << std::flush;
    }
  }

  // A worker process: its agent, environments, evaluator and extensions'
  // parts, then the training loop.
  // A worker's agent on the run's shared state (its local copy refreshed
  // from it, the policy lag counted from now).
  void BindToRegion(Agent& agent) {
    agent.BindShared(
        {region_->params(), region_->optimizer_state(),
         &region_->control().agent_counters, region_->agent_state()},
        /*initialize=*/false);
  }

  // The extensions' parts of worker `idx` (ctx.agent and ctx.envs made),
  // once all are ready; false when one says the worker must not train.
  bool StartWorkerExtensions(int idx, WorkerContext& ctx) {
    WorkerInfo info;
    info.process_idx = idx;
    info.options = &options_;
    info.control = ctx.control;
    info.params = region_->params();
    info.envs = &ctx.envs;
    info.make_agent = [this, idx] { return make_agent_(idx); };
    info.agent = ctx.agent;
    info.hooks = ctx.hooks;
    for (const auto& extension : extensions_) {
      if (auto part = extension->StartWorker(info)) {
        ctx.worker_extensions.push_back(std::move(part));
      }
    }
    if (ctx.worker_extensions.empty()) return true;
    for (const auto& part : ctx.worker_extensions) {
      if (!part->Ready()) return false;
    }
    // An extension may have replaced the shared state while this worker
    // waited (the hosts: rank 0's parameters, statistics and update count):
    // act with it, and count the policy lag from it.
    BindToRegion(*ctx.agent);
    for (const auto& part : ctx.worker_extensions) {
      if (StepSource* steps = part->Steps()) ctx.steps = steps;
    }
    return true;
  }

  void RunWorker(int idx) {
    if (options_.pin_heap_thresholds) PinHeapThresholds();
    ProfileScope profile(options_.profile, outdir_, std::to_string(idx));
    TimerFileScope timers(outdir_, idx);
    // A resumed run's folder may hold the previous run's file: only this
    // run's end may leave one.
    std::error_code ignored;
    fs::remove(StatisticsPath(options_.outdir, idx), ignored);
    ControlBlock& control = region_->control();
    WorkerContext ctx;
    ctx.process_idx = idx;
    ctx.options = &options_;
    ctx.control = &control;
    ctx.metrics = &metrics_;
    ctx.extensions = extensions_;
    std::unique_ptr<Agent> agent = make_agent_(idx);
    if (!agent) {
      throw std::invalid_argument("make_agent(" + std::to_string(idx) +
                                  ") returned null");
    }
    // Every process's agent lays out the shared state as the parent's did.
    const SharedStateSizes sizes = agent->SharedSizes();
    if (sizes.params != sizes_.params || sizes.optimizer != sizes_.optimizer ||
        sizes.state_bytes != sizes_.state_bytes) {
      throw std::logic_error("make_agent(" + std::to_string(idx) +
                             ") made an agent whose "
                             "shared state (" +
                             std::to_string(sizes.params) + " parameters, " +
                             std::to_string(sizes.optimizer) +
                             " optimizer floats, " +
                             std::to_string(sizes.state_bytes) +
                             " state bytes) differs from "
                             "the parent's (" +
                             std::to_string(sizes_.params) + ", " +
                             std::to_string(sizes_.optimizer) + ", " +
                             std::to_string(sizes_.state_bytes) + ")");
    }
    BindToRegion(*agent);
    ctx.agent = agent.get();
    ReportWorkerProgress();  // Started: watched from now on.
    for (int j = 0; j < options_.envs_per_process; ++j) {
      ctx.envs.push_back(make_env_(idx, /*test=*/false));
    }
    std::unique_ptr<AsyncEvaluator> evaluator;
    if (options_.eval_interval > 0) {
      ctx.eval_env = make_env_(idx, /*test=*/true);
      evaluator = std::make_unique<AsyncEvaluator>(options_, control, &metrics_,
                                                   extensions_);
      ctx.evaluator = evaluator.get();
    }
    ctx.hooks = &hooks_;
    if (!StartWorkerExtensions(idx, ctx)) return;
    WorkerExtension* takes_over = nullptr;
    for (const auto& part : ctx.worker_extensions) {
      if (part->TakesOver()) takes_over = part.get();
    }
    if (takes_over != nullptr) {
      // Its agent acted nothing: the statistics at the end are the
      // workers' (an extension that takes a worker over gives them what
      // they report).
      takes_over->Run();
      ReportWorkerProgress();
      return;
    }
    TrainLoop(ctx);
    ReportWorkerProgress();
    WriteStatistics(outdir_, idx, *agent);
  }

  // The result, and <t>_except/ when the run did not end well.
  TrainResult Conclude() {
    ControlBlock& control = region_->control();
    result_.global_step = control.global_step.load();
    result_.episodes = control.episodes.load();
    result_.metrics_dropped = metrics_.dropped();
    if (result_.metrics_dropped > 0) {
      Log(LogLevel::kWarning,
          "metrics: " + std::to_string(result_.metrics_dropped) +
              " TensorBoard records were dropped (the metrics pipe was full; "
              "the parent drains it every " +
              std::to_string(kTickInterval.count()) + " ms)");
    }
    const GroupReport& report = result_.report;
    RunEnd end;
    end.step = result_.global_step;
    if (report.first_failure >= 0) {
      end.exit_code = 1;
      end.message = report.workers[report.first_failure].Describe();
    } else if (!report.Ok()) {
      end.exit_code = 128 + report.stop_signal;
      end.message = "stopped by " + SignalName(report.stop_signal);
    }
    end.save_except = !report.Ok();
    for (const auto& extension : extensions_) {
      extension->Conclude(report, &end);
    }
    result_.exit_code = end.exit_code;
    result_.message = end.message;
    result_.notes = end.notes;
    result_.refused = end.refused;
    if (!end.save_except) return result_;
    control.global_step.store(end.step);
    result_.global_step = end.step;
    result_.except_dir = ExceptDir(options_.outdir, result_.global_step);
    try {
      SaveSnapshot(*parent_agent_, control, options_, extensions_,
                   result_.except_dir);
    } catch (const std::exception& e) {
      result_.message +=
          "; saving " + result_.except_dir + " failed: " + e.what();
      result_.except_dir.clear();
    }
    return result_;
  }

  const TrainOptions& options_;
  const MakeEnvFn& make_env_;
  const MakeAgentFn& make_agent_;
  const std::vector<StepHook>& hooks_;
  std::ostream* log_;
  const Extensions& extensions_;
  const fs::path outdir_;
  const Clock::time_point start_ = Clock::now();
  std::unique_ptr<Agent> parent_agent_;
  bool parent_bound_ = false;  // BindShared done: SharedStatistics usable.
  SharedStateSizes sizes_;
  std::vector<std::string> columns_;  // scores.txt's, after `min`.
  std::unique_ptr<SharedRegion> region_;
  MetricsChannel metrics_;
  ReleaseStopSignalsOnReturn release_;
  TrainResult result_;
};

}  // namespace

std::vector<std::string> ConfiguredScoreColumns(const TrainOptions& options,
                                                Env& probe, Agent& agent,
                                                const Extensions& extensions) {
  for (const auto& extension : extensions) {
    extension->Configure(options, probe);
  }
  for (const auto& extension : extensions) extension->CheckAgent(agent);
  std::vector<std::string> columns;
  for (const auto& s : agent.Statistics()) columns.push_back(s.name);
  for (const auto& extension : extensions) {
    for (std::string& c : extension->ScoreColumns()) {
      columns.push_back(std::move(c));
    }
  }
  return columns;
}

void CheckCheckpointSize(const TrainOptions& options, const MakeEnvFn& make_env,
                         const MakeAgentFn& make_agent,
                         const Extensions& extensions) {
  std::unique_ptr<Agent> agent = make_agent(0);
  std::unique_ptr<Env> probe = ProbeEnv(make_env);
  if (!agent || !probe) return;  // TrainAgentAsync says what is wrong.
  ConfiguredScoreColumns(options, *probe, *agent, extensions);
  RequireCheckpointFits(agent->SharedSizes(), extensions);
}

void CheckScoresTable(const TrainOptions& options, const MakeEnvFn& make_env,
                      const MakeAgentFn& make_agent,
                      const Extensions& extensions) {
  if (options.eval_interval <= 0) return;
  std::unique_ptr<Agent> agent = make_agent(0);
  std::unique_ptr<Env> probe = ProbeEnv(make_env);
  if (!agent || !probe) return;  // TrainAgentAsync says what is wrong.
  AsyncEvaluator::CheckHeader(
      options.outdir,
      ConfiguredScoreColumns(options, *probe, *agent, extensions));
}

TrainResult TrainAgentAsync(const TrainOptions& given,
                            const MakeEnvFn& make_env,
                            const MakeAgentFn& make_agent,
                            const std::vector<StepHook>& hooks,
                            std::ostream* log, const Extensions& extensions) {
  given.Validate();
  TrainOptions options = given;
  for (const auto& extension : extensions) extension->AdjustOptions(&options);
  return Trainer(options, make_env, make_agent, hooks, log, extensions).Run();
}

}  // namespace asyncrl
