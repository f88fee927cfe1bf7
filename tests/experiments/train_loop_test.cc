// The worker loop (experiments/train_loop.h) on two-player games whose both
// sides the agent plays (--train-sides both): scripted TicTacToe games
// through TrainLoop, with an agent that records what it is given. Each row's
// reward is its mover's, the agent is told which rows pass the turn, the
// episode's return stays the learner's, and a cut episode bootstraps from
// the other player's turn; against a snapshot-like opponent the opponent's
// moves never reach the agent.
#include "asyncrl/experiments/train_loop.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "asyncrl/envs/games/game.h"
#include "asyncrl/envs/games/self_play_env.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace train_loop_test {
namespace {

// What the agent was given at one BatchObserveAndTrain.
struct Observed {
  double reward = 0;
  bool terminal = false;
  bool episode_end = false;
  int passes = -1;  // -1: NextTurnPasses was not called.
};

// Plays a fixed list of moves (one environment) and records every outcome.
class ScriptedAgent : public BatchAgent, public TurnTaking {
 public:
  explicit ScriptedAgent(std::vector<int64_t> moves)
      : moves_(std::move(moves)) {}
  std::string Type() const override { return "scripted"; }
  Action Act(FloatView) override { return Action::Discrete(0); }
  Action ActAndTrain(FloatView, double) override { return Action::Discrete(0); }
  void StopEpisodeAndTrain(FloatView, double, bool) override {}
  void StopEpisode() override {}
  std::vector<Statistic> Statistics() const override { return {}; }
  SharedStateSizes SharedSizes() const override { return {1, 1}; }
  void BindShared(SharedBuffers, bool) override {}
  void SaveTo(proto::Checkpoint*) const override {}
  void LoadFrom(const proto::Checkpoint&) override {}

  const std::vector<Action>& BatchActAndTrain(FloatView obs,
                                              int64_t rows) override {
    EXPECT_EQ(rows, 1);
    // The move is legal in the observation's mask (the mover's view).
    const int64_t move = moves_.at(acted_++);
    EXPECT_EQ(obs[obs.size - 9 + move], 1.0f) << "move " << acted_;
    actions_ = {Action::Discrete(move)};
    return actions_;
  }
  void BatchObserveAndTrain(FloatView, const std::vector<double>& rewards,
                            const std::vector<uint8_t>& terminal,
                            const std::vector<uint8_t>& episode_end,
                            bool) override {
    observed.push_back(
        {rewards[0], terminal[0] != 0, episode_end[0] != 0, pending_});
    pending_ = -1;
  }
  std::string TurnTakingRefusal() const override { return ""; }
  void NextTurnPasses(const std::vector<uint8_t>& passes) override {
    ASSERT_EQ(passes.size(), 1u);
    pending_ = passes[0];
  }

  std::vector<Observed> observed;

 private:
  std::vector<int64_t> moves_;
  size_t acted_ = 0;
  int pending_ = -1;
  std::vector<Action> actions_;
};

// The learner plays both sides of every episode (the provider gives no
// opponent), or, with `opponent`, against it.
class Provider final : public OpponentProvider {
 public:
  explicit Provider(GameOpponent* opponent = nullptr) : opponent_(opponent) {}
  GameOpponent* BeginEpisode(int) override { return opponent_; }
  void EndEpisode(double result) override { results.push_back(result); }
  std::vector<double> results;

 private:
  GameOpponent* opponent_;
};

// Records each counted episode's return.
class Returns final : public WorkerExtension {
 public:
  explicit Returns(std::vector<double>* out) : out_(out) {}
  void EpisodeEnded(int64_t, int64_t, double episode_return, bool) override {
    out_->push_back(episode_return);
  }

 private:
  std::vector<double>* out_;
};

class TrainLoopTurnsTest : public ::testing::Test {
 protected:
  // Runs `moves` as `steps` global steps on one TicTacToe environment of
  // learner side `side` with `provider`.
  void Run(ScriptedAgent& agent, Provider& provider, int64_t steps,
           int64_t max_episode_len = 0,
           LearnerSide side = LearnerSide::kAlternate) {
    options_.steps = steps;
    options_.envs_per_process = 1;
    options_.processes = 1;
    options_.eval_interval = 0;
    options_.checkpoint_interval = 0;
    options_.max_episode_len = max_episode_len;
    options_.outdir = dir_.string();
    std::filesystem::create_directories(dir_);
    auto env =
        std::make_unique<SelfPlayEnv>(DefaultGameRegistry().Make("TicTacToe"));
    env->SetOpponentProvider(&provider);
    env->SetLearnerSide(side);
    WorkerContext ctx;
    ctx.options = &options_;
    ctx.control = &control_;
    ctx.agent = &agent;
    ctx.envs.push_back(std::move(env));
    ctx.worker_extensions.push_back(std::make_unique<Returns>(&returns_));
    TrainLoop(ctx);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  TrainOptions options_;
  ControlBlock control_;
  std::vector<double> returns_;
  std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() /
      ("asyncrl_train_loop_" + std::to_string(getpid()));
};

// Game 1: X (the learner, player 0) wins on the top row at its third move;
// game 2: O (the agent as the opponent) wins the middle column.
TEST_F(TrainLoopTurnsTest, BothSidesRowsCarryTheMoversRewardAndTheTurn) {
  ScriptedAgent agent({0, 3, 1, 4, 2, /*game 2:*/ 0, 1, 3, 4, 8, 7});
  Provider provider;
  Run(agent, provider, 11);
  ASSERT_EQ(agent.observed.size(), 11u);
  // Game 1, moves by X, O, X, O, X: the turn passes after every move but
  // the last (terminal); the winning row is X's, +1, and with no other
  // player's turn in its batch the agent is told nothing.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(agent.observed[i].reward, 0.0) << i;
    EXPECT_EQ(agent.observed[i].passes, 1) << i;
    EXPECT_FALSE(agent.observed[i].episode_end) << i;
  }
  EXPECT_EQ(agent.observed[4].reward, 1.0);
  EXPECT_TRUE(agent.observed[4].terminal);
  EXPECT_EQ(agent.observed[4].passes, -1);
  // Game 2: O's winning move is the agent's row as O: +1 for its mover,
  // though the learner (X) lost.
  for (int i = 5; i < 10; ++i) {
    EXPECT_EQ(agent.observed[i].reward, 0.0) << i;
    EXPECT_EQ(agent.observed[i].passes, 1) << i;
  }
  // O's row: the agent is told, and nothing follows the terminal.
  EXPECT_EQ(agent.observed[10].reward, 1.0);
  EXPECT_TRUE(agent.observed[10].terminal);
  EXPECT_EQ(agent.observed[10].passes, 0);
  // The episodes' returns and results are the learner's.
  EXPECT_EQ(returns_, (std::vector<double>{1.0, -1.0}));
  EXPECT_EQ(provider.results, (std::vector<double>{1.0, -1.0}));
}

// An episode cut after three moves (X, O, X) ends on O's turn: the last
// row bootstraps from the other player's value (the turn passes), and is
// not terminal.
TEST_F(TrainLoopTurnsTest, ACutEpisodeBootstrapsFromTheOtherPlayersTurn) {
  ScriptedAgent agent({4, 0, 8, /*next episode:*/ 4, 0});
  Provider provider;
  Run(agent, provider, 5, /*max_episode_len=*/3);
  ASSERT_EQ(agent.observed.size(), 5u);
  EXPECT_TRUE(agent.observed[2].episode_end);
  EXPECT_FALSE(agent.observed[2].terminal);
  EXPECT_EQ(agent.observed[2].passes, 1);
  // The next episode starts on the learner's turn again.
  EXPECT_EQ(agent.observed[3].passes, 1);
  EXPECT_EQ(agent.observed[3].reward, 0.0);
  EXPECT_TRUE(provider.results.empty());  // Cut games are not results.
}

// Plays the lowest legal cell.
class LowestOpponent final : public GameOpponent {
 public:
  std::string Name() const override { return "lowest"; }
  int64_t Choose(const Game& game, std::mt19937_64&) override {
    return game.LegalActions().front();
  }
};

// Against an opponent of the provider's (a snapshot, say), only the
// learner's moves reach the agent, and it is never told of turns.
TEST_F(TrainLoopTurnsTest, AnOpponentsMovesNeverReachTheAgent) {
  LowestOpponent lowest;
  Provider provider(&lowest);
  // X: 4, O: 0, X: 2, O: 1, X: 6 wins the diagonal in three learner rows.
  ScriptedAgent agent({4, 2, 6});
  Run(agent, provider, 3, 0, LearnerSide::kFirst);
  ASSERT_EQ(agent.observed.size(), 3u);
  for (const Observed& o : agent.observed) EXPECT_EQ(o.passes, -1);
  EXPECT_EQ(agent.observed[2].reward, 1.0);
  EXPECT_TRUE(agent.observed[2].terminal);
  EXPECT_EQ(returns_, (std::vector<double>{1.0}));
}

}  // namespace
}  // namespace train_loop_test
}  // namespace asyncrl
