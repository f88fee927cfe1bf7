// The fast path (agents/dense_path.h) against LibTorch, per arch it takes
// (fc-softmax, fc-gaussian at the default sizes and a small one, each with
// the other's activation;
// minatar-conv, atari-conv, board-conv; the recurrent fc-softmax-lstm,
// fc-gaussian-lstm, minatar-conv-lstm, atari-conv-lstm, unrolled and
// stepped): outputs, log-probabilities and entropies in double to ~1e-12
// and in float within the float tolerance of gradient_check.h; the backward
// pass (through time) and the loss gradient against autograd in double;
// acting through the A3C agent with the fast path on and off; which models
// take it; layouts it refuses.
#include "asyncrl/agents/dense_path.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/conv_models.h"
#include "asyncrl/agents/distributions.h"
#include "asyncrl/agents/torch_setup.h"
#include "gradient_check.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace dense_path_test {
namespace {

struct ArchCase {
  std::string name;
  bool gaussian;
  int64_t obs_size;
  int64_t actions;  // Discrete actions, or Box dimensions.
  std::vector<int64_t> hidden;
  // A registered arch with a convolutional trunk over `image` (empty: the
  // fc archs with `hidden`); `mask` floats follow the image (a board game's
  // planes and action mask).
  std::string arch;
  std::vector<int64_t> image;
  int64_t mask = 0;
  // The fc archs' hidden activation (--activation): auto (fc-softmax relu,
  // fc-gaussian tanh), relu or tanh.
  std::string activation = "auto";
  // minatar-conv's and minatar-conv-lstm's --conv-channels; their
  // --hidden-sizes is `hidden` (empty: auto).
  std::string conv_channels = "auto";
};

// The observation space of a registered arch's case: flat when it has no
// image.
Space ImageSpace(const ArchCase& c) {
  if (c.image.empty()) return Space::Box({c.obs_size}, -10.0f, 10.0f);
  if (c.mask == 0) return Space::Box(c.image, 0.0f, 1.0f);
  Space s = Space::Box({c.obs_size}, 0.0f, 1.0f);
  s.planes = c.image;
  s.action_mask = c.mask;
  return s;
}

void PrintTo(const ArchCase& c, std::ostream* os) {
  *os << c.name << " obs " << c.obs_size << " actions " << c.actions;
}

Space ActionSpace(const ArchCase& c) {
  if (!c.gaussian) return Space::Discrete(c.actions);
  std::vector<float> low, high;
  for (int64_t j = 0; j < c.actions; ++j) {
    low.push_back(-1.0f - static_cast<float>(j));
    high.push_back(2.0f + static_cast<float>(j));
  }
  return Space::Box({c.actions}, low, high);
}

std::shared_ptr<ActorCriticModel> MakeModel(const ArchCase& c) {
  torch::manual_seed(3);
  std::shared_ptr<ActorCriticModel> model;
  if (!c.arch.empty()) {
    NetworkOptions network;
    network.conv_channels = c.conv_channels;
    for (const int64_t width : c.hidden) {
      network.hidden_sizes =
          (network.hidden_sizes == "auto" ? "" : network.hidden_sizes + ",") +
          std::to_string(width);
    }
    model = DefaultModelRegistry().Make(c.arch, ImageSpace(c), ActionSpace(c),
                                        network);
  } else {
    NetworkOptions network;
    network.activation = c.activation;
    const bool tanh = network.Tanh(c.gaussian);
    if (c.gaussian) {
      model = FcGaussianActorCritic(c.obs_size, ActionSpace(c), c.hidden, tanh)
                  .ptr();
    } else {
      model = FcSoftmaxActorCritic(c.obs_size, c.actions, c.hidden, tanh).ptr();
    }
  }
  // A log_std away from 0, so that its terms are exercised.
  torch::NoGradGuard g;
  for (auto& item : model->named_parameters()) {
    if (item.key() == "log_std") item.value().uniform_(-0.7, 0.4);
  }
  return model;
}

std::vector<double> Doubles(const torch::Tensor& t) {
  const auto d = t.detach().to(torch::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

double MaxAbs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// max |a - b| / max(max |b|, 1e-300).
double RelativeDifference(const std::vector<double>& a,
                          const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    d = std::max(d, std::abs(a[i] - b[i]));
  }
  return d / std::max(MaxAbs(b), 1e-300);
}

// `model`'s flat gradients (zeros for parameters the loss does not reach).
std::vector<double> FlatGrads(ActorCriticModel& model) {
  std::vector<double> grads;
  for (auto& p : model.parameters()) {
    const auto g = p.grad().defined() ? p.grad() : torch::zeros_like(p);
    const auto d = Doubles(g.flatten());
    grads.insert(grads.end(), d.begin(), d.end());
  }
  return grads;
}

// The policy's output the fast path keeps: logits, or Gaussian means.
torch::Tensor PolicyOf(const ModelOutput& out, bool gaussian) {
  return gaussian ? out.mean : out.logits;
}

// A model, its flat parameters, the fast path over them in double, and the
// same model converted to double for LibTorch.
class DensePathTest : public ::testing::TestWithParam<ArchCase> {
 protected:
  void SetUp() override {
    ConfigureTorchForFork();
    model_ = MakeModel(GetParam());
    flat_ = std::make_unique<FlatParameters>(*model_);
    std::optional<DenseDescription> described = model_->Describe();
    if (!described) {
      // board-conv stays on LibTorch (faster there), but the fast path
      // must compute its padded convolutions right all the same.
      const auto* trunk =
          dynamic_cast<const TrunkActorCriticImpl*>(model_.get());
      ASSERT_NE(trunk, nullptr) << GetParam().name << " describes nothing";
      described = trunk->DescribeTrunk();
    }
    ASSERT_TRUE(described.has_value());
    layout_ = DenseLayout::Of(*described, *flat_);
    layout_.row_size = GetParam().obs_size;  // As MakeDenseBackend sets it.
    params_.assign(flat_->params_data(), flat_->params_data() + flat_->size());
    reference_ = MakeModel(GetParam());
    reference_->to(torch::kDouble);
    torch::manual_seed(5);
    // Large enough that some ReLUs are off and some tanh saturate.
    obs_ = torch::randn({kRows, GetParam().obs_size}, torch::kDouble) * 2;
  }

  // Random actions of the policy's kind for kRows rows.
  void MakeActions() {
    torch::manual_seed(9);
    const ArchCase& c = GetParam();
    if (c.gaussian) {
      const auto a = torch::randn({kRows, c.actions}) * 1.5;
      cont_actions_.assign(a.data_ptr<float>(),
                           a.data_ptr<float>() + a.numel());
    } else {
      const auto a = torch::randint(c.actions, {kRows}, torch::kInt64);
      actions_.assign(a.data_ptr<int64_t>(), a.data_ptr<int64_t>() + kRows);
    }
  }

  // The kRows rows forwarded as an agent acts: appended step by step (1
  // row: gemv), the last ones values only (bootstrap observations). The
  // convolutions' kept columns grow on the way (room for 1, 3, 6, then 12
  // rows), keeping the rows before.
  void ForwardInPieces(DenseActorCritic<double>& fast) {
    const double* obs = obs_.data_ptr<double>();
    const int64_t o = GetParam().obs_size;
    fast.Forward(params_.data(), obs, 1);
    fast.Forward(params_.data(), obs + o, 2, 1);
    fast.Forward(params_.data(), obs + 3 * o, 2, 3);
    fast.Forward(params_.data(), obs + 5 * o, 2, 5, /*with_policy=*/false);
  }

  // obs_'s images (the convolution's input; what follows, Connect Four's
  // action mask, as it was) as MinAtar's frames are: mostly lines of zeros
  // (about 1 line in 7 set, a line's cells set or not at random).
  void SetSparseFrames() {
    torch::manual_seed(23);
    const DenseLayout::Conv& c = layout_.convs.front();
    const int64_t lines = c.in_channels * c.in_h;
    const auto line_set =
        (torch::rand({kRows, lines, 1}, torch::kDouble) < 0.15)
            .to(torch::kDouble);
    const auto cell_set =
        (torch::rand({kRows, lines, c.in_w}, torch::kDouble) < 0.7)
            .to(torch::kDouble);
    torch::Tensor obs = obs_.clone();
    obs.slice(1, 0, c.in_size()) *=
        (line_set * cell_set).reshape({kRows, c.in_size()});
    obs_ = obs.contiguous();
  }

  // The reference's flat gradients.
  std::vector<double> ReferenceGrads() { return FlatGrads(*reference_); }
  torch::Tensor PolicyOutput(const ModelOutput& out) const {
    return PolicyOf(out, GetParam().gaussian);
  }

  // Gradients drawn for the outputs of `obs`' rows (d_policy [rows, policy
  // size], d_values [rows]) and autograd's flat gradients of sum(policy *
  // d_policy) + sum(value * d_values) through the reference (once per
  // test: they accumulate).
  struct ReferenceBackward {
    torch::Tensor d_policy, d_values;
    std::vector<double> grads;
  };
  ReferenceBackward BackwardOfReference(const torch::Tensor& obs) {
    const int64_t rows = obs.size(0);
    ReferenceBackward b;
    b.d_policy = torch::randn({rows, layout_.policy_size()}, torch::kDouble);
    b.d_values = torch::randn({rows}, torch::kDouble);
    const ModelOutput out = reference_->Forward(obs);
    ((PolicyOutput(out) * b.d_policy).sum() + (out.value * b.d_values).sum())
        .backward();
    b.grads = ReferenceGrads();
    return b;
  }

  static constexpr int64_t kRows = 7;
  std::shared_ptr<ActorCriticModel> model_;
  std::unique_ptr<FlatParameters> flat_;
  DenseLayout layout_;
  std::vector<double> params_;
  std::shared_ptr<ActorCriticModel> reference_;
  torch::Tensor obs_;
  std::vector<int64_t> actions_;
  std::vector<float> cont_actions_;
};

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

// DensePathTest's archs with a convolution (ConvCases).
class DenseConvPathTest : public DensePathTest {};

// Frames mostly of lines of zeros (MinAtar's): the first convolution over
// the lines that are set, or as im2col and gemm, or as the rows decide
// (kAuto, which takes the sparse route for these frames), with and without
// room for the columns, and switched between the forward and the backward
// pass or from one piece to the next (a piece forwarded sparse keeps no
// columns, so the backward pass builds them again or takes the sparse
// route): all equal LibTorch and autograd in double.

TEST_P(DenseConvPathTest, SparseInputsEqualLibTorchEitherRoute) {
  ASSERT_FALSE(layout_.convs.empty()) << GetParam().name;
  using Sparse = DenseActorCritic<double>::SparseInputs;
  constexpr int64_t kBackRows = 5;
  SetSparseFrames();
  const double* rows = obs_.data_ptr<double>();
  const ModelOutput want = reference_->Forward(obs_);
  const int64_t p = layout_.policy_size();
  const std::vector<double> want_policy =
      Doubles(PolicyOutput(want).slice(0, 0, 5));
  const std::vector<double> want_values = Doubles(want.value);
  const ReferenceBackward ref =
      BackwardOfReference(obs_.slice(0, 0, kBackRows));
  const torch::Tensor& d_policy = ref.d_policy;
  const torch::Tensor& d_values = ref.d_values;
  const std::vector<double>& want_grads = ref.grads;
  {
    // The frames are sparse enough for the sparse route, and dense ones
    // are not.
    DenseActorCritic<double> fast(layout_);
    EXPECT_TRUE(fast.SparseRoute(rows, kRows));
    const torch::Tensor dense = torch::randn_like(obs_);
    EXPECT_FALSE(fast.SparseRoute(dense.data_ptr<double>(), kRows));
  }
  auto expect_all = [&](DenseActorCritic<double>& fast, Sparse backward) {
    EXPECT_LE(RelativeDifference(
                  std::vector<double>(fast.policy(), fast.policy() + 5 * p),
                  want_policy),
              1e-12);
    EXPECT_LE(RelativeDifference(
                  std::vector<double>(fast.values(), fast.values() + kRows),
                  want_values),
              1e-12);
    fast.set_sparse_inputs(backward);
    std::vector<double> grads(params_.size(), 0.0);
    fast.Backward(params_.data(), rows, kBackRows, d_policy.data_ptr<double>(),
                  d_values.data_ptr<double>(), grads.data());
    EXPECT_LE(RelativeDifference(grads, want_grads), 1e-12);
  };
  const std::vector<std::pair<const char*, Sparse>> modes = {
      {"sparse", Sparse::kAlways},
      {"dense", Sparse::kNever},
      {"auto", Sparse::kAuto}};
  // With room for the columns, a dense forward pass keeps them and the
  // update reads them whatever its mode; without, the update takes its
  // own mode's route.
  for (const bool room : {true, false}) {
    for (const auto& [forward_name, forward] : modes) {
      for (const auto& [backward_name, backward] : modes) {
        SCOPED_TRACE(std::string("forward ") + forward_name + ", backward " +
                     backward_name + (room ? "" : ", no columns kept"));
        DenseActorCritic<double> fast(layout_);
        if (!room) fast.set_kept_columns_bytes(0);
        fast.set_sparse_inputs(forward);
        ForwardInPieces(fast);
        expect_all(fast, backward);
      }
    }
  }
  for (const auto& [backward_name, backward] : modes) {
    // Row 0 dense (its columns kept), rows 1-2 sparse, rows 3-6 dense
    // again: only row 0's columns are kept, so the update over 5 rows
    // builds the columns again or takes the sparse route.
    SCOPED_TRACE(std::string("routes mixed between pieces, backward ") +
                 backward_name);
    DenseActorCritic<double> fast(layout_);
    const int64_t o = GetParam().obs_size;
    fast.set_sparse_inputs(Sparse::kNever);
    fast.Forward(params_.data(), rows, 1);
    fast.set_sparse_inputs(Sparse::kAlways);
    fast.Forward(params_.data(), rows + o, 2, 1);
    fast.set_sparse_inputs(Sparse::kNever);
    fast.Forward(params_.data(), rows + 3 * o, 2, 3);
    fast.Forward(params_.data(), rows + 5 * o, 2, 5, /*with_policy=*/false);
    expect_all(fast, backward);
  }
}

// The float loops (fast_math.cc's vector clones, MinAtar's shape folded at
// compile time for minatar_conv) against LibTorch in double, the sparse
// route and im2col each forced, within the float tolerance.
TEST_P(DenseConvPathTest,
       FloatSparseRouteMatchesDoubleWithinTheFloatTolerance) {
  using Sparse = DenseActorCritic<float>::SparseInputs;
  constexpr int64_t kBackRows = 5;
  SetSparseFrames();
  const torch::Tensor obs = obs_.to(torch::kFloat).contiguous();
  const int64_t p = layout_.policy_size();
  const ModelOutput want = reference_->Forward(obs_);
  const ReferenceBackward ref =
      BackwardOfReference(obs_.slice(0, 0, kBackRows));
  const torch::Tensor want_grads = torch::tensor(ref.grads);
  const torch::Tensor d_policy_f = ref.d_policy.to(torch::kFloat).contiguous();
  const torch::Tensor d_values_f = ref.d_values.to(torch::kFloat).contiguous();
  for (const Sparse mode : {Sparse::kAlways, Sparse::kNever}) {
    SCOPED_TRACE(mode == Sparse::kAlways ? "sparse" : "im2col");
    DenseActorCritic<float> fast(layout_);
    fast.set_sparse_inputs(mode);
    fast.set_kept_columns_bytes(0);  // The update takes the mode's route.
    fast.Forward(flat_->params_data(), obs.data_ptr<float>(), kRows);
    testing::ExpectFloatMatchesDouble(
        torch::from_blob(const_cast<float*>(fast.policy()), {kRows * p}),
        PolicyOutput(want), "policy outputs");
    testing::ExpectFloatMatchesDouble(
        torch::from_blob(const_cast<float*>(fast.values()), {kRows}),
        want.value, "values");
    std::vector<float> grads(params_.size(), 0.0f);
    fast.Backward(flat_->params_data(), obs.data_ptr<float>(), kBackRows,
                  d_policy_f.data_ptr<float>(), d_values_f.data_ptr<float>(),
                  grads.data());
    testing::ExpectFloatMatchesDouble(
        torch::from_blob(grads.data(), {static_cast<int64_t>(grads.size())}),
        want_grads, "gradients");
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

// The archs with a convolution (DenseConvPathTest), then all.
std::vector<ArchCase> ConvCases() {
  return {
      // MinAtar Breakout's [4, 10, 10] frames.
      ArchCase{"minatar_conv", false, 400, 3, {}, "minatar-conv", {4, 10, 10}},
      // --conv-channels 5 --hidden-sizes 24,12: two fully connected
      // layers after the convolution.
      ArchCase{"minatar_conv_shaped",
               false,
               4 * 6 * 5,
               3,
               {24, 12},
               "minatar-conv",
               {4, 6, 5},
               0,
               "auto",
               "5"},
      // Rows of 17 outputs: runs of 8, 8 and 1 columns.
      ArchCase{"minatar_conv_wide",
               false,
               4 * 6 * 19,
               3,
               {16},
               "minatar-conv",
               {4, 6, 19}},
      // Two strided convolutions, inputs scaled by 1/255.
      ArchCase{
          "atari_conv", false, 2 * 28 * 29, 4, {}, "atari-conv", {2, 28, 29}},
      // Padded convolutions over Connect Four's planes,
      // its action mask after them.
      ArchCase{"board_conv",
               false,
               3 * 6 * 7 + 7,
               7,
               {},
               "board-conv",
               {3, 6, 7},
               7}};
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
INSTANTIATE_TEST_SUITE_P(ConvArchs, DenseConvPathTest,
                         ::testing::ValuesIn(ConvCases()),
                         [](const auto& info) { return info.param.name; });

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
