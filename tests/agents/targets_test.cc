// Targets computed from a rollout against hand-computed values: n-step
// returns through terminal rows, time-limit bootstraps in the middle of a
// rollout and rows bootstrapped at its end, with two interleaved
// environments, and the edge cases gamma = 0 and gamma = 1.
#include "asyncrl/agents/targets.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace asyncrl {
namespace {

constexpr int64_t kC = Rollout::kContinue;
constexpr int64_t kT = Rollout::kTerminal;

class NStepReturnsTest : public ::testing::Test {
 protected:
  // Two environments, three steps (row = step * 2 + env):
  //   env 0: row 0 continues into row 2, which is terminal; a new episode
  //          starts at row 4, bootstrapped at the rollout's end (b1 = -2);
  //   env 1: row 1 is cut by a time limit (b0 = 10); a new episode runs
  //          through row 3 into row 5, bootstrapped at the end (b2 = 4).
  static Rollout TwoEnvironments() {
    Rollout r;
    r.batch = 2;
    r.steps = 3;
    r.rewards = {1.0f, 2.0f, 3.0f, -1.0f, 0.5f, 2.0f};
    r.next = {kC, 0, kT, kC, 1, 2};
    r.num_bootstrap = 3;
    return r;
  }
  const std::vector<float> bootstrap_values_ = {10.0f, -2.0f, 4.0f};
  FloatView Bootstrap() const {
    return {bootstrap_values_.data(),
            static_cast<int64_t>(bootstrap_values_.size())};
  }
};

TEST_F(NStepReturnsTest, FollowsTerminalsAndBootstrapsOfEachEnvironment) {
  const std::vector<float> r =
      NStepReturns(TwoEnvironments(), Bootstrap(), 0.5);
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[4], 0.5f + 0.5f * -2.0f);  // Rollout end: V(b1).
  EXPECT_EQ(r[2], 3.0f);                 // Terminal: nothing after.
  EXPECT_EQ(r[0], 1.0f + 0.5f * 3.0f);   // Continues into row 2.
  EXPECT_EQ(r[5], 2.0f + 0.5f * 4.0f);   // Rollout end: V(b2).
  EXPECT_EQ(r[3], -1.0f + 0.5f * 4.0f);  // Continues into row 5.
  EXPECT_EQ(r[1], 2.0f + 0.5f * 10.0f);  // Time limit: V(b0), not row 3.
}

TEST_F(NStepReturnsTest, GammaZeroGivesTheRewards) {
  const Rollout rollout = TwoEnvironments();
  EXPECT_EQ(NStepReturns(rollout, Bootstrap(), 0.0), rollout.rewards);
}

TEST_F(NStepReturnsTest, GammaOneSumsTheRewardsAndBootstrapValue) {
  const std::vector<float> r =
      NStepReturns(TwoEnvironments(), Bootstrap(), 1.0);
  const std::vector<float> expected = {1.0f + 3.0f, 2.0f + 10.0f,
                                       3.0f,        -1.0f + 2.0f + 4.0f,
                                       0.5f - 2.0f, 2.0f + 4.0f};
  EXPECT_EQ(r, expected);
}

// A long rollout sums in double and rounds once per row, as a double
// reference does; summing in float would drift by several ulps.
TEST_F(NStepReturnsTest, AccumulatesInDouble) {
  Rollout rollout;
  rollout.batch = 1;
  rollout.steps = 2000;
  for (int64_t i = 0; i < rollout.steps; ++i) {
    rollout.rewards.push_back(0.1f + 0.001f * static_cast<float>(i % 7));
    rollout.next.push_back(kC);
  }
  rollout.next.back() = 0;
  rollout.num_bootstrap = 1;
  const float boot = 3.3f;
  const std::vector<float> r = NStepReturns(rollout, {&boot, 1}, 0.999);
  double expected = boot;
  for (int64_t i = rollout.steps - 1; i >= 0; --i) {
    expected = rollout.rewards[i] + 0.999 * expected;
    ASSERT_EQ(r[i], static_cast<float>(expected)) << "row " << i;
  }
}

TEST_F(NStepReturnsTest, RefusesARolloutWhoseLastStepLinksNowhere) {
  Rollout rollout = TwoEnvironments();
  rollout.next[5] = kC;
  rollout.num_bootstrap = 2;
  EXPECT_THROW(NStepReturns(rollout, {bootstrap_values_.data(), 2}, 0.5),
               std::logic_error);
  // The wrong number of bootstrap values.
  EXPECT_THROW(
      NStepReturns(TwoEnvironments(), {bootstrap_values_.data(), 2}, 0.5),
      std::logic_error);
}

}  // namespace
}  // namespace asyncrl
