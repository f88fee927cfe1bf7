// What an actor-critic algorithm (agents/a3c.h) asks of the network that
// computes its policy and value, whichever code computes it: forward passes
// for acting, the rollout recomputed at the parameters a gradient is taken
// at, and the backward pass from the gradients of the loss with respect to
// the per-row outputs (the log-probability of the action taken, the
// policy's entropy, the value). The algorithm writes its loss once, as
// those output gradients; a back end turns them into parameter gradients.
//
// Two back ends:
// - LibTorch (torch_backend.cc): any ActorCriticModel; acting steps the
//   model under c10::InferenceMode, carrying a recurrent model's state (one
//   row per environment, reset at episode ends, stored as plain floats
//   between updates); Recompute unrolls the rollout with autograd
//   (ActorCriticModel::Unroll) and Backward backpropagates through the
//   graph it kept.
// - The fast path (dense_backend.cc): models that describe themselves as
//   two MLPs (fc-softmax, fc-gaussian), two heads on a convolutional trunk
//   (minatar-conv, atari-conv), or either with LSTM cells before the heads
//   (the -lstm archs), computed with BLAS calls on the flat parameters
//   (agents/dense_path.h); it keeps the activations of the rollout's steps
//   as they are acted, so Recompute reads them instead of forwarding (or
//   unrolling) again when the parameters did not change.
// The two compute the same function to rounding (tests/agents/
// dense_path_test.cc).
#ifndef ASYNCRL_AGENTS_POLICY_BACKEND_H_
#define ASYNCRL_AGENTS_POLICY_BACKEND_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "asyncrl/agents/flat_parameters.h"
#include "asyncrl/agents/models.h"
#include "asyncrl/agents/rollout.h"

namespace asyncrl {

// A forward pass's rows for acting, valid until the back end's next call.
struct ActingRows {
  const float* policy = nullptr;   // [k, policy size]: logits (illegal
                                   // actions masked) or Gaussian means.
  const float* log_std = nullptr;  // Gaussian: [k, D]; else null.
  const float* values = nullptr;   // [k].
};

// A rollout's rows recomputed for an update (row i as in Rollout).
struct RecomputedRows {
  std::vector<double> log_probs;  // [n]: log pi(a_i).
  std::vector<double> entropies;  // [n]: the entropy of row i's policy.
  const float* values = nullptr;  // [n]; valid until the next Recompute.
  const float* bootstrap_values = nullptr;  // [num_bootstrap]; likewise.
};

// The gradient of a loss with respect to the per-row outputs, for
// PolicyBackend::Backward: d L / d log pi(a_i), d L / d H_i and
// d L / d V(s_i) ([n] each).
struct OutputGradients {
  std::vector<double> log_prob;
  std::vector<double> entropy;
  std::vector<double> value;
};

// One per agent; not thread-safe.
class PolicyBackend {
 public:
  virtual ~PolicyBackend() = default;

  // Whether this is the fast path (for logs and tests).
  virtual bool fast() const = 0;

  // The forward pass over `k` observations [k, obs size] with the
  // parameters `params` (the flat layout). `record`: the rows are the next
  // step of the rollout being collected, whose first row is `first_row`
  // (the training state advances; the fast path keeps the activations);
  // otherwise an evaluation step (its own state, nothing of the rollout's
  // touched).
  virtual ActingRows Act(const float* params, const float* obs, int64_t k,
                         bool record, int64_t first_row) = 0;

  // Recurrent state (feed-forward back ends keep none): a rollout of `k`
  // environments starts; its initial state goes into `initial_state`.
  virtual void BeginRollout(int64_t k, std::vector<float>* initial_state) {
    (void)k;
    initial_state->clear();
  }
  // Row `row`'s episode ended: its next step starts from the zero state.
  virtual void EndSequence(int64_t row) { (void)row; }
  // The evaluation episode ended.
  virtual void EndEvaluationEpisode() {}
  // [K, state size] row-major, and the evaluation state; empty when
  // feed-forward.
  virtual const std::vector<float>& training_state() const { return empty_; }
  virtual const std::vector<float>& evaluation_state() const { return empty_; }

  // The rollout's rows with the parameters `params`, and the values of its
  // bootstrap observations, into `out`. `acted_with_params`: every row was
  // acted with `params` (the fast path then reuses its activations).
  virtual void Recompute(const float* params, const Rollout& rollout,
                         bool acted_with_params, RecomputedRows* out) = 0;

  // The parameter gradients of the loss whose output gradients are `grads`
  // (rows as in the last Recompute, which this must follow) into `flat`'s
  // gradient buffer (overwritten).
  virtual void Backward(const float* params, const Rollout& rollout,
                        const OutputGradients& grads, FlatParameters& flat) = 0;

 private:
  static inline const std::vector<float> empty_;
};

// The recurrent state both back ends keep (none for a feed-forward model,
// state_size 0): the training rows' [K, state size], row-major, and the
// evaluation's, as plain floats between steps.
class StatefulBackend : public PolicyBackend {
 public:
  explicit StatefulBackend(int64_t state_size) : state_size_(state_size) {}

  void BeginRollout(int64_t k, std::vector<float>* initial_state) override {
    // A smaller batch keeps the state of its rows (their episodes go on), a
    // larger one adds zeros.
    train_state_.resize(static_cast<size_t>(k * state_size_), 0.0f);
    *initial_state = train_state_;
  }
  void EndSequence(int64_t row) override {
    std::fill_n(train_state_.begin() + row * state_size_, state_size_, 0.0f);
  }
  void EndEvaluationEpisode() override { eval_state_.clear(); }
  const std::vector<float>& training_state() const override {
    return train_state_;
  }
  const std::vector<float>& evaluation_state() const override {
    return eval_state_;
  }

 protected:
  int64_t state_size() const { return state_size_; }
  // The states of the `k` rows a step acts (Act's `record`: the training
  // rows', else the evaluation's), zeros if their count changed; the step
  // writes the states after it back into them.
  std::vector<float>& StepStates(bool record, int64_t k) {
    std::vector<float>& state = record ? train_state_ : eval_state_;
    const auto size = static_cast<size_t>(k * state_size_);
    if (state.size() != size) state.assign(size, 0.0f);
    return state;
  }

 private:
  int64_t state_size_;              // Per row; 0 if feed-forward.
  std::vector<float> train_state_;  // [K, state size].
  std::vector<float> eval_state_;   // [1, state size].
};

// The LibTorch back end for `model` (observations of `obs_size` floats),
// whose parameters are a FlatParameters' views. `action_mask` > 0: the last
// that many floats of each observation are a legal-action mask
// (misc/space.h).
std::unique_ptr<PolicyBackend> MakeTorchBackend(
    std::shared_ptr<ActorCriticModel> model, int64_t obs_size,
    int64_t action_mask);

// The fast path for a model that describes itself (ActorCriticModel::
// Describe), or null when it does not; observations of `obs_size` floats
// (action_mask as for MakeTorchBackend).
std::unique_ptr<PolicyBackend> MakeDenseBackend(const ActorCriticModel& model,
                                                FlatParameters& flat,
                                                int64_t obs_size,
                                                int64_t action_mask);

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_POLICY_BACKEND_H_
