#include "asyncrl/agents/ppo.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "asyncrl/agents/targets.h"
#include "asyncrl/misc/check.h"
#include "asyncrl/misc/platform/process_group.h"
#include "asyncrl/misc/timers.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

// Row `from_row` of `from` appended to `out` (obs, action, reward, log mu,
// turn pass); `next` as given.
void CopyRow(const Rollout& from, int64_t from_row, int64_t next,
             Rollout* out) {
  const int64_t n = from.rows();
  const auto obs_size = static_cast<int64_t>(from.obs.size()) / n;
  out->obs.insert(out->obs.end(), from.obs.begin() + from_row * obs_size,
                  from.obs.begin() + (from_row + 1) * obs_size);
  if (!from.actions.empty()) out->actions.push_back(from.actions[from_row]);
  if (!from.cont_actions.empty()) {
    const auto d = static_cast<int64_t>(from.cont_actions.size()) / n;
    out->cont_actions.insert(out->cont_actions.end(),
                             from.cont_actions.begin() + from_row * d,
                             from.cont_actions.begin() + (from_row + 1) * d);
  }
  out->rewards.push_back(from.rewards[from_row]);
  out->behaviour_log_probs.push_back(from.behaviour_log_probs[from_row]);
  if (from.SuccessorSign(from_row) < 0) {
    out->turn_passes.resize(out->next.size(), 0);
    out->turn_passes.push_back(1);
  }
  out->next.push_back(next);
}

// A feed-forward model's minibatch: `rows` of `from` as one step of
// rows.size() environments, each ending there (its targets are computed
// already; nothing follows it).
void SelectRows(const Rollout& from, const std::vector<int64_t>& rows,
                Rollout* out) {
  out->Clear();
  out->initial_state.clear();
  out->batch = static_cast<int64_t>(rows.size());
  out->steps = 1;
  for (const int64_t r : rows) CopyRow(from, r, Rollout::kTerminal, out);
}

// A recurrent model's minibatch: environments `columns` of `from`, every
// step, with their initial state and sequence ends (a bootstrap
// observation copied and renumbered). `rows` gets the rollout row of each
// of its rows.
void SelectColumns(const Rollout& from, const std::vector<int64_t>& columns,
                   Rollout* out, std::vector<int64_t>* rows) {
  out->Clear();
  const auto k = static_cast<int64_t>(columns.size());
  out->batch = k;
  out->steps = from.steps;
  const auto state_size =
      static_cast<int64_t>(from.initial_state.size()) / from.batch;
  out->initial_state.resize(static_cast<size_t>(k * state_size));
  for (int64_t j = 0; j < k; ++j) {
    std::copy_n(from.initial_state.begin() + columns[j] * state_size,
                state_size, out->initial_state.begin() + j * state_size);
  }
  const auto obs_size = static_cast<int64_t>(from.obs.size()) / from.rows();
  rows->clear();
  for (int64_t t = 0; t < from.steps; ++t) {
    for (const int64_t c : columns) {
      const int64_t r = t * from.batch + c;
      int64_t next = from.next[r];
      if (next >= 0) {
        next = out->AddBootstrap(from.bootstrap_obs.data() + next * obs_size,
                                 obs_size);
      }
      CopyRow(from, r, next, out);
      rows->push_back(r);
    }
  }
}

}  // namespace

void PPOOptions::Validate() const {
  ActorCriticOptions::Validate();
  Require(epochs >= 1 && epochs <= 1000, "epochs", epochs,
          "an integer in [1, 1000]");
  Require(minibatches >= 1 && minibatches <= 65536, "minibatches", minibatches,
          "an integer in [1, 65536]");
  Require(clip_range > 0 && clip_range <= 1, "clip_range", clip_range,
          "a number in (0, 1]");
  Require(std::isfinite(clip_value_range) && clip_value_range >= 0,
          "clip_value_range", clip_value_range,
          "a finite number >= 0 (0: the value is not clipped)");
  Require(std::isfinite(beta) && beta >= 0, "beta", beta,
          "a finite number >= 0");
  Require(std::isfinite(v_loss_coef) && v_loss_coef >= 0, "v_loss_coef",
          v_loss_coef, "a finite number >= 0");
  Require(lambda >= 0 && lambda <= 1, "lambda", lambda, "a number in [0, 1]");
}

FlagSpecs PPOOptions::Flags() {
  return {
      {"epochs", "--algorithm ppo: passes over each rollout, in [1, 1000]",
       &epochs},
      {"minibatches",
       "--algorithm ppo: minibatches per pass, each one optimizer step (rows "
       "drawn without replacement; whole environment sequences for "
       "recurrent archs, at most --envs-per-process)",
       &minibatches},
      {"clip-range", "--algorithm ppo: the ratio's clip range eps, in (0, 1]",
       &clip_range},
      {"clip-value-range",
       "--algorithm ppo: clip the value to this far from the acting "
       "parameters' (0: no clipping)",
       &clip_value_range}};
}

void PPOOutputGradients(const PPOOptions& options, int64_t b,
                        const double* log_probs, const double* entropies,
                        const float* values, const float* old_log_probs,
                        const float* advantages, const float* returns,
                        const float* old_values, OutputGradients* grads,
                        PPOLossTerms* terms) {
  const double inv_b = 1.0 / static_cast<double>(b);
  const double eps = options.clip_range;
  const double c = options.clip_value_range;
  grads->log_prob.resize(static_cast<size_t>(b));
  grads->entropy.assign(static_cast<size_t>(b), -options.beta * inv_b);
  grads->value.resize(static_cast<size_t>(b));
  PPOLossTerms sums;
  for (int64_t i = 0; i < b; ++i) {
    const double log_ratio = log_probs[i] - double{old_log_probs[i]};
    const double ratio = std::exp(log_ratio);
    const double a = advantages[i];
    const double clipped = std::clamp(ratio, 1.0 - eps, 1.0 + eps);
    // -min(r A, clip(r) A): the unclipped term's gradient where it is the
    // smaller (d r / d log pi = r), none where the clipped one is.
    const bool unclipped = ratio * a <= clipped * a;
    grads->log_prob[i] = unclipped ? -a * ratio * inv_b : 0.0;
    sums.pi_loss -= std::min(ratio * a, clipped * a);
    double v = values[i];
    double dv = 1.0;
    if (c > 0) {
      const double moved = v - double{old_values[i]};
      if (moved > c || moved < -c) dv = 0.0;
      v = double{old_values[i]} + std::clamp(moved, -c, c);
    }
    const double error = v - double{returns[i]};
    sums.v_loss += error * error;
    grads->value[i] = options.v_loss_coef * 2.0 * error * dv * inv_b;
    sums.entropy += entropies[i];
    sums.approx_kl += (ratio - 1.0) - log_ratio;
    sums.clipped += std::abs(ratio - 1.0) > eps ? 1.0 : 0.0;
  }
  if (terms == nullptr) return;
  terms->pi_loss += sums.pi_loss * inv_b;
  terms->v_loss += sums.v_loss * inv_b;
  terms->entropy += sums.entropy * inv_b;
  terms->approx_kl += sums.approx_kl * inv_b;
  terms->clipped += sums.clipped * inv_b;
}

PPO::PPO(std::shared_ptr<ActorCriticModel> model,
         const Space& observation_space, const Space& action_space,
         const PPOOptions& options)
    : ActorCriticAgent(std::move(model), observation_space, action_space,
                       options),
      options_(options),
      shuffle_(options.seed ^ 0x9e3779b97f4a7c15ULL) {
  options_.Validate();
}

void PPO::SetTargets() {
  const int64_t n = rollout().rows();
  PPOUpdateInfo& info = last_update_;
  info.old_values.assign(recomputed_.values, recomputed_.values + n);
  const TargetInputs inputs{
      rollout(),
      {recomputed_.values, n},
      {recomputed_.bootstrap_values, rollout().num_bootstrap},
      {nullptr, 0}};
  TargetParams params;
  params.gamma = options_.gamma;
  params.lambda = options_.lambda;
  Targets targets = ComputeTargets(PolicyTarget::kGae, ValueTarget::kTdLambda,
                                   inputs, params);
  if (options_.normalize_advantages) NormalizeAdvantages(&targets.advantages);
  info.returns = std::move(targets.value_targets);
  info.advantages = std::move(targets.advantages);
}

void PPO::LearnMinibatch(const std::vector<int64_t>& units, bool recurrent,
                         PPOLossTerms* terms) {
  if (recurrent) {
    SelectColumns(rollout(), units, &minibatch_, &rows_);
  } else {
    rows_ = units;
    SelectRows(rollout(), units, &minibatch_);
  }
  const auto b = static_cast<int64_t>(rows_.size());
  const PPOUpdateInfo& info = last_update_;
  mb_old_log_probs_.resize(b);
  mb_advantages_.resize(b);
  mb_returns_.resize(b);
  mb_old_values_.resize(b);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t r = rows_[i];
    mb_old_log_probs_[i] = rollout().behaviour_log_probs[r];
    mb_advantages_[i] = info.advantages[r];
    mb_returns_[i] = info.returns[r];
    mb_old_values_[i] = info.old_values[r];
  }
  const float* params = local().params_data();
  {
    ScopedTimer forward("forward");
    backend().Recompute(params, minibatch_, /*acted_with_params=*/false,
                        &recomputed_);
    PPOOutputGradients(
        options_, b, recomputed_.log_probs.data(), recomputed_.entropies.data(),
        recomputed_.values, mb_old_log_probs_.data(), mb_advantages_.data(),
        mb_returns_.data(), mb_old_values_.data(), &output_grads_, terms);
  }
  {
    ScopedTimer backward("backward");
    backend().Backward(params, minibatch_, output_grads_, local());
  }
  last_update_.minibatch_rows.push_back(rows_);
  const AppliedStep step = ApplyGradient();
  last_update_.grad_norm = step.grad_norm;
  terms_.grad_norm.Add(step.grad_norm);
  if (last_update_.minibatch_rows.size() == 1) {
    last_update_.policy_lag = step.policy_lag;
    terms_.policy_lag.Add(static_cast<double>(step.policy_lag));
  }
}

void PPO::Learn() {
  ScopedTimer timer("update");
  const int64_t n = rollout().rows();
  ASYNCRL_CHECK_GT(n, 0);
  {
    // The values of the parameters that acted: the targets' baseline.
    ScopedTimer forward("forward");
    backend().Recompute(local().params_data(), rollout(),
                        RolloutActedWithLocal(), &recomputed_);
    SetTargets();
  }
  last_update_.minibatch_rows.clear();
  // Units a minibatch is made of: rows, or a recurrent model's sequences.
  const bool recurrent = !rollout().initial_state.empty();
  const int64_t units = recurrent ? rollout().batch : n;
  const int64_t m = std::min<int64_t>(options_.minibatches, units);
  std::vector<int64_t> order(static_cast<size_t>(units));
  std::vector<int64_t> chosen;
  for (int epoch = 0; epoch < options_.epochs; ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), shuffle_);
    PPOLossTerms terms;
    for (int64_t j = 0; j < m; ++j) {
      chosen.assign(order.begin() + j * units / m,
                    order.begin() + (j + 1) * units / m);
      LearnMinibatch(chosen, recurrent, &terms);
      // Work the trainer's --finish-timeout watch sees: a long last update
      // (many epochs of a large rollout) is computing, not hung.
      ReportWorkerProgress();
    }
    if (epoch + 1 == options_.epochs) {
      const auto per = static_cast<double>(m);
      last_update_.pi_loss = terms.pi_loss / per;
      last_update_.v_loss = terms.v_loss / per;
      last_update_.entropy = terms.entropy / per;
      last_update_.approx_kl = terms.approx_kl / per;
      last_update_.clip_fraction = terms.clipped / per;
    }
  }
  terms_.policy_loss.Add(last_update_.pi_loss);
  terms_.value_loss.Add(last_update_.v_loss);
  terms_.entropy.Add(last_update_.entropy);
  kl_stat_.Add(last_update_.approx_kl);
  clip_stat_.Add(last_update_.clip_fraction);
}

std::vector<Statistic> PPO::UpdateStatistics() const {
  std::vector<Statistic> stats = terms_.Report();
  stats.insert(stats.end(), {{"approx_kl", kl_stat_.Mean()},
                             {"clip_fraction", clip_stat_.Mean()}});
  return stats;
}

}  // namespace asyncrl
