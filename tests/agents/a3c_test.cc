// A3C: the update math against hand-computed values, the batched update
// against the step-by-step formulation, the shared optimizer step, batched
// environments, checkpoints and option validation.
#include "asyncrl/agents/a3c.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/misc/checkpoint.h"
#include "gradient_check.h"

namespace asyncrl {
namespace {

// logits = obs @ W, value = obs @ u: small enough to compute by hand.
class LinearModelImpl : public ActorCriticModel {
 public:
  LinearModelImpl() {
    w_ = register_parameter(
        "w", torch::tensor({0.5f, -0.5f, 0.25f, 1.0f}).view({2, 2}));
    u_ = register_parameter("u", torch::tensor({1.0f, -2.0f}));
  }
  PolicyKind Kind() const override { return PolicyKind::kCategorical; }
  ModelOutput Forward(const torch::Tensor& obs) override {
    return {obs.matmul(w_), {}, {}, obs.matmul(u_)};
  }

 private:
  torch::Tensor w_;
  torch::Tensor u_;
};

using Obs = std::vector<float>;

FloatView View(const Obs& o) {
  return {o.data(), static_cast<int64_t>(o.size())};
}

// log pi(a) and entropy of softmax(logits), in double.
std::pair<double, double> LogProbAndEntropy(const std::vector<double>& logits,
                                            int64_t a) {
  double max = logits[0];
  for (double l : logits) max = std::max(max, l);
  double sum = 0;
  for (double l : logits) sum += std::exp(l - max);
  double entropy = 0;
  for (double l : logits) {
    const double lp = l - max - std::log(sum);
    entropy -= std::exp(lp) * lp;
  }
  return {logits[a] - max - std::log(sum), entropy};
}

class A3CTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ConfigureTorchForFork();
    torch::manual_seed(0);
  }
  static Space Box(int64_t n, float bound = 10.0f) {
    return Space::Box({n}, -bound, bound);
  }
};

TEST_F(A3CTest, UpdateMatchesHandComputedReturnsAndLosses) {
  A3COptions options;
  options.t_max = 3;
  options.gamma = 0.9;
  options.beta = 0.01;
  A3C agent(std::make_shared<LinearModelImpl>(), Box(2), Space::Discrete(2),
            options);
  const std::vector<Obs> obs = {{1, 0}, {0, 1}, {1, 1}, {2, -1}};
  const std::vector<double> rewards = {1.0, 0.5, 2.0};
  std::vector<int64_t> actions;
  for (int i = 0; i < 3; ++i) {
    actions.push_back(
        agent.ActAndTrain(View(obs[i]), i ? rewards[i - 1] : 0).index);
  }
  EXPECT_EQ(agent.num_updates(), 0);
  agent.ActAndTrain(View(obs[3]), rewards[2]);  // t_max reached: update.
  ASSERT_EQ(agent.num_updates(), 1);
  // V(s) = s . u: V0 = 1, V1 = -2, V2 = -1, V3 = 4 (bootstrap).
  // R2 = 2 + 0.9 * 4 = 5.6; R1 = 0.5 + 0.9 * 5.6 = 5.54;
  // R0 = 1 + 0.9 * 5.54 = 5.986.
  const A3CUpdateInfo& info = agent.last_update();
  ASSERT_EQ(info.returns.size(), 3u);
  EXPECT_NEAR(info.returns[0], 5.986, 1e-5);
  EXPECT_NEAR(info.returns[1], 5.54, 1e-5);
  EXPECT_NEAR(info.returns[2], 5.6, 1e-5);
  EXPECT_NEAR(info.advantages[0], 4.986, 1e-5);
  EXPECT_NEAR(info.advantages[1], 7.54, 1e-5);
  EXPECT_NEAR(info.advantages[2], 6.6, 1e-5);
  const double v_loss = (std::pow(1 - 5.986, 2) + std::pow(-2 - 5.54, 2) +
                         std::pow(-1 - 5.6, 2)) /
                        2;
  EXPECT_NEAR(info.v_loss, v_loss, 1e-4);
  // logits = s @ W: (0.5, -0.5), (0.25, 1.0), (0.75, 0.5).
  const std::vector<std::vector<double>> logits = {
      {0.5, -0.5}, {0.25, 1.0}, {0.75, 0.5}};
  const double adv[] = {4.986, 7.54, 6.6};
  double pi_loss = 0;
  for (int i = 0; i < 3; ++i) {
    const auto [lp, h] = LogProbAndEntropy(logits[i], actions[i]);
    pi_loss += -lp * adv[i] - 0.01 * h;
  }
  EXPECT_NEAR(info.pi_loss, pi_loss, 1e-4);
}

TEST_F(A3CTest, TerminalStateBootstrapsFromZero) {
  A3COptions options;
  options.t_max = 5;
  options.gamma = 0.5;
  A3C agent(std::make_shared<LinearModelImpl>(), Box(2), Space::Discrete(2),
            options);
  const Obs s0 = {1, 0}, s1 = {0, 1}, s2 = {3, 3};
  agent.ActAndTrain(View(s0), 0);
  agent.ActAndTrain(View(s1), 1.0);
  agent.StopEpisodeAndTrain(View(s2), 2.0, /*terminal=*/true);
  ASSERT_EQ(agent.num_updates(), 1);
  EXPECT_NEAR(agent.last_update().returns[1], 2.0, 1e-6);
  EXPECT_NEAR(agent.last_update().returns[0], 1.0 + 0.5 * 2.0, 1e-6);
}

TEST_F(A3CTest, TimeLimitEndBootstrapsFromTheLastObservation) {
  A3COptions options;
  options.t_max = 5;
  options.gamma = 0.5;
  A3C agent(std::make_shared<LinearModelImpl>(), Box(2), Space::Discrete(2),
            options);
  const Obs s0 = {1, 0}, s1 = {3, 1};  // V(s1) = 3 - 2 = 1.
  agent.ActAndTrain(View(s0), 0);
  agent.StopEpisodeAndTrain(View(s1), 2.0, /*terminal=*/false);
  EXPECT_NEAR(agent.last_update().returns[0], 2.0 + 0.5 * 1.0, 1e-6);
}

TEST_F(A3CTest, BatchedEnvironmentsKeepEpisodesApart) {
  A3COptions options;
  options.t_max = 2;
  options.gamma = 0.5;
  A3C agent(std::make_shared<LinearModelImpl>(), Box(2), Space::Discrete(2),
            options);
  // Two environments, two steps; env 0's episode ends (terminal) after the
  // first step and a new one starts.
  const Obs step0 = {1, 0, 0, 1};
  const Obs next0 = {5, 5, 1, 1};  // env 0 terminal; env 1 continues.
  const Obs step1 = {2, 0, 1, 1};  // env 0 restarted.
  const Obs next1 = {1, 1, 2, 0};  // V = -1 and 2.
  agent.BatchActAndTrain(View(step0), 2);
  agent.BatchObserveAndTrain(View(next0), {1.0, 2.0}, {1, 0}, {1, 0}, false);
  EXPECT_EQ(agent.num_updates(), 0);
  agent.BatchActAndTrain(View(step1), 2);
  agent.BatchObserveAndTrain(View(next1), {3.0, 4.0}, {0, 0}, {0, 0}, false);
  ASSERT_EQ(agent.num_updates(), 1);
  const auto& r = agent.last_update().returns;  // Row = step * 2 + env.
  ASSERT_EQ(r.size(), 4u);
  EXPECT_NEAR(r[0], 1.0, 1e-6);               // Terminal.
  EXPECT_NEAR(r[2], 3.0 + 0.5 * -1.0, 1e-6);  // New episode, bootstrap.
  EXPECT_NEAR(r[3], 4.0 + 0.5 * 2.0, 1e-6);
  EXPECT_NEAR(r[1], 2.0 + 0.5 * r[3], 1e-6);  // Continues into row 3.
}

// The step-by-step formulation of the reference: one forward pass with
// autograd per step, losses accumulated, one backward. In double: give it a
// model converted with ->to(torch::kDouble).
torch::Tensor StepwiseGrads(ActorCriticModel& model,
                            const std::vector<Obs>& obs,
                            const std::vector<std::vector<float>>& actions,
                            const std::vector<double>& rewards,
                            const A3COptions& o, bool terminal) {
  const int64_t n = static_cast<int64_t>(actions.size());
  auto input = [&](int64_t i) {
    return torch::tensor(obs[i]).to(torch::kDouble).view({1, -1});
  };
  double r = 0;
  if (!terminal) {
    torch::NoGradGuard g;
    r = model.Forward(input(n)).value.item<double>();
  }
  torch::Tensor pi_loss = torch::zeros({}, torch::kDouble);
  torch::Tensor v_loss = torch::zeros({}, torch::kDouble);
  for (int64_t i = n - 1; i >= 0; --i) {
    r = rewards[i] + o.gamma * r;
    const ModelOutput out = model.Forward(input(i));
    const auto v = out.value.squeeze();
    torch::Tensor log_prob, entropy;
    if (model.Kind() == PolicyKind::kCategorical) {
      const auto lp = torch::log_softmax(out.logits.squeeze(0), -1);
      log_prob = lp[static_cast<int64_t>(actions[i][0])];
      entropy = -(lp.exp() * lp).sum();
    } else {
      const auto a = torch::tensor(actions[i]).to(torch::kDouble);
      const auto mean = out.mean.squeeze(0);
      const auto log_std = out.log_std.squeeze(0);
      const auto var = torch::exp(2 * log_std);
      log_prob =
          (-(a - mean).pow(2) / (2 * var) - log_std - 0.5 * std::log(2 * M_PI))
              .sum();
      entropy = (0.5 + 0.5 * std::log(2 * M_PI) + log_std).sum();
    }
    const double advantage = r - v.item<double>();
    pi_loss = pi_loss - log_prob * advantage - o.beta * entropy;
    v_loss = v_loss + (v - r).pow(2) / 2;
  }
  for (auto& p : model.parameters()) p.mutable_grad() = torch::Tensor();
  (pi_loss * o.pi_loss_coef + v_loss * o.v_loss_coef).backward();
  std::vector<torch::Tensor> grads;
  for (auto& p : model.parameters()) grads.push_back(p.grad().flatten());
  return torch::cat(grads);
}

class GradientEquivalenceTest : public A3CTest,
                                public ::testing::WithParamInterface<bool> {};

TEST_P(GradientEquivalenceTest, BatchedUpdateEqualsStepByStep) {
  const bool gaussian = GetParam();
  const Space act = gaussian ? Box(2, 100.0f) : Space::Discrete(3);
  auto make_model = [&]() -> std::shared_ptr<ActorCriticModel> {
    torch::manual_seed(7);
    if (gaussian)
      return FcGaussianActorCritic(4, act, std::vector<int64_t>{16, 16}).ptr();
    return FcSoftmaxActorCritic(4, 3, std::vector<int64_t>{16, 16}).ptr();
  };
  for (bool terminal : {false, true}) {
    A3COptions options;
    options.t_max = 5;
    options.beta = 0.05;
    options.max_grad_norm = 0;
    A3C agent(make_model(), Box(4), act, options);
    torch::manual_seed(11);
    std::vector<Obs> obs;
    for (int i = 0; i < 5; ++i) {
      auto t = torch::randn({4}).contiguous();
      obs.emplace_back(t.data_ptr<float>(), t.data_ptr<float>() + 4);
    }
    const std::vector<double> rewards = {0.5, -1.0, 2.0, 0.0};
    std::vector<std::vector<float>> actions;
    for (int i = 0; i < 4; ++i) {
      Action a = agent.ActAndTrain(View(obs[i]), i ? rewards[i - 1] : 0);
      if (gaussian) {
        actions.emplace_back(a.values.data, a.values.data + a.values.size);
      } else {
        actions.push_back({static_cast<float>(a.index)});
      }
    }
    // Same weights (no update happened yet), in double.
    auto reference = make_model();
    reference->to(torch::kDouble);
    agent.StopEpisodeAndTrain(View(obs[4]), rewards[3], terminal);
    ASSERT_EQ(agent.num_updates(), 1);
    const torch::Tensor expected =
        StepwiseGrads(*reference, obs, actions, rewards, options, terminal);
    const torch::Tensor batched = agent.local().grads();
    ASSERT_EQ(expected.numel(), batched.numel());
    testing::ExpectFloatMatchesDouble(batched, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, GradientEquivalenceTest,
                         ::testing::Values(false, true), [](const auto& info) {
                           return info.param ? "Gaussian" : "Softmax";
                         });

TEST_F(A3CTest, UpdateAppliesClippedRmspropToSharedAndRefreshesLocal) {
  A3COptions options;
  options.t_max = 2;
  options.max_grad_norm = 0.5;
  options.optimizer.lr = 0.01;
  options.optimizer.alpha = 0.9;
  options.optimizer.eps = 0.1;
  A3C agent(std::make_shared<LinearModelImpl>(), Box(2), Space::Discrete(2),
            options);
  const std::vector<float> before(agent.shared_params(),
                                  agent.shared_params() + 6);
  const Obs s0 = {1, 2}, s1 = {-1, 1}, s2 = {0.5, 0.5};
  agent.ActAndTrain(View(s0), 0);
  agent.ActAndTrain(View(s1), 1);
  agent.ActAndTrain(View(s2), -1);
  ASSERT_EQ(agent.num_updates(), 1);
  const float* g = agent.local().grads_data();
  double norm = 0;
  for (int i = 0; i < 6; ++i) norm += double{g[i]} * g[i];
  norm = std::sqrt(norm);
  EXPECT_NEAR(agent.last_update().grad_norm, norm, 1e-6);
  ASSERT_GT(norm, 0.5) << "the test needs clipping to happen";
  const double scale = 0.5 / (norm + 1e-6);
  for (int i = 0; i < 6; ++i) {
    const double gi = g[i] * scale;
    const double ms = 0.1 * gi * gi;  // alpha * 0 + (1 - alpha) * g^2.
    const double expected = before[i] - 0.01 * gi / std::sqrt(ms + 0.1);
    EXPECT_NEAR(agent.shared_params()[i], expected, 1e-6) << i;
    EXPECT_NEAR(agent.shared_ms()[i], ms, 1e-7) << i;
    EXPECT_EQ(agent.local().params_data()[i], agent.shared_params()[i]) << i;
  }
}

TEST(SharedRmspropTest, MatchesTheReferenceFormula) {
  RmspropOptions o;
  o.lr = 0.05;
  o.alpha = 0.8;
  o.eps = 0.1;
  o.weight_decay = 0.01;
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  std::vector<float> ms(3, 0.0f);
  std::vector<double> rp(p.begin(), p.end()), rms(3, 0.0);
  const float grads[3][3] = {
      {0.1f, -0.3f, 2.0f}, {1.0f, 0.0f, -1.0f}, {-0.5f, 0.25f, 0.0f}};
  std::vector<float> local(3, -99.0f);
  for (const auto& g : grads) {
    RmspropStepAndCopy(o, 0.5f, g, p.data(), ms.data(), local.data(), 3);
    EXPECT_EQ(local, p);  // The worker's copy is refreshed.
    for (int i = 0; i < 3; ++i) {
      const double gi = 0.5 * g[i] + 0.01 * rp[i];
      rms[i] = 0.8 * rms[i] + 0.2 * gi * gi;
      rp[i] -= 0.05 * gi / std::sqrt(rms[i] + 0.1);
    }
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(p[i], rp[i], 1e-6);
    EXPECT_NEAR(ms[i], rms[i], 1e-6);
  }
}

TEST(SharedRmspropTest, ClipScaleFollowsClipGradNorm) {
  EXPECT_FLOAT_EQ(ClipScale(80.0, 40.0),
                  static_cast<float>(40.0 / (80.0 + 1e-6)));
  EXPECT_FLOAT_EQ(ClipScale(10.0, 40.0), 1.0f);
  EXPECT_FLOAT_EQ(ClipScale(1e9, 0.0), 1.0f);
}

TEST(SharedRmspropTest, InvalidOptionsNameTheField) {
  RmspropOptions o;
  o.eps = 0;
  try {
    o.Validate();
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rmsprop_epsilon=0"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(A3CTest, InvalidOptionsNameTheField) {
  A3COptions o;
  o.t_max = 0;
  try {
    A3C agent(std::make_shared<LinearModelImpl>(), Box(2), Space::Discrete(2),
              o);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("t_max=0"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(A3C(std::make_shared<LinearModelImpl>(), Box(2), Box(1), {}),
               std::invalid_argument);
}

TEST_F(A3CTest, SaveAndLoadRoundTripThroughSharedState) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("asyncrl_a3c_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  A3COptions options;
  options.t_max = 1;
  auto make = [&] {
    return A3C(FcSoftmaxActorCritic(2, 2, std::vector<int64_t>{8}).ptr(),
               Box(2), Space::Discrete(2), options);
  };
  A3C a = make();
  const Obs s = {1, -1};
  a.ActAndTrain(View(s), 0);
  a.ActAndTrain(View(s), 1);  // One update: ms is non-zero.
  a.Save(dir.string());
  torch::manual_seed(99);
  A3C b = make();
  std::vector<float> shared_params(b.SharedSizes().params);
  std::vector<float> shared_ms(b.SharedSizes().optimizer);
  b.BindShared({shared_params.data(), shared_ms.data()}, true);
  b.Load(dir.string());
  for (int64_t i = 0; i < b.SharedSizes().params; ++i) {
    ASSERT_EQ(shared_params[i], a.shared_params()[i]);
    ASSERT_EQ(shared_ms[i], a.shared_ms()[i]);
    ASSERT_EQ(b.local().params_data()[i], a.shared_params()[i]);
  }
  // A different network refuses the checkpoint and keeps its own state.
  A3C c(FcSoftmaxActorCritic(2, 2, std::vector<int64_t>{9}).ptr(), Box(2),
        Space::Discrete(2), options);
  const float first = c.shared_params()[0];
  try {
    c.Load(dir.string());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("shape"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(c.shared_params()[0], first);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace asyncrl
