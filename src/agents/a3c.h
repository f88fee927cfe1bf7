// The A3C agent (Mnih et al., 2016) with the reference's options: n-step
// bootstrapped actor-critic updates every t_max steps or at an episode end,
// gradients clipped by global norm and applied to the shared parameters by
// the shared RMSprop, the local copy refreshed in the same pass.
//
// Built from reusable parts: acting steps the model (ActorCriticModel::Step)
// under c10::InferenceMode, keeping no graph, and draws actions with the
// policy's distribution (agents/distributions.h); the steps are recorded in
// a Rollout (agents/rollout.h); an update recomputes the rollout with
// autograd (ActorCriticModel::Unroll: one batched forward pass for
// feed-forward models, the recurrent core step by step from the state
// stored at the rollout's start for recurrent ones), computes n-step
// targets (agents/targets.h: n-step returns by default, or GAE(lambda),
// V-trace, UPGO), the loss, clips and applies the shared step.
// A recurrent model's state is carried across steps, one row per
// environment, reset at episode ends and kept out of the graph between
// updates (it is stored as plain floats); feed-forward models have a state
// of size 0. Act() keeps its own state, reset by StopEpisode().
// Models that describe themselves as two MLPs (fc-softmax, fc-gaussian)
// take the fast path instead of LibTorch for acting and the update: the same
// function computed with BLAS calls on the flat parameters
// (agents/dense_path.h); --no-fast-path turns it off. Parameters,
// gradients and optimizer statistics are flat arrays, so clipping, the
// optimizer step and the refresh are single passes.
#ifndef ASYNCRL_AGENTS_A3C_H_
#define ASYNCRL_AGENTS_A3C_H_

#include <memory>
#include <random>
#include <vector>

#include "asyncrl/agents/agent.h"
#include "asyncrl/agents/dense_path.h"
#include "asyncrl/agents/flat_parameters.h"
#include "asyncrl/agents/models.h"
#include "asyncrl/agents/rollout.h"
#include "asyncrl/agents/shared_rmsprop.h"
#include "asyncrl/agents/targets.h"

namespace asyncrl {

struct A3COptions {
  int64_t t_max = 5;                     // Steps per update, >= 1.
  double gamma = 0.99;                   // Discount, [0, 1].
  double beta = 0.01;                    // Entropy weight, >= 0.
  double pi_loss_coef = 1.0;             // >= 0.
  double v_loss_coef = 0.5;              // >= 0.
  bool keep_loss_scale_same = false;     // Scale short rollouts by t_max/n.
  bool normalize_grad_by_t_max = false;  // Scale losses by 1/n.
  bool act_deterministically = false;    // Greedy actions in Act().
  double max_grad_norm = 40.0;           // Global L2 clip; <= 0 disables.
  double average_value_decay = 0.999;
  double average_entropy_decay = 0.999;
  // Targets (agents/targets.h): the policy's advantage and the value's
  // regression target; value_target "auto" pairs it with policy_target.
  std::string policy_target = "nstep";  // nstep, gae, vtrace, upgo.
  std::string value_target = "auto";    // auto, nstep, td-lambda, vtrace.
  double lambda = 0.95;                 // [0, 1]; gae, td-lambda, vtrace, upgo.
  double vtrace_rho_bar = 1.0;          // > 0: ratio truncation.
  double vtrace_c_bar = 1.0;          // (0, vtrace_rho_bar]: trace truncation.
  bool normalize_advantages = false;  // Per update, over its rows.
  // Refresh the local copy from the shared parameters just before an
  // update's recompute: the gradient is taken at the parameters it is
  // applied to, and the rollout (acted with older ones) is corrected by the
  // importance ratios; needs a policy target that corrects (vtrace, upgo).
  // The value target is corrected only if it is vtrace (td-lambda and nstep
  // regress to the off-policy returns, as HandyRL's do).
  bool fresh_params = false;
  // Models that describe themselves as two MLPs (fc-softmax, fc-gaussian)
  // act and learn through the fast path (agents/dense_path.h) unless this
  // is set; the others always use LibTorch. The two compute the same
  // function; this exists for comparison (--no-fast-path).
  bool no_fast_path = false;
  RmspropOptions optimizer;
  uint64_t seed = 0;  // Action sampling.

  // The targets the options name, "auto" resolved.
  PolicyTarget PolicyTargetKind() const;
  ValueTarget ValueTargetKind() const;

  // Throws InvalidOption (misc/validate.h) naming the field, value and what
  // is accepted.
  void Validate() const;
  // Its command-line flags, the optimizer's included (misc/flag_spec.h).
  FlagSpecs Flags();
};

// What the last update computed (rows in step-major order: row
// step * K + k), for logs and tests of the update math.
struct A3CUpdateInfo {
  std::vector<float> returns;     // The value target per rollout row.
  std::vector<float> advantages;  // The policy's advantage per row (after
                                  // normalisation, if asked for).
  std::vector<float> log_ratios;  // log pi - log mu per row; empty when the
                                  // rollout is on-policy by construction.
  double pi_loss = 0;             // Before coefficients and scalings.
  double v_loss = 0;
  double entropy = 0;       // Mean policy entropy over the rows.
  double grad_norm = 0;     // Global L2 norm before clipping.
  double mean_ratio = 1.0;  // Importance ratios (agents/targets.h).
  double clipped_fraction = 0.0;
  // Updates other workers applied to the shared parameters between the
  // local copy that acted this rollout and this update.
  int64_t policy_lag = 0;
};

// Means (and a maximum) over the last `capacity` values added.
class WindowStat {
 public:
  explicit WindowStat(size_t capacity = 100) : capacity_(capacity) {}
  void Add(double value);
  double Mean() const;
  double Max() const;

 private:
  size_t capacity_;
  size_t next_ = 0;
  std::vector<double> values_;
};

class A3C : public BatchAgent,
            public LearningRateControl,
            public SampledActing {
 public:
  A3C(std::shared_ptr<ActorCriticModel> model, const Space& observation_space,
      const Space& action_space, const A3COptions& options);

  std::string Type() const override { return "a3c"; }
  Action Act(FloatView obs) override;
  Action ActSampled(FloatView obs) override;
  void SeedSampling(uint64_t seed) override { rng_.seed(seed); }
  Action ActAndTrain(FloatView obs, double reward) override;
  void StopEpisodeAndTrain(FloatView obs, double reward,
                           bool terminal) override;
  void StopEpisode() override { eval_state_.clear(); }
  const std::vector<Action>& BatchActAndTrain(FloatView obs,
                                              int64_t batch_size) override;
  void BatchObserveAndTrain(FloatView next_obs,
                            const std::vector<double>& rewards,
                            const std::vector<uint8_t>& terminal,
                            const std::vector<uint8_t>& episode_end,
                            bool end_rollout) override;
  std::vector<Statistic> Statistics() const override;

  SharedStateSizes SharedSizes() const override;
  void BindShared(SharedBuffers buffers, bool initialize) override;
  void SaveTo(proto::Checkpoint* checkpoint) const override;
  void LoadFrom(const proto::Checkpoint& checkpoint) override;

  double LearningRate() const override { return options_.optimizer.lr; }
  void SetLearningRate(double lr) override { options_.optimizer.lr = lr; }

  const A3COptions& options() const { return options_; }
  ActorCriticModel& model() { return *model_; }
  FlatParameters& local() { return *local_; }
  const float* shared_params() const { return shared_params_; }
  const float* shared_ms() const { return shared_ms_; }
  int64_t num_updates() const { return num_updates_; }
  // Whether acting and updates take the fast path (A3COptions::no_fast_path).
  bool fast_path() const { return fast_ != nullptr; }

  const A3CUpdateInfo& last_update() const { return last_update_; }
  // Recurrent models: the training state carried between steps, [K, state
  // size] row-major (empty before the first step), and Act()'s own state.
  const std::vector<float>& recurrent_state() const { return train_state_; }
  const std::vector<float>& eval_recurrent_state() const { return eval_state_; }

 private:
  // Samples (or picks greedily) K actions from a forward pass over K rows.
  void ChooseActions(FloatView obs, int64_t k, bool deterministic, bool record);
  struct Losses {
    torch::Tensor pi_loss;  // Scalar.
    torch::Tensor v_loss;   // Scalar.
  };
  // Losses of the current rollout; fills last_update_'s returns/advantages.
  Losses ComputeLosses();
  // The weights of the policy and value losses in the loss an update
  // differentiates: coefficients and scalings applied.
  std::pair<double, double> LossScales() const;
  // The fast path's update: the loss's gradient into local_'s grads, and
  // last_update_'s terms, without LibTorch.
  void FastLossGradient();
  // Fills last_update_'s targets from the recomputed values [rows], the
  // bootstrap values and last_update_.log_ratios.
  void SetTargets(const float* values, const float* bootstrap_values);
  void Update();
  void RefreshLocal();

  std::shared_ptr<ActorCriticModel> model_;
  int64_t state_size_ = 0;          // Per row; 0 if feed-forward.
  std::vector<float> train_state_;  // [K, state size].
  std::vector<float> eval_state_;   // [1, state size]; Act().
  Space observation_space_;
  Space action_space_;
  A3COptions options_;
  int64_t obs_size_;
  int64_t action_size_;  // 1 for Discrete.
  // Space::action_mask of the observations: > 0 masks illegal actions.
  int64_t action_mask_ = 0;
  std::unique_ptr<FlatParameters> local_;
  // The fast path (null: LibTorch): fast_ keeps the activations of the
  // rollout's steps as they are acted, for the update; fast_eval_ serves
  // Act(), which must not overwrite them.
  std::unique_ptr<DenseActorCritic<float>> fast_;
  std::unique_ptr<DenseActorCritic<float>> fast_eval_;
  std::vector<float> fast_log_std_;  // Gaussian acting: log_std per row.
  // Counts changes of the local parameters; the rollout's acting outputs
  // can stand for the update's forward pass only if it did not change.
  int64_t local_version_ = 0;
  int64_t rollout_version_ = 0;
  std::vector<double> fast_log_probs_;
  std::vector<double> fast_entropies_;

  // Shared state: the trainer's region once bound, else owned storage.
  std::vector<float> owned_params_;
  std::vector<float> owned_ms_;
  SharedCounters owned_counters_;
  float* shared_params_ = nullptr;
  float* shared_ms_ = nullptr;
  SharedCounters* counters_ = &owned_counters_;
  // counters_->updates when the local copy that acts was taken.
  int64_t acting_params_updates_ = 0;

  Rollout rollout_;
  std::vector<Action> actions_;        // Returned to the caller.
  std::vector<float> action_values_;   // Storage of continuous actions.
  std::vector<double> scratch_probs_;  // Per-call scratch of acting.
  std::vector<int64_t> scratch_indices_;
  std::vector<float> scratch_samples_;
  std::vector<double> scratch_entropies_;
  std::vector<double> scratch_log_probs_;
  PolicyTarget policy_target_;
  ValueTarget value_target_;
  std::mt19937_64 rng_;
  double average_value_ = 0.0;
  double average_entropy_ = 0.0;
  int64_t num_updates_ = 0;
  A3CUpdateInfo last_update_;
  // Over the last 100 updates, for Statistics().
  WindowStat pi_loss_stat_, v_loss_stat_, entropy_stat_, grad_norm_stat_;
  WindowStat lag_stat_, ratio_stat_, clipped_stat_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_A3C_H_
