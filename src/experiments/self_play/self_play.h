// Self-play for two-player games (envs/games/) in the asynchronous trainer,
// after Unity ML-Agents' ghost trainer and HandyRL's evaluation:
//  - a pool of past parameter snapshots in the shared region: a worker that
//    starts an episode after each --snapshot-interval global steps copies
//    the shared parameters into the oldest of --snapshot-window slots
//    (a per-slot sequence lock: readers never block the learner, and retry
//    a slot being rewritten);
//  - each training episode's opponent: the latest shared policy with
//    probability --play-against-latest-ratio, else a snapshot drawn
//    uniformly from the pool;
//  - ratings as ML-Agents' ghost trainer keeps them: after every game
//    against a snapshot, the learner's R += c and the snapshot's rating -=
//    c, c = K (S - E), E = 1 / (1 + 10^((R_snap - R) / 400)), S = 1 / 0.5 /
//    0 for a win / draw / loss (R_snap read as the game ends); a new
//    snapshot starts with the learner's rating then; both start at
//    --initial-elo;
//  - evaluation against fixed opponents (envs/games/opponents.h), both sides
//    equally, win/draw/loss per opponent.
// Pool, ratings and the snapshot schedule are saved in checkpoints and
// restored by --resume (ML-Agents loses its pool on resume).
#ifndef ASYNCRL_EXPERIMENTS_SELF_PLAY_SELF_PLAY_H_
#define ASYNCRL_EXPERIMENTS_SELF_PLAY_SELF_PLAY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "asyncrl/agents/agent.h"
#include "asyncrl/envs/games/self_play_env.h"
#include "asyncrl/misc/flag_spec.h"
#include "asyncrl/proto/checkpoint.pb.h"

namespace asyncrl {

struct SelfPlayOptions {
  static constexpr int kMaxWindow = 64;
  // Probability that a training episode's opponent is the latest policy
  // rather than a snapshot; [0, 1].
  double play_against_latest_ratio = 0.5;
  // Global steps between snapshots, >= 1.
  int64_t snapshot_interval = 20000;
  // Snapshots kept, [1, kMaxWindow].
  int snapshot_window = 10;
  // ELO K-factor, > 0.
  double elo_k = 16.0;
  // Global steps a training environment keeps its opponent (ML-Agents'
  // swap_steps) before drawing another; 0: a new draw every game.
  int64_t swap_steps = 0;
  // The learner's (and so the first snapshot's) rating at the start
  // (ML-Agents' initial_elo); finite.
  double initial_elo = 1200.0;
  // Fixed opponents of evaluations, comma-separated MakeFixedOpponent specs,
  // weakest first ("" = DefaultEvalOpponents of the game).
  std::string eval_opponents;
  // What the evaluation mean (scores.txt's mean, best/, --successful-score)
  // is: "last", the learner's mean result (win 1, draw 0, loss -1) against
  // the last opponent; "total", its mean result over every opponent's
  // games (HandyRL's total: scores.txt's `total` column is (mean + 1) / 2).
  std::string eval_score = "last";
  // The learner's side in training episodes: alternate, random, first,
  // second.
  std::string learner_side = "alternate";
  // Whose moves are rows of the rollout in games against the latest
  // policy: "both" (the agent plays both sides and learns from every move,
  // each row's value from the mover's point of view: HandyRL's turn-based
  // training; needs an agent that takes turns, TurnTaking) or "learner"
  // (the learner's side; a copy of the latest parameters plays the other).
  // Games against snapshots and fixed opponents train the learner's side
  // only either way. train_a3c takes "learner" for recurrent archs and
  // programs' own agents unless the flag is given.
  std::string train_sides = "both";
  bool TrainsBothSides() const { return train_sides == "both"; }

  // Throws InvalidOption naming the field, the value and what is accepted.
  void Validate() const;
  FlagSpecs Flags();
  // eval_opponents as a list, the game's defaults when empty; throws
  // InvalidOption for an unknown opponent.
  std::vector<std::string> EvalOpponents(const std::string& game) const;
};

// E, the learner's expected score against an opponent of rating `opponent`.
double EloExpected(double learner, double opponent);
// The learner's new rating after a game of result `learner_result` (1, 0,
// -1).
double EloUpdate(double learner, double opponent, double learner_result,
                 double k);

struct SelfPlayBlock;
// Rates one game of the learner against the snapshot numbered `number`
// that was read from slot `index` (ML-Agents' compute_elo_rating_changes):
// the change moves the learner's rating up and the snapshot's down by the
// same amount, the snapshot's rating read now (other workers' games move it
// too). A slot rewritten since (a newer snapshot in it) is not debited; the
// learner is rated against the rating read at the game's start,
// `rating_at_start`. Lock-free. Returns the change.
double RateGame(SelfPlayBlock& block, int64_t index, int64_t number,
                double rating_at_start, double learner_result, double k);

// Lives in the ControlBlock (shared by every process of the run). The pool's
// floats are elsewhere in the region (SharedRegion::pool()); `pool` points
// at them in every process (the mapping is inherited at the same address).
struct SelfPlayBlock {
  struct Slot {
    // Even: stable; odd: being written. Bumped twice per write.
    std::atomic<int64_t> sequence{0};
    std::atomic<int64_t> step{0};     // The global step of the copy.
    std::atomic<int64_t> number{0};   // 1-based: the n-th snapshot taken.
    std::atomic<double> elo{1200.0};  // The learner's ELO then.
  };
  std::atomic<int32_t> enabled{0};
  std::atomic<double> elo{1200.0};
  std::atomic<int64_t> taken{0};        // Snapshot numbers claimed.
  std::atomic<int64_t> positions{0};    // Slot positions claimed.
  std::atomic<int64_t> filled{0};       // Positions whose copy is done.
  std::atomic<int64_t> next_step{0};    // The next snapshot is due here.
  std::atomic<int64_t> rated_games{0};  // Games against snapshots.
  Slot slots[SelfPlayOptions::kMaxWindow];
  float* pool = nullptr;  // window * params floats.
  int64_t params = 0;
  int32_t window = 0;
  int64_t interval = 0;
};

// The pool's operations on a SelfPlayBlock; any process of the run.
class SnapshotPool {
 public:
  explicit SnapshotPool(SelfPlayBlock& block) : block_(block) {}

  // Slots filled: min(copies done, window).
  int64_t Size() const;
  // If `step` reached the next due step and this caller wins the claim,
  // copies `params` into the oldest slot (rated with the learner's ELO now)
  // and returns true. Lock-free; concurrent callers copy at most once per
  // due step.
  bool MaybeTake(const float* params, int64_t step);
  // Claims the next snapshot number and slot and copies `params` there
  // (the run's first snapshot). Concurrent callers get distinct numbers
  // and slots; false (nothing copied) only if the slot's previous writer,
  // a whole window of snapshots earlier, is still copying.
  bool Take(const float* params, int64_t step, double elo);
  // Copies slot `index` (0 <= index < Size()) into `out`, its rating into
  // *elo and its number into *number; false if the slot is empty or was
  // being rewritten throughout `tries` attempts (yielding between them).
  bool Read(int64_t index, float* out, double* elo, int64_t* number,
            int tries = 8) const;
  // Slot `index`'s rating, if it holds snapshot `number` and is not being
  // rewritten.
  bool Rating(int64_t index, int64_t number, double* elo) const;
  // Subtracts `change` from slot `index`'s rating if it still holds
  // snapshot `number` (a rewrite racing with it may keep or lose the
  // debit: the snapshot it was meant for is gone either way).
  void Debit(int64_t index, int64_t number, double change);

  // Every filled slot, oldest first (a slot being rewritten is waited for,
  // up to about a second; one that stays busy is left out with a warning).
  void SaveTo(proto::Checkpoint* checkpoint) const;
  // Restores pool (its newest `window` snapshots, into slots 0, 1, ...),
  // ratings and schedule; throws std::runtime_error naming what is wrong
  // when a snapshot's size does not match the agent's or the numbers are
  // not increasing within 1..taken.
  void LoadFrom(const proto::Checkpoint& checkpoint);

 private:
  bool Store(const float* params, int64_t step, double elo, int64_t number);
  SelfPlayBlock& block_;
};

// A network plays: the agent's action for the observation of the player to
// move (as SelfPlayEnv builds it for the learner), sampled when the agent
// can (SampledActing) and `sample` is set, else Agent::Act.
class AgentOpponent : public GameOpponent {
 public:
  AgentOpponent(std::string name, Agent* agent, bool sample);
  std::string Name() const override { return name_; }
  int64_t Choose(const Game& game, std::mt19937_64& rng) override;
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  std::string name_;
  Agent* agent_;
  SampledActing* sampled_;  // Null: Agent::Act.
  std::vector<float> obs_;
};

// One training environment's opponents: an agent of its own (never the
// learner's: its actions and scratch belong to the batch being stepped)
// that plays, for one episode, a copy of the latest shared parameters or a
// snapshot from the pool, sampling its actions; with --train-sides both,
// the latest policy is the learner itself (BeginEpisode returns null).
// Takes the snapshots that fall due at its episode starts. One per
// environment.
class SelfPlayProvider : public OpponentProvider {
 public:
  // `make_agent` builds the opponent's agent (lazily, once);
  // `shared_params` is the run's shared parameter buffer; `global_step`
  // the run's counter.
  SelfPlayProvider(const SelfPlayOptions& options, SelfPlayBlock& block,
                   std::function<std::unique_ptr<Agent>()> make_agent,
                   const float* shared_params,
                   const std::atomic<int64_t>& global_step, uint64_t seed);

  GameOpponent* BeginEpisode(int learner_side) override;
  void EndEpisode(double learner_result) override;

  // Episodes against the latest policy and against snapshots so far.
  int64_t latest_episodes() const { return latest_episodes_; }
  int64_t snapshot_episodes() const { return snapshot_episodes_; }

 private:
  void EnsureAgent();
  // An episode against the latest policy: a fresh copy for the agent, or
  // null when the learner plays both sides.
  GameOpponent* Latest();

  const SelfPlayOptions& options_;
  SelfPlayBlock& block_;
  SnapshotPool pool_;
  std::function<std::unique_ptr<Agent>()> make_agent_;
  const float* shared_params_;
  const std::atomic<int64_t>& global_step_;
  std::mt19937_64 rng_;
  bool both_sides_ = false;
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<AgentOpponent> opponent_;
  std::vector<float> params_;     // The copy the opponent plays.
  std::vector<float> optimizer_;  // BindShared wants one.
  bool against_snapshot_ = false;
  double snapshot_elo_ = 0;
  int64_t snapshot_index_ = 0;
  int64_t snapshot_number_ = 0;
  bool drawn_ = false;     // An opponent was drawn (--swap-steps).
  int64_t next_swap_ = 0;  // The step from which the next game draws.
  int64_t latest_episodes_ = 0;
  int64_t snapshot_episodes_ = 0;
};

// Wins, draws and losses of the learner against one opponent, per side.
struct OpponentRecord {
  std::string opponent;
  int64_t wins[2] = {0, 0};  // [learner side]: 0 moved first.
  int64_t draws[2] = {0, 0};
  int64_t losses[2] = {0, 0};
  std::vector<double> results;  // Every game's result, in order.

  int64_t Games() const;
  double WinRate() const;  // Over both sides.
  double DrawRate() const;
  double LossRate() const;
};

// Plays `games` games (sides alternating, the learner first in the first)
// of `agent` (Agent::Act) against each opponent on `env`'s game. Leaves
// `env` playing the last opponent with sides alternating, its provider
// and opponent mix off (SetFixedOpponent): meant for evaluation
// environments, not training ones. A raised `stop` (the run's stop flag)
// ends the play at the next move: the records are then partial (the
// caller discards them).
std::vector<OpponentRecord> PlayAgainstOpponents(
    Agent& agent, SelfPlayEnv& env, const std::vector<std::string>& opponents,
    int64_t games, const std::atomic<int32_t>* stop = nullptr);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_SELF_PLAY_SELF_PLAY_H_
