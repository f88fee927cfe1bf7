// MountainCar: gym's MountainCar-v0 (Moore, 1990), an under-powered car that
// must swing up a hill; same constants and termination as gym.
#ifndef ASYNCRL_ENVS_MOUNTAIN_CAR_H_
#define ASYNCRL_ENVS_MOUNTAIN_CAR_H_

#include <array>

#include "envs/env.h"
#include "misc/rng.h"

namespace asyncrl {

// Observation: position, velocity. Actions: 0 push left, 1 none, 2 push right.
// Reward -1 per step. No time limit (the registry adds 200).
class MountainCar : public Env {
 public:
  MountainCar();
  std::string Name() const override { return "MountainCar"; }
  const Space& ObservationSpace() const override { return observation_space_; }
  const Space& ActionSpace() const override { return action_space_; }
  const std::array<double, 2>& state() const { return state_; }
  void set_state(const std::array<double, 2>& state);

  static constexpr double kMinPosition = -1.2;
  static constexpr double kMaxPosition = 0.6;
  static constexpr double kMaxSpeed = 0.07;
  static constexpr double kGoalPosition = 0.5;
  static constexpr double kForce = 0.001;
  static constexpr double kGravity = 0.0025;

 protected:
  FloatView DoReset(std::optional<uint64_t> seed) override;
  StepResult DoStep(const Action& action) override;

 private:
  FloatView Observe();

  Space observation_space_;
  Space action_space_;
  Rng rng_;
  std::array<double, 2> state_{};
  std::array<float, 2> obs_{};
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_MOUNTAIN_CAR_H_
