// The fast path as a back end (agents/policy_backend.h): DenseActorCritic
// (agents/dense_path.h) on the flat parameters; a recurrent model's states
// kept as the LibTorch back end keeps them.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "asyncrl/agents/dense_path.h"
#include "asyncrl/agents/policy_backend.h"
#include "asyncrl/misc/check.h"

namespace asyncrl {
namespace {

class DenseBackend : public StatefulBackend {
 public:
  explicit DenseBackend(const DenseLayout& layout)
      : StatefulBackend(layout.state_size()), train_(layout), eval_(layout) {}

  bool fast() const override { return true; }

  ActingRows Act(const float* params, const float* obs, int64_t k, bool record,
                 int64_t first_row) override {
    // Training steps go after the rollout's earlier rows, for the update;
    // evaluation steps into their own instance, which must not overwrite
    // them.
    DenseActorCritic<float>& net = record ? train_ : eval_;
    const int64_t first = record ? first_row : 0;
    const DenseLayout& layout = net.layout();
    if (layout.recurrent()) {
      // The rows' states go in and the states after the step come back
      // into the same floats (as the LibTorch back end keeps them).
      std::vector<float>& state = StepStates(record, k);
      net.Step(params, obs, k, first, state.data(), state.data());
    } else {
      net.Forward(params, obs, k, first);
    }
    ActingRows rows;
    rows.policy = net.policy() + first * layout.policy_size();
    rows.values = net.values() + first;
    if (layout.kind == PolicyKind::kGaussian) {
      const int64_t d = layout.policy_size();
      const float* log_std = params + layout.log_std;
      log_std_.resize(static_cast<size_t>(k * d));
      for (int64_t r = 0; r < k; ++r) {
        std::copy(log_std, log_std + d, log_std_.begin() + r * d);
      }
      rows.log_std = log_std_.data();
    }
    return rows;
  }

  void Recompute(const float* params, const Rollout& rollout,
                 bool acted_with_params, RecomputedRows* out) override {
    const int64_t n = rollout.rows();
    if (state_size() > 0) {
      RecomputeSequences(params, rollout, acted_with_params);
    } else {
      // The rows acted with these parameters were forwarded while acting
      // (kept by train_); otherwise (--fresh-params, or parameters loaded
      // mid-rollout) forward them now.
      if (!acted_with_params) train_.Forward(params, rollout.obs.data(), n);
      if (rollout.num_bootstrap > 0) {
        train_.Forward(params, rollout.bootstrap_obs.data(),
                       rollout.num_bootstrap, n, /*with_policy=*/false);
      }
    }
    out->log_probs.resize(static_cast<size_t>(n));
    out->entropies.resize(static_cast<size_t>(n));
    train_.EvaluateActions(params, n, Actions(rollout), ContActions(rollout),
                           out->log_probs.data(), out->entropies.data());
    out->values = train_.values();
    out->bootstrap_values = train_.values() + n;
  }

  void Backward(const float* params, const Rollout& rollout,
                const OutputGradients& grads, FlatParameters& flat) override {
    const int64_t n = rollout.rows();
    ASYNCRL_CHECK_EQ(static_cast<int64_t>(grads.log_prob.size()), n);
    ASYNCRL_CHECK_EQ(static_cast<int64_t>(grads.entropy.size()), n);
    ASYNCRL_CHECK_EQ(static_cast<int64_t>(grads.value.size()), n);
    DenseActorCritic<float>::Sequences sequences;
    if (state_size() > 0) sequences = {rollout.batch, sequence_end_.data()};
    train_.OutputGradient(params, rollout.obs.data(), n, Actions(rollout),
                          ContActions(rollout), grads.log_prob.data(),
                          grads.entropy.data(), grads.value.data(),
                          flat.grads_data(), sequences);
  }

 private:
  // A recurrent model's rollout: unrolled from its initial state unless
  // every row was acted with `params` (then train_ kept them), and each
  // bootstrap observation stepped from the state after the row it follows.
  void RecomputeSequences(const float* params, const Rollout& rollout,
                          bool acted_with_params) {
    const int64_t n = rollout.rows();
    sequence_end_.resize(static_cast<size_t>(n));
    bootstrap_row_.resize(static_cast<size_t>(rollout.num_bootstrap));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t next = rollout.next[i];
      sequence_end_[i] = static_cast<uint8_t>(next != Rollout::kContinue);
      if (next >= 0) bootstrap_row_[next] = i;
    }
    if (!acted_with_params) {
      train_.Unroll(params, rollout.obs.data(), rollout.batch, rollout.steps,
                    rollout.initial_state.empty()
                        ? nullptr
                        : rollout.initial_state.data(),
                    sequence_end_.data());
    }
    if (rollout.num_bootstrap == 0) return;
    bootstrap_state_.resize(
        static_cast<size_t>(rollout.num_bootstrap * state_size()));
    for (int64_t j = 0; j < rollout.num_bootstrap; ++j) {
      train_.StateAfter(bootstrap_row_[j],
                        bootstrap_state_.data() + j * state_size());
    }
    train_.Step(params, rollout.bootstrap_obs.data(), rollout.num_bootstrap, n,
                bootstrap_state_.data(), bootstrap_state_.data(),
                /*with_policy=*/false);
  }

  const int64_t* Actions(const Rollout& rollout) const {
    return train_.layout().kind == PolicyKind::kCategorical
               ? rollout.actions.data()
               : nullptr;
  }
  const float* ContActions(const Rollout& rollout) const {
    return train_.layout().kind == PolicyKind::kGaussian
               ? rollout.cont_actions.data()
               : nullptr;
  }

  DenseActorCritic<float> train_;  // The rollout's rows as they are acted.
  DenseActorCritic<float> eval_;   // Evaluation steps.
  std::vector<float> log_std_;     // Gaussian acting: log_std per row.
  // Recurrent models: the rollout's sequence ends and bootstrap rows
  // (agents/models.h's UnrollInput), and the bootstrap steps' states.
  std::vector<uint8_t> sequence_end_;
  std::vector<int64_t> bootstrap_row_;
  std::vector<float> bootstrap_state_;
};

}  // namespace

std::unique_ptr<PolicyBackend> MakeDenseBackend(const ActorCriticModel& model,
                                                FlatParameters& flat,
                                                int64_t obs_size,
                                                int64_t action_mask) {
  const auto description = model.Describe();
  if (!description) return nullptr;
  DenseLayout layout = DenseLayout::Of(*description, flat);
  // An MLP reads the whole observation; a trunk its first floats (a board
  // game's planes, its action mask after them).
  if (layout.has_trunk() ? obs_size < layout.row_size
                         : obs_size != layout.row_size) {
    throw std::logic_error(
        "MakeDenseBackend: the model reads " + std::to_string(layout.row_size) +
        " floats of observations of " + std::to_string(obs_size));
  }
  if (layout.state_size() != model.StateSize()) {
    throw std::logic_error("MakeDenseBackend: the model's state has " +
                           std::to_string(model.StateSize()) +
                           " floats, its description's " +
                           std::to_string(layout.state_size()));
  }
  layout.row_size = obs_size;
  layout.action_mask = action_mask;
  return std::make_unique<DenseBackend>(layout);
}

}  // namespace asyncrl
