#include "asyncrl/envs/registry.h"

#include <gtest/gtest.h>

#include "asyncrl/envs/wrappers.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace registry_test {
namespace {

TEST(EnvRegistryTest, UnknownNameListsEveryRegisteredName) {
  try {
    MakeEnv("CartPole-v9");
    FAIL() << "unknown name accepted";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CartPole-v9"), std::string::npos) << msg;
    for (const auto& name : DefaultEnvRegistry().Names()) {
      EXPECT_NE(msg.find(name), std::string::npos) << msg;
    }
  }
}

int64_t EpisodeLength(Env& env) {
  env.Reset(0);
  int64_t steps = 0;
  StepResult r;
  do {
    r = env.Step(Action::Discrete(1));  // Do nothing on Mountain Car.
    ++steps;
  } while (!r.Done());
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.terminated);
  return steps;
}

TEST(EnvRegistryTest, TimeLimitsFollowGym) {
  EXPECT_EQ(EpisodeLength(*MakeEnv("MountainCar-v0")), 200);
  EXPECT_EQ(EpisodeLength(*MakeEnv("Acrobot-v1")), 500);
  EnvOptions options;
  options.max_episode_steps = 17;
  EXPECT_EQ(EpisodeLength(*MakeEnv("MountainCar-v0", options)), 17);
}

TEST(EnvRegistryTest, RewardScaleMultipliesRewards) {
  EnvOptions options;
  options.reward_scale = 0.01;
  auto env = MakeEnv("CartPole-v1", options);
  env->Reset(0);
  EXPECT_DOUBLE_EQ(env->Step(Action::Discrete(0)).reward, 0.01);
}

TEST(EnvRegistryTest, InvalidOptionsNameTheField) {
  EnvOptions options;
  options.max_episode_steps = -3;
  try {
    MakeEnv("CartPole-v1", options);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("max_episode_steps=-3"),
              std::string::npos)
        << e.what();
  }
}

TEST(EnvRegistryTest, DuplicateRegistrationIsRejected) {
  EnvRegistry registry;
  RegisterClassicControl(registry);
  EXPECT_THROW(RegisterClassicControl(registry), std::logic_error);
}

}  // namespace
}  // namespace registry_test
}  // namespace asyncrl
