// A perfect Connect Four player: the game-theoretic value of a position by
// negamax with alpha-beta over bitboards, a transposition table of upper
// bounds, moves that lose at once pruned, threat-count move ordering and a
// null-window search on the score (the approach of Pascal Pons' solver,
// written for this project). Scores follow his convention: 0 a draw, a
// positive score a win for the player to move, (43 - stones played when the
// winner plays its last stone) / 2 (quicker wins score more), a negative one
// a loss.
//
// The empty board takes minutes; positions a dozen stones in take well under
// a second on one core, so the judge and the `solver` opponent work from
// there (SolverOpponent plays minimax to `book_depth` plies before).
#ifndef ASYNCRL_ENVS_GAMES_CONNECT_FOUR_SOLVER_H_
#define ASYNCRL_ENVS_GAMES_CONNECT_FOUR_SOLVER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "asyncrl/envs/games/connect_four.h"
#include "asyncrl/envs/games/opponents.h"

namespace asyncrl {

class ConnectFourSolver {
 public:
  // A transposition table of 2^table_log2 entries (16 bytes each), kept
  // between calls; table_log2 in [10, 28].
  explicit ConnectFourSolver(int table_log2 = 22);
  ~ConnectFourSolver();
  ConnectFourSolver(const ConnectFourSolver&) = delete;
  ConnectFourSolver& operator=(const ConnectFourSolver&) = delete;

  // The score of `game` for the player to move; game not terminal.
  int Solve(const ConnectFour& game);
  // Each column's score for the player to move (the score of the position
  // after the move, negated); nullopt for a full column. game not terminal.
  std::array<std::optional<int>, ConnectFour::kColumns> ScoreMoves(
      const ConnectFour& game);
  // Positions searched since construction.
  int64_t nodes() const { return nodes_; }

 private:
  struct Table;
  int Solve(uint64_t current, uint64_t mask, int moves);
  int Negamax(uint64_t current, uint64_t mask, int moves, int alpha, int beta);

  std::unique_ptr<Table> table_;
  int64_t nodes_ = 0;
};

// -1, 0 or 1: the sign of a solver score (loss, draw, win).
inline int ScoreValue(int score) { return (score > 0) - (score < 0); }

// Plays perfectly: one of the columns with the best score, drawn uniformly
// (so games differ); the first `book_depth` plies of a game (stones on the
// board below it) by minimax to `book_depth` plies instead, where solving
// takes too long.
class SolverOpponent final : public GameOpponent {
 public:
  explicit SolverOpponent(int book_depth = 8);
  std::string Name() const override { return "solver"; }
  int64_t Choose(const Game& game, std::mt19937_64& rng) override;

 private:
  int book_depth_;
  ConnectFourSolver solver_;
  MinimaxOpponent book_;
};

// Positions for judging play, each as the columns played from the empty
// board: `count` games of `min_plies` to `max_plies` uniformly random legal
// moves (a number drawn per position), none finished, each with a move that
// keeps the position's value and one that does not (positions where every
// move is as good judge nothing), from `seed`. Deterministic for a seed.
std::vector<std::vector<int64_t>> JudgePositions(int count, int min_plies,
                                                 int max_plies, uint64_t seed,
                                                 ConnectFourSolver& solver);

// The board after `columns` (each legal in turn) from the empty one.
std::unique_ptr<ConnectFour> PlayColumns(const std::vector<int64_t>& columns);

// A judged position: the columns played from the empty board, and bit c
// set when column c keeps its value.
struct JudgedPosition {
  const char* columns;
  int keeps;
};
// The judge's fixed set (connect_four_judge_set.cc, written by
// apps/connect_four_judge_set.cc): 200 positions 10 to 16 stones in.
const std::vector<JudgedPosition>& ConnectFourJudgeSet();

// Which columns keep the position's game-theoretic value (win, draw or
// loss for the player to move): the judge's verdict on a move.
std::array<bool, ConnectFour::kColumns> ValueKeepingMoves(
    const ConnectFour& game, ConnectFourSolver& solver);

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_GAMES_CONNECT_FOUR_SOLVER_H_
