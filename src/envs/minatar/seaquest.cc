// MinAtar Seaquest: the player's submarine (front and back cells, so its
// heading shows) shoots enemy fish and submarines (+1 each), rescues divers
// (up to 6) and must surface before its oxygen runs out. Surfacing with
// divers refills the oxygen and costs one diver; surfacing with all 6 frees
// them all and pays 1 per remaining tenth of the oxygen bar. Each surfacing
// (with ramping) makes enemies faster and more frequent. The episode ends on
// contact with an enemy or an enemy bullet, when the oxygen runs out, or on
// surfacing with no diver. Channels: sub front, sub back, friendly bullet,
// trail, enemy bullet, enemy fish, enemy sub, oxygen gauge, diver gauge,
// diver.
#include <algorithm>
#include <vector>

#include "asyncrl/envs/minatar/games.h"

namespace asyncrl {
namespace minatar {
namespace {

constexpr int kMaxOxygen = 200;
constexpr int kInitSpawnSpeed = 20;
constexpr int kDiverSpawnSpeed = 30;
constexpr int kInitMoveInterval = 5;
constexpr int kShotCoolDown = 5;
constexpr int kEnemyShotInterval = 10;
constexpr int kDiverMoveInterval = 5;
constexpr int kMaxDivers = 6;

class Seaquest : public MinAtarGame {
 public:
  explicit Seaquest(const MinAtarOptions& options)
      : MinAtarGame("Seaquest", 10, {kNoop, kLeft, kUp, kRight, kDown, kFire},
                    options) {}

  int Difficulty() const override { return ramp_index_; }

 private:
  enum Channel {
    kSubFront = 0,
    kSubBack = 1,
    kFriendlyBullet = 2,
    kTrail = 3,
    kEnemyBullet = 4,
    kEnemyFish = 5,
    kEnemySub = 6,
    kOxygenGauge = 7,
    kDiverGauge = 8,
    kDiver = 9
  };
  // Bullets, fish, subs and divers: a cell, a heading, a move timer and (subs
  // only) a shot timer.
  struct Object {
    int x = 0;
    int y = 0;
    bool moving_right = false;
    int move_timer = 0;
    int shot_timer = 0;
  };

  bool AtSub(const Object& o) const { return o.x == sub_x_ && o.y == sub_y_; }
  static void Step(Object& o) { o.x += o.moving_right ? 1 : -1; }
  static bool Outside(const Object& o) { return o.x < 0 || o.x >= kSize; }
  template <typename T>
  static void EraseAt(std::vector<T>& v, size_t i) {
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
  }
  // Removes the first friendly bullet on `o`'s cell; true if there was one.
  bool ShotBy(const Object& o) {
    for (size_t j = 0; j < f_bullets_.size(); ++j) {
      if (f_bullets_[j].x == o.x && f_bullets_[j].y == o.y) {
        EraseAt(f_bullets_, j);
        return true;
      }
    }
    return false;
  }

  void ResetGame() override {
    oxygen_ = kMaxOxygen;
    diver_count_ = 0;
    sub_x_ = 5;
    sub_y_ = 0;
    facing_right_ = false;
    f_bullets_.clear();
    e_bullets_.clear();
    e_fish_.clear();
    e_subs_.clear();
    divers_.clear();
    e_spawn_speed_ = kInitSpawnSpeed;
    e_spawn_timer_ = e_spawn_speed_;
    d_spawn_timer_ = kDiverSpawnSpeed;
    move_speed_ = kInitMoveInterval;
    ramp_index_ = 0;
    shot_timer_ = 0;
    surface_ = true;
  }

  void SpawnEnemy() {
    const bool moving_right = RandomInt(2) == 0;
    const bool is_sub = rng().Uniform() < 1.0 / 3.0;
    const int y = 1 + RandomInt(8);
    // No spawn into a row where an enemy heads the other way.
    for (const auto* list : {&e_subs_, &e_fish_}) {
      for (const Object& o : *list) {
        if (o.y == y && o.moving_right != moving_right) return;
      }
    }
    Object o{moving_right ? 0 : kSize - 1, y, moving_right, move_speed_,
             kEnemyShotInterval};
    (is_sub ? e_subs_ : e_fish_).push_back(o);
  }

  void SpawnDiver() {
    const bool moving_right = RandomInt(2) == 0;
    const int y = 1 + RandomInt(8);
    divers_.push_back(Object{moving_right ? 0 : kSize - 1, y, moving_right,
                             kDiverMoveInterval});
  }

  // Moves enemies of one kind (fish or subs) back to front; returns the
  // reward of those that ran into a friendly bullet.
  double MoveEnemies(std::vector<Object>& enemies, bool shoot, bool* terminal) {
    double reward = 0;
    for (size_t i = enemies.size(); i-- > 0;) {
      Object o = enemies[i];
      bool removed = false;
      if (AtSub(o)) *terminal = true;
      if (o.move_timer == 0) {
        o.move_timer = move_speed_;
        Step(o);
        if (Outside(o)) {
          removed = true;
        } else if (AtSub(o)) {
          *terminal = true;
        } else if (ShotBy(o)) {
          removed = true;
          reward += 1;
        }
      } else {
        --o.move_timer;
      }
      // As in the original, a sub removed this frame still fires if due.
      if (shoot) {
        if (o.shot_timer == 0) {
          o.shot_timer = kEnemyShotInterval;
          e_bullets_.push_back(Object{o.x, o.y, o.moving_right, 0, 0});
        } else {
          --o.shot_timer;
        }
      }
      if (removed) {
        EraseAt(enemies, i);
      } else {
        enemies[i] = o;
      }
    }
    return reward;
  }

  double Surface() {
    surface_ = true;
    double reward = 0;
    if (diver_count_ == kMaxDivers) {
      diver_count_ = 0;
      reward = oxygen_ * 10 / kMaxOxygen;
    } else {
      --diver_count_;
    }
    oxygen_ = kMaxOxygen;
    if (ramping() && (e_spawn_speed_ > 1 || move_speed_ > 2)) {
      if (move_speed_ > 2 && ramp_index_ % 2 == 1) --move_speed_;
      if (e_spawn_speed_ > 1) --e_spawn_speed_;
      ++ramp_index_;
    }
    return reward;
  }

  double Advance(Move move, bool* terminal) override {
    if (e_spawn_timer_ == 0) {
      SpawnEnemy();
      e_spawn_timer_ = e_spawn_speed_;
    }
    if (d_spawn_timer_ == 0) {
      SpawnDiver();
      d_spawn_timer_ = kDiverSpawnSpeed;
    }
    MoveSub(move);
    double reward = MoveFriendlyBullets();
    MoveDivers();
    reward += MoveEnemies(e_subs_, /*shoot=*/true, terminal);
    MoveEnemyBullets(terminal);
    reward += MoveEnemies(e_fish_, /*shoot=*/false, terminal);

    if (e_spawn_timer_ > 0) --e_spawn_timer_;
    if (d_spawn_timer_ > 0) --d_spawn_timer_;
    if (shot_timer_ > 0) --shot_timer_;
    if (oxygen_ < 0) *terminal = true;
    if (sub_y_ > 0) {
      --oxygen_;
      surface_ = false;
    } else if (!surface_) {
      if (diver_count_ == 0) {
        *terminal = true;
      } else {
        reward += Surface();
      }
    }
    return reward;
  }

  // The sub fires (when its gun has cooled down) or moves.
  void MoveSub(Move move) {
    if (move == kFire && shot_timer_ == 0) {
      f_bullets_.push_back(Object{sub_x_, sub_y_, facing_right_, 0, 0});
      shot_timer_ = kShotCoolDown;
    } else if (move == kLeft) {
      sub_x_ = std::max(0, sub_x_ - 1);
      facing_right_ = false;
    } else if (move == kRight) {
      sub_x_ = std::min(kSize - 1, sub_x_ + 1);
      facing_right_ = true;
    } else if (move == kUp) {
      sub_y_ = std::max(0, sub_y_ - 1);
    } else if (move == kDown) {
      sub_y_ = std::min(kSize - 2, sub_y_ + 1);
    }
  }

  // Friendly bullets: move, then hit a fish or else a sub on their cell
  // (1 a hit).
  double MoveFriendlyBullets() {
    double reward = 0;
    for (size_t i = f_bullets_.size(); i-- > 0;) {
      Object& b = f_bullets_[i];
      Step(b);
      if (Outside(b)) {
        EraseAt(f_bullets_, i);
        continue;
      }
      for (auto* enemies : {&e_fish_, &e_subs_}) {
        auto hit = std::find_if(
            enemies->begin(), enemies->end(),
            [&](const Object& e) { return e.x == b.x && e.y == b.y; });
        if (hit != enemies->end()) {
          enemies->erase(hit);
          EraseAt(f_bullets_, i);
          reward += 1;
          break;
        }
      }
    }
    return reward;
  }

  // Divers: picked up on contact while there is room.
  void MoveDivers() {
    for (size_t i = divers_.size(); i-- > 0;) {
      Object& d = divers_[i];
      if (AtSub(d) && diver_count_ < kMaxDivers) {
        EraseAt(divers_, i);
        ++diver_count_;
      } else if (d.move_timer == 0) {
        d.move_timer = kDiverMoveInterval;
        Step(d);
        if (Outside(d)) {
          EraseAt(divers_, i);
        } else if (AtSub(d) && diver_count_ < kMaxDivers) {
          EraseAt(divers_, i);
          ++diver_count_;
        }
      } else {
        --d.move_timer;
      }
    }
  }

  // Enemy bullets end the game on the sub's cell, before or after moving.
  void MoveEnemyBullets(bool* terminal) {
    for (size_t i = e_bullets_.size(); i-- > 0;) {
      Object& b = e_bullets_[i];
      if (AtSub(b)) *terminal = true;
      Step(b);
      if (Outside(b)) {
        EraseAt(e_bullets_, i);
      } else if (AtSub(b)) {
        *terminal = true;
      }
    }
  }

  void Draw() override {
    Set(kSubFront, sub_y_, sub_x_);
    Set(kSubBack, sub_y_, facing_right_ ? sub_x_ - 1 : sub_x_ + 1);
    const int oxygen_cells = std::max(0, oxygen_ * 10 / kMaxOxygen);
    for (int x = 0; x < oxygen_cells; ++x) Set(kOxygenGauge, kSize - 1, x);
    for (int x = kSize - 1 - diver_count_; x < kSize - 1; ++x) {
      Set(kDiverGauge, kSize - 1, x);
    }
    for (const Object& b : f_bullets_) Set(kFriendlyBullet, b.y, b.x);
    for (const Object& b : e_bullets_) Set(kEnemyBullet, b.y, b.x);
    auto draw = [&](const std::vector<Object>& objects, int channel) {
      for (const Object& o : objects) {
        Set(channel, o.y, o.x);
        const int back_x = o.x + (o.moving_right ? -1 : 1);
        if (back_x >= 0 && back_x < kSize) Set(kTrail, o.y, back_x);
      }
    };
    draw(e_fish_, kEnemyFish);
    draw(e_subs_, kEnemySub);
    draw(divers_, kDiver);
  }

  int oxygen_ = 0;
  int diver_count_ = 0;
  int sub_x_ = 0;
  int sub_y_ = 0;
  bool facing_right_ = false;
  std::vector<Object> f_bullets_;
  std::vector<Object> e_bullets_;
  std::vector<Object> e_fish_;
  std::vector<Object> e_subs_;
  std::vector<Object> divers_;
  int e_spawn_speed_ = 0;
  int e_spawn_timer_ = 0;
  int d_spawn_timer_ = 0;
  int move_speed_ = 0;
  int ramp_index_ = 0;
  int shot_timer_ = 0;
  bool surface_ = true;
};

}  // namespace

std::unique_ptr<MinAtarGame> MakeSeaquest(const MinAtarOptions& options) {
  return std::make_unique<Seaquest>(options);
}

}  // namespace minatar
}  // namespace asyncrl
