#include "asyncrl/envs/env.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace asyncrl {

FloatView Env::Reset(std::optional<uint64_t> seed) {
  for (const auto& [index, value] : pending_) *targets_[index] = value;
  pending_.clear();
  FloatView obs = DoReset(seed);
  needs_reset_ = false;
  RecordFrame();
  return obs;
}

StepResult Env::Step(const Action& action) {
  if (needs_reset_) {
    throw std::logic_error(Name() +
                           ": Step called before Reset or after the episode "
                           "ended; call Reset first");
  }
  ValidateAction(action);
  StepResult result = DoStep(action);
  needs_reset_ = result.Done();
  RecordFrame();
  return result;
}

void Env::DeclareParameter(const std::string& name, double min, double max,
                           const std::string& help, double* target,
                           bool integer) {
  if (target == nullptr || !(min <= *target && *target <= max)) {
    throw std::logic_error(Name() + ": parameter '" + name +
                           "' is declared without a default in its range");
  }
  for (const EnvParameter& p : parameters_) {
    if (p.name == name) {
      throw std::logic_error(Name() + ": parameter '" + name +
                             "' is declared twice");
    }
  }
  parameters_.push_back({name, *target, min, max, integer, help});
  targets_.push_back(target);
}

void Env::ShareParameters(Env& inner) {
  parameters_ = inner.parameters_;
  targets_ = inner.targets_;
  pending_owner_ = inner.pending_owner_;
}

const EnvParameter& Env::Find(const std::string& name) const {
  for (const EnvParameter& p : parameters_) {
    if (p.name == name) return p;
  }
  std::string names;
  for (const EnvParameter& p : parameters_) {
    names += (names.empty() ? "" : ", ") + p.name;
  }
  throw std::invalid_argument(
      Name() + ": unknown parameter '" + name +
      "'; declared: " + (names.empty() ? std::string("none") : names));
}

void Env::SetParameter(const std::string& name, double value) {
  const EnvParameter& p = Find(name);
  const bool whole = std::nearbyint(value) == value;
  if (!(value >= p.min && value <= p.max) || (p.integer && !whole)) {
    std::ostringstream os;
    os << Name() << ": parameter " << name << "=" << value
       << " is out of range; accepted: " << (p.integer ? "integers " : "")
       << "[" << p.min << ", " << p.max << "]";
    throw std::invalid_argument(os.str());
  }
  pending_owner_->pending_[static_cast<size_t>(&p - parameters_.data())] =
      value;
}

double Env::Parameter(const std::string& name) const {
  const EnvParameter& p = Find(name);
  return *targets_[static_cast<size_t>(&p - parameters_.data())];
}

void Env::ValidateAction(const Action& action) const {
  const Space& space = ActionSpace();
  if (space.IsDiscrete()) {
    if (action.index < 0 || action.index >= space.n) {
      throw std::invalid_argument(
          Name() + ": action " + std::to_string(action.index) +
          " is out of range; accepted: integers in [0, " +
          std::to_string(space.n - 1) + "]");
    }
    return;
  }
  if (action.values.size != space.FlatSize()) {
    throw std::invalid_argument(
        Name() + ": action has " + std::to_string(action.values.size) +
        " values; accepted: " + std::to_string(space.FlatSize()) + " (" +
        space.ToString() + ")");
  }
  for (int64_t i = 0; i < action.values.size; ++i) {
    const float v = action.values[i];
    if (!(v >= space.low[i] && v <= space.high[i])) {  // Also rejects NaN.
      std::ostringstream os;
      os << Name() << ": action[" << i << "]=" << v
         << " is out of range; accepted: [" << space.low[i] << ", "
         << space.high[i] << "]";
      throw std::invalid_argument(os.str());
    }
  }
}

}  // namespace asyncrl
