#include "experiments/train_agent_async.h"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "experiments/evaluator.h"
#include "experiments/snapshot.h"
#include "experiments/train_loop.h"
#include "misc/shared_region.h"
#include "misc/torch_setup.h"

namespace asyncrl {
namespace {

using Clock = std::chrono::steady_clock;

std::string FormatRate(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

class Progress {
 public:
  Progress(const TrainOptions& options, ControlBlock& control,
           Clock::time_point start, std::ostream* log)
      : options_(options),
        control_(control),
        start_(start),
        last_time_(start),
        last_step_(control.global_step.load()),
        log_(log) {}

  void Print() {
    if (log_ == nullptr) return;
    const auto now = Clock::now();
    const int64_t step = control_.global_step.load();
    const double dt = std::chrono::duration<double>(now - last_time_).count();
    const double rate = dt > 0 ? (step - last_step_) / dt : 0.0;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    char pct[16];
    std::snprintf(pct, sizeof(pct), "%.1f",
                  100.0 * static_cast<double>(step) / options_.steps);
    *log_ << "step " << step << "/" << options_.steps << " (" << pct << "%)  "
          << FormatRate(rate) << " steps/s  episodes "
          << control_.episodes.load() << "  elapsed " << FormatRate(elapsed)
          << "s";
    if (control_.has_best_score) *log_ << "  best eval " << control_.best_score;
    *log_ << std::endl;
    last_time_ = now;
    last_step_ = step;
  }

 private:
  const TrainOptions& options_;
  ControlBlock& control_;
  Clock::time_point start_;
  Clock::time_point last_time_;
  int64_t last_step_;
  std::ostream* log_;
};

}  // namespace

TrainResult TrainAgentAsync(const TrainOptions& options,
                            const MakeEnvFn& make_env,
                            const MakeAgentFn& make_agent,
                            const std::vector<StepHook>& hooks,
                            std::ostream* log) {
  options.Validate();
  if (!std::filesystem::is_directory(options.outdir)) {
    throw std::invalid_argument("outdir=" + options.outdir +
                                " is invalid; accepted: an existing directory");
  }
  ConfigureTorchForFork();
  const auto start = Clock::now();

  // The parent's agent lays out the shared state and saves _except.
  std::unique_ptr<Agent> parent_agent = make_agent(0);
  if (!parent_agent) throw std::invalid_argument("make_agent(0) returned null");
  const SharedStateSizes sizes = parent_agent->SharedSizes();
  SharedRegion region(sizes.params, sizes.optimizer);
  ControlBlock& control = region.control();
  parent_agent->BindShared({region.params(), region.optimizer_state()},
                           /*initialize=*/true);
  if (!options.load.empty()) {
    LoadSnapshot(options.load, *parent_agent, control);
    if (control.global_step.load() >= options.steps) {
      throw std::invalid_argument("load=" + options.load + " is at step " +
                                  std::to_string(control.global_step.load()) +
                                  "; accepted: a checkpoint before steps=" +
                                  std::to_string(options.steps));
    }
  }
  std::vector<std::string> stat_names;
  for (const auto& s : parent_agent->Statistics()) stat_names.push_back(s.name);
  if (options.eval_interval > 0) {
    AsyncEvaluator::WriteHeader(options.outdir, stat_names);
  }

  ProcessGroupOptions group;
  group.num_workers = options.processes;
  group.stop_flag = &control.stop;
  group.grace = options.grace;
  Progress progress(options, control, start, log);
  if (options.progress_interval.count() > 0) {
    group.tick_interval = options.progress_interval;
    group.on_tick = [&progress] { progress.Print(); };
  } else {
    group.tick_interval = std::chrono::hours(24);
  }

  TrainResult result;
  result.report = RunProcessGroup(group, [&](int idx) {
    WorkerContext ctx;
    ctx.process_idx = idx;
    ctx.options = &options;
    ctx.control = &control;
    std::unique_ptr<Agent> agent = make_agent(idx);
    if (!agent) {
      throw std::invalid_argument("make_agent(" + std::to_string(idx) +
                                  ") returned null");
    }
    agent->BindShared({region.params(), region.optimizer_state()},
                      /*initialize=*/false);
    ctx.agent = agent.get();
    for (int j = 0; j < options.envs_per_process; ++j) {
      ctx.envs.push_back(make_env(idx, /*test=*/false));
    }
    std::unique_ptr<AsyncEvaluator> evaluator;
    if (options.eval_interval > 0) {
      ctx.eval_env = make_env(idx, /*test=*/true);
      evaluator = std::make_unique<AsyncEvaluator>(options, control, start);
      ctx.evaluator = evaluator.get();
    }
    ctx.hooks = &hooks;
    TrainLoop(ctx);
  });
  if (options.progress_interval.count() > 0) progress.Print();

  result.global_step = control.global_step.load();
  result.episodes = control.episodes.load();
  const GroupReport& report = result.report;
  if (report.Ok()) return result;

  if (report.first_failure >= 0) {
    result.exit_code = 1;
    result.message = report.workers[report.first_failure].Describe();
  } else {
    result.exit_code = 128 + report.stop_signal;
    result.message = "stopped by " + SignalName(report.stop_signal);
  }
  result.except_dir = (std::filesystem::path(options.outdir) /
                       (std::to_string(result.global_step) + "_except"))
                          .string();
  try {
    SaveSnapshot(*parent_agent, control, options, result.except_dir);
  } catch (const std::exception& e) {
    result.message += "; saving " + result.except_dir + " failed: " + e.what();
    result.except_dir.clear();
  }
  return result;
}

}  // namespace asyncrl
