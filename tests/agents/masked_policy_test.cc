// Masked policies (Space::action_mask, two-player games): illegal actions
// are never sampled, get probability 0 in the loss and the entropy, and
// their logits get no gradient, on the fast path and through LibTorch.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/distributions.h"
#include "asyncrl/agents/models.h"
#include "asyncrl/agents/torch_setup.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace masked_policy_test {
namespace {

constexpr int64_t kPlanes = 6;   // Observation floats before the mask.
constexpr int64_t kActions = 4;  // Mask floats.

Space MaskedObservationSpace() {
  Space space = Space::Box({kPlanes + kActions}, -2.0f, 2.0f);
  space.action_mask = kActions;
  return space;
}

// An observation with random features and the given mask.
std::vector<float> Observation(std::mt19937_64& rng,
                               const std::vector<int>& legal) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> obs(kPlanes + kActions, 0.0f);
  for (int64_t i = 0; i < kPlanes; ++i) obs[i] = u(rng);
  for (int a : legal) obs[kPlanes + a] = 1.0f;
  return obs;
}

class MaskedPolicyTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ConfigureTorchForFork();
    torch::manual_seed(3);
  }
  // fc-softmax on the fast path (GetParam() false) or through LibTorch.
  std::unique_ptr<A3C> MakeAgent(double beta = 0.01) {
    A3COptions options;
    options.t_max = 4;
    options.beta = beta;
    options.no_fast_path = GetParam();
    options.seed = 11;
    const Space obs = MaskedObservationSpace();
    const Space act = Space::Discrete(kActions);
    auto agent = std::make_unique<A3C>(
        DefaultModelRegistry().Make("fc-softmax", obs, act), obs, act, options);
    EXPECT_EQ(agent->fast_path(), !GetParam());
    return agent;
  }
};

TEST_P(MaskedPolicyTest, IllegalActionsAreNeverSampled) {
  auto agent = MakeAgent();
  std::mt19937_64 rng(5);
  // Every mask with at least one legal action, many times over, in
  // training (sampled) and evaluation.
  int64_t counts[kActions] = {};
  for (int round = 0; round < 200; ++round) {
    for (int bits = 1; bits < (1 << kActions); ++bits) {
      std::vector<int> legal;
      for (int a = 0; a < kActions; ++a) {
        if ((bits >> a) & 1) legal.push_back(a);
      }
      const std::vector<float> obs = Observation(rng, legal);
      const FloatView view{obs.data(), static_cast<int64_t>(obs.size())};
      const int64_t trained = agent->ActAndTrain(view, 0.0).index;
      const int64_t acted = agent->Act(view).index;
      for (int64_t chosen : {trained, acted}) {
        ASSERT_TRUE((bits >> chosen) & 1)
            << "action " << chosen << " sampled under mask " << bits;
        ++counts[chosen];
      }
    }
  }
  // And the legal ones are all played.
  for (int64_t c : counts) EXPECT_GT(c, 0);
}

TEST_P(MaskedPolicyTest, MaskedLogitsGetNoGradient) {
  // Action 2 is illegal in every observation: its row of the last policy
  // layer (weights and bias) never changes, however many updates; the
  // other rows do. The entropy bonus is on (it would push a masked logit
  // up if the gradient reached it).
  auto agent = MakeAgent(/*beta=*/0.1);
  const auto& params = agent->model().named_parameters();
  torch::Tensor last_w;
  torch::Tensor last_b;
  for (const auto& p : params) {
    // fc-softmax's policy MLP: the last Linear of "pi".
    if (p.key().rfind("pi.", 0) == 0) {
      if (p.key().find("weight") != std::string::npos) last_w = p.value();
      if (p.key().find("bias") != std::string::npos) last_b = p.value();
    }
  }
  ASSERT_TRUE(last_w.defined() && last_b.defined());
  ASSERT_EQ(last_w.size(0), kActions);
  // Agents update the shared copy and refresh the model's from it.
  const torch::Tensor w0 = last_w.detach().clone();
  const torch::Tensor b0 = last_b.detach().clone();
  std::mt19937_64 rng(9);
  for (int t = 0; t < 200; ++t) {
    const std::vector<float> obs = Observation(rng, {0, 1, 3});
    const FloatView view{obs.data(), static_cast<int64_t>(obs.size())};
    agent->ActAndTrain(view, t % 3 == 0 ? 1.0 : -0.5);
  }
  ASSERT_GT(agent->num_updates(), 10);
  const torch::Tensor w1 = last_w.detach();
  const torch::Tensor b1 = last_b.detach();
  EXPECT_TRUE(torch::equal(w1[2], w0[2]));
  EXPECT_EQ(b1[2].item<float>(), b0[2].item<float>());
  for (int64_t a : {0, 1, 3}) {
    EXPECT_FALSE(torch::equal(w1[a], w0[a])) << "row " << a;
  }
}

INSTANTIATE_TEST_SUITE_P(FastAndLibTorch, MaskedPolicyTest,
                         ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "LibTorch" : "FastPath";
                         });

TEST(MaskLogitsTest, LibTorchLossAndEntropyIgnoreMaskedLogits) {
  ConfigureTorchForFork();
  // Two rows, double precision: the masked softmax equals the softmax over
  // the legal logits alone, the entropy is finite, and the gradient of
  // log pi(a) + entropy is exactly 0 at the masked logits.
  auto logits = torch::tensor({{0.3, -1.2, 2.0, 0.7}, {1.5, 0.1, -0.4, 0.0}},
                              torch::kDouble)
                    .requires_grad_(true);
  auto obs = torch::tensor(
      {{9.0, 1.0, 0.0, 1.0, 1.0}, {9.0, 0.0, 1.0, 1.0, 0.0}}, torch::kDouble);
  const Categorical policy(MaskLogits(logits, obs));
  const auto actions = torch::tensor({3, 1}, torch::kInt64);
  const auto log_prob = policy.LogProb(actions);
  const auto entropy = policy.Entropy();
  // Row 0: legal {0, 2, 3}; row 1: legal {1, 2}.
  const double z0 = std::exp(0.3) + std::exp(2.0) + std::exp(0.7);
  EXPECT_NEAR(log_prob[0].item<double>(), 0.7 - std::log(z0), 1e-12);
  const double z1 = std::exp(0.1) + std::exp(-0.4);
  EXPECT_NEAR(log_prob[1].item<double>(), 0.1 - std::log(z1), 1e-12);
  EXPECT_TRUE(std::isfinite(entropy.sum().item<double>()));
  (log_prob.sum() + entropy.sum()).backward();
  const auto grad = logits.grad();
  EXPECT_EQ(grad[0][1].item<double>(), 0.0);
  EXPECT_EQ(grad[1][0].item<double>(), 0.0);
  EXPECT_EQ(grad[1][3].item<double>(), 0.0);
  EXPECT_NE(grad[0][0].item<double>(), 0.0);
  EXPECT_NE(grad[1][2].item<double>(), 0.0);
}

TEST(MaskLogitsTest, SamplingNeverPicksAZeroProbabilityLastAction) {
  // The inverse-CDF draw's fallback (a uniform past the rounded sum) must
  // not land on a masked last action.
  std::mt19937_64 rng(1);
  const float logits[3] = {0.0f, 0.0f, kMaskedLogit};
  std::vector<double> scratch;
  for (int i = 0; i < 10000; ++i) {
    int64_t action = -1;
    double entropy = 0;
    Categorical::Sample(logits, 1, 3, false, rng, &action, &entropy, &scratch);
    ASSERT_NE(action, 2);
    ASSERT_NEAR(entropy, std::log(2.0), 1e-12);
  }
}

TEST(MaskLogitsTest, A3CRefusesAMaskThatDoesNotFitTheActions) {
  ConfigureTorchForFork();
  Space obs = Space::Box({10}, -1.0f, 1.0f);
  obs.action_mask = 3;
  const Space act = Space::Discrete(4);
  EXPECT_THROW(A3C(DefaultModelRegistry().Make("fc-softmax", obs, act), obs,
                   act, A3COptions()),
               std::invalid_argument);
}

}  // namespace
}  // namespace masked_policy_test
}  // namespace asyncrl
