#include "asyncrl/experiments/policy_collapse.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "asyncrl/experiments/evaluator.h"
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

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, '\t')) cells.push_back(cell);
  return cells;
}

double Cell(const std::vector<std::string>& cells, int i) {
  if (i < 0 || i >= static_cast<int>(cells.size())) return std::nan("");
  try {
    return std::stod(cells[i]);
  } catch (const std::exception&) {
    return std::nan("");
  }
}

}  // namespace

CollapseDetector::CollapseDetector(double max_entropy, double fraction)
    : max_entropy_(max_entropy), fraction_(fraction) {}

bool CollapseDetector::Observe(const CollapseRow& row) {
  if (found_ || std::isnan(row.mean) || std::isnan(row.entropy)) return false;
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
  const Space& actions = probe.ActionSpace();
  if (options.collapse_entropy > 0 && actions.IsDiscrete() && actions.n >= 2) {
    detector_.emplace(std::log(static_cast<double>(actions.n)),
                      options.collapse_entropy);
  }
  scores_ = ScoresPath(options.outdir);
  // What the message suggests, with this run's own values where it has
  // them (a library caller's options may not record them).
  const auto value = [&](const std::string& key) {
    const auto it = options.config.find(key);
    return it == options.config.end() ? std::string() : it->second;
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string lr = value("lr");
  const std::string beta = value("beta");
  advice_ = "Likely causes: a learning rate too large for this many workers"
            " (" + std::to_string(options.processes) + " processes x " +
            std::to_string(options.envs_per_process) +
            " environments on " + std::to_string(cores) + " cores" +
            (lr.empty() ? "" : ", --lr " + lr) +
            "), stale gradients from more processes than cores, too small an "
            "entropy weight" + (beta.empty() ? "" : " (--beta " + beta + ")") +
            "; try a smaller --lr, --rmsprop-epsilon 0.1, fewer --processes "
            "or a larger --beta";
}

void PolicyCollapseExtension::Place(void*, const RunInfo& run) {
  control_ = run.control;
  offset_ = 0;
  header_read_ = false;
  mean_column_ = entropy_column_ = -1;
}

void PolicyCollapseExtension::Poll() {
  if (!detector_ || detector_->collapsed()) return;
  std::ifstream in(scores_, std::ios::binary);
  if (!in) return;
  in.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(in.tellg());
  if (size <= offset_) return;
  in.seekg(offset_);
  std::string text(static_cast<size_t>(size - offset_), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  // Whole lines only: a row being appended is read on a later call.
  size_t begin = 0;
  for (size_t end; (end = text.find('\n', begin)) != std::string::npos;
       begin = end + 1) {
    const std::vector<std::string> cells =
        SplitTabs(text.substr(begin, end - begin));
    if (!header_read_) {
      header_read_ = true;
      for (int i = 0; i < static_cast<int>(cells.size()); ++i) {
        if (cells[i] == "mean") mean_column_ = i;
        if (cells[i] == "average_entropy") entropy_column_ = i;
      }
      continue;
    }
    if (mean_column_ < 0 || entropy_column_ < 0) continue;  // Not reported.
    CollapseRow row;
    row.steps = static_cast<int64_t>(Cell(cells, 0));
    row.mean = Cell(cells, mean_column_);
    row.entropy = Cell(cells, entropy_column_);
    if (detector_->Observe(row)) {
      offset_ += static_cast<int64_t>(end + 1);
      Found();
      return;
    }
  }
  offset_ += static_cast<int64_t>(begin);
}

void PolicyCollapseExtension::Found() {
  const CollapseDetector& d = *detector_;
  const CollapseRow& row = d.found();
  message_ = "the policy collapsed at step " + std::to_string(row.steps) +
             ": its entropy is " + Short(row.entropy) + ", below " +
             Short(d.threshold()) +
             " (--collapse-entropy of the largest), while the evaluations' "
             "mean stays at " + Short(row.mean) + " (the first evaluations': " +
             Short(d.baseline_low()) + " to " + Short(d.baseline_high()) +
             "); it will not learn from here. " + advice_ +
             (stop_ ? "; --stop-on-collapse ends the run here"
                    : "; --stop-on-collapse would end such a run here");
  Log(LogLevel::kWarning, message_);
  if (stop_ && control_ != nullptr) {
    stopped_ = true;
    // The workers end as after a successful evaluation.
    control_->training_done.store(1);
  }
}

void PolicyCollapseExtension::Report(EventWriter&, bool periodic) {
  if (periodic) Poll();
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
                   Short(row.entropy) + ", evaluation mean " +
                   Short(row.mean) + ")";
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
