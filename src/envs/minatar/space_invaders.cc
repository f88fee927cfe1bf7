// MinAtar Space Invaders: a cannon on the bottom row shoots upward at a block
// of aliens that marches sideways, stepping down and turning at the edges,
// and shoots back from the alien nearest to the cannon. +1 per alien shot;
// the aliens speed up as they thin out, and each new wave (with ramping)
// moves faster than the last. An alien or alien bullet reaching the cannon
// ends the episode. Channels: cannon, alien, alien moving left, alien moving
// right, friendly bullet, enemy bullet.
#include <algorithm>
#include <array>
#include <cstdlib>

#include "asyncrl/envs/minatar/games.h"

namespace asyncrl {
namespace minatar {
namespace {

constexpr int kShotCoolDown = 5;
constexpr int kEnemyMoveInterval = 12;
constexpr int kEnemyShotInterval = 10;

using Grid =
    std::array<std::array<bool, MinAtarGame::kSize>, MinAtarGame::kSize>;

// numpy.roll along rows (axis 0) by +1 or -1: rows wrap around.
void RollRows(Grid& g, int shift) {
  if (shift > 0) {
    std::rotate(g.rbegin(), g.rbegin() + 1, g.rend());
  } else {
    std::rotate(g.begin(), g.begin() + 1, g.end());
  }
}

// numpy.roll along columns (axis 1) by +1 or -1.
void RollColumns(Grid& g, int shift) {
  for (auto& row : g) {
    if (shift > 0) {
      std::rotate(row.rbegin(), row.rbegin() + 1, row.rend());
    } else {
      std::rotate(row.begin(), row.begin() + 1, row.end());
    }
  }
}

class SpaceInvaders : public MinAtarGame {
 public:
  explicit SpaceInvaders(const MinAtarOptions& options)
      : MinAtarGame("SpaceInvaders", 6, {kNoop, kLeft, kRight, kFire},
                    options) {}

  int Difficulty() const override { return ramp_index_; }

 private:
  enum Channel {
    kCannon = 0,
    kAlien = 1,
    kAlienLeft = 2,
    kAlienRight = 3,
    kFriendlyBullet = 4,
    kEnemyBullet = 5
  };

  void NewWave() {
    for (int y = 0; y < 4; ++y) {
      for (int x = 2; x < 8; ++x) aliens_[y][x] = true;
    }
    num_aliens_ = 24;
  }

  void ResetGame() override {
    pos_ = 5;
    friendly_ = {};
    enemy_ = {};
    aliens_ = {};
    NewWave();
    alien_dir_ = -1;
    move_interval_ = kEnemyMoveInterval;
    alien_move_timer_ = move_interval_;
    alien_shot_timer_ = kEnemyShotInterval;
    ramp_index_ = 0;
    shot_timer_ = 0;
  }

  bool ColumnHasAlien(int x) const {
    for (int y = 0; y < kSize; ++y) {
      if (aliens_[y][x]) return true;
    }
    return false;
  }

  bool RowHasAlien(int y) const {
    return std::any_of(aliens_[y].begin(), aliens_[y].end(),
                       [](bool a) { return a; });
  }

  // The lowest alien of the column nearest to `pos` (ties: the left one).
  void NearestAlien(int pos, int* y, int* x) const {
    for (int d = 0; d < kSize; ++d) {
      for (int c : {pos - d, pos + d}) {
        if (c < 0 || c >= kSize || !ColumnHasAlien(c)) continue;
        for (int r = kSize - 1; r >= 0; --r) {
          if (aliens_[r][c]) {
            *y = r;
            *x = c;
            return;
          }
        }
      }
    }
  }

  double Advance(Move move, bool* terminal) override {
    double reward = 0;
    if (move == kFire && shot_timer_ == 0) {
      friendly_[kSize - 1][pos_] = true;
      shot_timer_ = kShotCoolDown;
    } else if (move == kLeft) {
      pos_ = std::max(0, pos_ - 1);
    } else if (move == kRight) {
      pos_ = std::min(kSize - 1, pos_ + 1);
    }

    // Friendly bullets rise one row, enemy bullets fall one row.
    RollRows(friendly_, -1);
    friendly_[kSize - 1].fill(false);
    RollRows(enemy_, 1);
    enemy_[0].fill(false);
    if (enemy_[kSize - 1][pos_]) *terminal = true;

    if (aliens_[kSize - 1][pos_]) *terminal = true;
    if (alien_move_timer_ == 0) {
      alien_move_timer_ = std::min(num_aliens_, move_interval_);
      if ((ColumnHasAlien(0) && alien_dir_ < 0) ||
          (ColumnHasAlien(kSize - 1) && alien_dir_ > 0)) {
        alien_dir_ = -alien_dir_;
        if (RowHasAlien(kSize - 1)) *terminal = true;
        RollRows(aliens_, 1);
      } else {
        RollColumns(aliens_, alien_dir_);
      }
      if (aliens_[kSize - 1][pos_]) *terminal = true;
    }
    if (alien_shot_timer_ == 0) {
      alien_shot_timer_ = kEnemyShotInterval;
      int y = 0;
      int x = 0;
      NearestAlien(pos_, &y, &x);
      enemy_[y][x] = true;
    }

    for (int y = 0; y < kSize; ++y) {
      for (int x = 0; x < kSize; ++x) {
        if (aliens_[y][x] && friendly_[y][x]) {
          aliens_[y][x] = friendly_[y][x] = false;
          --num_aliens_;
          reward += 1;
        }
      }
    }

    if (shot_timer_ > 0) --shot_timer_;
    --alien_move_timer_;
    --alien_shot_timer_;
    if (num_aliens_ == 0) {
      if (move_interval_ > 6 && ramping()) {
        --move_interval_;
        ++ramp_index_;
      }
      NewWave();
    }
    return reward;
  }

  void Draw() override {
    Set(kCannon, kSize - 1, pos_);
    const int direction = alien_dir_ < 0 ? kAlienLeft : kAlienRight;
    for (int y = 0; y < kSize; ++y) {
      for (int x = 0; x < kSize; ++x) {
        if (aliens_[y][x]) {
          Set(kAlien, y, x);
          Set(direction, y, x);
        }
        if (friendly_[y][x]) Set(kFriendlyBullet, y, x);
        if (enemy_[y][x]) Set(kEnemyBullet, y, x);
      }
    }
  }

  int pos_ = 0;
  Grid friendly_{};
  Grid enemy_{};
  Grid aliens_{};
  int num_aliens_ = 0;
  int alien_dir_ = -1;
  int move_interval_ = 0;
  int alien_move_timer_ = 0;
  int alien_shot_timer_ = 0;
  int ramp_index_ = 0;
  int shot_timer_ = 0;
};

}  // namespace

std::unique_ptr<MinAtarGame> MakeSpaceInvaders(const MinAtarOptions& options) {
  return std::make_unique<SpaceInvaders>(options);
}

}  // namespace minatar
}  // namespace asyncrl
