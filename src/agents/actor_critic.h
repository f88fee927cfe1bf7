// What every on-policy actor-critic algorithm of asyncrl shares, written
// once: acting (a policy back end's forward pass, agents/policy_backend.h,
// and the policy's distribution, agents/distributions.h, drawing the
// actions), the rollout recorded between updates (agents/rollout.h), the
// local copy of the parameters and the shared parameters and optimizer
// statistics it binds to (Hogwild), the gradient step (global-norm clip,
// the shared RMSprop, the local copy refreshed in the same pass, the policy
// lag counted), checkpoints and the reference's two statistics.
//
// An algorithm derives from ActorCriticAgent, gives its options (a struct
// derived from ActorCriticOptions) through common(), and implements
// Learn(): called when a rollout is complete, it reads rollout(), has the
// back end recompute and backpropagate (backend(): Recompute, then Backward
// from the loss's gradients with respect to the rows' outputs) and calls
// ApplyGradient() once per optimizer step. agents/a3c.h is one.
#ifndef ASYNCRL_AGENTS_ACTOR_CRITIC_H_
#define ASYNCRL_AGENTS_ACTOR_CRITIC_H_

#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "asyncrl/agents/agent.h"
#include "asyncrl/agents/flat_parameters.h"
#include "asyncrl/agents/models.h"
#include "asyncrl/agents/observation_normalizer.h"
#include "asyncrl/agents/policy_backend.h"
#include "asyncrl/agents/reward_normalizer.h"
#include "asyncrl/agents/rollout.h"
#include "asyncrl/agents/shared_rmsprop.h"

namespace asyncrl {

struct ActorCriticOptions {
  int64_t t_max = 5;                   // Steps per rollout, >= 1.
  double gamma = 0.99;                 // Discount, [0, 1].
  bool act_deterministically = false;  // Greedy actions in Act().
  double max_grad_norm = 40.0;         // Global L2 clip; <= 0 disables.
  // The step size grows linearly from lr / lr_warmup_updates to lr over
  // the run's first lr_warmup_updates optimizer updates (all workers
  // together): the shared RMSprop statistics start at zero, which makes the
  // first steps up to 1 / sqrt(1 - alpha) = 10 times lr, and every worker's
  // first gradient is taken at the same initial parameters. 0 (the
  // reference's): none; train_a3c's default is 500
  // (docs/results/2026-12-06-many-workers.md measures both remedies).
  int64_t lr_warmup_updates = 0;
  // An update whose policy lag L (updates other workers applied after this
  // worker copied the parameters its rollout acted with) exceeds this is
  // applied with its step scaled by lag_tolerance / L: a worker that was
  // descheduled, or one of many, cannot apply a stale gradient at full
  // size. The step, not the gradient: RMSprop divides a scaled gradient's
  // scale out. 0 (the reference's): no scaling; otherwise >= 1;
  // train_a3c's default is 8.
  double lag_tolerance = 0;
  double average_value_decay = 0.999;
  double average_entropy_decay = 0.999;
  // Models that describe themselves as two MLPs (fc-softmax, fc-gaussian)
  // act and learn through the fast path back end unless this is set; the
  // others always use LibTorch's. The two compute the same function; this
  // exists for comparison (--no-fast-path).
  bool no_fast_path = false;
  // A running mean and variance per observation element, shared by the
  // run's workers (agents/observation_normalizer.h); the network sees
  // clip((x - mean) / sqrt(var + 1e-8), -clip, clip). Rank-1 observations
  // only; a legal-action mask passes through.
  bool normalize_observations = false;
  double normalize_observations_clip = 10.0;  // > 0.
  // Rewards divided by the running standard deviation of each environment
  // row's discounted return (gamma), shared by the run's workers
  // (agents/reward_normalizer.h), then clipped to [-clip, clip]. Only the
  // learner sees them; what the trainer reports stays in the
  // environment's units.
  bool normalize_rewards = false;
  double normalize_rewards_clip = 10.0;  // > 0.
  OptimizerOptions optimizer;
  uint64_t seed = 0;  // Action sampling.

  // Throws InvalidOption (misc/validate.h) naming the field, value and what
  // is accepted.
  void Validate() const;
};

// What multiplies lr for one optimizer step: the warm-up's share after
// `run_updates` updates of the run (1 once it is over) times the lag
// scaling of a step whose policy lag is `lag` (1 when within tolerance).
double StepSizeFactor(const ActorCriticOptions& options, int64_t run_updates,
                      int64_t lag);

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

// The statistics every actor-critic algorithm reports of its updates, over
// the last 100 of each: the policy loss (without the entropy bonus), the
// value loss, the policy's entropy, the gradient's norm before the clip
// and the policy lag (mean and max).
struct UpdateWindows {
  WindowStat policy_loss, value_loss, entropy, grad_norm, policy_lag;
  // policy_loss, value_loss, entropy, grad_norm, policy_lag,
  // policy_lag_max, in that order (scores.txt's columns keep it).
  std::vector<Statistic> Report() const;
};

class ActorCriticAgent : public BatchAgent,
                         public LearningRateControl,
                         public SampledActing,
                         public TurnTaking {
 public:
  // Validates `options` (the common part); throws std::invalid_argument if
  // the model cannot act in the spaces.
  ActorCriticAgent(std::shared_ptr<ActorCriticModel> model,
                   const Space& observation_space, const Space& action_space,
                   const ActorCriticOptions& options);

  Action Act(FloatView obs) override;
  Action ActSampled(FloatView obs) override;
  void SeedSampling(uint64_t seed) override { rng_.seed(seed); }
  Action ActAndTrain(FloatView obs, double reward) override;
  void StopEpisodeAndTrain(FloatView obs, double reward,
                           bool terminal) override;
  void StopEpisode() override { backend_->EndEvaluationEpisode(); }
  const std::vector<Action>& BatchActAndTrain(FloatView obs,
                                              int64_t batch_size) override;
  void BatchObserveAndTrain(FloatView next_obs,
                            const std::vector<double>& rewards,
                            const std::vector<uint8_t>& terminal,
                            const std::vector<uint8_t>& episode_end,
                            bool end_rollout) override;
  // average_value and average_entropy, as the reference's A3C reports them,
  // then the algorithm's own (UpdateStatistics), or the source's values of
  // those (SetUpdateStatisticsSource).
  std::vector<Statistic> Statistics() const final;
  // A worker beside a learner learns nothing itself: from now on its
  // update statistics are `source`'s (the learner's, the run's), which
  // overwrites the values of the statistics it is given; null: its own.
  using StatisticsSource = std::function<void(std::vector<Statistic>*)>;
  void SetUpdateStatisticsSource(StatisticsSource source) {
    statistics_source_ = std::move(source);
  }

  SharedStateSizes SharedSizes() const override;
  void BindShared(SharedBuffers buffers, bool initialize) override;
  // The observation statistics, then the return statistics, of those kept.
  std::vector<ObservationNormalizer*> SharedStatistics() override;
  void SaveTo(proto::Checkpoint* checkpoint) const override;
  // The worker's own copy of the parameters, which Act uses: other workers
  // go on updating the shared ones while it evaluates, so those saved
  // after an evaluation were not the ones it measured.
  void SaveActingTo(proto::Checkpoint* checkpoint) const override;
  void LoadFrom(const proto::Checkpoint& checkpoint) override;

  // Feed-forward models only; the passes go into the rollout's
  // turn_passes (targets.h negates those rows' successors).
  std::string TurnTakingRefusal() const override;
  void NextTurnPasses(const std::vector<uint8_t>& passes) override;

  double LearningRate() const override { return common().optimizer.lr; }
  void SetLearningRate(double lr) override {
    mutable_common().optimizer.lr = lr;
  }

  // A learner beside the workers (experiments/learner/): from now on a
  // complete rollout goes to `sink` instead of being learned from, with the
  // update count of the parameters that acted it; the rollout always runs
  // t_max steps, through episode ends (a rollout the caller ends early is
  // not sent: it is the run's last), and the local copy is refreshed from
  // the shared parameters after each. Null: learn again.
  using RolloutSink =
      std::function<void(const Rollout& rollout, int64_t acted_updates)>;
  void SendRolloutsTo(RolloutSink sink) { sink_ = std::move(sink); }
  // The learner's side: one update from `batch` (a rollout acted
  // elsewhere, with older parameters: the algorithm's targets must correct
  // for it), as if this agent had acted it; `batch` is left as it was.
  // `acted_updates`: the run's update count when the oldest of its rows
  // acted; the update's policy lag (and the run's, SharedCounters) is the
  // updates since, and never scales its step (--lag-tolerance: the targets
  // correct for the age instead). Throws what Learn() throws.
  void LearnFrom(Rollout* batch, int64_t acted_updates);

  // Greedy (true) or sampled (false) actions in Act() from now on
  // (act_deterministically).
  bool act_deterministically() const { return common().act_deterministically; }
  void SetActDeterministically(bool deterministic) {
    mutable_common().act_deterministically = deterministic;
  }

  ActorCriticModel& model() { return *model_; }
  const ActorCriticModel& model() const { return *model_; }
  const Space& observation_space() const { return observation_space_; }
  const Space& action_space() const { return action_space_; }
  FlatParameters& local() { return *local_; }
  const float* shared_params() const { return shared_params_; }
  const float* shared_ms() const { return shared_ms_; }
  // Optimizer steps this agent applied.
  int64_t num_updates() const { return num_updates_; }
  // Whether acting and updates take the fast path (no_fast_path).
  bool fast_path() const { return backend_->fast(); }
  // The run's observation statistics (normalize_observations), else null.
  ObservationNormalizer* normalizer() { return normalizer_.get(); }
  // The run's return statistics (normalize_rewards), else null.
  RewardNormalizer* reward_normalizer() { return reward_normalizer_.get(); }
  // Recurrent models: the training state carried between steps, [K, state
  // size] row-major (empty before the first step), and Act()'s own state.
  const std::vector<float>& recurrent_state() const {
    return backend_->training_state();
  }
  const std::vector<float>& eval_recurrent_state() const {
    return backend_->evaluation_state();
  }

 protected:
  // The algorithm's options (its struct derives from ActorCriticOptions);
  // not called during construction.
  virtual const ActorCriticOptions& common() const = 0;
  virtual ActorCriticOptions& mutable_common() = 0;

  // The rollout is complete (t_max steps, every environment's episode
  // ended where RolloutEndsWithEpisodes(), or the caller ended it): learn
  // from it. It is cleared after.
  virtual void Learn() = 0;
  // The algorithm's statistics of its updates (Statistics() puts them
  // after the two every actor-critic agent reports).
  virtual std::vector<Statistic> UpdateStatistics() const = 0;
  // Whether a rollout ends when every one of its environments' episodes
  // has ended (A3C's: the reference updates at each episode end), or runs
  // on into the next episodes until t_max steps (PPO's, as SB3 and PFRL
  // collect: an update's epochs and minibatches see t_max steps of every
  // environment however short the episodes are).
  virtual bool RolloutEndsWithEpisodes() const { return true; }

  struct AppliedStep {
    double grad_norm = 0;    // Global L2 norm of the gradient, before the clip.
    int64_t policy_lag = 0;  // Updates other workers applied to the shared
                             // parameters since the local copy that acted
                             // this rollout was taken.
  };
  // Clips local()'s gradient by max_grad_norm, applies the shared RMSprop
  // step and refreshes the local copy from the parameters it wrote (Hogwild:
  // they include every other worker's updates up to that moment); counts
  // the update. A gradient that is not finite is not applied: throws
  // std::runtime_error (NonFiniteGradientMessage).
  AppliedStep ApplyGradient();
  // The error that stops the run when the gradient's norm is `norm`, not
  // finite: what in the rollout is not finite, or that the loss diverged.
  // ApplyGradient throws it before any step; the rollout is then left as
  // it was (not cleared), so the agent is not meant to train on: the
  // trainer stops the run.
  std::string NonFiniteGradientMessage(double norm) const;
  // The local copy from the shared parameters.
  void RefreshLocal();

  const Rollout& rollout() const { return rollout_; }
  PolicyBackend& backend() { return *backend_; }
  // Whether the rollout being learned from is LearnFrom's (acted by
  // another process, with parameters of its own).
  bool RolloutActedElsewhere() const { return acted_elsewhere_; }
  // Whether every row of the rollout was acted with the local parameters as
  // they are now.
  bool RolloutActedWithLocal() const {
    return rollout_version_ == local_version_;
  }

 private:
  // Samples (or picks greedily) K actions from a forward pass over K rows;
  // `record`: they are the rollout's next step.
  void ChooseActions(FloatView obs, int64_t k, bool deterministic, bool record);
  // What the network sees of `rows` observations: `obs` itself, or them
  // normalized into `buffer` (training steps merge their statistics first;
  // `copy`: with the statistics of the last merge, for bootstrap rows).
  enum class ObsStats { kMerge, kFrozen, kCopy };
  FloatView Observed(FloatView obs, int64_t rows, ObsStats statistics,
                     std::vector<float>* buffer);

  std::shared_ptr<ActorCriticModel> model_;
  Space observation_space_;
  Space action_space_;
  int64_t obs_size_;
  int64_t action_size_;  // 1 for Discrete.
  // Space::action_mask of the observations: > 0 masks illegal actions.
  int64_t action_mask_ = 0;
  std::unique_ptr<FlatParameters> local_;
  // Computes the policy and value: the fast path, or LibTorch (which keeps
  // a recurrent model's state).
  std::unique_ptr<PolicyBackend> backend_;
  std::unique_ptr<ObservationNormalizer> normalizer_;
  std::unique_ptr<RewardNormalizer> reward_normalizer_;
  std::vector<double> scaled_rewards_;  // What the learner sees.
  std::vector<uint8_t> row_ended_;      // Scratch: terminal or episode end.
  // NextTurnPasses' rows for the next BatchObserveAndTrain (empty: none).
  std::vector<uint8_t> pending_passes_;
  std::vector<float> normalized_;       // Observations acted on.
  std::vector<float> normalized_next_;  // Next observations (bootstrap).
  // Counts changes of the local parameters; the rollout's acting outputs
  // can stand for the update's forward pass only if it did not change.
  int64_t local_version_ = 0;
  int64_t rollout_version_ = 0;

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
  RolloutSink sink_;              // SendRolloutsTo's; empty: Learn().
  bool acted_elsewhere_ = false;  // In LearnFrom.
  StatisticsSource statistics_source_;
  // The last action (ActAndTrain's or BatchActAndTrain's) awaits its
  // outcome: BatchObserveAndTrain has not been told it yet.
  bool awaiting_outcome_ = false;
  std::vector<Action> actions_;        // Returned to the caller.
  std::vector<float> action_values_;   // Storage of continuous actions.
  std::vector<double> scratch_probs_;  // Per-call scratch of acting.
  std::vector<int64_t> scratch_indices_;
  std::vector<float> scratch_samples_;
  std::vector<double> scratch_entropies_;
  std::vector<double> scratch_log_probs_;
  std::mt19937_64 rng_;
  double average_value_ = 0.0;
  double average_entropy_ = 0.0;
  int64_t num_updates_ = 0;
};

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_ACTOR_CRITIC_H_
