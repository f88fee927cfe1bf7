// The trainer's one seam for features, built-in or a user's own:
// TrainAgentAsync knows this interface and nothing of the features behind
// it. A feature is a TrainerExtension; the program assembles the list
// (RunTrainer does for the built-in ones) and the trainer calls each hook
// on every extension in list order.
//
// Lifetime and processes: the extensions are built in the parent before
// the run and inherited by every worker through fork, so each process has
// its own copy of an extension's members; what the processes share lives in
// the extension's part of the shared region (SharedBytes / Place). The
// comment of each hook says which process calls it.
#ifndef ASYNCRL_EXPERIMENTS_EXTENSION_H_
#define ASYNCRL_EXPERIMENTS_EXTENSION_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asyncrl/agents/agent.h"
#include "asyncrl/envs/env.h"
#include "asyncrl/experiments/hooks.h"
#include "asyncrl/experiments/learning_curve.h"
#include "asyncrl/experiments/metrics.h"
#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/experiments/train_options.h"
#include "asyncrl/misc/platform/process_group.h"
#include "asyncrl/misc/tensorboard.h"
#include "asyncrl/proto/checkpoint.pb.h"

namespace asyncrl {

// make_env(process_idx, test): a training (test=false) or evaluation
// (test=true) environment for worker `process_idx`. The trainer seeds it.
// An evaluation environment may be null: the worker then evaluates on the
// training environment whose episode just ended, as the reference does
// without an eval_env (its next episode starts after the evaluation).
using MakeEnvFn =
    std::function<std::unique_ptr<Env>(int process_idx, bool test)>;
// make_agent(process_idx): worker `process_idx`'s agent. Called once in the
// parent (process_idx 0) to lay out the shared state, then in every worker.
using MakeAgentFn = std::function<std::unique_ptr<Agent>(int process_idx)>;

// The run as the parent has laid it out (Place and Start).
struct RunInfo {
  const TrainOptions* options = nullptr;
  ControlBlock* control = nullptr;   // Shared counters of the run.
  float* params = nullptr;           // The shared parameters.
  float* optimizer_state = nullptr;  // The shared optimizer statistics.
  SharedStateSizes sizes;
  // The parent's agent's running statistics in the shared state area
  // (Agent::SharedStatistics), once it is bound (at Start; empty at Place).
  std::vector<ObservationNormalizer*> statistics;
  // Saves a checkpoint of the shared state (the parent's agent, the
  // counters, every extension's SaveTo) to directory `dir`; the parent's
  // threads may call it. Throws std::runtime_error naming the directory.
  std::function<void(const std::string& dir)> save;
};

// How the run ended, as the trainer decided from its workers
// (TrainerExtension::Conclude may change it).
struct RunEnd {
  // 0 done, 1 a worker failed, 128 + signal when stopped.
  int exit_code = 0;
  std::string message;  // Empty when done.
  // Whether the parent saves <step>_except/ from the shared state.
  bool save_except = false;
  // Nothing ran: options refused before any step (exit code 2). RunTrainer
  // then leaves the run folder as it found it (RunFolderSnapshot).
  bool refused = false;
  // The global step the result (and <step>_except/) records.
  int64_t step = 0;
  // Lines for the end of the run (RunTrainer prints them after
  // "finished at step ...").
  std::vector<std::string> notes;
};

// Where a worker's global step numbers come from when not from the run's
// own counter (WorkerExtension::Steps).
class StepSource {
 public:
  virtual ~StepSource() = default;
  // Claims up to `want` consecutive step numbers; returns the first
  // (1-based) and sets `granted` (0: none are left).
  virtual int64_t Claim(int64_t want, int64_t* granted) = 0;
};

// One worker's view, when it starts (StartWorker).
struct WorkerInfo {
  int process_idx = 0;
  const TrainOptions* options = nullptr;
  ControlBlock* control = nullptr;
  const float* params = nullptr;  // The shared parameters.
  // The worker's K training environments (not yet reset).
  std::vector<std::unique_ptr<Env>>* envs = nullptr;
  // Builds another agent of this worker's kind (one the extension plays
  // with, never the learner).
  std::function<std::unique_ptr<Agent>()> make_agent;
  // The worker's own agent, bound to the shared state, and the run's step
  // hooks (a part that takes over the worker calls them, as the training
  // loop does).
  Agent* agent = nullptr;
  const std::vector<StepHook>* hooks = nullptr;
};

// An extension's per-worker part: called by that worker only, on its hot
// loop (keep them cheap). `env` indexes the worker's training environments.
class WorkerExtension {
 public:
  virtual ~WorkerExtension() = default;
  // Before the worker's first step (after every extension's StartWorker):
  // may block until the worker can train; false: it leaves at once,
  // without training.
  virtual bool Ready() { return true; }
  // After Ready(): true when this part runs the worker instead of the
  // training loop (Run); the worker then takes no environment step.
  virtual bool TakesOver() const { return false; }
  // Called in place of the training loop when TakesOver(): returns when
  // the run's work is done or the stop flag is raised, and calls
  // ReportWorkerProgress (misc/platform/process_group.h) as it goes, as
  // the loop does; throws what fails (the run then stops as for any
  // worker's failure).
  virtual void Run() {}
  // After Ready(): a source of step numbers that replaces the run's
  // counter (null: the counter). Step numbers from elsewhere are not this
  // run's alone: the worker that takes a multiple of the checkpoint
  // interval, or the last step, saves no checkpoint then (the extension
  // does, from the parent, through RunInfo::save).
  virtual StepSource* Steps() { return nullptr; }
  // Before environment `env` resets for a new episode.
  virtual void BeforeReset(int64_t env, Env& environment) {
    (void)env;
    (void)environment;
  }
  // After a step of `env` whose episode goes on: true ends the episode here
  // (then it is not `measured` in EpisodeEnded). Asked in list order until
  // one answers true.
  virtual bool CutEpisode(int64_t env) {
    (void)env;
    return false;
  }
  // Every counted episode of `env`, at global step `t`, before the
  // evaluation that may follow it. `measured`: it ran to its own end (or
  // the trainer's episode limit), not cut by the trainer or an extension.
  virtual void EpisodeEnded(int64_t env, int64_t t, double episode_return,
                            bool measured) {
    (void)env;
    (void)t;
    (void)episode_return;
    (void)measured;
  }
};

class TrainerExtension {
 public:
  virtual ~TrainerExtension() = default;

  // Names the extension in messages.
  virtual std::string Name() const = 0;

  // Parent, before anything else (the trainer's options are valid, nothing
  // is written yet): checks the extension's own options and may change the
  // trainer's for this run (e.g. another seed). Throws InvalidOption
  // (std::invalid_argument) for options that do not fit.
  virtual void AdjustOptions(TrainOptions* options) const { (void)options; }

  // Parent, first: the run's options (this host's) and an evaluation
  // environment (make_env(0, true)) to look at. Throws
  // std::invalid_argument (InvalidOption) for options that do not fit;
  // nothing has been written then. May be called again with the same
  // options (CheckScoresTable configures before the run does).
  virtual void Configure(const TrainOptions& options, Env& probe) {
    (void)options;
    (void)probe;
  }
  // Parent, after every extension's Configure: the run's agent (as
  // make_agent(0) builds it, not yet bound to the shared state), to check
  // it can do what the extension's options ask. Throws InvalidOption
  // naming the extension's option; nothing has been written then.
  virtual void CheckAgent(const Agent& agent) const { (void)agent; }
  // Parent: bytes of the shared region this extension needs (0: none),
  // given the agent's shared sizes.
  virtual size_t SharedBytes(const SharedStateSizes& sizes) const {
    (void)sizes;
    return 0;
  }
  // Parent, before the checkpoint is loaded and before fork: `shared` is
  // SharedBytes() zeroed bytes, 64-byte aligned, mapped at the same address
  // in every process of the run (null when SharedBytes() is 0). Construct
  // the extension's shared state there.
  virtual void Place(void* shared, const RunInfo& run) {
    (void)shared;
    (void)run;
  }
  // Any process, with whatever lock the caller holds: the extension's
  // state into a checkpoint being saved.
  virtual void SaveTo(proto::Checkpoint* checkpoint) const { (void)checkpoint; }
  // Parent, on --resume only: restores the state SaveTo wrote. Throws
  // std::runtime_error saying what is wrong (the caller names the
  // checkpoint).
  virtual void LoadFrom(const proto::Checkpoint& checkpoint) {
    (void)checkpoint;
  }
  // Parent, after the agent and the counters are loaded (or fresh), before
  // fork.
  virtual void Start(const RunInfo& run) { (void)run; }

  // scores.txt: the extension's columns, after the agent's statistics.
  virtual std::vector<std::string> ScoreColumns() const { return {}; }
  // The evaluating worker, when an evaluation at global step `t` begins:
  // appends what its columns record of that moment to `cells`.
  virtual void EvaluationBegins(int64_t t, std::vector<std::string>* cells) {
    (void)t;
    (void)cells;
  }
  // The evaluating worker: an extension that plays the evaluation itself
  // returns the returns the row summarises, appends its cells and may send
  // metrics; std::nullopt leaves it to the next extension or the trainer.
  virtual std::optional<std::vector<double>> Evaluate(
      int64_t t, Agent& agent, Env& env, MetricsChannel* metrics,
      std::vector<std::string>* cells) {
    (void)t;
    (void)agent;
    (void)env;
    (void)metrics;
    (void)cells;
    return std::nullopt;
  }

  // A worker, after its environments are made and before the first reset:
  // its per-worker part (null: none).
  virtual std::unique_ptr<WorkerExtension> StartWorker(const WorkerInfo& w) {
    (void)w;
    return nullptr;
  }

  // Parent, on every tick (about 10 a second): TensorBoard scalars.
  // `periodic`: about once a second, and at the end.
  virtual void Report(EventWriter& events, bool periodic) {
    (void)events;
    (void)periodic;
  }
  // Parent, on a tick after scores.txt changed (an evaluation was
  // recorded; also on the last tick): every row it holds, in file order
  // (ReadScores). A resumed run's earlier rows come first.
  virtual void ScoresRead(const std::vector<ScoreRow>& rows) { (void)rows; }
  // Parent: what the status line adds ("" for nothing), e.g. "best 2.5".
  virtual std::string Status() const { return ""; }

  // Parent, right after the workers are forked.
  virtual void WorkersStarted() {}
  // Parent, when every worker has ended, before the last report.
  virtual void WorkersEnded(const GroupReport& report) { (void)report; }
  // Parent, last: may change how the run ended (exit code, message,
  // whether <step>_except/ is saved and at which step, notes).
  virtual void Conclude(const GroupReport& report, RunEnd* end) {
    (void)report;
    (void)end;
  }
  // Parent, when the run is over however it ended (also when the trainer
  // throws), before the shared region is unmapped: stop what still uses
  // it (threads, pointers into the region).
  virtual void Release() {}
};

// The extensions of a run, in the order their hooks are called and their
// columns appear.
using Extensions = std::vector<std::shared_ptr<TrainerExtension>>;

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_EXTENSION_H_
