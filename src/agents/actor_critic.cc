#include "asyncrl/agents/actor_critic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "asyncrl/agents/distributions.h"
#include "asyncrl/misc/check.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/timers.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

// Adam's step count as checkpoints store it (a float: exact up to 2^24).
constexpr int64_t kAdamStepCap = int64_t{1} << 24;

// The optimizer's statistics in a checkpoint (ms/, or m/, v/ and
// adam/step), laid out as the shared area holds them.
struct OptimizerState {
  std::vector<float> statistics;
  int64_t adam_step = 0;
};

// Reads them for `flat`'s slices; a checkpoint of the other optimizer (a
// --load that changes --optimizer; a resume cannot) gives statistics of
// zero, with a warning. Throws std::runtime_error naming what is wrong.
OptimizerState ReadOptimizerState(const proto::Checkpoint& checkpoint,
                                  const FlatParameters& flat,
                                  const OptimizerOptions& options) {
  const auto slices = static_cast<int>(flat.slices().size());
  const bool adam = options.adam();
  const int expected = adam ? 2 * slices + 1 : slices;
  const int other = adam ? slices : 2 * slices + 1;
  const int found = checkpoint.optimizer_state_size();
  if (found != expected && found != other) {
    throw std::runtime_error(
        "checkpoint holds " + std::to_string(found) +
        " optimizer tensors; accepted: " + std::to_string(expected) +
        " (--optimizer " + options.kind + " for this model) or " +
        std::to_string(other) + " (the other optimizer's)");
  }
  const int64_t n = flat.size();
  OptimizerState state;
  state.statistics.assign(n * options.StatisticsPerParameter(), 0.0f);
  if (found == other) {
    Log(LogLevel::kWarning,
        std::string("the checkpoint's optimizer statistics are ") +
            (adam ? "RMSprop's" : "Adam's") + ": this run's --optimizer " +
            options.kind + " starts its statistics from zero");
    return state;
  }
  for (const auto& s : flat.slices()) {
    ReadFloatTensor(checkpoint.optimizer_state(),
                    (adam ? "m/" : "ms/") + s.name, s.shape,
                    state.statistics.data() + s.offset);
    if (adam) {
      ReadFloatTensor(checkpoint.optimizer_state(), "v/" + s.name, s.shape,
                      state.statistics.data() + n + s.offset);
    }
  }
  if (!adam) return state;
  float step = 0;
  ReadFloatTensor(checkpoint.optimizer_state(), "adam/step", {1}, &step);
  if (!(step >= 0 && step <= static_cast<float>(kAdamStepCap) &&
        step == std::floor(step))) {
    throw std::runtime_error("checkpoint's adam/step is " +
                             std::to_string(step) +
                             "; accepted: an integer in [0, 2^24]");
  }
  state.adam_step = static_cast<int64_t>(step);
  return state;
}

}  // namespace

void ActorCriticOptions::Validate() const {
  Require(t_max >= 1, "t_max", t_max, "an integer >= 1");
  Require(gamma >= 0 && gamma <= 1, "gamma", gamma, "a number in [0, 1]");
  // +inf clips nothing, as <= 0 does.
  Require(!std::isnan(max_grad_norm), "max_grad_norm", max_grad_norm,
          "a number (<= 0 or inf: no clipping)");
  Require(lr_warmup_updates >= 0, "lr_warmup_updates", lr_warmup_updates,
          "an integer >= 0 (0: no warm-up)");
  Require(lag_tolerance == 0 ||
              (std::isfinite(lag_tolerance) && lag_tolerance >= 1),
          "lag_tolerance", lag_tolerance,
          "0 (no scaling) or a finite number >= 1");
  Require(average_value_decay >= 0 && average_value_decay <= 1,
          "average_value_decay", average_value_decay, "a number in [0, 1]");
  Require(average_entropy_decay >= 0 && average_entropy_decay <= 1,
          "average_entropy_decay", average_entropy_decay, "a number in [0, 1]");
  Require(std::isfinite(normalize_observations_clip) &&
              normalize_observations_clip > 0,
          "normalize_observations_clip", normalize_observations_clip,
          "a finite number > 0");
  Require(std::isfinite(normalize_rewards_clip) && normalize_rewards_clip > 0,
          "normalize_rewards_clip", normalize_rewards_clip,
          "a finite number > 0");
  optimizer.Validate();
}

void WindowStat::Add(double value) {
  if (values_.size() < capacity_) {
    values_.push_back(value);
  } else {
    values_[next_] = value;
  }
  next_ = (next_ + 1) % capacity_;
}

double WindowStat::Mean() const {
  if (values_.empty()) return 0.0;
  double sum = 0.0;
  for (double v : values_) sum += v;
  return sum / static_cast<double>(values_.size());
}

double WindowStat::Max() const {
  return values_.empty() ? 0.0
                         : *std::max_element(values_.begin(), values_.end());
}

ActorCriticAgent::ActorCriticAgent(std::shared_ptr<ActorCriticModel> model,
                                   const Space& observation_space,
                                   const Space& action_space,
                                   const ActorCriticOptions& options)
    : model_(std::move(model)),
      observation_space_(observation_space),
      action_space_(action_space),
      obs_size_(observation_space.FlatSize()),
      action_size_(action_space.FlatSize()),
      rng_(options.seed) {
  options.ActorCriticOptions::Validate();
  if (!model_) throw std::invalid_argument("actor-critic agent: model is null");
  const bool categorical = model_->Kind() == PolicyKind::kCategorical;
  if (categorical != action_space.IsDiscrete()) {
    throw std::invalid_argument(std::string("actor-critic agent: a ") +
                                (categorical ? "categorical" : "Gaussian") +
                                " policy cannot act in action space " +
                                action_space.ToString());
  }
  action_mask_ = observation_space.action_mask;
  if (action_mask_ > 0 &&
      (!action_space.IsDiscrete() || action_space.n != action_mask_ ||
       action_mask_ > obs_size_)) {
    throw std::invalid_argument(
        "actor-critic agent: an observation space with an action mask of " +
        std::to_string(action_mask_) +
        " needs a Discrete action space of that many actions; the action "
        "space is " +
        action_space.ToString());
  }
  if (options.normalize_observations) {
    Require(observation_space.shape.size() == 1 && obs_size_ > action_mask_,
            "normalize_observations", true,
            "false for observation space " + observation_space.ToString() +
                " (only vectors are normalized; image planes such as "
                "MinAtar's are binary)");
    normalizer_ = std::make_unique<ObservationNormalizer>(
        obs_size_ - action_mask_, obs_size_,
        options.normalize_observations_clip);
  }
  if (options.normalize_rewards) {
    reward_normalizer_ = std::make_unique<RewardNormalizer>(
        options.gamma, options.normalize_rewards_clip);
  }
  local_ = std::make_unique<FlatParameters>(*model_);
  if (!options.no_fast_path) {
    backend_ = MakeDenseBackend(*model_, *local_, obs_size_, action_mask_);
  }
  if (backend_ == nullptr) {
    backend_ = MakeTorchBackend(model_, obs_size_, action_mask_);
  }
  const int64_t n = local_->size();
  owned_params_.assign(local_->params_data(), local_->params_data() + n);
  owned_ms_.assign(n * options.optimizer.StatisticsPerParameter(), 0.0f);
  shared_params_ = owned_params_.data();
  shared_ms_ = owned_ms_.data();
}

SharedStateSizes ActorCriticAgent::SharedSizes() const {
  SharedStateSizes sizes{
      local_->size(),
      local_->size() * common().optimizer.StatisticsPerParameter()};
  if (normalizer_) {
    sizes.state_bytes += static_cast<int64_t>(normalizer_->SharedBytes());
  }
  if (reward_normalizer_) {
    sizes.state_bytes +=
        static_cast<int64_t>(reward_normalizer_->SharedBytes());
  }
  return sizes;
}

void ActorCriticAgent::BindShared(SharedBuffers buffers, bool initialize) {
  ASYNCRL_CHECK(buffers.params != nullptr && buffers.optimizer != nullptr);
  const size_t bytes = static_cast<size_t>(local_->size()) * sizeof(float);
  if (initialize) {
    std::memcpy(buffers.params, shared_params_, bytes);
    std::memcpy(buffers.optimizer, shared_ms_,
                bytes * common().optimizer.StatisticsPerParameter());
  }
  shared_params_ = buffers.params;
  shared_ms_ = buffers.optimizer;
  counters_ = buffers.counters != nullptr ? buffers.counters : &owned_counters_;
  owned_params_ = {};
  owned_ms_ = {};
  // Without a state area (a program binding parameters only, e.g. a
  // snapshot copy) the statistics stay this agent's own.
  if (buffers.state != nullptr) {
    auto* area = static_cast<unsigned char*>(buffers.state);
    if (normalizer_) {
      normalizer_->Bind(area, initialize);
      area += normalizer_->SharedBytes();  // A multiple of 64.
    }
    if (reward_normalizer_) reward_normalizer_->Bind(area, initialize);
  }
  RefreshLocal();
  acting_params_updates_ = counters_->updates.load(std::memory_order_relaxed);
}

std::vector<ObservationNormalizer*> ActorCriticAgent::SharedStatistics() {
  std::vector<ObservationNormalizer*> out;
  if (normalizer_) out.push_back(normalizer_.get());
  if (reward_normalizer_) out.push_back(&reward_normalizer_->statistics());
  return out;
}

void ActorCriticAgent::RefreshLocal() {
  ++local_version_;
  std::memcpy(local_->params_data(), shared_params_,
              static_cast<size_t>(local_->size()) * sizeof(float));
}

void ActorCriticAgent::ChooseActions(FloatView obs, int64_t k,
                                     bool deterministic, bool record) {
  ASYNCRL_CHECK_EQ(obs.size, k * obs_size_);
  ScopedTimer timer("act");
  const PolicyKind kind = model_->Kind();
  const ActingRows rows = backend_->Act(local_->params_data(), obs.data, k,
                                        record, rollout_.rows());
  const float* policy_rows = rows.policy;
  const float* v = rows.values;
  actions_.resize(k);
  std::vector<double>& entropies = scratch_entropies_;
  entropies.resize(k);
  scratch_log_probs_.resize(k);
  double* log_probs = record ? scratch_log_probs_.data() : nullptr;
  if (kind == PolicyKind::kCategorical) {
    scratch_indices_.resize(k);
    Categorical::Sample(policy_rows, k, action_space_.n, deterministic, rng_,
                        scratch_indices_.data(), entropies.data(),
                        &scratch_probs_, log_probs);
    for (int64_t r = 0; r < k; ++r) {
      actions_[r] = Action::Discrete(scratch_indices_[r]);
    }
    if (record) {
      rollout_.actions.insert(rollout_.actions.end(), scratch_indices_.begin(),
                              scratch_indices_.end());
    }
  } else {
    const int64_t d = action_size_;
    std::vector<float>& samples = scratch_samples_;
    samples.resize(k * d);
    Gaussian::Sample(policy_rows, rows.log_std, k, d, deterministic, rng_,
                     samples.data(), entropies.data(), log_probs);
    // The rollout keeps the sample; the environment gets it clipped into
    // its bounds.
    if (record) {
      rollout_.cont_actions.insert(rollout_.cont_actions.end(), samples.begin(),
                                   samples.end());
    }
    action_values_.resize(k * d);
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t j = 0; j < d; ++j) {
        const int64_t i = r * d + j;
        action_values_[i] =
            std::clamp(samples[i], action_space_.low[j], action_space_.high[j]);
      }
      actions_[r] = Action::Continuous(action_values_.data() + r * d, d);
    }
  }
  if (!record) return;
  rollout_.obs.insert(rollout_.obs.end(), obs.data, obs.data + obs.size);
  rollout_.behaviour_log_probs.insert(rollout_.behaviour_log_probs.end(),
                                      log_probs, log_probs + k);
  rollout_.rewards.resize(rollout_.rewards.size() + k, 0.0f);
  rollout_.next.resize(rollout_.next.size() + k, Rollout::kContinue);
  for (int64_t r = 0; r < k; ++r) {
    average_value_ +=
        (1 - common().average_value_decay) * (v[r] - average_value_);
    average_entropy_ += (1 - common().average_entropy_decay) *
                        (entropies[r] - average_entropy_);
  }
}

FloatView ActorCriticAgent::Observed(FloatView obs, int64_t rows,
                                     ObsStats statistics,
                                     std::vector<float>* buffer) {
  if (!normalizer_) return obs;
  ASYNCRL_CHECK_EQ(obs.size, rows * obs_size_);
  buffer->resize(static_cast<size_t>(obs.size));
  switch (statistics) {
    case ObsStats::kMerge:
      normalizer_->MergeAndNormalize(obs.data, rows, buffer->data());
      break;
    case ObsStats::kFrozen:
      normalizer_->Normalize(obs.data, rows, buffer->data());
      break;
    case ObsStats::kCopy:
      normalizer_->NormalizeWithCopy(obs.data, rows, buffer->data());
      break;
  }
  return {buffer->data(), obs.size};
}

Action ActorCriticAgent::Act(FloatView obs) {
  obs = Observed(obs, 1, ObsStats::kFrozen, &normalized_);
  ChooseActions(obs, 1, common().act_deterministically, /*record=*/false);
  return actions_[0];
}

Action ActorCriticAgent::ActSampled(FloatView obs) {
  obs = Observed(obs, 1, ObsStats::kFrozen, &normalized_);
  ChooseActions(obs, 1, /*deterministic=*/false, /*record=*/false);
  return actions_[0];
}

const std::vector<Action>& ActorCriticAgent::BatchActAndTrain(
    FloatView obs, int64_t batch_size) {
  if (rollout_.steps == 0) {
    rollout_.batch = batch_size;
    backend_->BeginRollout(batch_size, &rollout_.initial_state);
    rollout_version_ = local_version_;
  } else if (batch_size != rollout_.batch) {
    throw std::invalid_argument("actor-critic agent: batch size changed from " +
                                std::to_string(rollout_.batch) + " to " +
                                std::to_string(batch_size) +
                                " within a rollout");
  }
  obs = Observed(obs, batch_size, ObsStats::kMerge, &normalized_);
  ChooseActions(obs, batch_size, /*deterministic=*/false, /*record=*/true);
  ++rollout_.steps;
  awaiting_outcome_ = true;
  return actions_;
}

void ActorCriticAgent::BatchObserveAndTrain(
    FloatView next_obs, const std::vector<double>& rewards,
    const std::vector<uint8_t>& terminal,
    const std::vector<uint8_t>& episode_end, bool end_rollout) {
  const int64_t k = rollout_.batch;
  ASYNCRL_CHECK_GT(rollout_.steps, 0);
  ASYNCRL_CHECK(awaiting_outcome_);
  awaiting_outcome_ = false;
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(rewards.size()), k);
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(terminal.size()), k);
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(episode_end.size()), k);
  ASYNCRL_CHECK_EQ(next_obs.size, k * obs_size_);
  // Bootstrap observations as the network sees them, with the statistics
  // of the step just merged.
  next_obs = Observed(next_obs, k, ObsStats::kCopy, &normalized_next_);
  auto bootstrap = [&](int64_t row) {
    return rollout_.AddBootstrap(next_obs.data + row * obs_size_, obs_size_);
  };
  const int64_t base = (rollout_.steps - 1) * k;
  const std::vector<double>* learned = &rewards;
  if (reward_normalizer_) {
    scaled_rewards_.assign(rewards.begin(), rewards.end());
    row_ended_.resize(k);
    for (int64_t r = 0; r < k; ++r) {
      row_ended_[r] = terminal[r] || episode_end[r];
    }
    reward_normalizer_->MergeAndScale(&scaled_rewards_, row_ended_);
    learned = &scaled_rewards_;
  }
  if (!pending_passes_.empty()) {
    ASYNCRL_CHECK_EQ(static_cast<int64_t>(pending_passes_.size()), k);
    rollout_.turn_passes.resize(static_cast<size_t>(rollout_.rows()), 0);
    std::copy(pending_passes_.begin(), pending_passes_.end(),
              rollout_.turn_passes.begin() + base);
    pending_passes_.clear();
  }
  bool all_ended = true;
  for (int64_t r = 0; r < k; ++r) {
    const int64_t i = base + r;
    rollout_.rewards[i] = static_cast<float>((*learned)[r]);
    if (terminal[r]) {
      rollout_.next[i] = Rollout::kTerminal;
    } else if (episode_end[r]) {
      rollout_.next[i] = bootstrap(r);
    } else {
      all_ended = false;
    }
    // The next episode starts afresh.
    if (terminal[r] || episode_end[r]) backend_->EndSequence(r);
  }
  const bool episodes_end_it = all_ended && !sink_ && RolloutEndsWithEpisodes();
  if (rollout_.steps < common().t_max && !episodes_end_it && !end_rollout) {
    return;
  }
  for (int64_t r = 0; r < k; ++r) {
    if (rollout_.next[base + r] == Rollout::kContinue)
      rollout_.next[base + r] = bootstrap(r);
  }
  if (sink_) {
    if (rollout_.steps == common().t_max) {
      sink_(rollout_, acting_params_updates_);
    }
    acting_params_updates_ = counters_->updates.load(std::memory_order_relaxed);
    RefreshLocal();
  } else {
    Learn();
  }
  rollout_.Clear();
}

void ActorCriticAgent::LearnFrom(Rollout* batch, int64_t acted_updates) {
  ASYNCRL_CHECK(!awaiting_outcome_);
  std::swap(rollout_, *batch);
  // Not acted with the local copy: the update recomputes every output.
  rollout_version_ = local_version_ - 1;
  // The learner is the only process that steps the shared parameters: its
  // copy is theirs. The policy lag is the rows' age; a step is never
  // scaled for it (the targets correct for it instead).
  acting_params_updates_ = std::min(
      acted_updates, counters_->updates.load(std::memory_order_relaxed));
  acted_elsewhere_ = true;
  struct Restore {
    ActorCriticAgent* agent;
    Rollout* batch;
    ~Restore() {
      std::swap(agent->rollout_, *batch);
      agent->acted_elsewhere_ = false;
    }
  } restore{this, batch};
  Learn();
}

std::string ActorCriticAgent::TurnTakingRefusal() const {
  if (model_->StateSize() > 0) {
    return "a recurrent arch's state would run through both players' turns";
  }
  return "";
}

void ActorCriticAgent::NextTurnPasses(const std::vector<uint8_t>& passes) {
  const std::string refusal = TurnTakingRefusal();
  if (!refusal.empty()) {
    throw std::invalid_argument(
        "actor-critic agent cannot learn both sides "
        "of a game: " +
        refusal);
  }
  pending_passes_ = passes;
}

Action ActorCriticAgent::ActAndTrain(FloatView obs, double reward) {
  if (awaiting_outcome_) {
    BatchObserveAndTrain(obs, {reward}, {0}, {0}, /*end_rollout=*/false);
  }
  return BatchActAndTrain(obs, 1)[0];
}

void ActorCriticAgent::StopEpisodeAndTrain(FloatView obs, double reward,
                                           bool terminal) {
  if (!awaiting_outcome_) return;  // No action taken this episode.
  // The episode's end ends the rollout where RolloutEndsWithEpisodes().
  BatchObserveAndTrain(obs, {reward}, {static_cast<uint8_t>(terminal)}, {1},
                       /*end_rollout=*/false);
}

std::string ActorCriticAgent::NonFiniteGradientMessage(double norm) const {
  auto non_finite = [](const std::vector<float>& values) {
    return static_cast<int64_t>(
        std::count_if(values.begin(), values.end(),
                      [](float v) { return !std::isfinite(v); }));
  };
  // "1 of 80 rewards is", "16 of 80 rewards are".
  auto count = [](int64_t n, const std::string& of) {
    return std::to_string(n) + " of " + of + (n == 1 ? " is" : " are");
  };
  const int64_t rewards = non_finite(rollout_.rewards);
  const int64_t obs =
      non_finite(rollout_.obs) + non_finite(rollout_.bootstrap_obs);
  std::string cause;
  if (rewards > 0) {
    cause = count(rewards, "the rollout's " +
                               std::to_string(rollout_.rewards.size()) +
                               " rewards") +
            " NaN or infinite";
  }
  if (obs > 0) {
    if (!cause.empty()) cause += ", and ";
    cause += count(obs, "its observations' values") + " NaN or infinite";
  }
  if (cause.empty()) {
    cause =
        "the rollout's rewards and observations are finite, so the network's "
        "outputs or the loss diverged (a smaller --lr may help)";
  }
  return "the gradient of this worker's optimizer step " +
         std::to_string(num_updates_ + 1) + " is not finite (norm " +
         (std::isnan(norm) ? "NaN" : "infinite") +
         "), so it was not applied and the shared parameters are as they "
         "were: " +
         cause;
}

double StepSizeFactor(const ActorCriticOptions& options, int64_t run_updates,
                      int64_t lag) {
  double factor = 1.0;
  if (options.lr_warmup_updates > 0 &&
      run_updates < options.lr_warmup_updates) {
    factor = static_cast<double>(run_updates + 1) /
             static_cast<double>(options.lr_warmup_updates);
  }
  if (options.lag_tolerance > 0 &&
      static_cast<double>(lag) > options.lag_tolerance) {
    factor *= options.lag_tolerance / static_cast<double>(lag);
  }
  return factor;
}

ActorCriticAgent::AppliedStep ActorCriticAgent::ApplyGradient() {
  AppliedStep step;
  const int64_t n = local_->size();
  const float* grads = local_->grads_data();
  float scale = 1.0f;
  int64_t copied_at = 0;
  {
    ScopedTimer clip("clip");
    step.grad_norm = std::sqrt(SquaredNorm(grads, n));
    // A NaN or infinite element would pass the clipping (NaN compares
    // false) and reach every worker's parameters for good: the run stops
    // instead, with the shared parameters as they were (the norm sums the
    // squares in double, so it is infinite only if an element is).
    if (!std::isfinite(step.grad_norm)) {
      throw std::runtime_error(NonFiniteGradientMessage(step.grad_norm));
    }
    scale = ClipScale(step.grad_norm, common().max_grad_norm);
  }
  {
    // The step also refreshes the local copy from the parameters it has
    // just written (Hogwild: they include every other worker's updates up
    // to that moment), saving a second pass over the shared array.
    ScopedTimer optimizer("optimizer");
    // Every update counted before the copy starts has written its step
    // (workers count an update after applying it): the copy includes it.
    copied_at = counters_->updates.load(std::memory_order_relaxed);
    OptimizerOptions stepped = common().optimizer;
    stepped.lr *= StepSizeFactor(
        common(), copied_at,
        acted_elsewhere_ ? 0 : copied_at - acting_params_updates_);
    if (stepped.adam()) {
      // Adam's step count is the run's update count (Hogwild: workers
      // stepping at once may share a count).
      AdamStepAndCopy(stepped, scale, copied_at + 1, grads, shared_params_,
                      shared_ms_, shared_ms_ + n, local_->params_data(), n);
    } else {
      RmspropStepAndCopy(stepped, scale, grads, shared_params_, shared_ms_,
                         local_->params_data(), n);
    }
    ++local_version_;
  }
  // The policy lag: updates other workers applied to the shared parameters
  // after the local copy that acted this rollout was taken (updates that
  // land during a copy count as missed).
  const int64_t before =
      counters_->updates.fetch_add(1, std::memory_order_relaxed);
  step.policy_lag = std::max<int64_t>(0, before - acting_params_updates_);
  acting_params_updates_ = copied_at + 1;  // The copy holds this update too.
  counters_->policy_lag_sum.fetch_add(step.policy_lag,
                                      std::memory_order_relaxed);
  ++num_updates_;
  return step;
}

std::vector<Statistic> UpdateWindows::Report() const {
  return {{"policy_loss", policy_loss.Mean()},
          {"value_loss", value_loss.Mean()},
          {"entropy", entropy.Mean()},
          {"grad_norm", grad_norm.Mean()},
          {"policy_lag", policy_lag.Mean()},
          {"policy_lag_max", policy_lag.Max()}};
}

std::vector<Statistic> ActorCriticAgent::Statistics() const {
  // The reference's two first (scores.txt's columns keep its order).
  std::vector<Statistic> stats = {{"average_value", average_value_},
                                  {"average_entropy", average_entropy_}};
  std::vector<Statistic> updates = UpdateStatistics();
  if (statistics_source_) statistics_source_(&updates);
  stats.insert(stats.end(), updates.begin(), updates.end());
  return stats;
}

void ActorCriticAgent::SaveTo(proto::Checkpoint* checkpoint) const {
  const bool adam = common().optimizer.adam();
  const int64_t n = local_->size();
  for (const auto& s : local_->slices()) {
    AddFloatTensor(checkpoint->mutable_parameters(), s.name, s.shape,
                   shared_params_ + s.offset);
    AddFloatTensor(checkpoint->mutable_optimizer_state(),
                   (adam ? "m/" : "ms/") + s.name, s.shape,
                   shared_ms_ + s.offset);
    if (adam) {
      AddFloatTensor(checkpoint->mutable_optimizer_state(), "v/" + s.name,
                     s.shape, shared_ms_ + n + s.offset);
    }
  }
  if (adam) {
    // Adam's step count for its bias corrections: a float holds it exactly
    // up to 2^24, past which the corrections are 1 in float anyway.
    const float step = static_cast<float>(std::min<int64_t>(
        counters_->updates.load(std::memory_order_relaxed), kAdamStepCap));
    AddFloatTensor(checkpoint->mutable_optimizer_state(), "adam/step", {1},
                   &step);
  }
  if (normalizer_) {
    normalizer_->SaveTo(checkpoint->mutable_observation_statistics());
  }
  if (reward_normalizer_) {
    reward_normalizer_->SaveTo(checkpoint->mutable_reward_statistics());
  }
}

void ActorCriticAgent::SaveActingTo(proto::Checkpoint* checkpoint) const {
  SaveTo(checkpoint);
  checkpoint->clear_parameters();
  for (const auto& s : local_->slices()) {
    AddFloatTensor(checkpoint->mutable_parameters(), s.name, s.shape,
                   local_->params_data() + s.offset);
  }
}

void ActorCriticAgent::LoadFrom(const proto::Checkpoint& checkpoint) {
  const auto expected = static_cast<int>(local_->slices().size());
  if (checkpoint.parameters_size() != expected) {
    throw std::runtime_error(
        "checkpoint holds " + std::to_string(checkpoint.parameters_size()) +
        " parameter tensors; this model has " + std::to_string(expected) +
        " (different --arch, --hidden-sizes, --conv-channels or "
        "environment?)");
  }
  // Read everything first so that a bad tensor leaves the shared state as it
  // was.
  const int64_t n = local_->size();
  std::vector<float> params(n);
  for (const auto& s : local_->slices()) {
    ReadFloatTensor(checkpoint.parameters(), s.name, s.shape,
                    params.data() + s.offset);
  }
  const OptimizerState optimizer =
      ReadOptimizerState(checkpoint, *local_, common().optimizer);
  // The return statistics, checked on a copy first: nothing changes when
  // anything throws. A checkpoint without them (its run did not normalize
  // rewards) leaves this agent's as they are (fresh in a new run); one with
  // them loaded by a run that does not normalize rewards leaves them
  // unused.
  const bool load_rewards =
      reward_normalizer_ && checkpoint.has_reward_statistics();
  if (load_rewards) {
    try {
      RewardNormalizer(common().gamma, common().normalize_rewards_clip)
          .LoadFrom(checkpoint.reward_statistics());
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(
          std::string("checkpoint's reward statistics (one element, the "
                      "discounted return's): ") +
          e.what());
    }
  }
  // The statistics the parameters were trained on go with them (LoadFrom
  // changes nothing when it throws).
  if (normalizer_) {
    if (!checkpoint.has_observation_statistics()) {
      throw std::runtime_error(
          "checkpoint holds no observation statistics (its run did not "
          "normalize observations; this one does: "
          "--normalize-observations)");
    }
    normalizer_->LoadFrom(checkpoint.observation_statistics());
  } else if (checkpoint.has_observation_statistics()) {
    throw std::runtime_error(
        "checkpoint holds observation statistics: its network was trained "
        "on normalized observations (give --normalize-observations)");
  }
  if (load_rewards) {
    reward_normalizer_->LoadFrom(checkpoint.reward_statistics());
  }
  std::memcpy(shared_params_, params.data(), n * sizeof(float));
  std::memcpy(shared_ms_, optimizer.statistics.data(),
              optimizer.statistics.size() * sizeof(float));
  if (common().optimizer.adam()) {
    // The run's update count, Adam's step, goes on from the checkpoint's.
    counters_->updates.store(optimizer.adam_step, std::memory_order_relaxed);
  }
  RefreshLocal();
  acting_params_updates_ = counters_->updates.load(std::memory_order_relaxed);
}

}  // namespace asyncrl
