// The LibTorch back end (agents/policy_backend.h): any ActorCriticModel.
#include <algorithm>
#include <cstring>
#include <utility>

#include "asyncrl/agents/distributions.h"
#include "asyncrl/agents/policy_backend.h"
#include "asyncrl/misc/check.h"

namespace asyncrl {
namespace {

class TorchBackend : public StatefulBackend {
 public:
  TorchBackend(std::shared_ptr<ActorCriticModel> model, int64_t obs_size,
               int64_t action_mask)
      : StatefulBackend(model->StateSize()),
        model_(std::move(model)),
        kind_(model_->Kind()),
        obs_size_(obs_size),
        action_mask_(action_mask) {}

  bool fast() const override { return false; }

  ActingRows Act(const float* params, const float* obs, int64_t k, bool record,
                 int64_t first_row) override {
    (void)params;  // The model's parameters are the flat buffer's views.
    (void)first_row;
    c10::InferenceMode guard;
    const auto x = torch::from_blob(const_cast<float*>(obs), {k, obs_size_});
    // The rows' recurrent state (none for feed-forward models) goes in and
    // the state after the step comes back into the same floats.
    std::vector<float>& state = StepStates(record, k);
    const size_t size = state.size();
    const ModelStep step = model_->Step(
        x, size == 0 ? torch::Tensor()
                     : torch::from_blob(state.data(), {k, state_size()}));
    if (size > 0) {
      const auto next_state = step.state.contiguous();
      std::memcpy(state.data(), next_state.data_ptr<float>(),
                  size * sizeof(float));
    }
    const ModelOutput& out = step.output;
    acting_.clear();  // Keeps the outputs alive until the next call.
    acting_.push_back(out.value.contiguous());
    ActingRows rows;
    rows.values = acting_.back().data_ptr<float>();
    if (kind_ == PolicyKind::kCategorical) {
      acting_.push_back(
          (action_mask_ > 0 ? MaskLogits(out.logits, x) : out.logits)
              .contiguous());
      rows.policy = acting_.back().data_ptr<float>();
    } else {
      acting_.push_back(out.mean.contiguous());
      rows.policy = acting_.back().data_ptr<float>();
      acting_.push_back(out.log_std.contiguous());
      rows.log_std = acting_.back().data_ptr<float>();
    }
    return rows;
  }

  void Recompute(const float* params, const Rollout& rollout,
                 bool acted_with_params, RecomputedRows* out) override {
    (void)params;
    (void)acted_with_params;  // Nothing kept from acting: always unrolled.
    const int64_t n = rollout.rows();
    const UnrollInput input = MakeUnrollInput(rollout, obs_size_);
    const UnrollOutput unrolled = model_->Unroll(input);
    ModelOutput output = unrolled.output;
    if (action_mask_ > 0) {
      output.logits = MaskLogits(output.logits, input.obs);
    }
    const torch::Tensor actions =
        kind_ == PolicyKind::kCategorical
            ? torch::from_blob(const_cast<int64_t*>(rollout.actions.data()),
                               {n}, torch::kInt64)
            : torch::from_blob(const_cast<float*>(rollout.cont_actions.data()),
                               {n, output.mean.size(-1)});
    const PolicyTerms terms = EvaluateActions(kind_, output, actions);
    // Kept for Backward: the graph hangs off these three.
    log_prob_ = terms.log_prob;
    entropy_ = terms.entropy;
    value_ = output.value;
    values_ = value_.detach().contiguous();
    bootstrap_ = unrolled.bootstrap_values.contiguous();
    const torch::Tensor log_prob = log_prob_.detach().contiguous();
    const torch::Tensor entropy = entropy_.detach().contiguous();
    out->log_probs.assign(log_prob.data_ptr<float>(),
                          log_prob.data_ptr<float>() + n);
    out->entropies.assign(entropy.data_ptr<float>(),
                          entropy.data_ptr<float>() + n);
    out->values = values_.data_ptr<float>();
    out->bootstrap_values = bootstrap_.data_ptr<float>();
  }

  void Backward(const float* params, const Rollout& rollout,
                const OutputGradients& grads, FlatParameters& flat) override {
    (void)params;
    const int64_t n = rollout.rows();
    ASYNCRL_CHECK(log_prob_.defined());
    ASYNCRL_CHECK_EQ(log_prob_.size(0), n);
    auto as_tensor = [n](const std::vector<double>& g) {
      ASYNCRL_CHECK_EQ(static_cast<int64_t>(g.size()), n);
      return torch::from_blob(const_cast<double*>(g.data()), {n},
                              torch::kDouble)
          .to(torch::kFloat);
    };
    flat.ZeroGrads();
    // Outputs that depend on no parameter (a model's fixed log_std, say)
    // take no part: autograd refuses roots without a graph.
    std::vector<torch::Tensor> roots;
    std::vector<torch::Tensor> root_grads;
    const std::pair<const torch::Tensor*, const std::vector<double>*> outs[] = {
        {&log_prob_, &grads.log_prob},
        {&entropy_, &grads.entropy},
        {&value_, &grads.value}};
    for (const auto& [root, g] : outs) {
      if (!root->requires_grad()) continue;
      roots.push_back(*root);
      root_grads.push_back(as_tensor(*g));
    }
    if (!roots.empty()) torch::autograd::backward(roots, root_grads);
    log_prob_ = entropy_ = value_ = torch::Tensor();  // Frees the graph.
  }

 private:
  std::shared_ptr<ActorCriticModel> model_;
  PolicyKind kind_;
  int64_t obs_size_;
  int64_t action_mask_;
  std::vector<torch::Tensor> acting_;
  torch::Tensor log_prob_, entropy_, value_;  // With the graph.
  torch::Tensor values_, bootstrap_;          // Detached, contiguous.
};

}  // namespace

std::unique_ptr<PolicyBackend> MakeTorchBackend(
    std::shared_ptr<ActorCriticModel> model, int64_t obs_size,
    int64_t action_mask) {
  return std::make_unique<TorchBackend>(std::move(model), obs_size,
                                        action_mask);
}

}  // namespace asyncrl
