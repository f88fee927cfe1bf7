#include "asyncrl/experiments/hooks.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace asyncrl {
namespace {

// A hook setting `set(control, value)` to `start` + (`end` - `start`) times
// the share of `steps` taken, on agents that are a `Control`; `what` (a
// string literal) names the value in the errors.
template <typename Control, typename Set>
StepHook LinearDecay(const char* what, double start, double end, int64_t steps,
                     Set set) {
  if (steps <= 0) {
    throw std::invalid_argument(std::string(what) + " decay: steps=" +
                                std::to_string(steps) + " must be positive");
  }
  return [what, start, end, steps, set](Env&, Agent& agent, int64_t t) {
    auto* control = dynamic_cast<Control*>(&agent);
    if (control == nullptr) {
      throw std::invalid_argument(std::string(what) + " decay: agent type '" +
                                  agent.Type() + "' has no " + what +
                                  " to schedule");
    }
    const double frac =
        std::min(1.0, static_cast<double>(t) / static_cast<double>(steps));
    set(*control, start + (end - start) * frac);
  };
}

}  // namespace

StepHook LinearLearningRateDecay(double start, double end, int64_t steps) {
  return LinearDecay<LearningRateControl>(
      "learning rate", start, end, steps,
      [](LearningRateControl& c, double v) { c.SetLearningRate(v); });
}

StepHook LinearEntropyWeightDecay(double start, double end, int64_t steps) {
  return LinearDecay<EntropyWeightControl>(
      "entropy weight", start, end, steps,
      [](EntropyWeightControl& c, double v) { c.SetEntropyWeight(v); });
}

}  // namespace asyncrl
