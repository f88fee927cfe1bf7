// The skeleton the classic-control environments share: fixed-size double
// state, float observation buffer, spaces, generator and seeding.
#ifndef ASYNCRL_ENVS_CLASSIC_CONTROL_H_
#define ASYNCRL_ENVS_CLASSIC_CONTROL_H_

#include <array>
#include <cstddef>

#include "asyncrl/envs/env.h"
#include "asyncrl/misc/rng.h"

namespace asyncrl {

// kStateSize doubles of state, kObsSize floats of observation. Subclasses
// draw the initial state in ResetState, derive the observation in Observe
// and implement DoStep (ending with `return ...Observation()`).
template <size_t kStateSize, size_t kObsSize>
class ClassicControl : public Env {
 public:
  using State = std::array<double, kStateSize>;

  const Space& ObservationSpace() const override { return observation_space_; }
  const Space& ActionSpace() const override { return action_space_; }
  // The full double-precision state (tests compare it with the equations).
  const State& state() const { return state_; }
  void set_state(const State& state) {
    state_ = state;
    Observation();
  }

 protected:
  ClassicControl(Space observation_space, Space action_space)
      : observation_space_(std::move(observation_space)),
        action_space_(std::move(action_space)) {}

  virtual void ResetState(Rng& rng, State& state) = 0;
  virtual void Observe(const State& state,
                       std::array<float, kObsSize>& obs) const = 0;

  FloatView DoReset(std::optional<uint64_t> seed) final {
    if (seed) rng_.Seed(*seed);
    ResetState(rng_, state_);
    return Observation();
  }

  // Refreshes the observation buffer from the state and returns a view.
  FloatView Observation() {
    Observe(state_, obs_);
    return FloatView{obs_.data(), static_cast<int64_t>(kObsSize)};
  }

  State state_{};

 private:
  Space observation_space_;
  Space action_space_;
  Rng rng_;
  std::array<float, kObsSize> obs_{};
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_CLASSIC_CONTROL_H_
