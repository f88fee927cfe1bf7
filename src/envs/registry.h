// A name-to-factory registry of environments. MakeEnv("CartPole-v1", opts)
// builds an environment with its registered time limit and the requested
// wrappers; an unknown name's error lists every registered name.
#ifndef ASYNCRL_ENVS_REGISTRY_H_
#define ASYNCRL_ENVS_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asyncrl/envs/env.h"

namespace asyncrl {

// Options applied on top of a registered environment.
struct EnvOptions {
  // Overrides the registered episode limit when > 0; 0 keeps it.
  int64_t max_episode_steps = 0;
  // Multiplies rewards (1 = unchanged). Finite.
  double reward_scale = 1.0;
  // Keyword arguments for a family that takes them (a JSON object's text,
  // e.g. {"size": 8}; "" for none): a Python environment's factory gets
  // them (--env-kwargs). Environments registered by name ignore it.
  std::string kwargs;

  // Throws std::invalid_argument naming the bad field and its value.
  void Validate() const;
};

// What an environment family asks of a training run where the command line
// says nothing (as EnvPool and Sample Factory let each family declare its
// own defaults beside it). Unset: the program's own default.
struct TrainingDefaults {
  // The family and why its defaults are what they are, for the run's first
  // lines ("classic control: ..."); empty for an environment of no family.
  std::string family;
  // What training rewards are multiplied by (--reward-scale-factor); unset:
  // 1, rewards as the environment gives them.
  std::optional<double> reward_scale;
  // The entropy bonus's weight (--beta).
  std::optional<double> entropy_weight;
};

// Not thread-safe while registering; lookups after registration are const.
class EnvRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Env>()>;
  // Builds the environment a whole name names (e.g.
  // "python:MODULE:FACTORY"), with the options' kwargs.
  using NamedFactory = std::function<std::unique_ptr<Env>(
      const std::string& name, const EnvOptions& options)>;

  // Registers `name` with a factory of the unwrapped environment, its
  // default episode limit (0 = none) and its family's training defaults.
  // Throws if the name is taken.
  void Register(const std::string& name, Factory factory,
                int64_t max_episode_steps, TrainingDefaults defaults = {});
  // Registers every name that starts with `prefix` (e.g. "python:"): the
  // factory gets the whole name; `pattern` is how the names are written
  // (e.g. "python:MODULE:FACTORY"), listed with the registered names in
  // messages. No episode limit of its own (--max-episode-len applies).
  void RegisterPrefix(const std::string& prefix, const std::string& pattern,
                      NamedFactory factory);
  // A registered name, or one a registered prefix takes.
  bool Contains(const std::string& name) const;
  // Whether a registered prefix takes `name`.
  bool MatchesPrefix(const std::string& name) const;
  // The registered names, then the prefixes' patterns: what messages list
  // as accepted.
  std::string Accepted() const;
  // The training defaults `name` was registered with ({} if unknown).
  TrainingDefaults Defaults(const std::string& name) const;
  std::vector<std::string> Names() const;
  // Throws std::invalid_argument listing every registered name if unknown.
  std::unique_ptr<Env> Make(const std::string& name,
                            const EnvOptions& options = {}) const;

 private:
  struct Entry {
    Factory factory;
    int64_t max_episode_steps;
    TrainingDefaults defaults;
  };
  std::map<std::string, Entry> entries_;
  struct PrefixEntry {
    std::string prefix;
    std::string pattern;
    NamedFactory factory;
  };
  std::vector<PrefixEntry> prefixes_;
  const PrefixEntry* FindPrefix(const std::string& name) const;
};

// Classic control's: rewards multiplied by 0.01, as the reference's gym
// example (ChainerRL's train_a3c_gym.py) does.
TrainingDefaults ClassicControlTrainingDefaults();

// Registers CartPole-v0/v1, Acrobot-v1, MountainCar-v0 and Pendulum-v1
// with ClassicControlTrainingDefaults().
void RegisterClassicControl(EnvRegistry& registry);

// The process-wide registry holding every built-in environment: the classic
// control tasks, the MinAtar games (envs/minatar/minatar.h), the two-player
// games, the MuJoCo tasks (envs/mujoco/locomotion.h) and the Box2D tasks
// (envs/box2d/box2d_envs.h).
EnvRegistry& DefaultEnvRegistry();

// The training defaults of environment `name`: those it was registered
// with in DefaultEnvRegistry(); for one the registry does not know (a
// program's own), those of the family it belongs to by its kind: a
// two-player game's (GameTrainingDefaults), or for image observations
// ([C, H, W]) MinAtar's (ImageTrainingDefaults); else none (rewards
// unscaled).
TrainingDefaults TrainingDefaultsFor(const std::string& name, const Env& env);

// Shorthand for DefaultEnvRegistry().Make(name, options).
std::unique_ptr<Env> MakeEnv(const std::string& name,
                             const EnvOptions& options = {});

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_REGISTRY_H_
