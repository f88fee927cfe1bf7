// Environment wrappers: a time limit that truncates episodes and a reward
// scale (the reference trains gym tasks with rewards scaled by 0.01).
#ifndef ASYNCRL_ENVS_WRAPPERS_H_
#define ASYNCRL_ENVS_WRAPPERS_H_

#include <memory>

#include "asyncrl/envs/env.h"

namespace asyncrl {

// Forwards everything to an owned inner environment, its parameters too.
class Wrapper : public Env {
 public:
  explicit Wrapper(std::unique_ptr<Env> inner);
  std::string Name() const override { return inner_->Name(); }
  const Space& ObservationSpace() const override {
    return inner_->ObservationSpace();
  }
  const Space& ActionSpace() const override { return inner_->ActionSpace(); }
  // The environment this one wraps.
  Env& inner() { return *inner_; }

 protected:
  FloatView DoReset(std::optional<uint64_t> seed) override {
    return inner_->Reset(seed);
  }
  StepResult DoStep(const Action& action) override {
    return inner_->Step(action);
  }

 private:
  std::unique_ptr<Env> inner_;
};

// Ends an episode with truncated=true after `max_steps` steps (unless the
// inner environment terminated on that step).
class TimeLimit : public Wrapper {
 public:
  TimeLimit(std::unique_ptr<Env> inner, int64_t max_steps);

 protected:
  FloatView DoReset(std::optional<uint64_t> seed) override;
  StepResult DoStep(const Action& action) override;

 private:
  int64_t max_steps_;
  int64_t elapsed_ = 0;
};

// Multiplies every reward by `scale`.
class RewardScale : public Wrapper {
 public:
  RewardScale(std::unique_ptr<Env> inner, double scale);

 protected:
  StepResult DoStep(const Action& action) override;

 private:
  double scale_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_WRAPPERS_H_
