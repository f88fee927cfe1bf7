// The fast path (agents/dense_path.h) against LibTorch, per arch it takes
// (fc-softmax, fc-gaussian at the default sizes and a small one, each with
// the other's activation; minatar-conv, atari-conv, board-conv): outputs,
// log-probabilities and entropies in double to ~1e-12 and in float within
// the float tolerance of gradient_check.h; the backward pass and the loss
// gradient against autograd in double; acting through the A3C agent with
// the fast path on and off; which models take it; layouts it refuses. The
// convolutions' own routes are tested in dense_conv_test.cc, the LSTM
// cells in dense_lstm_test.cc.
#include "asyncrl/agents/dense_path.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/conv_models.h"
#include "asyncrl/agents/distributions.h"
#include "asyncrl/agents/torch_setup.h"
#include "dense_test_support.h"
#include "gradient_check.h"

namespace asyncrl {
namespace dense_path_test {
namespace {

TEST_P(DensePathTest, ForwardEqualsLibTorchInDouble) {
  const ModelOutput want = reference_->Forward(obs_);
  const int64_t p = layout_.policy_size();
  const double* obs = obs_.data_ptr<double>();
  auto expect_rows = [&](const DenseActorCritic<double>& fast,
                         int64_t policy_rows, int64_t value_rows) {
    const std::vector<double> policy(fast.policy(),
                                     fast.policy() + policy_rows * p);
    const std::vector<double> values(fast.values(), fast.values() + value_rows);
    EXPECT_LE(RelativeDifference(
                  policy, Doubles(PolicyOutput(want).slice(0, 0, policy_rows))),
              1e-12);
    EXPECT_LE(
        RelativeDifference(values, Doubles(want.value.slice(0, 0, value_rows))),
        1e-12);
  };
  {
    SCOPED_TRACE("one pass");
    DenseActorCritic<double> fast(layout_);
    fast.Forward(params_.data(), obs, kRows);
    expect_rows(fast, kRows, kRows);
  }
  {
    SCOPED_TRACE("in pieces");
    DenseActorCritic<double> fast(layout_);
    ForwardInPieces(fast);
    expect_rows(fast, 5, kRows);
  }
}

TEST_P(DensePathTest, FloatForwardMatchesDoubleWithinTheFloatTolerance) {
  DenseActorCritic<float> fast(layout_);
  const torch::Tensor obs = obs_.to(torch::kFloat).contiguous();
  fast.Forward(flat_->params_data(), obs.data_ptr<float>(), kRows);
  const ModelOutput want = reference_->Forward(obs_);
  const int64_t p = layout_.policy_size();
  testing::ExpectFloatMatchesDouble(
      torch::from_blob(const_cast<float*>(fast.policy()), {kRows * p}),
      PolicyOutput(want), "policy outputs");
  testing::ExpectFloatMatchesDouble(
      torch::from_blob(const_cast<float*>(fast.values()), {kRows}), want.value,
      "values");
}

TEST_P(DensePathTest, BackwardEqualsAutogradInDouble) {
  // Backward over the first 5 rows (the others stand for bootstrap rows,
  // which take no gradient).
  constexpr int64_t kBackRows = 5;
  torch::manual_seed(13);
  const ReferenceBackward ref =
      BackwardOfReference(obs_.slice(0, 0, kBackRows));
  const torch::Tensor& d_policy = ref.d_policy;
  const torch::Tensor& d_values = ref.d_values;
  const std::vector<double>& want = ref.grads;
  const double* obs = obs_.data_ptr<double>();
  auto expect_backward = [&](DenseActorCritic<double>& fast) {
    std::vector<double> grads(params_.size(), 0.0);
    fast.Backward(params_.data(), obs, kBackRows, d_policy.data_ptr<double>(),
                  d_values.data_ptr<double>(), grads.data());
    EXPECT_LE(RelativeDifference(grads, want), 1e-12);
  };
  {
    SCOPED_TRACE("one pass");
    DenseActorCritic<double> fast(layout_);
    fast.Forward(params_.data(), obs, kRows);
    expect_backward(fast);
  }
  {
    SCOPED_TRACE("in pieces");
    DenseActorCritic<double> fast(layout_);
    ForwardInPieces(fast);
    expect_backward(fast);
  }
  {
    // All rows forwarded with other inputs, then the first ones again (as
    // PPO forwards a minibatch): only the new rows' columns count.
    SCOPED_TRACE("a subset again");
    DenseActorCritic<double> fast(layout_);
    const torch::Tensor other = torch::randn_like(obs_);
    fast.Forward(params_.data(), other.data_ptr<double>(), kRows);
    fast.Forward(params_.data(), obs, kBackRows);
    expect_backward(fast);
  }
  {
    // Room for the columns of 3 rows: the pieces' first 3 rows are kept,
    // the rest not, and the backward pass over 5 builds them again.
    SCOPED_TRACE("room for some rows");
    DenseActorCritic<double> fast(layout_);
    int64_t row_bytes = 0;
    for (const DenseLayout::Conv& c : layout_.convs) {
      row_bytes +=
          c.patch() * c.positions() * static_cast<int64_t>(sizeof(double));
    }
    fast.set_kept_columns_bytes(3 * row_bytes);
    ForwardInPieces(fast);
    expect_backward(fast);
  }
  {
    // No room for the columns: the backward pass builds them again.
    SCOPED_TRACE("columns not kept");
    DenseActorCritic<double> fast(layout_);
    fast.set_kept_columns_bytes(0);
    fast.Forward(params_.data(), obs, kRows);
    expect_backward(fast);
  }
}

// Many rows, as an agent with 16 environments acts and learns: forwarded
// 16 at a time, then the backward pass over all 48. With the products cut
// into the pieces OpenBLAS's small-matrix kernels take (x W^T in blocks of
// outputs while acting, the weight gradients over the 48 rows in pieces
// of rows and columns, the convolutions' in pieces of their k) and whole,
// whatever kernel runs them: both equal LibTorch and autograd in double.
TEST_P(DensePathTest, ManyRowsEqualLibTorchWithProductsInPiecesOrWhole) {
  constexpr int64_t kMany = 48;
  constexpr int64_t kStep = 16;
  torch::manual_seed(17);
  const int64_t o = GetParam().obs_size;
  const torch::Tensor obs = torch::randn({kMany, o}, torch::kDouble) * 2;
  const int64_t p = layout_.policy_size();
  const ModelOutput out = reference_->Forward(obs);
  const std::vector<double> want_policy = Doubles(PolicyOutput(out));
  const std::vector<double> want_values = Doubles(out.value);
  const ReferenceBackward ref = BackwardOfReference(obs);
  const torch::Tensor& d_policy = ref.d_policy;
  const torch::Tensor& d_values = ref.d_values;
  const std::vector<double>& want = ref.grads;
  for (const bool pieces : {true, false}) {
    SCOPED_TRACE(pieces ? "in pieces" : "whole");
    DenseActorCritic<double> fast(layout_);
    fast.set_small_products(pieces);
    for (int64_t r = 0; r < kMany; r += kStep) {
      fast.Forward(params_.data(), obs.data_ptr<double>() + r * o, kStep, r);
    }
    EXPECT_LE(RelativeDifference(
                  std::vector<double>(fast.policy(), fast.policy() + kMany * p),
                  want_policy),
              1e-12);
    EXPECT_LE(RelativeDifference(
                  std::vector<double>(fast.values(), fast.values() + kMany),
                  want_values),
              1e-12);
    std::vector<double> grads(params_.size(), 0.0);
    fast.Backward(params_.data(), obs.data_ptr<double>(), kMany,
                  d_policy.data_ptr<double>(), d_values.data_ptr<double>(),
                  grads.data());
    EXPECT_LE(RelativeDifference(grads, want), 1e-12);
  }
}

// The A3C loss given as its gradients with respect to the rows' outputs
// (what agents/a3c.cc hands a back end) gives autograd's parameter
// gradient of the loss.
TEST_P(DensePathTest, OutputGradientEqualsAutogradOfTheLossInDouble) {
  MakeActions();
  DenseActorCritic<double> fast(layout_);
  fast.Forward(params_.data(), obs_.data_ptr<double>(), kRows);
  std::vector<double> log_probs(kRows), entropies(kRows);
  fast.EvaluateActions(params_.data(), kRows, actions_.data(),
                       cont_actions_.data(), log_probs.data(),
                       entropies.data());
  const std::vector<float> advantages = {0.5f,  -1.25f, 2.0f, 0.0f,
                                         -0.3f, 1.1f,   -2.2f};
  const std::vector<float> returns = {1.0f,  -0.5f, 0.25f, 3.0f,
                                      -1.0f, 0.0f,  0.7f};
  const double beta = 0.05, pi_scale = 0.8, v_scale = 0.3;
  std::vector<double> d_log_prob(kRows), d_entropy(kRows), d_value(kRows);
  for (int64_t i = 0; i < kRows; ++i) {
    d_log_prob[i] = -pi_scale * advantages[i];
    d_entropy[i] = -pi_scale * beta;
    d_value[i] = v_scale * (fast.values()[i] - returns[i]);
  }
  std::vector<double> grads(params_.size(), 0.0);
  fast.OutputGradient(params_.data(), obs_.data_ptr<double>(), kRows,
                      actions_.data(), cont_actions_.data(), d_log_prob.data(),
                      d_entropy.data(), d_value.data(), grads.data());

  // The reference: distributions.h's terms on LibTorch's outputs, autograd.
  const ModelOutput out = reference_->Forward(obs_);
  const torch::Tensor actions = GetParam().gaussian
                                    ? torch::tensor(cont_actions_)
                                          .to(torch::kDouble)
                                          .view({kRows, GetParam().actions})
                                    : torch::tensor(actions_);
  const PolicyTerms terms = EvaluateActions(
      GetParam().gaussian ? PolicyKind::kGaussian : PolicyKind::kCategorical,
      out, actions);
  EXPECT_LE(RelativeDifference(log_probs, Doubles(terms.log_prob)), 1e-12);
  EXPECT_LE(RelativeDifference(entropies, Doubles(terms.entropy)), 1e-12);
  const auto adv = torch::tensor(advantages).to(torch::kDouble);
  const auto ret = torch::tensor(returns).to(torch::kDouble);
  const torch::Tensor loss =
      -pi_scale * (adv * terms.log_prob + beta * terms.entropy).sum() +
      v_scale * (out.value - ret).pow(2).sum() / 2;
  loss.backward();
  EXPECT_LE(RelativeDifference(grads, ReferenceGrads()), 1e-12);
}

std::vector<ArchCase> AllCases() {
  std::vector<ArchCase> cases = {
      ArchCase{"fc_softmax_default", false, 4, 2, {200, 200}, "", {}},
      ArchCase{"fc_softmax_small", false, 6, 5, {16}, "", {}},
      ArchCase{"fc_gaussian_default", true, 3, 1, {64, 64}, "", {}},
      ArchCase{"fc_gaussian_small", true, 5, 3, {8, 12, 6}, "", {}},
      // --activation against each arch's own.
      ArchCase{"fc_softmax_tanh", false, 6, 5, {16, 8}, "", {}, 0, "tanh"},
      ArchCase{"fc_gaussian_relu", true, 5, 3, {8, 12}, "", {}, 0, "relu"}};
  for (const ArchCase& c : ConvCases()) cases.push_back(c);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Archs, DensePathTest, ::testing::ValuesIn(AllCases()),
                         [](const auto& info) { return info.param.name; });

// The agent with the fast path on and off from the same parameters and seed:
// the same actions, and updates that agree to float rounding.
TEST(DensePathAgentTest, FastAndLibTorchAgentsActAndLearnAlike) {
  ConfigureTorchForFork();
  const std::vector<ArchCase> cases = {
      {"fc-softmax", false, 4, 3, {32, 32}, "", {}},
      {"fc-softmax tanh", false, 4, 3, {32, 32}, "", {}, 0, "tanh"},
      {"fc-gaussian", true, 4, 2, {32, 32}, "", {}},
      {"minatar-conv", false, 4 * 5 * 5, 3, {}, "minatar-conv", {4, 5, 5}},
      // Frames of 0s and 1s, as MinAtar's: the first convolution over the
      // inputs set (DenseActorCritic::SparseInputs::kAuto).
      // Frames of 0s and 1s, as MinAtar's, mostly lines of zeros: the
      // first convolution over the lines set (SparseInputs::kAuto), in
      // MinAtar's own shape (folded at compile time) and another.
      {"minatar-conv binary frames",
       false,
       4 * 10 * 10,
       3,
       {},
       "minatar-conv",
       {4, 10, 10}},
      {"minatar-conv binary small frames",
       false,
       4 * 5 * 5,
       3,
       {},
       "minatar-conv",
       {4, 5, 5}},
      {"fc-softmax-lstm", false, 4, 3, {}, "fc-softmax-lstm", {}},
      {"fc-gaussian-lstm", true, 4, 2, {}, "fc-gaussian-lstm", {}},
      {"minatar-conv-lstm",
       false,
       4 * 5 * 5,
       3,
       {},
       "minatar-conv-lstm",
       {4, 5, 5}},
      {"minatar-conv-lstm binary frames",
       false,
       4 * 10 * 10,
       3,
       {},
       "minatar-conv-lstm",
       {4, 10, 10}}};
  for (const ArchCase& c : cases) {
    SCOPED_TRACE(c.name);
    const bool binary = c.name.find("binary") != std::string::npos;
    // Observations (n floats): normal, or frames of 0s and 1s with about
    // 1 line in 7 set (cells set in it at random).
    auto observe = [&](int64_t n) {
      if (!binary) return torch::randn({n}).contiguous();
      const int64_t w = c.image.back();
      const auto lines = (torch::rand({n / w, 1}) < 0.15).to(torch::kFloat);
      const auto cells = (torch::rand({n / w, w}) < 0.7).to(torch::kFloat);
      return (lines * cells).reshape({n}).contiguous();
    };
    const bool gaussian = c.gaussian;
    const int64_t o = c.obs_size;
    auto make_agent = [&](bool fast) {
      A3COptions options;
      options.seed = 17;
      options.no_fast_path = !fast;
      options.max_grad_norm = 0;
      const Space obs_space = ImageSpace(c);
      return std::make_unique<A3C>(MakeModel(c), obs_space, ActionSpace(c),
                                   options);
    };
    auto fast = make_agent(true);
    auto slow = make_agent(false);
    ASSERT_TRUE(fast->fast_path());
    ASSERT_FALSE(slow->fast_path());
    constexpr int64_t kEnvs = 3;
    torch::manual_seed(21);
    for (int step = 0; step < 12; ++step) {
      const auto obs = observe(kEnvs * o);
      const FloatView view{obs.data_ptr<float>(), kEnvs * o};
      const auto& a = fast->BatchActAndTrain(view, kEnvs);
      const auto& b = slow->BatchActAndTrain(view, kEnvs);
      for (int64_t k = 0; k < kEnvs; ++k) {
        if (gaussian) {
          for (int64_t j = 0; j < a[k].values.size; ++j) {
            EXPECT_NEAR(a[k].values.data[j], b[k].values.data[j], 1e-5);
          }
        } else {
          EXPECT_EQ(a[k].index, b[k].index) << "step " << step << " env " << k;
        }
      }
      const auto next = observe(kEnvs * o);
      const std::vector<double> rewards = {0.5, -1.0, 0.25};
      const std::vector<uint8_t> terminal = {0, step % 4 == 1, 0};
      const std::vector<uint8_t> ended = {0, step % 4 == 1, step % 5 == 2};
      // Step 6 flushes the rollout early.
      fast->BatchObserveAndTrain({next.data_ptr<float>(), kEnvs * o}, rewards,
                                 terminal, ended, step == 6);
      slow->BatchObserveAndTrain({next.data_ptr<float>(), kEnvs * o}, rewards,
                                 terminal, ended, step == 6);
    }
    ASSERT_EQ(fast->num_updates(), slow->num_updates());
    ASSERT_GT(fast->num_updates(), 1);
    EXPECT_NEAR(fast->last_update().pi_loss, slow->last_update().pi_loss,
                1e-4 * (1 + std::abs(slow->last_update().pi_loss)));
    EXPECT_NEAR(fast->last_update().v_loss, slow->last_update().v_loss,
                1e-4 * (1 + std::abs(slow->last_update().v_loss)));
    const int64_t n = fast->local().size();
    testing::ExpectFloatMatchesDouble(
        torch::from_blob(const_cast<float*>(fast->shared_params()), {n}),
        torch::from_blob(const_cast<float*>(slow->shared_params()), {n}),
        "parameters after the updates");
  }
}

TEST(DensePathAgentTest, OnlyDescribedModelsTakeTheFastPath) {
  ConfigureTorchForFork();
  const Space flat = Space::Box({5}, -1.0f, 1.0f);
  const Space discrete = Space::Discrete(3);
  const Space box = Space::Box({2}, -2.0f, 2.0f);
  struct Case {
    std::string arch;
    bool fast;
  };
  const Space image = Space::Box({4, 10, 10}, 0.0f, 1.0f);
  const Space frames = Space::Box({2, 24, 24}, 0.0f, 255.0f);
  // Connect Four's planes and action mask: board-conv describes its trunk
  // but stays on LibTorch (Trunk::fast_path).
  const ArchCase connect_four{"", false,        3 * 6 * 7 + 7, 7,
                              {}, "board-conv", {3, 6, 7},     7};
  const Space board = ImageSpace(connect_four);
  const Space columns = Space::Discrete(7);
  for (const Case& c : std::vector<Case>{{"fc-softmax", true},
                                         {"fc-gaussian", true},
                                         {"fc-softmax-lstm", true},
                                         {"fc-gaussian-lstm", true},
                                         {"minatar-conv", true},
                                         {"atari-conv", true},
                                         {"minatar-conv-lstm", true},
                                         {"atari-conv-lstm", true},
                                         {"board-conv", false}}) {
    SCOPED_TRACE(c.arch);
    const bool game = c.arch == "board-conv";
    const Space& act = game ? columns
                       : c.arch.find("gaussian") != std::string::npos
                           ? box
                           : discrete;
    const Space& obs = game                                          ? board
                       : c.arch.find("minatar") != std::string::npos ? image
                       : c.arch.find("atari") != std::string::npos   ? frames
                                                                     : flat;
    for (bool off : {false, true}) {
      A3COptions options;
      options.no_fast_path = off;
      A3C agent(DefaultModelRegistry().Make(c.arch, obs, act), obs, act,
                options);
      EXPECT_EQ(agent.fast_path(), c.fast && !off);
    }
  }
}

TEST(DenseLayoutTest, RefusesADescriptionThatMissesParameters) {
  ConfigureTorchForFork();
  FcSoftmaxActorCritic model(4, 2, std::vector<int64_t>{8});
  FlatParameters flat(*model);
  DenseDescription d = *model->Describe();
  d.v.pop_back();
  try {
    DenseLayout::Of(d, flat);
    FAIL() << "accepted a description without the value's last layer";
  } catch (const std::logic_error& e) {
    // The v MLP now ends with 8 outputs: refused before the coverage check.
    EXPECT_NE(std::string(e.what()).find("one output"), std::string::npos)
        << e.what();
  }
  d = *model->Describe();
  d.v = {d.v.back()};  // Chains (8 -> 1) but reads 8 inputs, not 4.
  EXPECT_THROW(DenseLayout::Of(d, flat), std::logic_error);
  // A tensor outside the flat buffer.
  d = *model->Describe();
  d.pi.back().bias = torch::zeros({2});
  try {
    DenseLayout::Of(d, flat);
    FAIL() << "accepted a tensor outside the flat buffer";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("pi layer 1 bias"), std::string::npos)
        << e.what();
  }
  // A Gaussian model described as categorical: its log_std is left out.
  FcGaussianActorCritic gaussian(4, Space::Box({2}, -1.0f, 1.0f));
  FlatParameters gaussian_flat(*gaussian);
  d = *gaussian->Describe();
  d.kind = PolicyKind::kCategorical;
  try {
    DenseLayout::Of(d, gaussian_flat);
    FAIL() << "accepted a description that leaves out log_std";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("covers"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dense_path_test
}  // namespace asyncrl
