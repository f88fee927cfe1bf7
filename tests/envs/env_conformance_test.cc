// The conformance suite every registered environment must pass: spaces and
// shapes, determinism under a seed, episodes that end, bad actions rejected
// with a clear error, and declared parameters that take every value of
// their range (from the next Reset) and refuse others in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "asyncrl/envs/games/self_play_env.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/misc/rng.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace env_conformance_test {
namespace {

class EnvConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Env> Make() { return MakeEnv(GetParam()); }

  // A valid random action for `env`, drawn from `rng` (a legal one in a
  // two-player game).
  static Action RandomAction(Env& env, Rng& rng, std::vector<float>& storage) {
    const Space& space = env.ActionSpace();
    if (SelfPlayEnv* game = FindSelfPlayEnv(env)) {
      const std::vector<int64_t> legal = game->game().LegalActions();
      // A finished game has none: any action (Step refuses it anyway).
      if (legal.empty()) return Action::Discrete(0);
      return Action::Discrete(legal[rng.Next() % legal.size()]);
    }
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

// Every built-in environment family declares parameters (docs/environments.md,
// "Environment parameters"); a user's environment may declare none.
TEST_P(EnvConformanceTest, DeclaresParametersWithDefaultsInRange) {
  auto env = Make();
  ASSERT_FALSE(env->Parameters().empty()) << GetParam();
  for (const EnvParameter& p : env->Parameters()) {
    SCOPED_TRACE(p.name);
    EXPECT_LE(p.min, p.default_value);
    EXPECT_LE(p.default_value, p.max);
    EXPECT_LT(p.min, p.max);
    EXPECT_FALSE(p.help.empty());
    EXPECT_EQ(env->Parameter(p.name), p.default_value);
  }
}

TEST_P(EnvConformanceTest, EveryParameterRunsAtBothBoundsFromTheNextReset) {
  const auto declaring = Make();
  for (const EnvParameter& p : declaring->Parameters()) {
    for (const double value : {p.min, p.max}) {
      SCOPED_TRACE(p.name + "=" + std::to_string(value));
      auto env = Make();
      env->Reset(1);
      env->SetParameter(p.name, value);
      // Not mid-episode: the running episode keeps the default.
      EXPECT_EQ(env->Parameter(p.name), p.default_value);
      Trace t = Run(*env, 5, 300);
      EXPECT_EQ(env->Parameter(p.name), value);
      for (float x : t.observations) ASSERT_TRUE(std::isfinite(x));
      for (double r : t.rewards) ASSERT_TRUE(std::isfinite(r));
    }
  }
}

TEST_P(EnvConformanceTest, ChangingAParameterChangesTheDynamics) {
  // Some parameter of every family changes a seeded trajectory (a
  // parameter that were ignored would leave it unchanged).
  auto reference = Make();
  const Trace want = Run(*reference, 9, 200);
  bool changed = false;
  for (const EnvParameter& p : reference->Parameters()) {
    auto env = Make();
    // The bound away from the default (a 0/1 switch may default to 1).
    env->SetParameter(p.name, p.default_value != p.max ? p.max : p.min);
    const Trace got = Run(*env, 9, 200);
    changed |=
        got.observations != want.observations || got.rewards != want.rewards;
  }
  EXPECT_TRUE(changed);
}

TEST_P(EnvConformanceTest, BadParametersAreRefusedInOneLine) {
  auto env = Make();
  ASSERT_FALSE(env->Parameters().empty());
  const EnvParameter& p = env->Parameters().front();
  for (const double bad :
       {p.max + 1.0, p.min - 1.0, std::numeric_limits<double>::quiet_NaN()}) {
    try {
      env->SetParameter(p.name, bad);
      ADD_FAILURE() << p.name << "=" << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(p.name), std::string::npos) << what;
      EXPECT_NE(what.find("accepted: "), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  try {
    env->SetParameter("no_such_parameter", 1.0);
    ADD_FAILURE() << "an unknown parameter was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no_such_parameter"), std::string::npos) << what;
    EXPECT_NE(what.find(p.name), std::string::npos) << what;  // The list.
  }
  // Nothing refused was applied.
  env->Reset(0);
  EXPECT_EQ(env->Parameter(p.name), p.default_value);
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
}  // namespace env_conformance_test
}  // namespace asyncrl
