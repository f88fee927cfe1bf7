// The agent interface the trainer drives, in the C++ form of the reference's
// act / act_and_train / stop_episode_and_train, plus the declaration of the
// state an agent keeps in shared memory (model parameters, optimizer
// statistics) so the trainer can place it in the shared region before fork.
#ifndef ASYNCRL_AGENTS_AGENT_H_
#define ASYNCRL_AGENTS_AGENT_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "asyncrl/misc/space.h"
#include "asyncrl/proto/checkpoint.pb.h"

namespace asyncrl {

class ObservationNormalizer;

// A named value an agent reports (scores.txt columns, logs).
struct Statistic {
  std::string name;
  double value = 0.0;
};

// Sizes, in floats, of the state an agent keeps in shared memory.
struct SharedStateSizes {
  int64_t params = 0;     // Floats.
  int64_t optimizer = 0;  // Floats.
  // Bytes of any other state the agent shares (e.g. running observation
  // statistics); the area is 64-byte aligned and zeroed.
  int64_t state_bytes = 0;
};

// Counters every worker's agent updates (lock-free, so they work across
// processes): the number of updates applied to the shared parameters, and
// the sum of the policy lags of those updates (for each, the updates other
// workers applied between its rollout's first action and its own).
struct SharedCounters {
  alignas(64) std::atomic<int64_t> updates{0};
  std::atomic<int64_t> policy_lag_sum{0};
};
static_assert(std::atomic<int64_t>::is_always_lock_free,
              "64-bit atomics must be lock-free to be shared across processes");

// Shared buffers of SharedStateSizes' sizes and the counters; owned by the
// trainer's region. `counters` may be null: the agent keeps its own.
struct SharedBuffers {
  float* params = nullptr;
  float* optimizer = nullptr;
  SharedCounters* counters = nullptr;
  void* state = nullptr;  // SharedStateSizes::state_bytes; null if 0.
};

// One agent per process; not thread-safe. Returned actions (and the float
// views inside them) stay valid until the agent's next call.
class Agent {
 public:
  virtual ~Agent() = default;
  Agent() = default;
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // A short type name stored in checkpoints ("a3c").
  virtual std::string Type() const = 0;

  // Chooses an action for evaluation: no learning, no exploration state
  // touched.
  virtual Action Act(FloatView obs) = 0;
  // Receives the reward of the previous action (0 at an episode start),
  // learns when due, and chooses the next action.
  virtual Action ActAndTrain(FloatView obs, double reward) = 0;
  // Ends a training episode: `obs` is the last observation, `reward` the last
  // reward, `terminal` whether `obs` is a terminal state (no bootstrapping).
  virtual void StopEpisodeAndTrain(FloatView obs, double reward,
                                   bool terminal) = 0;
  // Ends an evaluation episode.
  virtual void StopEpisode() = 0;

  // Statistics in a fixed order of names.
  virtual std::vector<Statistic> Statistics() const = 0;

  // Shared state. The trainer asks for the sizes, maps the region, then binds
  // every process's agent to it: the parent's with initialize=true (its
  // current state is copied into the buffers), the workers' with
  // initialize=false (they adopt the buffers' state). After binding, learning
  // updates the shared state (Hogwild) and Save/Load use it.
  virtual SharedStateSizes SharedSizes() const = 0;
  virtual void BindShared(SharedBuffers buffers, bool initialize) = 0;
  // Running statistics the agent keeps in its shared state area
  // (agents/observation_normalizer.h: observation or return statistics),
  // in a fixed order. Several hosts (--nnodes) combine them at each round,
  // after BindShared; an agent returning none runs on several hosts with
  // each host's state area its own.
  virtual std::vector<ObservationNormalizer*> SharedStatistics() { return {}; }

  // Writes parameters and optimizer state into `checkpoint`.
  virtual void SaveTo(proto::Checkpoint* checkpoint) const = 0;
  // SaveTo, with the parameters this process acts with: what an evaluation
  // in it measured (best/, successful/). An agent that acts with the
  // shared parameters themselves (the default) saves those.
  virtual void SaveActingTo(proto::Checkpoint* checkpoint) const {
    SaveTo(checkpoint);
  }
  // Restores them; throws std::runtime_error naming the first mismatch.
  virtual void LoadFrom(const proto::Checkpoint& checkpoint) = 0;

  // A checkpoint directory holding only this agent's state (no trainer
  // counters); see misc/checkpoint.h for the format.
  void Save(const std::string& dir) const;
  void Load(const std::string& dir);
};

// An agent that can also step K environments as one batch
// (--envs-per-process K > 1). Row k of each batch belongs to environment k.
class BatchAgent : public Agent {
 public:
  // Chooses one action per row of `obs` (K rows of the observation size),
  // after learning from the previous batch's outcome when due.
  virtual const std::vector<Action>& BatchActAndTrain(FloatView obs,
                                                      int64_t batch_size) = 0;
  // The outcome of the last batch of actions: the next observations (for
  // rows whose episode ended, the last observation of that episode), the
  // rewards, and per row whether the state is terminal and whether the
  // episode ended (terminal, time limit, or cut by the trainer).
  // `end_rollout`: learn from what was collected now, even for rows whose
  // episode goes on (the trainer is about to change the batch size, e.g. in
  // the last batch of a run); those rows keep their episode state.
  virtual void BatchObserveAndTrain(FloatView next_obs,
                                    const std::vector<double>& rewards,
                                    const std::vector<uint8_t>& terminal,
                                    const std::vector<uint8_t>& episode_end,
                                    bool end_rollout) = 0;
};

// Agents that can sample an action whatever their evaluation setting
// (A3COptions::act_deterministically): self-play opponents in training
// sample, as a greedy opponent is beaten by one line of play.
class SampledActing {
 public:
  virtual ~SampledActing() = default;
  // As Agent::Act, drawing from the policy.
  virtual Action ActSampled(FloatView obs) = 0;
  // Reseeds the generator the draws come from (agents made with the same
  // seed, such as a worker's opponents, must not draw alike).
  virtual void SeedSampling(uint64_t seed) = 0;
};

// Agents that learn both sides of a two-player zero-sum game from one
// rollout (StepResult::opponent_turn: the agent plays the opponent's turns
// too). A position's value counts for the player to move, so a row whose
// successor (the next row, or the bootstrap observation) is the other
// player's turn bootstraps from that successor's value negated (negamax),
// and its reward is the mover's.
class TurnTaking {
 public:
  virtual ~TurnTaking() = default;
  // Why this agent cannot learn from such rows (e.g. a recurrent model: its
  // state would run through both players' turns); empty when it can.
  virtual std::string TurnTakingRefusal() const = 0;
  // Called before BatchObserveAndTrain, when the batch's rows include
  // another player's turns: per row, 1 where the next observation is the
  // other player's turn. The rewards then given are each row's mover's.
  virtual void NextTurnPasses(const std::vector<uint8_t>& passes) = 0;
};

// Agents whose learning rate a hook can schedule.
class LearningRateControl {
 public:
  virtual ~LearningRateControl() = default;
  virtual double LearningRate() const = 0;
  virtual void SetLearningRate(double lr) = 0;
};

// Agents whose entropy weight (beta) a hook can schedule.
class EntropyWeightControl {
 public:
  virtual ~EntropyWeightControl() = default;
  virtual double EntropyWeight() const = 0;
  virtual void SetEntropyWeight(double beta) = 0;
};

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_AGENT_H_
