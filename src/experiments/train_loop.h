// The loop each worker process runs (the reference's train_loop): act, step,
// claim a global step, call hooks, end episodes, evaluate when due, stop at
// `steps`, on training done or when asked to stop.
#ifndef ASYNCRL_EXPERIMENTS_TRAIN_LOOP_H_
#define ASYNCRL_EXPERIMENTS_TRAIN_LOOP_H_

#include <memory>
#include <vector>

#include "asyncrl/agents/agent.h"
#include "asyncrl/envs/env.h"
#include "asyncrl/experiments/evaluator.h"
#include "asyncrl/experiments/extension.h"
#include "asyncrl/experiments/hooks.h"
#include "asyncrl/experiments/metrics.h"
#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/experiments/train_options.h"

namespace asyncrl {

// Everything one worker's loop uses. Envs: K training environments (K =
// options.envs_per_process); K > 1 needs a BatchAgent.
struct WorkerContext {
  int process_idx = 0;
  const TrainOptions* options = nullptr;
  ControlBlock* control = nullptr;
  Agent* agent = nullptr;
  std::vector<std::unique_ptr<Env>> envs;
  std::unique_ptr<Env> eval_env;  // Null when evaluation is off.
  AsyncEvaluator* evaluator = nullptr;
  const std::vector<StepHook>* hooks = nullptr;
  // Receives train/episode_return and train/episode_length from every
  // worker, and worker 0's agent statistics (agent/<name>) and learning rate
  // (train/lr). May be null.
  MetricsChannel* metrics = nullptr;
  // The run's extensions (saved in every checkpoint) and this worker's
  // parts of them (TrainerExtension::StartWorker), called in order.
  Extensions extensions;
  std::vector<std::unique_ptr<WorkerExtension>> worker_extensions;
  // Where this worker's step numbers come from when not from the run's
  // counter (WorkerExtension::Steps); null: the counter.
  StepSource* steps = nullptr;
};

// Runs until the global step counter reaches options.steps (it never passes
// it: each step is claimed before it is taken), training is done, or the stop
// flag is raised. The worker whose claim is exactly `steps` saves
// <steps>_finish/ (unless its step numbers come from a StepSource: then
// the extension that provides them saves it). Worker 0 logs every episode end
// at debug level. Throws whatever the agent, environments or hooks throw.
void TrainLoop(WorkerContext& ctx);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_TRAIN_LOOP_H_
