#include "asyncrl/agents/a3c.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "asyncrl/agents/distributions.h"
#include "asyncrl/agents/targets.h"
#include "asyncrl/misc/check.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/timers.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
void A3COptions::Validate() const {
  Require(t_max >= 1, "t_max", t_max, "an integer >= 1");
  Require(gamma >= 0 && gamma <= 1, "gamma", gamma, "a number in [0, 1]");
  Require(std::isfinite(beta) && beta >= 0, "beta", beta,
          "a finite number >= 0");
  Require(std::isfinite(pi_loss_coef) && pi_loss_coef >= 0, "pi_loss_coef",
          pi_loss_coef, "a finite number >= 0");
  Require(std::isfinite(v_loss_coef) && v_loss_coef >= 0, "v_loss_coef",
          v_loss_coef, "a finite number >= 0");
  // +inf clips nothing, as <= 0 does.
  Require(!std::isnan(max_grad_norm), "max_grad_norm", max_grad_norm,
          "a number (<= 0 or inf: no clipping)");
  Require(average_value_decay >= 0 && average_value_decay <= 1,
          "average_value_decay", average_value_decay, "a number in [0, 1]");
  Require(average_entropy_decay >= 0 && average_entropy_decay <= 1,
          "average_entropy_decay", average_entropy_decay, "a number in [0, 1]");
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
  optimizer.Validate();
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

FlagSpecs A3COptions::Flags() {
  FlagSpecs flags = {
      {"t-max", "steps per update", &t_max},
      {"beta", "entropy weight (train_a3c: 0.1 for two-player games)", &beta},
      {"gamma", "discount factor", &gamma},
      {"max-grad-norm",
       "clip gradients to this global L2 norm (<= 0 or inf: no clipping)",
       &max_grad_norm},
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
      {"no-fast-path",
       "compute fc-softmax and fc-gaussian with LibTorch like the other "
       "archs instead of the fast path (same results to rounding, slower; "
       "for comparison)",
       &no_fast_path}};
  for (FlagSpec& flag : optimizer.Flags()) flags.push_back(std::move(flag));
  return flags;
}

A3C::A3C(std::shared_ptr<ActorCriticModel> model,
         const Space& observation_space, const Space& action_space,
         const A3COptions& options)
    : model_(std::move(model)),
      observation_space_(observation_space),
      action_space_(action_space),
      options_(options),
      obs_size_(observation_space.FlatSize()),
      action_size_(action_space.FlatSize()),
      rng_(options.seed) {
  options_.Validate();
  policy_target_ = options_.PolicyTargetKind();
  value_target_ = options_.ValueTargetKind();
  if (!model_) throw std::invalid_argument("A3C: model is null");
  const bool categorical = model_->Kind() == PolicyKind::kCategorical;
  if (categorical != action_space.IsDiscrete()) {
    throw std::invalid_argument(
        std::string("A3C: a ") + (categorical ? "categorical" : "Gaussian") +
        " policy cannot act in action space " + action_space.ToString());
  }
  action_mask_ = observation_space.action_mask;
  if (action_mask_ > 0 &&
      (!action_space.IsDiscrete() || action_space.n != action_mask_ ||
       action_mask_ > obs_size_)) {
    throw std::invalid_argument(
        "A3C: an observation space with an action mask of " +
        std::to_string(action_mask_) +
        " needs a Discrete action space of that many actions; the action "
        "space is " +
        action_space.ToString());
  }
  state_size_ = model_->StateSize();
  local_ = std::make_unique<FlatParameters>(*model_);
  if (!options_.no_fast_path) {
    if (const auto description = model_->Describe()) {
      DenseLayout layout = DenseLayout::Of(*description, *local_);
      layout.action_mask = action_mask_;
      fast_ = std::make_unique<DenseActorCritic<float>>(layout);
      fast_eval_ = std::make_unique<DenseActorCritic<float>>(layout);
    }
  }
  const int64_t n = local_->size();
  owned_params_.assign(local_->params_data(), local_->params_data() + n);
  owned_ms_.assign(n, 0.0f);
  shared_params_ = owned_params_.data();
  shared_ms_ = owned_ms_.data();
}

SharedStateSizes A3C::SharedSizes() const {
  return {local_->size(), local_->size()};
}

void A3C::BindShared(SharedBuffers buffers, bool initialize) {
  ASYNCRL_CHECK(buffers.params != nullptr && buffers.optimizer != nullptr);
  const size_t bytes = static_cast<size_t>(local_->size()) * sizeof(float);
  if (initialize) {
    std::memcpy(buffers.params, shared_params_, bytes);
    std::memcpy(buffers.optimizer, shared_ms_, bytes);
  }
  shared_params_ = buffers.params;
  shared_ms_ = buffers.optimizer;
  counters_ = buffers.counters != nullptr ? buffers.counters : &owned_counters_;
  owned_params_ = {};
  owned_ms_ = {};
  RefreshLocal();
  acting_params_updates_ = counters_->updates.load(std::memory_order_relaxed);
}

void A3C::RefreshLocal() {
  ++local_version_;
  std::memcpy(local_->params_data(), shared_params_,
              static_cast<size_t>(local_->size()) * sizeof(float));
}

void A3C::ChooseActions(FloatView obs, int64_t k, bool deterministic,
                        bool record) {
  ASYNCRL_CHECK_EQ(obs.size, k * obs_size_);
  ScopedTimer timer("act");
  const PolicyKind kind = model_->Kind();
  // The forward pass's rows: logits (categorical) or means and log standard
  // deviations (Gaussian), and values. `outputs` keeps LibTorch's alive.
  const float* policy_rows = nullptr;
  const float* log_std_rows = nullptr;
  const float* v = nullptr;
  std::vector<torch::Tensor> outputs;
  if (fast_ != nullptr) {
    const float* params = local_->params_data();
    // Training steps go after the rollout's earlier rows, for the update.
    DenseActorCritic<float>& net = record ? *fast_ : *fast_eval_;
    const int64_t first = record ? rollout_.rows() : 0;
    net.Forward(params, obs.data, k, first);
    policy_rows = net.policy() + first * fast_->layout().policy_size();
    v = net.values() + first;
    if (kind == PolicyKind::kGaussian) {
      const float* log_std = params + fast_->layout().log_std;
      fast_log_std_.resize(static_cast<size_t>(k * action_size_));
      for (int64_t r = 0; r < k; ++r) {
        std::copy(log_std, log_std + action_size_,
                  fast_log_std_.begin() + r * action_size_);
      }
      log_std_rows = fast_log_std_.data();
    }
  } else {
    c10::InferenceMode guard;
    const auto x =
        torch::from_blob(const_cast<float*>(obs.data), {k, obs_size_});
    // The rows' recurrent state (none for feed-forward models) goes in and
    // the state after the step comes back into the same floats.
    std::vector<float>& state = record ? train_state_ : eval_state_;
    const auto size = static_cast<size_t>(k * state_size_);
    if (state.size() != size) state.assign(size, 0.0f);
    const ModelStep step = model_->Step(
        x, size == 0 ? torch::Tensor()
                     : torch::from_blob(state.data(), {k, state_size_}));
    if (size > 0) {
      const auto next_state = step.state.contiguous();
      std::memcpy(state.data(), next_state.data_ptr<float>(),
                  size * sizeof(float));
    }
    const ModelOutput& out = step.output;
    outputs.push_back(out.value.contiguous());
    v = outputs.back().data_ptr<float>();
    if (kind == PolicyKind::kCategorical) {
      outputs.push_back(
          (action_mask_ > 0 ? MaskLogits(out.logits, x) : out.logits)
              .contiguous());
      policy_rows = outputs.back().data_ptr<float>();
    } else {
      outputs.push_back(out.mean.contiguous());
      policy_rows = outputs.back().data_ptr<float>();
      outputs.push_back(out.log_std.contiguous());
      log_std_rows = outputs.back().data_ptr<float>();
    }
  }
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
    Gaussian::Sample(policy_rows, log_std_rows, k, d, deterministic, rng_,
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
        (1 - options_.average_value_decay) * (v[r] - average_value_);
    average_entropy_ += (1 - options_.average_entropy_decay) *
                        (entropies[r] - average_entropy_);
  }
}

Action A3C::Act(FloatView obs) {
  ChooseActions(obs, 1, options_.act_deterministically, /*record=*/false);
  return actions_[0];
}

Action A3C::ActSampled(FloatView obs) {
  ChooseActions(obs, 1, /*deterministic=*/false, /*record=*/false);
  return actions_[0];
}

const std::vector<Action>& A3C::BatchActAndTrain(FloatView obs,
                                                 int64_t batch_size) {
  if (rollout_.steps == 0) {
    rollout_.batch = batch_size;
    // Rows are [K, state size] row-major: a smaller batch keeps the state
    // of its rows (their episodes go on), a larger one adds zeros. Empty
    // for feed-forward models.
    train_state_.resize(static_cast<size_t>(batch_size * state_size_), 0.0f);
    rollout_.initial_state = train_state_;
    rollout_version_ = local_version_;
  } else if (batch_size != rollout_.batch) {
    throw std::invalid_argument(
        "A3C: batch size changed from " + std::to_string(rollout_.batch) +
        " to " + std::to_string(batch_size) + " within a rollout");
  }
  ChooseActions(obs, batch_size, /*deterministic=*/false, /*record=*/true);
  ++rollout_.steps;
  return actions_;
}

void A3C::BatchObserveAndTrain(FloatView next_obs,
                               const std::vector<double>& rewards,
                               const std::vector<uint8_t>& terminal,
                               const std::vector<uint8_t>& episode_end,
                               bool end_rollout) {
  const int64_t k = rollout_.batch;
  ASYNCRL_CHECK_GT(rollout_.steps, 0);
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(rewards.size()), k);
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(terminal.size()), k);
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(episode_end.size()), k);
  ASYNCRL_CHECK_EQ(next_obs.size, k * obs_size_);
  auto bootstrap = [&](int64_t row) {
    return rollout_.AddBootstrap(next_obs.data + row * obs_size_, obs_size_);
  };
  const int64_t base = (rollout_.steps - 1) * k;
  bool all_ended = true;
  for (int64_t r = 0; r < k; ++r) {
    const int64_t i = base + r;
    rollout_.rewards[i] = static_cast<float>(rewards[r]);
    if (terminal[r]) {
      rollout_.next[i] = Rollout::kTerminal;
    } else if (episode_end[r]) {
      rollout_.next[i] = bootstrap(r);
    } else {
      all_ended = false;
    }
    if (terminal[r] || episode_end[r]) {  // The next episode starts afresh.
      std::fill_n(train_state_.begin() + r * state_size_, state_size_, 0.0f);
    }
  }
  if (rollout_.steps < options_.t_max && !all_ended && !end_rollout) return;
  for (int64_t r = 0; r < k; ++r) {
    if (rollout_.next[base + r] == Rollout::kContinue)
      rollout_.next[base + r] = bootstrap(r);
  }
  Update();
}

Action A3C::ActAndTrain(FloatView obs, double reward) {
  if (rollout_.steps > 0) {
    BatchObserveAndTrain(obs, {reward}, {0}, {0}, /*end_rollout=*/false);
  }
  return BatchActAndTrain(obs, 1)[0];
}

void A3C::StopEpisodeAndTrain(FloatView obs, double reward, bool terminal) {
  if (rollout_.steps == 0) return;  // No action taken this episode.
  BatchObserveAndTrain(obs, {reward}, {static_cast<uint8_t>(terminal)}, {1},
                       /*end_rollout=*/true);
}

A3C::Losses A3C::ComputeLosses() {
  const int64_t n = rollout_.rows();
  ASYNCRL_CHECK_GT(n, 0);
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(rollout_.behaviour_log_probs.size()),
                   n);
  // --fresh-params: the gradient is taken at the shared parameters as they
  // are now; the rollout was acted with older ones, which the importance
  // ratios below account for. Otherwise the local copy is the one that
  // acted, and the rollout is on-policy by construction (ratios are 1).
  const bool off_policy = options_.fresh_params;
  if (off_policy) {
    ScopedTimer refresh("refresh");
    RefreshLocal();
  }
  const UnrollInput input = MakeUnrollInput(rollout_, obs_size_);
  const UnrollOutput unrolled = model_->Unroll(input);
  ModelOutput out = unrolled.output;
  if (action_mask_ > 0) out.logits = MaskLogits(out.logits, input.obs);
  const torch::Tensor boot = unrolled.bootstrap_values.contiguous();
  const torch::Tensor& v = out.value;
  const torch::Tensor values = v.detach().contiguous();

  const PolicyKind kind = model_->Kind();
  const torch::Tensor actions =
      kind == PolicyKind::kCategorical
          ? torch::from_blob(rollout_.actions.data(), {n}, torch::kInt64)
          : torch::from_blob(rollout_.cont_actions.data(), {n, action_size_});
  const PolicyTerms policy = EvaluateActions(kind, out, actions);

  A3CUpdateInfo& info = last_update_;
  info.log_ratios.clear();
  if (off_policy) {
    const torch::Tensor log_pi = policy.log_prob.detach().contiguous();
    const float* lp = log_pi.data_ptr<float>();
    info.log_ratios.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      info.log_ratios[i] = lp[i] - rollout_.behaviour_log_probs[i];
    }
  }
  SetTargets(values.data_ptr<float>(), boot.data_ptr<float>());
  const auto returns = torch::from_blob(info.returns.data(), {n});
  const auto advantages = torch::from_blob(info.advantages.data(), {n});

  Losses losses;
  const torch::Tensor entropy_sum = policy.entropy.sum();
  losses.pi_loss =
      -(policy.log_prob * advantages).sum() - options_.beta * entropy_sum;
  losses.v_loss = (v - returns).pow(2).sum() / 2;
  info.entropy = entropy_sum.item<double>() / static_cast<double>(n);
  return losses;
}

void A3C::SetTargets(const float* values, const float* bootstrap_values) {
  A3CUpdateInfo& info = last_update_;
  const TargetInputs inputs{
      rollout_,
      {values, rollout_.rows()},
      {bootstrap_values, rollout_.num_bootstrap},
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

void A3C::FastLossGradient() {
  const int64_t n = rollout_.rows();
  ASYNCRL_CHECK_GT(n, 0);
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(rollout_.behaviour_log_probs.size()),
                   n);
  const bool off_policy = options_.fresh_params;  // As in ComputeLosses.
  if (off_policy) {
    ScopedTimer refresh("refresh");
    RefreshLocal();
  }
  const float* params = local_->params_data();
  const bool categorical = model_->Kind() == PolicyKind::kCategorical;
  const int64_t* actions = categorical ? rollout_.actions.data() : nullptr;
  const float* cont_actions =
      categorical ? nullptr : rollout_.cont_actions.data();
  const float* obs = rollout_.obs.data();
  A3CUpdateInfo& info = last_update_;
  {
    ScopedTimer forward("forward");
    // The rows acted with the parameters the gradient is taken at were
    // forwarded while acting (DenseActorCritic keeps them); otherwise
    // (--fresh-params, or parameters loaded mid-rollout) forward them now.
    if (off_policy || rollout_version_ != local_version_) {
      fast_->Forward(params, obs, n);
    }
    if (rollout_.num_bootstrap > 0) {
      fast_->Forward(params, rollout_.bootstrap_obs.data(),
                     rollout_.num_bootstrap, n, /*with_policy=*/false);
    }
    fast_log_probs_.resize(n);
    fast_entropies_.resize(n);
    fast_->EvaluateActions(params, n, actions, cont_actions,
                           fast_log_probs_.data(), fast_entropies_.data());
    info.log_ratios.clear();
    if (off_policy) {
      info.log_ratios.resize(n);
      for (int64_t i = 0; i < n; ++i) {
        info.log_ratios[i] = static_cast<float>(
            fast_log_probs_[i] - rollout_.behaviour_log_probs[i]);
      }
    }
    const float* values = fast_->values();
    SetTargets(values, values + n);
    double pi_loss = 0;
    double v_loss = 0;
    double entropy_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      pi_loss -= fast_log_probs_[i] * info.advantages[i];
      entropy_sum += fast_entropies_[i];
      const double error = double{values[i]} - info.returns[i];
      v_loss += error * error / 2;
    }
    info.pi_loss = pi_loss - options_.beta * entropy_sum;
    info.v_loss = v_loss;
    info.entropy = entropy_sum / static_cast<double>(n);
  }
  ScopedTimer backward("backward");
  const auto [pi_scale, v_scale] = LossScales();
  fast_->LossGradient(params, obs, n, actions, cont_actions,
                      info.advantages.data(), info.returns.data(),
                      options_.beta, pi_scale, v_scale, local_->grads_data());
}

std::pair<double, double> A3C::LossScales() const {
  double pi_scale = options_.pi_loss_coef;
  double v_scale = options_.v_loss_coef;
  const auto steps = static_cast<double>(rollout_.steps);
  if (options_.keep_loss_scale_same && rollout_.steps < options_.t_max) {
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
  const auto k = static_cast<double>(rollout_.batch);
  return {pi_scale / k, v_scale / k};
}

void A3C::Update() {
  ScopedTimer timer("update");
  if (fast_ != nullptr) {
    FastLossGradient();
  } else {
    torch::Tensor loss;
    {
      ScopedTimer forward("forward");
      const Losses losses = ComputeLosses();
      last_update_.pi_loss = losses.pi_loss.item<double>();
      last_update_.v_loss = losses.v_loss.item<double>();
      const auto [pi_scale, v_scale] = LossScales();
      loss = losses.pi_loss * pi_scale + losses.v_loss * v_scale;
    }
    ScopedTimer backward("backward");
    local_->ZeroGrads();
    loss.backward();
  }
  const int64_t n = local_->size();
  const float* grads = local_->grads_data();
  float scale = 1.0f;
  int64_t copied_at = 0;
  {
    ScopedTimer clip("clip");
    last_update_.grad_norm = std::sqrt(SquaredNorm(grads, n));
    scale = ClipScale(last_update_.grad_norm, options_.max_grad_norm);
  }
  {
    // The step also refreshes the local copy from the parameters it has
    // just written (Hogwild: they include every other worker's updates up
    // to that moment), saving a second pass over the shared array.
    ScopedTimer optimizer("optimizer");
    // Every update counted before the copy starts has written its step
    // (workers count an update after applying it): the copy includes it.
    copied_at = counters_->updates.load(std::memory_order_relaxed);
    RmspropStepAndCopy(options_.optimizer, scale, grads, shared_params_,
                       shared_ms_, local_->params_data(), n);
    ++local_version_;
  }
  // The policy lag: updates other workers applied to the shared parameters
  // after the local copy that acted this rollout was taken (updates that
  // land during a copy count as missed).
  const int64_t before =
      counters_->updates.fetch_add(1, std::memory_order_relaxed);
  A3CUpdateInfo& info = last_update_;
  info.policy_lag = std::max<int64_t>(0, before - acting_params_updates_);
  acting_params_updates_ = copied_at + 1;  // The copy holds this update too.
  counters_->policy_lag_sum.fetch_add(info.policy_lag,
                                      std::memory_order_relaxed);
  const auto rows = static_cast<double>(rollout_.rows());
  // Per row; the policy loss without the entropy bonus.
  pi_loss_stat_.Add(info.pi_loss / rows + options_.beta * info.entropy);
  v_loss_stat_.Add(info.v_loss / rows);
  entropy_stat_.Add(info.entropy);
  grad_norm_stat_.Add(info.grad_norm);
  lag_stat_.Add(static_cast<double>(info.policy_lag));
  ratio_stat_.Add(info.mean_ratio);
  clipped_stat_.Add(info.clipped_fraction);
  rollout_.Clear();
  ++num_updates_;
}

std::vector<Statistic> A3C::Statistics() const {
  // The reference's two first (scores.txt's columns keep its order), then
  // the update's terms over the last 100 updates.
  return {{"average_value", average_value_},
          {"average_entropy", average_entropy_},
          {"policy_loss", pi_loss_stat_.Mean()},
          {"value_loss", v_loss_stat_.Mean()},
          {"entropy", entropy_stat_.Mean()},
          {"grad_norm", grad_norm_stat_.Mean()},
          {"policy_lag", lag_stat_.Mean()},
          {"policy_lag_max", lag_stat_.Max()},
          {"importance_ratio", ratio_stat_.Mean()},
          {"ratio_clipped", clipped_stat_.Mean()}};
}

void A3C::SaveTo(proto::Checkpoint* checkpoint) const {
  for (const auto& s : local_->slices()) {
    AddFloatTensor(checkpoint->mutable_parameters(), s.name, s.shape,
                   shared_params_ + s.offset);
    AddFloatTensor(checkpoint->mutable_optimizer_state(), "ms/" + s.name,
                   s.shape, shared_ms_ + s.offset);
  }
}

void A3C::LoadFrom(const proto::Checkpoint& checkpoint) {
  const auto expected = static_cast<int>(local_->slices().size());
  if (checkpoint.parameters_size() != expected ||
      checkpoint.optimizer_state_size() != expected) {
    throw std::runtime_error(
        "checkpoint holds " + std::to_string(checkpoint.parameters_size()) +
        " parameter and " + std::to_string(checkpoint.optimizer_state_size()) +
        " optimizer tensors; this model has " + std::to_string(expected) +
        " of each (different --arch or environment?)");
  }
  // Read everything first so that a bad tensor leaves the shared state as it
  // was.
  const int64_t n = local_->size();
  std::vector<float> params(n);
  std::vector<float> ms(n);
  for (const auto& s : local_->slices()) {
    ReadFloatTensor(checkpoint.parameters(), s.name, s.shape,
                    params.data() + s.offset);
    ReadFloatTensor(checkpoint.optimizer_state(), "ms/" + s.name, s.shape,
                    ms.data() + s.offset);
  }
  std::memcpy(shared_params_, params.data(), n * sizeof(float));
  std::memcpy(shared_ms_, ms.data(), n * sizeof(float));
  RefreshLocal();
  acting_params_updates_ = counters_->updates.load(std::memory_order_relaxed);
}

}  // namespace asyncrl
