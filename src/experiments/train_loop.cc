#include "asyncrl/experiments/train_loop.h"

#include <algorithm>
#include <boost/interprocess/sync/scoped_lock.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "asyncrl/experiments/evaluator.h"
#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/experiments/snapshot.h"
#include "asyncrl/misc/check.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/platform/process_group.h"
#include "asyncrl/misc/seeding.h"
#include "asyncrl/misc/timers.h"

namespace asyncrl {
namespace {

// Worker 0's agent statistics reach TensorBoard at most this often.
constexpr std::chrono::milliseconds kAgentMetricsInterval{100};

// Claims up to `want` global steps; returns the first claimed step number
// (1-based) and sets `granted` (0: the budget is spent). The counter never
// passes `steps`, not even for a moment, so nothing overflows when `steps`
// is INT64_MAX (a fetch_add of `want` then a give-back did).
int64_t ClaimSteps(ControlBlock& control, int64_t steps, int64_t want,
                   int64_t* granted) {
  int64_t before = control.global_step.load();
  while (true) {
    const int64_t available =
        before >= steps ? 0 : std::min<int64_t>(want, steps - before);
    if (available == 0) {
      *granted = 0;
      return before;
    }
    if (control.global_step.compare_exchange_weak(before, before + available)) {
      *granted = available;
      return before + 1;
    }
  }
}

// The loop's view of an agent: act on K rows, then learn from their
// outcome.
class RowLearner {
 public:
  virtual ~RowLearner() = default;
  virtual const std::vector<Action>& Act(FloatView obs, int64_t rows) = 0;
  virtual void Observe(FloatView next_obs, const std::vector<double>& rewards,
                       const std::vector<uint8_t>& terminal,
                       const std::vector<uint8_t>& episode_end,
                       bool end_rollout) = 0;
};

// A BatchAgent, as it is.
class BatchLearner final : public RowLearner {
 public:
  explicit BatchLearner(BatchAgent& agent) : agent_(agent) {}
  const std::vector<Action>& Act(FloatView obs, int64_t rows) override {
    return agent_.BatchActAndTrain(obs, rows);
  }
  void Observe(FloatView next_obs, const std::vector<double>& rewards,
               const std::vector<uint8_t>& terminal,
               const std::vector<uint8_t>& episode_end,
               bool end_rollout) override {
    agent_.BatchObserveAndTrain(next_obs, rewards, terminal, episode_end,
                                end_rollout);
  }

 private:
  BatchAgent& agent_;
};

// A single-environment agent on one row: act_and_train(obs, reward) gets
// the reward of the previous action (0 at an episode start), so the reward
// waits here between Observe and the next Act; an episode end is
// stop_episode_and_train.
class SingleEnvLearner final : public RowLearner {
 public:
  explicit SingleEnvLearner(Agent& agent) : agent_(agent) {}
  const std::vector<Action>& Act(FloatView obs, int64_t rows) override {
    ASYNCRL_CHECK_EQ(rows, 1);
    action_[0] = agent_.ActAndTrain(obs, pending_reward_);
    return action_;
  }
  void Observe(FloatView next_obs, const std::vector<double>& rewards,
               const std::vector<uint8_t>& terminal,
               const std::vector<uint8_t>& episode_end, bool) override {
    if (episode_end[0] != 0) {
      agent_.StopEpisodeAndTrain(next_obs, rewards[0], terminal[0] != 0);
      pending_reward_ = 0;
    } else {
      pending_reward_ = rewards[0];
    }
  }

 private:
  Agent& agent_;
  std::vector<Action> action_ = std::vector<Action>(1);
  double pending_reward_ = 0;
};

class Worker {
 public:
  explicit Worker(WorkerContext& ctx)
      : ctx_(ctx),
        options_(*ctx.options),
        control_(*ctx.control),
        agent_(*ctx.agent) {}

  // Every counted episode passes here once: the "episode_end" timer's count
  // is this worker's number of finished episodes.
  // `measured`: the episode of environment `env` ran to its own end (not
  // cut by the trainer or an extension).
  void EndEpisode(int64_t env, int64_t t, double episode_return,
                  int64_t episode_len, bool measured) {
    ScopedTimer timer("episode_end");
    if (ctx_.metrics != nullptr) {
      ctx_.metrics->Send("train/episode_return", t, episode_return);
      ctx_.metrics->Send("train/episode_length", t,
                         static_cast<double>(episode_len));
    }
    if (ctx_.process_idx == 0) ReportWorkerZero(t, episode_return);
    for (const auto& extension : ctx_.worker_extensions) {
      extension->EpisodeEnded(env, t, episode_return, measured);
    }
    // Without an evaluation environment, the training environment whose
    // episode just ended (the reference's eval_env=None); it is reset
    // after.
    if (ctx_.evaluator != nullptr) {
      ctx_.evaluator->MaybeEvaluate(
          t, agent_,
          ctx_.eval_env != nullptr ? *ctx_.eval_env : *ctx_.envs[env]);
    }
    control_.episodes.fetch_add(1);
  }

  // Worker 0 speaks for the agent: statistics and learning rate to the
  // metrics (at an episode's end, at most every kAgentMetricsInterval: a
  // game's worker ends thousands of episodes a second), and per episode the
  // reference's log lines (at debug).
  void ReportWorkerZero(int64_t t, double episode_return) {
    const bool debug = LogEnabled(LogLevel::kDebug);
    const bool send = ctx_.metrics != nullptr && AgentMetricsDue();
    if (!send && !debug) return;
    const std::vector<Statistic> stats = agent_.Statistics();
    if (send) {
      for (const auto& s : stats) {
        ctx_.metrics->Send(("agent/" + s.name).c_str(), t, s.value);
      }
      if (const auto* lr = dynamic_cast<const LearningRateControl*>(&agent_)) {
        ctx_.metrics->Send("train/lr", t, lr->LearningRate());
      }
    }
    if (debug) {
      // The reference's two lines (at its INFO; here at debug: with 16
      // environments a worker ends hundreds of episodes a second).
      Log(LogLevel::kDebug, "outdir:" + options_.outdir +
                                " global_step:" + std::to_string(t) +
                                " local_step:" + std::to_string(local_steps_) +
                                " R:" + FormatCell(episode_return));
      std::string line = "statistics:[";
      for (size_t i = 0; i < stats.size(); ++i) {
        line += (i ? ", ('" : "('") + stats[i].name + "', " +
                FormatCell(stats[i].value) + ")";
      }
      Log(LogLevel::kDebug, line + "]");
    }
  }

  bool AgentMetricsDue() {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_agent_metrics_) return false;
    next_agent_metrics_ = now + kAgentMetricsInterval;
    return true;
  }

  // Claims up to `want` step numbers: from the run's counter, or from the
  // worker's StepSource.
  int64_t Claim(int64_t want, int64_t* granted) {
    if (ctx_.steps == nullptr) {
      return ClaimSteps(control_, options_.steps, want, granted);
    }
    return ctx_.steps->Claim(want, granted);
  }

  void SaveFinish() {
    SaveSnapshot(agent_, control_, options_, ctx_.extensions,
                 FinishDir(options_.outdir, options_.steps));
  }

  // Saves <t>_checkpoint/ when t is a multiple of the interval. Step
  // numbers from a StepSource are not this run's alone: its extension
  // saves them.
  void MaybeCheckpoint(int64_t t) {
    if (options_.checkpoint_interval <= 0 || ctx_.steps != nullptr ||
        t % options_.checkpoint_interval != 0) {
      return;
    }
    boost::interprocess::scoped_lock<boost::interprocess::interprocess_mutex>
        lock(control_.mutex);
    SaveSnapshot(agent_, control_, options_, ctx_.extensions,
                 CheckpointDir(options_.outdir, t), t);
    PruneCheckpoints(options_.outdir, options_.keep_checkpoints);
  }

  void RunHooks(Env& env, int64_t t) {
    if (ctx_.hooks == nullptr || ctx_.hooks->empty()) return;
    ScopedTimer timer("hooks");
    for (const auto& hook : *ctx_.hooks) hook(env, agent_, t);
  }

  // The first extension that cuts ends the episode; later ones are not
  // asked for this step.
  bool ExtensionCuts(int64_t env) {
    for (const auto& extension : ctx_.worker_extensions) {
      if (extension->CutEpisode(env)) return true;
    }
    return false;
  }

  bool Cut(int64_t len) const {
    return options_.max_episode_len > 0 && len >= options_.max_episode_len;
  }

  // Steps the worker's K environments as one batch until the step budget
  // is spent, a stop or a successful evaluation. K = 1 with a
  // single-environment agent is the reference's act_and_train /
  // stop_episode_and_train loop, through SingleEnvLearner.
  void Run(RowLearner& learner) {
    const int64_t k = options_.envs_per_process;
    rows_.Resize(k, ctx_.envs[0]->ObservationSpace().FlatSize());
    std::vector<uint64_t> seeds(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) {
      seeds[j] = static_cast<uint64_t>(TrainEnvSeed(
          static_cast<int>(ctx_.process_idx * k + j), options_.seed,
          static_cast<int>(options_.processes * k)));
    }
    batch_ = FindBatch();
    if (batch_ != nullptr) {
      ScopedTimer timer("env_step");
      batch_->ResetAll(seeds);
    }
    for (int64_t j = 0; j < k; ++j) {
      rows_.Put(rows_.obs, j, Reset(j, seeds[j]));
    }
    int64_t active = 0;
    int64_t first = Claim(k, &active);
    while (active > 0 && control_.stop.load(std::memory_order_relaxed) == 0) {
      const std::vector<Action>* actions = nullptr;
      {
        ScopedTimer timer("agent");
        actions =
            &learner.Act({rows_.obs.data(), active * rows_.obs_size}, active);
      }
      StepRows(*actions, first, active);
      // Asked to stop (another worker failed, or a signal): leave at once,
      // as the reference's workers do: no last update, no episode counted,
      // no evaluation; the parent saves <t>_except/ from the shared state.
      if (control_.stop.load(std::memory_order_relaxed) != 0) return;
      const int64_t last_t = first - 1 + active;  // No overflow at the end.
      // The budget is spent or an evaluation succeeded: end every episode
      // here, learning from what the rows collected.
      const bool stop_now =
          last_t >= options_.steps || control_.training_done.load() != 0;
      int64_t next_active = 0;
      const int64_t next_first = stop_now ? 0 : Claim(k, &next_active);
      Learn(learner, active, next_active);
      EndRows(first, active, next_active);
      first = next_first;
      active = next_active;
    }
  }

 private:
  // The batch's rows: observations, what the last step gave, each
  // environment's running episode.
  struct Rows {
    int64_t obs_size = 0;
    std::vector<float> obs, next;
    std::vector<double> rewards;
    std::vector<uint8_t> terminal, ended, episode_end;
    // Two-player games whose both sides the agent plays: 1 where the
    // observation acted on (side) / the next one (next_side) is the
    // learner's opponent's turn (StepResult::opponent_turn); `passes` what
    // the agent is told (TurnTaking).
    std::vector<uint8_t> side, next_side, passes;
    std::vector<int64_t> len;
    std::vector<double> returns;
    // Episodes an extension ended (WorkerExtension::CutEpisode).
    std::vector<uint8_t> extension_cut;

    void Resize(int64_t k, int64_t size) {
      obs_size = size;
      obs.assign(k * size, 0.0f);
      next.assign(k * size, 0.0f);
      rewards.assign(k, 0.0);
      terminal.assign(k, 0);
      ended.assign(k, 0);
      episode_end.assign(k, 0);
      side.assign(k, 0);
      next_side.assign(k, 0);
      len.assign(k, 0);
      returns.assign(k, 0.0);
      extension_cut.assign(k, 0);
    }
    void Put(std::vector<float>& dst, int64_t row, FloatView v) const {
      std::memcpy(dst.data() + row * obs_size, v.data,
                  obs_size * sizeof(float));
    }
  };

  // The batch the worker's environments are the copies of, in order (a
  // user's vector environment taken whole), or nullptr.
  EnvBatch* FindBatch() const {
    int64_t copy = 0;
    EnvBatch* batch = ctx_.envs[0]->Batch(&copy);
    if (batch == nullptr) return nullptr;
    const int64_t k = options_.envs_per_process;
    if (batch->Copies() != k) {
      throw std::invalid_argument(
          ctx_.envs[0]->Name() + " is a vector environment of " +
          std::to_string(batch->Copies()) +
          " copies; accepted: envs_per_process=" +
          std::to_string(batch->Copies()) + " (is " + std::to_string(k) + ")");
    }
    if (ctx_.evaluator != nullptr && ctx_.eval_env == nullptr) {
      throw std::invalid_argument(
          ctx_.envs[0]->Name() +
          " is a vector environment: its copies cannot be evaluated on "
          "their own; accepted: an evaluation environment (make_env with "
          "test=true) or no evaluation");
    }
    for (int64_t j = 0; j < k; ++j) {
      if (ctx_.envs[j]->Batch(&copy) != batch || copy != j) {
        throw std::logic_error(
            ctx_.envs[0]->Name() + ": environment " + std::to_string(j) +
            " of the worker is not copy " + std::to_string(j) +
            " of the first one's vector environment");
      }
    }
    return batch;
  }

  FloatView Reset(int64_t j, std::optional<uint64_t> seed) {
    for (const auto& extension : ctx_.worker_extensions) {
      extension->BeforeReset(j, *ctx_.envs[j]);
    }
    return ctx_.envs[j]->Reset(seed);
  }

  // Steps environments 0..active-1 with their actions (global steps
  // first..first+active-1): hooks, checkpoints, episode ends.
  void StepRows(const std::vector<Action>& actions, int64_t first,
                int64_t active) {
    if (batch_ != nullptr) {
      // Every action checked first: the copies step at once.
      for (int64_t j = 0; j < active; ++j) {
        ctx_.envs[j]->ValidateAction(actions[j]);
      }
      ScopedTimer timer("env_step");
      batch_->StepAll(actions, active);
    }
    for (int64_t j = 0; j < active; ++j) {
      Env& env = *ctx_.envs[j];
      StepResult r;
      if (batch_ == nullptr) {
        ScopedTimer timer("env_step");
        r = env.Step(actions[j]);
      } else {
        r = env.Step(actions[j]);  // Its part of StepAll's (timed) step.
      }
      ++rows_.len[j];
      ++local_steps_;
      rows_.returns[j] += r.reward;
      RunHooks(env, first + j);
      MaybeCheckpoint(first + j);
      rows_.Put(rows_.next, j, r.observation);
      // The agent learns each row's mover's reward; the episode's return
      // stays the learner's.
      rows_.rewards[j] = rows_.side[j] != 0 ? -r.reward : r.reward;
      rows_.next_side[j] = r.opponent_turn;
      rows_.terminal[j] = r.terminated;
      rows_.extension_cut[j] =
          !r.Done() && !Cut(rows_.len[j]) && ExtensionCuts(j);
      rows_.ended[j] = r.Done() || Cut(rows_.len[j]) || rows_.extension_cut[j];
    }
    ReportWorkerProgress();  // Once a batch: cheap, and often enough.
  }

  // The agent learns from the batch. A smaller next batch starts a new
  // rollout: the agent learns from this one now. Rows past the next
  // batch's size end their episodes here (cut by the trainer); the others
  // go on. The agent takes exactly `active` rows (fewer only in the last
  // batch).
  void Learn(RowLearner& learner, int64_t active, int64_t next_active) {
    const bool end_rollout = next_active < active;
    rows_.rewards.resize(active);
    rows_.terminal.resize(active);
    rows_.episode_end.resize(active);
    for (int64_t j = 0; j < active; ++j) {
      rows_.episode_end[j] = rows_.ended[j] || j >= next_active;
    }
    ScopedTimer timer("agent");
    TellTurns(active);
    learner.Observe({rows_.next.data(), active * rows_.obs_size}, rows_.rewards,
                    rows_.terminal, rows_.episode_end, end_rollout);
    ReportWorkerProgress();
  }

  // Rows that played or pass to the learner's opponent's turn: the agent
  // is told which rows' successors are the other player's (TurnTaking).
  void TellTurns(int64_t active) {
    bool turns = false;
    rows_.passes.assign(active, 0);
    for (int64_t j = 0; j < active; ++j) {
      turns = turns || rows_.side[j] != 0 || rows_.next_side[j] != 0;
      rows_.passes[j] =
          !rows_.terminal[j] && rows_.side[j] != rows_.next_side[j];
    }
    if (!turns) return;
    auto* turn_taking = dynamic_cast<TurnTaking*>(&agent_);
    if (turn_taking == nullptr) {
      throw std::invalid_argument(
          "environment '" + ctx_.envs[0]->Name() +
          "' hands the opponent's turns to the agent (both sides trained), "
          "but agent type '" +
          agent_.Type() +
          "' cannot learn both sides of a game; accepted: an agent that "
          "implements TurnTaking (agents/agent.h)");
    }
    turn_taking->NextTurnPasses(rows_.passes);
  }

  // Counts the episodes that ended (saving <steps>_finish/ at the last
  // step), resets their environments, carries the others' observations.
  void EndRows(int64_t first, int64_t active, int64_t next_active) {
    for (int64_t j = 0; j < active; ++j) {
      const bool cut_by_trainer = j >= next_active;
      if (rows_.ended[j] || cut_by_trainer) {
        EndEpisode(j, first + j, rows_.returns[j], rows_.len[j],
                   /*measured=*/!cut_by_trainer && !rows_.extension_cut[j]);
        if (first + j == options_.steps && ctx_.steps == nullptr) {
          SaveFinish();
        }
        rows_.len[j] = 0;
        rows_.returns[j] = 0;
        rows_.side[j] = 0;  // Every episode starts on the learner's turn.
        if (!cut_by_trainer) rows_.Put(rows_.obs, j, Reset(j, std::nullopt));
      } else {
        rows_.side[j] = rows_.next_side[j];
        rows_.Put(rows_.obs, j,
                  {rows_.next.data() + j * rows_.obs_size, rows_.obs_size});
      }
    }
  }

  WorkerContext& ctx_;
  const TrainOptions& options_;
  ControlBlock& control_;
  Agent& agent_;
  int64_t local_steps_ = 0;
  Rows rows_;
  EnvBatch* batch_ = nullptr;
  std::chrono::steady_clock::time_point next_agent_metrics_{};
};

}  // namespace

void TrainLoop(WorkerContext& ctx) {
  if (ctx.options == nullptr || ctx.control == nullptr ||
      ctx.agent == nullptr ||
      static_cast<int>(ctx.envs.size()) != ctx.options->envs_per_process) {
    throw std::invalid_argument(
        "TrainLoop: context needs options, control, agent and " +
        std::string("envs_per_process environments"));
  }
  if (ctx.eval_env != nullptr) {
    ctx.eval_env->Reset(EvalEnvSeed(ctx.process_idx, ctx.options->seed,
                                    ctx.options->processes));
  }
  Worker worker(ctx);
  if (auto* batch_agent = dynamic_cast<BatchAgent*>(ctx.agent)) {
    BatchLearner learner(*batch_agent);
    worker.Run(learner);
  } else if (ctx.options->envs_per_process == 1) {
    SingleEnvLearner learner(*ctx.agent);
    worker.Run(learner);
  } else {
    throw std::invalid_argument(
        "envs_per_process=" + std::to_string(ctx.options->envs_per_process) +
        " needs an agent that acts on batches; agent type '" +
        ctx.agent->Type() + "' does not (accepted: envs_per_process=1)");
  }
}

}  // namespace asyncrl
