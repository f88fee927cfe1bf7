// The action distributions: log-probabilities and entropies against
// hand-computed values, the acting path's entropies against the tensor
// definitions, sampling frequencies and the RNG contract that keeps seeded
// runs repeatable, greedy acting, and gradients through autograd.
#include "asyncrl/agents/distributions.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "asyncrl/agents/torch_setup.h"
#include "gradient_check.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace distributions_test {
namespace {

std::vector<float> Floats(const torch::Tensor& t) {
  const auto c = t.to(torch::kFloat).contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

std::vector<double> Doubles(const torch::Tensor& t) {
  const auto c = t.to(torch::kDouble).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

// Two double computations of the same sum of `terms` terms of magnitude up
// to `scale` agree to a few units of double rounding per term.
double DoubleTolerance(int64_t terms, double scale) {
  return 8.0 * static_cast<double>(terms) * DBL_EPSILON * std::max(scale, 1.0);
}

class DistributionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ConfigureTorchForFork();
    torch::manual_seed(3);
  }
  std::vector<double> scratch_;
};

TEST_F(DistributionsTest, CategoricalMatchesHandComputedValues) {
  // Row 0: probabilities 1/6, 2/6, 3/6; row 1: uniform.
  const auto logits = torch::tensor({std::log(1.0), std::log(2.0),
                                     std::log(3.0), 5.0, 5.0, 5.0},
                                    torch::kDouble)
                          .view({2, 3});
  const Categorical policy(logits);
  const auto lp = Doubles(policy.LogProb(torch::tensor({2, 0}, torch::kLong)));
  EXPECT_NEAR(lp[0], std::log(3.0 / 6.0), 1e-15);
  EXPECT_NEAR(lp[1], std::log(1.0 / 3.0), 1e-15);
  const auto h = Doubles(policy.Entropy());
  const double h0 =
      -(1.0 / 6 * std::log(1.0 / 6) + 2.0 / 6 * std::log(2.0 / 6) +
        3.0 / 6 * std::log(3.0 / 6));
  EXPECT_NEAR(h[0], h0, 1e-15);
  EXPECT_NEAR(h[1], std::log(3.0), 1e-15);
}

TEST_F(DistributionsTest, GaussianMatchesHandComputedValues) {
  // Dimension 0: N(0, 1) at 1 (z = 1); dimension 1: N(1, 2^2) at 2
  // (z = 1/2).
  const auto mean = torch::tensor({0.0, 1.0}, torch::kDouble).view({1, 2});
  const auto log_std =
      torch::tensor({0.0, std::log(2.0)}, torch::kDouble).view({1, 2});
  const Gaussian policy(mean, log_std);
  const double c = 0.5 * std::log(2 * M_PI);
  const auto a = torch::tensor({1.0, 2.0}, torch::kDouble).view({1, 2});
  EXPECT_NEAR(Doubles(policy.LogProb(a))[0],
              (-0.5 - c) + (-0.125 - std::log(2.0) - c), 1e-15);
  EXPECT_NEAR(Doubles(policy.Entropy())[0], 1.0 + 2 * c + std::log(2.0), 1e-15);
}

TEST_F(DistributionsTest, ActingEntropyEqualsTensorEntropy) {
  constexpr int64_t kRows = 64;
  constexpr int64_t kN = 7;
  // Spread logits so that some probabilities are tiny.
  const std::vector<float> logits = Floats(torch::randn({kRows, kN}) * 4);
  std::vector<int64_t> actions(kRows);
  std::vector<double> acting(kRows);
  std::mt19937_64 rng(1);
  Categorical::Sample(logits.data(), kRows, kN, false, rng, actions.data(),
                      acting.data(), &scratch_);
  const auto tensor = Doubles(
      Categorical(torch::tensor(logits).to(torch::kDouble).view({kRows, kN}))
          .Entropy());
  for (int64_t r = 0; r < kRows; ++r) {
    EXPECT_NEAR(acting[r], tensor[r], DoubleTolerance(kN, 16.0)) << r;
  }

  constexpr int64_t kD = 3;
  const std::vector<float> mean = Floats(torch::randn({kRows, kD}));
  const std::vector<float> log_std = Floats(torch::randn({kRows, kD}));
  std::vector<float> samples(kRows * kD);
  Gaussian::Sample(mean.data(), log_std.data(), kRows, kD, false, rng,
                   samples.data(), acting.data());
  const auto as_double = [](const std::vector<float>& v) {
    return torch::tensor(v).to(torch::kDouble).view({kRows, kD});
  };
  const auto gaussian =
      Doubles(Gaussian(as_double(mean), as_double(log_std)).Entropy());
  for (int64_t r = 0; r < kRows; ++r) {
    EXPECT_NEAR(acting[r], gaussian[r], DoubleTolerance(kD, 4.0)) << r;
  }
}

// Frequencies of 100000 draws: each within 5 binomial standard deviations
// of N p (a false failure has probability ~1e-6 per action, and the seed
// is fixed).
TEST_F(DistributionsTest, CategoricalSamplesFollowTheProbabilities) {
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  constexpr int64_t kDraws = 100000;
  std::vector<float> logits;
  for (int64_t i = 0; i < kDraws; ++i) {
    for (double pa : p) logits.push_back(static_cast<float>(std::log(pa)));
  }
  std::vector<int64_t> actions(kDraws);
  std::vector<double> entropies(kDraws);
  std::mt19937_64 rng(5);
  Categorical::Sample(logits.data(), kDraws, 4, false, rng, actions.data(),
                      entropies.data(), &scratch_);
  std::vector<int64_t> counts(4, 0);
  for (int64_t a : actions) {
    ASSERT_GE(a, 0);
    ASSERT_LT(a, 4);
    ++counts[a];
  }
  for (size_t a = 0; a < p.size(); ++a) {
    const double expected = kDraws * p[a];
    const double sd = std::sqrt(kDraws * p[a] * (1 - p[a]));
    EXPECT_NEAR(static_cast<double>(counts[a]), expected, 5 * sd) << a;
  }
}

// Sample mean and standard deviation of 100000 draws per dimension: within
// 5 standard errors (sd / sqrt(N), and sd / sqrt(2 N) for the deviation).
TEST_F(DistributionsTest, GaussianSamplesHaveTheMeanAndDeviation) {
  constexpr int64_t kDraws = 100000;
  const std::vector<float> mean_row = {-1.0f, 2.0f};
  const std::vector<float> log_std_row = {0.0f, std::log(0.5f)};
  std::vector<float> mean, log_std;
  for (int64_t i = 0; i < kDraws; ++i) {
    mean.insert(mean.end(), mean_row.begin(), mean_row.end());
    log_std.insert(log_std.end(), log_std_row.begin(), log_std_row.end());
  }
  std::vector<float> samples(kDraws * 2);
  std::vector<double> entropies(kDraws);
  std::mt19937_64 rng(6);
  Gaussian::Sample(mean.data(), log_std.data(), kDraws, 2, false, rng,
                   samples.data(), entropies.data());
  for (int64_t j = 0; j < 2; ++j) {
    double sum = 0, sum2 = 0;
    for (int64_t i = 0; i < kDraws; ++i) {
      sum += samples[i * 2 + j];
      sum2 += double{samples[i * 2 + j]} * samples[i * 2 + j];
    }
    const double m = sum / kDraws;
    const double sd = std::sqrt(sum2 / kDraws - m * m);
    const double want_sd = std::exp(double{log_std_row[j]});
    EXPECT_NEAR(m, mean_row[j], 5 * want_sd / std::sqrt(kDraws)) << j;
    EXPECT_NEAR(sd, want_sd, 5 * want_sd / std::sqrt(2.0 * kDraws)) << j;
  }
}

// The draws a seed gives are part of the contract (seeded runs repeat):
// one uniform(0, 1) per categorical row, inverted through the cumulative
// probabilities; one standard normal per Gaussian dimension, row-major,
// from one distribution object per call.
TEST_F(DistributionsTest, SamplingUsesTheDocumentedDraws) {
  constexpr int64_t kRows = 50;
  constexpr int64_t kN = 5;
  const std::vector<float> logits = Floats(torch::randn({kRows, kN}) * 2);
  std::vector<int64_t> actions(kRows);
  std::vector<double> entropies(kRows);
  std::mt19937_64 rng(42);
  Categorical::Sample(logits.data(), kRows, kN, false, rng, actions.data(),
                      entropies.data(), &scratch_);
  std::mt19937_64 expected_rng(42);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int64_t r = 0; r < kRows; ++r) {
    const float* l = logits.data() + r * kN;
    const double max = *std::max_element(l, l + kN);
    std::vector<double> p(kN);
    double sum = 0;
    for (int64_t a = 0; a < kN; ++a) sum += p[a] = std::exp(l[a] - max);
    double u = uniform(expected_rng);
    int64_t want = kN - 1;
    for (int64_t a = 0; a < kN; ++a) {
      u -= p[a] / sum;
      if (u < 0) {
        want = a;
        break;
      }
    }
    EXPECT_EQ(actions[r], want) << r;
  }
  EXPECT_EQ(rng, expected_rng) << "one uniform draw per row";

  constexpr int64_t kD = 3;
  const std::vector<float> mean = Floats(torch::randn({kRows, kD}));
  const std::vector<float> log_std = Floats(torch::randn({kRows, kD}));
  std::vector<float> samples(kRows * kD);
  Gaussian::Sample(mean.data(), log_std.data(), kRows, kD, false, rng,
                   samples.data(), entropies.data());
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int64_t i = 0; i < kRows * kD; ++i) {
    const double want = mean[i] + std::exp(log_std[i]) * normal(expected_rng);
    EXPECT_EQ(samples[i], static_cast<float>(want)) << i;
  }
}

TEST_F(DistributionsTest, DeterministicActingPicksTheModeWithoutDrawing) {
  // Row 1 ties actions 0 and 2: the first wins.
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 3.0f, 1.0f, 3.0f};
  std::vector<int64_t> actions(2);
  std::vector<double> entropies(2);
  std::mt19937_64 rng(9);
  const std::mt19937_64 before = rng;
  Categorical::Sample(logits.data(), 2, 3, true, rng, actions.data(),
                      entropies.data(), &scratch_);
  EXPECT_EQ(actions, (std::vector<int64_t>{1, 0}));
  const std::vector<float> mean = {0.25f, -3.0f};
  const std::vector<float> log_std = {1.0f, 2.0f};
  std::vector<float> samples(2);
  Gaussian::Sample(mean.data(), log_std.data(), 1, 2, true, rng, samples.data(),
                   entropies.data());
  EXPECT_EQ(samples, mean);
  EXPECT_EQ(rng, before) << "greedy acting draws nothing";
}

// The gradient of `f` (a scalar) with respect to `x`.
torch::Tensor Grad(const torch::Tensor& f, const torch::Tensor& x) {
  return torch::autograd::grad({f}, {x}, {}, /*retain_graph=*/true,
                               /*create_graph=*/false,
                               /*allow_unused=*/true)[0];
}

// Autograd through the float32 distributions (as an update runs them)
// against the analytic gradients in double:
//   d log pi(a) / d l = onehot(a) - p,  dH / d l = -p (log p + H);
//   d log N(a) / d mean = z / std,  d log N(a) / d log_std = z^2 - 1,
//   dH / d log_std = 1, and H does not depend on the mean.
TEST_F(DistributionsTest, GradientsFlowThroughLogProbAndEntropy) {
  constexpr int64_t kRows = 6;
  constexpr int64_t kN = 4;
  const auto logits = (torch::randn({kRows, kN}) * 2).requires_grad_();
  const auto actions = torch::randint(kN, {kRows}, torch::kLong);
  const Categorical policy(logits);
  const auto l = logits.detach().to(torch::kDouble);
  const auto p = torch::softmax(l, -1);
  const auto log_p = torch::log_softmax(l, -1);
  const auto h = -(p * log_p).sum(-1, /*keepdim=*/true);
  testing::ExpectFloatMatchesDouble(
      Grad(policy.LogProb(actions).sum(), logits),
      torch::one_hot(actions, kN).to(torch::kDouble) - p,
      "categorical log-prob gradients");
  testing::ExpectFloatMatchesDouble(Grad(policy.Entropy().sum(), logits),
                                    -p * (log_p + h),
                                    "categorical entropy gradients");

  constexpr int64_t kD = 3;
  const auto mean = torch::randn({kRows, kD}).requires_grad_();
  const auto log_std = (torch::randn({kRows, kD}) * 0.5).requires_grad_();
  const auto a = torch::randn({kRows, kD});
  const Gaussian gaussian(mean, log_std);
  const auto s = log_std.detach().to(torch::kDouble);
  const auto z = (a.to(torch::kDouble) - mean.detach()) * torch::exp(-s);
  const auto log_prob = gaussian.LogProb(a).sum();
  testing::ExpectFloatMatchesDouble(Grad(log_prob, mean), z * torch::exp(-s),
                                    "Gaussian log-prob mean gradients");
  testing::ExpectFloatMatchesDouble(Grad(log_prob, log_std), z * z - 1,
                                    "Gaussian log-prob log_std gradients");
  const auto entropy = gaussian.Entropy().sum();
  testing::ExpectFloatMatchesDouble(Grad(entropy, log_std),
                                    torch::ones({kRows, kD}, torch::kDouble),
                                    "Gaussian entropy gradients");
  EXPECT_FALSE(Grad(entropy, mean).defined());
}

TEST_F(DistributionsTest, EvaluateActionsPicksThePolicyOfTheKind) {
  ModelOutput out;
  out.logits = torch::randn({3, 4}, torch::kDouble);
  const auto actions = torch::tensor({0, 3, 1}, torch::kLong);
  const PolicyTerms c = EvaluateActions(PolicyKind::kCategorical, out, actions);
  const Categorical categorical(out.logits);
  EXPECT_TRUE(torch::equal(c.log_prob, categorical.LogProb(actions)));
  EXPECT_TRUE(torch::equal(c.entropy, categorical.Entropy()));

  out.mean = torch::randn({3, 2}, torch::kDouble);
  out.log_std = torch::randn({3, 2}, torch::kDouble);
  const auto a = torch::randn({3, 2}, torch::kDouble);
  const PolicyTerms g = EvaluateActions(PolicyKind::kGaussian, out, a);
  const Gaussian gaussian(out.mean, out.log_std);
  EXPECT_TRUE(torch::equal(g.log_prob, gaussian.LogProb(a)));
  EXPECT_TRUE(torch::equal(g.entropy, gaussian.Entropy()));
}

}  // namespace
}  // namespace distributions_test
}  // namespace asyncrl
