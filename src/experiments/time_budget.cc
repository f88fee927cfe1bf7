#include "asyncrl/experiments/time_budget.h"

#include <cstdio>
#include <stdexcept>

#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/misc/logging.h"

namespace asyncrl {
namespace {

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", s);
  return buf;
}

}  // namespace

void TimeBudgetExtension::Configure(const TrainOptions& options, Env&) {
  seconds_ = options.train_seconds;
  steps_ = options.steps;
  outdir_ = options.outdir;
}

void TimeBudgetExtension::Place(void*, const RunInfo& run) {
  control_ = run.control;
  started_ = false;
  stopped_ = false;
  stopped_at_ = 0;
}

void TimeBudgetExtension::Start(const RunInfo& run) { save_ = run.save; }

void TimeBudgetExtension::WorkersStarted() {
  start_ = now_();
  started_ = seconds_ > 0;
}

double TimeBudgetExtension::Elapsed() const {
  if (!started_) return 0;
  return std::chrono::duration<double>(now_() - start_).count();
}

// Every tick: the clock is read about ten times a second, so the run ends
// within a tick of its budget (plus the workers' last rollouts).
void TimeBudgetExtension::Report(EventWriter&, bool) {
  if (!started_ || stopped_ || control_ == nullptr) return;
  if (Elapsed() < seconds_) return;
  const int64_t t = control_->global_step.load();
  // A run whose steps are spent, or whose evaluation succeeded, keeps its
  // own ending.
  if (t >= steps_) return;
  int32_t expected = 0;
  if (!control_->training_done.compare_exchange_strong(expected, 1)) return;
  stopped_ = true;
  stopped_at_ = t;
  Log(LogLevel::kInfo, "--train-seconds: " + Seconds(seconds_) +
                           " s of training spent at step " + std::to_string(t) +
                           "; the workers end their episodes");
}

std::string TimeBudgetExtension::Status() const {
  if (!started_ || stopped_) return "";
  const double left = seconds_ - Elapsed();
  return left > 0 ? Seconds(left) + " s left" : "";
}

void TimeBudgetExtension::Conclude(const GroupReport&, RunEnd* end) {
  if (!stopped_ || end->exit_code != 0) return;
  std::string finish = FinishDir(outdir_, steps_);  // The workers saved it.
  if (end->step < steps_) {
    // The workers save <steps>_finish/ only at the budget's last step.
    finish = FinishDir(outdir_, end->step);
    try {
      save_(finish);
    } catch (const std::exception& e) {
      end->exit_code = 1;
      end->message = "--train-seconds: saving the final agent failed: " +
                     std::string(e.what());
      end->save_except = true;
      return;
    }
  }
  end->notes.push_back("stopped by --train-seconds " + Seconds(seconds_) +
                       " at step " + std::to_string(stopped_at_) + " of " +
                       std::to_string(steps_) + "; final agent: " + finish);
}

void TimeBudgetExtension::Release() {
  control_ = nullptr;
  save_ = nullptr;
}

}  // namespace asyncrl
