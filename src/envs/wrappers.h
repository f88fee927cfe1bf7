// Environment wrappers: a time limit that truncates episodes, a reward
// scale (the reference trains gym tasks with rewards scaled by 0.01) and an
// observation scale (bounds to [-1, 1]).
#ifndef ASYNCRL_ENVS_WRAPPERS_H_
#define ASYNCRL_ENVS_WRAPPERS_H_

#include <memory>
#include <vector>

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
  bool Render(Picture& picture) const override {
    return inner_->Render(picture);
  }
  EnvBatch* Batch(int64_t* copy) override { return inner_->Batch(copy); }
  int64_t BatchCopies() const override { return inner_->BatchCopies(); }
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

// Maps every observation element linearly from its Box bounds [low, high]
// to [-1, 1] (train_a3c --scale-observations), so an element of a small
// range (MountainCar's velocity, +-0.07) reaches the network on the same
// scale as the others. A legal-action mask at the end of the observation
// (Space::action_mask) is passed through unchanged; an element with
// low == high becomes 0; values outside the bounds are mapped by the same
// line, not clipped. Throws std::invalid_argument naming the environment and
// the element if the space is not a Box or a bound is not finite (float's
// largest value counts as unbounded, as in gym's spaces).
class ScaleObservations : public Wrapper {
 public:
  explicit ScaleObservations(std::unique_ptr<Env> inner);
  const Space& ObservationSpace() const override { return space_; }
  // Element i becomes raw * factor()[i] + offset()[i].
  const std::vector<double>& factor() const { return factor_; }
  const std::vector<double>& offset() const { return offset_; }

 protected:
  FloatView DoReset(std::optional<uint64_t> seed) override;
  StepResult DoStep(const Action& action) override;

 private:
  FloatView Scale(FloatView raw);

  Space space_;
  // Element i becomes raw * factor_[i] + offset_[i] (computed in double).
  std::vector<double> factor_;
  std::vector<double> offset_;
  std::vector<float> scaled_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_WRAPPERS_H_
