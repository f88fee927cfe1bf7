// Convolutional actor-critics for image observations ([C, H, W] float
// boxes): MinAtar's baseline body and the reference's Atari network. Both
// share one trunk between a linear softmax policy head and a linear value
// head. The trunks are also the encoders of the recurrent variants
// (agents/recurrent_models.h).
#ifndef ASYNCRL_AGENTS_CONV_MODELS_H_
#define ASYNCRL_AGENTS_CONV_MODELS_H_

#include <torch/torch.h>

#include "asyncrl/agents/models.h"

namespace asyncrl {

// Flat rows [N, C * H * W] (as agents hold observations) viewed as images
// [N, C, H, W]. No parameters; a named layer (not a torch::nn::Functional)
// so that the TorchScript writer (agents/policy_script.h) can write it.
class ImageViewImpl : public torch::nn::Module {
 public:
  explicit ImageViewImpl(std::vector<int64_t> chw) : chw_(std::move(chw)) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return x.view({-1, chw_[0], chw_[1], chw_[2]});
  }
  const std::vector<int64_t>& chw() const { return chw_; }

 private:
  std::vector<int64_t> chw_;
};
TORCH_MODULE(ImageView);

// Columns [begin, end) of flat rows (a game's board planes without the
// mask that follows them). No parameters; named as ImageView.
class ColumnsImpl : public torch::nn::Module {
 public:
  ColumnsImpl(int64_t begin, int64_t end) : begin_(begin), end_(end) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return x.slice(1, begin_, end_);
  }
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }

 private:
  int64_t begin_;
  int64_t end_;
};
TORCH_MODULE(Columns);

// Multiplies its input by a constant (the Atari body's 1/255). No
// parameters; named for the same reason as ImageView.
class ScaleImpl : public torch::nn::Module {
 public:
  explicit ScaleImpl(double factor) : factor_(factor) {}
  torch::Tensor forward(const torch::Tensor& x) { return x * factor_; }
  double factor() const { return factor_; }

 private:
  double factor_;
};
TORCH_MODULE(Scale);

// A feature extractor: maps [N, observation size] (flat rows, as agents hold
// observations) to [N, features].
struct Trunk {
  torch::nn::Sequential net{nullptr};
  int64_t features = 0;
  // Whether agents take the fast path (agents/dense_path.h) for a model on
  // this trunk, when it can describe it; false where LibTorch measured
  // faster (BoardTrunk).
  bool fast_path = true;
};

// MinAtar's baseline body (Young & Tian, 2019): a 3x3 convolution with 16
// channels (stride 1, no padding), ReLU, a 128-unit fully connected layer,
// ReLU; `channels` and the fully connected layers' `widths` (each followed
// by a ReLU) make it wider or deeper. Needs [C, H, W] observations with H,
// W >= 3.
Trunk MinAtarTrunk(const Space& observation_space, int64_t channels = 16,
                   const std::vector<int64_t>& widths = {128});

// The reference's Atari body (Mnih et al., 2016): inputs scaled by 1/255,
// conv 16x8x8 stride 4, conv 32x4x4 stride 2, a 256-unit fully connected
// layer, ReLU after each. Needs [C, H, W] observations with H, W >= 20
// (84x84 frames in the original).
Trunk AtariTrunk(const Space& observation_space);

// A board game's body (--arch board-conv): the observation's board planes
// ([C, H, W], Space::planes; the legal-action mask that follows is left to
// the policy's masking), two 3x3 convolutions of 32 channels with zero
// padding 1 (the board keeps its size, edges included), ReLU after each, a
// 128-unit fully connected layer, ReLU. Throws std::invalid_argument unless
// the observations carry planes.
Trunk BoardTrunk(const Space& observation_space);

// A linear layer of `width` units and a ReLU over flat observations.
Trunk FcTrunk(const Space& observation_space, int64_t width);

// The fast path's description of a trunk (agents/dense_path.h): `net`'s
// image, input scale, convolutions and dense layers into `d` (its other
// fields left alone). Either Columns from 0 or Scale, then ImageView,
// Conv2d, ReLU, Flatten, Linear; or Linear layers over flat observations
// (`d->image` stays empty); every Conv2d and Linear followed by a ReLU, at
// least one Linear. False if `net` is anything else.
bool DescribeSequential(const torch::nn::Sequential& net, DenseDescription* d);

// Throws std::invalid_argument naming `arch` and the observation space
// unless it is a Box of shape [C, H, W] with H, W >= min_side.
void RequireImage(const std::string& arch, const Space& observation_space,
                  int64_t min_side);

// A trunk shared by a linear softmax policy head and a linear value head.
class TrunkActorCriticImpl : public ActorCriticModel {
 public:
  TrunkActorCriticImpl(Trunk trunk, int64_t n_actions);
  PolicyKind Kind() const override { return PolicyKind::kCategorical; }
  ModelOutput Forward(const torch::Tensor& obs) override;
  // The fast path's description when the trunk is made of the modules it
  // computes (Columns from 0 or Scale, then ImageView, Conv2d, ReLU,
  // Flatten, Linear; every Conv2d and Linear followed by a ReLU).
  std::optional<DenseDescription> Describe() const override;
  // The same whether or not the trunk takes the fast path (tests).
  std::optional<DenseDescription> DescribeTrunk() const;
  std::optional<ScriptedOutput> Script(ScriptWriter& writer,
                                       const std::string& obs,
                                       const std::string& state) const override;

 private:
  torch::nn::Sequential trunk_{nullptr};
  torch::nn::Linear pi_{nullptr};
  torch::nn::Linear v_{nullptr};
  bool fast_path_ = true;
};
TORCH_MODULE(TrunkActorCritic);

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_CONV_MODELS_H_
