#include "asyncrl/experiments/self_play/self_play.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "asyncrl/misc/check.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/platform/process_group.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

// How often a checkpoint's save retries a slot being rewritten (yielding
// between tries; a copy takes microseconds).
constexpr int kSaveTries = 100000;

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const size_t first = part.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    parts.push_back(part.substr(first, part.find_last_not_of(' ') + 1 - first));
  }
  return parts;
}

}  // namespace

void SelfPlayOptions::Validate() const {
  Require(play_against_latest_ratio >= 0 && play_against_latest_ratio <= 1,
          "play_against_latest_ratio", play_against_latest_ratio,
          "a number in [0, 1]");
  Require(snapshot_interval >= 1, "snapshot_interval", snapshot_interval,
          "an integer >= 1");
  Require(snapshot_window >= 1 && snapshot_window <= kMaxWindow,
          "snapshot_window", snapshot_window,
          "an integer in [1, " + std::to_string(kMaxWindow) + "]");
  Require(elo_k > 0 && std::isfinite(elo_k), "elo_k", elo_k,
          "a finite number > 0");
  Require(std::isfinite(initial_elo) && std::abs(initial_elo) <= 1e6,
          "initial_elo", initial_elo, "a number in [-1e6, 1e6]");
  Require(swap_steps >= 0, "swap_steps", swap_steps,
          "0 (a new opponent every game) or a positive integer");
  Require(eval_score == "last" || eval_score == "total", "eval_score",
          eval_score, "last, total");
  Require(train_sides == "learner" || train_sides == "both", "train_sides",
          train_sides, "learner, both");
  try {
    ParseLearnerSide(learner_side);
  } catch (const std::invalid_argument&) {
    throw InvalidOption("learner_side", learner_side,
                        "alternate, random, first, second");
  }
  if (eval_opponents.find_first_not_of(", ") == std::string::npos &&
      !eval_opponents.empty()) {
    throw InvalidOption("eval_opponents", eval_opponents,
                        "a comma-separated list of opponents (random, greedy, "
                        "minimax, minimax:D), or empty for the game's own");
  }
}

FlagSpecs SelfPlayOptions::Flags() {
  return {
      {"play-against-latest-ratio",
       "two-player games: probability that a training episode's opponent is "
       "the latest policy rather than a past snapshot",
       &play_against_latest_ratio},
      {"snapshot-interval",
       "two-player games: copy the parameters into the snapshot pool every "
       "this many global steps",
       &snapshot_interval},
      {"snapshot-window", "two-player games: snapshots kept in the pool",
       &snapshot_window},
      {"elo-k", "two-player games: the ELO K-factor", &elo_k},
      {"initial-elo",
       "two-player games: the learner's rating at the start (ML-Agents' "
       "initial_elo); the first snapshot takes it too",
       &initial_elo},
      {"eval-opponents",
       "two-player games: fixed opponents evaluations play, weakest first "
       "(random, greedy, minimax, minimax:D); the evaluation mean is the "
       "result against the last (default: every one the game has)",
       &eval_opponents},
      {"swap-steps",
       "two-player games: global steps a training environment keeps its "
       "opponent before drawing another (ML-Agents' swap_steps; 0: a new "
       "draw every game)",
       &swap_steps},
      {"eval-score",
       "two-player games: what the evaluation mean (best/, "
       "--successful-score) is: last (the result against the last "
       "opponent) or total (over every opponent's games)",
       &eval_score},
      {"learner-side",
       "two-player games: the learner's side per training episode "
       "(alternate, random, first, second)",
       &learner_side},
      {"train-sides",
       "two-player games: whose moves are trained in games against the "
       "latest policy: both (the agent plays and learns both sides, "
       "HandyRL's turn-based training; feed-forward archs) or learner (the "
       "learner's side; the opponent is a copy). Recurrent archs and "
       "programs' own agents default to learner",
       &train_sides}};
}

std::vector<std::string> SelfPlayOptions::EvalOpponents(
    const std::string& game) const {
  std::vector<std::string> names = SplitCommas(eval_opponents);
  if (names.empty()) return DefaultEvalOpponents(game);
  for (size_t i = 0; i < names.size(); ++i) {
    try {
      MakeFixedOpponent(names[i], game);
    } catch (const std::invalid_argument& e) {
      throw InvalidOption("eval_opponents", eval_opponents,
                          "random, greedy, minimax, minimax:D (D in 1.." +
                              std::to_string(MaxMinimaxDepth(game)) + " for " +
                              game + ")" +
                              (game == "ConnectFour" ? ", solver" : ""));
    }
    // Each opponent names three scores.txt columns: a name given twice
    // would give two columns one name.
    if (std::find(names.begin(), names.begin() + i, names[i]) !=
        names.begin() + i) {
      throw InvalidOption(
          "eval_opponents", eval_opponents,
          "each opponent once ('" + names[i] + "' is given twice)");
    }
  }
  return names;
}

double EloExpected(double learner, double opponent) {
  return 1.0 / (1.0 + std::pow(10.0, (opponent - learner) / 400.0));
}

double EloUpdate(double learner, double opponent, double learner_result,
                 double k) {
  const double score = (learner_result + 1.0) / 2.0;  // 1, 0.5, 0.
  return learner + k * (score - EloExpected(learner, opponent));
}

double RateGame(SelfPlayBlock& block, int64_t index, int64_t number,
                double rating_at_start, double learner_result, double k) {
  SnapshotPool pool(block);
  double opponent = rating_at_start;
  pool.Rating(index, number, &opponent);
  double elo = block.elo.load();
  double change = 0;
  // Lock-free: a lost race recomputes from the other's rating.
  do {
    change = EloUpdate(elo, opponent, learner_result, k) - elo;
  } while (!block.elo.compare_exchange_weak(elo, elo + change));
  pool.Debit(index, number, change);
  block.rated_games.fetch_add(1);
  return change;
}

bool SnapshotPool::Rating(int64_t index, int64_t number, double* elo) const {
  if (index < 0 || index >= block_.window) return false;
  const SelfPlayBlock::Slot& slot = block_.slots[index];
  const int64_t before = slot.sequence.load();
  if (before % 2 != 0 || slot.number.load() != number) return false;
  const double rating = slot.elo.load();
  if (slot.sequence.load() != before) return false;
  *elo = rating;
  return true;
}

void SnapshotPool::Debit(int64_t index, int64_t number, double change) {
  if (index < 0 || index >= block_.window) return;
  SelfPlayBlock::Slot& slot = block_.slots[index];
  const int64_t before = slot.sequence.load();
  if (before % 2 != 0 || slot.number.load() != number) return;
  double elo = slot.elo.load();
  while (!slot.elo.compare_exchange_weak(elo, elo - change)) {
  }
}

int64_t SnapshotPool::Size() const {
  return std::min<int64_t>(block_.filled.load(), block_.window);
}

bool SnapshotPool::MaybeTake(const float* params, int64_t step) {
  int64_t due = block_.next_step.load();
  while (step >= due) {
    // Claim this due step: the next one is the first multiple past `step`.
    const int64_t next = (step / block_.interval + 1) * block_.interval;
    if (block_.next_step.compare_exchange_weak(due, next)) {
      return Take(params, step, block_.elo.load());
    }
  }
  return false;
}

bool SnapshotPool::Take(const float* params, int64_t step, double elo) {
  return Store(params, step, elo, block_.taken.fetch_add(1) + 1);
}

bool SnapshotPool::Store(const float* params, int64_t step, double elo,
                         int64_t number) {
  ASYNCRL_CHECK(block_.pool != nullptr && block_.window > 0);
  const int64_t position = block_.positions.fetch_add(1);
  const int64_t index = position % block_.window;
  SelfPlayBlock::Slot& slot = block_.slots[index];
  int64_t seq = slot.sequence.load();
  // The slot's previous writer (a whole window of snapshots ago) is still
  // copying: leave it the slot rather than tear both.
  if ((seq & 1) != 0 || !slot.sequence.compare_exchange_strong(seq, seq + 1)) {
    return false;
  }
  std::memcpy(block_.pool + index * block_.params, params,
              static_cast<size_t>(block_.params) * sizeof(float));
  slot.step.store(step);
  slot.number.store(number);
  slot.elo.store(elo);
  slot.sequence.store(seq + 2, std::memory_order_release);
  // Counted after the copy: a reader never picks a slot still empty.
  int64_t filled = block_.filled.load();
  while (filled < position + 1 &&
         !block_.filled.compare_exchange_weak(filled, position + 1)) {
  }
  return true;
}

bool SnapshotPool::Read(int64_t index, float* out, double* elo, int64_t* number,
                        int tries) const {
  ASYNCRL_CHECK(index >= 0 && index < block_.window);
  const SelfPlayBlock::Slot& slot = block_.slots[index];
  for (int attempt = 0; attempt < tries; ++attempt) {
    if (attempt > 0) sched_yield();
    const int64_t before = slot.sequence.load(std::memory_order_acquire);
    if ((before & 1) != 0) continue;
    if (before == 0) return false;  // Never written.
    std::memcpy(out, block_.pool + index * block_.params,
                static_cast<size_t>(block_.params) * sizeof(float));
    *elo = slot.elo.load();
    *number = slot.number.load();
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.sequence.load(std::memory_order_relaxed) == before) return true;
  }
  return false;
}

void SnapshotPool::SaveTo(proto::Checkpoint* checkpoint) const {
  proto::SelfPlayState* state = checkpoint->mutable_self_play();
  state->set_elo(block_.elo.load());
  state->set_taken(block_.taken.load());
  state->set_next_step(block_.next_step.load());
  state->set_rated_games(block_.rated_games.load());
  // Oldest first, so that a restore refills the slots in the same order.
  std::vector<std::pair<int64_t, int64_t>> order;  // (number, index)
  for (int64_t i = 0; i < Size(); ++i) {
    order.emplace_back(block_.slots[i].number.load(), i);
  }
  std::sort(order.begin(), order.end());
  std::vector<float> copy(static_cast<size_t>(block_.params));
  for (const auto& [number, index] : order) {
    double elo = 0;
    int64_t read_number = 0;
    // The parent saves while workers may take snapshots: a slot being
    // rewritten is waited for (a copy takes microseconds).
    if (!Read(index, copy.data(), &elo, &read_number, kSaveTries)) {
      if (block_.slots[index].sequence.load() != 0) {
        Log(LogLevel::kWarning,
            "self-play pool: slot " + std::to_string(index) +
                " was being rewritten throughout the save; the checkpoint "
                "leaves it out");
      }
      continue;
    }
    proto::PoolSnapshot* s = state->add_pool();
    s->set_number(read_number);
    s->set_step(block_.slots[index].step.load());
    s->set_elo(elo);
    proto::Tensor* t = s->mutable_parameters();
    t->set_name("pool");
    t->add_shape(block_.params);
    t->set_dtype(proto::DTYPE_FLOAT32);
    t->set_data(copy.data(), copy.size() * sizeof(float));
  }
}

void SnapshotPool::LoadFrom(const proto::Checkpoint& checkpoint) {
  if (!checkpoint.has_self_play()) return;  // Not a game's checkpoint.
  const proto::SelfPlayState& state = checkpoint.self_play();
  int64_t previous = 0;
  for (const proto::PoolSnapshot& s : state.pool()) {
    const std::string& data = s.parameters().data();
    if (data.size() != static_cast<size_t>(block_.params) * sizeof(float)) {
      throw std::runtime_error(
          "self-play pool: snapshot " + std::to_string(s.number()) + " has " +
          std::to_string(data.size() / sizeof(float)) +
          " parameters; the agent has " + std::to_string(block_.params));
    }
    if (s.number() <= previous || s.number() > state.taken()) {
      throw std::runtime_error("self-play pool: snapshot number " +
                               std::to_string(s.number()) + " after " +
                               std::to_string(previous) +
                               "; accepted: increasing numbers in 1.." +
                               std::to_string(state.taken()));
    }
    previous = s.number();
  }
  block_.elo.store(state.elo());
  block_.rated_games.store(state.rated_games());
  block_.positions.store(0);
  block_.filled.store(0);
  // The newest `window` of them (a run resumed with a smaller window).
  const int64_t count = state.pool_size();
  for (int64_t i = std::max<int64_t>(0, count - block_.window); i < count;
       ++i) {
    const proto::PoolSnapshot& s = state.pool(static_cast<int>(i));
    Store(reinterpret_cast<const float*>(s.parameters().data().data()),
          s.step(), s.elo(), s.number());
  }
  block_.taken.store(state.taken());
  block_.next_step.store(state.next_step());
}

AgentOpponent::AgentOpponent(std::string name, Agent* agent, bool sample)
    : name_(std::move(name)),
      agent_(agent),
      sampled_(sample ? dynamic_cast<SampledActing*>(agent) : nullptr) {}

int64_t AgentOpponent::Choose(const Game& game, std::mt19937_64&) {
  obs_.resize(static_cast<size_t>(game.ObservationSize() + game.NumActions()));
  ObserveWithMask(game, game.CurrentPlayer(), obs_.data());
  const FloatView view{obs_.data(), static_cast<int64_t>(obs_.size())};
  const Action action =
      sampled_ != nullptr ? sampled_->ActSampled(view) : agent_->Act(view);
  agent_->StopEpisode();  // Feed-forward or not: one decision at a time.
  return action.index;
}

SelfPlayProvider::SelfPlayProvider(
    const SelfPlayOptions& options, SelfPlayBlock& block,
    std::function<std::unique_ptr<Agent>()> make_agent,
    const float* shared_params, const std::atomic<int64_t>& global_step,
    uint64_t seed)
    : options_(options),
      block_(block),
      pool_(block),
      make_agent_(std::move(make_agent)),
      shared_params_(shared_params),
      global_step_(global_step),
      rng_(seed),
      both_sides_(options.TrainsBothSides()) {}

void SelfPlayProvider::EnsureAgent() {
  if (agent_) return;
  agent_ = make_agent_();
  const SharedStateSizes sizes = agent_->SharedSizes();
  ASYNCRL_CHECK_EQ(sizes.params, block_.params);
  params_.resize(static_cast<size_t>(sizes.params));
  optimizer_.resize(static_cast<size_t>(sizes.optimizer));
  // Its own draws: the agent was made with the worker's seed, as the
  // learner and the other environments' opponents were.
  if (auto* sampled = dynamic_cast<SampledActing*>(agent_.get())) {
    sampled->SeedSampling(rng_());
  }
  opponent_ = std::make_unique<AgentOpponent>("latest", agent_.get(),
                                              /*sample=*/true);
}

GameOpponent* SelfPlayProvider::Latest() {
  ++latest_episodes_;
  // Both sides trained: the learner is its own opponent (no copy).
  if (both_sides_) return nullptr;
  // The shared parameters as they are now (Hogwild: a copy taken while
  // workers update them); the agent adopts the copy (its own buffers, not
  // the run's).
  EnsureAgent();
  std::memcpy(params_.data(), shared_params_, params_.size() * sizeof(float));
  agent_->BindShared({params_.data(), optimizer_.data(), nullptr},
                     /*initialize=*/false);
  opponent_->set_name("latest");
  return opponent_.get();
}

GameOpponent* SelfPlayProvider::BeginEpisode(int) {
  // The opponent's agent is made at the first episode (its seed drawn
  // first), or at the first it plays when the learner is its own.
  if (!both_sides_) EnsureAgent();
  pool_.MaybeTake(shared_params_, global_step_.load());
  // ML-Agents' swap_steps: the same opponent until the step passes the
  // next swap (a snapshot keeps the copy taken then; the latest policy is
  // the latest in every game); 0: a draw every game.
  const int64_t step = global_step_.load();
  const bool keep = options_.swap_steps > 0 && drawn_ && step < next_swap_;
  if (keep) {
    if (!against_snapshot_) return Latest();
    ++snapshot_episodes_;
    return opponent_.get();
  }
  drawn_ = true;
  next_swap_ = step + options_.swap_steps;
  against_snapshot_ = false;
  const int64_t size = pool_.Size();
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  if (size == 0 || uniform(rng_) < options_.play_against_latest_ratio) {
    return Latest();
  }
  EnsureAgent();
  const int64_t index =
      std::uniform_int_distribution<int64_t>(0, size - 1)(rng_);
  int64_t number = 0;
  against_snapshot_ =
      pool_.Read(index, params_.data(), &snapshot_elo_, &number);
  // A slot rewritten throughout the tries: the latest policy plays.
  if (!against_snapshot_) return Latest();
  snapshot_index_ = index;
  snapshot_number_ = number;
  agent_->BindShared({params_.data(), optimizer_.data(), nullptr},
                     /*initialize=*/false);
  opponent_->set_name("snapshot " + std::to_string(number));
  ++snapshot_episodes_;
  return opponent_.get();
}

void SelfPlayProvider::EndEpisode(double learner_result) {
  if (!against_snapshot_) return;
  RateGame(block_, snapshot_index_, snapshot_number_, snapshot_elo_,
           learner_result, options_.elo_k);
}

int64_t OpponentRecord::Games() const {
  return wins[0] + wins[1] + draws[0] + draws[1] + losses[0] + losses[1];
}

double OpponentRecord::WinRate() const {
  return Games() == 0 ? 0.0 : static_cast<double>(wins[0] + wins[1]) / Games();
}

double OpponentRecord::DrawRate() const {
  return Games() == 0 ? 0.0
                      : static_cast<double>(draws[0] + draws[1]) / Games();
}

double OpponentRecord::LossRate() const {
  return Games() == 0 ? 0.0
                      : static_cast<double>(losses[0] + losses[1]) / Games();
}

std::vector<OpponentRecord> PlayAgainstOpponents(
    Agent& agent, SelfPlayEnv& env, const std::vector<std::string>& opponents,
    int64_t games, const std::atomic<int32_t>* stop) {
  auto stopped = [stop] {
    return stop != nullptr && stop->load(std::memory_order_relaxed) != 0;
  };
  std::vector<OpponentRecord> records;
  for (const std::string& name : opponents) {
    OpponentRecord record;
    record.opponent = name;
    env.SetFixedOpponent(MakeFixedOpponent(name, env.game().Name()));
    for (int64_t g = 0; g < games; ++g) {
      env.SetLearnerSide(g % 2 == 0 ? LearnerSide::kFirst
                                    : LearnerSide::kSecond);
      FloatView obs = env.Reset();
      StepResult r;
      do {
        if (stopped()) {
          agent.StopEpisode();
          records.push_back(std::move(record));
          env.SetLearnerSide(LearnerSide::kAlternate);
          return records;
        }
        r = env.Step(agent.Act(obs));
        ReportWorkerProgress();
        obs = r.observation;
      } while (!r.Done());
      agent.StopEpisode();
      const int side = env.learner_side();
      if (r.reward > 0) {
        ++record.wins[side];
      } else if (r.reward < 0) {
        ++record.losses[side];
      } else {
        ++record.draws[side];
      }
      record.results.push_back(r.reward);
    }
    records.push_back(std::move(record));
  }
  env.SetLearnerSide(LearnerSide::kAlternate);
  return records;
}

}  // namespace asyncrl
