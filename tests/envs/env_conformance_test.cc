// The conformance suite every registered environment must pass: spaces and
// shapes, determinism under a seed, episodes that end, and bad actions
// rejected with a clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "asyncrl/envs/registry.h"
#include "asyncrl/misc/rng.h"

namespace asyncrl {
namespace {

class EnvConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Env> Make() { return MakeEnv(GetParam()); }

  // A valid random action for `env`, drawn from `rng`.
  static Action RandomAction(const Env& env, Rng& rng,
                             std::vector<float>& storage) {
    const Space& space = env.ActionSpace();
    if (space.IsDiscrete()) {
      return Action::Discrete(static_cast<int64_t>(rng.Next() % space.n));
    }
    storage.resize(space.FlatSize());
    for (size_t i = 0; i < storage.size(); ++i) {
      storage[i] = static_cast<float>(rng.Uniform(space.low[i], space.high[i]));
    }
    return Action::Continuous(storage.data(), space.FlatSize());
  }

  struct Trace {
    std::vector<float> observations;
    std::vector<double> rewards;
    int64_t episodes = 0;
  };

  // Runs `steps` steps with random actions from a fixed seed, resetting at
  // episode ends.
  Trace Run(Env& env, uint64_t seed, int steps) {
    Rng rng(42);
    std::vector<float> storage;
    Trace trace;
    FloatView obs = env.Reset(seed);
    trace.observations.assign(obs.data, obs.data + obs.size);
    for (int t = 0; t < steps; ++t) {
      StepResult r = env.Step(RandomAction(env, rng, storage));
      trace.observations.insert(trace.observations.end(), r.observation.data,
                                r.observation.data + r.observation.size);
      trace.rewards.push_back(r.reward);
      if (r.Done()) {
        ++trace.episodes;
        obs = env.Reset();
        trace.observations.insert(trace.observations.end(), obs.data,
                                  obs.data + obs.size);
      }
    }
    return trace;
  }
};

TEST_P(EnvConformanceTest, ObservationsMatchTheSpace) {
  auto env = Make();
  const Space& space = env->ObservationSpace();
  ASSERT_FALSE(space.IsDiscrete());
  FloatView obs = env->Reset(1);
  ASSERT_EQ(obs.size, space.FlatSize());
  Rng rng(7);
  std::vector<float> storage;
  for (int t = 0; t < 50; ++t) {
    for (int64_t i = 0; i < obs.size; ++i) {
      EXPECT_TRUE(std::isfinite(obs[i]));
      EXPECT_GE(obs[i], space.low[i]) << "element " << i;
      EXPECT_LE(obs[i], space.high[i]) << "element " << i;
    }
    StepResult r = env->Step(RandomAction(*env, rng, storage));
    obs = r.observation;
    ASSERT_EQ(obs.size, space.FlatSize());
    EXPECT_TRUE(std::isfinite(r.reward));
    if (r.Done()) obs = env->Reset();
  }
}

TEST_P(EnvConformanceTest, SameSeedGivesSameTrajectory) {
  auto a = Make();
  auto b = Make();
  const Trace ta = Run(*a, 123, 600);
  const Trace tb = Run(*b, 123, 600);
  EXPECT_EQ(ta.observations, tb.observations);
  EXPECT_EQ(ta.rewards, tb.rewards);
  // And a reseeded environment repeats itself.
  const Trace tc = Run(*a, 123, 600);
  EXPECT_EQ(ta.observations, tc.observations);
}

TEST_P(EnvConformanceTest, DifferentSeedsGiveDifferentEpisodes) {
  // Some games start from a fixed screen (MinAtar's Asterix, Seaquest), so
  // the seeds must show within the first steps rather than in the first
  // observation.
  auto env = Make();
  const Trace a = Run(*env, 1, 100);
  const Trace b = Run(*env, 2, 100);
  EXPECT_NE(a.observations, b.observations);
}

TEST_P(EnvConformanceTest, EpisodesEnd) {
  // Random play ends three episodes well within 10,000 steps: the classic
  // tasks have limits of at most 500 steps, MinAtar's Freeway of 2,500
  // frames and its other games end when the player loses.
  auto env = Make();
  Rng rng(5);
  std::vector<float> storage;
  env->Reset(5);
  int episodes = 0;
  for (int t = 0; t < 10000 && episodes < 3; ++t) {
    if (env->Step(RandomAction(*env, rng, storage)).Done()) {
      ++episodes;
      env->Reset();
    }
  }
  EXPECT_EQ(episodes, 3);
}

TEST_P(EnvConformanceTest, OutOfRangeActionsAreRejected) {
  auto env = Make();
  env->Reset(0);
  const Space& space = env->ActionSpace();
  if (space.IsDiscrete()) {
    for (int64_t bad : {int64_t{-1}, space.n, int64_t{1} << 40}) {
      try {
        env->Step(Action::Discrete(bad));
        FAIL() << "action " << bad << " accepted";
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(std::to_string(bad)),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("accepted"), std::string::npos);
      }
    }
  } else {
    const int64_t n = space.FlatSize();
    std::vector<float> too_big(n, space.high[0] + 1);
    std::vector<float> nan(n, std::numeric_limits<float>::quiet_NaN());
    std::vector<float> wrong_size(n + 1, 0.0f);
    EXPECT_THROW(env->Step(Action::Continuous(too_big.data(), n)),
                 std::invalid_argument);
    EXPECT_THROW(env->Step(Action::Continuous(nan.data(), n)),
                 std::invalid_argument);
    EXPECT_THROW(env->Step(Action::Continuous(wrong_size.data(), n + 1)),
                 std::invalid_argument);
  }
  // A rejected action leaves the episode usable.
  Rng rng(3);
  std::vector<float> storage;
  EXPECT_NO_THROW(env->Step(RandomAction(*env, rng, storage)));
}

TEST_P(EnvConformanceTest, StepWithoutResetIsAnError) {
  auto env = Make();
  Rng rng(3);
  std::vector<float> storage;
  EXPECT_THROW(env->Step(RandomAction(*env, rng, storage)), std::logic_error);
  env->Reset(0);
  StepResult r;
  do {
    r = env->Step(RandomAction(*env, rng, storage));
  } while (!r.Done());
  EXPECT_THROW(env->Step(RandomAction(*env, rng, storage)), std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(AllRegistered, EnvConformanceTest,
                         ::testing::ValuesIn(DefaultEnvRegistry().Names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace asyncrl
