#include "asyncrl/experiments/train_loop.h"

#include <algorithm>
#include <boost/interprocess/sync/scoped_lock.hpp>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "asyncrl/experiments/snapshot.h"
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

class Worker {
 public:
  explicit Worker(WorkerContext& ctx)
      : ctx_(ctx),
        options_(*ctx.options),
        control_(*ctx.control),
        agent_(*ctx.agent) {}

  // Every counted episode passes here once: the "episode_end" timer's count
  // is this worker's number of finished episodes.
  void EndEpisode(int64_t t, double episode_return, int64_t episode_len) {
    ScopedTimer timer("episode_end");
    if (ctx_.metrics != nullptr) {
      ctx_.metrics->Send("train/episode_return", t, episode_return);
      ctx_.metrics->Send("train/episode_length", t,
                         static_cast<double>(episode_len));
    }
    if (ctx_.process_idx == 0) ReportWorkerZero(t, episode_return);
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

  void SaveFinish() {
    SaveSnapshot(agent_, control_, options_,
                 (std::filesystem::path(options_.outdir) /
                  (std::to_string(options_.steps) + "_finish"))
                     .string());
  }

  // Saves <t>_checkpoint/ when t is a multiple of the interval.
  void MaybeCheckpoint(int64_t t) {
    if (options_.checkpoint_interval <= 0 ||
        t % options_.checkpoint_interval != 0) {
      return;
    }
    boost::interprocess::scoped_lock<boost::interprocess::interprocess_mutex>
        lock(control_.mutex);
    SaveSnapshot(agent_, control_, options_,
                 (std::filesystem::path(options_.outdir) /
                  (std::to_string(t) + "_checkpoint"))
                     .string());
    PruneCheckpoints(options_.outdir, options_.keep_checkpoints);
  }

  void RunHooks(Env& env, int64_t t) {
    if (ctx_.hooks == nullptr || ctx_.hooks->empty()) return;
    ScopedTimer timer("hooks");
    for (const auto& hook : *ctx_.hooks) hook(env, agent_, t);
  }

  bool Cut(int64_t len) const {
    return options_.max_episode_len > 0 && len >= options_.max_episode_len;
  }

  // K = 1: the reference's act_and_train / stop_episode_and_train loop.
  void RunSingle() {
    Env& env = *ctx_.envs[0];
    FloatView obs = env.Reset(
        TrainEnvSeed(ctx_.process_idx, options_.seed, options_.processes));
    double reward = 0;
    double episode_return = 0;
    int64_t len = 0;
    while (control_.stop.load(std::memory_order_relaxed) == 0) {
      int64_t granted = 0;
      const int64_t t = ClaimSteps(control_, options_.steps, 1, &granted);
      if (granted == 0) {  // Others took the last steps.
        if (len > 0) {
          {
            ScopedTimer timer("agent");
            agent_.StopEpisodeAndTrain(obs, reward, false);
          }
          EndEpisode(options_.steps, episode_return, len);
        }
        return;
      }
      Action action;
      {
        ScopedTimer timer("agent");
        action = agent_.ActAndTrain(obs, reward);
      }
      StepResult r;
      {
        ScopedTimer timer("env_step");
        r = env.Step(action);
      }
      ++len;
      ++local_steps_;
      RunHooks(env, t);
      MaybeCheckpoint(t);
      obs = r.observation;
      reward = r.reward;
      episode_return += r.reward;
      const bool last = t >= options_.steps || control_.training_done.load();
      if (!(r.Done() || Cut(len) || last)) continue;
      {
        ScopedTimer timer("agent");
        agent_.StopEpisodeAndTrain(obs, reward, r.terminated);
      }
      EndEpisode(t, episode_return, len);
      if (t == options_.steps) SaveFinish();
      if (last) return;
      obs = env.Reset();
      reward = 0;
      episode_return = 0;
      len = 0;
    }
  }

  // K > 1: step K environments as one batch.
  void RunBatch() {
    auto* batch_agent = dynamic_cast<BatchAgent*>(&agent_);
    if (batch_agent == nullptr) {
      throw std::invalid_argument(
          "envs_per_process=" + std::to_string(options_.envs_per_process) +
          " needs an agent that acts on batches; agent type '" + agent_.Type() +
          "' does not (accepted: envs_per_process=1)");
    }
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
    auto put = [obs_size](std::vector<float>& dst, int64_t row, FloatView v) {
      std::memcpy(dst.data() + row * obs_size, v.data,
                  obs_size * sizeof(float));
    };
    for (int64_t j = 0; j < k; ++j) {
      put(obs, j,
          ctx_.envs[j]->Reset(TrainEnvSeed(
              static_cast<int>(ctx_.process_idx * k + j), options_.seed,
              static_cast<int>(options_.processes * k))));
    }
    int64_t active = 0;
    int64_t first = ClaimSteps(control_, options_.steps, k, &active);
    while (active > 0 && control_.stop.load(std::memory_order_relaxed) == 0) {
      const std::vector<Action>* actions = nullptr;
      {
        ScopedTimer timer("agent");
        actions = &batch_agent->BatchActAndTrain(
            {obs.data(), active * obs_size}, active);
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
        ended[j] = r.Done() || Cut(len[j]);
      }
      const int64_t last_t = first + active - 1;
      const bool stop_now = last_t >= options_.steps ||
                            control_.training_done.load() != 0 ||
                            control_.stop.load() != 0;
      int64_t next_active = 0;
      const int64_t next_first =
          stop_now ? 0 : ClaimSteps(control_, options_.steps, k, &next_active);
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
        batch_agent->BatchObserveAndTrain({next.data(), active * obs_size},
                                          rewards, terminal, episode_end,
                                          end_rollout);
      }
      for (int64_t j = 0; j < active; ++j) {
        const bool cut_by_trainer = j >= next_active;
        if (ended[j] || cut_by_trainer) {
          EndEpisode(first + j, returns[j], len[j]);
          if (first + j == options_.steps) SaveFinish();
          len[j] = 0;
          returns[j] = 0;
          if (!cut_by_trainer) put(obs, j, ctx_.envs[j]->Reset());
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
  if (ctx.options->envs_per_process == 1) {
    worker.RunSingle();
  } else {
    worker.RunBatch();
  }
}

}  // namespace asyncrl
