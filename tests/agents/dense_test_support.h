// What the fast path's tests (dense_path_test.cc, dense_conv_test.cc,
// dense_lstm_test.cc) share: the archs' cases, their models, and a model
// with its flat parameters and the fast path's layout over them beside the
// same model converted to double for LibTorch.
#ifndef ASYNCRL_TESTS_AGENTS_DENSE_TEST_SUPPORT_H_
#define ASYNCRL_TESTS_AGENTS_DENSE_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "asyncrl/agents/conv_models.h"
#include "asyncrl/agents/dense_path.h"
#include "asyncrl/agents/flat_parameters.h"
#include "asyncrl/agents/models.h"
#include "asyncrl/agents/torch_setup.h"

// Named apart from the other test files compiled with them in one unit
// (tests/CMakeLists.txt: unity groups).
namespace asyncrl::dense_path_test {

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
inline Space ImageSpace(const ArchCase& c) {
  if (c.image.empty()) return Space::Box({c.obs_size}, -10.0f, 10.0f);
  if (c.mask == 0) return Space::Box(c.image, 0.0f, 1.0f);
  Space s = Space::Box({c.obs_size}, 0.0f, 1.0f);
  s.planes = c.image;
  s.action_mask = c.mask;
  return s;
}

inline void PrintTo(const ArchCase& c, std::ostream* os) {
  *os << c.name << " obs " << c.obs_size << " actions " << c.actions;
}

inline Space ActionSpace(const ArchCase& c) {
  if (!c.gaussian) return Space::Discrete(c.actions);
  std::vector<float> low, high;
  for (int64_t j = 0; j < c.actions; ++j) {
    low.push_back(-1.0f - static_cast<float>(j));
    high.push_back(2.0f + static_cast<float>(j));
  }
  return Space::Box({c.actions}, low, high);
}

inline std::shared_ptr<ActorCriticModel> MakeModel(const ArchCase& c) {
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

inline std::vector<double> Doubles(const torch::Tensor& t) {
  const auto d = t.detach().to(torch::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

inline double MaxAbs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// max |a - b| / max(max |b|, 1e-300).
inline double RelativeDifference(const std::vector<double>& a,
                                 const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    d = std::max(d, std::abs(a[i] - b[i]));
  }
  return d / std::max(MaxAbs(b), 1e-300);
}

// `model`'s flat gradients (zeros for parameters the loss does not reach).
inline std::vector<double> FlatGrads(ActorCriticModel& model) {
  std::vector<double> grads;
  for (auto& p : model.parameters()) {
    const auto g = p.grad().defined() ? p.grad() : torch::zeros_like(p);
    const auto d = Doubles(g.flatten());
    grads.insert(grads.end(), d.begin(), d.end());
  }
  return grads;
}

// The policy's output the fast path keeps: logits, or Gaussian means.
inline torch::Tensor PolicyOf(const ModelOutput& out, bool gaussian) {
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

// The archs with a convolution (DenseConvPathTest), then all.
inline std::vector<ArchCase> ConvCases() {
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

}  // namespace asyncrl::dense_path_test

#endif  // ASYNCRL_TESTS_AGENTS_DENSE_TEST_SUPPORT_H_
