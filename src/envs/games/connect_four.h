// Connect Four on 7 columns x 6 rows as a two-player Game: an action is a
// column (0..6) and the piece drops to its lowest empty row; four in a row
// (horizontal, vertical or diagonal) wins, a full board is a draw. Player 0
// moves first.
#ifndef ASYNCRL_ENVS_GAMES_CONNECT_FOUR_H_
#define ASYNCRL_ENVS_GAMES_CONNECT_FOUR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asyncrl/envs/games/game.h"

namespace asyncrl {

// Bitboards (7 bits a column: 6 rows from the bottom and an empty guard
// bit), so Play/IsLegal/WouldWin never allocate. Not thread-safe.
class ConnectFour final : public Game {
 public:
  static constexpr int kColumns = 7;
  static constexpr int kRows = 6;

  ConnectFour() = default;

  std::string Name() const override { return "ConnectFour"; }
  int64_t NumActions() const override { return kColumns; }
  // {2, 6, 7}; row 0 is the top row.
  std::vector<int64_t> ObservationShape() const override;

  void Reset() override;
  int CurrentPlayer() const override { return state_.player; }
  bool IsTerminal() const override;
  bool IsLegal(int64_t action) const override;
  void Play(int64_t action) override;
  double Result(int player) const override;
  void Observe(int player, float* out) const override;
  bool WouldWin(int player, int64_t action) const override;
  // Counts every length-4 window (69 of them) that holds pieces of one
  // player only, weighted by how many (1, 4, 16, 64): `player`'s count up,
  // the opponent's down; tanh(score / 32).
  double Heuristic(int player) const override;
  // Player 0's pieces plus the occupied cells (unique, < 2^49).
  std::optional<uint64_t> PositionKey() const override;
  // Six lines of "X", "O" and "." (empty), top row first, and a line of
  // column numbers.
  std::string ToString() const override;
  // The board, one frame a move, two moves a second.
  bool Render(Picture& picture) const override;
  std::unique_ptr<Game> Clone() const override;

  // The bitboards (bit 7 * column + row, row 0 the bottom): `player`'s
  // stones, every stone, and the stones played.
  uint64_t Stones(int player) const { return state_.pieces[player]; }
  uint64_t Occupied() const { return state_.occupied; }
  int Moves() const { return state_.moves; }

 private:
  struct State {
    uint64_t pieces[2] = {0, 0};  // bit 7 * column + row (row 0 = bottom)
    uint64_t occupied = 0;
    int player = 0;
    int moves = 0;
    int winner = -1;  // -1 while no line is complete
  };
  // The bit the next piece in `column` lands on (column not full).
  uint64_t DropBit(int64_t column) const;

  State state_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_GAMES_CONNECT_FOUR_H_
