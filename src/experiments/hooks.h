// Global-step hooks: called by every worker after each environment step as
// hook(env, agent, global_t), as in the reference.
#ifndef ASYNCRL_EXPERIMENTS_HOOKS_H_
#define ASYNCRL_EXPERIMENTS_HOOKS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "asyncrl/agents/agent.h"
#include "asyncrl/envs/env.h"

namespace asyncrl {

using StepHook = std::function<void(Env& env, Agent& agent, int64_t global_t)>;

// Decays the learning rate linearly from `start` at step 0 to `end` at step
// `steps`. Throws std::invalid_argument on the first call if the agent has
// no learning rate (does not implement LearningRateControl).
StepHook LinearLearningRateDecay(double start, double end, int64_t steps);
// The same for the entropy weight (beta): throws std::invalid_argument on
// the first call if the agent does not implement EntropyWeightControl.
StepHook LinearEntropyWeightDecay(double start, double end, int64_t steps);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_HOOKS_H_
