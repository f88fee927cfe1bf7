// The returns of the last training episodes, as a trainer extension: every
// worker records each measured training episode's return (environment
// units) in a ring in the run's shared region; scores.txt's `train_mean`
// (at each evaluation), the status line ("train R"), TensorBoard
// (train/return_mean) and the end of the run report the mean of the last
// --train-returns-window of them: the measure the MinAtar paper plots (the
// average return of the last 100 training episodes), and for a task like
// MountainCar whether training episodes reach the goal at all while the
// evaluations do not yet. Saved in checkpoints and restored by --resume.
// With several hosts, each host's ring holds its own episodes (rank 0's
// are the ones scores.txt shows).
#ifndef ASYNCRL_EXPERIMENTS_TRAINING_RETURNS_H_
#define ASYNCRL_EXPERIMENTS_TRAINING_RETURNS_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "asyncrl/experiments/extension.h"

namespace asyncrl {

// The shared ring. Lock-free, so the parent never waits on a worker (one
// killed mid-record cannot block it): a recorder claims slot
// `recorded % window` and then stores its return; a slot never written
// holds NaN and is skipped. While a slot is being rewritten a reader may
// see the return it replaces (one episode a lap older) in the mean.
struct TrainingReturnsBlock {
  static constexpr int64_t kMaxWindow = TrainOptions::kMaxTrainReturnsWindow;
  TrainingReturnsBlock();
  std::atomic<int64_t> window{0};
  std::atomic<int64_t> recorded{0};  // Returns recorded, ever (the run's).
  std::atomic<double> returns[kMaxWindow];

  // A worker: one episode's return.
  void Record(double episode_return);
  // The mean of the recorded returns of the window (std::nullopt: none
  // yet), and how many it averages.
  std::optional<double> Mean(int64_t* count = nullptr) const;
  // The window's returns, oldest first (checkpoints), and the count of
  // returns recorded they were read at (null: not wanted).
  std::vector<double> Newest(int64_t* total = nullptr) const;
  // Restores a ring of `window` from `recorded` and its newest returns
  // (oldest first; the newest `window` of them are kept).
  void Restore(int64_t recorded_total, const std::vector<double>& newest);
};

class TrainingReturnsExtension : public TrainerExtension {
 public:
  std::string Name() const override { return "training returns"; }
  void Configure(const TrainOptions& options, Env& probe) override;
  size_t SharedBytes(const SharedStateSizes& sizes) const override;
  void Place(void* shared, const RunInfo& run) override;
  void SaveTo(proto::Checkpoint* checkpoint) const override;
  void LoadFrom(const proto::Checkpoint& checkpoint) override;
  std::vector<std::string> ScoreColumns() const override;
  void EvaluationBegins(int64_t t, std::vector<std::string>* cells) override;
  std::unique_ptr<WorkerExtension> StartWorker(const WorkerInfo& w) override;
  void Report(EventWriter& events, bool periodic) override;
  std::string Status() const override;
  void Conclude(const GroupReport& report, RunEnd* end) override;
  void Release() override;

  // The shared ring (after Place), for tests.
  TrainingReturnsBlock& block() { return *block_; }

 private:
  int64_t window_ = 0;
  double reward_scale_ = 1.0;
  // A run resumed from before the column existed keeps its scores.txt
  // columns (CheckHeader would refuse a new one).
  bool column_ = true;
  TrainingReturnsBlock* block_ = nullptr;
  const ControlBlock* control_ = nullptr;
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_TRAINING_RETURNS_H_
