#include "asyncrl/experiments/snapshot.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>

#include "asyncrl/misc/build_info.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/timers.h"

namespace asyncrl {

void SaveSnapshot(const Agent& agent, const ControlBlock& control,
                  const TrainOptions& options, const std::string& dir) {
  ScopedTimer timer("checkpoint");
  proto::Checkpoint checkpoint;
  checkpoint.set_agent_type(agent.Type());
  checkpoint.set_global_step(control.global_step.load());
  checkpoint.set_episodes(control.episodes.load());
  checkpoint.set_has_best_score(control.has_best_score.load() != 0);
  checkpoint.set_best_score(control.best_score.load());
  checkpoint.set_prev_eval_t(control.prev_eval_t.load());
  checkpoint.set_elapsed_seconds(control.ElapsedSeconds());
  if (options.curriculum) {
    const auto& params = options.curriculum->parameters;
    for (size_t i = 0; i < params.size(); ++i) {
      auto* lesson = checkpoint.add_curriculum();
      lesson->set_parameter(params[i].parameter);
      lesson->set_lesson(control.curriculum.lesson[i].load());
      lesson->set_smoothing(control.curriculum.smoothing[i].load());
    }
  }
  if (control.self_play.enabled.load() != 0) {
    // Reading the pool changes nothing (its sequence counters are only
    // read); the pool class serves readers and writers alike.
    SnapshotPool(const_cast<SelfPlayBlock&>(control.self_play))
        .SaveTo(&checkpoint);
  }
  agent.SaveTo(&checkpoint);
  auto* meta = checkpoint.mutable_metadata();
  for (const auto& [key, value] : options.config) {
    (*meta->mutable_config())[key] = value;
  }
  meta->set_env(options.env_name);
  meta->set_created_unix_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  meta->set_build_revision(kBuildRevision);
  SaveCheckpointDir(checkpoint, dir);
}

void PruneCheckpoints(const std::string& outdir, int keep) {
  static const std::string kSuffix = "_checkpoint";
  std::vector<std::pair<int64_t, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(outdir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= kSuffix.size() ||
        name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) !=
            0) {
      continue;
    }
    const std::string digits = name.substr(0, name.size() - kSuffix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    found.emplace_back(std::stoll(digits), e.path());
  }
  std::sort(found.begin(), found.end());
  for (size_t i = 0; i + static_cast<size_t>(keep) < found.size(); ++i) {
    std::filesystem::remove_all(found[i].second, ec);
  }
}

void LoadSnapshot(const std::string& dir, LoadMode mode, Agent& agent,
                  ControlBlock& control, const Curriculum* curriculum) {
  const proto::Checkpoint checkpoint = LoadCheckpointDir(dir);
  if (checkpoint.agent_type() != agent.Type()) {
    throw std::runtime_error("checkpoint " + dir + ": holds a '" +
                             checkpoint.agent_type() + "' agent, not '" +
                             agent.Type() + "'");
  }
  try {
    agent.LoadFrom(checkpoint);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("checkpoint " + dir + ": " + e.what());
  }
  if (mode == LoadMode::kAgentOnly) return;
  control.global_step.store(checkpoint.global_step());
  control.episodes.store(checkpoint.episodes());
  control.prev_eval_t.store(checkpoint.prev_eval_t());
  control.has_best_score.store(checkpoint.has_best_score() ? 1 : 0);
  control.best_score.store(checkpoint.best_score());
  control.elapsed_offset = checkpoint.elapsed_seconds();
  if (control.self_play.enabled.load() != 0) {
    try {
      SnapshotPool(control.self_play).LoadFrom(checkpoint);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error("checkpoint " + dir + ": " + e.what());
    }
  }
  if (curriculum != nullptr) {
    // By name: a lesson the checkpoint does not know starts at the first.
    const auto& params = curriculum->parameters;
    for (size_t i = 0; i < params.size(); ++i) {
      for (const auto& saved : checkpoint.curriculum()) {
        if (saved.parameter() != params[i].parameter) continue;
        const int32_t last = static_cast<int32_t>(params[i].lessons.size()) - 1;
        control.curriculum.lesson[i].store(
            std::clamp<int32_t>(saved.lesson(), 0, last));
        control.curriculum.smoothing[i].store(saved.smoothing());
      }
    }
  }
}

}  // namespace asyncrl
