// The fast path's LSTM cells (agents/dense_lstm.cc) against LibTorch and
// autograd in double: fc-softmax-lstm, fc-gaussian-lstm, minatar-conv-lstm
// and atari-conv-lstm, unrolled and stepped, in float within the float
// tolerance, backward through time in pieces or whole.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/conv_models.h"
#include "asyncrl/agents/dense_path.h"
#include "asyncrl/agents/distributions.h"
#include "asyncrl/agents/torch_setup.h"
#include "dense_test_support.h"
#include "gradient_check.h"

namespace asyncrl {
namespace dense_path_test {
namespace {

// The recurrent archs: 4 steps of 3 sequences from a random initial
// state, sequences ending mid-rollout (a terminal, a time limit with its
// bootstrap observation) and at the rollout's end.
class DenseLstmPathTest : public ::testing::TestWithParam<ArchCase> {
 protected:
  static constexpr int64_t kBatch = 3;
  static constexpr int64_t kSteps = 4;
  static constexpr int64_t kRows = kBatch * kSteps;

  void SetUp() override {
    ConfigureTorchForFork();
    model_ = MakeModel(GetParam());
    flat_ = std::make_unique<FlatParameters>(*model_);
    const std::optional<DenseDescription> described = model_->Describe();
    ASSERT_TRUE(described.has_value()) << GetParam().name;
    layout_ = DenseLayout::Of(*described, *flat_);
    ASSERT_TRUE(layout_.recurrent());
    ASSERT_EQ(layout_.state_size(), model_->StateSize());
    layout_.row_size = GetParam().obs_size;
    params_.assign(flat_->params_data(), flat_->params_data() + flat_->size());
    reference_ = MakeModel(GetParam());
    reference_->to(torch::kDouble);
    torch::manual_seed(5);
    const int64_t o = GetParam().obs_size;
    obs_ = torch::randn({kRows, o}, torch::kDouble) * 2;
    initial_ =
        torch::randn({kBatch, layout_.state_size()}, torch::kDouble) * 0.5;
    bootstrap_obs_ = torch::randn({4, o}, torch::kDouble) * 2;
    // Row 1 (step 0) ends in a terminal, row 5 (step 1) at a time limit
    // (bootstrap 0), row 6 (step 2) in a terminal; the last step's rows are
    // cut by the rollout's end (bootstraps 1-3).
    end_.assign(kRows, 0);
    for (int64_t r : {1, 5, 6, 9, 10, 11}) end_[r] = 1;
    bootstrap_row_ = {5, 9, 10, 11};
  }

  UnrollInput ReferenceInput() const {
    UnrollInput input;
    input.batch = kBatch;
    input.obs = obs_;
    input.initial_state = initial_;
    input.sequence_end = end_;
    input.bootstrap_obs = bootstrap_obs_;
    input.bootstrap_row = bootstrap_row_;
    return input;
  }

  // The values of the bootstrap observations, each stepped from the state
  // after its row, into rows kRows.. of `fast`.
  void StepBootstraps(DenseActorCritic<double>& fast) {
    const int64_t size = layout_.state_size();
    std::vector<double> states(bootstrap_row_.size() * size);
    for (size_t j = 0; j < bootstrap_row_.size(); ++j) {
      fast.StateAfter(bootstrap_row_[j], states.data() + j * size);
    }
    fast.Step(params_.data(), bootstrap_obs_.data_ptr<double>(),
              static_cast<int64_t>(bootstrap_row_.size()), kRows, states.data(),
              states.data(), /*with_policy=*/false);
  }

  std::vector<double> ReferenceGrads() { return FlatGrads(*reference_); }
  torch::Tensor PolicyOutput(const ModelOutput& out) const {
    return PolicyOf(out, GetParam().gaussian);
  }

  std::shared_ptr<ActorCriticModel> model_;
  std::unique_ptr<FlatParameters> flat_;
  DenseLayout layout_;
  std::vector<double> params_;
  std::shared_ptr<ActorCriticModel> reference_;
  torch::Tensor obs_, initial_, bootstrap_obs_;
  std::vector<uint8_t> end_;
  std::vector<int64_t> bootstrap_row_;
};

TEST_P(DenseLstmPathTest, UnrollAndStepsEqualLibTorchInDouble) {
  const UnrollOutput want = reference_->Unroll(ReferenceInput());
  const int64_t p = layout_.policy_size();
  const int64_t o = GetParam().obs_size;
  const int64_t size = layout_.state_size();
  auto expect_rows = [&](const DenseActorCritic<double>& fast) {
    EXPECT_LE(RelativeDifference({fast.policy(), fast.policy() + kRows * p},
                                 Doubles(PolicyOutput(want.output))),
              1e-12);
    EXPECT_LE(RelativeDifference({fast.values(), fast.values() + kRows},
                                 Doubles(want.output.value)),
              1e-12);
    EXPECT_LE(
        RelativeDifference({fast.values() + kRows, fast.values() + kRows + 4},
                           Doubles(want.bootstrap_values)),
        1e-12);
  };
  {
    SCOPED_TRACE("unrolled");
    DenseActorCritic<double> fast(layout_);
    fast.Unroll(params_.data(), obs_.data_ptr<double>(), kBatch, kSteps,
                initial_.data_ptr<double>(), end_.data());
    StepBootstraps(fast);
    expect_rows(fast);
  }
  {
    // As an agent acts: one step at a time (a single sequence's step is a
    // gemv), a sequence's state zeroed where it ended.
    SCOPED_TRACE("stepped");
    DenseActorCritic<double> fast(layout_);
    std::vector<double> state(initial_.data_ptr<double>(),
                              initial_.data_ptr<double>() + kBatch * size);
    for (int64_t s = 0; s < kSteps; ++s) {
      const double* obs = obs_.data_ptr<double>() + s * kBatch * o;
      if (s == 1) {
        // The step in two calls: 1 row, then 2.
        fast.Step(params_.data(), obs, 1, s * kBatch, state.data(),
                  state.data());
        fast.Step(params_.data(), obs + o, 2, s * kBatch + 1,
                  state.data() + size, state.data() + size);
      } else {
        fast.Step(params_.data(), obs, kBatch, s * kBatch, state.data(),
                  state.data());
      }
      for (int64_t b = 0; b < kBatch && s + 1 < kSteps; ++b) {
        if (end_[s * kBatch + b] != 0) {
          std::fill_n(state.begin() + b * size, size, 0.0);
        }
      }
    }
    StepBootstraps(fast);
    expect_rows(fast);
  }
}

TEST_P(DenseLstmPathTest, FloatUnrollMatchesDoubleWithinTheFloatTolerance) {
  DenseActorCritic<float> fast(layout_);
  const torch::Tensor obs = obs_.to(torch::kFloat).contiguous();
  const torch::Tensor initial = initial_.to(torch::kFloat).contiguous();
  fast.Unroll(flat_->params_data(), obs.data_ptr<float>(), kBatch, kSteps,
              initial.data_ptr<float>(), end_.data());
  const UnrollOutput want = reference_->Unroll(ReferenceInput());
  testing::ExpectFloatMatchesDouble(
      torch::from_blob(const_cast<float*>(fast.policy()),
                       {kRows * layout_.policy_size()}),
      PolicyOutput(want.output), "policy outputs");
  testing::ExpectFloatMatchesDouble(
      torch::from_blob(const_cast<float*>(fast.values()), {kRows}),
      want.output.value, "values");
}

// Backpropagation through time, the sequences' ends cutting it, against
// autograd through LibTorch's unrolled graph.
TEST_P(DenseLstmPathTest, BackwardThroughTimeEqualsAutogradInDouble) {
  DenseActorCritic<double> fast(layout_);
  fast.Unroll(params_.data(), obs_.data_ptr<double>(), kBatch, kSteps,
              initial_.data_ptr<double>(), end_.data());
  StepBootstraps(fast);  // Rows after kRows take no gradient.
  torch::manual_seed(13);
  const int64_t p = layout_.policy_size();
  const auto d_policy = torch::randn({kRows, p}, torch::kDouble);
  const auto d_values = torch::randn({kRows}, torch::kDouble);
  std::vector<double> grads(params_.size(), 0.0);
  fast.Backward(params_.data(), obs_.data_ptr<double>(), kRows,
                d_policy.data_ptr<double>(), d_values.data_ptr<double>(),
                grads.data(), {kBatch, end_.data()});
  const ModelOutput out = reference_->Unroll(ReferenceInput()).output;
  ((PolicyOutput(out) * d_policy).sum() + (out.value * d_values).sum())
      .backward();
  EXPECT_LE(RelativeDifference(grads, ReferenceGrads()), 1e-12);
}

// 16 sequences (an agent with 16 environments) of 3 steps, two of them
// ending mid-rollout: the gates' products (in blocks of outputs), d
// h_prev's (in column blocks, at the default 128 units) and the weight
// gradients over the 48 rows (in pieces) cut into the pieces OpenBLAS's
// small-matrix kernels take, and whole: both equal
// LibTorch's unrolled graph and autograd in double, whatever kernel runs
// them.
TEST_P(DenseLstmPathTest, SixteenSequencesEqualAutogradInPiecesOrWhole) {
  constexpr int64_t kSeqs = 16;
  constexpr int64_t kLength = 3;
  constexpr int64_t kAll = kSeqs * kLength;
  torch::manual_seed(21);
  const int64_t o = GetParam().obs_size;
  const torch::Tensor obs = torch::randn({kAll, o}, torch::kDouble) * 2;
  const torch::Tensor initial =
      torch::randn({kSeqs, layout_.state_size()}, torch::kDouble) * 0.5;
  std::vector<uint8_t> end(kAll, 0);
  for (int64_t r = kAll - kSeqs; r < kAll; ++r) end[r] = 1;
  end[3] = 1;           // Step 0, sequence 3.
  end[kSeqs + 10] = 1;  // Step 1, sequence 10.
  const int64_t p = layout_.policy_size();
  const auto d_policy = torch::randn({kAll, p}, torch::kDouble);
  const auto d_values = torch::randn({kAll}, torch::kDouble);
  UnrollInput input;
  input.batch = kSeqs;
  input.obs = obs;
  input.initial_state = initial;
  input.sequence_end = end;
  input.bootstrap_obs = torch::zeros({0, o}, torch::kDouble);
  const ModelOutput out = reference_->Unroll(input).output;
  const std::vector<double> want_policy = Doubles(PolicyOutput(out));
  ((PolicyOutput(out) * d_policy).sum() + (out.value * d_values).sum())
      .backward();
  const std::vector<double> want = ReferenceGrads();
  for (const bool pieces : {true, false}) {
    SCOPED_TRACE(pieces ? "in pieces" : "whole");
    DenseActorCritic<double> fast(layout_);
    fast.set_small_products(pieces);
    fast.Unroll(params_.data(), obs.data_ptr<double>(), kSeqs, kLength,
                initial.data_ptr<double>(), end.data());
    EXPECT_LE(RelativeDifference(
                  std::vector<double>(fast.policy(), fast.policy() + kAll * p),
                  want_policy),
              1e-12);
    std::vector<double> grads(params_.size(), 0.0);
    fast.Backward(params_.data(), obs.data_ptr<double>(), kAll,
                  d_policy.data_ptr<double>(), d_values.data_ptr<double>(),
                  grads.data(), {kSeqs, end.data()});
    EXPECT_LE(RelativeDifference(grads, want), 1e-12);
  }
}

TEST_P(DenseLstmPathTest, OutputGradientEqualsAutogradOfTheLossInDouble) {
  torch::manual_seed(9);
  const ArchCase& c = GetParam();
  std::vector<int64_t> actions;
  std::vector<float> cont_actions;
  if (c.gaussian) {
    const auto a = torch::randn({kRows, c.actions}) * 1.5;
    cont_actions.assign(a.data_ptr<float>(), a.data_ptr<float>() + a.numel());
  } else {
    const auto a = torch::randint(c.actions, {kRows}, torch::kInt64);
    actions.assign(a.data_ptr<int64_t>(), a.data_ptr<int64_t>() + kRows);
  }
  DenseActorCritic<double> fast(layout_);
  fast.Unroll(params_.data(), obs_.data_ptr<double>(), kBatch, kSteps,
              initial_.data_ptr<double>(), end_.data());
  std::vector<double> log_probs(kRows), entropies(kRows);
  fast.EvaluateActions(params_.data(), kRows, actions.data(),
                       cont_actions.data(), log_probs.data(), entropies.data());
  const auto advantages = torch::randn({kRows}, torch::kDouble);
  const auto returns = torch::randn({kRows}, torch::kDouble);
  const double beta = 0.05, pi_scale = 0.8, v_scale = 0.3;
  std::vector<double> d_log_prob(kRows), d_entropy(kRows), d_value(kRows);
  for (int64_t i = 0; i < kRows; ++i) {
    d_log_prob[i] = -pi_scale * advantages[i].item<double>();
    d_entropy[i] = -pi_scale * beta;
    d_value[i] = v_scale * (fast.values()[i] - returns[i].item<double>());
  }
  std::vector<double> grads(params_.size(), 0.0);
  fast.OutputGradient(params_.data(), obs_.data_ptr<double>(), kRows,
                      actions.data(), cont_actions.data(), d_log_prob.data(),
                      d_entropy.data(), d_value.data(), grads.data(),
                      {kBatch, end_.data()});

  const ModelOutput out = reference_->Unroll(ReferenceInput()).output;
  const torch::Tensor taken = c.gaussian ? torch::tensor(cont_actions)
                                               .to(torch::kDouble)
                                               .view({kRows, c.actions})
                                         : torch::tensor(actions);
  const PolicyTerms terms = EvaluateActions(
      c.gaussian ? PolicyKind::kGaussian : PolicyKind::kCategorical, out,
      taken);
  EXPECT_LE(RelativeDifference(log_probs, Doubles(terms.log_prob)), 1e-12);
  EXPECT_LE(RelativeDifference(entropies, Doubles(terms.entropy)), 1e-12);
  const torch::Tensor loss =
      -pi_scale * (advantages * terms.log_prob + beta * terms.entropy).sum() +
      v_scale * (out.value - returns).pow(2).sum() / 2;
  loss.backward();
  EXPECT_LE(RelativeDifference(grads, ReferenceGrads()), 1e-12);
}

INSTANTIATE_TEST_SUITE_P(
    Archs, DenseLstmPathTest,
    ::testing::Values(
        ArchCase{"fc_softmax_lstm", false, 5, 3, {}, "fc-softmax-lstm", {}},
        ArchCase{"fc_gaussian_lstm", true, 4, 2, {}, "fc-gaussian-lstm", {}},
        ArchCase{"minatar_conv_lstm",
                 false,
                 4 * 5 * 5,
                 3,
                 {},
                 "minatar-conv-lstm",
                 {4, 5, 5}},
        // --conv-channels 6 --hidden-sizes 20: an LSTM of 20 units.
        ArchCase{"minatar_conv_lstm_shaped",
                 false,
                 4 * 5 * 5,
                 3,
                 {20},
                 "minatar-conv-lstm",
                 {4, 5, 5},
                 0,
                 "auto",
                 "6"},
        ArchCase{"atari_conv_lstm",
                 false,
                 2 * 28 * 29,
                 4,
                 {},
                 "atari-conv-lstm",
                 {2, 28, 29}}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace dense_path_test
}  // namespace asyncrl
