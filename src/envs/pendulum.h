// Pendulum: gym's Pendulum-v1 inverted-pendulum swing-up with a continuous
// torque action; same constants and cost.
#ifndef ASYNCRL_ENVS_PENDULUM_H_
#define ASYNCRL_ENVS_PENDULUM_H_

#include "asyncrl/envs/classic_control.h"

namespace asyncrl {

// Observation: cos(theta), sin(theta), theta_dot. Action: one torque in
// [-2, 2] (values outside are rejected; agents clip). Reward is minus the
// cost theta^2 + 0.1 theta_dot^2 + 0.001 u^2. Never terminates; the registry
// adds a 200-step limit. Parameters (gym's attribute names): max_torque, m,
// l, g.
class Pendulum : public ClassicControl<2, 3> {
 public:
  Pendulum();
  std::string Name() const override { return "Pendulum"; }
  // As gym draws it (render_mode="rgb_array"), at its frame rate.
  bool Render(Picture& picture) const override;

  static constexpr double kMaxSpeed = 8.0;
  static constexpr double kMaxTorque = 2.0;
  static constexpr double kDt = 0.05;
  static constexpr double kG = 10.0;
  static constexpr double kMass = 1.0;
  static constexpr double kLength = 1.0;
  static constexpr double kPi = 3.14159265358979323846;

  // Maps an angle to [-pi, pi).
  static double AngleNormalize(double x);

 protected:
  void ResetState(Rng& rng, State& state) override;
  void Observe(const State& state, std::array<float, 3>& obs) const override;
  StepResult DoStep(const Action& action) override;

 private:
  double max_torque_ = kMaxTorque;
  double m_ = kMass;
  double l_ = kLength;
  double g_ = kG;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_PENDULUM_H_
