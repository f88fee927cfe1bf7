#include "asyncrl/envs/games/connect_four.h"

#include <array>
#include <cmath>
#include <stdexcept>

#include "asyncrl/misc/picture.h"

namespace asyncrl {
namespace {

constexpr int kHeight = ConnectFour::kRows + 1;  // with the guard bit
constexpr int kCells = ConnectFour::kColumns * ConnectFour::kRows;

constexpr uint64_t Bit(int column, int row) {
  return uint64_t{1} << (column * kHeight + row);
}
constexpr uint64_t BottomBit(int64_t column) {
  return uint64_t{1} << (column * kHeight);
}
constexpr uint64_t TopBit(int64_t column) {
  return uint64_t{1} << (column * kHeight + ConnectFour::kRows - 1);
}

// Whether `pieces` hold four in a line. The guard row keeps shifted lines
// from wrapping from one column into the next.
bool HasFour(uint64_t pieces) {
  // Vertical, horizontal, and the two diagonals.
  for (int shift : {1, kHeight, kHeight - 1, kHeight + 1}) {
    const uint64_t pairs = pieces & (pieces >> shift);
    if (pairs & (pairs >> (2 * shift))) return true;
  }
  return false;
}

// The 69 windows of four cells in a line.
using Windows = std::array<uint64_t, 69>;
Windows MakeWindows() {
  Windows windows{};
  size_t n = 0;
  const int steps[4][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}};  // dc, dr
  for (const auto& step : steps) {
    for (int c = 0; c < ConnectFour::kColumns; ++c) {
      for (int r = 0; r < ConnectFour::kRows; ++r) {
        const int end_c = c + 3 * step[0];
        const int end_r = r + 3 * step[1];
        if (end_c >= ConnectFour::kColumns || end_r < 0 ||
            end_r >= ConnectFour::kRows) {
          continue;
        }
        uint64_t window = 0;
        for (int i = 0; i < 4; ++i) {
          window |= Bit(c + i * step[0], r + i * step[1]);
        }
        windows[n++] = window;
      }
    }
  }
  return windows;
}

}  // namespace

std::vector<int64_t> ConnectFour::ObservationShape() const {
  return {2, kRows, kColumns};
}

void ConnectFour::Reset() { state_ = State(); }

bool ConnectFour::IsTerminal() const {
  return state_.winner >= 0 || state_.moves == kCells;
}

bool ConnectFour::IsLegal(int64_t action) const {
  if (action < 0 || action >= kColumns || IsTerminal()) return false;
  return (state_.occupied & TopBit(action)) == 0;
}

uint64_t ConnectFour::DropBit(int64_t column) const {
  // Adding the column's bottom bit carries through its occupied cells.
  const uint64_t column_mask = ((uint64_t{1} << kRows) - 1)
                               << (column * kHeight);
  return (state_.occupied + BottomBit(column)) & column_mask;
}

void ConnectFour::Play(int64_t action) {
  if (!IsLegal(action)) {
    const char* reason = action < 0 || action >= kColumns ? "out of range"
                         : IsTerminal()                   ? "game over"
                                                          : "column full";
    throw std::invalid_argument(IllegalActionMessage(*this, action, reason));
  }
  const uint64_t bit = DropBit(action);
  uint64_t& mine = state_.pieces[state_.player];
  mine |= bit;
  state_.occupied |= bit;
  ++state_.moves;
  if (HasFour(mine)) state_.winner = state_.player;
  state_.player = 1 - state_.player;
}

double ConnectFour::Result(int player) const {
  if (state_.winner < 0) return 0.0;
  return state_.winner == player ? 1.0 : -1.0;
}

void ConnectFour::Observe(int player, float* out) const {
  const uint64_t mine = state_.pieces[player];
  const uint64_t theirs = state_.pieces[1 - player];
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < kColumns; ++c) {
      const uint64_t bit = Bit(c, kRows - 1 - r);
      out[r * kColumns + c] = (mine & bit) ? 1.0f : 0.0f;
      out[kCells + r * kColumns + c] = (theirs & bit) ? 1.0f : 0.0f;
    }
  }
}

bool ConnectFour::WouldWin(int player, int64_t action) const {
  if (!IsLegal(action)) return false;
  return HasFour(state_.pieces[player] | DropBit(action));
}

double ConnectFour::Heuristic(int player) const {
  static const Windows windows = MakeWindows();
  constexpr double kWeights[5] = {0, 1, 4, 16, 64};
  const uint64_t mine = state_.pieces[player];
  const uint64_t theirs = state_.pieces[1 - player];
  double score = 0.0;
  for (uint64_t window : windows) {
    const int m = __builtin_popcountll(mine & window);
    const int t = __builtin_popcountll(theirs & window);
    if (t == 0) score += kWeights[m];
    if (m == 0) score -= kWeights[t];
  }
  return std::tanh(score / 32.0);
}

std::optional<uint64_t> ConnectFour::PositionKey() const {
  return state_.pieces[0] + state_.occupied;
}

std::string ConnectFour::ToString() const {
  std::string text;
  for (int r = kRows - 1; r >= 0; --r) {
    for (int c = 0; c < kColumns; ++c) {
      const uint64_t bit = Bit(c, r);
      text += (state_.pieces[0] & bit)   ? 'X'
              : (state_.pieces[1] & bit) ? 'O'
                                         : '.';
    }
    text += '\n';
  }
  text += "0123456\n";
  return text;
}

std::unique_ptr<Game> ConnectFour::Clone() const {
  auto copy = std::make_unique<ConnectFour>();
  copy->state_ = state_;
  return copy;
}

bool ConnectFour::Render(Picture& picture) const {
  constexpr int kCell = 80;
  picture.Reset(kColumns * kCell, kRows * kCell, Color::kBoard);
  picture.fps = 2;
  for (int column = 0; column < kColumns; ++column) {
    for (int row = 0; row < kRows; ++row) {  // Row 0: the bottom.
      const uint64_t bit = uint64_t{1} << (7 * column + row);
      const Color color = (state_.pieces[0] & bit) != 0   ? Color::kRed
                          : (state_.pieces[1] & bit) != 0 ? Color::kYellow
                                                          : Color::kWhite;
      picture.FillCircle((column + 0.5) * kCell, (kRows - row - 0.5) * kCell,
                         0.4 * kCell, color);
    }
  }
  return true;
}

}  // namespace asyncrl
