// The asynchronous trainer (the reference's train_agent_async): the parent
// builds the shared state, forks `processes` workers that each run
// TrainLoop, watches them, prints progress, and on any worker failure or
// SIGINT/SIGTERM stops them all and saves <t>_except/ from the shared
// parameters.
#ifndef ASYNCRL_EXPERIMENTS_TRAIN_AGENT_ASYNC_H_
#define ASYNCRL_EXPERIMENTS_TRAIN_AGENT_ASYNC_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "asyncrl/agents/agent.h"
#include "asyncrl/envs/env.h"
#include "asyncrl/experiments/extension.h"
#include "asyncrl/experiments/hooks.h"
#include "asyncrl/experiments/train_options.h"
#include "asyncrl/misc/platform/process_group.h"

namespace asyncrl {

struct TrainResult {
  // 0 on success, 1 when a worker failed, 128 + signal for SIGINT/SIGTERM.
  int exit_code = 0;
  // Empty on success; otherwise names the worker, its pid and the exception
  // or signal (or the signal the parent received).
  std::string message;
  int64_t global_step = 0;
  int64_t episodes = 0;
  std::string except_dir;  // Set when <t>_except/ was saved.
  // An extension refused the run before any step (RunEnd::refused).
  bool refused = false;
  // TensorBoard records workers dropped because the metrics pipe was full
  // (also logged as a warning at the end of the run).
  int64_t metrics_dropped = 0;
  GroupReport report;
  // Lines the extensions add for the end of a finished run
  // (RunEnd::notes).
  std::vector<std::string> notes;
};

// Trains until options.steps global steps, a successful evaluation, a
// failure or a stop signal. Progress lines go to `log` (may be null).
// `extensions` (experiments/extension.h) plug features into the run, their
// hooks called in list order. Throws std::invalid_argument for invalid
// options before anything is written; a failure to save the exception
// checkpoint is added to message. Sets SIGXFSZ to be ignored in the calling
// process (a file-size limit then fails a write with EFBIG, which is
// reported, instead of killing the writer).
TrainResult TrainAgentAsync(const TrainOptions& options,
                            const MakeEnvFn& make_env,
                            const MakeAgentFn& make_agent,
                            const std::vector<StepHook>& hooks = {},
                            std::ostream* log = nullptr,
                            const Extensions& extensions = {});

// scores.txt's columns after the fixed ones: the agent's statistics, then
// each extension's, once each extension is configured with `options` and
// `probe` (an evaluation environment) and has checked `agent`
// (TrainerExtension::CheckAgent).
std::vector<std::string> ConfiguredScoreColumns(const TrainOptions& options,
                                                Env& probe, Agent& agent,
                                                const Extensions& extensions);

// The most bytes one checkpoint may hold: Protobuf serializes a message of
// at most 2^31 - 1 bytes, less room for the options and metadata.
inline constexpr uint64_t kMaxCheckpointBytes =
    (uint64_t{1} << 31) - (16 << 20);

// Throws std::invalid_argument when this run's checkpoints would be larger
// than kMaxCheckpointBytes (the agent's parameters, its optimizer's
// statistics and state, and what each extension keeps, e.g. self-play's
// snapshots), naming the size, its parts and the limit: such a run trained
// and then could save no checkpoint at all. Builds an agent and an
// environment; configures the extensions. TrainAgentAsync checks it too.
void CheckCheckpointSize(const TrainOptions& options, const MakeEnvFn& make_env,
                         const MakeAgentFn& make_agent,
                         const Extensions& extensions);

// Throws std::invalid_argument when options.outdir holds a scores.txt whose
// header is not the one this run would write (AsyncEvaluator::CheckHeader).
// TrainAgentAsync checks it before it writes anything; a program that
// writes files of its own into a resumed run folder calls this first.
// Builds an agent and an environment; configures the extensions.
void CheckScoresTable(const TrainOptions& options, const MakeEnvFn& make_env,
                      const MakeAgentFn& make_agent,
                      const Extensions& extensions);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_TRAIN_AGENT_ASYNC_H_
