#include "asyncrl/experiments/snapshot.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>

#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/platform/process_group.h"
#include "asyncrl/misc/timers.h"
#include "asyncrl/misc/version.h"

namespace asyncrl {

void SaveSnapshot(const Agent& agent, const ControlBlock& control,
                  const TrainOptions& options, const Extensions& extensions,
                  const std::string& dir, int64_t global_step, bool acting) {
  ScopedTimer timer("checkpoint");
  // A save after the steps are spent is progress the parent watches
  // (ProcessGroupOptions::finish_timeout); a no-op in the parent.
  ReportWorkerProgress();
  proto::Checkpoint checkpoint;
  checkpoint.set_agent_type(agent.Type());
  checkpoint.set_global_step(global_step >= 0 ? global_step
                                              : control.global_step.load());
  checkpoint.set_episodes(control.episodes.load());
  checkpoint.set_has_best_score(control.has_best_score.load() != 0);
  checkpoint.set_best_score(control.best_score.load());
  checkpoint.set_prev_eval_t(control.prev_eval_t.load());
  checkpoint.set_elapsed_seconds(control.ElapsedSeconds());
  for (const auto& extension : extensions) extension->SaveTo(&checkpoint);
  if (acting) {
    agent.SaveActingTo(&checkpoint);
  } else {
    agent.SaveTo(&checkpoint);
  }
  auto* meta = checkpoint.mutable_metadata();
  for (const auto& [key, value] : options.config) {
    (*meta->mutable_config())[key] = value;
  }
  meta->set_env(options.env_name);
  meta->set_created_unix_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  meta->set_build_revision(BuildRevision());
  SaveCheckpointDir(checkpoint, dir);
  Log(LogLevel::kInfo, "Saved the agent to " + dir);
  ReportWorkerProgress();
}

void LoadSnapshot(const std::string& dir, LoadMode mode, Agent& agent,
                  ControlBlock& control, const Extensions& extensions) {
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
  for (const auto& extension : extensions) {
    try {
      extension->LoadFrom(checkpoint);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error("checkpoint " + dir + ": " + e.what());
    }
  }
}

}  // namespace asyncrl
