// A run's wall-clock budget (--train-seconds; Sample Factory's
// train_for_seconds): once the workers have trained that many seconds, the
// parent ends the run as if its steps were spent. The workers end their
// episodes and learn from what they collected, exactly as at a successful
// evaluation; the parent then saves <step>_finish/ from the shared state
// (named by the global step the run reached), the final evaluation takes
// it as the final agent, the exit status is 0 and the run's end says that
// the clock stopped it. The clock starts when the workers are forked (the
// checkpoint load and the network's set-up are not counted) and counts
// evaluations. A resumed run has the budget its own command gives. The
// budget is TrainOptions::train_seconds (0: none, and the extension does
// nothing).
#ifndef ASYNCRL_EXPERIMENTS_TIME_BUDGET_H_
#define ASYNCRL_EXPERIMENTS_TIME_BUDGET_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "asyncrl/experiments/extension.h"

namespace asyncrl {

class TimeBudgetExtension : public TrainerExtension {
 public:
  using Clock = std::chrono::steady_clock;

  std::string Name() const override { return "time budget"; }
  void Configure(const TrainOptions& options, Env& probe) override;
  void Place(void* shared, const RunInfo& run) override;
  void Start(const RunInfo& run) override;
  void WorkersStarted() override;
  void Report(EventWriter& events, bool periodic) override;
  std::string Status() const override;
  void Conclude(const GroupReport& report, RunEnd* end) override;
  void Release() override;

  // Whether the clock ended the run (it raised training_done).
  bool stopped() const { return stopped_; }

  // The clock the budget is measured on (tests set their own).
  void SetClock(std::function<Clock::time_point()> now) {
    now_ = std::move(now);
  }

 private:
  double Elapsed() const;

  double seconds_ = 0;  // 0: no budget.
  int64_t steps_ = 0;
  std::string outdir_;
  ControlBlock* control_ = nullptr;
  std::function<void(const std::string&)> save_;
  std::function<Clock::time_point()> now_ = [] { return Clock::now(); };
  bool started_ = false;
  Clock::time_point start_;
  bool stopped_ = false;
  int64_t stopped_at_ = 0;  // The global step when the clock ran out.
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_TIME_BUDGET_H_
