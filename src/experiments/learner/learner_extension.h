// A learner beside the workers (--learner), as a trainer extension. The
// run's last process is the learner: it takes no environment step; it
// samples batches of segments from the buffer (segment_buffer.h) and
// steps the shared optimizer with them (ActorCriticAgent::LearnFrom: A3C's
// loss with V-trace or UPGO correcting for the parameters that acted).
// Every other process acts: its agent sends each rollout's columns to the
// buffer instead of learning from them, then takes the latest shared
// parameters (HandyRL's workers fetch the newest model as they go).
//
// The buffer is not checkpointed: a resumed run fills it again before its
// first update. The workers report the learner's update statistics as
// their own (scores.txt's policy_loss, entropy, ... columns; policy_lag is
// the updates between a segment's parameters and the learner's batch, over
// its last 100 batches); the learner's updates, how many times each step
// was trained on and the buffer's fill go to scores.txt's learner_updates,
// reuse and buffer_segments columns, TensorBoard (learner/...), the status
// line and the run's end.
#ifndef ASYNCRL_EXPERIMENTS_LEARNER_LEARNER_EXTENSION_H_
#define ASYNCRL_EXPERIMENTS_LEARNER_LEARNER_EXTENSION_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "asyncrl/experiments/extension.h"
#include "asyncrl/experiments/learner/learner_options.h"
#include "asyncrl/experiments/learner/segment_buffer.h"

namespace asyncrl {

// What the processes share besides the buffer: the learner's update
// statistics (ActorCriticAgent::UpdateStatistics, in its order) after its
// last update; every process's agent is of the same kind.
struct LearnerBlock {
  static constexpr int kMaxStatistics = 32;
  std::atomic<int32_t> count{0};
  std::atomic<double> statistics[kMaxStatistics];
};

class LearnerExtension : public TrainerExtension {
 public:
  // `t_max`: the workers' rollout length, each segment's steps.
  LearnerExtension(const LearnerOptions& options, int64_t t_max);

  std::string Name() const override { return "learner"; }
  // Needs >= 2 processes and a buffer that holds the minimum segments.
  void Configure(const TrainOptions& options, Env& probe) override;
  // An A3C agent with a feed-forward network whose policy target corrects
  // for off-policy rows (vtrace, upgo).
  void CheckAgent(const Agent& agent) const override;
  size_t SharedBytes(const SharedStateSizes& sizes) const override;
  void Place(void* shared, const RunInfo& run) override;
  std::vector<std::string> ScoreColumns() const override;
  void EvaluationBegins(int64_t t, std::vector<std::string>* cells) override;
  std::unique_ptr<WorkerExtension> StartWorker(const WorkerInfo& w) override;
  void Report(EventWriter& events, bool periodic) override;
  std::string Status() const override;
  void WorkersStarted() override;
  void Conclude(const GroupReport& report, RunEnd* end) override;
  void Release() override;

  // After Place, for tests.
  SegmentBuffer& buffer() { return *buffer_; }
  const SegmentShape& shape() const { return shape_; }

  // How many times the learner trained on each step the workers wrote, on
  // average (0 before any).
  double Reuse() const;

 private:
  size_t DataBytes() const;
  int64_t MaxRecords() const;

  LearnerOptions options_;
  SegmentShape shape_;
  int processes_ = 0;
  SegmentBuffer* buffer_ = nullptr;
  LearnerBlock* block_ = nullptr;
  const ControlBlock* control_ = nullptr;
  // Parent: the learner's updates and the time at the last periodic report
  // (TensorBoard's learner/updates_per_s).
  int64_t reported_updates_ = 0;
  std::chrono::steady_clock::time_point reported_at_;
  std::chrono::steady_clock::time_point started_;  // WorkersStarted.
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_LEARNER_LEARNER_EXTENSION_H_
