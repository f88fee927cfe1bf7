// MinAtar Breakout: a paddle on the bottom row bounces a ball into 3 rows of
// bricks. +1 per brick; a new set of 3 rows appears when all are cleared; the
// ball moves only diagonally and the episode ends when it reaches the bottom
// row past the paddle. Channels: paddle, ball, trail (the ball's previous
// cell), brick.
#include <algorithm>
#include <array>

#include "asyncrl/envs/minatar/games.h"

namespace asyncrl {
namespace minatar {
namespace {

class Breakout : public MinAtarGame {
 public:
  explicit Breakout(const MinAtarOptions& options)
      : MinAtarGame("Breakout", 4, {kNoop, kLeft, kRight}, options) {}

 private:
  enum Channel { kPaddle = 0, kBall = 1, kTrail = 2, kBrick = 3 };
  // Ball directions: 0 up-left, 1 up-right, 2 down-right, 3 down-left.
  static constexpr std::array<int, 4> kDx = {-1, 1, 1, -1};
  static constexpr std::array<int, 4> kDy = {-1, -1, 1, 1};
  static constexpr std::array<int, 4> kFlipX = {1, 0, 3, 2};
  static constexpr std::array<int, 4> kFlipY = {3, 2, 1, 0};
  static constexpr std::array<int, 4> kReverse = {2, 3, 0, 1};

  void ResetGame() override {
    ball_y_ = 3;
    if (RandomInt(2) == 0) {
      ball_x_ = 0;
      ball_dir_ = 2;
    } else {
      ball_x_ = 9;
      ball_dir_ = 3;
    }
    paddle_ = 4;
    bricks_ = {};
    FillBricks();
    strike_ = false;
    last_x_ = ball_x_;
    last_y_ = ball_y_;
  }

  void FillBricks() {
    for (int y = 1; y <= 3; ++y) bricks_[y].fill(true);
    num_bricks_ = 3 * kSize;
  }

  double Advance(Move move, bool* terminal) override {
    double reward = 0;
    if (move == kLeft) paddle_ = std::max(0, paddle_ - 1);
    if (move == kRight) paddle_ = std::min(kSize - 1, paddle_ + 1);

    last_x_ = ball_x_;
    last_y_ = ball_y_;
    int new_x = ball_x_ + kDx[ball_dir_];
    int new_y = ball_y_ + kDy[ball_dir_];
    bool strike_toggle = false;
    if (new_x < 0 || new_x >= kSize) {
      new_x = std::clamp(new_x, 0, kSize - 1);
      ball_dir_ = kFlipX[ball_dir_];
    }
    if (new_y < 0) {
      new_y = 0;
      ball_dir_ = kFlipY[ball_dir_];
    } else if (bricks_[new_y][new_x]) {
      strike_toggle = true;
      if (!strike_) {
        reward += 1;
        strike_ = true;
        bricks_[new_y][new_x] = false;
        --num_bricks_;
        new_y = last_y_;
        ball_dir_ = kFlipY[ball_dir_];
      }
    } else if (new_y == kSize - 1) {
      if (num_bricks_ == 0) FillBricks();
      if (ball_x_ == paddle_) {
        ball_dir_ = kFlipY[ball_dir_];
        new_y = last_y_;
      } else if (new_x == paddle_) {
        ball_dir_ = kReverse[ball_dir_];
        new_y = last_y_;
      } else {
        *terminal = true;
      }
    }
    if (!strike_toggle) strike_ = false;
    ball_x_ = new_x;
    ball_y_ = new_y;
    return reward;
  }

  void Draw() override {
    Set(kBall, ball_y_, ball_x_);
    Set(kPaddle, kSize - 1, paddle_);
    Set(kTrail, last_y_, last_x_);
    for (int y = 0; y < kSize; ++y) {
      for (int x = 0; x < kSize; ++x) {
        if (bricks_[y][x]) Set(kBrick, y, x);
      }
    }
  }

  int ball_x_ = 0;
  int ball_y_ = 0;
  int ball_dir_ = 0;
  int last_x_ = 0;
  int last_y_ = 0;
  int paddle_ = 0;
  std::array<std::array<bool, kSize>, kSize> bricks_{};
  int num_bricks_ = 0;
  bool strike_ = false;
};

}  // namespace

std::unique_ptr<MinAtarGame> MakeBreakout(const MinAtarOptions& options) {
  return std::make_unique<Breakout>(options);
}

}  // namespace minatar
}  // namespace asyncrl
