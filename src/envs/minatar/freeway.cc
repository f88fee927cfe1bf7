// MinAtar Freeway: a chicken crosses 8 lanes of traffic from the bottom row
// to the top. It can move only every 3 frames; +1 for reaching the top, after
// which it returns to the bottom and the cars' speeds are re-drawn; a car hit
// sends it back to the bottom. The episode ends after 2,500 frames.
// Channels: chicken, car, and 5 trail channels whose index tells how often
// the car moves (every frame ... every 5 frames).
#include <algorithm>
#include <array>
#include <cstdlib>

#include "asyncrl/envs/minatar/games.h"

namespace asyncrl {
namespace minatar {
namespace {

constexpr int kPlayerSpeed = 3;
constexpr int kTimeLimit = 2500;

class Freeway : public MinAtarGame {
 public:
  explicit Freeway(const MinAtarOptions& options)
      : MinAtarGame("Freeway", 7, {kNoop, kUp, kDown}, options) {}

 private:
  enum Channel { kChicken = 0, kCar = 1, kSpeed1 = 2 };
  static constexpr int kChickenX = 4;
  struct Car {
    int x = 0;
    int y = 0;
    int timer = 0;
    int speed = 1;  // Signed: frames per move, sign = direction.
  };

  void RandomizeCars(bool initialize) {
    std::array<int, 8> speeds{};
    for (int& s : speeds) s = 1 + RandomInt(5);
    for (int& s : speeds) s *= RandomInt(2) == 0 ? -1 : 1;
    for (int i = 0; i < 8; ++i) {
      if (initialize) {
        cars_[i].x = 0;
        cars_[i].y = i + 1;
      }
      cars_[i].timer = std::abs(speeds[i]);
      cars_[i].speed = speeds[i];
    }
  }

  void ResetGame() override {
    RandomizeCars(/*initialize=*/true);
    pos_ = kSize - 1;
    move_timer_ = kPlayerSpeed;
    terminate_timer_ = kTimeLimit;
  }

  double Advance(Move move, bool* terminal) override {
    double reward = 0;
    if (move == kUp && move_timer_ == 0) {
      move_timer_ = kPlayerSpeed;
      pos_ = std::max(0, pos_ - 1);
    } else if (move == kDown && move_timer_ == 0) {
      move_timer_ = kPlayerSpeed;
      pos_ = std::min(kSize - 1, pos_ + 1);
    }
    if (pos_ == 0) {
      reward += 1;
      RandomizeCars(/*initialize=*/false);
      pos_ = kSize - 1;
    }
    for (Car& car : cars_) {
      if (car.x == kChickenX && car.y == pos_) pos_ = kSize - 1;
      if (car.timer == 0) {
        car.timer = std::abs(car.speed);
        car.x += car.speed > 0 ? 1 : -1;
        if (car.x < 0) car.x = kSize - 1;
        if (car.x >= kSize) car.x = 0;
        if (car.x == kChickenX && car.y == pos_) pos_ = kSize - 1;
      } else {
        --car.timer;
      }
    }
    if (move_timer_ > 0) --move_timer_;
    if (--terminate_timer_ < 0) *terminal = true;
    return reward;
  }

  void Draw() override {
    Set(kChicken, pos_, kChickenX);
    for (const Car& car : cars_) {
      Set(kCar, car.y, car.x);
      int back_x = car.x + (car.speed > 0 ? -1 : 1);
      if (back_x < 0) back_x = kSize - 1;
      if (back_x >= kSize) back_x = 0;
      Set(kSpeed1 + std::abs(car.speed) - 1, car.y, back_x);
    }
  }

  std::array<Car, 8> cars_{};
  int pos_ = 0;
  int move_timer_ = 0;
  int terminate_timer_ = 0;
};

}  // namespace

std::unique_ptr<MinAtarGame> MakeFreeway(const MinAtarOptions& options) {
  return std::make_unique<Freeway>(options);
}

}  // namespace minatar
}  // namespace asyncrl
