// MinAtar Asterix: the player moves in 4 directions between rows 1 and 8;
// enemies and treasure enter from the sides, one per row at most. +1 per
// treasure picked up; touching an enemy ends the episode. With ramping, the
// entities move and spawn faster over time. Channels: player, enemy, trail
// (an entity's previous cell), gold.
#include <algorithm>
#include <array>
#include <optional>

#include "asyncrl/envs/minatar/games.h"

namespace asyncrl {
namespace minatar {
namespace {

constexpr int kRampInterval = 100;
constexpr int kInitSpawnSpeed = 10;
constexpr int kInitMoveInterval = 5;

class Asterix : public MinAtarGame {
 public:
  explicit Asterix(const MinAtarOptions& options)
      : MinAtarGame("Asterix", 4, {kNoop, kLeft, kUp, kRight, kDown}, options) {
  }

  int Difficulty() const override { return ramp_index_; }

 private:
  enum Channel { kPlayer = 0, kEnemy = 1, kTrail = 2, kGold = 3 };
  struct Entity {
    int x = 0;
    int y = 0;
    bool moving_right = false;
    bool gold = false;
  };
  static constexpr int kSlots = 8;  // One per row 1..8.

  void ResetGame() override {
    player_x_ = 5;
    player_y_ = 5;
    entities_ = {};
    spawn_speed_ = kInitSpawnSpeed;
    spawn_timer_ = spawn_speed_;
    move_speed_ = kInitMoveInterval;
    move_timer_ = move_speed_;
    ramp_timer_ = kRampInterval;
    ramp_index_ = 0;
  }

  void SpawnEntity() {
    const bool moving_right = RandomInt(2) == 0;
    const bool gold = rng().Uniform() < 1.0 / 3.0;
    std::array<int, kSlots> free{};
    int num_free = 0;
    for (int i = 0; i < kSlots; ++i) {
      if (!entities_[i]) free[num_free++] = i;
    }
    if (num_free == 0) return;
    const int slot = free[RandomInt(num_free)];
    entities_[slot] =
        Entity{moving_right ? 0 : kSize - 1, slot + 1, moving_right, gold};
  }

  // Resolves the player sharing a cell with entity `i`: gold is collected,
  // an enemy ends the episode.
  void Collide(int i, double* reward, bool* terminal) {
    const Entity& e = *entities_[i];
    if (e.x != player_x_ || e.y != player_y_) return;
    if (e.gold) {
      entities_[i].reset();
      *reward += 1;
    } else {
      *terminal = true;
    }
  }

  double Advance(Move move, bool* terminal) override {
    double reward = 0;
    if (spawn_timer_ == 0) {
      SpawnEntity();
      spawn_timer_ = spawn_speed_;
    }
    if (move == kLeft) player_x_ = std::max(0, player_x_ - 1);
    if (move == kRight) player_x_ = std::min(kSize - 1, player_x_ + 1);
    if (move == kUp) player_y_ = std::max(1, player_y_ - 1);
    if (move == kDown) player_y_ = std::min(kSize - 2, player_y_ + 1);

    for (int i = 0; i < kSlots; ++i) {
      if (entities_[i]) Collide(i, &reward, terminal);
    }
    if (move_timer_ == 0) {
      move_timer_ = move_speed_;
      for (int i = 0; i < kSlots; ++i) {
        if (!entities_[i]) continue;
        Entity& e = *entities_[i];
        e.x += e.moving_right ? 1 : -1;
        if (e.x < 0 || e.x >= kSize) {
          entities_[i].reset();
          continue;
        }
        Collide(i, &reward, terminal);
      }
    }
    --spawn_timer_;
    --move_timer_;

    if (ramping() && (spawn_speed_ > 1 || move_speed_ > 1)) {
      if (ramp_timer_ >= 0) {
        --ramp_timer_;
      } else {
        if (move_speed_ > 1 && ramp_index_ % 2 == 1) --move_speed_;
        if (spawn_speed_ > 1) --spawn_speed_;
        ++ramp_index_;
        ramp_timer_ = kRampInterval;
      }
    }
    return reward;
  }

  void Draw() override {
    Set(kPlayer, player_y_, player_x_);
    for (const auto& slot : entities_) {
      if (!slot) continue;
      Set(slot->gold ? kGold : kEnemy, slot->y, slot->x);
      const int back_x = slot->x + (slot->moving_right ? -1 : 1);
      if (back_x >= 0 && back_x < kSize) Set(kTrail, slot->y, back_x);
    }
  }

  int player_x_ = 0;
  int player_y_ = 0;
  std::array<std::optional<Entity>, kSlots> entities_{};
  int spawn_speed_ = 0;
  int spawn_timer_ = 0;
  int move_speed_ = 0;
  int move_timer_ = 0;
  int ramp_timer_ = 0;
  int ramp_index_ = 0;
};

}  // namespace

std::unique_ptr<MinAtarGame> MakeAsterix(const MinAtarOptions& options) {
  return std::make_unique<Asterix>(options);
}

}  // namespace minatar
}  // namespace asyncrl
