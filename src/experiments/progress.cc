#include "asyncrl/experiments/progress.h"

#include <cmath>
#include <cstdio>
#include <utility>

namespace asyncrl {

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm",
                  static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds",
                  static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(s));
  }
  return buf;
}

Progress::Progress(const TrainOptions& options, const ControlBlock& control,
                   Clock::time_point start, std::ostream* out, bool is_tty,
                   std::function<std::string()> status)
    : options_(options),
      control_(control),
      start_(start),
      last_print_(start),
      out_(out),
      is_tty_(is_tty),
      status_(std::move(status)) {
  // A resumed Adam run's update count starts at the checkpoint's.
  last_ = ReadCounters();
}

std::string Progress::Line(Clock::time_point now) const {
  const Counters counters = ReadCounters();
  return Line(now, counters);
}

Progress::Counters Progress::ReadCounters() const {
  // The lag sum is added after the update count (agents/a3c.cc): read it
  // first, so that no lag is counted without its update.
  Counters c;
  c.lag_sum = control_.agent_counters.policy_lag_sum.load();
  c.updates = control_.agent_counters.updates.load();
  return c;
}

std::string Progress::Line(Clock::time_point now,
                           const Counters& counters) const {
  const int64_t step = control_.global_step.load();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate =
      elapsed > 0
          ? static_cast<double>(step - control_.start_step.load()) / elapsed
          : 0.0;
  const double left = rate > 0 ? (options_.steps - step) / rate : NAN;
  char buf[320];
  int n = std::snprintf(
      buf, sizeof(buf),
      "step %lld/%lld (%.1f%%)  %.0f steps/s (%.0f/worker)  episodes %lld",
      static_cast<long long>(step), static_cast<long long>(options_.steps),
      100.0 * static_cast<double>(step) / static_cast<double>(options_.steps),
      rate, rate / options_.processes,
      static_cast<long long>(control_.episodes.load()));
  std::string line(buf, static_cast<size_t>(n));
  const int64_t updates = counters.updates - last_.updates;
  if (updates > 0) {
    const int64_t lag = counters.lag_sum - last_.lag_sum;
    std::snprintf(buf, sizeof(buf), "  lag %.1f",
                  static_cast<double>(lag) / static_cast<double>(updates));
    line += buf;
  }
  if (status_) {
    const std::string words = status_();
    if (!words.empty()) line += "  " + words;
  }
  if (control_.has_last_score.load() != 0) {
    // Lock-free: the parent never takes the workers' mutex.
    std::snprintf(buf, sizeof(buf), "  eval last %.4g best %.4g",
                  control_.last_score.load(), control_.best_score.load());
    line += buf;
  }
  line +=
      "  elapsed " + FormatDuration(elapsed) + "  left " + FormatDuration(left);
  return line;
}

void Progress::Update(bool force) {
  if (out_ == nullptr || options_.progress_interval.count() <= 0) return;
  const auto now = Clock::now();
  if (!force && now - last_print_ < options_.progress_interval) return;
  last_print_ = now;
  printed_ = true;
  // One reading of the counters for this line and the next one's baseline.
  const Counters counters = ReadCounters();
  const std::string line = Line(now, counters);
  last_ = counters;
  if (!is_tty_) {
    *out_ << line << std::endl;
    return;
  }
  constexpr int kBar = 24;
  const double frac = static_cast<double>(control_.global_step.load()) /
                      static_cast<double>(options_.steps);
  const int filled = static_cast<int>(frac * kBar + 0.5);
  std::string bar = "[" + std::string(filled, '#') +
                    std::string(kBar - std::min(filled, kBar), '.') + "] ";
  *out_ << "\r\033[K" << bar << line << std::flush;
}

void Progress::Finish() {
  if (out_ == nullptr || options_.progress_interval.count() <= 0) return;
  Update(/*force=*/true);
  if (is_tty_ && printed_) *out_ << std::endl;
}

}  // namespace asyncrl
