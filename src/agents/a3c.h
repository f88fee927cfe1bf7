// The A3C agent (Mnih et al., 2016) with the reference's options: n-step
// bootstrapped actor-critic updates every t_max steps or at an episode end,
// gradients clipped by global norm and applied to the shared parameters by
// the shared RMSprop, the local copy refreshed in the same pass.
//
// An algorithm on the actor-critic parts (agents/actor_critic.h: acting,
// the rollout, the shared parameters, the gradient step) and a policy back
// end (agents/policy_backend.h: the fast path for fc-softmax and
// fc-gaussian unless --no-fast-path, LibTorch for the other archs and for
// recurrent state). What is A3C's is Learn(): the targets
// (agents/targets.h: n-step returns by default, or GAE(lambda), V-trace,
// UPGO) and the loss, written once for both back ends as its gradients
// with respect to the rows' outputs (log pi(a), entropy, value), then one
// shared optimizer step.
#ifndef ASYNCRL_AGENTS_A3C_H_
#define ASYNCRL_AGENTS_A3C_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "asyncrl/agents/actor_critic.h"
#include "asyncrl/agents/targets.h"

namespace asyncrl {

// The reference's A3C options; the acting, clipping and optimizer ones are
// ActorCriticOptions' (agents/actor_critic.h).
struct A3COptions : ActorCriticOptions {
  double beta = 0.01;                    // Entropy weight, >= 0.
  double pi_loss_coef = 1.0;             // >= 0.
  double v_loss_coef = 0.5;              // >= 0.
  bool keep_loss_scale_same = false;     // Scale short rollouts by t_max/n.
  bool normalize_grad_by_t_max = false;  // Scale losses by 1/n.
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

class A3C : public ActorCriticAgent, public EntropyWeightControl {
 public:
  A3C(std::shared_ptr<ActorCriticModel> model, const Space& observation_space,
      const Space& action_space, const A3COptions& options);

  std::string Type() const override { return "a3c"; }
  const A3COptions& options() const { return options_; }
  const A3CUpdateInfo& last_update() const { return last_update_; }

  double EntropyWeight() const override { return options_.beta; }
  void SetEntropyWeight(double beta) override { options_.beta = beta; }

 protected:
  const ActorCriticOptions& common() const override { return options_; }
  ActorCriticOptions& mutable_common() override { return options_; }
  void Learn() override;
  // The update's terms over the last 100 updates.
  std::vector<Statistic> UpdateStatistics() const override;

 private:
  // The loss's gradient into local()'s grads (through the back end), and
  // last_update_'s terms.
  void ComputeGradient();
  // The weights of the policy and value losses in the loss an update
  // differentiates: coefficients and scalings applied.
  std::pair<double, double> LossScales() const;
  // Fills last_update_'s targets from the recomputed values [rows], the
  // bootstrap values and last_update_.log_ratios.
  void SetTargets(const float* values, const float* bootstrap_values);

  A3COptions options_;
  PolicyTarget policy_target_;
  ValueTarget value_target_;
  RecomputedRows recomputed_;
  OutputGradients output_grads_;
  A3CUpdateInfo last_update_;
  // Over the last 100 updates, for Statistics().
  UpdateWindows terms_;
  WindowStat ratio_stat_, clipped_stat_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_A3C_H_
