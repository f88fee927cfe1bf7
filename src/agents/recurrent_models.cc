#include "asyncrl/agents/recurrent_models.h"

#include <stdexcept>

namespace asyncrl {

ModelOutput RecurrentActorCritic::Forward(const torch::Tensor& obs) {
  const torch::Tensor features = Encode(obs);
  const torch::Tensor state =
      torch::zeros({features.size(0), StateSize()}, features.options());
  return Heads(Step(features, state).hidden);
}

LstmActorCriticImpl::LstmActorCriticImpl(std::vector<Trunk> trunks,
                                         int64_t lstm_size,
                                         const Space& action_space)
    : kind_(action_space.IsDiscrete() ? PolicyKind::kCategorical
                                      : PolicyKind::kGaussian),
      lstm_size_(lstm_size) {
  if (trunks.empty() || trunks.size() > 2) {
    throw std::invalid_argument("LstmActorCritic: 1 or 2 trunks, got " +
                                std::to_string(trunks.size()));
  }
  for (size_t i = 0; i < trunks.size(); ++i) {
    const std::string suffix =
        trunks.size() == 1 ? "" : (i == 0 ? "_pi" : "_v");
    trunks_.push_back(register_module("trunk" + suffix, trunks[i].net));
    features_.push_back(trunks[i].features);
    cells_.push_back(register_module(
        "lstm" + suffix, torch::nn::LSTMCell(trunks[i].features, lstm_size)));
  }
  const int64_t outputs = kind_ == PolicyKind::kCategorical
                              ? action_space.n
                              : action_space.FlatSize();
  pi_ = register_module("pi", torch::nn::Linear(lstm_size, outputs));
  v_ = register_module("v", torch::nn::Linear(lstm_size, 1));
  if (kind_ == PolicyKind::kGaussian) head_.Register(*this, action_space);
}

int64_t LstmActorCriticImpl::StateSize() const {
  return 2 * lstm_size_ * static_cast<int64_t>(cells_.size());
}

torch::Tensor LstmActorCriticImpl::Encode(const torch::Tensor& obs) {
  if (trunks_.size() == 1) return trunks_[0]->forward(obs);
  return torch::cat({trunks_[0]->forward(obs), trunks_[1]->forward(obs)}, 1);
}

RecurrentStep LstmActorCriticImpl::Step(const torch::Tensor& features,
                                        const torch::Tensor& state) {
  std::vector<torch::Tensor> hidden;
  std::vector<torch::Tensor> states;
  int64_t f0 = 0;
  for (size_t i = 0; i < cells_.size(); ++i) {
    const int64_t s0 = 2 * lstm_size_ * static_cast<int64_t>(i);
    const auto x = features.slice(1, f0, f0 + features_[i]);
    f0 += features_[i];
    const auto h = state.slice(1, s0, s0 + lstm_size_);
    const auto c = state.slice(1, s0 + lstm_size_, s0 + 2 * lstm_size_);
    auto [h2, c2] = cells_[i]->forward(x, std::make_tuple(h, c));
    hidden.push_back(h2);
    states.push_back(h2);
    states.push_back(c2);
  }
  RecurrentStep step;
  // With two branches the hidden output holds both: [policy | value].
  step.hidden = hidden.size() == 1 ? hidden[0] : torch::cat(hidden, 1);
  step.state = torch::cat(states, 1);
  return step;
}

ModelOutput LstmActorCriticImpl::Heads(const torch::Tensor& hidden) {
  const bool split = cells_.size() == 2;
  const auto h_pi = split ? hidden.slice(1, 0, lstm_size_) : hidden;
  const auto h_v = split ? hidden.slice(1, lstm_size_, 2 * lstm_size_) : hidden;
  ModelOutput out;
  if (kind_ == PolicyKind::kCategorical) {
    out.logits = pi_->forward(h_pi);
  } else {
    head_.Apply(pi_->forward(h_pi), &out);
  }
  out.value = v_->forward(h_v).squeeze(-1);
  return out;
}

}  // namespace asyncrl
