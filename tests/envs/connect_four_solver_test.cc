// The Connect Four solver: hand-built positions of known value (immediate
// wins, forced blocks), agreement with plain full-depth
// minimax on random positions late in the game, the judge's verdicts and
// positions, and the solver as an opponent.
#include "asyncrl/envs/games/connect_four_solver.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace connect_four_solver_test {
namespace {

std::vector<int64_t> Columns(const std::string& digits) {
  std::vector<int64_t> columns;
  for (char c : digits) columns.push_back(c - '0');
  return columns;
}

// A game after a number of random legal moves drawn from [min_plies,
// max_plies] (fewer if it ends first).
std::unique_ptr<ConnectFour> RandomGame(int min_plies, int max_plies,
                                        std::mt19937_64& rng) {
  auto game = std::make_unique<ConnectFour>();
  game->Reset();
  const int plies =
      std::uniform_int_distribution<int>(min_plies, max_plies)(rng);
  for (int i = 0; i < plies && !game->IsTerminal(); ++i) {
    std::vector<int64_t> legal;
    for (int64_t c = 0; c < ConnectFour::kColumns; ++c) {
      if (game->IsLegal(c)) legal.push_back(c);
    }
    game->Play(
        legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)]);
  }
  return game;
}

// Columns 4-6 filled by turns (each column alternates colours, so no line
// of four lies within them): 18 stones, player 0 to move, a position late
// enough to solve at once.
const char* kFilled = "456456456456456456";

// Player 0 has three stacked in column 0 and is to move: a win now, scored
// (43 - 24) / 2 = 9 (24 stones before its winning one).
TEST(ConnectFourSolverTest, AnImmediateWinScoresTheQuickestWin) {
  ConnectFourSolver solver(20);
  const auto game = PlayColumns(Columns(std::string(kFilled) + "010101"));
  EXPECT_EQ(solver.Solve(*game), 9);
  const auto scores = solver.ScoreMoves(*game);
  ASSERT_TRUE(scores[0].has_value());
  EXPECT_EQ(*scores[0], 9);
  for (int c = 1; c < 4; ++c) {
    ASSERT_TRUE(scores[c].has_value());
    EXPECT_LT(*scores[c], 9) << c;  // Slower at best.
  }
  for (int c = 4; c < ConnectFour::kColumns; ++c) {
    EXPECT_FALSE(scores[c].has_value()) << c;  // Full.
  }
  // Not blocking player 1's three in column 1 loses at once.
  EXPECT_EQ(*scores[2], -(43 - 25) / 2);
  EXPECT_EQ(*scores[3], -(43 - 25) / 2);
}

// Player 1 to move: player 0 threatens column 0, and player 1 completes the
// diagonal (3,0)-(4,1)-(5,2)-(6,3) by playing column 3. Column 3 wins at once
// (scored (43 - 23) / 2 = 10), columns 1 and 2 lose at once (player 0's
// 25th stone: -(43 - 24) / 2 = -9), the block in column 0 lies between. The
// judge keeps column 3 and refuses 1 and 2.
TEST(ConnectFourSolverTest, AWinNowBeatsABlockAndTheJudgeSaysSo) {
  ConnectFourSolver solver(20);
  const auto game = PlayColumns(Columns(std::string(kFilled) + "01010"));
  EXPECT_EQ(solver.Solve(*game), 10);
  const auto scores = solver.ScoreMoves(*game);
  EXPECT_EQ(*scores[3], 10);
  EXPECT_EQ(*scores[1], -9);
  EXPECT_EQ(*scores[2], -9);
  EXPECT_LT(*scores[0], 10);
  EXPECT_GT(*scores[0], -9);
  const auto keeps = ValueKeepingMoves(*game, solver);
  EXPECT_TRUE(keeps[3]);
  EXPECT_FALSE(keeps[1]);
  EXPECT_FALSE(keeps[2]);
  EXPECT_EQ(keeps[0], ScoreValue(*scores[0]) > 0);
}

// Random positions 30-34 stones in: the solver's verdict (win, draw, loss)
// equals plain negamax to the end of the game (MinimaxOpponent at depth
// 42: scores exact at terminal positions).
TEST(ConnectFourSolverTest, AgreesWithFullDepthMinimaxLateInTheGame) {
  ConnectFourSolver solver(20);
  MinimaxOpponent minimax(kMaxMinimaxDepth, "minimax:42");
  std::mt19937_64 rng(12);
  int compared = 0, wins = 0, losses = 0, draws = 0;
  while (compared < 40) {
    const std::unique_ptr<ConnectFour> position = RandomGame(30, 34, rng);
    const ConnectFour& game = *position;
    if (game.IsTerminal()) continue;
    const int value = ScoreValue(solver.Solve(game));
    const double reference = minimax.Evaluate(game);
    EXPECT_EQ(value, (reference > 0) - (reference < 0)) << game.ToString();
    wins += value > 0;
    losses += value < 0;
    draws += value == 0;
    ++compared;
  }
  // The set holds every kind of verdict.
  EXPECT_GT(wins, 0);
  EXPECT_GT(losses, 0);
  EXPECT_GT(draws, 0);
}

// One player moved between depths (the opponent mix's minimax under a
// sampled depth) keeps its transposition table: every position still gets
// the value a fresh player of that depth finds, whatever was searched
// before at other depths.
TEST(MinimaxOpponentTest, ADepthChangeSearchesAsAFreshPlayerOfThatDepth) {
  MinimaxOpponent moved(1, "minimax:1");
  std::mt19937_64 rng(5);
  int nonzero = 0;
  for (int n = 0; n < 12; ++n) {
    const std::unique_ptr<ConnectFour> position = RandomGame(8, 16, rng);
    const ConnectFour& game = *position;
    if (game.IsTerminal()) continue;
    for (int depth : {3, 1, 5, 2, 4, 3}) {
      const size_t entries = moved.table_entries();
      moved.SetDepth(depth, "minimax:" + std::to_string(depth));
      EXPECT_EQ(moved.depth(), depth);
      EXPECT_EQ(moved.table_entries(), entries);  // Kept.
      MinimaxOpponent fresh(depth, "fresh");
      const double value = moved.Evaluate(game);
      EXPECT_EQ(value, fresh.Evaluate(game)) << "depth " << depth << "\n"
                                             << game.ToString();
      nonzero += value != 0;
    }
  }
  EXPECT_GT(nonzero, 0);  // The heuristic tells the positions apart.
  EXPECT_GT(moved.table_entries(), 0u);
  EXPECT_EQ(moved.Name(), "minimax:3");
  EXPECT_THROW(moved.SetDepth(0, "minimax:0"), std::invalid_argument);
}

TEST(ConnectFourSolverTest, JudgePositionsAreFixedBySeedAndJudgeSomething) {
  ConnectFourSolver solver(20);
  const auto a = JudgePositions(12, 20, 24, 5, solver);
  const auto b = JudgePositions(12, 20, 24, 5, solver);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, JudgePositions(12, 20, 24, 6, solver));
  for (const auto& columns : a) {
    EXPECT_GE(columns.size(), 20u);
    EXPECT_LE(columns.size(), 24u);
    const auto game = PlayColumns(columns);
    const auto keeps = ValueKeepingMoves(*game, solver);
    int legal = 0, kept = 0;
    for (int c = 0; c < ConnectFour::kColumns; ++c) {
      legal += game->IsLegal(c);
      kept += keeps[c];
    }
    EXPECT_GT(kept, 0);
    EXPECT_LT(kept, legal);
  }
}

// The solver's own moves keep every judged position's value; it never loses
// a position it was given as a win or a draw.
TEST(ConnectFourSolverTest, TheSolverOpponentKeepsTheValue) {
  ConnectFourSolver solver(20);
  SolverOpponent opponent(/*book_depth=*/0);
  std::mt19937_64 rng(3);
  for (const auto& columns : JudgePositions(10, 20, 24, 9, solver)) {
    const auto game = PlayColumns(columns);
    const auto keeps = ValueKeepingMoves(*game, solver);
    EXPECT_TRUE(keeps[opponent.Choose(*game, rng)]) << game->ToString();
  }
  EXPECT_THROW(PlayColumns(Columns("0000000")), std::invalid_argument);
  EXPECT_EQ(MakeFixedOpponent("solver", "ConnectFour")->Name(), "solver");
  EXPECT_THROW(MakeFixedOpponent("solver", "TicTacToe"), std::invalid_argument);
}

}  // namespace
}  // namespace connect_four_solver_test
}  // namespace asyncrl
