// Acrobot: gym's Acrobot-v1 swing-up task (Sutton & Barto's "book" dynamics),
// integrated with one fourth-order Runge-Kutta step of dt = 0.2 per action.
#ifndef ASYNCRL_ENVS_ACROBOT_H_
#define ASYNCRL_ENVS_ACROBOT_H_

#include "asyncrl/envs/classic_control.h"

namespace asyncrl {

// Observation: cos/sin of both joint angles and both angular velocities.
// Actions: torque -1, 0, +1 on the second joint. Reward -1 per step, 0 on the
// step that reaches the goal height. No time limit (the registry adds 500).
// Parameters (gym's attribute names, lower case): link_length_1,
// link_mass_1, link_mass_2, link_com_pos_1, link_com_pos_2, link_moi (the
// book dynamics do not read the second link's length).
class Acrobot : public ClassicControl<4, 6> {
 public:
  Acrobot();
  std::string Name() const override { return "Acrobot"; }
  // As gym draws it (render_mode="rgb_array"), at its frame rate.
  bool Render(Picture& picture) const override;

  // Time derivative of (theta1, theta2, dtheta1, dtheta2) under `torque`.
  std::array<double, 4> Derivatives(const std::array<double, 4>& s,
                                    double torque) const;

  static constexpr double kDt = 0.2;
  static constexpr double kPi = 3.14159265358979323846;
  static constexpr double kMaxVel1 = 4 * kPi;
  static constexpr double kMaxVel2 = 9 * kPi;

 protected:
  void ResetState(Rng& rng, State& state) override;
  void Observe(const State& state, std::array<float, 6>& obs) const override;
  StepResult DoStep(const Action& action) override;

 private:
  double link_length_1_ = 1.0;
  double link_mass_1_ = 1.0;
  double link_mass_2_ = 1.0;
  double link_com_pos_1_ = 0.5;
  double link_com_pos_2_ = 0.5;
  double link_moi_ = 1.0;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_ACROBOT_H_
