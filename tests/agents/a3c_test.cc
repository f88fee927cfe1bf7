// A3C: the update math against hand-computed values, the batched update
// against the step-by-step formulation, the shared optimizer step, batched
// environments, checkpoints and option validation.
#include "asyncrl/agents/a3c.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/validate.h"
#include "gradient_check.h"
#include "option_check.h"
#include "reference_targets.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace a3c_test {
namespace {

// logits = obs @ W, value = obs @ u: small enough to compute by hand.
class LinearModelImpl : public ActorCriticModel {
 public:
  // `value_scale` multiplies u (1e38: values that overflow float).
  explicit LinearModelImpl(float value_scale = 1.0f) {
    w_ = register_parameter(
        "w", torch::tensor({0.5f, -0.5f, 0.25f, 1.0f}).view({2, 2}));
    u_ = register_parameter("u", torch::tensor({1.0f, -2.0f}) * value_scale);
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

// Two workers' agents (t_max 2, fc-softmax) bound to one set of shared
// parameters, as the trainer's processes are.
struct TwoWorkers {
  static A3C Make() {
    A3COptions options;
    options.t_max = 2;
    return A3C(FcSoftmaxActorCritic(2, 2, std::vector<int64_t>{8}).ptr(),
               Space::Box({2}, -10.0f, 10.0f), Space::Discrete(2), options);
  }
  TwoWorkers() {
    a.BindShared({shared.data(), ms.data(), &counters}, true);
    b.BindShared({shared.data(), ms.data(), &counters}, false);
  }
  A3C a = Make();
  A3C b = Make();
  std::vector<float> shared = std::vector<float>(a.SharedSizes().params);
  std::vector<float> ms = std::vector<float>(a.SharedSizes().optimizer);
  SharedCounters counters;
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

// Both sides of a game (TurnTaking): a row whose turn passes bootstraps
// from the other player's value, negated, here through a time-limit end.
TEST_F(A3CTest, TurnPassesNegateTheSuccessorsValue) {
  A3COptions options;
  options.t_max = 5;
  options.gamma = 0.5;
  A3C agent(std::make_shared<LinearModelImpl>(), Box(2), Space::Discrete(2),
            options);
  EXPECT_EQ(agent.TurnTakingRefusal(), "");
  const Obs s0 = {1, 0}, s1 = {0, 1}, s2 = {3, 1};  // V(s2) = 1.
  agent.BatchActAndTrain(View(s0), 1);
  agent.NextTurnPasses({1});
  agent.BatchObserveAndTrain(View(s1), {0.0}, {0}, {0}, false);
  agent.BatchActAndTrain(View(s1), 1);
  agent.NextTurnPasses({1});
  agent.BatchObserveAndTrain(View(s2), {0.25}, {0}, {1}, false);
  ASSERT_EQ(agent.num_updates(), 1);
  // R1 = 0.25 + 0.5 * -V(s2) = -0.25; R0 = 0 + 0.5 * -R1 = 0.125.
  EXPECT_NEAR(agent.last_update().returns[1], -0.25, 1e-6);
  EXPECT_NEAR(agent.last_update().returns[0], 0.125, 1e-6);
  // The same rows without passes: R1 = 0.25 + 0.5 * 1, R0 = 0.5 * R1.
  A3C plain(std::make_shared<LinearModelImpl>(), Box(2), Space::Discrete(2),
            options);
  plain.BatchActAndTrain(View(s0), 1);
  plain.BatchObserveAndTrain(View(s1), {0.0}, {0}, {0}, false);
  plain.BatchActAndTrain(View(s1), 1);
  plain.BatchObserveAndTrain(View(s2), {0.25}, {0}, {1}, false);
  EXPECT_NEAR(plain.last_update().returns[1], 0.75, 1e-6);
  EXPECT_NEAR(plain.last_update().returns[0], 0.375, 1e-6);
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

using testing::RowTerms;

// The step-by-step formulation of the reference: one forward pass with
// autograd per step, losses accumulated, one backward; the targets from
// the closed forms of tests/agents/reference_targets.h (the reference's
// n-step return by default). In double: give it a model converted with
// ->to(torch::kDouble). `behaviour_log_probs`: log mu of the actions when
// they were chosen with other parameters (empty: on-policy).
torch::Tensor StepwiseGrads(
    ActorCriticModel& model, const std::vector<Obs>& obs,
    const std::vector<std::vector<float>>& actions,
    const std::vector<double>& rewards, const A3COptions& o, bool terminal,
    const std::vector<double>& behaviour_log_probs = {}) {
  const int64_t n = static_cast<int64_t>(actions.size());
  auto input = [&](int64_t i) {
    return torch::tensor(obs[i]).to(torch::kDouble).view({1, -1});
  };
  double boot = 0;
  if (!terminal) {
    torch::NoGradGuard g;
    boot = model.Forward(input(n)).value.item<double>();
  }
  std::vector<torch::Tensor> values, log_probs, entropies;
  testing::ReferenceSequence seq;
  for (int64_t i = 0; i < n; ++i) {
    const ModelOutput out = model.Forward(input(i));
    values.push_back(out.value.squeeze());
    auto [log_prob, entropy] = RowTerms(out, actions[i]);
    log_probs.push_back(log_prob);
    entropies.push_back(entropy);
    seq.rewards.push_back(rewards[i]);
    seq.values.push_back(values.back().item<double>());
    seq.stops.push_back(i == n - 1);
    if (!behaviour_log_probs.empty()) {
      seq.ratios.push_back(
          std::exp(log_prob.item<double>() - behaviour_log_probs[i]));
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    seq.successors.push_back(i + 1 < n ? seq.values[i + 1] : boot);
  }
  const TargetParams params{o.gamma, o.lambda, o.vtrace_rho_bar,
                            o.vtrace_c_bar};
  testing::ReferenceResult ref = testing::ReferenceTargets(
      o.PolicyTargetKind(), o.ValueTargetKind(), seq, params);
  if (o.normalize_advantages) {
    double mean = 0, var = 0;
    for (double a : ref.advantages) mean += a / n;
    for (double a : ref.advantages) var += (a - mean) * (a - mean) / n;
    for (double& a : ref.advantages) a = (a - mean) / (std::sqrt(var) + 1e-8);
  }
  torch::Tensor pi_loss = torch::zeros({}, torch::kDouble);
  torch::Tensor v_loss = torch::zeros({}, torch::kDouble);
  for (int64_t i = 0; i < n; ++i) {
    pi_loss =
        pi_loss - log_probs[i] * ref.advantages[i] - o.beta * entropies[i];
    v_loss = v_loss + (values[i] - ref.value_targets[i]).pow(2) / 2;
  }
  for (auto& p : model.parameters()) p.mutable_grad() = torch::Tensor();
  (pi_loss * o.pi_loss_coef + v_loss * o.v_loss_coef).backward();
  std::vector<torch::Tensor> grads;
  for (auto& p : model.parameters()) grads.push_back(p.grad().flatten());
  return torch::cat(grads);
}

void CopyParams(const float* flat, torch::nn::Module& m) {
  torch::NoGradGuard g;
  int64_t offset = 0;
  for (auto& p : m.parameters()) {
    const auto src =
        torch::from_blob(const_cast<float*>(flat) + offset, p.sizes());
    p.copy_(src);
    offset += p.numel();
  }
}

// A policy, a target and whether the worker refreshes its parameters from
// shared ones that other workers moved while it acted.
struct EquivalenceCase {
  bool gaussian;
  std::string policy_target;
  std::string value_target;
  bool fresh_params;
  bool normalize;
  bool fast;  // The fast path (agents/dense_path.h), else LibTorch.
};

void PrintTo(const EquivalenceCase& c, std::ostream* os) {
  *os << (c.gaussian ? "Gaussian" : "Softmax") << " " << c.policy_target << "/"
      << c.value_target << (c.fresh_params ? " fresh" : "")
      << (c.normalize ? " normalized" : "") << (c.fast ? " fast" : " libtorch");
}

class GradientEquivalenceTest
    : public A3CTest,
      public ::testing::WithParamInterface<EquivalenceCase> {};

TEST_P(GradientEquivalenceTest, BatchedUpdateEqualsStepByStep) {
  const EquivalenceCase& c = GetParam();
  const Space act = c.gaussian ? Box(2, 100.0f) : Space::Discrete(3);
  auto make_model = [&]() -> std::shared_ptr<ActorCriticModel> {
    torch::manual_seed(7);
    if (c.gaussian)
      return FcGaussianActorCritic(4, act, std::vector<int64_t>{16, 16}).ptr();
    return FcSoftmaxActorCritic(4, 3, std::vector<int64_t>{16, 16}).ptr();
  };
  for (bool terminal : {false, true}) {
    A3COptions options;
    options.t_max = 5;
    options.beta = 0.05;
    options.max_grad_norm = 0;
    options.policy_target = c.policy_target;
    options.value_target = c.value_target;
    options.lambda = 0.8;
    options.vtrace_rho_bar = 1.2;
    options.vtrace_c_bar = 0.9;
    options.fresh_params = c.fresh_params;
    options.normalize_advantages = c.normalize;
    options.no_fast_path = !c.fast;
    A3C agent(make_model(), Box(4), act, options);
    ASSERT_EQ(agent.fast_path(), c.fast);
    // The shared parameters, as a trainer's region holds them.
    std::vector<float> shared(agent.SharedSizes().params);
    std::vector<float> ms(agent.SharedSizes().optimizer);
    SharedCounters counters;
    agent.BindShared({shared.data(), ms.data(), &counters}, true);
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
      if (c.gaussian) {
        actions.emplace_back(a.values.data, a.values.data + a.values.size);
      } else {
        actions.push_back({static_cast<float>(a.index)});
      }
    }
    // Same weights (no update happened yet), in double.
    auto reference = make_model();
    reference->to(torch::kDouble);
    std::vector<double> behaviour;
    if (c.fresh_params) {
      // The behaviour policy's log-probabilities, then "another worker"
      // moves the shared parameters before this one's update.
      torch::NoGradGuard g;
      for (int i = 0; i < 4; ++i) {
        const auto x = torch::tensor(obs[i]).to(torch::kDouble).view({1, -1});
        behaviour.push_back(
            RowTerms(reference->Forward(x), actions[i]).first.item<double>());
      }
      for (size_t i = 0; i < shared.size(); ++i) {
        shared[i] += 0.3f * std::sin(static_cast<float>(i));
      }
      CopyParams(shared.data(), *reference);
    }
    agent.StopEpisodeAndTrain(View(obs[4]), rewards[3], terminal);
    ASSERT_EQ(agent.num_updates(), 1);
    if (c.fresh_params) {
      // The ratios were not all 1: the correction was exercised.
      double max_log_ratio = 0;
      for (float lr : agent.last_update().log_ratios) {
        max_log_ratio = std::max(max_log_ratio, std::abs(double{lr}));
      }
      EXPECT_GT(max_log_ratio, 0.01);
    } else {
      EXPECT_TRUE(agent.last_update().log_ratios.empty());
    }
    const torch::Tensor expected = StepwiseGrads(
        *reference, obs, actions, rewards, options, terminal, behaviour);
    const torch::Tensor batched = agent.local().grads();
    ASSERT_EQ(expected.numel(), batched.numel());
    testing::ExpectFloatMatchesDouble(batched, expected,
                                      terminal ? "terminal" : "bootstrapped");
  }
}

std::vector<EquivalenceCase> EquivalenceCases() {
  std::vector<EquivalenceCase> cases;
  for (bool fast : {true, false}) {
    for (bool gaussian : {false, true}) {
      cases.push_back({gaussian, "nstep", "auto", false, false, fast});
      cases.push_back({gaussian, "gae", "auto", false, false, fast});
      cases.push_back({gaussian, "gae", "auto", false, true, fast});
      cases.push_back({gaussian, "vtrace", "auto", false, false, fast});
      cases.push_back({gaussian, "vtrace", "auto", true, false, fast});
      cases.push_back({gaussian, "upgo", "auto", false, false, fast});
      cases.push_back({gaussian, "upgo", "vtrace", true, false, fast});
      cases.push_back({gaussian, "nstep", "td-lambda", false, false, fast});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Targets, GradientEquivalenceTest,
                         ::testing::ValuesIn(EquivalenceCases()),
                         [](const auto& info) {
                           const EquivalenceCase& c = info.param;
                           std::string name =
                               std::string(c.gaussian ? "Gaussian"
                                                      : "Softmax") +
                               "_" + c.policy_target + "_" + c.value_target +
                               (c.fresh_params ? "_fresh" : "") +
                               (c.normalize ? "_normalized" : "") +
                               (c.fast ? "_fast" : "_libtorch");
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

// Two workers' agents on one set of shared parameters: the updates one
// applies while the other acts are the other's policy lag.
TEST_F(A3CTest, PolicyLagCountsOtherWorkersUpdatesDuringARollout) {
  TwoWorkers w;
  A3C& a = w.a;
  A3C& b = w.b;
  const SharedCounters& counters = w.counters;
  const Obs s = {1, -1};
  a.ActAndTrain(View(s), 0);                              // a's rollout starts.
  for (int i = 0; i < 5; ++i) b.ActAndTrain(View(s), 1);  // b: 2 updates.
  ASSERT_EQ(b.num_updates(), 2);
  EXPECT_EQ(b.last_update().policy_lag, 0);
  a.ActAndTrain(View(s), 1);
  a.ActAndTrain(View(s), 1);  // a's update.
  ASSERT_EQ(a.num_updates(), 1);
  EXPECT_EQ(a.last_update().policy_lag, 2);
  EXPECT_EQ(counters.updates.load(), 3);
  EXPECT_EQ(counters.policy_lag_sum.load(), 2);
  // b's rollout in progress started before a's update: b's next update
  // counts it.
  b.ActAndTrain(View(s), 1);
  b.ActAndTrain(View(s), 1);
  EXPECT_EQ(b.num_updates(), 3);
  EXPECT_EQ(b.last_update().policy_lag, 1);
  const std::vector<Statistic> stats = a.Statistics();
  std::vector<std::string> names;
  for (const auto& st : stats) names.push_back(st.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "average_value", "average_entropy", "policy_loss",
                       "value_loss", "entropy", "grad_norm", "policy_lag",
                       "policy_lag_max", "importance_ratio", "ratio_clipped"}));
  EXPECT_EQ(stats[6].value, 2.0);
  EXPECT_EQ(stats[7].value, 2.0);
  EXPECT_EQ(stats[8].value, 1.0);  // On-policy: ratios are 1.
  EXPECT_GT(stats[5].value, 0.0);
}

// An evaluation acts with the worker's own copy of the parameters while
// other workers go on updating the shared ones: best/ and successful/ keep
// the copy it measured (SaveActingTo), not the shared parameters of the
// moment after (SaveTo, which _finish/ and _except/ keep).
TEST_F(A3CTest, SaveActingToKeepsTheParametersTheAgentActsWith) {
  TwoWorkers w;
  A3C& a = w.a;
  A3C& b = w.b;
  const std::vector<float>& shared = w.shared;
  const Obs s = {1, -1};
  a.ActAndTrain(View(s), 0);                              // a acts.
  for (int i = 0; i < 5; ++i) b.ActAndTrain(View(s), 1);  // b: 2 updates.
  ASSERT_EQ(b.num_updates(), 2);
  const int64_t n = a.local().size();
  const std::vector<float> acting(a.local().params_data(),
                                  a.local().params_data() + n);
  ASSERT_NE(acting, shared);
  proto::Checkpoint acting_checkpoint;
  proto::Checkpoint shared_checkpoint;
  a.SaveActingTo(&acting_checkpoint);
  a.SaveTo(&shared_checkpoint);
  A3C c = TwoWorkers::Make();
  c.LoadFrom(acting_checkpoint);
  EXPECT_EQ(std::vector<float>(c.shared_params(), c.shared_params() + n),
            acting);
  A3C d = TwoWorkers::Make();
  d.LoadFrom(shared_checkpoint);
  EXPECT_EQ(std::vector<float>(d.shared_params(), d.shared_params() + n),
            shared);
  // The optimizer statistics are the shared ones either way.
  EXPECT_EQ(acting_checkpoint.optimizer_state_size(),
            shared_checkpoint.optimizer_state_size());
}

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

// A NaN or infinite gradient would pass the clipping and poison every
// worker's parameters: the update throws with what in the rollout was not
// finite, and the shared parameters and statistics stay as they were.
TEST_F(A3CTest, ANonFiniteGradientIsRefusedAndNamesItsCause) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* name;
    float value_scale;
    Obs s2;  // The bootstrap observation.
    double reward;
    std::string expected;
  } cases[] = {
      {"NaN reward",
       1.0f,
       {0.5, 0.5},
       nan,
       "(norm NaN), so it was not applied and the shared parameters are as "
       "they were: 1 of the rollout's 2 rewards is NaN or infinite"},
      {"infinite observation",
       1.0f,
       {inf, 0.5},
       1.0,
       "1 of its observations' values is NaN or infinite"},
      {"values past float's range",
       1e38f,
       {4, 0},
       1.0,
       "the rollout's rewards and observations are finite, so the network's "
       "outputs or the loss diverged"},
  };
  for (const char* optimizer : {"rmsprop", "adam"}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(optimizer) + ", " + c.name);
      A3COptions options;
      options.t_max = 2;
      options.optimizer.kind = optimizer;
      A3C agent(std::make_shared<LinearModelImpl>(c.value_scale), Box(2),
                Space::Discrete(2), options);
      const int statistics = options.optimizer.StatisticsPerParameter() * 6;
      const std::vector<float> params(agent.shared_params(),
                                      agent.shared_params() + 6);
      const std::vector<float> stats(agent.shared_ms(),
                                     agent.shared_ms() + statistics);
      agent.ActAndTrain(View({1, 0}), 0);
      agent.ActAndTrain(View({0, 1}), c.reward);
      try {
        agent.ActAndTrain(View(c.s2), 1.0);  // t_max reached: the update.
        FAIL() << "the update was applied";
      } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("the gradient of this worker's optimizer step 1 "
                            "is not finite (norm "),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find(c.expected), std::string::npos) << what;
      }
      EXPECT_EQ(agent.num_updates(), 0);
      // Bitwise: not a single element was stepped.
      for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(agent.shared_params()[i], params[i]) << i;
      }
      for (int i = 0; i < statistics; ++i) {
        EXPECT_EQ(agent.shared_ms()[i], stats[i]) << i;
      }
    }
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

// The shared Adam against LibTorch's own torch::optim::Adam on a double
// copy, step for step (gradient scale and weight decay included).
TEST(SharedAdamTest, EqualsTorchOptimAdamStepForStep) {
  OptimizerOptions o;
  o.kind = "adam";
  o.lr = 0.01;
  o.adam_beta1 = 0.8;
  o.adam_beta2 = 0.95;
  o.adam_eps = 1e-6;
  o.weight_decay = 0.02;
  torch::manual_seed(4);
  const int64_t n = 37;
  const torch::Tensor start = torch::randn({n}).contiguous();
  std::vector<float> p(start.data_ptr<float>(), start.data_ptr<float>() + n);
  std::vector<float> mv(2 * n, 0.0f), local(n, -99.0f);
  torch::Tensor ref = start.to(torch::kDouble).clone().requires_grad_(true);
  torch::optim::Adam adam({ref}, torch::optim::AdamOptions(o.lr)
                                     .betas({o.adam_beta1, o.adam_beta2})
                                     .eps(o.adam_eps)
                                     .weight_decay(o.weight_decay));
  const float scale = 0.7f;
  for (int64_t step = 1; step <= 8; ++step) {
    const torch::Tensor g = torch::randn({n}).contiguous();
    AdamStepAndCopy(o, scale, step, g.data_ptr<float>(), p.data(), mv.data(),
                    mv.data() + n, local.data(), n);
    EXPECT_EQ(local, p);
    adam.zero_grad();
    ref.mutable_grad() = (g.to(torch::kDouble) * scale).clone();
    adam.step();
    const torch::Tensor want = ref.detach();
    for (int64_t i = 0; i < n; ++i) {
      // Each step moves a parameter by at most ~lr: float rounding of the
      // step's terms is ~1e-7 of it.
      ASSERT_NEAR(p[i], want[i].item<double>(), 1e-6)
          << "step " << step << ", parameter " << i;
    }
  }
  // The statistics are torch's exp_avg and exp_avg_sq.
  const auto& state = static_cast<torch::optim::AdamParamState&>(
      *adam.state().at(c10::guts::to_string(ref.unsafeGetTensorImpl())));
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(mv[i], state.exp_avg()[i].item<double>(), 1e-6);
    EXPECT_NEAR(mv[n + i], state.exp_avg_sq()[i].item<double>(), 1e-6);
  }
}

TEST(SharedAdamTest, InvalidOptionsNameTheField) {
  const auto refused = [](auto change) {
    return testing::RefusedField<OptimizerOptions>(change);
  };
  EXPECT_EQ(refused([](OptimizerOptions& o) { o.kind = "sgd"; }), "optimizer");
  EXPECT_EQ(refused([](OptimizerOptions& o) { o.adam_beta1 = 1; }),
            "adam_beta1");
  EXPECT_EQ(refused([](OptimizerOptions& o) { o.adam_beta2 = -0.1; }),
            "adam_beta2");
  EXPECT_EQ(refused([](OptimizerOptions& o) { o.adam_eps = 0; }),
            "adam_epsilon");
  EXPECT_EQ(refused([](OptimizerOptions& o) { o.kind = "adam"; }),
            "(accepted)");
}

// An agent with --optimizer adam: two statistics per parameter in the
// shared area, the run's update count as the step, and a checkpoint that
// restores all three; an RMSprop agent loads its parameters only.
TEST_F(A3CTest, AdamStatisticsAndStepRoundTripThroughCheckpoints) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("asyncrl_adam_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  A3COptions options;
  options.t_max = 1;
  options.optimizer.kind = "adam";
  options.optimizer.lr = 0.01;
  options.max_grad_norm = 0;
  auto make = [&](const A3COptions& o) {
    torch::manual_seed(3);
    return A3C(FcSoftmaxActorCritic(2, 2, std::vector<int64_t>{8}).ptr(),
               Box(2), Space::Discrete(2), o);
  };
  A3C a = make(options);
  const int64_t n = a.SharedSizes().params;
  ASSERT_EQ(a.SharedSizes().optimizer, 2 * n);
  const std::vector<float> before(a.shared_params(), a.shared_params() + n);
  const Obs s = {1, -1};
  a.ActAndTrain(View(s), 0);
  a.ActAndTrain(View(s), 1);  // The first update: Adam's step 1.
  ASSERT_EQ(a.num_updates(), 1);
  const float* g = a.local().grads_data();
  for (int64_t i = 0; i < n; ++i) {
    // Step 1: m_hat = g, v_hat = g^2, so each parameter moves by
    // lr * g / (|g| + eps).
    const double gi = g[i];
    EXPECT_NEAR(a.shared_params()[i],
                before[i] - 0.01 * gi / (std::abs(gi) + 1e-8), 1e-6)
        << i;
    EXPECT_NEAR(a.shared_ms()[i], 0.1 * gi, 1e-7) << i;
    EXPECT_NEAR(a.shared_ms()[n + i], 0.001 * gi * gi, 1e-9) << i;
  }
  for (int k = 0; k < 3; ++k) a.ActAndTrain(View(s), 1);
  ASSERT_EQ(a.num_updates(), 4);
  a.Save(dir.string());
  const proto::Checkpoint saved = LoadCheckpointDir(dir.string());
  EXPECT_EQ(saved.optimizer_state_size(), 2 * saved.parameters_size() + 1);
  A3C b = make(options);
  std::vector<float> params(n), stats(2 * n);
  SharedCounters counters;
  b.BindShared({params.data(), stats.data(), &counters}, true);
  b.Load(dir.string());
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(params[i], a.shared_params()[i]);
    ASSERT_EQ(stats[i], a.shared_ms()[i]);
    ASSERT_EQ(stats[n + i], a.shared_ms()[n + i]);
  }
  EXPECT_EQ(counters.updates.load(), 4);  // Adam's step goes on.
  // An RMSprop agent (a --load that changes --optimizer) takes the
  // parameters and starts its statistics from zero.
  A3COptions rmsprop = options;
  rmsprop.optimizer.kind = "rmsprop";
  A3C c = make(rmsprop);
  std::vector<float> c_params(n), c_ms(n, 1.0f);
  c.BindShared({c_params.data(), c_ms.data()}, false);
  c.Load(dir.string());
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(c_params[i], a.shared_params()[i]);
    ASSERT_EQ(c_ms[i], 0.0f);
  }
  // A checkpoint of another network is refused, naming the counts.
  A3C d(FcSoftmaxActorCritic(2, 2, std::vector<int64_t>{8, 8}).ptr(), Box(2),
        Space::Discrete(2), options);
  EXPECT_THROW(d.Load(dir.string()), std::runtime_error);
  std::filesystem::remove_all(dir);
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

// Invalid targets and combinations name the field, the value and what is
// accepted.
TEST_F(A3CTest, InvalidTargetOptionsNameTheField) {
  struct Case {
    void (*set)(A3COptions&);
    const char* message;
  };
  const Case cases[] = {
      {[](A3COptions& o) { o.policy_target = "mc"; },
       "policy_target=mc is invalid; accepted: nstep, gae, vtrace or upgo"},
      {[](A3COptions& o) { o.value_target = "upgo"; },
       "value_target=upgo is invalid; accepted: auto, nstep, td-lambda or "
       "vtrace"},
      {[](A3COptions& o) { o.lambda = 1.5; },
       "lambda=1.5 is invalid; accepted: a number in [0, 1]"},
      {[](A3COptions& o) { o.vtrace_rho_bar = 0; },
       "vtrace_rho_bar=0 is invalid; accepted: a finite number > 0"},
      {[](A3COptions& o) { o.vtrace_c_bar = 2; },
       "vtrace_c_bar=2 is invalid; accepted: a number in (0, "
       "vtrace_rho_bar=1]"},
      {[](A3COptions& o) {
         o.policy_target = "gae";
         o.fresh_params = true;
       },
       "fresh_params=true is invalid; accepted: false with policy_target=gae "
       "(refreshed parameters make the rollout off-policy; only "
       "policy_target vtrace or upgo corrects for it)"},
  };
  for (const Case& c : cases) {
    A3COptions o;
    c.set(o);
    try {
      o.Validate();
      ADD_FAILURE() << "accepted: " << c.message;
    } catch (const InvalidOption& e) {
      EXPECT_EQ(std::string(e.what()), c.message);
    }
  }
  A3COptions ok;
  ok.policy_target = "upgo";
  ok.fresh_params = true;
  ok.vtrace_c_bar = 0.5;
  EXPECT_NO_THROW(ok.Validate());
  EXPECT_EQ(ok.ValueTargetKind(), ValueTarget::kTdLambda);
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
}  // namespace a3c_test
}  // namespace asyncrl
