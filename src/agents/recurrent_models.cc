#include "asyncrl/agents/recurrent_models.h"

#include <stdexcept>

#include "asyncrl/agents/policy_script.h"

namespace asyncrl {

ModelOutput RecurrentActorCritic::Forward(const torch::Tensor& obs) {
  const torch::Tensor features = Encode(obs);
  const torch::Tensor state =
      torch::zeros({features.size(0), StateSize()}, features.options());
  return Heads(CoreStep(features, state).hidden);
}

ModelStep RecurrentActorCritic::Step(const torch::Tensor& obs,
                                     const torch::Tensor& state) {
  const RecurrentStep step = CoreStep(Encode(obs), state);
  return {Heads(step.hidden), step.state};
}

UnrollOutput RecurrentActorCritic::Unroll(const UnrollInput& input) {
  const int64_t k = input.batch;
  const int64_t steps = input.obs.size(0) / k;
  const int64_t b = input.bootstrap_obs.size(0);
  const torch::Tensor features = Encode(input.obs);
  torch::Tensor state = input.initial_state.defined()
                            ? input.initial_state
                            : torch::zeros({k, StateSize()});
  std::vector<torch::Tensor> hidden;
  hidden.reserve(steps);
  // Rows of the state after each step, for the bootstrap observations.
  std::vector<torch::Tensor> after(steps);
  std::vector<float> keep(k);
  for (int64_t s = 0; s < steps; ++s) {
    const RecurrentStep step =
        CoreStep(features.slice(0, s * k, (s + 1) * k), state);
    hidden.push_back(step.hidden);
    state = step.state;
    after[s] = state;
    bool any_ended = false;
    for (int64_t r = 0; r < k; ++r) {
      const bool ended = input.sequence_end[s * k + r] != 0;
      keep[r] = ended ? 0.0f : 1.0f;
      any_ended |= ended;
    }
    if (any_ended && s + 1 < steps) {
      state = state * torch::tensor(keep).view({k, 1});
    }
  }
  UnrollOutput result;
  result.output = Heads(torch::cat(hidden));
  if (b == 0) {
    result.bootstrap_values = torch::zeros({0});
    return result;
  }
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> bootstrap_states(b);
  for (int64_t j = 0; j < b; ++j) {
    const int64_t row = input.bootstrap_row[j];
    bootstrap_states[j] = after[row / k][row % k].detach();
  }
  const RecurrentStep boot =
      CoreStep(Encode(input.bootstrap_obs), torch::stack(bootstrap_states));
  result.bootstrap_values = Heads(boot.hidden).value;
  return result;
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
    fast_path_ = fast_path_ && trunks[i].fast_path;
    const std::string suffix =
        trunks.size() == 1 ? "" : (i == 0 ? "_pi" : "_v");
    trunks_.push_back(register_module("trunk" + suffix, trunks[i].net));
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
  // Per cell, the input's share of the gates: [N, 4 * lstm size].
  std::vector<torch::Tensor> gates;
  for (size_t i = 0; i < cells_.size(); ++i) {
    const torch::nn::LSTMCellImpl& cell = *cells_[i];
    gates.push_back(torch::addmm(cell.bias_ih + cell.bias_hh,
                                 trunks_[i]->forward(obs), cell.weight_ih.t()));
  }
  return gates.size() == 1 ? gates[0] : torch::cat(gates, 1);
}

RecurrentStep LstmActorCriticImpl::CoreStep(const torch::Tensor& features,
                                            const torch::Tensor& state) {
  const int64_t h_size = lstm_size_;
  std::vector<torch::Tensor> hidden;
  std::vector<torch::Tensor> states;
  for (size_t i = 0; i < cells_.size(); ++i) {
    const int64_t s0 = 2 * h_size * static_cast<int64_t>(i);
    const auto h = state.slice(1, s0, s0 + h_size);
    const auto c = state.slice(1, s0 + h_size, s0 + 2 * h_size);
    const auto x_gates =
        features.slice(1, 4 * h_size * static_cast<int64_t>(i),
                       4 * h_size * static_cast<int64_t>(i + 1));
    const torch::Tensor gates =
        torch::addmm(x_gates, h, cells_[i]->weight_hh.t());
    // Gate order i, f, g, o (LSTMCell's): sigmoid over i and f together.
    const torch::Tensor in_forget =
        torch::sigmoid(gates.slice(1, 0, 2 * h_size));
    const torch::Tensor cell_gate =
        torch::tanh(gates.slice(1, 2 * h_size, 3 * h_size));
    const torch::Tensor out_gate =
        torch::sigmoid(gates.slice(1, 3 * h_size, 4 * h_size));
    const torch::Tensor c2 =
        torch::addcmul(in_forget.slice(1, h_size, 2 * h_size) * c,
                       in_forget.slice(1, 0, h_size), cell_gate);
    const torch::Tensor h2 = out_gate * torch::tanh(c2);
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

std::optional<DenseDescription> LstmActorCriticImpl::Describe() const {
  if (!fast_path_) return std::nullopt;
  DenseDescription d;
  d.kind = kind_;
  // One cell reads a convolutional trunk; two read their own dense
  // branches over the observation.
  if (cells_.size() == 1 &&
      (!DescribeSequential(trunks_[0], &d) || d.image.empty())) {
    return std::nullopt;
  }
  for (size_t i = 0; i < cells_.size(); ++i) {
    const torch::nn::LSTMCellImpl& cell = *cells_[i];
    DenseDescription::Lstm described{
        cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh, {}};
    if (cells_.size() == 2) {
      DenseDescription branch;
      if (!DescribeSequential(trunks_[i], &branch) || !branch.image.empty()) {
        return std::nullopt;
      }
      described.encoder = branch.trunk;
    }
    d.lstm.push_back(described);
  }
  d.pi.push_back({pi_->weight, pi_->bias});
  d.v.push_back({v_->weight, v_->bias});
  if (kind_ == PolicyKind::kGaussian) {
    d.log_std = head_.log_std;
    d.center = head_.center;
    d.half_range = head_.half_range;
  }
  return d;
}

}  // namespace asyncrl

namespace asyncrl {

std::optional<ScriptedOutput> LstmActorCriticImpl::Script(
    ScriptWriter& writer, const std::string& obs,
    const std::string& state) const {
  const int64_t h = lstm_size_;
  const auto range = [&](const std::string& x, int64_t from, int64_t to) {
    return x + "[:, " + std::to_string(from) + ":" + std::to_string(to) + "]";
  };
  std::vector<std::string> hidden;
  std::string states;
  for (size_t i = 0; i < cells_.size(); ++i) {
    const std::string suffix =
        cells_.size() == 1 ? "" : (i == 0 ? "_pi" : "_v");
    const torch::nn::LSTMCellImpl& cell = *cells_[i];
    const std::string lstm = "lstm" + suffix;
    const std::string features =
        writer.Sequential(*trunks_[i], obs, "trunk" + suffix);
    const std::string w_ih =
        writer.Tensor(cell.weight_ih, lstm + "_weight_ih", true);
    const std::string w_hh =
        writer.Tensor(cell.weight_hh, lstm + "_weight_hh", true);
    const std::string b_ih =
        writer.Tensor(cell.bias_ih, lstm + "_bias_ih", true);
    const std::string b_hh =
        writer.Tensor(cell.bias_hh, lstm + "_bias_hh", true);
    // As Encode and CoreStep: the input's share, then the state's.
    const std::string x_gates =
        writer.Assign("torch.addmm(" + b_ih + " + " + b_hh + ", " + features +
                          ", " + w_ih + ".t())",
                      "x_gates");
    const int64_t s0 = 2 * h * static_cast<int64_t>(i);
    const std::string gates =
        writer.Assign("torch.addmm(" + x_gates + ", " +
                          range(state, s0, s0 + h) + ", " + w_hh + ".t())",
                      "gates");
    const std::string in_forget = writer.Assign(
        "torch.sigmoid(" + range(gates, 0, 2 * h) + ")", "in_forget");
    const std::string cell_gate = writer.Assign(
        "torch.tanh(" + range(gates, 2 * h, 3 * h) + ")", "cell_gate");
    const std::string out_gate = writer.Assign(
        "torch.sigmoid(" + range(gates, 3 * h, 4 * h) + ")", "out_gate");
    const std::string c2 =
        writer.Assign("torch.addcmul(" + range(in_forget, h, 2 * h) + " * " +
                          range(state, s0 + h, s0 + 2 * h) + ", " +
                          range(in_forget, 0, h) + ", " + cell_gate + ")",
                      "c");
    const std::string h2 =
        writer.Assign(out_gate + " * torch.tanh(" + c2 + ")", "h");
    hidden.push_back(h2);
    states += (states.empty() ? "" : ", ") + h2 + ", " + c2;
  }
  ScriptedOutput out;
  out.state = "torch.cat([" + states + "], 1)";
  const std::string& h_pi = hidden[0];
  const std::string& h_v = hidden.back();
  if (kind_ == PolicyKind::kCategorical) {
    out.logits = writer.Linear(*pi_, h_pi, "pi");
  } else {
    head_.Script(writer, writer.Linear(*pi_, h_pi, "pi"), &out);
  }
  out.value = writer.Linear(*v_, h_v, "v") + ".squeeze(-1)";
  return out;
}

}  // namespace asyncrl
