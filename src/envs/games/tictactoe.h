// Tic-tac-toe on a 3x3 board as a two-player Game: actions are the cells in
// row-major order (0 top-left .. 8 bottom-right); player 0 (X) moves first.
#ifndef ASYNCRL_ENVS_GAMES_TICTACTOE_H_
#define ASYNCRL_ENVS_GAMES_TICTACTOE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asyncrl/envs/games/game.h"

namespace asyncrl {

// The position is two 9-bit masks, so Play/IsLegal/WouldWin never allocate.
// Not thread-safe.
class TicTacToe final : public Game {
 public:
  static constexpr int kSize = 3;
  static constexpr int kCells = kSize * kSize;

  TicTacToe() = default;

  std::string Name() const override { return "TicTacToe"; }
  int64_t NumActions() const override { return kCells; }
  // {2, 3, 3}.
  std::vector<int64_t> ObservationShape() const override;

  void Reset() override;
  int CurrentPlayer() const override { return state_.player; }
  bool IsTerminal() const override;
  bool IsLegal(int64_t action) const override;
  void Play(int64_t action) override;
  double Result(int player) const override;
  void Observe(int player, float* out) const override;
  bool WouldWin(int player, int64_t action) const override;
  // The cells of players 0 and 1 as bits 0..8 and 9..17.
  std::optional<uint64_t> PositionKey() const override;
  // Three lines of "X", "O" and "." (empty), top row first.
  std::string ToString() const override;
  // The board, one frame a move, two moves a second.
  bool Render(Picture& picture) const override;
  std::unique_ptr<Game> Clone() const override;

 private:
  struct State {
    uint16_t pieces[2] = {0, 0};  // bit i: the player holds cell i
    int player = 0;
    int moves = 0;
    int winner = -1;  // -1 while no line is complete
  };
  State state_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_GAMES_TICTACTOE_H_
