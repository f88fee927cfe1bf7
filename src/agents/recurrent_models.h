// Recurrent (LSTM) actor-critics. A recurrent model is split into an
// encoder applied to every observation at once, a recurrent core stepped one
// time step at a time, and heads applied to every hidden output at once, so
// that Unroll() recomputes a whole rollout from its stored initial state
// with batched encoder and head passes.
//
// The recurrent state of a batch of B sequences is one float tensor
// [B, StateSize()] (the LSTMs' h and c, concatenated); all zeros is the state
// at an episode start.
#ifndef ASYNCRL_AGENTS_RECURRENT_MODELS_H_
#define ASYNCRL_AGENTS_RECURRENT_MODELS_H_

#include <torch/torch.h>

#include <vector>

#include "asyncrl/agents/conv_models.h"
#include "asyncrl/agents/models.h"

namespace asyncrl {

// What one step of the recurrent core returns.
struct RecurrentStep {
  torch::Tensor hidden;  // [B, hidden size]: the heads' input.
  torch::Tensor state;   // [B, StateSize()]: the state after the step.
};

// A recurrent model implements the three parts; the ActorCriticModel
// interface is built from them here.
class RecurrentActorCritic : public ActorCriticModel {
 public:
  int64_t StateSize() const override = 0;
  // [N, observation size] -> [N, features]; no recurrence.
  virtual torch::Tensor Encode(const torch::Tensor& obs) = 0;
  // One time step of the core for B sequences: features [B, features],
  // state [B, S].
  virtual RecurrentStep CoreStep(const torch::Tensor& features,
                                 const torch::Tensor& state) = 0;
  // [N, hidden size] -> policy parameters and values of N rows.
  virtual ModelOutput Heads(const torch::Tensor& hidden) = 0;

  // One step of B observations from the zero (episode-start) state.
  ModelOutput Forward(const torch::Tensor& obs) final;
  // Encode, CoreStep from `state`, Heads.
  ModelStep Step(const torch::Tensor& obs, const torch::Tensor& state) final;
  // One batched Encode, CoreStep per time step (the state of a sequence
  // that stopped is zeroed before its next step, as when acting), one
  // batched Heads: the gradients of the step-by-step formulation. Bootstrap
  // values come from the state after the step that led to them, without
  // autograd.
  UnrollOutput Unroll(const UnrollInput& input) final;
};

// LSTM actor-critics in two layouts:
// - shared trunk (MinAtar and Atari networks): trunk -> LSTMCell -> linear
//   policy and value heads;
// - separate branches (the reference's LSTMGaussian and its softmax twin):
//   policy and value each get their own trunk and LSTMCell.
// The policy is a softmax over n actions, or a Gaussian whose mean is
// squashed into the action bounds with a state-independent log standard
// deviation (initialised to 0).
//
// The LSTM cells keep torch::nn::LSTMCell's parameters (names, shapes, gate
// order i, f, g, o: checkpoints are unchanged) but not its forward: the
// input's share of the four gates, x W_ih^T + b_ih + b_hh, depends on no
// state, so Encode() computes it with the trunk for every row at once (one
// product for a whole rollout when recomputing), and CoreStep() adds the
// state's share h W_hh^T in one addmm per step and applies the gates.
class LstmActorCriticImpl : public RecurrentActorCritic {
 public:
  // `trunks` holds 1 (shared) or 2 (policy, value) trunks.
  LstmActorCriticImpl(std::vector<Trunk> trunks, int64_t lstm_size,
                      const Space& action_space);

  PolicyKind Kind() const override { return kind_; }
  int64_t StateSize() const override;
  torch::Tensor Encode(const torch::Tensor& obs) override;
  RecurrentStep CoreStep(const torch::Tensor& features,
                         const torch::Tensor& state) override;
  ModelOutput Heads(const torch::Tensor& hidden) override;
  // The fast path's description (DenseDescription::lstm) when every trunk
  // is made of modules it computes and takes it (Trunk::fast_path): a
  // shared convolutional trunk, or dense branches.
  std::optional<DenseDescription> Describe() const override;
  // Step() as TorchScript (Encode, CoreStep and Heads written out).
  std::optional<ScriptedOutput> Script(ScriptWriter& writer,
                                       const std::string& obs,
                                       const std::string& state) const override;

 private:
  PolicyKind kind_;
  int64_t lstm_size_;
  std::vector<torch::nn::Sequential> trunks_;
  std::vector<torch::nn::LSTMCell> cells_;
  torch::nn::Linear pi_{nullptr};
  torch::nn::Linear v_{nullptr};
  GaussianHead head_;  // Gaussian policies only.
  bool fast_path_ = true;
};
TORCH_MODULE(LstmActorCritic);

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_RECURRENT_MODELS_H_
