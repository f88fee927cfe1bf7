// The parent's status line: global steps and percent of the budget, steps
// per second (overall and per worker), episodes, the mean policy lag of the
// updates since the last line (agents/agent.h's SharedCounters), last and
// best evaluation mean, elapsed time and estimated time left. On a terminal it
// redraws one line with a progress bar; otherwise it prints plain lines.
#ifndef ASYNCRL_EXPERIMENTS_PROGRESS_H_
#define ASYNCRL_EXPERIMENTS_PROGRESS_H_

#include <chrono>
#include <functional>
#include <ostream>
#include <string>

#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/experiments/train_options.h"

namespace asyncrl {

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  // `out` may be null (silent). `is_tty`: `out` is a terminal; redraw in place
  // with a bar.
  // `status` (may be empty) adds the run's extensions' words after the
  // policy lag (the extensions' Status(); "" for nothing).
  Progress(const TrainOptions& options, const ControlBlock& control,
           Clock::time_point start, std::ostream* out, bool is_tty,
           std::function<std::string()> status = {});

  // Prints a status line if options.progress_interval has passed since the
  // last one (or `force`).
  void Update(bool force = false);
  // Ends the line on a terminal.
  void Finish();

  // The status line itself, for the given moment (no bar).
  std::string Line(Clock::time_point now) const;

 private:
  const TrainOptions& options_;
  const ControlBlock& control_;
  Clock::time_point start_;
  Clock::time_point last_print_;
  std::ostream* out_;
  bool is_tty_;
  std::function<std::string()> status_;
  bool printed_ = false;
  struct Counters {
    int64_t updates = 0;
    int64_t lag_sum = 0;
  };
  Counters ReadCounters() const;
  std::string Line(Clock::time_point now, const Counters& counters) const;
  Counters last_;  // The agent counters at the last line printed.
};

// "1h02m", "3m05s", "42s".
std::string FormatDuration(double seconds);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_PROGRESS_H_
