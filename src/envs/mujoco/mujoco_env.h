// Environments over the MuJoCo physics engine (Debian's libmujoco): the
// simulation frame they share, as Gymnasium's MujocoEnv is for its v4
// tasks. The models are this project's MJCF files (envs/mujoco/models/),
// compiled into the library, so an installed program finds them without a
// path.
#ifndef ASYNCRL_ENVS_MUJOCO_MUJOCO_ENV_H_
#define ASYNCRL_ENVS_MUJOCO_MUJOCO_ENV_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "asyncrl/envs/env.h"
#include "asyncrl/misc/rng.h"

// MuJoCo's own types, kept out of this header's includers.
struct mjModel_;
struct mjData_;

namespace asyncrl {

// The names of the models compiled into the library (e.g. "hopper").
std::vector<std::string> MujocoModelNames();
// Model `name`'s MJCF text. Throws std::invalid_argument listing the
// names for an unknown one.
const std::string& MujocoModelXml(const std::string& name);

// One simulated model, its state and the step Gymnasium's tasks share:
// the action goes to the actuators' controls, the physics advances
// `frame_skip` timesteps, then the constraint forces are propagated to the
// bodies (mj_rnePostConstraint: the contact forces that Ant's and
// Humanoid's observations read). Not thread-safe; the compiled model is
// shared, read-only, by every environment of one process built from it.
class MujocoEnv : public Env {
 public:
  ~MujocoEnv() override;

  const Space& ObservationSpace() const override { return observation_space_; }
  // A Box over the actuators' control ranges, as Gymnasium's.
  const Space& ActionSpace() const override { return action_space_; }

  const mjModel_& model() const { return *model_; }
  const mjData_& data() const { return *data_; }
  // Seconds of simulated time a Step covers: the timestep x frame skip.
  double dt() const;
  int frame_skip() const { return frame_skip_; }
  // The model's geoms seen from the side (x right, z up; from above, x and
  // y, for a model that moves on the floor's plane), following the first
  // body, 480x360 at the frame rate of one Step.
  bool Render(Picture& picture) const override;
  // Sets the state (e.g. a test's), then recomputes the derived
  // quantities (mj_forward), as Gymnasium's set_state.
  void SetState(const std::vector<double>& qpos,
                const std::vector<double>& qvel);

 protected:
  // Loads model `name` (MujocoModelNames()); observations have as many
  // floats as `observation_size` says for the compiled model;
  // `frame_skip` >= 1.
  MujocoEnv(const std::string& name, int frame_skip,
            const std::function<int(const mjModel_&)>& observation_size);

  // Draws the initial state with noise of `scale`: model's qpos0 plus
  // uniform(-scale, scale) noise, and zero velocities plus uniform noise,
  // or scale x standard normal noise where `normal_velocity`.
  void ResetWithNoise(double scale, bool normal_velocity);
  // Writes the observation of the current state into `obs`
  // (observation_size floats).
  virtual void Observe(float* obs) const = 0;
  // Draws the episode's initial state (ResetWithNoise, or its own).
  virtual void ResetModel() = 0;
  // The task: advance with Simulate(action) and compute reward and
  // termination; end with `result.observation = Observation()`.
  StepResult DoStep(const Action& action) override = 0;

  // Applies `action` and advances frame_skip timesteps.
  void Simulate(const Action& action);
  // Refreshes the observation buffer and returns a view of it.
  FloatView Observation();
  // Sum of the squared action values (the control cost's sum).
  static double SquaredNorm(const Action& action);
  Rng& rng() { return rng_; }
  // Render() looks from above (Swimmer).
  void set_top_view(bool top_view) { top_view_ = top_view; }

  mjData_* data_ = nullptr;

 private:
  FloatView DoReset(std::optional<uint64_t> seed) final;

  std::shared_ptr<const mjModel_> model_;
  int frame_skip_;
  Space observation_space_;
  Space action_space_;
  std::vector<float> obs_;
  Rng rng_;
  bool top_view_ = false;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_MUJOCO_MUJOCO_ENV_H_
