// The fast path as a back end (agents/policy_backend.h): DenseActorCritic
// (agents/dense_path.h) on the flat parameters.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "asyncrl/agents/dense_path.h"
#include "asyncrl/agents/policy_backend.h"
#include "asyncrl/misc/check.h"

namespace asyncrl {
namespace {

class DenseBackend : public PolicyBackend {
 public:
  explicit DenseBackend(const DenseLayout& layout)
      : train_(layout), eval_(layout) {}

  bool fast() const override { return true; }

  ActingRows Act(const float* params, const float* obs, int64_t k, bool record,
                 int64_t first_row) override {
    // Training steps go after the rollout's earlier rows, for the update;
    // evaluation steps into their own instance, which must not overwrite
    // them.
    DenseActorCritic<float>& net = record ? train_ : eval_;
    const int64_t first = record ? first_row : 0;
    net.Forward(params, obs, k, first);
    const DenseLayout& layout = net.layout();
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
    // The rows acted with these parameters were forwarded while acting
    // (kept by train_); otherwise (--fresh-params, or parameters loaded
    // mid-rollout) forward them now.
    if (!acted_with_params) train_.Forward(params, rollout.obs.data(), n);
    if (rollout.num_bootstrap > 0) {
      train_.Forward(params, rollout.bootstrap_obs.data(),
                     rollout.num_bootstrap, n, /*with_policy=*/false);
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
    train_.OutputGradient(params, rollout.obs.data(), n, Actions(rollout),
                          ContActions(rollout), grads.log_prob.data(),
                          grads.entropy.data(), grads.value.data(),
                          flat.grads_data());
  }

 private:
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
  layout.row_size = obs_size;
  layout.action_mask = action_mask;
  return std::make_unique<DenseBackend>(layout);
}

}  // namespace asyncrl
