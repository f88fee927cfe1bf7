// Fixed (non-learning) players for two-player Games: uniform random, greedy
// (win at once, else block, else random) and depth-limited negamax. They are
// the opponents of self-play evaluation and the sparring partners of tests.
#ifndef ASYNCRL_ENVS_GAMES_OPPONENTS_H_
#define ASYNCRL_ENVS_GAMES_OPPONENTS_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "asyncrl/envs/games/game.h"

namespace asyncrl {

// A player that chooses moves for whoever is to move in `game`. An instance
// may keep memos between calls: one instance per thread.
class GameOpponent {
 public:
  virtual ~GameOpponent() = default;
  // "random", "greedy", "minimax", "minimax:3": the spec that made it.
  virtual std::string Name() const = 0;
  // A legal action for game.CurrentPlayer(); game not terminal. The only
  // randomness is drawn from `rng`, so a seed fixes the choices.
  virtual int64_t Choose(const Game& game, std::mt19937_64& rng) = 0;
};

// Uniform over the legal actions.
class RandomOpponent final : public GameOpponent {
 public:
  std::string Name() const override { return "random"; }
  int64_t Choose(const Game& game, std::mt19937_64& rng) override;
};

// An action that wins at once if there is one, else one that takes away the
// opponent's immediate win, else uniform; ties are broken uniformly.
class GreedyOpponent final : public GameOpponent {
 public:
  std::string Name() const override { return "greedy"; }
  int64_t Choose(const Game& game, std::mt19937_64& rng) override;
};

// Negamax with alpha-beta to `depth` plies: wins score 1 plus a bonus for
// each ply left (quicker wins, slower losses), draws 0, positions at the
// depth limit Game::Heuristic(). Every root move is scored and one of the
// best is drawn uniformly. Games with a PositionKey() share a transposition
// table between calls (bounded; cleared when full).
class MinimaxOpponent final : public GameOpponent {
 public:
  // depth >= 1; `name` is what Name() returns.
  MinimaxOpponent(int depth, std::string name);
  ~MinimaxOpponent() override;
  std::string Name() const override { return name_; }
  int64_t Choose(const Game& game, std::mt19937_64& rng) override;
  // The score of `game` for the player to move, searched to the depth
  // (tests, tools). game not terminal.
  double Evaluate(const Game& game);
  // Searches to `depth` (1..kMaxMinimaxDepth) from the next Choose on,
  // Name() now `name`. The transposition table stays: its entries are keyed
  // by the depth left below their position, which means the same at any
  // root depth.
  void SetDepth(int depth, std::string name);
  int depth() const { return depth_; }
  // Positions in the transposition table (tests).
  size_t table_entries() const;

 private:
  struct Table;
  double Negamax(const Game& game, int player, int depth, double alpha,
                 double beta);

  int depth_ = 1;
  std::string name_;
  std::unique_ptr<Table> table_;
};

// The deepest minimax accepted ("minimax:42": Connect Four's longest game).
inline constexpr int kMaxMinimaxDepth = 42;

// The depth "minimax" searches in `game_name`: kMaxMinimaxDepth (perfect
// play) for TicTacToe, 4 for other games.
int DefaultMinimaxDepth(const std::string& game_name);

// The deepest search `game_name` offers its users (the minimax_opponent_depth
// parameter, "minimax:D" opponents): kMaxMinimaxDepth for TicTacToe (its
// whole game), 12 for ConnectFour, whose search grows ~2.5x a ply (0.2 s
// for the slowest move at 11 plies on a 2-core AMD EPYC; 42 plies would be
// a full solve, hours a move, with SIGINT unanswered meanwhile): the
// solver opponent plays it perfectly instead.
int MaxMinimaxDepth(const std::string& game_name);

// "random" | "greedy" | "minimax" | "minimax:D" (D in [1, 42]). "minimax" is
// perfect play for TicTacToe (full depth) and depth 4 for other games
// (ConnectFour). Throws std::invalid_argument: "opponent 'x' is unknown;
// accepted: random, greedy, minimax, minimax:D (D in 1..42)".
std::unique_ptr<GameOpponent> MakeFixedOpponent(const std::string& spec,
                                                const std::string& game_name);

// The fixed opponents an evaluation plays by default, weakest first:
// TicTacToe {random, greedy, minimax}; ConnectFour {random, greedy,
// minimax:2}; others {random, greedy}.
std::vector<std::string> DefaultEvalOpponents(const std::string& game_name);

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_GAMES_OPPONENTS_H_
