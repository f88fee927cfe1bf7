// Running reward normalization: rewards scaled by the running standard
// deviation of each row's discounted return (VecNormalize's formula,
// reference in double), returns reset at episode ends, clipping, workers
// sharing one set of statistics, non-finite rewards, checkpoints.
#include "asyncrl/agents/reward_normalizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "asyncrl/misc/validate.h"
#include "shared_area.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace reward_normalizer_test {
namespace {

using testing::Area;

// VecNormalize's running variance of the returns, in double: starts at
// count 1e-4, mean 0, variance 1; merges each step's returns.
struct ReferenceStats {
  double count = ObservationNormalizer::kInitialCount, mean = 0, var = 1;
  void Merge(const std::vector<double>& xs) {
    double m = 0, v = 0;
    for (double x : xs) m += x;
    m /= xs.size();
    for (double x : xs) v += (x - m) * (x - m);
    v /= xs.size();
    const double n = xs.size(), total = count + n, delta = m - mean;
    mean += delta * n / total;
    var = (var * count + v * n + delta * delta * count * n / total) / total;
    count = total;
  }
  double Scale(double r) const {
    return r / std::sqrt(var + ObservationNormalizer::kEpsilon);
  }
};

// Two rows, gamma 0.5, rewards exact in float: each step's scaled rewards
// follow the reference, and row 1's return starts again after its episode
// ends at step 2.
TEST(RewardNormalizerTest, ScalesByTheRunningDeviationOfDiscountedReturns) {
  RewardNormalizer normalizer(0.5, 100.0);
  ReferenceStats reference;
  std::vector<double> returns = {0, 0};
  const std::vector<std::vector<double>> steps = {{1, 4}, {2, -2}, {0, 8}};
  const std::vector<std::vector<uint8_t>> ended = {{0, 0}, {0, 1}, {0, 0}};
  for (size_t t = 0; t < steps.size(); ++t) {
    for (size_t j = 0; j < 2; ++j) {
      returns[j] = returns[j] * 0.5 + steps[t][j];
    }
    reference.Merge(returns);
    std::vector<double> rewards = steps[t];
    normalizer.MergeAndScale(&rewards, ended[t]);
    for (size_t j = 0; j < 2; ++j) {
      EXPECT_NEAR(rewards[j], reference.Scale(steps[t][j]),
                  1e-12 * std::abs(reference.Scale(steps[t][j])) + 1e-15)
          << "step " << t << " row " << j;
      if (ended[t][j]) returns[j] = 0;
    }
  }
  const MomentStatistics s = normalizer.Statistics();
  EXPECT_NEAR(s.count, 6 + ObservationNormalizer::kInitialCount, 1e-12);
  EXPECT_NEAR(s.var[0], reference.var, 1e-12 * reference.var);
}

// After 1000 returns of +-1, a step with +-1000 (standard deviation of
// all returns then about 32): those scale past the clip, 0.5 does not.
TEST(RewardNormalizerTest, ScaledRewardsAreClipped) {
  RewardNormalizer normalizer(0.0, 2.0);
  std::vector<double> calm(1000);
  for (size_t j = 0; j < calm.size(); ++j) calm[j] = j % 2 ? 1.0 : -1.0;
  normalizer.MergeAndScale(&calm, std::vector<uint8_t>(1000, 1));
  std::vector<double> rewards(1000, 0.5);
  rewards[0] = 1000;
  rewards[1] = -1000;
  normalizer.MergeAndScale(&rewards, std::vector<uint8_t>(1000, 1));
  EXPECT_EQ(rewards[0], 2.0);
  EXPECT_EQ(rewards[1], -2.0);
  EXPECT_GT(rewards[2], 0.0);
  EXPECT_LT(rewards[2], 0.1);
}

// Two workers bound to one area merge into one set of statistics: after
// both have merged, the second scales with what the first merged too.
TEST(RewardNormalizerTest, WorkersShareTheirStatistics) {
  RewardNormalizer a(0.9, 10.0), b(0.9, 10.0);
  Area area(a.SharedBytes());
  a.Bind(area.memory, /*initialize=*/true);
  b.Bind(area.memory, /*initialize=*/false);
  std::vector<double> ra = {3, -1};
  a.MergeAndScale(&ra, {0, 0});
  std::vector<double> rb = {5};
  b.MergeAndScale(&rb, {1});
  ReferenceStats reference;
  reference.Merge({3, -1});
  reference.Merge({5});
  EXPECT_NEAR(rb[0], reference.Scale(5), 1e-12);
  EXPECT_NEAR(a.Statistics().count, b.Statistics().count, 0.0);
  EXPECT_NEAR(b.Statistics().var[0], reference.var, 1e-12 * reference.var);
}

// A non-finite reward is not merged (the statistics stay finite, the batch
// is counted) and its row's return starts again at 0.
TEST(RewardNormalizerTest, ANonFiniteRewardIsNotMerged) {
  RewardNormalizer normalizer(0.5, 10.0);
  std::vector<double> first = {std::numeric_limits<double>::infinity(), 1};
  normalizer.MergeAndScale(&first, {0, 0});
  EXPECT_EQ(normalizer.skipped_batches(), 1);
  const MomentStatistics s = normalizer.Statistics();
  EXPECT_EQ(s.count, ObservationNormalizer::kInitialCount);
  EXPECT_TRUE(std::isfinite(s.var[0]));
  std::vector<double> next = {2, 2};
  normalizer.MergeAndScale(&next, {0, 0});
  EXPECT_EQ(normalizer.skipped_batches(), 1);
  ReferenceStats reference;
  reference.Merge({2, 2 + 0.5 * 1});  // Row 0 restarted; row 1 went on.
  EXPECT_NEAR(normalizer.Statistics().var[0], reference.var,
              1e-12 * reference.var);
}

TEST(RewardNormalizerTest, CheckpointsRoundTrip) {
  RewardNormalizer trained(0.99, 10.0);
  std::vector<double> rewards = {1, 2, 3};
  trained.MergeAndScale(&rewards, {0, 1, 0});
  proto::RunningStatistics saved;
  trained.SaveTo(&saved);
  RewardNormalizer loaded(0.99, 10.0);
  loaded.LoadFrom(saved);
  EXPECT_EQ(loaded.Statistics().count, trained.Statistics().count);
  EXPECT_EQ(loaded.Statistics().var, trained.Statistics().var);
  proto::RunningStatistics observations;  // Three elements: not returns'.
  ObservationNormalizer(3, 3, 10.0).SaveTo(&observations);
  EXPECT_THROW(loaded.LoadFrom(observations), std::runtime_error);
}

TEST(RewardNormalizerTest, BadOptionsNameTheField) {
  EXPECT_THROW(RewardNormalizer(1.5, 10.0), InvalidOption);
  try {
    RewardNormalizer(0.99, 0.0);
    ADD_FAILURE() << "clip 0 accepted";
  } catch (const InvalidOption& e) {
    EXPECT_EQ(e.field(), "normalize_rewards_clip");
  }
}

}  // namespace
}  // namespace reward_normalizer_test
}  // namespace asyncrl
