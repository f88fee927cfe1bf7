#include "asyncrl/experiments/curriculum/curriculum_extension.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <new>
#include <random>
#include <stdexcept>

#include "asyncrl/misc/logging.h"

namespace asyncrl {
namespace {

// One worker's side: the runner, and per environment the epoch its running
// episode began in (an advance that requires a reset ends the episodes of
// earlier epochs) and the generation (advances so far: its return counts
// only if none happened meanwhile). Both are read before the lesson is
// applied, so an advance in between is never missed.
class CurriculumWorker : public WorkerExtension {
 public:
  CurriculumWorker(const Curriculum& curriculum, CurriculumBlock& block,
                   int64_t steps, double reward_scale, uint64_t seed,
                   uint64_t worker, size_t envs)
      : runner_(curriculum, block, steps, reward_scale, seed, worker),
        epoch_(envs, 0),
        generation_(envs, 0) {}

  void BeforeReset(int64_t env, Env& environment) override {
    epoch_[env] = runner_.Epoch();
    generation_[env] = runner_.Generation();
    runner_.Apply(environment);
  }
  bool CutEpisode(int64_t env) override {
    return runner_.Epoch() != epoch_[env];
  }
  void EpisodeEnded(int64_t env, int64_t t, double episode_return,
                    bool measured) override {
    if (measured) runner_.EpisodeEnded(t, episode_return, generation_[env]);
  }

 private:
  CurriculumRunner runner_;
  std::vector<int64_t> epoch_;
  std::vector<int64_t> generation_;
};

}  // namespace

CurriculumExtension::CurriculumExtension(
    std::shared_ptr<const Curriculum> curriculum)
    : curriculum_(std::move(curriculum)) {
  if (!curriculum_) {
    throw std::invalid_argument("CurriculumExtension: no curriculum");
  }
}

void CurriculumExtension::AdjustOptions(TrainOptions*) const {
  curriculum_->Validate();
}

void CurriculumExtension::Configure(const TrainOptions& options, Env& env) {
  steps_ = options.steps;
  whole_.clear();
  for (const ParameterSchedule& p : curriculum_->parameters) {
    const EnvParameter* declared = DeclaredParameter(env, p.parameter);
    whole_.push_back(declared != nullptr && declared->integer);
  }
  reward_scale_ = options.reward_scale;
  seed_ = options.seed;
}

size_t CurriculumExtension::SharedBytes(const SharedStateSizes&) const {
  return sizeof(CurriculumBlock);
}

void CurriculumExtension::Place(void* shared, const RunInfo& run) {
  block_ = new (shared) CurriculumBlock();
  control_ = run.control;
  reported_ = 0;
}

void CurriculumExtension::SaveTo(proto::Checkpoint* checkpoint) const {
  const auto& params = curriculum_->parameters;
  for (size_t i = 0; i < params.size(); ++i) {
    auto* lesson = checkpoint->add_curriculum();
    lesson->set_parameter(params[i].parameter);
    lesson->set_lesson(block_->lesson[i].load());
    lesson->set_smoothing(block_->smoothing[i].load());
    for (const Lesson& l : params[i].lessons) lesson->add_lesson_names(l.name);
    lesson->set_description(params[i].Describe());
  }
}

void CurriculumExtension::LoadFrom(const proto::Checkpoint& checkpoint) {
  // By name: a lesson the checkpoint does not know starts at the first.
  const auto& params = curriculum_->parameters;
  for (size_t i = 0; i < params.size(); ++i) {
    for (const auto& saved : checkpoint.curriculum()) {
      if (saved.parameter() != params[i].parameter) continue;
      const int32_t last = static_cast<int32_t>(params[i].lessons.size()) - 1;
      block_->lesson[i].store(std::clamp<int32_t>(saved.lesson(), 0, last));
      block_->smoothing[i].store(saved.smoothing());
    }
  }
}

std::vector<std::string> CurriculumExtension::ScoreColumns() const {
  if (!curriculum_->HasLessons()) return {};
  return {"lessons"};
}

void CurriculumExtension::EvaluationBegins(int64_t,
                                           std::vector<std::string>* cells) {
  if (!curriculum_->HasLessons()) return;
  // The lessons of the evaluation's step, read as it begins: another
  // worker may advance one while it plays. "force=2/3;goal_position=1/2".
  std::string lessons;
  const auto& params = curriculum_->parameters;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].HasCurriculum()) continue;
    lessons += (lessons.empty() ? "" : ";") + params[i].parameter + "=" +
               std::to_string(block_->lesson[i].load() + 1) + "/" +
               std::to_string(params[i].lessons.size());
  }
  cells->push_back(lessons);
}

std::unique_ptr<WorkerExtension> CurriculumExtension::StartWorker(
    const WorkerInfo& w) {
  if (curriculum_->empty()) return nullptr;
  // Each worker its own stream of draws, fixed by --seed.
  std::seed_seq seq{static_cast<uint64_t>(seed_),
                    static_cast<uint64_t>(w.process_idx), uint64_t{0xC0441C}};
  std::array<uint64_t, 1> seed{};
  seq.generate(seed.begin(), seed.end());
  return std::make_unique<CurriculumWorker>(
      *curriculum_, *block_, steps_, reward_scale_, seed[0],
      static_cast<uint64_t>(w.process_idx), w.envs->size());
}

// Logs each lesson advance once, in order (the workers advance and record;
// the parent speaks), with curriculum/<parameter>/lesson and /value (the
// lesson's value, a sampler's mean) at its step; every parameter's lesson
// and value again when `periodic`.
void CurriculumExtension::Report(EventWriter& events, bool periodic) {
  const auto& params = curriculum_->parameters;
  const CurriculumBlock& block = *block_;
  const int64_t advances = block.advances.load(std::memory_order_acquire);
  if (advances - reported_ > CurriculumBlock::kRecords) {
    Log(LogLevel::kWarning,
        "curriculum: " +
            std::to_string(advances - reported_ - CurriculumBlock::kRecords) +
            " lesson advances happened too fast to be reported");
    reported_ = advances - CurriculumBlock::kRecords;
  }
  for (; reported_ < advances; ++reported_) {
    // A copy, checked: a slot overwritten meanwhile (more than kRecords
    // advances since) must not index out of range.
    const CurriculumBlock::Advance record =
        block.records[reported_ % CurriculumBlock::kRecords];
    if (record.parameter < 0 ||
        record.parameter >= static_cast<int32_t>(params.size())) {
      continue;
    }
    const auto& p = params[static_cast<size_t>(record.parameter)];
    if (record.lesson < 1 ||
        record.lesson >= static_cast<int32_t>(p.lessons.size())) {
      continue;
    }
    const auto& before = p.lessons[static_cast<size_t>(record.lesson - 1)];
    const auto& now = p.lessons[static_cast<size_t>(record.lesson)];
    Log(LogLevel::kInfo,
        "curriculum: lesson " + std::to_string(record.lesson + 1) + " of " +
            std::to_string(p.lessons.size()) + " of " + p.parameter + " ('" +
            now.name + "'): " + before.value.Describe() + " -> " +
            now.value.Describe() + " at step " + std::to_string(record.step));
    WriteLesson(events, static_cast<size_t>(record.parameter), record.lesson,
                record.step);
  }
  if (!periodic) return;
  const int64_t step = control_->global_step.load();
  for (size_t i = 0; i < params.size(); ++i) {
    WriteLesson(events, i, block.lesson[i].load(), step);
  }
}

void CurriculumExtension::WriteLesson(EventWriter& events, size_t parameter,
                                      int32_t lesson, int64_t step) const {
  const ParameterSchedule& p = curriculum_->parameters[parameter];
  const double wall = WallTimeSeconds();
  const std::string tag = "curriculum/" + p.parameter;
  events.WriteScalar(tag + "/lesson", step, lesson, wall);
  const bool whole = parameter < whole_.size() && whole_[parameter];
  events.WriteScalar(tag + "/value", step,
                     p.lessons[static_cast<size_t>(lesson)].value.Mean(whole),
                     wall);
}

std::string CurriculumExtension::Status() const {
  int32_t lessons[Curriculum::kMaxParameters] = {};
  for (size_t i = 0; i < curriculum_->parameters.size(); ++i) {
    lessons[i] = block_->lesson[i].load();
  }
  const std::string summary = curriculum_->LessonSummary(lessons);
  return summary.empty() ? "" : "lessons " + summary;
}

}  // namespace asyncrl
