#include "asyncrl/envs/box2d/box2d_envs.h"

#include "asyncrl/envs/box2d/bipedal_walker.h"
#include "asyncrl/envs/box2d/lunar_lander.h"
#include "asyncrl/envs/registry.h"

namespace asyncrl {

TrainingDefaults Box2DTrainingDefaults() {
  TrainingDefaults defaults;
  defaults.family =
      "Box2D (rewards unscaled, as rl-baselines3-zoo trains these tasks)";
  defaults.reward_scale = 1.0;
  return defaults;
}

void RegisterBox2D(EnvRegistry& registry) {
  const TrainingDefaults d = Box2DTrainingDefaults();
  registry.Register(
      "LunarLander-v2", [] { return MakeLunarLander(false); }, 1000, d);
  registry.Register(
      "LunarLanderContinuous-v2", [] { return MakeLunarLander(true); }, 1000,
      d);
  registry.Register(
      "BipedalWalker-v3", [] { return MakeBipedalWalker(false); }, 1600, d);
  registry.Register(
      "BipedalWalkerHardcore-v3", [] { return MakeBipedalWalker(true); }, 2000,
      d);
}

}  // namespace asyncrl
