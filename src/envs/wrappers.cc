#include "asyncrl/envs/wrappers.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

namespace asyncrl {

namespace {

std::string FormatBound(double bound) {
  std::ostringstream out;
  out << bound;
  return out.str();
}

}  // namespace

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

ScaleObservations::ScaleObservations(std::unique_ptr<Env> inner)
    : Wrapper(std::move(inner)) {
  const Space& raw = Wrapper::ObservationSpace();
  if (raw.IsDiscrete()) {
    throw std::invalid_argument("ScaleObservations: " + Name() +
                                "'s observation space is " + raw.ToString() +
                                ", not a Box with finite bounds");
  }
  const int64_t size = raw.FlatSize();
  const int64_t scaled = size - raw.action_mask;
  space_ = raw;
  factor_.assign(size, 1.0);
  offset_.assign(size, 0.0);
  // float's largest value stands for "unbounded" (as gym's spaces say).
  constexpr double kUnbounded = std::numeric_limits<float>::max();
  for (int64_t i = 0; i < scaled; ++i) {
    const double low = raw.low[i];
    const double high = raw.high[i];
    if (!(std::abs(low) < kUnbounded) || !(std::abs(high) < kUnbounded)) {
      throw std::invalid_argument(
          "ScaleObservations: " + Name() + "'s observation element " +
          std::to_string(i) + " has the bounds [" + FormatBound(low) + ", " +
          FormatBound(high) + "], not finite ones");
    }
    if (high > low) {
      factor_[i] = 2.0 / (high - low);
      offset_[i] = -1.0 - low * factor_[i];
    } else {
      factor_[i] = 0.0;
      offset_[i] = 0.0;
    }
    space_.low[i] = -1.0f;
    space_.high[i] = 1.0f;
  }
  scaled_.resize(size);
}

FloatView ScaleObservations::Scale(FloatView raw) {
  if (raw.size != static_cast<int64_t>(scaled_.size())) {
    throw std::logic_error(Name() + ": an observation of " +
                           std::to_string(raw.size) + " floats, the space " +
                           "says " + std::to_string(scaled_.size()));
  }
  for (int64_t i = 0; i < raw.size; ++i) {
    scaled_[i] = static_cast<float>(raw[i] * factor_[i] + offset_[i]);
  }
  return FloatView{scaled_.data(), raw.size};
}

FloatView ScaleObservations::DoReset(std::optional<uint64_t> seed) {
  return Scale(Wrapper::DoReset(seed));
}

StepResult ScaleObservations::DoStep(const Action& action) {
  StepResult result = Wrapper::DoStep(action);
  result.observation = Scale(result.observation);
  return result;
}

}  // namespace asyncrl
