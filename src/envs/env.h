// The environment interface every asyncrl environment implements, in the
// spirit of gym: spaces, Reset(seed) and Step(action) returning a named
// result. Observations are contiguous float buffers owned by the environment
// so an agent can copy them straight into a batch.
#ifndef ASYNCRL_ENVS_ENV_H_
#define ASYNCRL_ENVS_ENV_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  // Two-player games whose both sides the agent plays (SelfPlayEnv with
  // both sides trained): `observation` is the turn of the learner's
  // opponent, and the agent's next action is that opponent's move. The
  // reward stays the learner's (the trainer negates it for the rows the
  // agent played as the opponent). False for every other environment.
  bool opponent_turn = false;
  bool Done() const { return terminated || truncated; }
};

// A named parameter of an environment's task (a length, a mass, a force) that
// a run may set: --env-param, a curriculum or a sampler
// (experiments/curriculum/curriculum.h).
struct EnvParameter {
  std::string name;
  double default_value = 0;
  double min = 0;  // The valid range, inclusive.
  double max = 0;
  bool integer = false;  // Only whole numbers (e.g. 0/1 switches).
  std::string help;
};

class Env;
class Picture;

// Copies of one environment that are stepped together: a user's vector
// environment taken whole (Gymnasium's VectorEnv, python:MODULE:FACTORY).
// The training loop gives every copy's action to StepAll, then calls each
// copy's Step, which returns that copy's part; ResetAll starts every copy
// with its seed, and each copy's Reset then returns its first observation.
// An ended copy is reset by the batch itself in the same step (each copy's
// next Reset returns that observation); a copy cannot be reset alone while
// its episode runs.
class EnvBatch {
 public:
  virtual ~EnvBatch() = default;
  virtual int64_t Copies() const = 0;
  // seeds.size() == Copies().
  virtual void ResetAll(const std::vector<uint64_t>& seeds) = 0;
  // actions[c] for copy c < active (already validated); the copies from
  // `active` on (the run's last batch) repeat actions[0], their results
  // unused.
  virtual void StepAll(const std::vector<Action>& actions, int64_t active) = 0;
};

// Where an environment's frames go while it is recorded (--demo --record).
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  // After every Reset and Step of the recorded environment (and, in
  // two-player games, after each side's move): `env` is ready to Render.
  virtual void Frame(const Env& env) = 0;
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
  // Parameters set since the last Reset take effect first.
  FloatView Reset(std::optional<uint64_t> seed = std::nullopt);
  StepResult Step(const Action& action);
  // Step's check of an action against ActionSpace(), on its own (a batch
  // checks every action before stepping any environment).
  void ValidateAction(const Action& action) const;

  // The parameters this environment declares, in declaration order (empty
  // for most user environments).
  const std::vector<EnvParameter>& Parameters() const { return parameters_; }
  // Sets parameter `name` for the episodes from the next Reset on (never
  // mid-episode). Throws std::invalid_argument naming the environment, the
  // parameter, the value and the range (or the declared names, for an
  // unknown name).
  void SetParameter(const std::string& name, double value);
  // The value the current episode runs with (a set value counts from the
  // next Reset).
  double Parameter(const std::string& name) const;

  // The batch this environment is a copy of (its index in *copy), or
  // nullptr: an environment stepped on its own (every built-in one).
  virtual EnvBatch* Batch(int64_t* copy) {
    static_cast<void>(copy);
    return nullptr;
  }
  // How many copies the batch this environment belongs to has, known
  // before any is built (0: not a copy of a batch).
  virtual int64_t BatchCopies() const { return 0; }

  // Draws the current state into `picture` (size, colours and frame rate
  // are the environment's; gym's render()) and returns true; false when the
  // environment has no picture (the default).
  virtual bool Render(Picture& picture) const {
    static_cast<void>(picture);
    return false;
  }
  // From now on a frame goes to `sink` after every Reset and Step (nullptr:
  // no more); `sink` must outlive the recording.
  void RecordTo(FrameSink* sink) { sink_ = sink; }

 protected:
  // A frame now, when recorded (two-player games: between the sides'
  // moves).
  void RecordFrame() const {
    if (sink_ != nullptr) sink_->Frame(*this);
  }

  virtual FloatView DoReset(std::optional<uint64_t> seed) = 0;
  virtual StepResult DoStep(const Action& action) = 0;

  // Declares a parameter whose value lives in `*target` (the environment's
  // own member, read by its dynamics; its value now is the default). Call
  // from the constructor; `target` must live as long as the environment.
  void DeclareParameter(const std::string& name, double min, double max,
                        const std::string& help, double* target,
                        bool integer = false);
  // Wrappers: the inner environment's parameters become this one's (the
  // targets stay the inner environment's members).
  void ShareParameters(Env& inner);

 private:
  const EnvParameter& Find(const std::string& name) const;
  bool needs_reset_ = true;
  std::vector<EnvParameter> parameters_;
  std::vector<double*> targets_;      // Parallel to parameters_.
  std::map<size_t, double> pending_;  // Index -> value, applied at Reset.
  // Where set values wait for a Reset: the innermost environment's map, so
  // a value set through any wrapper layer is applied in the order set.
  Env* pending_owner_ = this;
  FrameSink* sink_ = nullptr;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_ENV_H_
