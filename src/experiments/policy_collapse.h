// A collapsed policy, named: when the policy's entropy has fallen to almost
// nothing while the evaluations' means stay where the first evaluations'
// were, the run has stopped learning for good (the policy chooses one action
// whatever it sees, and the gradients that could move it vanish with the
// entropy). The parent judges scores.txt's rows as they are written
// (`mean`, and the evaluating worker's `average_entropy`); the first time a
// collapse is found it says so once on stderr, with the run's likely causes
// and what to try, and the status line carries "COLLAPSED" from then on.
// With --stop-on-collapse the run ends there: the workers stop as after a
// successful evaluation, <t>_except/ is saved and the exit status is 3.
//
// Only for policies over a discrete action space without an action mask
// (the largest entropy, ln n, is known; a Gaussian policy's entropy has no
// such scale, and a game's legal moves change it), in a run that evaluates,
// has no curriculum (its lessons change what the mean measures) and whose
// agent reports `average_entropy` (A3C and PPO do; a program's own agent may
// not). Otherwise nothing is checked. A resumed run's earlier rows set the
// baseline but are not judged. With several hosts, rank 0 (which evaluates)
// decides; its stop reaches the other hosts as a finished run.
#ifndef ASYNCRL_EXPERIMENTS_POLICY_COLLAPSE_H_
#define ASYNCRL_EXPERIMENTS_POLICY_COLLAPSE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "asyncrl/experiments/extension.h"

namespace asyncrl {

// One evaluation as the detector reads it.
struct CollapseRow {
  int64_t steps = 0;
  double mean = 0;
  double entropy = 0;
};

// Row by row: the policy has collapsed when, in kConsecutive evaluations in
// a row, its entropy is below `fraction` of `max_entropy` and the mean is at
// most the band of the first kBaselineRows evaluations (their highest mean
// plus their spread, or plus a tenth of that mean when the spread is
// smaller). Those first rows are never judged: the agent's average entropy
// starts at 0 and takes a few thousand steps to reach the policy's.
class CollapseDetector {
 public:
  static constexpr int kBaselineRows = 3;
  static constexpr int kConsecutive = 2;

  // max_entropy > 0 (ln n for n actions); fraction in (0, 1).
  CollapseDetector(double max_entropy, double fraction);

  // The next evaluation; true the first time the policy is found collapsed
  // (never again after that). Rows whose mean or entropy is not a finite
  // number are skipped. `judge` false: the row only counts towards the
  // baseline (a resumed run's earlier rows).
  bool Observe(const CollapseRow& row, bool judge = true);

  bool collapsed() const { return found_.has_value(); }
  // The row it was found at (after collapsed()).
  const CollapseRow& found() const { return *found_; }
  // The baseline band's lowest and highest mean, and the mean a collapsed
  // policy stays at or under (after kBaselineRows rows).
  double baseline_low() const { return low_; }
  double baseline_high() const { return high_; }
  double ceiling() const { return ceiling_; }
  double threshold() const { return max_entropy_ * fraction_; }

 private:
  double max_entropy_;
  double fraction_;
  int rows_ = 0;
  int low_rows_ = 0;  // Consecutive rows that look collapsed.
  double low_ = 0, high_ = 0, ceiling_ = 0;
  std::optional<CollapseRow> found_;
};

class PolicyCollapseExtension : public TrainerExtension {
 public:
  std::string Name() const override { return "policy collapse"; }
  void Configure(const TrainOptions& options, Env& probe) override;
  void Place(void* shared, const RunInfo& run) override;
  void Start(const RunInfo& run) override;
  void WorkersStarted() override;
  void ScoresRead(const std::vector<ScoreRow>& rows) override;
  std::string Status() const override;
  void Conclude(const GroupReport& report, RunEnd* end) override;
  void Release() override;

  bool collapsed() const { return detector_ && detector_->collapsed(); }
  // The warning it printed (empty before a collapse).
  const std::string& message() const { return message_; }

 private:
  void Found();

  std::optional<CollapseDetector> detector_;
  bool stop_ = false;
  int64_t steps_ = 0;  // The run's budget.
  std::string scores_;
  std::string threshold_;  // "0.01 x ln 2 = 0.00693", for the message.
  std::string advice_;     // The run's own settings, for the message.
  ControlBlock* control_ = nullptr;
  // The step the run started from, and scores.txt's rows when its workers
  // started (-1: not yet): those are an earlier run's.
  int64_t start_step_ = 0;
  int64_t started_rows_ = -1;
  int64_t seen_ = 0;  // Rows judged so far.
  std::string message_;
  bool stopped_ = false;
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_POLICY_COLLAPSE_H_
