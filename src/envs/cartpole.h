// CartPole: gym's classic cart-pole balancing task (Barto, Sutton & Anderson,
// 1983), same equations, constants and termination; Euler integration.
#ifndef ASYNCRL_ENVS_CARTPOLE_H_
#define ASYNCRL_ENVS_CARTPOLE_H_

#include "asyncrl/envs/classic_control.h"

namespace asyncrl {

// Without a time limit; the registry wraps it (200 steps for v0, 500 for v1).
// Observation: x, x_dot, theta, theta_dot. Actions: 0 push left, 1 push right.
// Reward 1 on every step, including the terminating one.
// Parameters (gym's attribute names): length (half the pole's length),
// masspole, masscart, force_mag.
class CartPole : public ClassicControl<4, 4> {
 public:
  CartPole();
  std::string Name() const override { return "CartPole"; }
  // As gym draws it (render_mode="rgb_array"), at its frame rate.
  bool Render(Picture& picture) const override;

  static constexpr double kGravity = 9.8;
  static constexpr double kMassCart = 1.0;
  static constexpr double kMassPole = 0.1;
  static constexpr double kLength = 0.5;  // Half the pole's length.
  static constexpr double kForceMag = 10.0;
  static constexpr double kTau = 0.02;
  static constexpr double kThetaThreshold =
      12.0 * 2.0 * 3.14159265358979323846 / 360.0;
  static constexpr double kXThreshold = 2.4;

 protected:
  void ResetState(Rng& rng, State& state) override;
  void Observe(const State& state, std::array<float, 4>& obs) const override;
  StepResult DoStep(const Action& action) override;

 private:
  double length_ = kLength;
  double masspole_ = kMassPole;
  double masscart_ = kMassCart;
  double force_mag_ = kForceMag;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_CARTPOLE_H_
