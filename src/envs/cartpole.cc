#include "asyncrl/envs/cartpole.h"

#include <cmath>
#include <limits>

namespace asyncrl {

CartPole::CartPole()
    : ClassicControl(
          Space::Box({4},
                     {-2 * kXThreshold, -std::numeric_limits<float>::max(),
                      -2 * kThetaThreshold, -std::numeric_limits<float>::max()},
                     {2 * kXThreshold, std::numeric_limits<float>::max(),
                      2 * kThetaThreshold, std::numeric_limits<float>::max()}),
          Space::Discrete(2)) {}

void CartPole::ResetState(Rng& rng, State& state) {
  for (double& x : state) x = rng.Uniform(-0.05, 0.05);
}

void CartPole::Observe(const State& state, std::array<float, 4>& obs) const {
  for (size_t i = 0; i < 4; ++i) obs[i] = static_cast<float>(state[i]);
}

StepResult CartPole::DoStep(const Action& action) {
  constexpr double kTotalMass = kMassPole + kMassCart;
  constexpr double kPoleMassLength = kMassPole * kLength;
  auto& [x, x_dot, theta, theta_dot] = state_;
  const double force = action.index == 1 ? kForceMag : -kForceMag;
  const double cos_theta = std::cos(theta);
  const double sin_theta = std::sin(theta);
  const double temp =
      (force + kPoleMassLength * theta_dot * theta_dot * sin_theta) /
      kTotalMass;
  const double theta_acc =
      (kGravity * sin_theta - cos_theta * temp) /
      (kLength * (4.0 / 3.0 - kMassPole * cos_theta * cos_theta / kTotalMass));
  const double x_acc =
      temp - kPoleMassLength * theta_acc * cos_theta / kTotalMass;
  x += kTau * x_dot;
  x_dot += kTau * x_acc;
  theta += kTau * theta_dot;
  theta_dot += kTau * theta_acc;

  StepResult result;
  result.observation = Observation();
  result.reward = 1.0;
  result.terminated = x < -kXThreshold || x > kXThreshold ||
                      theta < -kThetaThreshold || theta > kThetaThreshold;
  return result;
}

}  // namespace asyncrl
