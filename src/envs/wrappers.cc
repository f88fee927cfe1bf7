#include "asyncrl/envs/wrappers.h"

#include <cmath>
#include <stdexcept>

namespace asyncrl {

Wrapper::Wrapper(std::unique_ptr<Env> inner) : inner_(std::move(inner)) {
  if (!inner_)
    throw std::invalid_argument("Wrapper: inner environment is null");
  ShareParameters(*inner_);
}

TimeLimit::TimeLimit(std::unique_ptr<Env> inner, int64_t max_steps)
    : Wrapper(std::move(inner)), max_steps_(max_steps) {
  if (max_steps <= 0) {
    throw std::invalid_argument(
        "TimeLimit: max_steps=" + std::to_string(max_steps) +
        " must be a positive integer");
  }
}

FloatView TimeLimit::DoReset(std::optional<uint64_t> seed) {
  elapsed_ = 0;
  return Wrapper::DoReset(seed);
}

StepResult TimeLimit::DoStep(const Action& action) {
  StepResult result = Wrapper::DoStep(action);
  ++elapsed_;
  if (elapsed_ >= max_steps_ && !result.terminated) result.truncated = true;
  return result;
}

RewardScale::RewardScale(std::unique_ptr<Env> inner, double scale)
    : Wrapper(std::move(inner)), scale_(scale) {
  if (!std::isfinite(scale)) {
    throw std::invalid_argument("RewardScale: scale=" + std::to_string(scale) +
                                " must be a finite number");
  }
}

StepResult RewardScale::DoStep(const Action& action) {
  StepResult result = Wrapper::DoStep(action);
  result.reward *= scale_;
  return result;
}

}  // namespace asyncrl
