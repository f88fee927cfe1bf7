#include "asyncrl/experiments/train_loop.h"

#include <algorithm>
#include <boost/interprocess/sync/scoped_lock.hpp>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/experiments/snapshot.h"
#include "asyncrl/misc/check.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/seeding.h"
#include "asyncrl/misc/timers.h"

namespace asyncrl {
namespace {

// Claims up to `want` global steps; returns the first claimed step number
// (1-based) and sets `granted`. The counter never passes `steps`.
int64_t ClaimSteps(ControlBlock& control, int64_t steps, int64_t want,
                   int64_t* granted) {
  const int64_t before = control.global_step.fetch_add(want);
  const int64_t available = std::clamp<int64_t>(steps - before, 0, want);
  if (available < want) control.global_step.fetch_sub(want - available);
  *granted = available;
  return before + 1;
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
    if (ctx_.evaluator != nullptr && ctx_.eval_env != nullptr) {
      ctx_.evaluator->MaybeEvaluate(t, agent_, *ctx_.eval_env);
    }
    control_.episodes.fetch_add(1);
  }

  // Worker 0 speaks for the agent: statistics and learning rate to the
  // metrics, and a debug log line per episode as the reference does.
  void ReportWorkerZero(int64_t t, double episode_return) {
    const bool debug = LogEnabled(LogLevel::kDebug);
    if (ctx_.metrics == nullptr && !debug) return;
    const std::vector<Statistic> stats = agent_.Statistics();
    if (ctx_.metrics != nullptr) {
      for (const auto& s : stats) {
        ctx_.metrics->Send(("agent/" + s.name).c_str(), t, s.value);
      }
      if (const auto* lr = dynamic_cast<const LearningRateControl*>(&agent_)) {
        ctx_.metrics->Send("train/lr", t, lr->LearningRate());
      }
    }
    if (debug) {
      std::string line = "worker 0: global_step " + std::to_string(t) +
                         " local_step " + std::to_string(local_steps_) +
                         " return " + std::to_string(episode_return);
      for (const auto& s : stats) {
        line += " " + s.name + " " + std::to_string(s.value);
      }
      Log(LogLevel::kDebug, line);
    }
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
                 CheckpointDir(options_.outdir, t));
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
    const int64_t obs_size = ctx_.envs[0]->ObservationSpace().FlatSize();
    std::vector<float> obs(k * obs_size);
    std::vector<float> next(k * obs_size);
    std::vector<double> rewards(k);
    std::vector<uint8_t> terminal(k);
    std::vector<uint8_t> ended(k);
    std::vector<uint8_t> episode_end(k);
    std::vector<int64_t> len(k, 0);
    std::vector<double> returns(k, 0.0);
    // Episodes an extension ended (WorkerExtension::CutEpisode).
    std::vector<uint8_t> extension_cut(k, 0);
    auto reset = [&](int64_t j, std::optional<uint64_t> seed) {
      for (const auto& extension : ctx_.worker_extensions) {
        extension->BeforeReset(j, *ctx_.envs[j]);
      }
      return ctx_.envs[j]->Reset(seed);
    };
    auto put = [obs_size](std::vector<float>& dst, int64_t row, FloatView v) {
      std::memcpy(dst.data() + row * obs_size, v.data,
                  obs_size * sizeof(float));
    };
    for (int64_t j = 0; j < k; ++j) {
      put(obs, j,
          reset(j, TrainEnvSeed(static_cast<int>(ctx_.process_idx * k + j),
                                options_.seed,
                                static_cast<int>(options_.processes * k))));
    }
    int64_t active = 0;
    int64_t first = Claim(k, &active);
    while (active > 0 && control_.stop.load(std::memory_order_relaxed) == 0) {
      const std::vector<Action>* actions = nullptr;
      {
        ScopedTimer timer("agent");
        actions = &learner.Act({obs.data(), active * obs_size}, active);
      }
      for (int64_t j = 0; j < active; ++j) {
        Env& env = *ctx_.envs[j];
        StepResult r;
        {
          ScopedTimer timer("env_step");
          r = env.Step((*actions)[j]);
        }
        ++len[j];
        ++local_steps_;
        returns[j] += r.reward;
        RunHooks(env, first + j);
        MaybeCheckpoint(first + j);
        put(next, j, r.observation);
        rewards[j] = r.reward;
        terminal[j] = r.terminated;
        extension_cut[j] = !r.Done() && !Cut(len[j]) && ExtensionCuts(j);
        ended[j] = r.Done() || Cut(len[j]) || extension_cut[j];
      }
      // Asked to stop (another worker failed, or a signal): leave at once,
      // as the reference's workers do: no last update, no episode counted,
      // no evaluation; the parent saves <t>_except/ from the shared state.
      if (control_.stop.load(std::memory_order_relaxed) != 0) return;
      const int64_t last_t = first + active - 1;
      // The budget is spent or an evaluation succeeded: end every episode
      // here, learning from what the rows collected.
      const bool stop_now =
          last_t >= options_.steps || control_.training_done.load() != 0;
      int64_t next_active = 0;
      const int64_t next_first = stop_now ? 0 : Claim(k, &next_active);
      // A smaller next batch starts a new rollout: the agent learns from
      // this one now. Rows past the next batch's size end their episodes
      // here (cut by the trainer); the others go on.
      const bool end_rollout = next_active < active;
      // The agent takes exactly `active` rows (fewer only in the last batch).
      rewards.resize(active);
      terminal.resize(active);
      episode_end.resize(active);
      for (int64_t j = 0; j < active; ++j) {
        episode_end[j] = ended[j] || j >= next_active;
      }
      {
        ScopedTimer timer("agent");
        learner.Observe({next.data(), active * obs_size}, rewards, terminal,
                        episode_end, end_rollout);
      }
      for (int64_t j = 0; j < active; ++j) {
        const bool cut_by_trainer = j >= next_active;
        if (ended[j] || cut_by_trainer) {
          EndEpisode(j, first + j, returns[j], len[j],
                     /*measured=*/!cut_by_trainer && !extension_cut[j]);
          if (first + j == options_.steps && ctx_.steps == nullptr) {
            SaveFinish();
          }
          len[j] = 0;
          returns[j] = 0;
          if (!cut_by_trainer) put(obs, j, reset(j, std::nullopt));
        } else {
          put(obs, j, {next.data() + j * obs_size, obs_size});
        }
      }
      first = next_first;
      active = next_active;
    }
  }

 private:
  WorkerContext& ctx_;
  const TrainOptions& options_;
  ControlBlock& control_;
  Agent& agent_;
  int64_t local_steps_ = 0;
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
