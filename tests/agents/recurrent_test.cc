// Recurrent A3C: the batched update recomputed from the rollout's stored
// initial state gives the gradients of the step-by-step formulation (state
// carried with autograd inside a rollout, reset at episode ends, not
// back-propagated into the previous rollout), for both LSTM layouts, with
// two environments whose episodes end at different steps; the recurrent
// state is carried, reset and kept apart from evaluation's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <tuple>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/recurrent_models.h"
#include "asyncrl/agents/torch_setup.h"
#include "gradient_check.h"
#include "reference_targets.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace recurrent_test {
namespace {

using Obs = std::vector<float>;

FloatView View(const Obs& o) {
  return {o.data(), static_cast<int64_t>(o.size())};
}

constexpr int64_t kObs = 4;
constexpr int64_t kK = 2;  // Environments per batch.

enum class End { kNone, kTerminal, kTruncated };

// What one environment saw at one step of a rollout.
struct RowStep {
  Obs obs;
  std::vector<float> action;
  double reward = 0;
  End end = End::kNone;
  Obs next_obs;  // The observation after the step.
  // log mu(action) when the parameters that acted differ from those of the
  // update (--fresh-params); NaN: on-policy.
  double behaviour_log_prob = std::nan("");
};

// A policy (Gaussian or softmax) and a policy target (its value target
// paired with it).
class RecurrentA3CTest
    : public ::testing::TestWithParam<std::tuple<bool, std::string>> {
 protected:
  void SetUp() override { ConfigureTorchForFork(); }

  bool gaussian() const { return std::get<0>(GetParam()); }
  Space ActionSpace() const {
    return gaussian() ? Space::Box({2}, -100.0f, 100.0f) : Space::Discrete(3);
  }
  // Softmax: one shared trunk. Gaussian: the LSTMGaussian layout, one trunk
  // and LSTM per branch.
  std::shared_ptr<LstmActorCriticImpl> MakeModel() const {
    torch::manual_seed(7);
    const Space obs = Space::Box({kObs}, -10.0f, 10.0f);
    std::vector<Trunk> trunks = {FcTrunk(obs, 16)};
    if (gaussian()) trunks.push_back(FcTrunk(obs, 16));
    return LstmActorCritic(trunks, 8, ActionSpace()).ptr();
  }
  A3COptions Options() const {
    A3COptions options;
    options.t_max = 3;
    options.beta = 0.05;
    options.max_grad_norm = 0;
    options.policy_target = std::get<1>(GetParam());
    options.lambda = 0.8;
    return options;
  }

  // log pi(action) and the entropy of one step's output, with autograd.
  static std::pair<torch::Tensor, torch::Tensor> PolicyTermsOf(
      const ModelOutput& out, const std::vector<float>& action) {
    if (out.logits.defined()) {
      const auto lp = torch::log_softmax(out.logits.squeeze(0), -1);
      return {lp[static_cast<int64_t>(action[0])], -(lp.exp() * lp).sum()};
    }
    const auto a = Double(action);
    const auto mean = out.mean.squeeze(0);
    const auto log_std = out.log_std.squeeze(0);
    return {(-(a - mean).pow(2) / (2 * torch::exp(2 * log_std)) - log_std -
             0.5 * std::log(2 * M_PI))
                .sum(),
            (0.5 + 0.5 * std::log(2 * M_PI) + log_std).sum()};
  }

  // Records in every step the log-probability of its action under `model`
  // (the parameters that acted), replaying each row's state from `states`.
  static void SetBehaviour(RecurrentActorCritic& model,
                           std::vector<std::vector<RowStep>>* rows,
                           std::vector<torch::Tensor> states) {
    torch::NoGradGuard g;
    for (size_t r = 0; r < rows->size(); ++r) {
      for (RowStep& s : (*rows)[r]) {
        const auto x = Double(s.obs).view({1, -1});
        const RecurrentStep step = model.CoreStep(model.Encode(x), states[r]);
        s.behaviour_log_prob = PolicyTermsOf(model.Heads(step.hidden), s.action)
                                   .first.item<double>();
        states[r] = step.state;
        if (s.end != End::kNone) states[r] = torch::zeros_like(states[r]);
      }
    }
  }

  // The reference formulation for one environment's part of a rollout:
  // one forward step with autograd per time step from `state` ([1, S]),
  // the state zeroed after an episode end, bootstrap values from the state
  // after the step (kept out of the graph). Returns the weighted loss.
  static torch::Tensor StepwiseLoss(RecurrentActorCritic& model,
                                    const std::vector<RowStep>& steps,
                                    torch::Tensor state, const A3COptions& o) {
    const auto n = static_cast<int64_t>(steps.size());
    std::vector<ModelOutput> outs;
    std::vector<double> boot(n, 0.0);
    for (int64_t i = 0; i < n; ++i) {
      const auto x = Double(steps[i].obs).view({1, -1});
      const RecurrentStep step = model.CoreStep(model.Encode(x), state);
      outs.push_back(model.Heads(step.hidden));
      state = step.state;
      const bool last = i == n - 1;
      if (steps[i].end == End::kTruncated ||
          (last && steps[i].end == End::kNone)) {
        torch::NoGradGuard g;
        const auto nx = Double(steps[i].next_obs).view({1, -1});
        boot[i] = model.Heads(model.CoreStep(model.Encode(nx), state).hidden)
                      .value.item<double>();
      }
      if (steps[i].end != End::kNone) state = torch::zeros_like(state);
    }
    std::vector<torch::Tensor> log_probs;
    std::vector<torch::Tensor> entropies;
    for (int64_t i = 0; i < n; ++i) {
      auto [log_prob, entropy] = PolicyTermsOf(outs[i], steps[i].action);
      log_probs.push_back(log_prob);
      entropies.push_back(entropy);
    }
    // The targets of this row's sequences (tests/agents/reference_targets.h).
    testing::ReferenceSequence seq;
    for (int64_t i = 0; i < n; ++i) {
      const bool last = i == n - 1;
      seq.rewards.push_back(steps[i].reward);
      seq.values.push_back(outs[i].value.item<double>());
      seq.stops.push_back(last || steps[i].end != End::kNone);
      if (!std::isnan(steps[i].behaviour_log_prob)) {
        seq.ratios.push_back(std::exp(log_probs[i].item<double>() -
                                      steps[i].behaviour_log_prob));
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      seq.successors.push_back(steps[i].end == End::kTerminal ? 0.0
                               : seq.stops[i]                 ? boot[i]
                                              : seq.values[i + 1]);
    }
    const testing::ReferenceResult ref = testing::ReferenceTargets(
        o.PolicyTargetKind(), o.ValueTargetKind(), seq,
        {o.gamma, o.lambda, o.vtrace_rho_bar, o.vtrace_c_bar});
    torch::Tensor pi_loss = torch::zeros({}, torch::kDouble);
    torch::Tensor v_loss = torch::zeros({}, torch::kDouble);
    for (int64_t i = n - 1; i >= 0; --i) {
      const auto v = outs[i].value.squeeze();
      pi_loss =
          pi_loss - log_probs[i] * ref.advantages[i] - o.beta * entropies[i];
      v_loss = v_loss + (v - ref.value_targets[i]).pow(2) / 2;
    }
    return pi_loss * o.pi_loss_coef + v_loss * o.v_loss_coef;
  }

  // Gradients of the reference over K rows, averaged as A3C averages them.
  static torch::Tensor StepwiseGrads(
      RecurrentActorCritic& model,
      const std::vector<std::vector<RowStep>>& rows,
      const std::vector<torch::Tensor>& initial_states, const A3COptions& o) {
    torch::Tensor loss = torch::zeros({}, torch::kDouble);
    for (size_t r = 0; r < rows.size(); ++r) {
      loss = loss + StepwiseLoss(model, rows[r], initial_states[r], o);
    }
    for (auto& p : model.parameters()) p.mutable_grad() = torch::Tensor();
    (loss / static_cast<double>(rows.size())).backward();
    std::vector<torch::Tensor> grads;
    for (auto& p : model.parameters()) grads.push_back(p.grad().flatten());
    return torch::cat(grads);
  }

  // The reference works in double (tests/agents/gradient_check.h).
  static torch::Tensor Double(const std::vector<float>& v) {
    return torch::tensor(v).to(torch::kDouble);
  }

  // The state each row reaches by replaying `rows` without autograd.
  static std::vector<torch::Tensor> Replay(
      RecurrentActorCritic& model,
      const std::vector<std::vector<RowStep>>& rows,
      std::vector<torch::Tensor> states) {
    torch::NoGradGuard g;
    for (size_t r = 0; r < rows.size(); ++r) {
      for (const RowStep& s : rows[r]) {
        const auto x = Double(s.obs).view({1, -1});
        states[r] = model.CoreStep(model.Encode(x), states[r]).state;
        if (s.end != End::kNone) states[r] = torch::zeros_like(states[r]);
      }
    }
    return states;
  }

  static void CopyParams(const torch::Tensor& flat, torch::nn::Module& m) {
    torch::NoGradGuard g;
    int64_t offset = 0;
    for (auto& p : m.parameters()) {
      p.copy_(flat.slice(0, offset, offset + p.numel()).view(p.sizes()));
      offset += p.numel();
    }
  }

  // Plays one rollout of t_max steps on K rows with the given episode ends
  // (ends[step][row]); returns what each row saw.
  std::vector<std::vector<RowStep>> PlayRollout(
      A3C& agent, const std::vector<std::vector<End>>& ends,
      const std::function<void()>& before_last_outcome = nullptr) {
    std::vector<std::vector<RowStep>> rows(kK);
    for (size_t s = 0; s < ends.size(); ++s) {
      const auto obs_t = torch::randn({kK * kObs}).contiguous();
      const Obs obs(obs_t.data_ptr<float>(),
                    obs_t.data_ptr<float>() + kK * kObs);
      const auto& actions = agent.BatchActAndTrain(View(obs), kK);
      const auto next_t = torch::randn({kK * kObs}).contiguous();
      const Obs next(next_t.data_ptr<float>(),
                     next_t.data_ptr<float>() + kK * kObs);
      std::vector<double> rewards;
      std::vector<uint8_t> terminal;
      std::vector<uint8_t> episode_end;
      for (int64_t r = 0; r < kK; ++r) {
        RowStep step;
        step.obs.assign(obs.begin() + r * kObs, obs.begin() + (r + 1) * kObs);
        step.next_obs.assign(next.begin() + r * kObs,
                             next.begin() + (r + 1) * kObs);
        const Action& a = actions[r];
        if (gaussian()) {
          step.action.assign(a.values.data, a.values.data + a.values.size);
        } else {
          step.action = {static_cast<float>(a.index)};
        }
        step.reward = 0.5 * static_cast<double>(s) - 0.25 * r;
        step.end = ends[s][r];
        rewards.push_back(step.reward);
        terminal.push_back(step.end == End::kTerminal);
        episode_end.push_back(step.end != End::kNone);
        rows[r].push_back(step);
      }
      if (s + 1 == ends.size() && before_last_outcome) before_last_outcome();
      agent.BatchObserveAndTrain(View(next), rewards, terminal, episode_end,
                                 /*end_rollout=*/false);
    }
    return rows;
  }
};

TEST_P(RecurrentA3CTest, BatchedUpdateEqualsStepByStep) {
  const A3COptions options = Options();
  A3C agent(MakeModel(), Space::Box({kObs}, -10.0f, 10.0f), ActionSpace(),
            options);
  auto reference = MakeModel();  // The same weights, in double.
  reference->to(torch::kDouble);
  const int64_t s = reference->StateSize();
  torch::manual_seed(11);

  // Rollout 1: row 0's episode ends (terminal) after its second step, row
  // 1's runs on.
  const auto rows1 = PlayRollout(agent, {{End::kNone, End::kNone},
                                         {End::kTerminal, End::kNone},
                                         {End::kNone, End::kNone}});
  ASSERT_EQ(agent.num_updates(), 1);
  const std::vector<torch::Tensor> zero = {
      torch::zeros({1, s}, torch::kDouble),
      torch::zeros({1, s}, torch::kDouble)};
  torch::Tensor expected = StepwiseGrads(*reference, rows1, zero, options);
  torch::Tensor batched = agent.local().grads().clone();
  testing::ExpectFloatMatchesDouble(batched, expected, "update 1");

  // Rollout 2 starts from the states rollout 1 left (not zero for either
  // row) with the updated weights; row 1 is cut by a time limit after its
  // first step.
  const std::vector<torch::Tensor> start = Replay(*reference, rows1, zero);
  EXPECT_GT(start[0].abs().sum().item<double>(), 0.0);
  const torch::Tensor weights = agent.local().params().clone();
  const auto rows2 = PlayRollout(agent, {{End::kNone, End::kTruncated},
                                         {End::kNone, End::kNone},
                                         {End::kNone, End::kNone}});
  ASSERT_EQ(agent.num_updates(), 2);
  CopyParams(weights, *reference);
  expected = StepwiseGrads(*reference, rows2, start, options);
  batched = agent.local().grads();
  testing::ExpectFloatMatchesDouble(batched, expected, "update 2");
}

// --fresh-params: another worker moves the shared parameters after this
// one acted; the update recomputes the rollout (from its stored initial
// state) with the moved parameters and corrects with the importance ratios
// against the parameters that acted. Only the targets that correct.
TEST_P(RecurrentA3CTest, FreshParametersAreCorrectedByTheRatios) {
  A3COptions options = Options();
  if (!CorrectsOffPolicy(options.PolicyTargetKind())) {
    GTEST_SKIP() << "--fresh-params needs --policy-target vtrace or upgo";
  }
  options.fresh_params = true;
  options.vtrace_rho_bar = 1.2;
  options.vtrace_c_bar = 0.9;
  A3C agent(MakeModel(), Space::Box({kObs}, -10.0f, 10.0f), ActionSpace(),
            options);
  std::vector<float> shared(agent.SharedSizes().params);
  std::vector<float> ms(agent.SharedSizes().optimizer);
  SharedCounters counters;
  agent.BindShared({shared.data(), ms.data(), &counters}, true);
  auto reference = MakeModel();  // The weights that act, in double.
  reference->to(torch::kDouble);
  const int64_t s = reference->StateSize();
  torch::manual_seed(11);
  std::vector<float> moved;
  auto rows = PlayRollout(agent,
                          {{End::kNone, End::kNone},
                           {End::kTerminal, End::kNone},
                           {End::kNone, End::kTruncated}},
                          [&] {
                            for (size_t i = 0; i < shared.size(); ++i) {
                              shared[i] +=
                                  0.3f * std::sin(static_cast<float>(i));
                            }
                            moved = shared;
                          });
  ASSERT_EQ(agent.num_updates(), 1);
  const std::vector<torch::Tensor> zero = {
      torch::zeros({1, s}, torch::kDouble),
      torch::zeros({1, s}, torch::kDouble)};
  SetBehaviour(*reference, &rows, zero);
  CopyParams(torch::tensor(moved), *reference);
  const torch::Tensor expected = StepwiseGrads(*reference, rows, zero, options);
  testing::ExpectFloatMatchesDouble(agent.local().grads(), expected, "fresh");
  double max_log_ratio = 0;
  for (float lr : agent.last_update().log_ratios) {
    max_log_ratio = std::max(max_log_ratio, std::abs(double{lr}));
  }
  EXPECT_GT(max_log_ratio, 0.01) << "the parameters did not move";
}

// The trainer ends a rollout early when the next batch is smaller (the last
// batch of a run): the agent learns now, rows whose episode ended lose
// their state, and rows that go on keep it into the smaller batch.
TEST_P(RecurrentA3CTest, EndingARolloutEarlyKeepsTheStateOfEpisodesThatGoOn) {
  A3C agent(MakeModel(), Space::Box({kObs}, -10.0f, 10.0f), ActionSpace(),
            Options());
  const Obs obs = {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, -0.8f};
  agent.BatchActAndTrain(View(obs), 2);
  agent.BatchObserveAndTrain(View(obs), {0.5, 0.5}, {0, 0}, {0, 1},
                             /*end_rollout=*/true);
  EXPECT_EQ(agent.num_updates(), 1);
  const std::vector<float> state = agent.recurrent_state();
  const size_t size = state.size() / 2;
  const std::vector<float> row0(state.begin(), state.begin() + size);
  EXPECT_TRUE(std::any_of(row0.begin(), row0.end(), [](float x) {
    return x != 0.0f;
  })) << "the episode of row 0 goes on: its state must be kept";
  EXPECT_TRUE(std::all_of(state.begin() + size, state.end(), [](float x) {
    return x == 0.0f;
  })) << "the episode of row 1 ended: its state must be zero";

  // Row 0 continues in a batch of one, from its state.
  const Obs next(obs.begin(), obs.begin() + kObs);
  agent.BatchActAndTrain(View(next), 1);
  auto reference = MakeModel();
  reference->to(torch::kDouble);
  CopyParams(agent.local().params(), *reference);
  const std::vector<torch::Tensor> expected =
      Replay(*reference, {{RowStep{next, {}, 0.0, End::kNone, {}}}},
             {torch::tensor(row0).to(torch::kDouble).view({1, -1})});
  testing::ExpectFloatMatchesDouble(torch::tensor(agent.recurrent_state()),
                                    expected[0], "state of row 0");
}

TEST_P(RecurrentA3CTest, StateIsCarriedResetAndKeptApartFromEvaluation) {
  A3C agent(MakeModel(), Space::Box({kObs}, -10.0f, 10.0f), ActionSpace(),
            Options());
  const Obs obs = {0.1f, -0.2f, 0.3f, 0.4f};
  agent.ActAndTrain(View(obs), 0);
  const std::vector<float> after_one = agent.recurrent_state();
  ASSERT_FALSE(after_one.empty());
  EXPECT_NE(after_one, std::vector<float>(after_one.size(), 0.0f));
  agent.ActAndTrain(View(obs), 0);
  EXPECT_NE(agent.recurrent_state(), after_one);  // Carried and advanced.

  // Evaluation steps its own state, leaving training's alone.
  const std::vector<float> training = agent.recurrent_state();
  agent.Act(View(obs));
  agent.Act(View(obs));
  EXPECT_EQ(agent.recurrent_state(), training);
  EXPECT_FALSE(agent.eval_recurrent_state().empty());
  agent.StopEpisode();
  EXPECT_TRUE(agent.eval_recurrent_state().empty());  // Fresh next episode.

  agent.StopEpisodeAndTrain(View(obs), 1.0, /*terminal=*/true);
  EXPECT_EQ(agent.recurrent_state(), std::vector<float>(training.size(), 0.0f));
}

INSTANTIATE_TEST_SUITE_P(
    PoliciesAndTargets, RecurrentA3CTest,
    ::testing::Combine(::testing::Values(false, true),
                       ::testing::Values("nstep", "gae", "vtrace", "upgo")),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) ? "LstmGaussian"
                                                 : "LstmSoftmax") +
             "_" + std::get<1>(info.param);
    });

// The cells compute the gates themselves (input share in Encode, state share
// in CoreStep): the step equals torch::nn::LSTMCell's forward on the same
// parameters, in double, for both layouts (one shared trunk; a trunk and a
// cell per branch).
TEST(LstmCellTest, StepEqualsLibTorchsLstmCell) {
  ConfigureTorchForFork();
  const Space obs_space = Space::Box({kObs}, -5.0f, 5.0f);
  for (const int branches : {1, 2}) {
    SCOPED_TRACE(std::to_string(branches) + " branches");
    torch::manual_seed(4);
    std::vector<Trunk> trunks;
    for (int b = 0; b < branches; ++b) trunks.push_back(FcTrunk(obs_space, 6));
    constexpr int64_t kHidden = 5;
    LstmActorCritic model(trunks, kHidden, Space::Discrete(3));
    model->to(torch::kDouble);
    const int64_t k = 3;
    const auto obs = torch::randn({k, kObs}, torch::kDouble);
    const auto state =
        torch::randn({k, model->StateSize()}, torch::kDouble) * 0.5;
    const ModelStep step = model->Step(obs, state);

    auto modules = model->named_children();
    std::vector<torch::Tensor> hidden, states;
    for (int b = 0; b < branches; ++b) {
      const std::string suffix = branches == 1 ? "" : (b == 0 ? "_pi" : "_v");
      auto trunk = modules["trunk" + suffix]->as<torch::nn::SequentialImpl>();
      auto cell = modules["lstm" + suffix]->as<torch::nn::LSTMCellImpl>();
      ASSERT_NE(trunk, nullptr);
      ASSERT_NE(cell, nullptr);
      const int64_t s0 = 2 * kHidden * b;
      auto [h2, c2] = cell->forward(
          trunk->forward(obs),
          std::make_tuple(state.slice(1, s0, s0 + kHidden),
                          state.slice(1, s0 + kHidden, s0 + 2 * kHidden)));
      hidden.push_back(h2);
      states.push_back(h2);
      states.push_back(c2);
    }
    const auto want_state = torch::cat(states, 1);
    EXPECT_LE((step.state - want_state).abs().max().item<double>(),
              1e-12 * want_state.abs().max().item<double>());
    auto pi = modules["pi"]->as<torch::nn::LinearImpl>();
    const auto want_logits = pi->forward(hidden[0]);
    EXPECT_LE((step.output.logits - want_logits).abs().max().item<double>(),
              1e-12 * want_logits.abs().max().item<double>());
  }
}

}  // namespace
}  // namespace recurrent_test
}  // namespace asyncrl
