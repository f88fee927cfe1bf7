#include "asyncrl/experiments/policy_collapse.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "asyncrl/experiments/learning_curve.h"
#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/misc/logging.h"

namespace asyncrl {
namespace {

// "%.3g", for the message.
std::string Short(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

}  // namespace

CollapseDetector::CollapseDetector(double max_entropy, double fraction)
    : max_entropy_(max_entropy), fraction_(fraction) {}

bool CollapseDetector::Observe(const CollapseRow& row, bool judge) {
  if (found_ || !std::isfinite(row.mean) || !std::isfinite(row.entropy)) {
    return false;
  }
  if (!judge && rows_ >= kBaselineRows) return false;
  ++rows_;
  if (rows_ <= kBaselineRows) {
    low_ = rows_ == 1 ? row.mean : std::min(low_, row.mean);
    high_ = rows_ == 1 ? row.mean : std::max(high_, row.mean);
    ceiling_ = high_ + std::max(high_ - low_, 0.1 * std::abs(high_));
    return false;
  }
  const bool looks_collapsed =
      row.entropy < threshold() && row.mean <= ceiling_;
  low_rows_ = looks_collapsed ? low_rows_ + 1 : 0;
  if (low_rows_ < kConsecutive) return false;
  found_ = row;
  return true;
}

void PolicyCollapseExtension::Configure(const TrainOptions& options,
                                        Env& probe) {
  detector_.reset();
  stop_ = options.stop_on_collapse;
  steps_ = options.steps;
  const auto value = [&](const std::string& key) {
    const auto it = options.config.find(key);
    return it == options.config.end() ? std::string() : it->second;
  };
  const Space& actions = probe.ActionSpace();
  const bool masked = probe.ObservationSpace().action_mask > 0;
  const bool curriculum = !value("curriculum").empty();
  if (options.collapse_entropy > 0 && options.eval_interval > 0 &&
      actions.IsDiscrete() && actions.n >= 2 && !masked && !curriculum) {
    const double ln_n = std::log(static_cast<double>(actions.n));
    detector_.emplace(ln_n, options.collapse_entropy);
    threshold_ = Short(options.collapse_entropy) + " x ln " +
                 std::to_string(actions.n) + " = " +
                 Short(options.collapse_entropy * ln_n);
  }
  scores_ = ScoresPath(options.outdir);
  // What the message suggests, with this run's own values where it has
  // them (a library caller's options may not record them).
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string lr = value("lr");
  const std::string beta = value("beta");
  const std::string optimizer = value("optimizer");
  const std::string eps = value("rmsprop-epsilon");
  std::string causes = "a learning rate too large for this many workers (" +
                       std::to_string(options.processes) + " processes x " +
                       std::to_string(options.envs_per_process) +
                       " environments on " + std::to_string(cores) + " cores" +
                       (lr.empty() ? "" : ", --lr " + lr) + ")";
  if (static_cast<unsigned>(options.processes) > cores) {
    causes += ", stale gradients from more processes than cores";
  }
  causes += ", too small an entropy weight" +
            (beta.empty() ? std::string() : " (--beta " + beta + ")");
  std::string tries = "a smaller --lr";
  if (optimizer != "adam" && eps != "0.1") {
    tries += ", --rmsprop-epsilon 0.1";
  }
  if (static_cast<unsigned>(options.processes) > cores) {
    tries += ", fewer --processes";
  }
  // The remedies against many workers' large and stale steps, where a run
  // turned them off (docs/results/2026-12-06-many-workers.md).
  if (value("lr-warmup-updates") == "0") tries += ", --lr-warmup-updates 500";
  if (value("lag-tolerance") == "0") tries += ", --lag-tolerance 8";
  tries += " or a larger --beta";
  advice_ = "Likely causes: " + causes + "; try " + tries;
}

void PolicyCollapseExtension::Place(void*, const RunInfo& run) {
  control_ = run.control;
  started_rows_ = -1;
  seen_ = 0;
  message_.clear();
  stopped_ = false;
}

void PolicyCollapseExtension::Start(const RunInfo& run) {
  // After the checkpoint is loaded: a resumed run's first step.
  start_step_ = run.control != nullptr ? run.control->global_step.load() : 0;
}

void PolicyCollapseExtension::WorkersStarted() {
  // scores.txt has its header (and a resumed run's rows) by now.
  if (detector_) {
    started_rows_ = static_cast<int64_t>(ReadScores(scores_).size());
  }
}

void PolicyCollapseExtension::ScoresRead(const std::vector<ScoreRow>& rows) {
  if (!detector_ || started_rows_ < 0) return;
  for (; seen_ < static_cast<int64_t>(rows.size()) && !collapsed(); ++seen_) {
    const ScoreRow& r = rows[static_cast<size_t>(seen_)];
    const CollapseRow row{r.steps, r.mean, r.average_entropy};
    if (seen_ < started_rows_) {
      // An earlier run's: up to the step this one resumed from it sets the
      // baseline; past it (a resume from an earlier checkpoint) it is not
      // this run's history.
      if (row.steps <= start_step_) detector_->Observe(row, /*judge=*/false);
    } else if (detector_->Observe(row)) {
      Found();
    }
  }
}

void PolicyCollapseExtension::Found() {
  const CollapseDetector& d = *detector_;
  const CollapseRow& row = d.found();
  message_ = "the policy collapsed at step " + std::to_string(row.steps) +
             ": its entropy is " + Short(row.entropy) +
             " in two evaluations"
             " in a row, below " +
             threshold_ +
             " (--collapse-entropy x the largest), while their mean stays at " +
             Short(row.mean) +
             " (the first three evaluations': " + Short(d.baseline_low()) +
             " to " + Short(d.baseline_high()) +
             "); such a policy rarely learns again. " + advice_;
  // Stopping: only a run still training (not one whose budget is spent or
  // whose evaluation already succeeded, which keep their ending).
  if (stop_ && control_ != nullptr && control_->global_step.load() < steps_) {
    int32_t expected = 0;
    stopped_ = control_->training_done.compare_exchange_strong(expected, 1);
  }
  message_ += stopped_ ? "; --stop-on-collapse ends the run here"
                       : (stop_ ? "; the run had already ended"
                                : "; --stop-on-collapse would end such a run "
                                  "here");
  Log(LogLevel::kWarning, message_);
}

std::string PolicyCollapseExtension::Status() const {
  if (!collapsed()) return "";
  return "COLLAPSED (entropy " + Short(detector_->found().entropy) + ")";
}

void PolicyCollapseExtension::Conclude(const GroupReport&, RunEnd* end) {
  if (!collapsed()) return;
  const CollapseRow& row = detector_->found();
  if (stopped_ && end->exit_code == 0) {
    end->exit_code = 3;
    end->message = "stopped at step " + std::to_string(end->step) +
                   " (--stop-on-collapse): the policy collapsed at step " +
                   std::to_string(row.steps) + " (entropy " +
                   Short(row.entropy) + ", evaluation mean " + Short(row.mean) +
                   ")";
    end->save_except = true;
    return;
  }
  if (!stopped_) {
    end->notes.push_back("the policy collapsed at step " +
                         std::to_string(row.steps) + " (entropy " +
                         Short(row.entropy) + ", evaluation mean " +
                         Short(row.mean) + "); see the warning above");
  }
}

void PolicyCollapseExtension::Release() { control_ = nullptr; }

}  // namespace asyncrl
