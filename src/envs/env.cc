#include "asyncrl/envs/env.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace asyncrl {

FloatView Env::Reset(std::optional<uint64_t> seed) {
  FloatView obs = DoReset(seed);
  needs_reset_ = false;
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
  return result;
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
