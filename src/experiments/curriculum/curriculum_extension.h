// Curricula and samplers of environment parameters (curriculum.h) as a
// trainer extension: the lessons live in the run's shared region, each
// worker draws its environments' values before their resets and feeds
// episode returns to the measure, advances are reported by the parent
// (log line and TensorBoard), the lessons go in the status line, in
// scores.txt's "lessons" column and in checkpoints.
#ifndef ASYNCRL_EXPERIMENTS_CURRICULUM_CURRICULUM_EXTENSION_H_
#define ASYNCRL_EXPERIMENTS_CURRICULUM_CURRICULUM_EXTENSION_H_

#include <memory>
#include <string>
#include <vector>

#include "asyncrl/experiments/curriculum/curriculum.h"
#include "asyncrl/experiments/extension.h"

namespace asyncrl {

class CurriculumExtension : public TrainerExtension {
 public:
  // `curriculum` must not be null.
  explicit CurriculumExtension(std::shared_ptr<const Curriculum> curriculum);

  std::string Name() const override { return "curriculum"; }
  void AdjustOptions(TrainOptions* options) const override;
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

  // The shared state (after Place), for tests.
  CurriculumBlock& block() { return *block_; }

 private:
  // Parameter `parameter`'s (index in the curriculum) lesson and value.
  void WriteLesson(EventWriter& events, size_t parameter, int32_t lesson,
                   int64_t step) const;

  std::shared_ptr<const Curriculum> curriculum_;
  int64_t steps_ = 0;
  double reward_scale_ = 1.0;
  int64_t seed_ = 0;
  // Per scheduled parameter: whether the environment declares it whole
  // numbers (how its lesson's mean is reported).
  std::vector<bool> whole_;
  CurriculumBlock* block_ = nullptr;
  const ControlBlock* control_ = nullptr;
  int64_t reported_ = 0;  // Parent: advances already reported.
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_CURRICULUM_CURRICULUM_EXTENSION_H_
