// ScaleObservations: observations mapped from their bounds to [-1, 1], a
// legal-action mask passed through, unbounded spaces refused by name.
#include "asyncrl/envs/wrappers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "asyncrl/envs/registry.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace wrappers_test {
namespace {

// An environment that returns the observation a test sets.
class SetObservationEnv : public Env {
 public:
  explicit SetObservationEnv(Space space)
      : obs_(space.FlatSize(), 0.0f), space_(std::move(space)) {
    DeclareParameter("knob", 0, 10, "a parameter to set through wrappers",
                     &knob_);
  }
  std::string Name() const override { return "SetObservation"; }
  const Space& ObservationSpace() const override { return space_; }
  const Space& ActionSpace() const override { return actions_; }
  std::vector<float> obs_;
  double knob_ = 1;

 protected:
  FloatView DoReset(std::optional<uint64_t>) override {
    return FloatView{obs_.data(), static_cast<int64_t>(obs_.size())};
  }
  StepResult DoStep(const Action&) override {
    StepResult r;
    r.observation = FloatView{obs_.data(), static_cast<int64_t>(obs_.size())};
    return r;
  }

 private:
  Space space_;
  Space actions_ = Space::Discrete(2);
};

TEST(ScaleObservationsTest, BoundsMapToMinusOneAndOneAndTheSpaceSaysSo) {
  auto owned = std::make_unique<SetObservationEnv>(
      Space::Box({4}, {-2.0f, 0.0f, 5.0f, -0.07f}, {6.0f, 1.0f, 5.0f, 0.07f}));
  SetObservationEnv& raw = *owned;
  ScaleObservations env(std::move(owned));
  const Space& space = env.ObservationSpace();
  EXPECT_EQ(space.shape, std::vector<int64_t>{4});
  EXPECT_EQ(space.low, std::vector<float>(4, -1.0f));
  EXPECT_EQ(space.high, std::vector<float>(4, 1.0f));

  raw.obs_ = {-2.0f, 0.0f, 5.0f, -0.07f};  // Every low (and low == high).
  FloatView obs = env.Reset(0);
  ASSERT_EQ(obs.size, 4);
  EXPECT_EQ(obs[0], -1.0f);
  EXPECT_EQ(obs[1], -1.0f);
  EXPECT_EQ(obs[2], 0.0f);  // A constant element carries nothing.
  EXPECT_NEAR(obs[3], -1.0f, 1e-6);
  raw.obs_ = {6.0f, 1.0f, 5.0f, 0.07f};  // Every high.
  obs = env.Step(Action::Discrete(0)).observation;
  EXPECT_EQ(obs[0], 1.0f);
  EXPECT_EQ(obs[1], 1.0f);
  EXPECT_EQ(obs[2], 0.0f);
  EXPECT_NEAR(obs[3], 1.0f, 1e-6);
  // In between (and beyond the bounds) by the same line, not clipped.
  raw.obs_ = {2.0f, 0.25f, 5.0f, 0.035f};
  obs = env.Step(Action::Discrete(0)).observation;
  EXPECT_EQ(obs[0], 0.0f);
  EXPECT_EQ(obs[1], -0.5f);
  EXPECT_NEAR(obs[3], 0.5f, 1e-6);
  raw.obs_ = {10.0f, -1.0f, 5.0f, 0.0f};
  obs = env.Step(Action::Discrete(0)).observation;
  EXPECT_EQ(obs[0], 2.0f);
  EXPECT_EQ(obs[1], -3.0f);
  // The raw observation is left as the environment wrote it.
  EXPECT_EQ(raw.obs_[0], 10.0f);
}

TEST(ScaleObservationsTest, MountainCarMatchesTheUnscaledTwinStepForStep) {
  auto env = MakeEnv("MountainCar-v0");
  ScaleObservations scaled(MakeEnv("MountainCar-v0"));
  const Space& bounds = env->ObservationSpace();
  FloatView a = env->Reset(7);
  FloatView b = scaled.Reset(7);
  for (int t = 0; t < 200; ++t) {
    ASSERT_EQ(a.size, 2);
    ASSERT_EQ(b.size, 2);
    for (int i = 0; i < 2; ++i) {
      const double low = bounds.low[i];
      const double high = bounds.high[i];
      const double want = (a[i] - low) / (high - low) * 2.0 - 1.0;
      // One float rounding of a value in [-1, 1] (and of the factors).
      EXPECT_NEAR(b[i], want, 4 * std::numeric_limits<float>::epsilon())
          << "step " << t << " element " << i;
      EXPECT_GE(b[i], -1.0f);
      EXPECT_LE(b[i], 1.0f);
    }
    const Action action = Action::Discrete(t / 20 % 2 == 0 ? 0 : 2);
    const StepResult ra = env->Step(action);
    const StepResult rb = scaled.Step(action);
    EXPECT_EQ(ra.reward, rb.reward);
    EXPECT_EQ(ra.terminated, rb.terminated);
    ASSERT_EQ(ra.truncated, rb.truncated);
    if (ra.Done()) break;
    a = ra.observation;
    b = rb.observation;
  }
}

TEST(ScaleObservationsTest, TheLegalActionMaskPassesThrough) {
  Space space = Space::Box({5}, 0.0f, 1.0f);
  space.action_mask = 2;
  auto owned = std::make_unique<SetObservationEnv>(space);
  SetObservationEnv& raw = *owned;
  ScaleObservations env(std::move(owned));
  EXPECT_EQ(env.ObservationSpace().action_mask, 2);
  EXPECT_EQ(env.ObservationSpace().low,
            (std::vector<float>{-1.0f, -1.0f, -1.0f, 0.0f, 0.0f}));
  EXPECT_EQ(env.ObservationSpace().high, std::vector<float>(5, 1.0f));
  raw.obs_ = {0.0f, 1.0f, 0.5f, 1.0f, 0.0f};
  const FloatView obs = env.Reset(0);
  EXPECT_EQ(std::vector<float>(obs.data, obs.data + obs.size),
            (std::vector<float>{-1.0f, 1.0f, 0.0f, 1.0f, 0.0f}));

  // A game as registered: planes from {0, 1} to {-1, 1}, the mask as it is.
  auto game = MakeEnv("TicTacToe");
  ScaleObservations scaled_game(MakeEnv("TicTacToe"));
  const FloatView g = game->Reset(3);
  const FloatView s = scaled_game.Reset(3);
  const int64_t mask = game->ObservationSpace().action_mask;
  ASSERT_EQ(mask, 9);
  ASSERT_EQ(g.size, s.size);
  for (int64_t i = 0; i < g.size; ++i) {
    EXPECT_EQ(s[i], i < g.size - mask ? 2 * g[i] - 1 : g[i]) << i;
  }
}

TEST(ScaleObservationsTest, ParametersAreSetThroughTheWrapper) {
  auto owned = std::make_unique<SetObservationEnv>(Space::Box({1}, 0.0f, 1.0f));
  SetObservationEnv& raw = *owned;
  ScaleObservations env(std::move(owned));
  env.SetParameter("knob", 4);
  env.Reset(0);
  EXPECT_EQ(raw.knob_, 4);
  ScaleObservations mountain(MakeEnv("MountainCar-v0"));
  mountain.SetParameter("goal_position", -0.2);
  mountain.Reset(0);
  EXPECT_EQ(mountain.Parameter("goal_position"), -0.2);
}

std::string ErrorOf(std::unique_ptr<Env> env) {
  try {
    ScaleObservations scaled(std::move(env));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(ScaleObservationsTest, UnboundedOrDiscreteSpacesAreRefusedByName) {
  // CartPole's velocities are bounded by float's largest value: unbounded.
  EXPECT_EQ(ErrorOf(MakeEnv("CartPole-v1")),
            "ScaleObservations: CartPole's observation element 1 has the "
            "bounds [-3.40282e+38, 3.40282e+38], not finite ones");
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(ErrorOf(std::make_unique<SetObservationEnv>(
                Space::Box({3}, {0.0f, 0.0f, -inf}, {1.0f, 1.0f, 0.0f}))),
            "ScaleObservations: SetObservation's observation element 2 has "
            "the bounds [-inf, 0], not finite ones");
  EXPECT_EQ(ErrorOf(std::make_unique<SetObservationEnv>(Space::Discrete(4))),
            "ScaleObservations: SetObservation's observation space is "
            "Discrete(4), not a Box with finite bounds");
}

}  // namespace
}  // namespace wrappers_test
}  // namespace asyncrl
