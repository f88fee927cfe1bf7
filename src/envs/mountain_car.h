// MountainCar: gym's MountainCar-v0 (Moore, 1990), an under-powered car that
// must swing up a hill; same constants and termination as gym.
#ifndef ASYNCRL_ENVS_MOUNTAIN_CAR_H_
#define ASYNCRL_ENVS_MOUNTAIN_CAR_H_

#include "asyncrl/envs/classic_control.h"

namespace asyncrl {

// Observation: position, velocity. Actions: 0 push left, 1 none, 2 push right.
// Reward -1 per step. No time limit (the registry adds 200).
class MountainCar : public ClassicControl<2, 2> {
 public:
  MountainCar();
  std::string Name() const override { return "MountainCar"; }
  // As gym draws it (render_mode="rgb_array"), at its frame rate.
  bool Render(Picture& picture) const override;

  static constexpr double kMinPosition = -1.2;
  static constexpr double kMaxPosition = 0.6;
  static constexpr double kMaxSpeed = 0.07;
  static constexpr double kGoalPosition = 0.5;
  static constexpr double kForce = 0.001;
  static constexpr double kGravity = 0.0025;

 protected:
  void ResetState(Rng& rng, State& state) override;
  void Observe(const State& state, std::array<float, 2>& obs) const override;
  StepResult DoStep(const Action& action) override;

 private:
  // Parameters (gym's attribute names).
  double force_ = kForce;
  double gravity_ = kGravity;
  double goal_position_ = kGoalPosition;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_MOUNTAIN_CAR_H_
