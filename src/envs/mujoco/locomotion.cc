#include "asyncrl/envs/mujoco/locomotion.h"

#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "asyncrl/envs/registry.h"

namespace asyncrl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

LocomotionSpec LocomotionSpecOf(const std::string& task) {
  using Health = LocomotionSpec::Health;
  LocomotionSpec s;
  s.name = task;
  if (task == "HalfCheetah") {
    s.model = "half_cheetah";
    s.normal_velocity_noise = true;
  } else if (task == "Hopper" || task == "Walker2d") {
    const bool hopper = task == "Hopper";
    s.model = hopper ? "hopper" : "walker2d";
    s.frame_skip = 4;
    s.velocity_clip = 10;
    s.health = hopper ? Health::kHopper : Health::kWalker;
    s.ctrl_cost_weight = 1e-3;
    s.healthy_z_min = hopper ? 0.7 : 0.8;
    s.healthy_z_max = hopper ? kInf : 2.0;
    s.healthy_angle_min = hopper ? -0.2 : -1.0;
    s.healthy_angle_max = hopper ? 0.2 : 1.0;
    s.healthy_state_min = -100;
    s.healthy_state_max = 100;
    s.reset_noise_scale = 5e-3;
  } else if (task == "Swimmer") {
    s.model = "swimmer";
    s.frame_skip = 4;
    s.excluded_positions = 2;
    s.ctrl_cost_weight = 1e-4;
  } else if (task == "Ant") {
    s.model = "ant";
    s.excluded_positions = 2;
    s.health = Health::kAnt;
    s.progress = LocomotionSpec::Progress::kTorso;
    s.normal_velocity_noise = true;
    s.weighted_forward_reward = false;
    s.ctrl_cost_weight = 0.5;
    s.healthy_z_min = 0.2;
    s.healthy_z_max = 1.0;
  } else if (task == "Humanoid") {
    s.model = "humanoid";
    s.excluded_positions = 2;
    s.body_quantities = true;
    s.health = Health::kHumanoid;
    s.progress = LocomotionSpec::Progress::kMassCentre;
    s.forward_reward_weight = 1.25;
    s.healthy_reward = 5.0;
    s.healthy_z_min = 1.0;
    s.healthy_z_max = 2.0;
    s.reset_noise_scale = 1e-2;
  } else {
    throw std::invalid_argument(
        "unknown locomotion task '" + task +
        "'; accepted: HalfCheetah, Hopper, Walker2d, Swimmer, Ant, Humanoid");
  }
  return s;
}

int Locomotion::ObservationSize(const LocomotionSpec& spec,
                                const mjModel& model) {
  int size = model.nq - spec.excluded_positions + model.nv;
  if (spec.body_quantities) {
    // cinert (10 a body), cvel (6), qfrc_actuator (nv), cfrc_ext (6).
    size += 10 * model.nbody + 6 * model.nbody + model.nv + 6 * model.nbody;
  }
  return size;
}

Locomotion::Locomotion(LocomotionSpec spec)
    : MujocoEnv(spec.model, spec.frame_skip,
                [&spec](const mjModel& model) {
                  return ObservationSize(spec, model);
                }),
      spec_(std::move(spec)),
      terminate_when_unhealthy_(spec_.terminate_when_unhealthy ? 1 : 0) {
  // The swimmer moves on the floor's plane: seen from above.
  set_top_view(spec_.model == "swimmer");
  torso_ = mj_name2id(&model(), mjOBJ_BODY, "torso");
  DeclareParameters();
}

void Locomotion::DeclareParameters() {
  using Health = LocomotionSpec::Health;
  if (spec_.weighted_forward_reward) {
    DeclareParameter("forward_reward_weight", -100, 100,
                     "the weight of the forward velocity in the reward",
                     &spec_.forward_reward_weight);
  }
  DeclareParameter("ctrl_cost_weight", 0, 100,
                   "the weight of the squared action in the cost",
                   &spec_.ctrl_cost_weight);
  if (spec_.health != Health::kAlways) {
    DeclareParameter("healthy_reward", 0, 100,
                     "the reward for every healthy step",
                     &spec_.healthy_reward);
    DeclareParameter("terminate_when_unhealthy", 0, 1,
                     "1: an unhealthy state ends the episode (and every step "
                     "earns healthy_reward); 0: it does not",
                     &terminate_when_unhealthy_, /*integer=*/true);
    DeclareParameter("healthy_z_min", -kInf, kInf,
                     "the torso's lowest healthy height", &spec_.healthy_z_min);
    DeclareParameter("healthy_z_max", -kInf, kInf,
                     "the torso's highest healthy height",
                     &spec_.healthy_z_max);
  }
  if (spec_.health == Health::kHopper || spec_.health == Health::kWalker) {
    DeclareParameter("healthy_angle_min", -kInf, kInf,
                     "the torso's lowest healthy angle (radians)",
                     &spec_.healthy_angle_min);
    DeclareParameter("healthy_angle_max", -kInf, kInf,
                     "the torso's highest healthy angle (radians)",
                     &spec_.healthy_angle_max);
  }
  if (spec_.health == Health::kHopper) {
    DeclareParameter("healthy_state_min", -kInf, kInf,
                     "the lowest healthy value of every other state entry",
                     &spec_.healthy_state_min);
    DeclareParameter("healthy_state_max", -kInf, kInf,
                     "the highest healthy value of every other state entry",
                     &spec_.healthy_state_max);
  }
  DeclareParameter("reset_noise_scale", 0, 10,
                   "the scale of the initial state's noise",
                   &spec_.reset_noise_scale);
}

void Locomotion::ResetModel() {
  ResetWithNoise(spec_.reset_noise_scale, spec_.normal_velocity_noise);
}

bool Locomotion::IsHealthy() const {
  using Health = LocomotionSpec::Health;
  const mjModel& m = model();
  const double* qpos = data_->qpos;
  const double* qvel = data_->qvel;
  switch (spec_.health) {
    case Health::kAlways:
      return true;
    case Health::kHopper: {
      // Everything but x and z, strictly inside the state range.
      auto inside = [this](double v) {
        return spec_.healthy_state_min < v && v < spec_.healthy_state_max;
      };
      if (!std::all_of(qpos + 2, qpos + m.nq, inside) ||
          !std::all_of(qvel, qvel + m.nv, inside)) {
        return false;
      }
      [[fallthrough]];
    }
    case Health::kWalker:
      return spec_.healthy_z_min < qpos[1] && qpos[1] < spec_.healthy_z_max &&
             spec_.healthy_angle_min < qpos[2] &&
             qpos[2] < spec_.healthy_angle_max;
    case Health::kAnt: {
      auto finite = [](double v) { return std::isfinite(v); };
      return std::all_of(qpos, qpos + m.nq, finite) &&
             std::all_of(qvel, qvel + m.nv, finite) &&
             spec_.healthy_z_min <= qpos[2] && qpos[2] <= spec_.healthy_z_max;
    }
    case Health::kHumanoid:
      return spec_.healthy_z_min < qpos[2] && qpos[2] < spec_.healthy_z_max;
  }
  return true;
}

double Locomotion::ForwardPosition() const {
  const mjModel& m = model();
  switch (spec_.progress) {
    case LocomotionSpec::Progress::kRootX:
      return data_->qpos[0];
    case LocomotionSpec::Progress::kTorso: {
      // As Gymnasium reads it: the body frame's position from the last
      // kinematics pass (that of the step's last substep, before its
      // integration).
      return data_->xpos[3 * torso_];
    }
    case LocomotionSpec::Progress::kMassCentre: {
      double mass = 0, moment = 0;
      for (int b = 0; b < m.nbody; ++b) {
        mass += m.body_mass[b];
        moment += m.body_mass[b] * data_->xipos[3 * b];
      }
      return moment / mass;
    }
  }
  return 0;
}

void Locomotion::Observe(float* obs) const {
  const mjModel& m = model();
  const mjData& d = *data_;
  float* out = obs;
  for (int i = spec_.excluded_positions; i < m.nq; ++i) {
    *out++ = static_cast<float>(d.qpos[i]);
  }
  const double clip = spec_.velocity_clip;
  for (int i = 0; i < m.nv; ++i) {
    *out++ = static_cast<float>(clip > 0 ? std::clamp(d.qvel[i], -clip, clip)
                                         : d.qvel[i]);
  }
  if (spec_.body_quantities) {
    auto append = [&out](const double* values, int n) {
      for (int i = 0; i < n; ++i) *out++ = static_cast<float>(values[i]);
    };
    append(d.cinert, 10 * m.nbody);
    append(d.cvel, 6 * m.nbody);
    append(d.qfrc_actuator, m.nv);
    append(d.cfrc_ext, 6 * m.nbody);
  }
}

StepResult Locomotion::DoStep(const Action& action) {
  const double before = ForwardPosition();
  Simulate(action);
  const double velocity = (ForwardPosition() - before) / dt();
  const bool healthy = IsHealthy();
  const bool terminate = terminate_when_unhealthy_ != 0;
  const double forward_weight =
      spec_.weighted_forward_reward ? spec_.forward_reward_weight : 1.0;
  double reward =
      forward_weight * velocity - spec_.ctrl_cost_weight * SquaredNorm(action);
  if (spec_.health != LocomotionSpec::Health::kAlways &&
      (healthy || terminate)) {
    reward += spec_.healthy_reward;
  }
  StepResult result;
  result.reward = reward;
  result.terminated = terminate && !healthy;
  result.observation = Observation();
  return result;
}

InvertedPendulum::InvertedPendulum()
    : MujocoEnv("inverted_pendulum", 2,
                [](const mjModel& m) { return m.nq + m.nv; }) {
  // v4 takes no keyword arguments; v5 added this one.
  DeclareParameter("reset_noise_scale", 0, 1,
                   "the scale of the initial state's noise (v5's keyword "
                   "argument)",
                   &reset_noise_scale_);
}

void InvertedPendulum::ResetModel() {
  ResetWithNoise(reset_noise_scale_, /*normal_velocity=*/false);
}

void InvertedPendulum::Observe(float* obs) const {
  const mjModel& m = model();
  for (int i = 0; i < m.nq; ++i) obs[i] = static_cast<float>(data_->qpos[i]);
  for (int i = 0; i < m.nv; ++i) {
    obs[m.nq + i] = static_cast<float>(data_->qvel[i]);
  }
}

StepResult InvertedPendulum::DoStep(const Action& action) {
  Simulate(action);
  StepResult result;
  result.reward = 1.0;
  result.observation = Observation();
  const FloatView& obs = result.observation;
  const bool finite = std::all_of(obs.data, obs.data + obs.size,
                                  [](float v) { return std::isfinite(v); });
  result.terminated = !finite || std::abs(data_->qpos[1]) > 0.2;
  return result;
}

std::unique_ptr<Env> MakeMujocoTask(const std::string& task) {
  if (task == "InvertedPendulum") return std::make_unique<InvertedPendulum>();
  return std::make_unique<Locomotion>(LocomotionSpecOf(task));
}

TrainingDefaults MujocoTrainingDefaults() {
  TrainingDefaults defaults;
  defaults.family =
      "MuJoCo (rewards unscaled and no entropy bonus, as rl-baselines3-zoo's "
      "PPO; the presets normalize observations and rewards)";
  defaults.reward_scale = 1.0;
  defaults.entropy_weight = 0.0;
  return defaults;
}

void RegisterMujoco(EnvRegistry& registry) {
  const TrainingDefaults defaults = MujocoTrainingDefaults();
  for (const std::string task : {"Ant", "HalfCheetah", "Hopper", "Humanoid",
                                 "InvertedPendulum", "Swimmer", "Walker2d"}) {
    registry.Register(
        task + "-v4", [task] { return MakeMujocoTask(task); }, 1000, defaults);
  }
}

}  // namespace asyncrl
