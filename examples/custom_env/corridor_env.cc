// Corridor, an environment of your own: it implements asyncrl's Env
// interface (envs/env.h), and RegisterCorridor() puts it in the registry
// under "Corridor" (corridor.h). The trainer (corridor.cc) and the Python
// module (corridor_module.cc) both call it.
//
// The task: the agent starts at cell 0 of a corridor of `length` cells and
// moves left or right; reaching the last cell ends the episode with reward
// 1, each step costs 0.01, and an episode is cut after 100 steps. The
// observation is the position as a fraction of the corridor and a bias
// input. An environment asyncrl does not know gets no family's defaults:
// its rewards are not scaled (the run's first lines say so).
#include <asyncrl/envs/env.h>
#include <asyncrl/envs/registry.h>

#include <array>
#include <memory>
#include <string>

#include "corridor.h"

namespace {

class Corridor : public asyncrl::Env {
 public:
  Corridor()
      : observation_space_(asyncrl::Space::Box({2}, 0.0f, 1.0f)),
        action_space_(asyncrl::Space::Discrete(2)) {
    // A parameter --env-param and curricula can set, from the next episode.
    DeclareParameter("length", 2, 50, "cells from the start to the goal",
                     &length_, /*integer=*/true);
  }

  std::string Name() const override { return "Corridor"; }
  const asyncrl::Space& ObservationSpace() const override {
    return observation_space_;
  }
  const asyncrl::Space& ActionSpace() const override { return action_space_; }

 protected:
  asyncrl::FloatView DoReset(std::optional<uint64_t> /*seed*/) override {
    // Deterministic: the seed has nothing to draw.
    position_ = 0;
    return Observe();
  }

  asyncrl::StepResult DoStep(const asyncrl::Action& action) override {
    // Env::Step has checked the action against ActionSpace().
    position_ += action.index == 1 ? 1 : -1;
    if (position_ < 0) position_ = 0;
    asyncrl::StepResult r;
    r.terminated = position_ >= static_cast<int>(length_);
    r.reward = r.terminated ? 1.0 : -0.01;
    r.observation = Observe();
    return r;
  }

 private:
  asyncrl::FloatView Observe() {
    obs_ = {static_cast<float>(position_) / static_cast<float>(length_), 1.0f};
    return {obs_.data(), static_cast<int64_t>(obs_.size())};
  }

  asyncrl::Space observation_space_;
  asyncrl::Space action_space_;
  double length_ = 10;
  int position_ = 0;
  std::array<float, 2> obs_{};
};

}  // namespace

void RegisterCorridor() {
  // The registry's name, a factory, and the episode limit (100 steps; 0:
  // none).
  if (asyncrl::DefaultEnvRegistry().Contains("Corridor")) return;
  asyncrl::DefaultEnvRegistry().Register(
      "Corridor", [] { return std::make_unique<Corridor>(); }, 100);
}
