// The environment interface every asyncrl environment implements, in the
// spirit of gym: spaces, Reset(seed) and Step(action) returning a named
// result. Observations are contiguous float buffers owned by the environment
// so an agent can copy them straight into a batch.
#ifndef ASYNCRL_ENVS_ENV_H_
#define ASYNCRL_ENVS_ENV_H_

#include <cstdint>
#include <optional>
#include <string>

#include "asyncrl/misc/space.h"

namespace asyncrl {

// What one Step returns. The observation view is valid until the next
// Reset/Step of the environment that returned it. `terminated`: the task
// reached a terminal state (no bootstrapping past it); `truncated`: the episode
// was cut (time limit).
struct StepResult {
  FloatView observation;
  double reward = 0.0;
  bool terminated = false;
  bool truncated = false;
  bool Done() const { return terminated || truncated; }
};

// Abstract environment. Not thread-safe: each worker owns its environments.
// Step validates the action against ActionSpace() and throws
// std::invalid_argument naming the environment, the action and what is
// accepted; stepping a finished episode without Reset throws std::logic_error.
class Env {
 public:
  virtual ~Env() = default;
  Env() = default;
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  virtual std::string Name() const = 0;
  virtual const Space& ObservationSpace() const = 0;
  virtual const Space& ActionSpace() const = 0;

  // Starts an episode. With a seed, reseeds the environment's generator
  // first (same seed, same episode); without, continues its stream.
  FloatView Reset(std::optional<uint64_t> seed = std::nullopt);
  StepResult Step(const Action& action);

 protected:
  virtual FloatView DoReset(std::optional<uint64_t> seed) = 0;
  virtual StepResult DoStep(const Action& action) = 0;

 private:
  void ValidateAction(const Action& action) const;
  bool needs_reset_ = true;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_ENV_H_
