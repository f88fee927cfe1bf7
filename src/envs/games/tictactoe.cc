#include "asyncrl/envs/games/tictactoe.h"

#include <stdexcept>

#include "asyncrl/misc/picture.h"

namespace asyncrl {
namespace {

// Cell i is bit i, so in octal each digit is one row (bottom row first).
constexpr uint16_t kLines[] = {
    0007, 0070, 0700,  // rows
    0111, 0222, 0444,  // columns
    0421, 0124,        // diagonals
};

bool HasLine(uint16_t pieces) {
  for (uint16_t line : kLines) {
    if ((pieces & line) == line) return true;
  }
  return false;
}

}  // namespace

std::vector<int64_t> TicTacToe::ObservationShape() const {
  return {2, kSize, kSize};
}

void TicTacToe::Reset() { state_ = State(); }

bool TicTacToe::IsTerminal() const {
  return state_.winner >= 0 || state_.moves == kCells;
}

bool TicTacToe::IsLegal(int64_t action) const {
  if (action < 0 || action >= kCells || IsTerminal()) return false;
  return ((state_.pieces[0] | state_.pieces[1]) >> action & 1) == 0;
}

void TicTacToe::Play(int64_t action) {
  if (!IsLegal(action)) {
    const char* reason = action < 0 || action >= kCells ? "out of range"
                         : IsTerminal()                 ? "game over"
                                                        : "cell taken";
    throw std::invalid_argument(IllegalActionMessage(*this, action, reason));
  }
  uint16_t& mine = state_.pieces[state_.player];
  mine |= static_cast<uint16_t>(1u << action);
  ++state_.moves;
  if (HasLine(mine)) state_.winner = state_.player;
  state_.player = 1 - state_.player;
}

double TicTacToe::Result(int player) const {
  if (state_.winner < 0) return 0.0;
  return state_.winner == player ? 1.0 : -1.0;
}

void TicTacToe::Observe(int player, float* out) const {
  const uint16_t mine = state_.pieces[player];
  const uint16_t theirs = state_.pieces[1 - player];
  for (int cell = 0; cell < kCells; ++cell) {
    out[cell] = static_cast<float>(mine >> cell & 1);
    out[kCells + cell] = static_cast<float>(theirs >> cell & 1);
  }
}

bool TicTacToe::WouldWin(int player, int64_t action) const {
  if (!IsLegal(action)) return false;
  return HasLine(state_.pieces[player] | static_cast<uint16_t>(1u << action));
}

std::optional<uint64_t> TicTacToe::PositionKey() const {
  return uint64_t{state_.pieces[0]} | uint64_t{state_.pieces[1]} << kCells;
}

std::string TicTacToe::ToString() const {
  std::string text;
  for (int cell = 0; cell < kCells; ++cell) {
    text += state_.pieces[0] >> cell & 1   ? 'X'
            : state_.pieces[1] >> cell & 1 ? 'O'
                                           : '.';
    if (cell % kSize == kSize - 1) text += '\n';
  }
  return text;
}

std::unique_ptr<Game> TicTacToe::Clone() const {
  auto copy = std::make_unique<TicTacToe>();
  copy->state_ = state_;
  return copy;
}

bool TicTacToe::Render(Picture& picture) const {
  constexpr int kCell = 100;
  constexpr int kPicture = kCell * kSize;
  picture.Reset(kPicture, kPicture, Color::kWhite);
  picture.fps = 2;
  for (int i = 1; i < kSize; ++i) {
    picture.Line(i * kCell, 0, i * kCell, kPicture, 4, Color::kBlack);
    picture.Line(0, i * kCell, kPicture, i * kCell, 4, Color::kBlack);
  }
  for (int cell = 0; cell < kCells; ++cell) {
    const double x = (cell % kSize + 0.5) * kCell;
    const double y = (cell / kSize + 0.5) * kCell;
    const double r = 0.32 * kCell;
    if (state_.pieces[0] >> cell & 1) {
      picture.Line(x - r, y - r, x + r, y + r, 12, Color::kRed);
      picture.Line(x - r, y + r, x + r, y - r, 12, Color::kRed);
    } else if (state_.pieces[1] >> cell & 1) {
      picture.FillCircle(x, y, r, Color::kBoard);
      picture.FillCircle(x, y, r - 12, Color::kWhite);
    }
  }
  return true;
}

}  // namespace asyncrl
