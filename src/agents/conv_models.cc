#include "asyncrl/agents/conv_models.h"

#include <stdexcept>

#include "asyncrl/agents/policy_script.h"

namespace asyncrl {
namespace {

// Output side of a convolution without padding.
int64_t ConvOut(int64_t side, int64_t kernel, int64_t stride) {
  return (side - kernel) / stride + 1;
}

// Reshapes flat rows back into images.
ImageView AsImages(const Space& space) {
  return ImageView(
      std::vector<int64_t>{space.shape[0], space.shape[1], space.shape[2]});
}

}  // namespace

void RequireImage(const std::string& arch, const Space& observation_space,
                  int64_t min_side) {
  const auto& s = observation_space.shape;
  if (observation_space.IsDiscrete() || s.size() != 3 || s[1] < min_side ||
      s[2] < min_side) {
    throw std::invalid_argument(
        "arch '" + arch +
        "' needs image observations of shape [C, H, W] with " +
        "H, W >= " + std::to_string(min_side) + "; the environment's are " +
        observation_space.ToString());
  }
}

Trunk MinAtarTrunk(const Space& observation_space, int64_t channels,
                   const std::vector<int64_t>& widths) {
  RequireImage("minatar-conv", observation_space, 3);
  if (channels < 1 || widths.empty()) {
    throw std::invalid_argument(
        "MinAtarTrunk: needs channels >= 1 and at least one width");
  }
  const int64_t c = observation_space.shape[0];
  const int64_t h = ConvOut(observation_space.shape[1], 3, 1);
  const int64_t w = ConvOut(observation_space.shape[2], 3, 1);
  Trunk trunk;
  trunk.net = torch::nn::Sequential(
      AsImages(observation_space),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(c, channels, 3)),
      torch::nn::ReLU(), torch::nn::Flatten());
  int64_t in = channels * h * w;
  for (const int64_t width : widths) {
    trunk.net->push_back(torch::nn::Linear(in, width));
    trunk.net->push_back(torch::nn::ReLU());
    in = width;
  }
  trunk.features = in;
  return trunk;
}

Trunk AtariTrunk(const Space& observation_space) {
  RequireImage("atari-conv", observation_space, 20);
  const int64_t c = observation_space.shape[0];
  const int64_t h = ConvOut(ConvOut(observation_space.shape[1], 8, 4), 4, 2);
  const int64_t w = ConvOut(ConvOut(observation_space.shape[2], 8, 4), 4, 2);
  Trunk trunk;
  trunk.features = 256;
  trunk.net = torch::nn::Sequential(
      AsImages(observation_space), Scale(1.0 / 255.0),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(c, 16, 8).stride(4)),
      torch::nn::ReLU(),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 4).stride(2)),
      torch::nn::ReLU(), torch::nn::Flatten(),
      torch::nn::Linear(32 * h * w, trunk.features), torch::nn::ReLU());
  return trunk;
}

Trunk BoardTrunk(const Space& observation_space) {
  const std::vector<int64_t>& p = observation_space.planes;
  if (observation_space.IsDiscrete() || p.size() != 3) {
    throw std::invalid_argument(
        "arch 'board-conv' needs a board game's observation planes (--env "
        "ConnectFour, TicTacToe); the environment's observations are " +
        observation_space.ToString());
  }
  constexpr int64_t kChannels = 32;
  const int64_t board = p[0] * p[1] * p[2];
  Trunk trunk;
  trunk.features = 128;
  // LibTorch's convolutions (oneDNN's, which can use Winograd for 3x3
  // kernels) beat the fast path's im2col + sgemm on these two padded
  // 32-channel layers: configs/connectfour-board-conv.conf, 300k steps,
  // 26.6 s against 29.5 s (its backward pass 9.4 s against 16.6 s).
  trunk.fast_path = false;
  trunk.net = torch::nn::Sequential(
      Columns(0, board), ImageView(p),
      torch::nn::Conv2d(
          torch::nn::Conv2dOptions(p[0], kChannels, 3).padding(1)),
      torch::nn::ReLU(),
      torch::nn::Conv2d(
          torch::nn::Conv2dOptions(kChannels, kChannels, 3).padding(1)),
      torch::nn::ReLU(), torch::nn::Flatten(),
      torch::nn::Linear(kChannels * p[1] * p[2], trunk.features),
      torch::nn::ReLU());
  return trunk;
}

Trunk FcTrunk(const Space& observation_space, int64_t width) {
  if (observation_space.IsDiscrete()) {
    throw std::invalid_argument(
        "observation space " + observation_space.ToString() +
        " is not supported; accepted: Box observations");
  }
  Trunk trunk;
  trunk.features = width;
  trunk.net = torch::nn::Sequential(
      torch::nn::Linear(observation_space.FlatSize(), width),
      torch::nn::ReLU());
  return trunk;
}

TrunkActorCriticImpl::TrunkActorCriticImpl(Trunk trunk, int64_t n_actions)
    : trunk_(register_module("trunk", trunk.net)),
      pi_(register_module("pi", torch::nn::Linear(trunk.features, n_actions))),
      v_(register_module("v", torch::nn::Linear(trunk.features, 1))),
      fast_path_(trunk.fast_path) {}

ModelOutput TrunkActorCriticImpl::Forward(const torch::Tensor& obs) {
  const torch::Tensor h = trunk_->forward(obs);
  ModelOutput out;
  out.logits = pi_->forward(h);
  out.value = v_->forward(h).squeeze(-1);
  return out;
}

std::optional<DenseDescription> TrunkActorCriticImpl::Describe() const {
  if (!fast_path_) return std::nullopt;
  return DescribeTrunk();
}

bool DescribeSequential(const torch::nn::Sequential& net, DenseDescription* d) {
  bool flattened = false;
  // Whether the module before this one was a Conv2d or Linear, whose ReLU
  // is still due.
  bool relu_due = false;
  int64_t columns_end = -1;
  for (const auto& module : net->children()) {
    const bool relu = module->as<torch::nn::ReLU>() != nullptr &&
                      !module->as<torch::nn::ReLU>()->options.inplace();
    if (relu_due != relu) return false;
    relu_due = false;
    if (relu) continue;
    if (const auto* columns = module->as<Columns>()) {
      if (!d->image.empty() || columns->begin() != 0 || columns_end >= 0) {
        return false;
      }
      columns_end = columns->end();
    } else if (const auto* scale = module->as<Scale>()) {
      // Elementwise: before or after the view alike.
      if (!d->convs.empty()) return false;
      d->input_scale *= scale->factor();
    } else if (const auto* view = module->as<ImageView>()) {
      if (!d->image.empty() || !d->trunk.empty() || view->chw().size() != 3) {
        return false;
      }
      d->image = view->chw();
      if (columns_end >= 0 &&
          columns_end != d->image[0] * d->image[1] * d->image[2]) {
        return false;
      }
    } else if (const auto* conv = module->as<torch::nn::Conv2d>()) {
      const auto& o = conv->options;
      const auto& k = o.kernel_size();
      const auto& st = o.stride();
      const auto& di = o.dilation();
      const auto* pad = c10::get_if<torch::ExpandingArray<2>>(&o.padding());
      if (d->image.empty() || flattened || pad == nullptr || o.groups() != 1 ||
          !o.bias() ||
          !c10::holds_alternative<torch::enumtype::kZeros>(o.padding_mode()) ||
          (*k)[0] != (*k)[1] || (*st)[0] != (*st)[1] ||
          (**pad)[0] != (**pad)[1] || (*di)[0] != 1 || (*di)[1] != 1) {
        return false;
      }
      DenseDescription::Conv described;
      described.weight = conv->weight;
      described.bias = conv->bias;
      described.stride = (*st)[0];
      described.padding = (**pad)[0];
      d->convs.push_back(described);
      relu_due = true;
    } else if (const auto* flatten = module->as<torch::nn::Flatten>()) {
      if (d->image.empty() || flattened || flatten->options.start_dim() != 1 ||
          flatten->options.end_dim() != -1) {
        return false;
      }
      flattened = true;
    } else if (const auto* linear = module->as<torch::nn::Linear>()) {
      // After the image's flattening, or straight over flat observations
      // (nothing selected or scaled: only an image's first convolution
      // applies the scale).
      const bool flat_input =
          d->image.empty() && columns_end < 0 && d->input_scale == 1.0;
      if (!linear->options.bias() || !(flattened || flat_input)) {
        return false;
      }
      d->trunk.push_back({linear->weight, linear->bias});
      relu_due = true;
    } else {
      return false;
    }
  }
  return !relu_due && !d->trunk.empty() &&
         (d->image.empty() ? columns_end < 0 && d->input_scale == 1.0
                           : flattened);
}

std::optional<DenseDescription> TrunkActorCriticImpl::DescribeTrunk() const {
  DenseDescription d;
  if (!DescribeSequential(trunk_, &d) || d.image.empty()) return std::nullopt;
  d.pi.push_back({pi_->weight, pi_->bias});
  d.v.push_back({v_->weight, v_->bias});
  return d;
}

std::optional<ScriptedOutput> TrunkActorCriticImpl::Script(
    ScriptWriter& writer, const std::string& obs,
    const std::string& /*state*/) const {
  const std::string h = writer.Sequential(*trunk_, obs, "trunk");
  ScriptedOutput out;
  out.logits = writer.Linear(*pi_, h, "pi");
  out.value = writer.Linear(*v_, h, "v") + ".squeeze(-1)";
  return out;
}

}  // namespace asyncrl
