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

Trunk MinAtarTrunk(const Space& observation_space) {
  RequireImage("minatar-conv", observation_space, 3);
  const int64_t c = observation_space.shape[0];
  const int64_t h = ConvOut(observation_space.shape[1], 3, 1);
  const int64_t w = ConvOut(observation_space.shape[2], 3, 1);
  Trunk trunk;
  trunk.features = 128;
  trunk.net = torch::nn::Sequential(
      AsImages(observation_space),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(c, 16, 3)), torch::nn::ReLU(),
      torch::nn::Flatten(), torch::nn::Linear(16 * h * w, trunk.features),
      torch::nn::ReLU());
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
      v_(register_module("v", torch::nn::Linear(trunk.features, 1))) {}

ModelOutput TrunkActorCriticImpl::Forward(const torch::Tensor& obs) {
  const torch::Tensor h = trunk_->forward(obs);
  ModelOutput out;
  out.logits = pi_->forward(h);
  out.value = v_->forward(h).squeeze(-1);
  return out;
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
