#include "envs/mountain_car.h"

#include <algorithm>
#include <cmath>

namespace asyncrl {

MountainCar::MountainCar()
    : observation_space_(Space::Box(
          {2},
          {static_cast<float>(kMinPosition), static_cast<float>(-kMaxSpeed)},
          {static_cast<float>(kMaxPosition), static_cast<float>(kMaxSpeed)})),
      action_space_(Space::Discrete(3)) {}

void MountainCar::set_state(const std::array<double, 2>& state) {
  state_ = state;
  Observe();
}

FloatView MountainCar::Observe() {
  obs_ = {static_cast<float>(state_[0]), static_cast<float>(state_[1])};
  return FloatView{obs_.data(), 2};
}

FloatView MountainCar::DoReset(std::optional<uint64_t> seed) {
  if (seed) rng_.Seed(*seed);
  state_ = {rng_.Uniform(-0.6, -0.4), 0.0};
  return Observe();
}

StepResult MountainCar::DoStep(const Action& action) {
  auto& [position, velocity] = state_;
  velocity += static_cast<double>(action.index - 1) * kForce +
              std::cos(3 * position) * (-kGravity);
  velocity = std::clamp(velocity, -kMaxSpeed, kMaxSpeed);
  position += velocity;
  position = std::clamp(position, kMinPosition, kMaxPosition);
  if (position == kMinPosition && velocity < 0) velocity = 0;

  StepResult result;
  result.observation = Observe();
  result.terminated = position >= kGoalPosition && velocity >= 0;
  result.reward = -1.0;
  return result;
}

}  // namespace asyncrl
