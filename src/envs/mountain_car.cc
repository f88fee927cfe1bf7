#include "asyncrl/envs/mountain_car.h"

#include <algorithm>
#include <cmath>

namespace asyncrl {

MountainCar::MountainCar()
    : ClassicControl(Space::Box({2},
                                {static_cast<float>(kMinPosition),
                                 static_cast<float>(-kMaxSpeed)},
                                {static_cast<float>(kMaxPosition),
                                 static_cast<float>(kMaxSpeed)}),
                     Space::Discrete(3)) {
  DeclareParameter("force", 0.0001, 0.01, "the engine's force per step",
                   &force_);
  DeclareParameter("gravity", 0.0, 0.01, "gravity's pull per step", &gravity_);
  DeclareParameter("goal_position", -0.4, kMaxPosition,
                   "the position that ends the episode", &goal_position_);
}

void MountainCar::ResetState(Rng& rng, State& state) {
  state = {rng.Uniform(-0.6, -0.4), 0.0};
}

void MountainCar::Observe(const State& state, std::array<float, 2>& obs) const {
  obs = {static_cast<float>(state[0]), static_cast<float>(state[1])};
}

StepResult MountainCar::DoStep(const Action& action) {
  auto& [position, velocity] = state_;
  velocity += static_cast<double>(action.index - 1) * force_ +
              std::cos(3 * position) * (-gravity_);
  velocity = std::clamp(velocity, -kMaxSpeed, kMaxSpeed);
  position += velocity;
  position = std::clamp(position, kMinPosition, kMaxPosition);
  if (position == kMinPosition && velocity < 0) velocity = 0;

  StepResult result;
  result.observation = Observation();
  result.terminated = position >= goal_position_ && velocity >= 0;
  result.reward = -1.0;
  return result;
}

}  // namespace asyncrl
