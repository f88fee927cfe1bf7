// Gymnasium's Box2D tasks over Debian's libbox2d: LunarLander-v2,
// LunarLanderContinuous-v2 (lunar_lander.h), BipedalWalker-v3 and
// BipedalWalkerHardcore-v3 (bipedal_walker.h), registered by name.
#ifndef ASYNCRL_ENVS_BOX2D_BOX2D_ENVS_H_
#define ASYNCRL_ENVS_BOX2D_BOX2D_ENVS_H_

namespace asyncrl {

class EnvRegistry;
struct TrainingDefaults;

// The Box2D tasks' training defaults: rewards unscaled (their returns run
// from about -200 to 300; the presets normalize them where
// rl-baselines3-zoo does).
TrainingDefaults Box2DTrainingDefaults();

// Registers the four tasks with Gymnasium's episode limits (1000 steps;
// 1600 for BipedalWalker, 2000 for its hardcore terrain).
void RegisterBox2D(EnvRegistry& registry);

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_BOX2D_BOX2D_ENVS_H_
