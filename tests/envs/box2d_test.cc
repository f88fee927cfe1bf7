// The Box2D tasks against Gymnasium's definitions: spaces and episode
// limits, Gymnasium's scripted policies landing the lander and walking the
// walker, the -100 of a crash, a fall or leaving the screen, wind, the
// hardcore terrain and the pictures.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "asyncrl/envs/box2d/bipedal_walker.h"
#include "asyncrl/envs/box2d/lunar_lander.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/envs/wrappers.h"
#include "asyncrl/misc/picture.h"
#include "asyncrl/misc/rng.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace box2d_test {
namespace {

constexpr float kPi = 3.14159265358979323846F;

// Gymnasium's scripted LunarLander policy (lunar_lander.py, heuristic()):
// tilt towards the pad, hold the height at 0.55 |x| above it, and once a leg
// is down only brake the fall. `lift` raises the height held (0 in
// Gymnasium's; 0.5 keeps the lander hovering without ever landing).
class LanderHeuristic {
 public:
  explicit LanderHeuristic(bool continuous, double lift = 0)
      : continuous_(continuous), lift_(lift) {}

  Action Act(FloatView s) {
    const double angle_targ = std::clamp(s[0] * 0.5 + s[2] * 1.0, -0.4, 0.4);
    const double hover_targ = 0.55 * std::abs(s[0]) + lift_;
    double angle_todo = (angle_targ - s[4]) * 0.5 - s[5] * 1.0;
    double hover_todo = (hover_targ - s[1]) * 0.5 - s[3] * 0.5;
    if (s[6] != 0 || s[7] != 0) {
      angle_todo = 0;
      hover_todo = -s[3] * 0.5;
    }
    if (continuous_) {
      throttle_[0] =
          static_cast<float>(std::clamp(hover_todo * 20 - 1, -1.0, 1.0));
      throttle_[1] =
          static_cast<float>(std::clamp(-angle_todo * 20, -1.0, 1.0));
      return Action::Continuous(throttle_.data(), 2);
    }
    if (hover_todo > std::abs(angle_todo) && hover_todo > 0.05) {
      return Action::Discrete(2);
    }
    if (angle_todo < -0.05) return Action::Discrete(3);
    if (angle_todo > 0.05) return Action::Discrete(1);
    return Action::Discrete(0);
  }

 private:
  bool continuous_;
  double lift_;
  std::array<float, 2> throttle_{};
};

// Gymnasium's scripted BipedalWalker policy (bipedal_walker.py,
// BipedalWalkerHeuristics): stand on one leg, swing the other forward, put
// it down, push off, switch legs; PD control of the joints with the hull
// kept level. A target of 0 (or none) leaves its joint's term out, as
// Python's `if hip_targ[0]:` does.
class WalkerHeuristic {
 public:
  std::array<float, 4> Act(FloatView s) {
    constexpr double kSpeed = 0.29;
    constexpr double kSupportKneeAngle = 0.1;
    const int moving = 4 + 5 * moving_leg_;
    const int supporting = 4 + 5 * supporting_leg_;
    std::array<double, 2> hip_targ = {0, 0};  // 0: none.
    std::array<double, 2> knee_targ = {0, 0};
    if (state_ == kStayOnOneLeg) {
      hip_targ[moving_leg_] = 1.1;
      knee_targ[moving_leg_] = -0.6;
      supporting_knee_angle_ += 0.03;
      if (s[2] > kSpeed) supporting_knee_angle_ += 0.03;
      supporting_knee_angle_ =
          std::min(supporting_knee_angle_, kSupportKneeAngle);
      knee_targ[supporting_leg_] = supporting_knee_angle_;
      if (s[supporting + 0] < 0.10) state_ = kPutOtherDown;
    }
    if (state_ == kPutOtherDown) {
      hip_targ[moving_leg_] = 0.1;
      knee_targ[moving_leg_] = kSupportKneeAngle;
      knee_targ[supporting_leg_] = supporting_knee_angle_;
      if (s[moving + 4] != 0) {
        state_ = kPushOff;
        supporting_knee_angle_ =
            std::min<double>(s[moving + 2], kSupportKneeAngle);
      }
    }
    if (state_ == kPushOff) {
      knee_targ[moving_leg_] = supporting_knee_angle_;
      knee_targ[supporting_leg_] = 1.0;
      if (s[supporting + 2] > 0.88 || s[2] > 1.2 * kSpeed) {
        state_ = kStayOnOneLeg;
        moving_leg_ = 1 - moving_leg_;
        supporting_leg_ = 1 - moving_leg_;
      }
    }
    std::array<double, 4> todo = {0, 0, 0, 0};  // Hip, knee, hip, knee.
    for (int leg = 0; leg < 2; ++leg) {
      const int base = 4 + 5 * leg;
      if (hip_targ[leg] != 0) {
        todo[2 * leg] = 0.9 * (hip_targ[leg] - s[base]) - 0.25 * s[base + 1];
      }
      if (knee_targ[leg] != 0) {
        todo[2 * leg + 1] =
            4.0 * (knee_targ[leg] - s[base + 2]) - 0.25 * s[base + 3];
      }
      todo[2 * leg] -= 0.9 * (0 - s[0]) - 1.5 * s[1];  // Keep the head level.
      todo[2 * leg + 1] -= 15.0 * s[3];  // Damp vertical oscillations.
    }
    std::array<float, 4> action;
    for (int i = 0; i < 4; ++i) {
      action[i] = static_cast<float>(std::clamp(0.5 * todo[i], -1.0, 1.0));
    }
    return action;
  }

 private:
  enum State { kStayOnOneLeg, kPutOtherDown, kPushOff };
  State state_ = kStayOnOneLeg;
  int moving_leg_ = 0;
  int supporting_leg_ = 1;
  double supporting_knee_angle_ = 0.1;
};

// Not Gymnasium's: the walker standing still, legs apart (hips at +-0.4) and
// knees straight, so that an episode runs into its time limit.
std::array<float, 4> Stand(FloatView s) {
  std::array<float, 4> action;
  for (int leg = 0; leg < 2; ++leg) {
    const int base = 4 + 5 * leg;
    const double hip = leg == 0 ? 0.4 : -0.4;
    action[2 * leg] =
        static_cast<float>(std::clamp(3 * (hip - s[base]), -1.0, 1.0));
    action[2 * leg + 1] =
        static_cast<float>(std::clamp(3 * (0.9 - s[base + 2]), -1.0, 1.0));
  }
  return action;
}

// Runs an episode from Reset(seed), `policy` turning each observation into
// an action, until it ends or `limit` steps; returns the steps taken, with
// the last step's result and the sum of the rewards.
template <typename Policy>
int RunEpisode(Env& env, uint64_t seed, Policy policy, int limit,
               StepResult* last, double* episode_return) {
  FloatView obs = env.Reset(seed);
  *episode_return = 0;
  int steps = 0;
  do {
    *last = env.Step(policy(obs));
    obs = last->observation;
    *episode_return += last->reward;
    ++steps;
  } while (!last->Done() && steps < limit);
  return steps;
}

TEST(Box2DTest, SpacesAreGymnasiums) {
  for (const bool continuous : {false, true}) {
    LunarLander env(continuous);
    SCOPED_TRACE(env.Name());
    const Space& obs = env.ObservationSpace();
    ASSERT_EQ(obs.shape, std::vector<int64_t>{8});
    // LunarLander-v2's bounds (v3 widened them).
    EXPECT_EQ(obs.low, (std::vector<float>{-1.5F, -1.5F, -5.0F, -5.0F, -kPi,
                                           -5.0F, 0.0F, 0.0F}));
    EXPECT_EQ(obs.high, (std::vector<float>{1.5F, 1.5F, 5.0F, 5.0F, kPi, 5.0F,
                                            1.0F, 1.0F}));
    const Space& act = env.ActionSpace();
    if (continuous) {
      ASSERT_FALSE(act.IsDiscrete());
      EXPECT_EQ(act.shape, std::vector<int64_t>{2});
      EXPECT_EQ(act.low, std::vector<float>(2, -1.0F));
      EXPECT_EQ(act.high, std::vector<float>(2, 1.0F));
    } else {
      ASSERT_TRUE(act.IsDiscrete());
      EXPECT_EQ(act.n, 4);
    }
    EXPECT_EQ(env.Reset(0).size, 8);
  }

  BipedalWalker walker;
  const Space& obs = walker.ObservationSpace();
  ASSERT_EQ(obs.shape, std::vector<int64_t>{24});
  std::vector<float> high = {kPi, 5, 5,   5, kPi, 5, kPi,
                             5,   5, kPi, 5, kPi, 5, 5};
  std::vector<float> low = {-kPi, -5, -5,   -5, -kPi, -5, -kPi,
                            -5,   0,  -kPi, -5, -kPi, -5, 0};
  low.resize(24, -1.0F);  // The lidar.
  high.resize(24, 1.0F);
  EXPECT_EQ(obs.low, low);
  EXPECT_EQ(obs.high, high);
  const Space& act = walker.ActionSpace();
  ASSERT_FALSE(act.IsDiscrete());
  EXPECT_EQ(act.shape, std::vector<int64_t>{4});
  EXPECT_EQ(act.low, std::vector<float>(4, -1.0F));
  EXPECT_EQ(act.high, std::vector<float>(4, 1.0F));
  EXPECT_EQ(walker.Reset(0).size, 24);
}

// The registered limits, reached by policies that survive them: 1000 steps
// for the landers (hovering), 2000 for the hardcore walker (standing); 1600
// for the walker in WalkerHeuristicWalksTheCourse.
TEST(Box2DTest, EpisodesAreCutAtGymnasiumsLimits) {
  for (const std::string name :
       {"LunarLander-v2", "LunarLanderContinuous-v2"}) {
    SCOPED_TRACE(name);
    auto env = MakeEnv(name);
    LanderHeuristic hover(name == "LunarLanderContinuous-v2", /*lift=*/0.5);
    StepResult last;
    double total = 0;
    const int steps = RunEpisode(
        *env, 0, [&](FloatView s) { return hover.Act(s); }, 5000, &last,
        &total);
    EXPECT_EQ(steps, 1000);
    EXPECT_TRUE(last.truncated);
    EXPECT_FALSE(last.terminated);
  }
  auto env = MakeEnv("BipedalWalkerHardcore-v3");
  EXPECT_EQ(env->Parameter("hardcore"), 1.0);
  std::array<float, 4> action{};
  StepResult last;
  double total = 0;
  const int steps = RunEpisode(
      *env, 0,
      [&](FloatView s) {
        action = Stand(s);
        return Action::Continuous(action.data(), 4);
      },
      5000, &last, &total);
  EXPECT_EQ(steps, 2000);
  EXPECT_TRUE(last.truncated);
  EXPECT_FALSE(last.terminated);
}

// Gymnasium's heuristic lands on the pad and comes to rest (+100) on the
// seeds below (both legs down on each; with one leg over a terrain vertex,
// Gymnasium's contact flags can read 0 at rest).
TEST(Box2DTest, GymnasiumsHeuristicLandsTheLander) {
  for (const bool continuous : {false, true}) {
    LunarLander env(continuous);
    SCOPED_TRACE(env.Name());
    double sum = 0;
    const std::vector<uint64_t> seeds = {3, 4, 6, 7, 9};
    for (const uint64_t seed : seeds) {
      SCOPED_TRACE("seed " + std::to_string(seed));
      LanderHeuristic heuristic(continuous);
      StepResult last;
      double total = 0;
      RunEpisode(
          env, seed, [&](FloatView s) { return heuristic.Act(s); }, 1000, &last,
          &total);
      sum += total;
      ASSERT_TRUE(last.terminated);
      EXPECT_EQ(last.reward, 100.0);
      EXPECT_FALSE(env.LanderAwake());
      EXPECT_FALSE(env.game_over());
      EXPECT_TRUE(env.LegContact(0) && env.LegContact(1));
      EXPECT_EQ(last.observation[6], 1.0F);
      EXPECT_EQ(last.observation[7], 1.0F);
      const double x = env.LanderPosition()[0];
      EXPECT_GT(x, env.helipad_x1());
      EXPECT_LT(x, env.helipad_x2());
      EXPECT_GT(total, 100.0);
    }
    EXPECT_GT(sum / seeds.size(), 200.0);
  }
}

TEST(Box2DTest, CrashingOrLeavingTheScreenCostsHundred) {
  LunarLander env(false);
  // Engines off: the hull hits the ground.
  env.Reset(0);
  StepResult r;
  int steps = 0;
  do {
    r = env.Step(Action::Discrete(0));
    ++steps;
    if (!r.terminated) {
      ASSERT_GT(r.reward, -100.0) << "step " << steps;
    }
  } while (!r.terminated && steps < 1000);
  ASSERT_TRUE(r.terminated);
  EXPECT_LT(steps, 200);
  EXPECT_TRUE(env.game_over());
  EXPECT_EQ(r.reward, -100.0);  // Gymnasium's reward = -100, shaping dropped.

  // Tilted by the left engine, then the main engine flies it off the left
  // edge, above the ground.
  env.Reset(0);
  steps = 0;
  do {
    r = env.Step(Action::Discrete(steps < 10 ? 1 : 2));
    ++steps;
  } while (!r.terminated && steps < 1000);
  ASSERT_TRUE(r.terminated);
  EXPECT_FALSE(env.game_over());
  EXPECT_LE(r.observation[0], -1.0F);
  EXPECT_GT(r.observation[1], 0.0F);
  EXPECT_EQ(r.reward, -100.0);
}

// Gymnasium's wind: a force and torque while no leg touches the ground, from
// two extra draws at reset. With the engines off (the draws then change
// nothing else), no wind power and no turbulence is no wind at all.
TEST(Box2DTest, WindPushesTheLanderAndIsOffAtZeroPower) {
  auto trajectory = [](double enable, double wind, double turbulence,
                       int64_t action) {
    LunarLander env(false);
    env.SetParameter("enable_wind", enable);
    env.SetParameter("wind_power", wind);
    env.SetParameter("turbulence_power", turbulence);
    FloatView obs = env.Reset(3);
    std::vector<float> out(obs.data, obs.data + obs.size);
    for (int t = 0; t < 40; ++t) {
      const StepResult r = env.Step(Action::Discrete(action));
      out.insert(out.end(), r.observation.data,
                 r.observation.data + r.observation.size);
      out.push_back(static_cast<float>(r.reward));
      if (r.terminated) break;
    }
    return out;
  };
  const std::vector<float> calm = trajectory(0, 15, 1.5, 0);
  EXPECT_NE(trajectory(1, 15, 1.5, 0), calm);
  EXPECT_NE(trajectory(1, 15, 0, 0), calm);
  EXPECT_NE(trajectory(1, 0, 1.5, 0), calm);
  EXPECT_EQ(trajectory(1, 0, 0, 0), calm);
  // The parameters count only with enable_wind.
  EXPECT_EQ(trajectory(0, 20, 2, 0), calm);
}

TEST(Box2DTest, WalkerHeuristicWalksTheCourse) {
  // BipedalWalker-v3 with its time limit: the heuristic walks seed 0's
  // course for all 1600 steps, nearly to the far grass.
  auto env = MakeEnv("BipedalWalker-v3");
  auto& walker =
      dynamic_cast<BipedalWalker&>(dynamic_cast<Wrapper&>(*env).inner());
  WalkerHeuristic heuristic;
  std::array<float, 4> action{};  // As Gymnasium's demo: zeros first.
  env->Reset(0);
  const double start = walker.HullPosition().x;
  StepResult r;
  double total = 0;
  int steps = 0;
  do {
    r = env->Step(Action::Continuous(action.data(), 4));
    total += r.reward;
    ++steps;
    action = heuristic.Act(r.observation);
    if (steps == 300) {
      EXPECT_GT(walker.HullPosition().x, start + 8);
      EXPECT_GT(total, 20.0);
    }
  } while (!r.Done());
  EXPECT_EQ(steps, 1600);
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.terminated);
  EXPECT_FALSE(walker.game_over());
  EXPECT_GT(walker.HullPosition().x, 80.0);
  EXPECT_GT(total, 250.0);
}

TEST(Box2DTest, WalkerFallCostsHundred) {
  BipedalWalker env;
  Rng random(99);
  std::array<float, 4> action{};
  StepResult last;
  double total = 0;
  const int steps = RunEpisode(
      env, 0,
      [&](FloatView) {
        for (float& a : action) a = static_cast<float>(random.Uniform(-1, 1));
        return Action::Continuous(action.data(), 4);
      },
      1600, &last, &total);
  EXPECT_LT(steps, 200);
  ASSERT_TRUE(last.terminated);
  EXPECT_TRUE(env.game_over());
  EXPECT_EQ(last.reward, -100.0);
}

double LargestStep(const std::vector<double>& y) {
  double largest = 0;
  for (size_t i = 1; i < y.size(); ++i) {
    largest = std::max(largest, std::abs(y[i] - y[i - 1]));
  }
  return largest;
}

TEST(Box2DTest, HardcoreTerrainHasObstaclesFromTheNextReset) {
  const double pit_depth = 4 * BipedalWalker::kTerrainStep;
  for (const uint64_t seed : {0, 1, 2}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    BipedalWalker normal(false);
    BipedalWalker hard(true);
    normal.Reset(seed);
    hard.Reset(seed);
    EXPECT_FALSE(normal.hardcore());
    EXPECT_TRUE(hard.hardcore());
    const std::vector<double>& y = normal.terrain_y();
    const std::vector<double>& hy = hard.terrain_y();
    ASSERT_EQ(y.size(), static_cast<size_t>(BipedalWalker::kTerrainLength));
    ASSERT_EQ(hy.size(), y.size());
    EXPECT_EQ(normal.terrain_x(), hard.terrain_x());
    // The same start pad, then other terrain.
    const size_t pad = BipedalWalker::kTerrainStartpad;
    EXPECT_EQ(std::vector<double>(y.begin(), y.begin() + pad),
              std::vector<double>(hy.begin(), hy.begin() + pad));
    EXPECT_NE(y, hy);
    // Grass rolls gently; a pit drops its four steps at once.
    EXPECT_LT(LargestStep(y), 0.2);
    EXPECT_NEAR(LargestStep(hy), pit_depth, 1e-9);
  }

  BipedalWalker env(false);
  env.Reset(0);
  const std::vector<double> normal = env.terrain_y();
  env.SetParameter("hardcore", 1);
  EXPECT_FALSE(env.hardcore());  // Not mid-episode.
  EXPECT_EQ(env.terrain_y(), normal);
  env.Reset(0);
  EXPECT_TRUE(env.hardcore());
  BipedalWalker hard(true);
  hard.Reset(0);
  EXPECT_EQ(env.terrain_y(), hard.terrain_y());
  env.SetParameter("hardcore", 0);
  env.Reset(0);
  EXPECT_EQ(env.terrain_y(), normal);
}

// Counts of each palette colour in the picture.
std::vector<int> ColorCounts(const Picture& picture) {
  std::vector<int> counts(static_cast<size_t>(Color::kCount), 0);
  for (const uint8_t p : picture.pixels()) ++counts[p];
  return counts;
}
int CountOf(const std::vector<int>& counts, Color color) {
  return counts[static_cast<size_t>(color)];
}

TEST(Box2DTest, RenderDrawsGymnasiumsPicture) {
  for (const std::string name :
       {"LunarLander-v2", "LunarLanderContinuous-v2", "BipedalWalker-v3",
        "BipedalWalkerHardcore-v3"}) {
    SCOPED_TRACE(name);
    auto env = MakeEnv(name);
    const bool lander = name.rfind("LunarLander", 0) == 0;
    FloatView obs = env->Reset(1);
    if (!lander) {
      // The legs start one over the other; standing apart, both show.
      for (int t = 0; t < 30; ++t) {
        const std::array<float, 4> action = Stand(obs);
        obs = env->Step(Action::Continuous(action.data(), 4)).observation;
      }
    }
    Picture picture;
    ASSERT_TRUE(env->Render(picture));
    EXPECT_EQ(picture.width(), 600);
    EXPECT_EQ(picture.height(), 400);
    EXPECT_EQ(picture.fps, 50);
    const std::vector<int> counts = ColorCounts(picture);
    if (lander) {
      // Black sky at the top, the white ground at the bottom, the lander
      // (starting at the top centre) and the pad's flags.
      EXPECT_EQ(picture.At(20, 0), Color::kBlack);
      EXPECT_EQ(picture.At(300, 399), Color::kWhite);
      EXPECT_GT(CountOf(counts, Color::kAxle), 100);
      EXPECT_GT(CountOf(counts, Color::kJoint), 20);  // The flags.
    } else {
      EXPECT_EQ(picture.At(20, 0), Color::kSky);
      EXPECT_EQ(picture.At(300, 399), Color::kGround);
      EXPECT_GT(CountOf(counts, Color::kHull), 100);
      EXPECT_GT(CountOf(counts, Color::kLegNear), 20);
      EXPECT_GT(CountOf(counts, Color::kLegFar), 20);
    }
  }
}

}  // namespace
}  // namespace box2d_test
}  // namespace asyncrl
