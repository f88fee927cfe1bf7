#include "asyncrl/agents/a3c.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "asyncrl/agents/distributions.h"
#include "asyncrl/agents/targets.h"
#include "asyncrl/misc/check.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/timers.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {

void A3COptions::Validate() const {
  ActorCriticOptions::Validate();
  Require(std::isfinite(beta) && beta >= 0, "beta", beta,
          "a finite number >= 0");
  Require(std::isfinite(pi_loss_coef) && pi_loss_coef >= 0, "pi_loss_coef",
          pi_loss_coef, "a finite number >= 0");
  Require(std::isfinite(v_loss_coef) && v_loss_coef >= 0, "v_loss_coef",
          v_loss_coef, "a finite number >= 0");
  const PolicyTarget policy = PolicyTargetKind();  // Throws if unknown.
  (void)ValueTargetKind();                         // Likewise.
  Require(lambda >= 0 && lambda <= 1, "lambda", lambda, "a number in [0, 1]");
  Require(std::isfinite(vtrace_rho_bar) && vtrace_rho_bar > 0, "vtrace_rho_bar",
          vtrace_rho_bar, "a finite number > 0");
  // IMPALA's analysis assumes c_bar <= rho_bar.
  Require(
      std::isfinite(vtrace_c_bar) && vtrace_c_bar > 0 &&
          vtrace_c_bar <= vtrace_rho_bar,
      "vtrace_c_bar", vtrace_c_bar,
      "a number in (0, vtrace_rho_bar=" + FormatValue(vtrace_rho_bar) + "]");
  Require(!fresh_params || CorrectsOffPolicy(policy), "fresh_params",
          fresh_params,
          std::string("false with policy_target=") + TargetName(policy) +
              " (refreshed parameters make the rollout off-policy; only "
              "policy_target vtrace or upgo corrects for it)");
}

PolicyTarget A3COptions::PolicyTargetKind() const {
  return ParsePolicyTarget(policy_target, "policy_target");
}

ValueTarget A3COptions::ValueTargetKind() const {
  if (value_target == "auto") return PairedValueTarget(PolicyTargetKind());
  try {
    return ParseValueTarget(value_target, "value_target");
  } catch (const InvalidOption& e) {
    throw InvalidOption(e.field(), e.value(), "auto, " + e.accepted());
  }
}

FlagSpecs A3COptions::Flags() {
  FlagSpecs flags = {
      {"t-max", "steps per update", &t_max},
      {"beta", "entropy weight (train_a3c: 0.1 for two-player games)", &beta},
      {"gamma", "discount factor", &gamma},
      {"max-grad-norm",
       "clip gradients to this global L2 norm (<= 0 or inf: no clipping)",
       &max_grad_norm},
      {"lr-warmup-updates",
       "the step size grows linearly from --lr/N to --lr over the run's "
       "first N optimizer updates, all workers together (the RMSprop "
       "statistics start at zero and every worker's first gradient is taken "
       "at the initial parameters); 0: none",
       &lr_warmup_updates},
      {"lag-tolerance",
       "an update whose policy lag L (updates other workers applied since "
       "its rollout's parameters were copied) exceeds this is applied with "
       "its step scaled by this/L, so stale gradients from many workers or a "
       "descheduled one are not applied at full size; 0: no scaling, else "
       ">= 1",
       &lag_tolerance},
      {"policy-target",
       "what multiplies log pi in the policy loss: nstep (the reference's "
       "n-step advantage), gae (GAE(lambda)), vtrace (IMPALA's V-trace), "
       "upgo (HandyRL's UPGO)",
       &policy_target},
      {"value-target",
       "what the value regresses to: nstep, td-lambda, vtrace, or auto (nstep "
       "for nstep, vtrace for vtrace, td-lambda for gae and upgo)",
       &value_target},
      {"lambda", "lambda of gae, td-lambda, vtrace and upgo, in [0, 1]",
       &lambda},
      {"vtrace-rho-bar",
       "truncation of the importance ratios (vtrace, upgo), > 0",
       &vtrace_rho_bar},
      {"vtrace-c-bar",
       "truncation of V-trace's traces, in (0, --vtrace-rho-bar]",
       &vtrace_c_bar},
      {"normalize-advantages",
       "normalise each update's advantages to mean 0 and standard deviation 1",
       &normalize_advantages},
      {"act-deterministically",
       "evaluations (and --demo) take the most probable action instead of "
       "sampling one",
       &act_deterministically},
      {"fresh-params",
       "refresh the worker's parameters from the shared ones just before "
       "each update, so the gradient is taken at the parameters it is "
       "applied to (needs --policy-target vtrace or upgo; the value target is "
       "corrected only if it is vtrace)",
       &fresh_params},
      {"normalize-observations",
       "normalize each observation element by a running mean and variance "
       "shared by the run's workers, as VecNormalize does (vector "
       "observations; stored in checkpoints)",
       &normalize_observations},
      {"normalize-observations-clip",
       "clip normalized observations to [-this, this], > 0",
       &normalize_observations_clip},
      {"normalize-rewards",
       "divide the rewards the learner sees by the running standard "
       "deviation of the discounted return, shared by the run's workers, as "
       "VecNormalize does (scores and metrics stay in the environment's "
       "units; stored in checkpoints)",
       &normalize_rewards},
      {"normalize-rewards-clip",
       "clip normalized rewards to [-this, this], > 0",
       &normalize_rewards_clip},
      {"no-fast-path",
       "compute with LibTorch the archs that take the fast path (fc-*, "
       "minatar-conv, atari-conv and their -lstm forms; same results to "
       "rounding, slower; for comparison)",
       &no_fast_path}};
  for (FlagSpec& flag : optimizer.Flags()) flags.push_back(std::move(flag));
  return flags;
}

A3C::A3C(std::shared_ptr<ActorCriticModel> model,
         const Space& observation_space, const Space& action_space,
         const A3COptions& options)
    : ActorCriticAgent(std::move(model), observation_space, action_space,
                       options),
      options_(options) {
  options_.Validate();
  policy_target_ = options_.PolicyTargetKind();
  value_target_ = options_.ValueTargetKind();
}

void A3C::SetTargets(const float* values, const float* bootstrap_values) {
  A3CUpdateInfo& info = last_update_;
  const TargetInputs inputs{
      rollout(),
      {values, rollout().rows()},
      {bootstrap_values, rollout().num_bootstrap},
      {info.log_ratios.data(), static_cast<int64_t>(info.log_ratios.size())}};
  TargetParams params;
  params.gamma = options_.gamma;
  params.lambda = options_.lambda;
  params.rho_bar = options_.vtrace_rho_bar;
  params.c_bar = options_.vtrace_c_bar;
  Targets targets =
      ComputeTargets(policy_target_, value_target_, inputs, params);
  if (options_.normalize_advantages) NormalizeAdvantages(&targets.advantages);
  info.returns = std::move(targets.value_targets);
  info.advantages = std::move(targets.advantages);
  info.mean_ratio = targets.mean_ratio;
  info.clipped_fraction = targets.clipped_fraction;
}

void A3C::ComputeGradient() {
  const int64_t n = rollout().rows();
  ASYNCRL_CHECK_GT(n, 0);
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(rollout().behaviour_log_probs.size()),
                   n);
  // --fresh-params: the gradient is taken at the shared parameters as they
  // are now; the rollout was acted with older ones, which the importance
  // ratios below account for. A learner's rollout (LearnFrom) was acted by
  // a worker with older ones too. Otherwise the local copy is the one that
  // acted, and the rollout is on-policy by construction (ratios are 1).
  const bool off_policy = options_.fresh_params || RolloutActedElsewhere();
  if (off_policy) {
    ScopedTimer refresh("refresh");
    RefreshLocal();
  }
  const float* params = local().params_data();
  A3CUpdateInfo& info = last_update_;
  const RecomputedRows& rows = recomputed_;
  OutputGradients& grads = output_grads_;
  {
    ScopedTimer forward("forward");
    backend().Recompute(params, rollout(), RolloutActedWithLocal(),
                        &recomputed_);
    info.log_ratios.clear();
    if (off_policy) {
      info.log_ratios.resize(n);
      for (int64_t i = 0; i < n; ++i) {
        info.log_ratios[i] = static_cast<float>(
            rows.log_probs[i] - rollout().behaviour_log_probs[i]);
      }
    }
    SetTargets(rows.values, rows.bootstrap_values);
    // The loss, written once for every back end:
    //   L = sum_i [ -pi_scale (adv_i log pi(a_i) + beta H_i)
    //               + v_scale (v_i - R_i)^2 / 2 ],
    // as its gradients with respect to the rows' outputs.
    const auto [pi_scale, v_scale] = LossScales();
    grads.log_prob.resize(n);
    grads.entropy.assign(n, -pi_scale * options_.beta);
    grads.value.resize(n);
    double pi_loss = 0;
    double v_loss = 0;
    double entropy_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      pi_loss -= rows.log_probs[i] * info.advantages[i];
      entropy_sum += rows.entropies[i];
      const double error = double{rows.values[i]} - info.returns[i];
      v_loss += error * error / 2;
      grads.log_prob[i] = -pi_scale * info.advantages[i];
      grads.value[i] = v_scale * error;
    }
    info.pi_loss = pi_loss - options_.beta * entropy_sum;
    info.v_loss = v_loss;
    info.entropy = entropy_sum / static_cast<double>(n);
  }
  ScopedTimer backward("backward");
  backend().Backward(params, rollout(), grads, local());
}

std::pair<double, double> A3C::LossScales() const {
  double pi_scale = options_.pi_loss_coef;
  double v_scale = options_.v_loss_coef;
  const auto steps = static_cast<double>(rollout().steps);
  if (options_.keep_loss_scale_same && rollout().steps < options_.t_max) {
    const double factor = static_cast<double>(options_.t_max) / steps;
    pi_scale *= factor;
    v_scale *= factor;
  }
  if (options_.normalize_grad_by_t_max) {
    pi_scale /= steps;
    v_scale /= steps;
  }
  // With K environments the rollout holds K sequences: average them so the
  // step size does not grow with K.
  const auto k = static_cast<double>(rollout().batch);
  return {pi_scale / k, v_scale / k};
}

void A3C::Learn() {
  ScopedTimer timer("update");
  ComputeGradient();
  const AppliedStep step = ApplyGradient();
  A3CUpdateInfo& info = last_update_;
  info.grad_norm = step.grad_norm;
  info.policy_lag = step.policy_lag;
  const auto rows = static_cast<double>(rollout().rows());
  // Per row; the policy loss without the entropy bonus.
  terms_.policy_loss.Add(info.pi_loss / rows + options_.beta * info.entropy);
  terms_.value_loss.Add(info.v_loss / rows);
  terms_.entropy.Add(info.entropy);
  terms_.grad_norm.Add(info.grad_norm);
  terms_.policy_lag.Add(static_cast<double>(info.policy_lag));
  ratio_stat_.Add(info.mean_ratio);
  clipped_stat_.Add(info.clipped_fraction);
}

std::vector<Statistic> A3C::UpdateStatistics() const {
  std::vector<Statistic> stats = terms_.Report();
  stats.insert(stats.end(), {{"importance_ratio", ratio_stat_.Mean()},
                             {"ratio_clipped", clipped_stat_.Mean()}});
  return stats;
}

}  // namespace asyncrl
