// Targets computed from a rollout against hand-computed values: n-step
// returns through terminal rows, time-limit bootstraps in the middle of a
// rollout and rows bootstrapped at its end, with two interleaved
// environments, and the edge cases gamma = 0 and gamma = 1; GAE/TD(lambda),
// V-trace and UPGO by hand, against the papers' closed forms on random
// rollouts of several environments (tests/agents/reference_targets.h), and
// their properties (V-trace on-policy is TD(lambda), lambda = 1 is n-step,
// UPGO is never below TD(lambda)).
#include "asyncrl/agents/targets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "asyncrl/misc/validate.h"
#include "reference_targets.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace targets_test {
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

// One environment, three steps: V = (1, 2, 3), rewards (1, 0, 2), the
// last row bootstrapped with V = 4; gamma = lambda = 0.5. Then
// V' = (2, 3, 4) and d = r + gamma V' - V = (1, -0.5, 1).
class LambdaTargetsTest : public ::testing::Test {
 protected:
  LambdaTargetsTest() {
    rollout_.batch = 1;
    rollout_.steps = 3;
    rollout_.rewards = {1.0f, 0.0f, 2.0f};
    rollout_.next = {kC, kC, 0};
    rollout_.num_bootstrap = 1;
    params_.gamma = 0.5;
    params_.lambda = 0.5;
  }
  TargetInputs Inputs(const std::vector<float>* log_ratios = nullptr) const {
    return {rollout_,
            {values_.data(), 3},
            {&bootstrap_, 1},
            log_ratios == nullptr
                ? FloatView{}
                : FloatView{log_ratios->data(),
                            static_cast<int64_t>(log_ratios->size())}};
  }
  Rollout rollout_;
  std::vector<float> values_ = {1.0f, 2.0f, 3.0f};
  float bootstrap_ = 4.0f;
  TargetParams params_;
};

TEST_F(LambdaTargetsTest, TdLambdaAndGaeByHand) {
  // G2 = 2 + 0.5 * 4 = 4; G1 = 0 + 0.5 (0.5 * 3 + 0.5 * 4) = 1.75;
  // G0 = 1 + 0.5 (0.5 * 2 + 0.5 * 1.75) = 1.9375.
  const std::vector<double> g = TdLambdaReturns(Inputs(), 0.5, 0.5);
  EXPECT_EQ(g, (std::vector<double>{1.9375, 1.75, 4.0}));
  // GAE: A = sum (gamma lambda)^k d: A2 = 1, A1 = -0.5 + 0.25 = -0.25,
  // A0 = 1 + 0.25 * -0.25 = 0.9375: G - V.
  const Targets t = ComputeTargets(PolicyTarget::kGae, ValueTarget::kTdLambda,
                                   Inputs(), params_);
  EXPECT_EQ(t.advantages, (std::vector<float>{0.9375f, -0.25f, 1.0f}));
  EXPECT_EQ(t.value_targets, (std::vector<float>{1.9375f, 1.75f, 4.0f}));
  EXPECT_EQ(t.mean_ratio, 1.0);
  EXPECT_EQ(t.clipped_fraction, 0.0);
}

TEST_F(LambdaTargetsTest, UpgoFollowsTheReturnOnlyWhereItBeatsTheValue) {
  // U2 = 2 + 0.5 * 4 = 4; U1 = 0.5 max(3, 0.5 * 3 + 0.5 * 4) = 1.75;
  // U0 = 1 + 0.5 max(2, 0.5 * 2 + 0.5 * 1.75) = 1 + 0.5 * 2 = 2: at row 0
  // the value beats the return (TD(lambda) gives 1.9375).
  EXPECT_EQ(UpgoReturns(Inputs(), 0.5, 0.5),
            (std::vector<double>{2.0, 1.75, 4.0}));
  const Targets t = ComputeTargets(PolicyTarget::kUpgo, ValueTarget::kTdLambda,
                                   Inputs(), params_);
  EXPECT_EQ(t.advantages, (std::vector<float>{1.0f, -0.25f, 1.0f}));
  EXPECT_EQ(t.value_targets, (std::vector<float>{1.9375f, 1.75f, 4.0f}));
}

TEST_F(LambdaTargetsTest, VtraceWithRatiosByHand) {
  // Ratios (2, 0.5, 1), rho_bar = c_bar = 1: rho = (1, 0.5, 1),
  // c = lambda min(1, ratio) = (0.5, 0.25, 0.5).
  // v2 = 3 + 1 * 1 = 4;
  // v1 = 2 + 0.5 * -0.5 + 0.5 * 0.25 (4 - 3) = 1.875;
  // v0 = 1 + 1 * 1 + 0.5 * 0.5 (1.875 - 2) = 1.96875.
  // Advantages rho (r + gamma v_next - V): row 2: 2 + 0.5 * 4 - 3 = 1;
  // row 1: 0.5 (0 + 0.5 * 4 - 2) = 0; row 0: 1 + 0.5 * 1.875 - 1 = 0.9375.
  const std::vector<float> log_ratios = {std::log(2.0f), std::log(0.5f), 0.0f};
  const VtraceResult v = Vtrace(Inputs(&log_ratios), params_);
  ASSERT_EQ(v.values.size(), 3u);
  EXPECT_NEAR(v.values[0], 1.96875, 1e-7);
  EXPECT_NEAR(v.values[1], 1.875, 1e-7);
  EXPECT_NEAR(v.values[2], 4.0, 1e-7);
  EXPECT_NEAR(v.advantages[0], 0.9375, 1e-7);
  EXPECT_NEAR(v.advantages[1], 0.0, 1e-7);
  EXPECT_NEAR(v.advantages[2], 1.0, 1e-7);
  const Targets t = ComputeTargets(PolicyTarget::kVtrace, ValueTarget::kVtrace,
                                   Inputs(&log_ratios), params_);
  EXPECT_NEAR(t.mean_ratio, 3.5 / 3, 1e-6);
  EXPECT_NEAR(t.clipped_fraction, 1.0 / 3, 1e-12);  // Only the ratio 2.
  // UPGO's advantages are weighted by the truncated ratios too.
  const Targets u = ComputeTargets(PolicyTarget::kUpgo, ValueTarget::kTdLambda,
                                   Inputs(&log_ratios), params_);
  EXPECT_NEAR(u.advantages[0], 1.0, 1e-6);
  EXPECT_NEAR(u.advantages[1], 0.5 * -0.25, 1e-6);
  EXPECT_NEAR(u.advantages[2], 1.0, 1e-6);
}

// Every target stops at a terminal row (nothing after it, V' = 0) and at a
// time limit in the middle of a rollout (V' = the bootstrap value, not the
// next row's value): NStepReturnsTest's two environments with values.
TEST_F(NStepReturnsTest, EveryTargetStopsAtTerminalsAndTimeLimits) {
  const Rollout rollout = TwoEnvironments();
  const std::vector<float> values = {0.5f, 1.0f, 2.0f, -1.0f, 0.0f, 3.0f};
  const TargetInputs in{rollout, {values.data(), 6}, Bootstrap(), {}};
  const double gamma = 0.5;
  const double lambda = 0.7;
  for (const std::vector<double>& g :
       {TdLambdaReturns(in, gamma, lambda), UpgoReturns(in, gamma, lambda),
        Vtrace(in, {gamma, lambda, 1.0, 1.0}).values}) {
    EXPECT_DOUBLE_EQ(g[2], 3.0);               // Terminal: r only.
    EXPECT_DOUBLE_EQ(g[1], 2.0 + 0.5 * 10.0);  // Time limit: r + g V(b0).
    EXPECT_DOUBLE_EQ(g[4], 0.5 + 0.5 * -2.0);  // Rollout end: r + g V(b1).
    EXPECT_DOUBLE_EQ(g[5], 2.0 + 0.5 * 4.0);   // Rollout end: r + g V(b2).
  }
  // Row 0 continues into row 2 (not row 1, another environment).
  const std::vector<double> td = TdLambdaReturns(in, gamma, lambda);
  EXPECT_DOUBLE_EQ(td[0], 1.0 + gamma * ((1 - lambda) * 2.0 + lambda * 3.0));
}

// Random rollouts of K interleaved environments with terminals and time
// limits anywhere, random values and ratios.
struct RandomRollout {
  Rollout rollout;
  std::vector<float> values;
  std::vector<float> bootstrap_values;
  std::vector<float> log_ratios;
  TargetInputs Inputs(bool with_ratios) const {
    return {rollout,
            {values.data(), static_cast<int64_t>(values.size())},
            {bootstrap_values.data(),
             static_cast<int64_t>(bootstrap_values.size())},
            with_ratios ? FloatView{log_ratios.data(),
                                    static_cast<int64_t>(log_ratios.size())}
                        : FloatView{}};
  }
};

RandomRollout MakeRandomRollout(uint64_t seed, int64_t k, int64_t steps) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::uniform_real_distribution<double> p(0.0, 1.0);
  RandomRollout r;
  r.rollout.batch = k;
  r.rollout.steps = steps;
  for (int64_t s = 0; s < steps; ++s) {
    for (int64_t j = 0; j < k; ++j) {
      r.rollout.rewards.push_back(u(rng));
      r.values.push_back(u(rng));
      r.log_ratios.push_back(u(rng) * 0.5f);
      const double x = p(rng);
      int64_t next = kC;
      if (x < 0.15) {
        next = kT;
      } else if (x < 0.3 || s == steps - 1) {
        next = r.rollout.num_bootstrap++;
        r.bootstrap_values.push_back(u(rng));
      }
      r.rollout.next.push_back(next);
    }
  }
  return r;
}

// Environment j's rows as reference sequences (one per rollout: sequences
// are separated by `stops`).
testing::ReferenceSequence EnvironmentRows(const RandomRollout& r, int64_t j,
                                           bool with_ratios,
                                           std::vector<int64_t>* rows) {
  testing::ReferenceSequence seq;
  const int64_t k = r.rollout.batch;
  for (int64_t s = 0; s < r.rollout.steps; ++s) {
    const int64_t i = s * k + j;
    rows->push_back(i);
    const int64_t next = r.rollout.next[i];
    seq.rewards.push_back(r.rollout.rewards[i]);
    seq.values.push_back(r.values[i]);
    seq.stops.push_back(next != kC);
    seq.successors.push_back(next == kC   ? r.values[i + k]
                             : next == kT ? 0.0
                                          : r.bootstrap_values[next]);
    if (with_ratios) seq.ratios.push_back(std::exp(double{r.log_ratios[i]}));
  }
  return seq;
}

TEST(TargetsTest, EveryPairingMatchesTheClosedFormsOnRandomRollouts) {
  const PolicyTarget policies[] = {PolicyTarget::kNStep, PolicyTarget::kGae,
                                   PolicyTarget::kVtrace, PolicyTarget::kUpgo};
  const ValueTarget values[] = {ValueTarget::kNStep, ValueTarget::kTdLambda,
                                ValueTarget::kVtrace};
  const TargetParams settings[] = {{0.99, 0.95, 1.0, 1.0},
                                   {0.9, 0.5, 2.0, 0.5},
                                   {1.0, 1.0, 1.0, 1.0},
                                   {0.8, 0.0, 0.7, 0.7}};
  int checked = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const RandomRollout r = MakeRandomRollout(seed, 3, 12);
    for (const TargetParams& params : settings) {
      for (bool with_ratios : {false, true}) {
        for (PolicyTarget policy : policies) {
          for (ValueTarget value : values) {
            const Targets t =
                ComputeTargets(policy, value, r.Inputs(with_ratios), params);
            for (int64_t j = 0; j < 3; ++j) {
              std::vector<int64_t> rows;
              const testing::ReferenceResult ref = testing::ReferenceTargets(
                  policy, value, EnvironmentRows(r, j, with_ratios, &rows),
                  params);
              for (size_t s = 0; s < rows.size(); ++s) {
                const int64_t i = rows[s];
                // Float results of double sums of O(10) terms.
                const double tol = 2e-6 * (1 + std::abs(ref.advantages[s]) +
                                           std::abs(ref.value_targets[s]));
                ASSERT_NEAR(t.advantages[i], ref.advantages[s], tol)
                    << TargetName(policy) << " seed " << seed << " row " << i;
                ASSERT_NEAR(t.value_targets[i], ref.value_targets[s], tol)
                    << TargetName(value) << " seed " << seed << " row " << i;
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 4 * 2 * 4 * 3 * 36);
}

TEST(TargetsTest, OnPolicyVtraceIsTdLambdaAndLambdaOneIsNStep) {
  for (uint64_t seed = 10; seed < 14; ++seed) {
    const RandomRollout r = MakeRandomRollout(seed, 2, 20);
    const TargetInputs in = r.Inputs(/*with_ratios=*/false);
    // Zero log ratios are the same as none.
    std::vector<float> zeros(r.values.size(), 0.0f);
    const TargetInputs zero_ratios{
        in.rollout,
        in.values,
        in.bootstrap_values,
        {zeros.data(), static_cast<int64_t>(zeros.size())}};
    for (double lambda : {0.0, 0.5, 0.95, 1.0}) {
      const TargetParams params{0.9, lambda, 1.0, 1.0};
      const std::vector<double> td = TdLambdaReturns(in, 0.9, lambda);
      for (const TargetInputs* x : {&in, &zero_ratios}) {
        const VtraceResult v = Vtrace(*x, params);
        for (size_t i = 0; i < td.size(); ++i) {
          ASSERT_NEAR(v.values[i], td[i], 1e-12 * (1 + std::abs(td[i])))
              << "lambda " << lambda << " row " << i;
        }
      }
      // UPGO never falls below TD(lambda), and lambda = 0 makes both the
      // one-step target r + gamma V'.
      const std::vector<double> upgo = UpgoReturns(in, 0.9, lambda);
      for (size_t i = 0; i < td.size(); ++i) {
        ASSERT_GE(upgo[i], td[i] - 1e-12) << "lambda " << lambda;
        if (lambda == 0.0) {
          ASSERT_DOUBLE_EQ(upgo[i], td[i]);
        }
      }
    }
    // lambda = 1: TD(lambda) returns are the n-step returns and GAE's
    // advantages the n-step advantages.
    const std::vector<float> nstep =
        NStepReturns(in.rollout, in.bootstrap_values, 0.9);
    const std::vector<double> td = TdLambdaReturns(in, 0.9, 1.0);
    const Targets gae = ComputeTargets(
        PolicyTarget::kGae, ValueTarget::kTdLambda, in, {0.9, 1.0, 1.0, 1.0});
    for (size_t i = 0; i < td.size(); ++i) {
      ASSERT_NEAR(td[i], nstep[i], 1e-6 * (1 + std::abs(td[i])));
      ASSERT_NEAR(gae.advantages[i], nstep[i] - r.values[i],
                  1e-6 * (1 + std::abs(td[i])));
    }
  }
}

TEST(TargetsTest, NormalizeAdvantagesGivesMeanZeroAndUnitSpread) {
  std::vector<float> a = {1.0f, 2.0f, 3.0f, 6.0f};
  NormalizeAdvantages(&a);
  double mean = 0, var = 0;
  for (float x : a) mean += x / 4.0;
  for (float x : a) var += (x - mean) * (x - mean) / 4.0;
  EXPECT_NEAR(mean, 0.0, 1e-7);
  EXPECT_NEAR(var, 1.0, 1e-6);
  EXPECT_LT(a[0], a[1]);  // Order kept.
  std::vector<float> one = {5.0f};
  NormalizeAdvantages(&one);  // One row has no spread: left as it is.
  EXPECT_EQ(one[0], 5.0f);
}

// Both sides of a game in one rollout (Rollout::turn_passes): a row whose
// successor is the other player's turn bootstraps from its negated value.
// For the targets that are linear in rewards and values (n-step,
// TD(lambda)/GAE, V-trace), that is the plain target of the rollout
// written in one player's point of view: with p_t = +-1 the sign of row
// t's mover relative to its sequence's first, rewards p r, values p V and
// bootstrap values p s b give targets p G (and advantages p A).
TEST(TargetsTest, TurnPassesNegateTheSuccessorsOfLinearTargets) {
  const TargetParams params{0.9, 0.8, 1.0, 1.0};
  int flipped = 0;
  for (uint64_t seed = 20; seed < 24; ++seed) {
    RandomRollout two = MakeRandomRollout(seed, 3, 16);
    std::mt19937_64 rng(seed);
    const int64_t k = 3;
    const int64_t n = two.rollout.rows();
    two.rollout.turn_passes.resize(n);
    for (auto& pass : two.rollout.turn_passes) pass = (rng() % 3) != 0;
    // The same rollout in one point of view per sequence.
    RandomRollout one = two;
    one.rollout.turn_passes.clear();
    std::vector<double> sign(n, 1.0);
    for (int64_t i = 0; i < n; ++i) {
      const double s = two.rollout.SuccessorSign(i);
      const int64_t next = two.rollout.next[i];
      if (next == kC) sign[i + k] = sign[i] * s;
      if (next >= 0) one.bootstrap_values[next] *= sign[i] * s;
      one.rollout.rewards[i] *= sign[i];
      one.values[i] *= sign[i];
      flipped += sign[i] < 0;
    }
    for (bool with_ratios : {false, true}) {
      const struct {
        PolicyTarget policy;
        ValueTarget value;
      } pairs[] = {{PolicyTarget::kNStep, ValueTarget::kNStep},
                   {PolicyTarget::kGae, ValueTarget::kTdLambda},
                   {PolicyTarget::kVtrace, ValueTarget::kVtrace}};
      for (const auto& pair : pairs) {
        const Targets t = ComputeTargets(pair.policy, pair.value,
                                         two.Inputs(with_ratios), params);
        const Targets u = ComputeTargets(pair.policy, pair.value,
                                         one.Inputs(with_ratios), params);
        for (int64_t i = 0; i < n; ++i) {
          const double tol = 2e-6 * (1 + std::abs(u.value_targets[i]) +
                                     std::abs(u.advantages[i]));
          ASSERT_NEAR(t.value_targets[i], sign[i] * u.value_targets[i], tol)
              << TargetName(pair.value) << " seed " << seed << " row " << i;
          ASSERT_NEAR(t.advantages[i], sign[i] * u.advantages[i], tol)
              << TargetName(pair.policy) << " seed " << seed << " row " << i;
        }
      }
    }
  }
  EXPECT_GT(flipped, 20);  // The check saw both points of view.
}

// UPGO's max is the choice of the successor's player, made in its own
// point of view and then negated: by hand, one game of three moves
// (player 0, player 1, player 0 wins), gamma 0.5, lambda 1.
TEST(TargetsTest, UpgoTakesTheMaxOfTheSuccessorsPlayer) {
  Rollout r;
  r.batch = 1;
  r.steps = 3;
  r.rewards = {0.0f, 0.0f, 1.0f};
  r.next = {kC, kC, kT};
  r.turn_passes = {1, 1};  // Row 2 is terminal: its entry may be missing.
  const std::vector<float> v = {0.1f, -0.8f, 0.6f};
  const TargetInputs in{r, {v.data(), 3}, {}, {}};
  const std::vector<double> u = UpgoReturns(in, 0.5, 1.0);
  EXPECT_DOUBLE_EQ(u[2], 1.0);
  // Player 1 at row 1: the better of V(row 2) = 0.6 and U = 1 is player
  // 0's, 1; negated.
  EXPECT_DOUBLE_EQ(u[1], -0.5 * 1.0);
  // Player 0 at row 0: player 1's better of -0.8 and -0.5 is -0.5 (the
  // max of the negated values, 0.8, would give 0.4).
  EXPECT_DOUBLE_EQ(u[0], -0.5 * -0.5);
  // n-step by hand: 1, -0.5, 0.25.
  const std::vector<float> nstep = NStepReturns(r, {}, 0.5);
  EXPECT_FLOAT_EQ(nstep[1], -0.5f);
  EXPECT_FLOAT_EQ(nstep[0], 0.25f);
}

TEST(TargetsTest, NamesParseBackAndUnknownOnesAreRefused) {
  for (PolicyTarget t : {PolicyTarget::kNStep, PolicyTarget::kGae,
                         PolicyTarget::kVtrace, PolicyTarget::kUpgo}) {
    EXPECT_EQ(ParsePolicyTarget(TargetName(t), "policy_target"), t);
  }
  for (ValueTarget t :
       {ValueTarget::kNStep, ValueTarget::kTdLambda, ValueTarget::kVtrace}) {
    EXPECT_EQ(ParseValueTarget(TargetName(t), "value_target"), t);
  }
  try {
    ParsePolicyTarget("td", "policy_target");
    FAIL();
  } catch (const InvalidOption& e) {
    EXPECT_STREQ(e.what(),
                 "policy_target=td is invalid; accepted: nstep, gae, vtrace "
                 "or upgo");
  }
  EXPECT_THROW(ParseValueTarget("gae", "value_target"), InvalidOption);
  EXPECT_EQ(PairedValueTarget(PolicyTarget::kUpgo), ValueTarget::kTdLambda);
  EXPECT_EQ(PairedValueTarget(PolicyTarget::kVtrace), ValueTarget::kVtrace);
}

}  // namespace
}  // namespace targets_test
}  // namespace asyncrl
