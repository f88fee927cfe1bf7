#include "asyncrl/agents/a3c.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "asyncrl/misc/check.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/timers.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

constexpr double kLog2Pi = 1.8378770664093453;  // log(2 * pi)

}  // namespace

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
  optimizer.Validate();
}

FlagSpecs A3COptions::Flags() {
  FlagSpecs flags = {
      {"t-max", "steps per update", &t_max},
      {"beta", "entropy weight", &beta},
      {"gamma", "discount factor", &gamma},
      {"max-grad-norm",
       "clip gradients to this global L2 norm (<= 0 or inf: no clipping)",
       &max_grad_norm}};
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
  if (!model_) throw std::invalid_argument("A3C: model is null");
  const bool categorical = model_->Kind() == PolicyKind::kCategorical;
  if (categorical != action_space.IsDiscrete()) {
    throw std::invalid_argument(
        std::string("A3C: a ") + (categorical ? "categorical" : "Gaussian") +
        " policy cannot act in action space " + action_space.ToString());
  }
  recurrent_ = dynamic_cast<RecurrentActorCritic*>(model_.get());
  if (recurrent_ != nullptr) state_size_ = recurrent_->StateSize();
  local_ = std::make_unique<FlatParameters>(*model_);
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
  owned_params_ = {};
  owned_ms_ = {};
  RefreshLocal();
}

void A3C::RefreshLocal() {
  std::memcpy(local_->params_data(), shared_params_,
              static_cast<size_t>(local_->size()) * sizeof(float));
}

void A3C::ChooseActions(FloatView obs, int64_t k, bool deterministic,
                        bool record) {
  ASYNCRL_CHECK_EQ(obs.size, k * obs_size_);
  ScopedTimer timer("act");
  c10::InferenceMode guard;
  const auto x = torch::from_blob(const_cast<float*>(obs.data), {k, obs_size_});
  ModelOutput out;
  if (recurrent_ != nullptr) {
    std::vector<float>& state = record ? train_state_ : eval_state_;
    const auto size = static_cast<size_t>(k * state_size_);
    if (state.size() != size) state.assign(size, 0.0f);
    const RecurrentStep step =
        recurrent_->Step(recurrent_->Encode(x),
                         torch::from_blob(state.data(), {k, state_size_}));
    out = recurrent_->Heads(step.hidden);
    const auto next_state = step.state.contiguous();
    std::memcpy(state.data(), next_state.data_ptr<float>(),
                size * sizeof(float));
  } else {
    out = model_->Forward(x);
  }
  const auto values = out.value.contiguous();
  const float* v = values.data_ptr<float>();
  actions_.resize(k);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double>& entropies = scratch_entropies_;
  entropies.resize(k);
  if (model_->Kind() == PolicyKind::kCategorical) {
    const auto logits_t = out.logits.contiguous();
    const float* logits = logits_t.data_ptr<float>();
    const int64_t n = action_space_.n;
    std::vector<double>& probs = scratch_probs_;
    probs.resize(n);
    for (int64_t r = 0; r < k; ++r) {
      const float* l = logits + r * n;
      const double max = *std::max_element(l, l + n);
      double sum = 0;
      for (int64_t a = 0; a < n; ++a) sum += probs[a] = std::exp(l[a] - max);
      const double log_sum = std::log(sum);
      double entropy = 0;
      for (int64_t a = 0; a < n; ++a) {
        probs[a] /= sum;
        entropy -= probs[a] * (l[a] - max - log_sum);
      }
      int64_t action = 0;
      if (deterministic) {
        action = std::max_element(probs.begin(), probs.end()) - probs.begin();
      } else {
        double u = uniform(rng_);
        action = n - 1;
        for (int64_t a = 0; a < n; ++a) {
          u -= probs[a];
          if (u < 0) {
            action = a;
            break;
          }
        }
      }
      actions_[r] = Action::Discrete(action);
      entropies[r] = entropy;
      if (record) rollout_.actions.push_back(action);
    }
  } else {
    const auto mean_t = out.mean.contiguous();
    const auto log_std_t = out.log_std.contiguous();
    const float* mean = mean_t.data_ptr<float>();
    const float* log_std = log_std_t.data_ptr<float>();
    const int64_t d = action_size_;
    action_values_.resize(k * d);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (int64_t r = 0; r < k; ++r) {
      double entropy = 0;
      for (int64_t j = 0; j < d; ++j) {
        const int64_t i = r * d + j;
        const double a = deterministic
                             ? mean[i]
                             : mean[i] + std::exp(log_std[i]) * normal(rng_);
        if (record) rollout_.cont_actions.push_back(static_cast<float>(a));
        // The environment gets the action clipped into its bounds.
        action_values_[i] = std::clamp(
            static_cast<float>(a), action_space_.low[j], action_space_.high[j]);
        entropy += 0.5 + 0.5 * kLog2Pi + log_std[i];
      }
      entropies[r] = entropy;
    }
    for (int64_t r = 0; r < k; ++r) {
      actions_[r] = Action::Continuous(action_values_.data() + r * d, d);
    }
  }
  if (!record) return;
  rollout_.obs.insert(rollout_.obs.end(), obs.data, obs.data + obs.size);
  rollout_.rewards.resize(rollout_.rewards.size() + k, 0.0f);
  rollout_.next.resize(rollout_.next.size() + k, kContinue);
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

const std::vector<Action>& A3C::BatchActAndTrain(FloatView obs,
                                                 int64_t batch_size) {
  if (rollout_.steps == 0) {
    rollout_.batch = batch_size;
    if (recurrent_ != nullptr) {
      // Rows are [K, state size] row-major: a smaller batch keeps the
      // state of its rows (their episodes go on), a larger one adds zeros.
      train_state_.resize(static_cast<size_t>(batch_size * state_size_), 0.0f);
      rollout_.initial_state = train_state_;
    }
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
    rollout_.bootstrap_obs.insert(rollout_.bootstrap_obs.end(),
                                  next_obs.data + row * obs_size_,
                                  next_obs.data + (row + 1) * obs_size_);
    return rollout_.num_bootstrap++;
  };
  const int64_t base = (rollout_.steps - 1) * k;
  bool all_ended = true;
  for (int64_t r = 0; r < k; ++r) {
    const int64_t i = base + r;
    rollout_.rewards[i] = static_cast<float>(rewards[r]);
    if (terminal[r]) {
      rollout_.next[i] = kTerminal;
    } else if (episode_end[r]) {
      rollout_.next[i] = bootstrap(r);
    } else {
      all_ended = false;
    }
    if ((terminal[r] || episode_end[r]) && recurrent_ != nullptr) {
      std::fill_n(train_state_.begin() + r * state_size_, state_size_, 0.0f);
    }
  }
  if (rollout_.steps < options_.t_max && !all_ended && !end_rollout) return;
  for (int64_t r = 0; r < k; ++r) {
    if (rollout_.next[base + r] == kContinue)
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

void A3C::RecomputeRecurrent(ModelOutput* out,
                             torch::Tensor* bootstrap_values) {
  const int64_t k = rollout_.batch;
  const int64_t steps = rollout_.steps;
  const int64_t b = rollout_.num_bootstrap;
  const auto obs =
      torch::from_blob(rollout_.obs.data(), {steps * k, obs_size_});
  const torch::Tensor features = recurrent_->Encode(obs);
  torch::Tensor state =
      torch::from_blob(rollout_.initial_state.data(), {k, state_size_});
  std::vector<torch::Tensor> hidden;
  hidden.reserve(steps);
  // Bootstrap observation j is evaluated from the state of its row after
  // the step that led to it.
  std::vector<torch::Tensor> bootstrap_states(b);
  std::vector<float> keep(k);
  for (int64_t s = 0; s < steps; ++s) {
    const RecurrentStep step =
        recurrent_->Step(features.slice(0, s * k, (s + 1) * k), state);
    hidden.push_back(step.hidden);
    state = step.state;
    bool any_ended = false;
    for (int64_t r = 0; r < k; ++r) {
      const int64_t next = rollout_.next[s * k + r];
      if (next >= 0) bootstrap_states[next] = state[r].detach();
      keep[r] = next == kContinue ? 1.0f : 0.0f;
      any_ended |= next != kContinue;
    }
    if (any_ended && s + 1 < steps) {
      state = state * torch::tensor(keep).view({k, 1});
    }
  }
  *out = recurrent_->Heads(torch::cat(hidden));
  if (b == 0) {
    *bootstrap_values = torch::zeros({0});
    return;
  }
  torch::NoGradGuard no_grad;
  const auto boot_obs =
      torch::from_blob(rollout_.bootstrap_obs.data(), {b, obs_size_});
  const RecurrentStep boot = recurrent_->Step(recurrent_->Encode(boot_obs),
                                              torch::stack(bootstrap_states));
  *bootstrap_values = recurrent_->Heads(boot.hidden).value;
}

A3C::Losses A3C::ComputeLosses() {
  const int64_t k = rollout_.batch;
  const int64_t n = rollout_.steps * k;
  const int64_t b = rollout_.num_bootstrap;
  ASYNCRL_CHECK_GT(n, 0);
  ModelOutput out;
  torch::Tensor boot;
  if (recurrent_ != nullptr) {
    RecomputeRecurrent(&out, &boot);
  } else {
    const auto obs = torch::from_blob(rollout_.obs.data(), {n, obs_size_});
    torch::Tensor input = obs;
    if (b > 0) {
      input = torch::cat({obs, torch::from_blob(rollout_.bootstrap_obs.data(),
                                                {b, obs_size_})});
    }
    out = model_->Forward(input);
    boot = out.value.slice(0, n, n + b).detach();
  }
  boot = boot.contiguous();
  const torch::Tensor v = out.value.slice(0, 0, n);
  const float* boot_v = boot.data_ptr<float>();

  A3CUpdateInfo& info = last_update_;
  info.returns.resize(n);
  std::vector<double> running(k, 0.0);
  for (int64_t s = rollout_.steps - 1; s >= 0; --s) {
    for (int64_t r = 0; r < k; ++r) {
      const int64_t i = s * k + r;
      const int64_t next = rollout_.next[i];
      if (next == kTerminal) {
        running[r] = 0.0;
      } else if (next >= 0) {
        running[r] = boot_v[next];
      }
      running[r] = rollout_.rewards[i] + options_.gamma * running[r];
      info.returns[i] = static_cast<float>(running[r]);
    }
  }
  const auto returns = torch::from_blob(info.returns.data(), {n});
  const auto advantages = (returns - v.detach()).contiguous();
  info.advantages.assign(advantages.data_ptr<float>(),
                         advantages.data_ptr<float>() + n);

  torch::Tensor log_prob;
  torch::Tensor entropy;
  if (model_->Kind() == PolicyKind::kCategorical) {
    const auto log_p = torch::log_softmax(out.logits.slice(0, 0, n), -1);
    const auto actions =
        torch::from_blob(rollout_.actions.data(), {n, 1}, torch::kInt64);
    log_prob = log_p.gather(1, actions).squeeze(1);
    entropy = -(log_p.exp() * log_p).sum(-1);
  } else {
    const auto mean = out.mean.slice(0, 0, n);
    const auto log_std = out.log_std.slice(0, 0, n);
    const auto a =
        torch::from_blob(rollout_.cont_actions.data(), {n, action_size_});
    const auto z = (a - mean) * torch::exp(-log_std);
    log_prob = (-0.5 * z * z - log_std - 0.5 * kLog2Pi).sum(-1);
    entropy = (0.5 + 0.5 * kLog2Pi + log_std).sum(-1);
  }
  Losses losses;
  losses.pi_loss =
      -(log_prob * advantages).sum() - options_.beta * entropy.sum();
  losses.v_loss = (v - returns).pow(2).sum() / 2;
  return losses;
}

torch::Tensor A3C::TotalLoss(const Losses& losses) const {
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
  return (losses.pi_loss * pi_scale + losses.v_loss * v_scale) / k;
}

void A3C::Update() {
  ScopedTimer timer("update");
  torch::Tensor loss;
  {
    ScopedTimer forward("forward");
    const Losses losses = ComputeLosses();
    last_update_.pi_loss = losses.pi_loss.item<double>();
    last_update_.v_loss = losses.v_loss.item<double>();
    loss = TotalLoss(losses);
  }
  {
    ScopedTimer backward("backward");
    local_->ZeroGrads();
    loss.backward();
  }
  const int64_t n = local_->size();
  const float* grads = local_->grads_data();
  float scale = 1.0f;
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
    RmspropStepAndCopy(options_.optimizer, scale, grads, shared_params_,
                       shared_ms_, local_->params_data(), n);
  }
  rollout_.Clear();
  ++num_updates_;
}

std::vector<Statistic> A3C::Statistics() const {
  return {{"average_value", average_value_},
          {"average_entropy", average_entropy_}};
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
}

}  // namespace asyncrl
