#include "asyncrl/experiments/hooks.h"

#include <algorithm>
#include <stdexcept>

namespace asyncrl {

StepHook LinearLearningRateDecay(double start, double end, int64_t steps) {
  if (steps <= 0) {
    throw std::invalid_argument("LinearLearningRateDecay: steps=" +
                                std::to_string(steps) + " must be positive");
  }
  return [start, end, steps](Env&, Agent& agent, int64_t t) {
    auto* control = dynamic_cast<LearningRateControl*>(&agent);
    if (control == nullptr) {
      throw std::invalid_argument("learning-rate decay: agent type '" +
                                  agent.Type() +
                                  "' has no learning rate to schedule");
    }
    const double frac =
        std::min(1.0, static_cast<double>(t) / static_cast<double>(steps));
    control->SetLearningRate(start + (end - start) * frac);
  };
}

}  // namespace asyncrl
