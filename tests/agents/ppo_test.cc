// PPO (agents/ppo.h): the clipped objective's output gradients against
// central differences of the loss; the parameter gradient of a minibatch
// whose ratios moved away from 1 (some clipped, some not) against a
// double-precision autograd reference, fast path and LibTorch, softmax and
// Gaussian, terminal and bootstrapped, value clipping on and off; every
// row (or recurrent sequence) learned from exactly once per epoch; options
// refused by name.
#include "asyncrl/agents/ppo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/misc/validate.h"
#include "gradient_check.h"
#include "option_check.h"
#include "reference_targets.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace ppo_test {
namespace {

using Obs = std::vector<float>;

FloatView View(const Obs& o) {
  return {o.data(), static_cast<int64_t>(o.size())};
}

Space Box(int64_t n, float bound = 10.0f) {
  return Space::Box({n}, -bound, bound);
}

// The minibatch loss of agents/ppo.h in double, written from the formula.
double ReferenceLoss(const PPOOptions& o, const std::vector<double>& log_probs,
                     const std::vector<double>& entropies,
                     const std::vector<double>& values,
                     const std::vector<float>& old_log_probs,
                     const std::vector<float>& advantages,
                     const std::vector<float>& returns,
                     const std::vector<float>& old_values) {
  const auto b = static_cast<double>(log_probs.size());
  double loss = 0;
  for (size_t i = 0; i < log_probs.size(); ++i) {
    const double r = std::exp(log_probs[i] - old_log_probs[i]);
    const double a = advantages[i];
    const double clipped =
        std::min(std::max(r, 1 - o.clip_range), 1 + o.clip_range);
    double v = values[i];
    if (o.clip_value_range > 0) {
      v = old_values[i] +
          std::min(std::max(v - old_values[i], -o.clip_value_range),
                   o.clip_value_range);
    }
    loss += -std::min(r * a, clipped * a) - o.beta * entropies[i] +
            o.v_loss_coef * (v - returns[i]) * (v - returns[i]);
  }
  return loss / b;
}

TEST(PPOLossTest, OutputGradientsEqualCentralDifferencesOfTheLoss) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal;
  for (double clip_value : {0.0, 0.3}) {
    PPOOptions o;
    o.clip_range = 0.2;
    o.clip_value_range = clip_value;
    o.beta = 0.03;
    o.v_loss_coef = 0.7;
    const int b = 64;
    std::vector<double> lp(b), h(b), v(b);
    std::vector<float> old_lp(b), adv(b), ret(b), old_v(b);
    int outside = 0, inside = 0;
    for (int i = 0; i < b; ++i) {
      old_lp[i] = static_cast<float>(-1.0 + 0.3 * normal(rng));
      // Log-ratios spread over [-0.6, 0.6]: many outside [log 0.8, log 1.2].
      const double log_ratio = 0.6 * std::sin(1.7 * i + 0.3);
      lp[i] = old_lp[i] + log_ratio;
      (std::abs(std::exp(log_ratio) - 1) > o.clip_range ? outside : inside)++;
      h[i] = 0.5 + 0.1 * normal(rng);
      adv[i] = static_cast<float>(normal(rng));
      ret[i] = static_cast<float>(normal(rng));
      old_v[i] = static_cast<float>(normal(rng));
      v[i] = old_v[i] + 0.5 * std::sin(0.9 * i);
    }
    ASSERT_GT(outside, 8);
    ASSERT_GT(inside, 8);
    OutputGradients g;
    PPOLossTerms terms;
    std::vector<float> vf(v.begin(), v.end());
    PPOOutputGradients(o, b, lp.data(), h.data(), vf.data(), old_lp.data(),
                       adv.data(), ret.data(), old_v.data(), &g, &terms);
    // The loss the terms sum up is the reference's.
    EXPECT_NEAR(
        terms.pi_loss - o.beta * terms.entropy + o.v_loss_coef * terms.v_loss,
        ReferenceLoss(o, lp, h, std::vector<double>(vf.begin(), vf.end()),
                      old_lp, adv, ret, old_v),
        1e-9);
    // The derivative of the loss in input `which` (0: log pi, 1: entropy,
    // 2: value) of row i, by central differences.
    const std::vector<double> vd(vf.begin(), vf.end());
    auto numeric = [&](int which, int i) {
      const double eps = 1e-7;
      std::vector<std::vector<double>> up = {lp, h, vd}, down = up;
      up[which][i] += eps;
      down[which][i] -= eps;
      return (ReferenceLoss(o, up[0], up[1], up[2], old_lp, adv, ret, old_v) -
              ReferenceLoss(o, down[0], down[1], down[2], old_lp, adv, ret,
                            old_v)) /
             (2 * eps);
    };
    for (int i = 0; i < b; ++i) {
      EXPECT_NEAR(g.log_prob[i], numeric(0, i), 1e-6) << "log pi, row " << i;
      EXPECT_NEAR(g.entropy[i], numeric(1, i), 1e-6) << "entropy, row " << i;
      EXPECT_NEAR(g.value[i], numeric(2, i), 1e-6) << "value, row " << i;
    }
  }
}

using testing::RowTerms;

torch::Tensor Input(const Obs& o) {
  return torch::tensor(o).to(torch::kDouble).view({1, -1});
}

// What the reference keeps of the rollout at the acting parameters.
struct ReferenceRollout {
  std::vector<float> old_log_probs, advantages, returns, old_values;
};

ReferenceRollout ReferenceTargetsAt(ActorCriticModel& acting,
                                    const std::vector<Obs>& obs,
                                    const std::vector<std::vector<float>>& act,
                                    const std::vector<double>& rewards,
                                    const PPOOptions& o, bool terminal) {
  torch::NoGradGuard g;
  const auto n = static_cast<int64_t>(act.size());
  testing::ReferenceSequence seq;
  ReferenceRollout out;
  for (int64_t i = 0; i < n; ++i) {
    const ModelOutput m = acting.Forward(Input(obs[i]));
    seq.rewards.push_back(rewards[i]);
    seq.values.push_back(m.value.item<double>());
    seq.stops.push_back(i == n - 1);
    out.old_log_probs.push_back(
        static_cast<float>(RowTerms(m, act[i]).first.item<double>()));
    out.old_values.push_back(static_cast<float>(seq.values.back()));
  }
  const double boot =
      terminal ? 0.0 : acting.Forward(Input(obs[n])).value.item<double>();
  for (int64_t i = 0; i < n; ++i) {
    seq.successors.push_back(i + 1 < n ? seq.values[i + 1] : boot);
  }
  const TargetParams params{o.gamma, o.lambda, 1.0, 1.0};
  testing::ReferenceResult ref = testing::ReferenceTargets(
      PolicyTarget::kGae, ValueTarget::kTdLambda, seq, params);
  if (o.normalize_advantages) {
    double mean = 0, var = 0;
    for (double a : ref.advantages) mean += a / n;
    for (double a : ref.advantages) var += (a - mean) * (a - mean) / n;
    for (double& a : ref.advantages) a = (a - mean) / (std::sqrt(var) + 1e-8);
  }
  for (int64_t i = 0; i < n; ++i) {
    out.advantages.push_back(static_cast<float>(ref.advantages[i]));
    out.returns.push_back(static_cast<float>(ref.value_targets[i]));
  }
  return out;
}

// The gradient of the minibatch loss over every row at `model`'s
// parameters (double), and the share of rows whose ratio is clipped.
torch::Tensor ReferenceGrads(ActorCriticModel& model,
                             const std::vector<Obs>& obs,
                             const std::vector<std::vector<float>>& act,
                             const ReferenceRollout& r, const PPOOptions& o,
                             double* clipped_share) {
  const auto n = static_cast<int64_t>(act.size());
  torch::Tensor loss = torch::zeros({}, torch::kDouble);
  int clipped = 0;
  for (int64_t i = 0; i < n; ++i) {
    const ModelOutput m = model.Forward(Input(obs[i]));
    auto [log_prob, entropy] = RowTerms(m, act[i]);
    const torch::Tensor ratio = torch::exp(log_prob - r.old_log_probs[i]);
    clipped += std::abs(ratio.item<double>() - 1) > o.clip_range ? 1 : 0;
    const double a = r.advantages[i];
    const torch::Tensor surrogate = torch::min(
        ratio * a, torch::clamp(ratio, 1 - o.clip_range, 1 + o.clip_range) * a);
    torch::Tensor v = m.value.squeeze();
    if (o.clip_value_range > 0) {
      v = r.old_values[i] + torch::clamp(v - r.old_values[i],
                                         -o.clip_value_range,
                                         o.clip_value_range);
    }
    loss = loss - surrogate - o.beta * entropy +
           o.v_loss_coef * (v - r.returns[i]).pow(2);
  }
  loss = loss / static_cast<double>(n);
  for (auto& p : model.parameters()) p.mutable_grad() = torch::Tensor();
  loss.backward();
  std::vector<torch::Tensor> grads;
  for (auto& p : model.parameters()) grads.push_back(p.grad().flatten());
  *clipped_share = static_cast<double>(clipped) / static_cast<double>(n);
  return torch::cat(grads);
}

// lr: the first step's size, chosen so that the second epoch's ratios are
// clipped on some rows and not on others (checked below).
struct GradientCase {
  bool gaussian;
  bool fast;
  double clip_value;
  bool normalize;
  double lr;
};

class PPOGradientTest : public ::testing::TestWithParam<GradientCase> {
 protected:
  void SetUp() override {
    ConfigureTorchForFork();
    torch::manual_seed(0);
  }
};

// Two epochs of one minibatch over a 6-row rollout: the second epoch's
// gradient (what local().grads() holds after the update) is taken at the
// parameters the first step moved, so its ratios are away from 1. The
// reference repeats the first step (RMSprop from zero statistics, no clip)
// in double to find those parameters.
TEST_P(PPOGradientTest, SecondEpochGradientMatchesDoubleReference) {
  const GradientCase& c = GetParam();
  const Space act = c.gaussian ? Box(2, 3.0f) : Space::Discrete(3);
  auto make_model = [&]() -> std::shared_ptr<ActorCriticModel> {
    torch::manual_seed(7);
    if (c.gaussian) {
      return FcGaussianActorCritic(4, act, std::vector<int64_t>{16, 16}).ptr();
    }
    return FcSoftmaxActorCritic(4, 3, std::vector<int64_t>{16, 16}).ptr();
  };
  for (bool terminal : {false, true}) {
    PPOOptions o;
    o.t_max = 6;
    o.epochs = 2;
    o.minibatches = 1;
    o.beta = 0.05;
    o.max_grad_norm = 0;
    o.lambda = 0.8;
    o.clip_range = 0.1;
    o.clip_value_range = c.clip_value;
    o.normalize_advantages = c.normalize;
    o.no_fast_path = !c.fast;
    o.optimizer.lr = c.lr;
    o.optimizer.alpha = 0.99;
    o.optimizer.eps = 0.1;
    PPO agent(make_model(), Box(4), act, o);
    ASSERT_EQ(agent.fast_path(), c.fast);
    std::vector<float> shared(agent.SharedSizes().params);
    std::vector<float> ms(agent.SharedSizes().optimizer);
    SharedCounters counters;
    agent.BindShared({shared.data(), ms.data(), &counters}, true);
    torch::manual_seed(11);
    std::vector<Obs> obs;
    for (int i = 0; i < 7; ++i) {
      auto t = torch::randn({4}).contiguous();
      obs.emplace_back(t.data_ptr<float>(), t.data_ptr<float>() + 4);
    }
    const std::vector<double> rewards = {0.5, -1.0, 2.0, 0.0, 1.0, -0.5};
    std::vector<std::vector<float>> actions;
    for (int i = 0; i < 6; ++i) {
      Action a = agent.ActAndTrain(View(obs[i]), i ? rewards[i - 1] : 0);
      if (c.gaussian) {
        actions.emplace_back(a.values.data, a.values.data + a.values.size);
      } else {
        actions.push_back({static_cast<float>(a.index)});
      }
    }
    auto reference = make_model();
    reference->to(torch::kDouble);
    const ReferenceRollout targets =
        ReferenceTargetsAt(*reference, obs, actions, rewards, o, terminal);
    agent.StopEpisodeAndTrain(View(obs[6]), rewards[5], terminal);
    ASSERT_EQ(agent.num_updates(), 2);
    // The first step, in double: RMSprop from zero statistics.
    double share = 0;
    const torch::Tensor g1 =
        ReferenceGrads(*reference, obs, actions, targets, o, &share);
    EXPECT_EQ(share, 0.0);  // At the acting parameters every ratio is 1.
    {
      torch::NoGradGuard guard;
      int64_t offset = 0;
      for (auto& p : reference->parameters()) {
        const torch::Tensor g =
            g1.slice(0, offset, offset + p.numel()).view(p.sizes());
        const torch::Tensor m = (1 - o.optimizer.alpha) * g * g;
        p.sub_(o.optimizer.lr * g / torch::sqrt(m + o.optimizer.eps));
        offset += p.numel();
      }
    }
    const torch::Tensor g2 =
        ReferenceGrads(*reference, obs, actions, targets, o, &share);
    // Both branches of the clip were taken.
    EXPECT_GT(share, 0.0);
    EXPECT_LT(share, 1.0);
    EXPECT_NEAR(agent.last_update().clip_fraction, share, 1e-9);
    testing::ExpectFloatMatchesDouble(agent.local().grads(), g2,
                                      terminal ? "terminal" : "bootstrapped");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PPOGradientTest,
    ::testing::Values(GradientCase{false, true, 0.0, false, 0.1},
                      GradientCase{false, false, 0.0, false, 0.1},
                      GradientCase{true, true, 0.0, false, 0.01},
                      GradientCase{true, false, 0.0, false, 0.01},
                      GradientCase{false, true, 0.05, true, 0.2},
                      GradientCase{true, false, 0.05, true, 0.01}),
    [](const auto& info) {
      const GradientCase& c = info.param;
      return std::string(c.gaussian ? "Gaussian" : "Softmax") +
             (c.fast ? "_fast" : "_libtorch") +
             (c.clip_value > 0 ? "_valueclip" : "") +
             (c.normalize ? "_normalized" : "");
    });

// K environments, t_max steps: each epoch's minibatches hold every row
// once (feed-forward), or every environment's whole sequence once
// (recurrent); one optimizer step each.
TEST(PPOMinibatchTest, EveryRowOncePerEpoch) {
  ConfigureTorchForFork();
  for (bool recurrent : {false, true}) {
    torch::manual_seed(5);
    PPOOptions o;
    o.t_max = 5;
    o.epochs = 3;
    o.minibatches = recurrent ? 2 : 3;
    std::shared_ptr<ActorCriticModel> model;
    if (recurrent) {
      model = DefaultModelRegistry().Make("fc-softmax-lstm", Box(3),
                                          Space::Discrete(2));
    } else {
      model = FcSoftmaxActorCritic(3, 2, std::vector<int64_t>{8}).ptr();
    }
    PPO agent(model, Box(3), Space::Discrete(2), o);
    const int64_t k = 4;
    std::vector<float> obs(static_cast<size_t>(k * 3));
    for (int t = 0; t < 5; ++t) {
      for (size_t i = 0; i < obs.size(); ++i) {
        obs[i] = std::sin(0.3f * static_cast<float>(t * 12 + i));
      }
      agent.BatchActAndTrain({obs.data(), k * 3}, k);
      const std::vector<uint8_t> ended = {0, static_cast<uint8_t>(t == 2), 0,
                                          0};
      agent.BatchObserveAndTrain({obs.data(), k * 3},
                                 std::vector<double>(k, 1.0), ended, ended,
                                 t == 4);
    }
    ASSERT_EQ(agent.num_updates(), 3 * o.minibatches) << recurrent;
    const auto& batches = agent.last_update().minibatch_rows;
    ASSERT_EQ(static_cast<int>(batches.size()), 3 * o.minibatches);
    for (int e = 0; e < 3; ++e) {
      std::multiset<int64_t> rows;
      for (int m = 0; m < o.minibatches; ++m) {
        const auto& b = batches[e * o.minibatches + m];
        rows.insert(b.begin(), b.end());
        if (recurrent) {
          // Whole sequences: the same environments at every step.
          EXPECT_EQ(b.size() % 5, 0u);
          for (size_t i = 0; i < b.size(); ++i) {
            EXPECT_EQ(b[i] % k, b[i % (b.size() / 5)] % k);
          }
        }
      }
      ASSERT_EQ(rows.size(), 20u) << "epoch " << e;
      for (int64_t r = 0; r < 20; ++r) EXPECT_EQ(rows.count(r), 1u) << r;
    }
  }
}

// One environment whose episodes end every third step (the second one
// truncated): PPO's rollout runs on through them to t_max steps (A3C's
// ends with each episode); a terminal row's return is its reward alone, a
// truncated one bootstraps, and each episode's rows are learned from.
TEST(PPORolloutTest, SpansEpisodeEndsUntilTMax) {
  ConfigureTorchForFork();
  torch::manual_seed(7);
  PPOOptions o;
  o.t_max = 8;
  o.epochs = 2;
  o.minibatches = 2;
  o.gamma = 0.9;
  o.lambda = 1.0;
  auto model = FcSoftmaxActorCritic(2, 2, std::vector<int64_t>{8}).ptr();
  PPO ppo(model, Box(2), Space::Discrete(2), o);
  A3COptions a;
  a.t_max = 8;
  torch::manual_seed(7);
  A3C a3c(FcSoftmaxActorCritic(2, 2, std::vector<int64_t>{8}).ptr(), Box(2),
          Space::Discrete(2), a);
  std::vector<int64_t> ppo_updates, a3c_updates;
  for (int t = 0; t < 8; ++t) {
    const Obs obs = {std::sin(0.7f * static_cast<float>(t)), 0.5f};
    const double reward = 1.0 + t;
    if (t % 3 == 2) {
      // The previous action's reward, then the episode's last action.
      for (Agent* agent : std::initializer_list<Agent*>{&ppo, &a3c}) {
        agent->ActAndTrain(View(obs), reward - 1);
        agent->StopEpisodeAndTrain(View(obs), reward, /*terminal=*/t == 2);
      }
    } else {
      const double previous = (t % 3 == 0) ? 0.0 : reward - 1;
      ppo.ActAndTrain(View(obs), previous);
      a3c.ActAndTrain(View(obs), previous);
    }
    ppo_updates.push_back(ppo.num_updates());
    a3c_updates.push_back(a3c.num_updates());
  }
  // A3C learned at each episode end (steps 3 and 6), PPO not yet.
  EXPECT_EQ(a3c_updates[2], 1);
  EXPECT_EQ(a3c_updates[5], 2);
  EXPECT_EQ(ppo_updates[6], 0);
  // The eighth step's outcome completes PPO's rollout of 8 rows.
  const Obs last = {0.1f, 0.5f};
  ppo.ActAndTrain(View(last), 8.0);
  EXPECT_EQ(ppo.num_updates(), o.epochs * o.minibatches);
  const PPOUpdateInfo& info = ppo.last_update();
  ASSERT_EQ(info.returns.size(), 8u);
  std::multiset<int64_t> rows;
  for (const auto& b : info.minibatch_rows) rows.insert(b.begin(), b.end());
  for (int64_t r = 0; r < 8; ++r) EXPECT_EQ(rows.count(r), 2u) << r;
  // Row 2 ended its episode (terminal): its return is its reward; row 1's
  // is r1 + gamma r2 (lambda 1), nothing of the next episode in either.
  EXPECT_FLOAT_EQ(info.returns[2], 3.0f);
  EXPECT_FLOAT_EQ(info.returns[1], 2.0f + 0.9f * 3.0f);
  // Row 5 was truncated: its return is its reward (6) plus gamma V(s'),
  // a value the untrained network does not give as exactly 0.
  EXPECT_NE(info.returns[5], 6.0f);
  EXPECT_NEAR(info.returns[4] - 5.0f, 0.9f * info.returns[5], 1e-5);
}

TEST(PPOOptionsTest, InvalidOptionsNameTheField) {
  const auto refused = [](auto change) {
    return testing::RefusedField<PPOOptions>(change);
  };
  EXPECT_EQ(refused([](PPOOptions& o) { o.epochs = 0; }), "epochs");
  EXPECT_EQ(refused([](PPOOptions& o) { o.minibatches = 0; }), "minibatches");
  EXPECT_EQ(refused([](PPOOptions& o) { o.clip_range = 0; }), "clip_range");
  EXPECT_EQ(refused([](PPOOptions& o) { o.clip_range = 1.5; }), "clip_range");
  EXPECT_EQ(refused([](PPOOptions& o) { o.clip_value_range = -1; }),
            "clip_value_range");
  EXPECT_EQ(refused([](PPOOptions& o) { o.lambda = 2; }), "lambda");
  EXPECT_EQ(refused([](PPOOptions& o) { o.t_max = 0; }), "t_max");
  EXPECT_EQ(refused([](PPOOptions&) {}), "(accepted)");
}

}  // namespace
}  // namespace ppo_test
}  // namespace asyncrl
