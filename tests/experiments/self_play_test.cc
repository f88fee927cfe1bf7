// Self-play pieces (experiments/self_play/self_play.h): ELO, the snapshot pool
// in shared memory (schedule, window, torn reads, checkpoints), the per-episode
// opponent choice, evaluation against fixed opponents; and SelfPlayEnv
// (envs/games/self_play_env.h) as the learner sees it.
#include "asyncrl/experiments/self_play/self_play.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "asyncrl/envs/games/connect_four_solver.h"
#include "asyncrl/envs/games/game.h"
#include "asyncrl/envs/games/opponents.h"
#include "asyncrl/envs/games/self_play_env.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/experiments/self_play/self_play_extension.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace self_play_test {
namespace {

// Plays the lowest legal action of the mask (the observation's last
// entries); its "parameters" are `kParams` floats, and it remembers the
// first of them when bound (which snapshot it plays).
class LowestLegalAgent final : public Agent {
 public:
  static constexpr int64_t kParams = 4;
  explicit LowestLegalAgent(int64_t actions) : actions_(actions) {}
  std::string Type() const override { return "lowest-legal"; }
  Action Act(FloatView obs) override {
    if (++acts_ == raise_at_ && flag_ != nullptr) flag_->store(1);
    for (int64_t a = 0; a < actions_; ++a) {
      if (obs[obs.size - actions_ + a] != 0) return Action::Discrete(a);
    }
    ADD_FAILURE() << "no legal action in the mask";
    return Action::Discrete(0);
  }
  Action ActAndTrain(FloatView obs, double) override { return Act(obs); }
  void StopEpisodeAndTrain(FloatView, double, bool) override {}
  void StopEpisode() override {}
  std::vector<Statistic> Statistics() const override { return {}; }
  SharedStateSizes SharedSizes() const override { return {kParams, 1}; }
  void BindShared(SharedBuffers buffers, bool) override {
    bound_first_ = buffers.params[0];
  }
  void SaveTo(proto::Checkpoint*) const override {}
  void LoadFrom(const proto::Checkpoint&) override {}

  int64_t acts() const { return acts_; }
  float bound_first() const { return bound_first_; }
  // Raises `flag` at the act-th Act (a stop request mid-evaluation).
  void RaiseAt(int64_t act, std::atomic<int32_t>* flag) {
    raise_at_ = act;
    flag_ = flag;
  }

 private:
  int64_t actions_;
  int64_t acts_ = 0;
  int64_t raise_at_ = 0;
  std::atomic<int32_t>* flag_ = nullptr;
  float bound_first_ = -1;
};

// A SelfPlayBlock with its pool, as the trainer lays it out.
struct PoolFixture {
  explicit PoolFixture(int window, int64_t params = 4, int64_t interval = 100)
      : floats(static_cast<size_t>(window * params)) {
    block.pool = floats.data();
    block.params = params;
    block.window = window;
    block.interval = interval;
    block.enabled.store(1);
  }
  std::vector<float> floats;
  SelfPlayBlock block;
};

std::vector<float> Filled(float value, int64_t n = 4) {
  return std::vector<float>(static_cast<size_t>(n), value);
}

TEST(EloTest, FollowsMLAgentsUpdate) {
  EXPECT_DOUBLE_EQ(EloExpected(1200, 1200), 0.5);
  EXPECT_NEAR(EloExpected(1400, 1200), 1.0 / (1.0 + std::pow(10.0, -0.5)),
              1e-15);
  EXPECT_DOUBLE_EQ(EloUpdate(1200, 1200, 1.0, 16), 1208);
  EXPECT_DOUBLE_EQ(EloUpdate(1200, 1200, 0.0, 16), 1200);
  EXPECT_DOUBLE_EQ(EloUpdate(1200, 1200, -1.0, 16), 1192);
  // Beating a weaker snapshot gains less than beating an equal one.
  EXPECT_LT(EloUpdate(1400, 1200, 1.0, 16) - 1400, 8.0);
  EXPECT_GT(EloUpdate(1400, 1200, 1.0, 16) - 1400, 0.0);
}

// ML-Agents' ghost trainer, game by game: the learner gains what the
// snapshot loses, the snapshot's rating read as the game ends; a slot
// rewritten since is not debited.
TEST(EloTest, BothRatingsMoveAsMLAgentsMovesThem) {
  PoolFixture f(2);
  SnapshotPool pool(f.block);
  f.block.elo.store(1200);
  pool.Take(Filled(1.0f).data(), 100, 1200);  // Snapshot 1 in slot 0.
  // A win at 1200 against 1200: c = 16 (1 - 0.5) = 8.
  EXPECT_DOUBLE_EQ(RateGame(f.block, 0, 1, 1200, 1.0, 16), 8.0);
  EXPECT_DOUBLE_EQ(f.block.elo.load(), 1208.0);
  double snapshot = 0;
  ASSERT_TRUE(pool.Rating(0, 1, &snapshot));
  EXPECT_DOUBLE_EQ(snapshot, 1192.0);
  // A loss at 1208 against 1192: E = 1 / (1 + 10^(-16/400)), c = -16 E.
  const double e = 1.0 / (1.0 + std::pow(10.0, -16.0 / 400.0));
  // Ratings near 1200: rounding to 1e-9 of them.
  constexpr double kTol = 1e-9 * 1200;
  EXPECT_NEAR(RateGame(f.block, 0, 1, 1200, -1.0, 16), -16.0 * e, kTol);
  EXPECT_NEAR(f.block.elo.load(), 1208.0 - 16.0 * e, kTol);
  ASSERT_TRUE(pool.Rating(0, 1, &snapshot));
  EXPECT_NEAR(snapshot, 1192.0 + 16.0 * e, kTol);
  // A draw between equal ratings changes nothing.
  pool.Take(Filled(2.0f).data(), 200, f.block.elo.load());  // Snapshot 2.
  const double learner = f.block.elo.load();
  EXPECT_NEAR(RateGame(f.block, 1, 2, learner, 0.0, 16), 0.0, kTol);
  EXPECT_NEAR(f.block.elo.load(), learner, kTol);
  // Snapshot 3 takes slot 0: a game that began against snapshot 1 rates
  // the learner against the rating read then and debits nobody.
  pool.Take(Filled(3.0f).data(), 300, 1000);
  EXPECT_FALSE(pool.Rating(0, 1, &snapshot));
  const double change = RateGame(f.block, 0, 1, 1200, 1.0, 16);
  EXPECT_NEAR(change, 16.0 * (1.0 - EloExpected(learner, 1200)), kTol);
  ASSERT_TRUE(pool.Rating(0, 3, &snapshot));
  EXPECT_DOUBLE_EQ(snapshot, 1000.0);
  EXPECT_EQ(f.block.rated_games.load(), 4);
}

// The judge's agreement: the share of its positions where the agent's move
// keeps the value. An agent that always plays the lowest legal column
// agrees exactly where that column is one the set marks as keeping.
TEST(JudgeTest, AgreementCountsTheMovesThatKeepTheValue) {
  LowestLegalAgent agent(ConnectFour::kColumns);
  int expected = 0;
  for (const JudgedPosition& p : ConnectFourJudgeSet()) {
    std::vector<int64_t> columns;
    for (const char* c = p.columns; *c != '\0'; ++c)
      columns.push_back(*c - '0');
    const auto board = PlayColumns(columns);
    int64_t lowest = 0;
    while (!board->IsLegal(lowest)) ++lowest;
    expected += (p.keeps >> lowest) & 1;
  }
  EXPECT_DOUBLE_EQ(
      JudgeAgreement(agent),
      expected / static_cast<double>(ConnectFourJudgeSet().size()));
}

// The shipped verdicts are the solver's: the first positions re-solved.
TEST(JudgeTest, TheShippedSetIsWhatTheSolverSays) {
  const auto& set = ConnectFourJudgeSet();
  ASSERT_EQ(set.size(), 200u);
  ConnectFourSolver solver(22);
  const auto positions = JudgePositions(6, 10, 16, 2027, solver);
  for (size_t i = 0; i < positions.size(); ++i) {
    std::string digits;
    for (const int64_t c : positions[i]) digits += static_cast<char>('0' + c);
    EXPECT_EQ(digits, set[i].columns) << i;
    const auto keeps = ValueKeepingMoves(*PlayColumns(positions[i]), solver);
    int mask = 0;
    for (int c = 0; c < ConnectFour::kColumns; ++c) mask |= keeps[c] << c;
    EXPECT_EQ(mask, set[i].keeps) << digits;
  }
}

TEST(SnapshotPoolTest, KeepsTheLastWindowSnapshotsWithTheirRatings) {
  PoolFixture f(3);
  SnapshotPool pool(f.block);
  EXPECT_EQ(pool.Size(), 0);
  for (int i = 1; i <= 5; ++i) {
    pool.Take(Filled(static_cast<float>(i)).data(), i * 100, 1200 + i);
  }
  EXPECT_EQ(pool.Size(), 3);
  EXPECT_EQ(f.block.taken.load(), 5);
  std::vector<int64_t> numbers;
  for (int64_t s = 0; s < 3; ++s) {
    std::vector<float> out(4);
    double elo = 0;
    int64_t number = 0;
    ASSERT_TRUE(pool.Read(s, out.data(), &elo, &number));
    EXPECT_EQ(out, Filled(static_cast<float>(number)));
    EXPECT_EQ(elo, 1200 + number);
    numbers.push_back(number);
  }
  std::sort(numbers.begin(), numbers.end());
  EXPECT_EQ(numbers, (std::vector<int64_t>{3, 4, 5}));
}

TEST(SnapshotPoolTest, TakesOncePerDueStep) {
  PoolFixture f(4, 4, /*interval=*/100);
  f.block.next_step.store(100);
  SnapshotPool pool(f.block);
  const std::vector<float> p = Filled(1);
  EXPECT_FALSE(pool.MaybeTake(p.data(), 50));
  EXPECT_TRUE(pool.MaybeTake(p.data(), 100));
  EXPECT_FALSE(pool.MaybeTake(p.data(), 150));
  // Late (a long episode): one snapshot, and the next is due at the next
  // multiple, not at every multiple missed.
  EXPECT_TRUE(pool.MaybeTake(p.data(), 470));
  EXPECT_EQ(f.block.next_step.load(), 500);
  EXPECT_FALSE(pool.MaybeTake(p.data(), 499));
  EXPECT_EQ(pool.Size(), 2);
  EXPECT_EQ(f.block.slots[1].step.load(), 470);
}

TEST(SnapshotPoolTest, ReadersNeverSeeATornSnapshot) {
  // One writer rewrites a one-slot pool with all-equal values while a
  // reader copies it: every copy that Read accepts is all one value.
  constexpr int64_t kParams = 4096;
  PoolFixture f(1, kParams);
  SnapshotPool pool(f.block);
  pool.Take(Filled(0, kParams).data(), 0, 1200);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 1; i <= 3000; ++i) {
      pool.Take(Filled(static_cast<float>(i), kParams).data(), i, 1200);
    }
    done.store(true);
  });
  std::vector<float> out(kParams);
  int64_t accepted = 0;
  for (int i = 0; i < 20000 && !(done.load() && accepted > 0); ++i) {
    double elo = 0;
    int64_t number = 0;
    if (!pool.Read(0, out.data(), &elo, &number)) continue;
    ++accepted;
    ASSERT_TRUE(std::all_of(out.begin(), out.end(), [&](float x) {
      return x == out[0];
    })) << "a torn copy was accepted";
  }
  writer.join();
  EXPECT_GT(accepted, 0);
}

TEST(SnapshotPoolTest, ConcurrentTakersGetDistinctNumbersAndSlots) {
  constexpr int kEach = 500;
  PoolFixture f(SelfPlayOptions::kMaxWindow);
  SnapshotPool pool(f.block);
  std::atomic<int> copied{0};
  auto taker = [&](float value) {
    for (int i = 0; i < kEach; ++i) {
      if (pool.Take(Filled(value).data(), i, 1200)) copied.fetch_add(1);
    }
  };
  std::thread a(taker, 1.0f);
  std::thread b(taker, 2.0f);
  a.join();
  b.join();
  EXPECT_EQ(f.block.taken.load(), 2 * kEach);
  EXPECT_EQ(pool.Size(), SelfPlayOptions::kMaxWindow);
  // Every slot holds one whole snapshot, and no number twice.
  std::set<int64_t> numbers;
  for (int64_t s = 0; s < pool.Size(); ++s) {
    std::vector<float> out(4);
    double elo = 0;
    int64_t number = 0;
    ASSERT_TRUE(pool.Read(s, out.data(), &elo, &number));
    EXPECT_TRUE(out == Filled(1.0f) || out == Filled(2.0f));
    EXPECT_TRUE(numbers.insert(number).second) << number;
  }
  EXPECT_GE(copied.load(), 2 * kEach - 2 * SelfPlayOptions::kMaxWindow);
}

TEST(SnapshotPoolTest, CheckpointRestoresPoolRatingsAndSchedule) {
  PoolFixture a(3);
  SnapshotPool pool(a.block);
  for (int i = 1; i <= 4; ++i) {
    pool.Take(Filled(static_cast<float>(i)).data(), i * 10, 1100 + i);
  }
  a.block.elo.store(1234.5);
  a.block.next_step.store(700);
  a.block.rated_games.store(42);
  proto::Checkpoint checkpoint;
  pool.SaveTo(&checkpoint);
  ASSERT_EQ(checkpoint.self_play().pool_size(), 3);
  EXPECT_EQ(checkpoint.self_play().pool(0).number(), 2);  // Oldest first.

  PoolFixture b(3);
  SnapshotPool restored(b.block);
  restored.LoadFrom(checkpoint);
  EXPECT_EQ(b.block.elo.load(), 1234.5);
  EXPECT_EQ(b.block.taken.load(), 4);
  EXPECT_EQ(b.block.next_step.load(), 700);
  EXPECT_EQ(b.block.rated_games.load(), 42);
  // The same snapshots (content, step, rating), oldest in slot 0.
  EXPECT_EQ(restored.Size(), 3);
  for (int s = 0; s < 3; ++s) {
    std::vector<float> out(4);
    double elo = 0;
    int64_t number = 0;
    ASSERT_TRUE(restored.Read(s, out.data(), &elo, &number));
    EXPECT_EQ(number, s + 2);
    EXPECT_EQ(out, Filled(static_cast<float>(number)));
    EXPECT_EQ(elo, 1100 + number);
    EXPECT_EQ(b.block.slots[s].step.load(), number * 10);
  }
  // The next snapshot is number 5 and replaces the oldest (number 2).
  EXPECT_TRUE(restored.Take(Filled(5).data(), 50, 1105));
  EXPECT_EQ(b.block.slots[0].number.load(), 5);

  // Into a larger window: the slots beyond the restored ones stay empty
  // and are never read as snapshots.
  PoolFixture larger(5);
  SnapshotPool wide(larger.block);
  wide.LoadFrom(checkpoint);
  EXPECT_EQ(wide.Size(), 3);
  std::vector<float> out(4);
  double elo = 0;
  int64_t number = 0;
  EXPECT_FALSE(wide.Read(4, out.data(), &elo, &number));
  // Into a smaller one: the newest snapshots.
  PoolFixture smaller(2);
  SnapshotPool narrow(smaller.block);
  narrow.LoadFrom(checkpoint);
  EXPECT_EQ(narrow.Size(), 2);
  ASSERT_TRUE(narrow.Read(0, out.data(), &elo, &number));
  EXPECT_EQ(number, 3);

  // Numbers out of order (a damaged checkpoint) are refused.
  proto::Checkpoint shuffled = checkpoint;
  shuffled.mutable_self_play()->mutable_pool()->SwapElements(0, 1);
  PoolFixture c(3);
  EXPECT_THROW(SnapshotPool(c.block).LoadFrom(shuffled), std::runtime_error);

  PoolFixture wrong(3, /*params=*/5);
  try {
    SnapshotPool(wrong.block).LoadFrom(checkpoint);
    FAIL() << "a pool of another size was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("has 4 parameters"), std::string::npos)
        << e.what();
  }
}

class SelfPlayProviderTest : public ::testing::Test {
 protected:
  SelfPlayProviderTest() : fixture_(4, LowestLegalAgent::kParams) {
    fixture_.block.next_step.store(100);
    options_.train_sides = "learner";  // A copy plays the latest policy.
  }
  std::unique_ptr<SelfPlayProvider> Make(double latest_ratio) {
    options_.play_against_latest_ratio = latest_ratio;
    return std::make_unique<SelfPlayProvider>(
        options_, fixture_.block,
        [this] {
          ++agents_made_;
          auto agent = std::make_unique<LowestLegalAgent>(9);
          last_made_ = agent.get();
          return agent;
        },
        shared_.data(), step_, /*seed=*/7);
  }
  SelfPlayOptions options_;
  PoolFixture fixture_;
  std::vector<float> shared_ = Filled(3.0f);
  std::atomic<int64_t> step_{0};
  int agents_made_ = 0;
  LowestLegalAgent* last_made_ = nullptr;
};

TEST_F(SelfPlayProviderTest, PlaysTheLatestPolicyUntilThePoolHasASnapshot) {
  auto provider = Make(/*latest_ratio=*/0.0);
  EXPECT_EQ(provider->BeginEpisode(0)->Name(), "latest");
  // The opponent's own agent plays a copy of the shared parameters.
  EXPECT_EQ(agents_made_, 1);
  EXPECT_EQ(last_made_->bound_first(), 3.0f);
  provider->EndEpisode(1.0);
  EXPECT_EQ(fixture_.block.elo.load(), 1200.0);  // Not rated.
  std::fill(shared_.begin(), shared_.end(), 5.0f);
  provider->BeginEpisode(1);
  EXPECT_EQ(last_made_->bound_first(), 5.0f);  // The latest, each episode.
  EXPECT_EQ(agents_made_, 1);
}

TEST_F(SelfPlayProviderTest, TakesDueSnapshotsAndRatesGamesAgainstThem) {
  auto provider = Make(/*latest_ratio=*/0.0);
  step_.store(100);
  GameOpponent& opponent = *provider->BeginEpisode(0);
  EXPECT_EQ(fixture_.block.taken.load(), 1);
  EXPECT_EQ(opponent.Name(), "snapshot 1");
  EXPECT_EQ(agents_made_, 1);
  provider->EndEpisode(1.0);
  EXPECT_DOUBLE_EQ(fixture_.block.elo.load(), 1208.0);
  EXPECT_EQ(fixture_.block.rated_games.load(), 1);
  double snapshot = 0;  // Debited what the learner gained.
  ASSERT_TRUE(SnapshotPool(fixture_.block).Rating(0, 1, &snapshot));
  EXPECT_DOUBLE_EQ(snapshot, 1192.0);
  // The snapshot plays with the copied parameters, not the shared ones.
  std::fill(shared_.begin(), shared_.end(), 4.0f);
  auto& again = *provider->BeginEpisode(1);
  EXPECT_EQ(again.Name(), "snapshot 1");
  auto tictactoe = DefaultGameRegistry().Make("TicTacToe");
  std::mt19937_64 rng(0);
  EXPECT_EQ(again.Choose(*tictactoe, rng), 0);  // The lowest legal cell.
  ASSERT_NE(last_made_, nullptr);
  EXPECT_EQ(last_made_->bound_first(), 3.0f);
  EXPECT_EQ(last_made_->acts(), 1);
  provider->EndEpisode(-1.0);
  EXPECT_LT(fixture_.block.elo.load(), 1208.0);
  EXPECT_EQ(provider->snapshot_episodes(), 2);
}

// --swap-steps (ML-Agents' swap_steps): an environment keeps its opponent
// until the step passes the next swap, then draws again.
TEST_F(SelfPlayProviderTest, SwapStepsKeepsTheOpponentUntilTheSwap) {
  options_.swap_steps = 1000;
  auto provider = Make(/*latest_ratio=*/0.0);
  step_.store(100);  // Snapshot 1 taken; drawn now.
  EXPECT_EQ(provider->BeginEpisode(0)->Name(), "snapshot 1");
  provider->EndEpisode(1.0);
  // Newer snapshots fall due (the provider takes them at every game); the
  // opponent stays snapshot 1 until step 1100.
  for (int64_t step : {200, 600, 1099}) {
    step_.store(step);
    EXPECT_EQ(provider->BeginEpisode(0)->Name(), "snapshot 1") << step;
    provider->EndEpisode(0.0);
  }
  EXPECT_GE(fixture_.block.taken.load(), 3);  // Taken, but not played yet.
  EXPECT_EQ(provider->snapshot_episodes(), 4);
  // From 1100 a new draw among the three: over many swaps, each is seen.
  std::set<std::string> seen;
  for (int64_t swap = 1; swap <= 30; ++swap) {
    step_.store(100 + 1000 * swap);
    seen.insert(provider->BeginEpisode(0)->Name());
    provider->EndEpisode(0.0);
  }
  EXPECT_GE(seen.size(), 3u);
}

TEST_F(SelfPlayProviderTest, RatioOnePlaysOnlyTheLatest) {
  auto provider = Make(/*latest_ratio=*/1.0);
  step_.store(100);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(provider->BeginEpisode(i % 2)->Name(), "latest");
    provider->EndEpisode(1.0);
  }
  EXPECT_EQ(fixture_.block.elo.load(), 1200.0);
  EXPECT_EQ(provider->latest_episodes(), 50);
}

TEST_F(SelfPlayProviderTest, HalfRatioMixesBoth) {
  auto provider = Make(/*latest_ratio=*/0.5);
  SnapshotPool(fixture_.block).Take(shared_.data(), 0, 1200);
  for (int i = 0; i < 400; ++i) provider->BeginEpisode(0);
  EXPECT_GT(provider->latest_episodes(), 150);
  EXPECT_GT(provider->snapshot_episodes(), 150);
}

// --train-sides both: the latest policy is the learner itself (no
// opponent, no copy); snapshots still play through the provider's agent.
TEST_F(SelfPlayProviderTest, BothSidesGivesNoOpponentForTheLatest) {
  options_.train_sides = "both";
  auto provider = Make(/*latest_ratio=*/1.0);
  EXPECT_EQ(provider->BeginEpisode(0), nullptr);
  EXPECT_EQ(agents_made_, 0);  // Nothing to copy the parameters into.
  provider->EndEpisode(1.0);
  EXPECT_EQ(fixture_.block.elo.load(), 1200.0);  // Not rated.
  auto mixed = Make(/*latest_ratio=*/0.0);
  step_.store(100);  // Snapshot 1 is taken: the pool has one.
  GameOpponent* snapshot = mixed->BeginEpisode(0);
  ASSERT_NE(snapshot, nullptr);
  EXPECT_EQ(snapshot->Name(), "snapshot 1");
  EXPECT_EQ(agents_made_, 1);
  EXPECT_EQ(provider->latest_episodes(), 1);
  EXPECT_EQ(mixed->snapshot_episodes(), 1);
}

// An OpponentProvider that counts its calls and hands out one opponent.
class CountingProvider final : public OpponentProvider {
 public:
  GameOpponent* BeginEpisode(int side) override {
    sides.push_back(side);
    return both_sides ? nullptr : &opponent;
  }
  bool both_sides = false;
  void EndEpisode(double result) override { results.push_back(result); }
  RandomOpponent opponent;
  std::vector<int> sides;
  std::vector<double> results;
};

TEST(SelfPlayEnvTest, TheLearnerSeesItsSideTheMaskAndItsResult) {
  SelfPlayEnv env(DefaultGameRegistry().Make("TicTacToe"));
  const Space& space = env.ObservationSpace();
  EXPECT_EQ(space.action_mask, 9);
  EXPECT_EQ(space.FlatSize(), 2 * 9 + 9);
  CountingProvider provider;
  env.SetOpponentProvider(&provider);
  for (int episode = 0; episode < 20; ++episode) {
    FloatView obs =
        env.Reset(episode == 0 ? std::optional<uint64_t>(3) : std::nullopt);
    // Alternating sides, the first episode after a seed moving first.
    EXPECT_EQ(env.learner_side(), episode % 2);
    // Moving second: the opponent has already played one piece.
    int pieces = 0;
    for (int i = 0; i < 18; ++i) pieces += obs[i] != 0 ? 1 : 0;
    EXPECT_EQ(pieces, env.learner_side());
    StepResult r;
    do {
      const std::vector<int64_t> legal = env.game().LegalActions();
      for (int64_t a = 0; a < 9; ++a) {
        const bool is_legal =
            std::find(legal.begin(), legal.end(), a) != legal.end();
        EXPECT_EQ(obs[18 + a], is_legal ? 1.0f : 0.0f);
      }
      r = env.Step(Action::Discrete(legal.front()));
      obs = r.observation;
      if (!r.Done()) {
        EXPECT_EQ(r.reward, 0.0);
      }
    } while (!r.Done());
    EXPECT_TRUE(r.terminated);
    EXPECT_EQ(r.reward, env.game().Result(env.learner_side()));
  }
  EXPECT_EQ(provider.sides.size(), 20u);
  EXPECT_EQ(provider.results.size(), 20u);
}

// A provider that gives no opponent: the agent plays both sides, the
// learner (player 0) first; each observation is the mover's view and says
// whose turn it is; the reward is the learner's.
TEST(SelfPlayEnvTest, BothSidesHandsTheOpponentsTurnsToTheAgent) {
  SelfPlayEnv env(DefaultGameRegistry().Make("TicTacToe"));
  CountingProvider provider;
  provider.both_sides = true;
  env.SetOpponentProvider(&provider);
  // Game 1: X wins the top row; game 2: O wins the middle column. The
  // learner moves first in both, whatever the alternation drew.
  const std::vector<std::vector<int64_t>> games = {{0, 3, 1, 4, 2},
                                                   {0, 1, 3, 4, 8, 7}};
  for (size_t g = 0; g < games.size(); ++g) {
    FloatView obs =
        env.Reset(g == 0 ? std::optional<uint64_t>(5) : std::nullopt);
    EXPECT_TRUE(env.both_sides());
    EXPECT_EQ(env.learner_side(), 0);
    std::vector<int64_t> mine, theirs;  // Cells of the mover, the other.
    StepResult r;
    for (size_t m = 0; m < games[g].size(); ++m) {
      // Plane 0: the mover's pieces; plane 1: the other's; then the mask.
      for (int64_t c = 0; c < 9; ++c) {
        const bool own = std::find(mine.begin(), mine.end(), c) != mine.end();
        const bool other =
            std::find(theirs.begin(), theirs.end(), c) != theirs.end();
        EXPECT_EQ(obs[c], own ? 1.0f : 0.0f) << g << " " << m << " " << c;
        EXPECT_EQ(obs[9 + c], other ? 1.0f : 0.0f) << g << " " << m;
        EXPECT_EQ(obs[18 + c], own || other ? 0.0f : 1.0f) << g << " " << m;
      }
      r = env.Step(Action::Discrete(games[g][m]));
      obs = r.observation;
      mine.push_back(games[g][m]);
      std::swap(mine, theirs);  // The turn passes.
      const bool last = m + 1 == games[g].size();
      EXPECT_EQ(r.Done(), last);
      // The opponent's turn after the learner's moves (even m), not at
      // the end.
      EXPECT_EQ(r.opponent_turn, !last && m % 2 == 0) << g << " " << m;
      if (!last) {
        EXPECT_EQ(r.reward, 0.0);
      }
    }
    EXPECT_TRUE(r.terminated);
    EXPECT_EQ(r.reward, g == 0 ? 1.0 : -1.0);  // The learner's (X's).
  }
  EXPECT_EQ(provider.sides.size(), 2u);
  EXPECT_EQ(provider.results, (std::vector<double>{1.0, -1.0}));
}

TEST(SelfPlayEnvTest, IllegalMovesThrowAndLeaveTheGameAsItWas) {
  SelfPlayEnv env(DefaultGameRegistry().Make("TicTacToe"));
  env.SetLearnerSide(LearnerSide::kSecond);
  env.Reset(1);
  const std::string before = env.game().ToString();
  int64_t taken = -1;
  for (int64_t a = 0; a < 9; ++a) {
    if (!env.game().IsLegal(a)) taken = a;
  }
  ASSERT_GE(taken, 0);
  try {
    env.Step(Action::Discrete(taken));
    FAIL() << "an occupied cell was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("TicTacToe"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(taken)), std::string::npos) << what;
  }
  EXPECT_EQ(env.game().ToString(), before);
}

TEST(SelfPlayEnvTest, AnOpponentMixOfOneNeverAsksTheProvider) {
  SelfPlayEnv env(DefaultGameRegistry().Make("TicTacToe"));
  CountingProvider provider;
  env.SetOpponentProvider(&provider);
  env.SetParameter("minimax_opponent_ratio", 1.0);
  env.Reset(0);
  for (int i = 0; i < 10; ++i) {
    StepResult r;
    do {
      r = env.Step(Action::Discrete(env.game().LegalActions().front()));
    } while (!r.Done());
    // The lowest-cell player never beats perfect play.
    EXPECT_LE(r.reward, 0.0);
    env.Reset();
  }
  EXPECT_TRUE(provider.sides.empty());
}

TEST(SelfPlayEnvTest, TheMixsMinimaxSearchesToItsDepthParameter) {
  SelfPlayEnv env(DefaultGameRegistry().Make("ConnectFour"));
  EXPECT_EQ(env.Parameter("minimax_opponent_depth"), 4.0);
  env.SetParameter("minimax_opponent_ratio", 1.0);
  env.Reset(0);
  ASSERT_NE(env.episode_opponent(), nullptr);
  EXPECT_EQ(env.episode_opponent()->Name(), "minimax");
  // The player (and its transposition table) is kept whatever the depth.
  const GameOpponent* player = env.episode_opponent();
  // A new depth takes effect at the next episode, not in this one.
  env.SetParameter("minimax_opponent_depth", 1.0);
  EXPECT_EQ(env.episode_opponent()->Name(), "minimax");
  env.Reset();
  EXPECT_EQ(env.episode_opponent()->Name(), "minimax:1");
  EXPECT_EQ(env.episode_opponent(), player);
  EXPECT_EQ(dynamic_cast<const MinimaxOpponent&>(*player).depth(), 1);
  env.SetParameter("minimax_opponent_depth", 4.0);
  env.Reset();
  EXPECT_EQ(env.episode_opponent()->Name(), "minimax");
  env.Reset();
  EXPECT_EQ(env.episode_opponent(), player);
  const std::pair<double, const char*> bad[] = {
      {0.0, "0"}, {13.0, "13"}, {42.0, "42"}, {2.5, "2.5"}};
  for (const auto& [value, text] : bad) {
    try {
      env.SetParameter("minimax_opponent_depth", value);
      FAIL() << "depth " << text << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(
                    std::string("minimax_opponent_depth=") + text +
                    " is out of range; accepted: integers [1, 12]"),
                std::string::npos)
          << e.what();
    }
  }
  // The depth of a game whose "minimax" is perfect play.
  SelfPlayEnv tictactoe(DefaultGameRegistry().Make("TicTacToe"));
  EXPECT_EQ(tictactoe.Parameter("minimax_opponent_depth"),
            static_cast<double>(kMaxMinimaxDepth));
}

TEST(PlayAgainstOpponentsTest, PlaysEachOpponentOnBothSidesEqually) {
  SelfPlayEnv env(DefaultGameRegistry().Make("TicTacToe"));
  env.Reset(4);
  LowestLegalAgent agent(9);
  const std::vector<OpponentRecord> records =
      PlayAgainstOpponents(agent, env, {"random", "minimax"}, 40);
  ASSERT_EQ(records.size(), 2u);
  for (const OpponentRecord& r : records) {
    SCOPED_TRACE(r.opponent);
    EXPECT_EQ(r.Games(), 40);
    EXPECT_EQ(r.wins[0] + r.draws[0] + r.losses[0], 20);
    EXPECT_EQ(r.wins[1] + r.draws[1] + r.losses[1], 20);
    EXPECT_EQ(r.results.size(), 40u);
    EXPECT_NEAR(r.WinRate() + r.DrawRate() + r.LossRate(), 1.0, 1e-12);
  }
  EXPECT_EQ(records[1].wins[0] + records[1].wins[1], 0);  // Perfect play.
  EXPECT_GT(records[0].wins[0] + records[0].wins[1], 0);
}

// A stop request mid-evaluation ends the play at the next move (it used to
// play every remaining game): the partial records come back, and the
// evaluator writes no row from them.
TEST(PlayAgainstOpponentsTest, AStopRequestEndsThePlayAtTheNextMove) {
  SelfPlayEnv env(DefaultGameRegistry().Make("TicTacToe"));
  env.Reset(4);
  LowestLegalAgent agent(9);
  std::atomic<int32_t> stop{0};
  agent.RaiseAt(7, &stop);
  const std::vector<OpponentRecord> records =
      PlayAgainstOpponents(agent, env, {"random", "minimax"}, 40, &stop);
  EXPECT_EQ(agent.acts(), 7);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_LT(records[0].Games(), 40);
}

TEST(SelfPlayOptionsTest, InvalidOptionsNameTheField) {
  auto refused = [](auto change, const std::string& field) {
    SelfPlayOptions o;
    change(o);
    try {
      o.Validate();
      ADD_FAILURE() << field << " accepted";
    } catch (const InvalidOption& e) {
      EXPECT_EQ(e.field(), field);
    }
  };
  refused([](SelfPlayOptions& o) { o.play_against_latest_ratio = 1.5; },
          "play_against_latest_ratio");
  refused([](SelfPlayOptions& o) { o.snapshot_interval = 0; },
          "snapshot_interval");
  refused([](SelfPlayOptions& o) { o.snapshot_window = 65; },
          "snapshot_window");
  refused([](SelfPlayOptions& o) { o.elo_k = 0; }, "elo_k");
  refused([](SelfPlayOptions& o) { o.learner_side = "left"; }, "learner_side");
  refused([](SelfPlayOptions& o) { o.train_sides = "all"; }, "train_sides");
  SelfPlayOptions o;
  o.eval_opponents = "random,oracle";
  EXPECT_THROW(o.EvalOpponents("TicTacToe"), InvalidOption);
  o.eval_opponents = "";
  EXPECT_EQ(o.EvalOpponents("TicTacToe"), DefaultEvalOpponents("TicTacToe"));
  o.eval_opponents = "greedy,minimax:3";
  EXPECT_EQ(o.EvalOpponents("ConnectFour"),
            (std::vector<std::string>{"greedy", "minimax:3"}));
}

// --train-sides both asks the agent to take turns: one that cannot is
// refused before the run, naming the option.
TEST(SelfPlayExtensionTest, BothSidesNeedsAnAgentThatTakesTurns) {
  SelfPlayOptions options;
  options.train_sides = "both";
  SelfPlayExtension extension(options);
  TrainOptions train;
  train.eval_n_steps = 0;
  SelfPlayEnv probe(DefaultGameRegistry().Make("TicTacToe"));
  extension.Configure(train, probe);
  LowestLegalAgent agent(9);
  try {
    extension.CheckAgent(agent);
    FAIL() << "an agent without TurnTaking was accepted";
  } catch (const InvalidOption& e) {
    EXPECT_STREQ(e.what(),
                 "train_sides=both is invalid; accepted: learner (both: "
                 "agent type 'lowest-legal' cannot learn both sides of a "
                 "game)");
  }
  // The learner's side alone asks nothing of the agent.
  options.train_sides = "learner";
  SelfPlayExtension learner(options);
  learner.Configure(train, probe);
  EXPECT_NO_THROW(learner.CheckAgent(agent));
}

}  // namespace
}  // namespace self_play_test
}  // namespace asyncrl
