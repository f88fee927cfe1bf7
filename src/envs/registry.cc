#include "asyncrl/envs/registry.h"

#include <cmath>
#include <stdexcept>

#include "asyncrl/envs/acrobot.h"
#include "asyncrl/envs/box2d/box2d_envs.h"
#include "asyncrl/envs/cartpole.h"
#include "asyncrl/envs/games/self_play_env.h"
#include "asyncrl/envs/minatar/minatar.h"
#include "asyncrl/envs/mountain_car.h"
#include "asyncrl/envs/mujoco/locomotion.h"
#include "asyncrl/envs/pendulum.h"
#include "asyncrl/envs/wrappers.h"
#include "asyncrl/misc/strings.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {

void EnvOptions::Validate() const {
  Require(max_episode_steps >= 0, "max_episode_steps", max_episode_steps,
          "0 (the environment's default) or a positive integer");
  Require(std::isfinite(reward_scale), "reward_scale", reward_scale,
          "a finite number");
}

void EnvRegistry::Register(const std::string& name, Factory factory,
                           int64_t max_episode_steps,
                           TrainingDefaults defaults) {
  if (!entries_
           .emplace(name,
                    Entry{std::move(factory), max_episode_steps, defaults})
           .second) {
    throw std::logic_error("environment '" + name + "' is already registered");
  }
}

void EnvRegistry::RegisterPrefix(const std::string& prefix,
                                 const std::string& pattern,
                                 NamedFactory factory) {
  if (FindPrefix(prefix) != nullptr) {
    throw std::logic_error("environment prefix '" + prefix +
                           "' is already registered");
  }
  prefixes_.push_back(PrefixEntry{prefix, pattern, std::move(factory)});
}

const EnvRegistry::PrefixEntry* EnvRegistry::FindPrefix(
    const std::string& name) const {
  for (const PrefixEntry& entry : prefixes_) {
    if (name.compare(0, entry.prefix.size(), entry.prefix) == 0) {
      return &entry;
    }
  }
  return nullptr;
}

bool EnvRegistry::Contains(const std::string& name) const {
  return entries_.count(name) > 0 || MatchesPrefix(name);
}

bool EnvRegistry::MatchesPrefix(const std::string& name) const {
  return entries_.count(name) == 0 && FindPrefix(name) != nullptr;
}

std::string EnvRegistry::Accepted() const {
  std::vector<std::string> names = Names();
  for (const PrefixEntry& entry : prefixes_) names.push_back(entry.pattern);
  return JoinNames(names);
}

TrainingDefaults EnvRegistry::Defaults(const std::string& name) const {
  const auto it = entries_.find(name);
  return it == entries_.end() ? TrainingDefaults{} : it->second.defaults;
}

std::vector<std::string> EnvRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

std::unique_ptr<Env> EnvRegistry::Make(const std::string& name,
                                       const EnvOptions& options) const {
  auto it = entries_.find(name);
  const PrefixEntry* prefix = it == entries_.end() ? FindPrefix(name) : nullptr;
  if (it == entries_.end() && prefix == nullptr) {
    throw std::invalid_argument("unknown environment '" + name +
                                "'; registered: " + Accepted());
  }
  options.Validate();
  std::unique_ptr<Env> env =
      prefix ? prefix->factory(name, options) : it->second.factory();
  const int64_t limit = options.max_episode_steps > 0
                            ? options.max_episode_steps
                        : prefix ? 0
                                 : it->second.max_episode_steps;
  if (limit > 0) env = std::make_unique<TimeLimit>(std::move(env), limit);
  if (options.reward_scale != 1.0) {
    env = std::make_unique<RewardScale>(std::move(env), options.reward_scale);
  }
  return env;
}

TrainingDefaults ClassicControlTrainingDefaults() {
  TrainingDefaults defaults;
  defaults.family =
      "classic control (rewards x 0.01, as the reference's gym example)";
  defaults.reward_scale = 0.01;
  return defaults;
}

void RegisterClassicControl(EnvRegistry& registry) {
  const TrainingDefaults d = ClassicControlTrainingDefaults();
  registry.Register(
      "CartPole-v0", [] { return std::make_unique<CartPole>(); }, 200, d);
  registry.Register(
      "CartPole-v1", [] { return std::make_unique<CartPole>(); }, 500, d);
  registry.Register(
      "Acrobot-v1", [] { return std::make_unique<Acrobot>(); }, 500, d);
  registry.Register(
      "MountainCar-v0", [] { return std::make_unique<MountainCar>(); }, 200, d);
  registry.Register(
      "Pendulum-v1", [] { return std::make_unique<Pendulum>(); }, 200, d);
}

TrainingDefaults TrainingDefaultsFor(const std::string& name, const Env& env) {
  if (DefaultEnvRegistry().Contains(name) &&
      !DefaultEnvRegistry().MatchesPrefix(name)) {
    return DefaultEnvRegistry().Defaults(name);
  }
  if (FindSelfPlayEnv(const_cast<Env&>(env)) != nullptr) {
    return GameTrainingDefaults();
  }
  if (env.ObservationSpace().shape.size() == 3) return ImageTrainingDefaults();
  return {};
}

EnvRegistry& DefaultEnvRegistry() {
  static EnvRegistry* registry = [] {
    auto* r = new EnvRegistry();
    RegisterClassicControl(*r);
    RegisterMinAtar(*r);
    RegisterGames(*r);
    RegisterMujoco(*r);
    RegisterBox2D(*r);
    return r;
  }();
  return *registry;
}

std::unique_ptr<Env> MakeEnv(const std::string& name,
                             const EnvOptions& options) {
  return DefaultEnvRegistry().Make(name, options);
}

}  // namespace asyncrl
