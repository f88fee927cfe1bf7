// Gymnasium's v4 MuJoCo tasks: the locomotion tasks (HalfCheetah, Hopper,
// Walker2d, Swimmer, Ant, Humanoid: move forward, pay for control, stay
// healthy) and InvertedPendulum, with Gymnasium's observations, rewards,
// termination rules, reset noise and keyword arguments (declared as
// parameters: --env-param).
#ifndef ASYNCRL_ENVS_MUJOCO_LOCOMOTION_H_
#define ASYNCRL_ENVS_MUJOCO_LOCOMOTION_H_

#include <limits>
#include <memory>
#include <string>

#include "asyncrl/envs/mujoco/mujoco_env.h"

namespace asyncrl {

class EnvRegistry;
struct TrainingDefaults;

// What one locomotion task is: its model and Gymnasium's defaults.
struct LocomotionSpec {
  // Which state is healthy (Gymnasium's is_healthy of each task).
  enum class Health {
    kAlways,    // HalfCheetah, Swimmer: never unhealthy.
    kHopper,    // z, angle and every other state value within their ranges.
    kWalker,    // z and angle within their ranges.
    kAnt,       // a finite state, torso z in [min, max].
    kHumanoid,  // torso z in (min, max).
  };
  // How forward progress is measured over a step.
  enum class Progress {
    kRootX,       // qpos[0]
    kTorso,       // the torso body's frame position (Ant)
    kMassCentre,  // the bodies' mass-weighted centre (Humanoid)
  };
  std::string name;   // Name(), e.g. "Hopper"
  std::string model;  // MujocoModelNames()
  int frame_skip = 5;
  // Leading qpos entries left out of the observation (the x, or x and y,
  // positions: exclude_current_positions_from_observation).
  int excluded_positions = 1;
  // Velocities in the observation clipped to [-clip, clip]; 0: not clipped.
  double velocity_clip = 0;
  // Humanoid's observation: positions, velocities, the bodies' inertias and
  // velocities, actuator forces and external contact forces.
  bool body_quantities = false;
  Health health = Health::kAlways;
  Progress progress = Progress::kRootX;
  // Noise of the initial velocities: scale x standard normal (else
  // uniform(-scale, scale), as the positions').
  bool normal_velocity_noise = false;
  // Whether the task takes forward_reward_weight (Ant-v4 does not).
  bool weighted_forward_reward = true;

  // Gymnasium's keyword arguments' defaults.
  double forward_reward_weight = 1.0;
  double ctrl_cost_weight = 0.1;
  double healthy_reward = 1.0;
  bool terminate_when_unhealthy = true;
  double healthy_z_min = 0, healthy_z_max = 0;
  double healthy_angle_min = 0, healthy_angle_max = 0;
  double healthy_state_min = 0, healthy_state_max = 0;
  double reset_noise_scale = 0.1;
};

// Gymnasium's v4 specs by task: "HalfCheetah", "Hopper", "Walker2d",
// "Swimmer", "Ant", "Humanoid". Throws std::invalid_argument for others.
LocomotionSpec LocomotionSpecOf(const std::string& task);

// reward = forward_reward_weight x forward velocity + healthy_reward
// (while healthy, or always when unhealthy states end the episode)
// - ctrl_cost_weight x |action|^2; terminated when unhealthy and
// terminate_when_unhealthy.
class Locomotion : public MujocoEnv {
 public:
  explicit Locomotion(LocomotionSpec spec);
  std::string Name() const override { return spec_.name; }
  // Whether the current state is healthy (the task's rule).
  bool IsHealthy() const;
  // The forward position the reward's velocity is measured on.
  double ForwardPosition() const;

 protected:
  void ResetModel() override;
  void Observe(float* obs) const override;
  StepResult DoStep(const Action& action) override;

 private:
  static int ObservationSize(const LocomotionSpec& spec, const mjModel_& model);
  void DeclareParameters();

  LocomotionSpec spec_;
  double terminate_when_unhealthy_;  // 0/1, a declared parameter.
  int torso_;  // The torso body's index (Ant's progress is its position).
};

// InvertedPendulum-v4: a cart balancing a pole; +1 a step; terminated when
// an observation is not finite or the pole's angle leaves [-0.2, 0.2].
class InvertedPendulum : public MujocoEnv {
 public:
  InvertedPendulum();
  std::string Name() const override { return "InvertedPendulum"; }

 protected:
  void ResetModel() override;
  void Observe(float* obs) const override;
  StepResult DoStep(const Action& action) override;

 private:
  double reset_noise_scale_ = 0.01;
};

// A MuJoCo task by its registered name without the version ("Hopper").
std::unique_ptr<Env> MakeMujocoTask(const std::string& task);

// The MuJoCo tasks' training defaults: rewards unscaled (the presets
// normalize them, as rl-baselines3-zoo's do) and no entropy bonus (the
// zoo's PPO for these tasks uses none or ~0.0004-0.002).
TrainingDefaults MujocoTrainingDefaults();

// Registers HalfCheetah-v4, Hopper-v4, Walker2d-v4, Ant-v4, Swimmer-v4,
// InvertedPendulum-v4 and Humanoid-v4 with Gymnasium's 1000-step limits
// and MujocoTrainingDefaults().
void RegisterMujoco(EnvRegistry& registry);

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_MUJOCO_LOCOMOTION_H_
