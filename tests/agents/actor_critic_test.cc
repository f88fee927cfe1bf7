// An algorithm written on the actor-critic parts from outside agents/ (what
// a second algorithm, such as a sample-reuse learner, is): two optimizer
// steps per rollout, so the second recomputes the rollout at parameters it
// was not acted with. Both policy back ends must give it the same rows and
// the same steps.
#include "asyncrl/agents/actor_critic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/misc/validate.h"
#include "gradient_check.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace actor_critic_test {
namespace {

// Per pass: L = sum_i [ -r_i log pi(a_i) - 0.01 H_i + (v_i - r_i)^2 / 2 ],
// the reward of the row standing for its return (the test needs a loss with
// every output in it, not a good one).
class TwoPassLearner : public ActorCriticAgent {
 public:
  TwoPassLearner(std::shared_ptr<ActorCriticModel> model, const Space& obs,
                 const Space& act, const ActorCriticOptions& options)
      : ActorCriticAgent(std::move(model), obs, act, options),
        options_(options) {}

  std::string Type() const override { return "two-pass"; }

  // Per pass of every update: what Recompute gave, and whether the rows
  // were acted with the parameters of that pass.
  std::vector<std::vector<double>> log_probs;
  std::vector<std::vector<double>> values;
  std::vector<bool> acted_with_params;
  // The rewards of every rollout learned from, as the learner saw them.
  std::vector<float> learned_rewards;

 protected:
  const ActorCriticOptions& common() const override { return options_; }
  ActorCriticOptions& mutable_common() override { return options_; }
  std::vector<Statistic> UpdateStatistics() const override { return {}; }

  void Learn() override {
    const int64_t n = rollout().rows();
    learned_rewards.insert(learned_rewards.end(), rollout().rewards.begin(),
                           rollout().rewards.begin() + n);
    for (int pass = 0; pass < 2; ++pass) {
      const float* params = local().params_data();
      acted_with_params.push_back(RolloutActedWithLocal());
      backend().Recompute(params, rollout(), RolloutActedWithLocal(), &rows_);
      log_probs.push_back(rows_.log_probs);
      values.emplace_back(rows_.values, rows_.values + n);
      grads_.log_prob.resize(n);
      grads_.entropy.assign(n, -0.01);
      grads_.value.resize(n);
      for (int64_t i = 0; i < n; ++i) {
        const double r = rollout().rewards[i];
        grads_.log_prob[i] = -r;
        grads_.value[i] = rows_.values[i] - r;
      }
      backend().Backward(params, rollout(), grads_, local());
      ApplyGradient();
    }
  }

 private:
  ActorCriticOptions options_;
  RecomputedRows rows_;
  OutputGradients grads_;
};

std::unique_ptr<TwoPassLearner> MakeLearner(const std::string& arch,
                                            const Space& obs, const Space& act,
                                            bool fast, bool normalize = false,
                                            bool normalize_rewards = false) {
  torch::manual_seed(5);  // The same initial parameters for both.
  ActorCriticOptions options;
  options.normalize_rewards = normalize_rewards;
  options.seed = 9;
  options.t_max = 4;
  options.no_fast_path = !fast;
  options.normalize_observations = normalize;
  options.optimizer.lr = 1e-2;
  return std::make_unique<TwoPassLearner>(
      DefaultModelRegistry().Make(arch, obs, act), obs, act, options);
}

double MaxAbs(const std::vector<double>& a) {
  double m = 0;
  for (double x : a) m = std::max(m, std::abs(x));
  return m;
}

class ActorCriticAgentTest : public ::testing::TestWithParam<bool> {};

// With --normalize-observations both back ends see the same normalized
// observations.
TEST_P(ActorCriticAgentTest, ASecondAlgorithmReusesARolloutOnBothBackEnds) {
  ConfigureTorchForFork();
  const bool normalize = GetParam();
  for (const std::string arch : {"fc-softmax", "fc-gaussian"}) {
    SCOPED_TRACE(arch);
    const Space obs_space = Space::Box({4}, -10.0f, 10.0f);
    const Space act_space = arch == "fc-softmax" ? Space::Discrete(3)
                                                 : Space::Box({2}, -1.0f, 1.0f);
    auto fast = MakeLearner(arch, obs_space, act_space, true, normalize);
    auto slow = MakeLearner(arch, obs_space, act_space, false, normalize);
    ASSERT_TRUE(fast->fast_path());
    ASSERT_FALSE(slow->fast_path());
    constexpr int64_t kEnvs = 2;
    torch::manual_seed(3);
    for (int step = 0; step < 12; ++step) {
      const auto obs = torch::randn({kEnvs * 4}).contiguous();
      const FloatView view{obs.data_ptr<float>(), kEnvs * 4};
      fast->BatchActAndTrain(view, kEnvs);
      slow->BatchActAndTrain(view, kEnvs);
      const auto next = torch::randn({kEnvs * 4}).contiguous();
      const std::vector<double> rewards = {1.0, step % 3 == 0 ? -1.0 : 0.5};
      const std::vector<uint8_t> ends = {0, step == 5};
      for (TwoPassLearner* agent : {fast.get(), slow.get()}) {
        agent->BatchObserveAndTrain({next.data_ptr<float>(), kEnvs * 4},
                                    rewards, ends, ends, false);
      }
    }
    // 12 steps of t_max 4 (one environment's episode ends at step 5, the
    // other's goes on): 3 rollouts, 2 optimizer steps each.
    ASSERT_EQ(fast->num_updates(), 6);
    ASSERT_EQ(slow->num_updates(), 6);
    ASSERT_EQ(fast->log_probs.size(), 6u);
    for (size_t p = 0; p < fast->log_probs.size(); ++p) {
      SCOPED_TRACE("pass " + std::to_string(p));
      // The first pass reads the rows as acted; the second comes after a
      // step and must recompute them (the fast path forwards again).
      EXPECT_EQ(fast->acted_with_params[p], p % 2 == 0);
      const auto& a = fast->log_probs[p];
      const auto& b = slow->log_probs[p];
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_NEAR(a[i], b[i], 1e-5 * (1 + std::abs(b[i]))) << "row " << i;
        EXPECT_NEAR(fast->values[p][i], slow->values[p][i],
                    1e-5 * (1 + std::abs(slow->values[p][i])));
      }
      if (p % 2 == 1) {
        // The step between the passes changed the policy.
        std::vector<double> change(a.size());
        for (size_t i = 0; i < a.size(); ++i) {
          change[i] = a[i] - fast->log_probs[p - 1][i];
        }
        EXPECT_GT(MaxAbs(change), 1e-4);
      }
    }
    const int64_t n = fast->local().size();
    testing::ExpectFloatMatchesDouble(
        torch::from_blob(const_cast<float*>(fast->shared_params()), {n}),
        torch::from_blob(const_cast<float*>(slow->shared_params()), {n}),
        "parameters after the updates");
  }
}

INSTANTIATE_TEST_SUITE_P(Normalize, ActorCriticAgentTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "Normalized" : "Raw";
                         });

constexpr int64_t kObs = 4;

// Steps `agent` through `steps` training steps of `envs` environments.
void Train(ActorCriticAgent& agent, int steps, int64_t envs, uint64_t seed) {
  torch::manual_seed(static_cast<int64_t>(seed));
  for (int step = 0; step < steps; ++step) {
    // Observations far from mean 0 and variance 1, as a raw task's are.
    const auto obs = (torch::randn({envs * kObs}) * 5 + 20).contiguous();
    agent.BatchActAndTrain({obs.data_ptr<float>(), envs * kObs}, envs);
    const auto next = (torch::randn({envs * kObs}) * 5 + 20).contiguous();
    agent.BatchObserveAndTrain(
        {next.data_ptr<float>(), envs * kObs}, std::vector<double>(envs, 1.0),
        std::vector<uint8_t>(envs, 0), std::vector<uint8_t>(envs, 0), false);
  }
}

TEST(ActorCriticNormalizeTest, TrainingMergesEvaluationDoesNot) {
  ConfigureTorchForFork();
  const Space obs = Space::Box({kObs}, -100.0f, 100.0f);
  auto agent = MakeLearner("fc-softmax", obs, Space::Discrete(3), true, true);
  ASSERT_NE(agent->normalizer(), nullptr);
  EXPECT_GE(agent->SharedSizes().state_bytes,
            static_cast<int64_t>(2 * kObs * sizeof(double)));
  Train(*agent, 10, 3, 1);
  const MomentStatistics trained = agent->normalizer()->Statistics();
  // Every training row once: 10 steps of 3 environments, after the prior.
  EXPECT_NEAR(trained.count, ObservationNormalizer::kInitialCount + 30, 1e-9);
  EXPECT_NEAR(trained.mean[0], 20, 5);  // Moved from the prior's 0.
  const auto probe = torch::full({kObs}, 20.0f);
  for (int i = 0; i < 5; ++i) agent->Act({probe.data_ptr<float>(), kObs});
  const MomentStatistics evaluated = agent->normalizer()->Statistics();
  EXPECT_EQ(evaluated.count, trained.count);
  EXPECT_EQ(evaluated.mean, trained.mean);
  EXPECT_EQ(evaluated.var, trained.var);
}

TEST(ActorCriticNormalizeTest, CheckpointsCarryTheStatisticsAndMustMatch) {
  ConfigureTorchForFork();
  const Space obs = Space::Box({kObs}, -100.0f, 100.0f);
  const Space act = Space::Discrete(3);
  auto trained = MakeLearner("fc-softmax", obs, act, true, true);
  Train(*trained, 6, 2, 2);
  proto::Checkpoint checkpoint;
  trained->SaveTo(&checkpoint);
  ASSERT_TRUE(checkpoint.has_observation_statistics());

  auto restored = MakeLearner("fc-softmax", obs, act, true, true);
  restored->LoadFrom(checkpoint);
  const MomentStatistics a = trained->normalizer()->Statistics();
  const MomentStatistics b = restored->normalizer()->Statistics();
  EXPECT_EQ(b.count, a.count);
  EXPECT_EQ(b.mean, a.mean);
  EXPECT_EQ(b.var, a.var);
  // The same inputs, the same statistics: the same greedy action values.
  const auto probe = torch::full({kObs}, 18.0f);
  EXPECT_EQ(trained->Act({probe.data_ptr<float>(), kObs}).index,
            restored->Act({probe.data_ptr<float>(), kObs}).index);

  auto raw = MakeLearner("fc-softmax", obs, act, true, false);
  try {
    raw->LoadFrom(checkpoint);
    ADD_FAILURE() << "a network trained on normalized inputs was taken raw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("holds observation statistics"),
              std::string::npos)
        << e.what();
  }
  proto::Checkpoint plain;
  raw->SaveTo(&plain);
  auto normalizing = MakeLearner("fc-softmax", obs, act, true, true);
  const std::vector<float> before(
      normalizing->shared_params(),
      normalizing->shared_params() + normalizing->local().size());
  try {
    normalizing->LoadFrom(plain);
    ADD_FAILURE() << "a checkpoint without statistics was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no observation statistics"),
              std::string::npos)
        << e.what();
  }
  // Refused whole: the parameters are as they were.
  EXPECT_EQ(std::vector<float>(
                normalizing->shared_params(),
                normalizing->shared_params() + normalizing->local().size()),
            before);
}

// With normalize_rewards the learner sees each reward divided by the
// running deviation of the discounted returns (VecNormalize, reference in
// double; the first steps' returns barely vary, so the clip at 10 shows),
// both normalizers share the state area, and checkpoints carry the return
// statistics; a checkpoint without them starts them afresh.
TEST(ActorCriticNormalizeTest, RewardsTheLearnerSeesAreScaled) {
  ConfigureTorchForFork();
  const Space obs = Space::Box({kObs}, -100.0f, 100.0f);
  const Space act = Space::Discrete(3);
  auto agent = MakeLearner("fc-softmax", obs, act, true, true, true);
  ASSERT_NE(agent->reward_normalizer(), nullptr);
  EXPECT_EQ(agent->SharedSizes().state_bytes,
            static_cast<int64_t>(agent->normalizer()->SharedBytes() +
                                 agent->reward_normalizer()->SharedBytes()));
  constexpr int kSteps = 8;
  constexpr int64_t kEnvs = 3;
  Train(*agent, kSteps, kEnvs, 4);
  // Every row's reward is 1 and no episode ends: all returns are equal.
  double count = ObservationNormalizer::kInitialCount, mean = 0, var = 1;
  double ret = 0;
  std::vector<double> expected;
  for (int t = 0; t < kSteps; ++t) {
    ret = ret * 0.99 + 1.0;
    const double n = kEnvs, total = count + n, delta = ret - mean;
    var = (var * count + delta * delta * count * n / total) / total;
    mean += delta * n / total;
    count = total;
    expected.push_back(std::min(1.0 / std::sqrt(var + 1e-8), 10.0));
  }
  ASSERT_EQ(agent->learned_rewards.size(), size_t{kSteps * kEnvs});
  for (int t = 0; t < kSteps; ++t) {
    for (int64_t j = 0; j < kEnvs; ++j) {
      EXPECT_NEAR(agent->learned_rewards[t * kEnvs + j], expected[t],
                  1e-6 * expected[t])
          << "step " << t;
    }
  }
  EXPECT_FLOAT_EQ(agent->learned_rewards.front(), 10.0f);  // Clipped.
  EXPECT_LT(agent->learned_rewards.back(), 10.0f);
  proto::Checkpoint checkpoint;
  agent->SaveTo(&checkpoint);
  ASSERT_TRUE(checkpoint.has_reward_statistics());
  EXPECT_NEAR(checkpoint.reward_statistics().count(), count, 1e-9);
  auto restored = MakeLearner("fc-softmax", obs, act, true, true, true);
  restored->LoadFrom(checkpoint);
  EXPECT_EQ(restored->reward_normalizer()->Statistics().var,
            agent->reward_normalizer()->Statistics().var);
  checkpoint.clear_reward_statistics();
  auto fresh = MakeLearner("fc-softmax", obs, act, true, true, true);
  fresh->LoadFrom(checkpoint);
  EXPECT_EQ(fresh->reward_normalizer()->Statistics().count,
            ObservationNormalizer::kInitialCount);
}

TEST(ActorCriticNormalizeTest, ImageObservationsAreRefused) {
  ConfigureTorchForFork();
  const Space planes = Space::Box({10, 10, 4}, 0.0f, 1.0f);
  try {
    MakeLearner("minatar-conv", planes, Space::Discrete(3), false, true);
    ADD_FAILURE() << "image planes were normalized";
  } catch (const InvalidOption& e) {
    EXPECT_EQ(e.field(), "normalize_observations");
  }
}

// The step-size factor: the warm-up grows linearly to 1 over the run's
// first lr_warmup_updates updates; a step whose lag exceeds lag_tolerance
// is scaled by tolerance / lag; both multiply; 0 turns either off.
TEST(StepSizeFactorTest, WarmUpAndLagScalingMultiply) {
  ActorCriticOptions o;
  o.lr_warmup_updates = 4;
  o.lag_tolerance = 8;
  EXPECT_DOUBLE_EQ(StepSizeFactor(o, 0, 0), 0.25);
  EXPECT_DOUBLE_EQ(StepSizeFactor(o, 2, 8), 0.75);
  EXPECT_DOUBLE_EQ(StepSizeFactor(o, 3, 0), 1.0);
  EXPECT_DOUBLE_EQ(StepSizeFactor(o, 1000000, 8), 1.0);
  EXPECT_DOUBLE_EQ(StepSizeFactor(o, 1000000, 32), 0.25);
  EXPECT_DOUBLE_EQ(StepSizeFactor(o, 1, 16), 0.5 * 0.5);
  o.lr_warmup_updates = 0;
  EXPECT_DOUBLE_EQ(StepSizeFactor(o, 0, 0), 1.0);
  o.lag_tolerance = 0;
  EXPECT_DOUBLE_EQ(StepSizeFactor(o, 0, 1000), 1.0);
}

TEST(StepSizeFactorTest, OptionsOutsideTheirRangesAreRefused) {
  const auto field_of = [](const ActorCriticOptions& o) -> std::string {
    try {
      o.Validate();
    } catch (const InvalidOption& e) {
      return e.field();
    }
    return "";
  };
  ActorCriticOptions o;
  EXPECT_EQ(field_of(o), "");
  o.lr_warmup_updates = -1;
  EXPECT_EQ(field_of(o), "lr_warmup_updates");
  o = ActorCriticOptions();
  for (double bad : {0.5, -1.0, std::nan(""), HUGE_VAL}) {
    o.lag_tolerance = bad;
    EXPECT_EQ(field_of(o), "lag_tolerance") << bad;
  }
  o.lag_tolerance = 1;
  EXPECT_EQ(field_of(o), "");
}

}  // namespace
}  // namespace actor_critic_test
}  // namespace asyncrl
