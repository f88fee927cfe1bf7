// PPO's clipped surrogate (Schulman et al. 2017), run asynchronously as A3C
// runs: every worker collects a rollout (t_max steps of its K
// environments), computes GAE(lambda) advantages and returns with the
// values of the parameters that acted, then makes `epochs` passes over the
// rollout in `minibatches` minibatches; each minibatch's gradient is one
// step of the shared optimizer on the shared parameters (Hogwild), the
// local copy refreshed from them, exactly as an A3C update. The ratio of
// every minibatch is taken against the policy that acted the rollout (its
// log-probabilities, recorded while acting).
//
// Built from ActorCriticAgent's parts (agents/actor_critic.h): the back end
// recomputes and backpropagates each minibatch as a rollout of its own
// (SelectRows / SelectColumns, agents/rollout.h), so the fast path serves
// fc-softmax and fc-gaussian as it does for A3C. Feed-forward models take
// minibatches of rows drawn without replacement; recurrent models take
// minibatches of whole environment sequences (at most K of them), which
// start from the state the rollout started from.
//
// The loss of a minibatch of b rows, as Stable-Baselines3's PPO writes it:
//   L = (1/b) sum_i [ -min(r_i A_i, clip(r_i, 1 - eps, 1 + eps) A_i)
//                     - beta H_i + v_loss_coef (V'_i - R_i)^2 ],
// r_i = exp(log pi(a_i) - log mu(a_i)), V'_i = V_i, or with
// clip_value_range > 0, V_old_i + clip(V_i - V_old_i, -c, c).
#ifndef ASYNCRL_AGENTS_PPO_H_
#define ASYNCRL_AGENTS_PPO_H_

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "asyncrl/agents/actor_critic.h"

namespace asyncrl {

struct PPOOptions : ActorCriticOptions {
  int epochs = 4;                     // Passes over each rollout, [1, 1000].
  int minibatches = 4;                // Per pass, [1, 65536].
  double clip_range = 0.2;            // eps, in (0, 1].
  double clip_value_range = 0;        // c; 0: the value is not clipped.
  double beta = 0.01;                 // Entropy weight, >= 0.
  double v_loss_coef = 0.5;           // >= 0.
  double lambda = 0.95;               // GAE's, [0, 1].
  bool normalize_advantages = false;  // Over each rollout.

  // Throws InvalidOption (misc/validate.h) naming the field, value and what
  // is accepted.
  void Validate() const;
  // The flags of PPO's own options (--epochs, --minibatches, --clip-range,
  // --clip-value-range); the others are A3C's flags of the same meaning.
  FlagSpecs Flags();
};

// What the last update computed, for logs and tests of the update math.
struct PPOUpdateInfo {
  std::vector<float> returns;     // GAE's value target per rollout row.
  std::vector<float> advantages;  // Per row (normalized, if asked for).
  std::vector<float> old_values;  // V at the acting parameters, per row.
  // Every minibatch of every epoch: its rows of the rollout (rows in
  // step-major order), in the order they were learned from.
  std::vector<std::vector<int64_t>> minibatch_rows;
  double pi_loss = 0;  // Means over the rows of the last epoch.
  double v_loss = 0;
  double entropy = 0;
  double approx_kl = 0;      // Mean of (r - 1) - log r, the last epoch.
  double clip_fraction = 0;  // Share of rows with |r - 1| > eps, likewise.
  double grad_norm = 0;      // The last minibatch's, before clipping.
  int64_t policy_lag = 0;    // At the first minibatch (ApplyGradient's).
};

// The output gradients of PPO's minibatch loss (see above) for `b` rows:
// log_probs, entropies and values recomputed, old log-probabilities,
// advantages, returns and old values of the same rows. Adds the
// minibatch's mean terms to `terms` (policy loss, value loss, entropy,
// approximate KL, clipped share) when not null.
struct PPOLossTerms {
  double pi_loss = 0, v_loss = 0, entropy = 0, approx_kl = 0, clipped = 0;
};
void PPOOutputGradients(const PPOOptions& options, int64_t b,
                        const double* log_probs, const double* entropies,
                        const float* values, const float* old_log_probs,
                        const float* advantages, const float* returns,
                        const float* old_values, OutputGradients* grads,
                        PPOLossTerms* terms);

class PPO : public ActorCriticAgent, public EntropyWeightControl {
 public:
  PPO(std::shared_ptr<ActorCriticModel> model, const Space& observation_space,
      const Space& action_space, const PPOOptions& options);

  std::string Type() const override { return "ppo"; }

  const PPOOptions& options() const { return options_; }
  const PPOUpdateInfo& last_update() const { return last_update_; }

  double EntropyWeight() const override { return options_.beta; }
  void SetEntropyWeight(double beta) override { options_.beta = beta; }

 protected:
  const ActorCriticOptions& common() const override { return options_; }
  ActorCriticOptions& mutable_common() override { return options_; }
  void Learn() override;
  // The update's terms over the last 100 updates.
  std::vector<Statistic> UpdateStatistics() const override;
  // A rollout is --t-max steps of every environment, episodes ending and
  // starting inside it.
  bool RolloutEndsWithEpisodes() const override { return false; }

 private:
  // Targets from the rollout's values at the acting parameters.
  void SetTargets();
  // One minibatch of `units` (rows, or environments of a recurrent model):
  // its rollout, gradient and optimizer step.
  void LearnMinibatch(const std::vector<int64_t>& units, bool recurrent,
                      PPOLossTerms* terms);

  PPOOptions options_;
  std::mt19937_64 shuffle_;
  Rollout minibatch_;
  std::vector<int64_t> rows_;  // Of the minibatch, in the rollout.
  std::vector<float> mb_old_log_probs_, mb_advantages_, mb_returns_,
      mb_old_values_;
  RecomputedRows recomputed_;
  OutputGradients output_grads_;
  PPOUpdateInfo last_update_;
  UpdateWindows terms_;
  WindowStat kl_stat_, clip_stat_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_PPO_H_
