// Two-player games and their fixed opponents: one conformance suite run over
// every registered game (random legal play, masks, illegal actions,
// observations, cloning, results), the rules of each game, and the
// opponents' choices in positions whose best move is known.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "asyncrl/envs/games/connect_four.h"
#include "asyncrl/envs/games/game.h"
#include "asyncrl/envs/games/opponents.h"
#include "asyncrl/envs/games/tictactoe.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace games_test {
namespace {

// Plays `actions` in order from the initial position.
void PlayAll(Game& game, const std::vector<int64_t>& actions) {
  for (int64_t a : actions) game.Play(a);
}

// "0123..." as one action per digit.
std::vector<int64_t> Digits(const std::string& digits) {
  std::vector<int64_t> actions;
  for (char c : digits) actions.push_back(c - '0');
  return actions;
}

// Whether `f` throws std::invalid_argument whose message holds every one of
// `parts`; the message is reported when it does not.
template <typename F>
::testing::AssertionResult ThrowsNaming(F f,
                                        const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    for (const auto& part : parts) {
      if (msg.find(part) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "message lacks '" << part << "': " << msg;
      }
    }
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no std::invalid_argument thrown";
}

// ---------------------------------------------------------------------------
// The conformance suite.

class GameConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Game> Make() {
    return DefaultGameRegistry().Make(GetParam());
  }

  // Cells on the board: every move fills one, so no game is longer.
  static int64_t Cells(const Game& game) { return game.ObservationSize() / 2; }

  // Plays uniformly random legal moves from `rng` until the end.
  static std::vector<int64_t> PlayRandomGame(Game& game, std::mt19937_64& rng) {
    std::vector<int64_t> actions;
    while (!game.IsTerminal()) {
      const std::vector<int64_t> legal = game.LegalActions();
      std::uniform_int_distribution<size_t> pick(0, legal.size() - 1);
      actions.push_back(legal[pick(rng)]);
      game.Play(actions.back());
    }
    return actions;
  }

  // The mask, IsLegal and LegalActions agree.
  static void ExpectLegalityConsistent(const Game& game) {
    const std::vector<uint8_t> mask = game.LegalMask();
    ASSERT_EQ(static_cast<int64_t>(mask.size()), game.NumActions());
    std::vector<int64_t> from_mask;
    for (int64_t a = 0; a < game.NumActions(); ++a) {
      ASSERT_EQ(mask[a] == 1, game.IsLegal(a)) << "action " << a;
      if (mask[a]) from_mask.push_back(a);
    }
    EXPECT_EQ(from_mask, game.LegalActions());
    EXPECT_FALSE(game.IsLegal(-1));
    EXPECT_FALSE(game.IsLegal(game.NumActions()));
  }

  // The two players' observations are the same planes swapped, and each
  // player's plane holds that player's pieces.
  static void ExpectObservationsSwapped(const Game& game, int moves_played) {
    const int64_t size = game.ObservationSize();
    const int64_t plane = size / 2;
    std::vector<float> obs0(size, -1.0f);
    std::vector<float> obs1(size, -1.0f);
    game.Observe(0, obs0.data());
    game.Observe(1, obs1.data());
    int pieces[2] = {0, 0};
    for (int64_t i = 0; i < plane; ++i) {
      ASSERT_EQ(obs0[i], obs1[plane + i]) << i;
      ASSERT_EQ(obs1[i], obs0[plane + i]) << i;
      ASSERT_TRUE(obs0[i] == 0.0f || obs0[i] == 1.0f) << obs0[i];
      ASSERT_TRUE(obs1[i] == 0.0f || obs1[i] == 1.0f) << obs1[i];
      ASSERT_FALSE(obs0[i] == 1.0f && obs1[i] == 1.0f) << "cell " << i;
      pieces[0] += static_cast<int>(obs0[i]);
      pieces[1] += static_cast<int>(obs1[i]);
    }
    // Player 0 moves first.
    EXPECT_EQ(pieces[0], (moves_played + 1) / 2);
    EXPECT_EQ(pieces[1], moves_played / 2);
  }
};

TEST_P(GameConformanceTest, DeclaresConsistentShapes) {
  auto game = Make();
  EXPECT_EQ(game->Name(), GetParam());
  const std::vector<int64_t> shape = game->ObservationShape();
  ASSERT_EQ(shape.size(), 3u);
  EXPECT_EQ(shape[0], 2);
  EXPECT_EQ(game->ObservationSize(), shape[0] * shape[1] * shape[2]);
  EXPECT_GE(game->NumActions(), 2);
  EXPECT_EQ(game->CurrentPlayer(), 0);
  EXPECT_FALSE(game->IsTerminal());
  EXPECT_EQ(game->LegalActions().size(),
            static_cast<size_t>(game->NumActions()));
}

TEST_P(GameConformanceTest, RandomPlayKeepsEveryInvariantAndEnds) {
  auto game = Make();
  std::mt19937_64 rng(2024);
  int decisive = 0;
  for (int episode = 0; episode < 1000; ++episode) {
    game->Reset();
    int moves = 0;
    ExpectLegalityConsistent(*game);
    while (!game->IsTerminal()) {
      ASSERT_LT(moves, Cells(*game)) << game->ToString();
      const int player = game->CurrentPlayer();
      ASSERT_TRUE(player == 0 || player == 1);
      EXPECT_EQ(player, moves % 2);
      EXPECT_EQ(game->Result(0), 0.0);
      const double h = game->Heuristic(0);
      EXPECT_GT(h, -1.0);
      EXPECT_LT(h, 1.0);
      EXPECT_DOUBLE_EQ(h, -game->Heuristic(1));
      const std::vector<int64_t> legal = game->LegalActions();
      ASSERT_FALSE(legal.empty());
      std::uniform_int_distribution<size_t> pick(0, legal.size() - 1);
      const int64_t action = legal[pick(rng)];
      const bool would_win = game->WouldWin(player, action);
      game->Play(action);
      ++moves;
      EXPECT_EQ(would_win, game->Result(player) == 1.0) << game->ToString();
      ExpectLegalityConsistent(*game);
      ExpectObservationsSwapped(*game, moves);
      if (::testing::Test::HasFatalFailure()) return;
    }
    EXPECT_LE(moves, Cells(*game));
    EXPECT_TRUE(game->LegalActions().empty());
    const double r0 = game->Result(0);
    EXPECT_TRUE(r0 == -1.0 || r0 == 0.0 || r0 == 1.0) << r0;
    EXPECT_EQ(r0, -game->Result(1));
    if (r0 != 0.0) ++decisive;
    // A draw fills the board.
    if (r0 == 0.0) {
      EXPECT_EQ(moves, Cells(*game)) << game->ToString();
    }
  }
  EXPECT_GT(decisive, 500);
}

TEST_P(GameConformanceTest, IllegalActionsThrowNamingGameAndAction) {
  auto game = Make();
  const std::string name = game->Name();
  const int64_t n = game->NumActions();
  for (int64_t bad : {int64_t{-1}, n, n + 5}) {
    EXPECT_TRUE(ThrowsNaming([&] { game->Play(bad); },
                             {name, "action " + std::to_string(bad),
                              "out of range", "legal: 0, 1"}));
  }
  // Play until some action is taken (occupied cell, full column).
  std::mt19937_64 rng(3);
  int64_t taken = -1;
  for (int attempt = 0; attempt < 100 && taken < 0; ++attempt) {
    game->Reset();
    while (!game->IsTerminal() && taken < 0) {
      const std::vector<int64_t> legal = game->LegalActions();
      if (static_cast<int64_t>(legal.size()) < n) {
        for (int64_t a = 0; a < n && taken < 0; ++a) {
          if (!game->IsLegal(a)) taken = a;
        }
        break;
      }
      std::uniform_int_distribution<size_t> pick(0, legal.size() - 1);
      game->Play(legal[pick(rng)]);
    }
  }
  ASSERT_GE(taken, 0);
  const std::string before = game->ToString();
  EXPECT_TRUE(ThrowsNaming(
      [&] { game->Play(taken); },
      {name, "action " + std::to_string(taken) + " is illegal", "legal: "}));
  EXPECT_EQ(game->ToString(), before) << "a refused action changed the game";
  PlayRandomGame(*game, rng);
  for (int64_t a = 0; a < n; ++a) {
    EXPECT_FALSE(game->WouldWin(0, a));
    EXPECT_TRUE(ThrowsNaming(
        [&] { game->Play(a); },
        {name, "action " + std::to_string(a), "game over", "legal: none"}));
  }
}

TEST_P(GameConformanceTest, CloneIsIndependent) {
  auto game = Make();
  std::mt19937_64 rng(5);
  game->Play(game->LegalActions().front());
  auto copy = game->Clone();
  EXPECT_EQ(copy->ToString(), game->ToString());
  EXPECT_EQ(copy->CurrentPlayer(), game->CurrentPlayer());
  const std::string original = game->ToString();
  PlayRandomGame(*copy, rng);
  EXPECT_TRUE(copy->IsTerminal());
  EXPECT_FALSE(game->IsTerminal());
  EXPECT_EQ(game->ToString(), original);
  game->Play(game->LegalActions().back());
  EXPECT_NE(game->ToString(), original);
}

TEST_P(GameConformanceTest, SameActionsGiveSamePosition) {
  std::mt19937_64 rng(11);
  for (int episode = 0; episode < 20; ++episode) {
    auto first = Make();
    const std::vector<int64_t> actions = PlayRandomGame(*first, rng);
    auto second = Make();
    PlayAll(*second, actions);
    EXPECT_EQ(second->ToString(), first->ToString());
    EXPECT_EQ(second->Result(0), first->Result(0));
    EXPECT_EQ(second->PositionKey(), first->PositionKey());
    // Reset returns to the initial position.
    first->Reset();
    EXPECT_EQ(first->ToString(), Make()->ToString());
    EXPECT_EQ(first->CurrentPlayer(), 0);
  }
}

TEST_P(GameConformanceTest, PositionKeysTellPositionsApart) {
  auto game = Make();
  std::mt19937_64 rng(13);
  std::map<uint64_t, std::string> seen;
  for (int episode = 0; episode < 200; ++episode) {
    game->Reset();
    while (true) {
      const std::optional<uint64_t> key = game->PositionKey();
      if (!key) GTEST_SKIP() << "no position keys";
      auto [it, inserted] = seen.emplace(*key, game->ToString());
      ASSERT_EQ(it->second, game->ToString()) << "key " << *key;
      if (game->IsTerminal()) break;
      const std::vector<int64_t> legal = game->LegalActions();
      std::uniform_int_distribution<size_t> pick(0, legal.size() - 1);
      game->Play(legal[pick(rng)]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllGames, GameConformanceTest,
                         ::testing::ValuesIn(DefaultGameRegistry().Names()),
                         [](const auto& info) { return info.param; });

// ---------------------------------------------------------------------------
// The registry.

TEST(GameRegistryTest, RegistersTicTacToeAndConnectFour) {
  EXPECT_EQ(DefaultGameRegistry().Names(),
            (std::vector<std::string>{"ConnectFour", "TicTacToe"}));
  EXPECT_TRUE(DefaultGameRegistry().Contains("TicTacToe"));
  EXPECT_FALSE(DefaultGameRegistry().Contains("Chess"));
}

TEST(GameRegistryTest, UnknownNameListsEveryRegisteredName) {
  EXPECT_TRUE(ThrowsNaming(
      [] { DefaultGameRegistry().Make("Chess"); },
      {"unknown game 'Chess'", "registered: ConnectFour, TicTacToe"}));
}

TEST(GameRegistryTest, DuplicateNameIsRefused) {
  GameRegistry registry;
  registry.Register("TicTacToe", [] { return std::make_unique<TicTacToe>(); });
  EXPECT_TRUE(ThrowsNaming(
      [&] {
        registry.Register("TicTacToe",
                          [] { return std::make_unique<TicTacToe>(); });
      },
      {"'TicTacToe'", "already registered"}));
}

// ---------------------------------------------------------------------------
// Tic-tac-toe rules.

TEST(TicTacToeTest, EveryRowColumnAndDiagonalWins) {
  const std::vector<std::vector<int64_t>> lines = {
      {0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {0, 3, 6},
      {1, 4, 7}, {2, 5, 8}, {0, 4, 8}, {2, 4, 6}};
  auto completes_line = [&](const std::vector<int64_t>& cells) {
    for (const auto& line : lines) {
      if (std::all_of(line.begin(), line.end(), [&](int64_t c) {
            return std::find(cells.begin(), cells.end(), c) != cells.end();
          })) {
        return true;
      }
    }
    return false;
  };
  for (const auto& line : lines) {
    for (int winner = 0; winner < 2; ++winner) {
      // The loser's cells: off the line and never three in a line.
      std::vector<int64_t> others;
      for (int64_t cell = 0; cell < 9 && others.size() < 3; ++cell) {
        if (std::find(line.begin(), line.end(), cell) != line.end()) continue;
        others.push_back(cell);
        if (completes_line(others)) others.pop_back();
      }
      ASSERT_EQ(others.size(), 3u);
      TicTacToe game;
      size_t next_other = 0;
      if (winner == 1) game.Play(others[next_other++]);
      for (int i = 0; i < 3; ++i) {
        ASSERT_FALSE(game.IsTerminal()) << game.ToString();
        EXPECT_EQ(game.WouldWin(winner, line[i]), i == 2);
        game.Play(line[i]);
        if (i < 2) game.Play(others[next_other++]);
      }
      EXPECT_TRUE(game.IsTerminal()) << game.ToString();
      EXPECT_EQ(game.Result(winner), 1.0) << game.ToString();
      EXPECT_EQ(game.Result(1 - winner), -1.0);
    }
  }
}

TEST(TicTacToeTest, FullBoardWithoutLineIsDraw) {
  TicTacToe game;
  PlayAll(game, {0, 1, 2, 4, 3, 5, 7, 6, 8});
  EXPECT_EQ(game.ToString(), "XOX\nXOO\nOXX\n");
  EXPECT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.Result(0), 0.0);
  EXPECT_EQ(game.Result(1), 0.0);
}

TEST(TicTacToeTest, ObservationIsRowMajorPerPlayer) {
  TicTacToe game;
  PlayAll(game, {4, 2});
  std::vector<float> obs(game.ObservationSize());
  game.Observe(0, obs.data());
  std::vector<float> expected(18, 0.0f);
  expected[4] = 1.0f;      // X (player 0) in the centre
  expected[9 + 2] = 1.0f;  // O top right
  EXPECT_EQ(obs, expected);
  EXPECT_TRUE(ThrowsNaming([&] { game.Play(4); },
                           {"TicTacToe: action 4 is illegal (cell taken); "
                            "legal: 0, 1, 3, 5, 6, 7, 8"}));
}

// ---------------------------------------------------------------------------
// Connect Four rules.

class ConnectFourTest : public ::testing::Test {
 protected:
  // Plays the columns, then expects a win for `winner` on the last move.
  static void ExpectWinAfter(const std::string& columns, int winner) {
    ConnectFour game;
    const std::vector<int64_t> actions = Digits(columns);
    PlayAll(game, {actions.begin(), actions.end() - 1});
    ASSERT_FALSE(game.IsTerminal()) << game.ToString();
    EXPECT_TRUE(game.WouldWin(winner, actions.back())) << game.ToString();
    game.Play(actions.back());
    EXPECT_TRUE(game.IsTerminal()) << game.ToString();
    EXPECT_EQ(game.Result(winner), 1.0) << game.ToString();
    EXPECT_EQ(game.Result(1 - winner), -1.0);
  }
};

TEST_F(ConnectFourTest, HorizontalWins) {
  ExpectWinAfter("0011223", 0);
  ExpectWinAfter("03040516", 1);  // O on the bottom row 3..6
}

TEST_F(ConnectFourTest, VerticalWins) { ExpectWinAfter("0101010", 0); }

TEST_F(ConnectFourTest, RisingDiagonalWins) {
  ExpectWinAfter("01122323363", 0);
}

TEST_F(ConnectFourTest, FallingDiagonalWins) {
  ExpectWinAfter("65544343303", 0);
}

TEST_F(ConnectFourTest, NoWinAcrossColumnEdges) {
  // X on rows 3..5 of column 0 and the bottom of column 1: four in a row
  // of bit positions only if the columns had no guard bit between them.
  ConnectFour game;
  PlayAll(game, Digits("10606005050"));
  EXPECT_EQ(game.ToString(),
            "X......\nX......\nX......\nO......\nO....OX\nOX...OX\n"
            "0123456\n");
  EXPECT_FALSE(game.IsTerminal());
  EXPECT_EQ(game.Result(0), 0.0);
}

TEST_F(ConnectFourTest, FullColumnIsIllegal) {
  ConnectFour game;
  PlayAll(game, Digits("000000"));
  EXPECT_FALSE(game.IsTerminal());
  EXPECT_FALSE(game.IsLegal(0));
  EXPECT_FALSE(game.WouldWin(0, 0));
  EXPECT_EQ(game.LegalActions(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(ThrowsNaming([&] { game.Play(0); },
                           {"ConnectFour: action 0 is illegal (column full); "
                            "legal: 1, 2, 3, 4, 5, 6"}));
}

TEST_F(ConnectFourTest, FullBoardIsDraw) {
  ConnectFour game;
  PlayAll(game, Digits("210312450200431236152134446455612503560366"));
  EXPECT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.Result(0), 0.0);
  EXPECT_EQ(game.Result(1), 0.0);
  EXPECT_TRUE(game.LegalActions().empty());
}

TEST_F(ConnectFourTest, ObservationRowZeroIsTheTop) {
  ConnectFour game;
  PlayAll(game, Digits("33"));
  std::vector<float> obs(game.ObservationSize());
  game.Observe(0, obs.data());
  std::vector<float> expected(84, 0.0f);
  expected[5 * 7 + 3] = 1.0f;       // X at the bottom of column 3
  expected[42 + 4 * 7 + 3] = 1.0f;  // O on top of it
  EXPECT_EQ(obs, expected);
  EXPECT_EQ(game.ToString(),
            ".......\n.......\n.......\n.......\n...O...\n...X...\n"
            "0123456\n");
}

TEST_F(ConnectFourTest, HeuristicFavoursTheCentreAndThreats) {
  ConnectFour game;
  EXPECT_EQ(game.Heuristic(0), 0.0);
  PlayAll(game, Digits("3"));
  EXPECT_GT(game.Heuristic(0), 0.0);
  PlayAll(game, Digits("03"));  // X: 3, 3 stacked; O: 0
  EXPECT_GT(game.Heuristic(0), 0.0);
  EXPECT_LT(game.Heuristic(1), 0.0);
}

// ---------------------------------------------------------------------------
// Opponents.

class OpponentTest : public ::testing::Test {
 protected:
  // Every choice of `spec` over 20 seeds at the position after `actions`.
  static std::set<int64_t> Choices(const std::string& spec,
                                   const std::string& game_name,
                                   const std::vector<int64_t>& actions) {
    auto game = DefaultGameRegistry().Make(game_name);
    PlayAll(*game, actions);
    std::set<int64_t> choices;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      std::mt19937_64 rng(seed);
      choices.insert(MakeFixedOpponent(spec, game_name)->Choose(*game, rng));
    }
    return choices;
  }

  struct Score {
    int wins = 0;
    int draws = 0;
    int losses = 0;
  };

  // `games` games of `a` against `b`, `a` moving first in the even ones;
  // the score is `a`'s.
  static Score PlayMatch(const std::string& game_name, const std::string& a,
                         const std::string& b, int games, uint64_t seed) {
    Score score;
    std::mt19937_64 rng(seed);
    for (int i = 0; i < games; ++i) {
      auto game = DefaultGameRegistry().Make(game_name);
      std::unique_ptr<GameOpponent> players[2] = {
          MakeFixedOpponent(a, game_name), MakeFixedOpponent(b, game_name)};
      const int a_side = i % 2;
      if (a_side == 1) std::swap(players[0], players[1]);
      while (!game->IsTerminal()) {
        const int64_t action =
            players[game->CurrentPlayer()]->Choose(*game, rng);
        EXPECT_TRUE(game->IsLegal(action)) << action;
        game->Play(action);
      }
      const double r = game->Result(a_side);
      (r > 0 ? score.wins : r < 0 ? score.losses : score.draws) += 1;
    }
    return score;
  }
};

// X: 0, 1; O: 3, 4. X to move wins at 2 (O threatens 5).
const std::vector<int64_t> kTicTacToeWinOrBlock = {0, 3, 1, 4};
// X: 0, 8; O: 3, 4. X to move must block at 5.
const std::vector<int64_t> kTicTacToeMustBlock = {0, 3, 8, 4};

TEST_F(OpponentTest, GreedyTakesTheImmediateWin) {
  EXPECT_EQ(Choices("greedy", "TicTacToe", kTicTacToeWinOrBlock),
            (std::set<int64_t>{2}));
}

TEST_F(OpponentTest, GreedyBlocksTheOpponentsWin) {
  EXPECT_EQ(Choices("greedy", "TicTacToe", kTicTacToeMustBlock),
            (std::set<int64_t>{5}));
}

TEST_F(OpponentTest, MinimaxTakesTheWinAndBlocks) {
  EXPECT_EQ(Choices("minimax", "TicTacToe", kTicTacToeWinOrBlock),
            (std::set<int64_t>{2}));
  EXPECT_EQ(Choices("minimax", "TicTacToe", kTicTacToeMustBlock),
            (std::set<int64_t>{5}));
}

TEST_F(OpponentTest, MinimaxPreventsAFork) {
  // X: 0, 2; O: 1. X threatens forks at 4, 6 and 8; only the centre holds
  // the draw for O (greedy sees no immediate threat).
  EXPECT_EQ(Choices("minimax", "TicTacToe", {0, 1, 2}), (std::set<int64_t>{4}));
  // X: 0, 7; O: 2. Only 8 avoids a loss.
  EXPECT_EQ(Choices("minimax", "TicTacToe", {0, 2, 7}), (std::set<int64_t>{8}));
}

TEST_F(OpponentTest, MinimaxChoosesAmongEquallyGoodMoves) {
  // Every opening move draws under perfect play.
  EXPECT_GT(Choices("minimax", "TicTacToe", {}).size(), 3u);
}

TEST_F(OpponentTest, PerfectMinimaxAlwaysDrawsItself) {
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const Score score = PlayMatch("TicTacToe", "minimax", "minimax", 1, seed);
    EXPECT_EQ(score.draws, 1) << "seed " << seed;
  }
}

TEST_F(OpponentTest, PerfectMinimaxNeverLosesToRandom) {
  const Score score = PlayMatch("TicTacToe", "minimax", "random", 200, 17);
  EXPECT_EQ(score.losses, 0);
  EXPECT_GT(score.wins, 150);
}

TEST_F(OpponentTest, PerfectMinimaxNeverLosesToGreedy) {
  const Score score = PlayMatch("TicTacToe", "minimax", "greedy", 100, 19);
  EXPECT_EQ(score.losses, 0);
}

TEST_F(OpponentTest, ConnectFourMinimaxTakesTheWinBeforeBlocking) {
  // X: column 0 three high; O: column 1 three high; X to move.
  EXPECT_EQ(Choices("minimax:2", "ConnectFour", Digits("010101")),
            (std::set<int64_t>{0}));
}

TEST_F(OpponentTest, ConnectFourMinimaxBlocksAVerticalThreat) {
  // X: column 0 three high; O to move must block.
  EXPECT_EQ(Choices("minimax:2", "ConnectFour", Digits("01010")),
            (std::set<int64_t>{0}));
  EXPECT_EQ(Choices("greedy", "ConnectFour", Digits("01010")),
            (std::set<int64_t>{0}));
}

TEST_F(OpponentTest, ConnectFourMinimaxBeatsRandom) {
  const Score score = PlayMatch("ConnectFour", "minimax:4", "random", 20, 23);
  EXPECT_GE(score.wins, 19);
}

TEST_F(OpponentTest, ConnectFourDefaultMinimaxBeatsGreedyMostly) {
  const Score score = PlayMatch("ConnectFour", "minimax", "greedy", 20, 29);
  EXPECT_GT(score.wins, score.losses);
}

TEST_F(OpponentTest, RandomIsDeterministicGivenTheSeed) {
  for (const std::string game_name : {"TicTacToe", "ConnectFour"}) {
    auto moves = [&](uint64_t seed) {
      std::mt19937_64 rng(seed);
      auto game = DefaultGameRegistry().Make(game_name);
      auto random = MakeFixedOpponent("random", game_name);
      std::vector<int64_t> actions;
      while (!game->IsTerminal()) {
        actions.push_back(random->Choose(*game, rng));
        game->Play(actions.back());
      }
      return actions;
    };
    EXPECT_EQ(moves(7), moves(7)) << game_name;
    std::set<std::vector<int64_t>> distinct;
    for (uint64_t seed = 0; seed < 10; ++seed) distinct.insert(moves(seed));
    EXPECT_GT(distinct.size(), 5u) << game_name;
  }
}

TEST_F(OpponentTest, NamesAreTheirSpecs) {
  for (const std::string spec :
       {"random", "greedy", "minimax", "minimax:1", "minimax:12"}) {
    EXPECT_EQ(MakeFixedOpponent(spec, "ConnectFour")->Name(), spec);
  }
  EXPECT_EQ(MakeFixedOpponent("minimax:42", "TicTacToe")->Name(), "minimax:42");
}

TEST_F(OpponentTest, UnknownSpecsNameTheSpecAndTheAcceptedValues) {
  for (const std::string spec :
       {"alphazero", "minimax:0", "minimax:x", "minimax:", "minimax:43",
        "minimax:3x", "minimax:-1", "Random"}) {
    EXPECT_TRUE(ThrowsNaming(
        [&] { MakeFixedOpponent(spec, "TicTacToe"); },
        {"opponent '" + spec + "' is unknown",
         "accepted: random, greedy, minimax, minimax:D (D in 1..42 for "
         "TicTacToe)"}))
        << spec;
  }
  // Connect Four's search is bounded: deeper than 12 plies takes minutes to
  // hours a move (the solver plays it perfectly).
  EXPECT_TRUE(ThrowsNaming(
      [&] { MakeFixedOpponent("minimax:13", "ConnectFour"); },
      {"opponent 'minimax:13' is unknown",
       "minimax:D (D in 1..12 for ConnectFour), solver (ConnectFour)"}));
}

TEST_F(OpponentTest, ChoosingAtTheEndIsRefused) {
  TicTacToe game;
  PlayAll(game, {0, 3, 1, 4, 2});
  std::mt19937_64 rng(1);
  for (const std::string spec : {"random", "greedy", "minimax"}) {
    EXPECT_TRUE(ThrowsNaming(
        [&] { MakeFixedOpponent(spec, "TicTacToe")->Choose(game, rng); },
        {"TicTacToe", "game is over"}))
        << spec;
  }
}

TEST_F(OpponentTest, DefaultEvalOpponentsWeakestFirst) {
  EXPECT_EQ(DefaultEvalOpponents("TicTacToe"),
            (std::vector<std::string>{"random", "greedy", "minimax"}));
  EXPECT_EQ(DefaultEvalOpponents("ConnectFour"),
            (std::vector<std::string>{"random", "greedy", "minimax:2"}));
  EXPECT_EQ(DefaultEvalOpponents("Go"),
            (std::vector<std::string>{"random", "greedy"}));
  for (const auto& game_name : DefaultGameRegistry().Names()) {
    for (const auto& spec : DefaultEvalOpponents(game_name)) {
      EXPECT_EQ(MakeFixedOpponent(spec, game_name)->Name(), spec);
    }
  }
}

}  // namespace
}  // namespace games_test
}  // namespace asyncrl
