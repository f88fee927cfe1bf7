// Trainer checkpoints: the agent's state plus the trainer's counters (global
// step, episodes, best score, evaluation schedule) and the configuration, so
// a run can be resumed exactly.
#ifndef ASYNCRL_EXPERIMENTS_SNAPSHOT_H_
#define ASYNCRL_EXPERIMENTS_SNAPSHOT_H_

#include <string>

#include "asyncrl/agents/agent.h"
#include "asyncrl/experiments/extension.h"
#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/experiments/train_options.h"

namespace asyncrl {

// Writes `agent` (its shared state once bound), the counters of `control`
// and each extension's state (TrainerExtension::SaveTo) to checkpoint
// directory `dir` atomically. Reads the best score lock-free (it is atomic;
// evaluators update it under control.mutex). `global_step` (>= 0) is the
// step recorded instead of the shared counter, which also counts steps other
// workers have claimed but not yet taken: a periodic <t>_checkpoint/ records
// t, so its name and its content agree and a resume from it never skips a
// step.
// `acting`: the parameters the agent acts with (Agent::SaveActingTo: what
// an evaluation in this process measured) instead of the shared ones.
void SaveSnapshot(const Agent& agent, const ControlBlock& control,
                  const TrainOptions& options, const Extensions& extensions,
                  const std::string& dir, int64_t global_step = -1,
                  bool acting = false);

// What LoadSnapshot restores.
enum class LoadMode {
  kAgentOnly,  // Parameters and optimizer statistics (--load).
  kResume,     // Those, and every counter of the run (--resume).
};

// Loads checkpoint directory `dir` into `agent` and, with kResume, the
// counters of `control` and each extension's state
// (TrainerExtension::LoadFrom). Throws std::runtime_error naming the
// directory and the first problem; `agent` and `control` are unchanged when
// the agent is refused.
void LoadSnapshot(const std::string& dir, LoadMode mode, Agent& agent,
                  ControlBlock& control, const Extensions& extensions = {});

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_SNAPSHOT_H_
