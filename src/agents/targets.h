// Learning targets computed from a rollout (agents/rollout.h): pure
// functions of its rewards, its `next` links and the values of its
// bootstrap observations. Another target (GAE, V-trace) is another function
// here; agents pick one.
#ifndef ASYNCRL_AGENTS_TARGETS_H_
#define ASYNCRL_AGENTS_TARGETS_H_

#include <vector>

#include "asyncrl/agents/rollout.h"
#include "asyncrl/misc/space.h"

namespace asyncrl {

// The n-step return of every row, step-major (row = step * K + k):
//   R_i = r_i + gamma * R_next,
// where R_next is the return of the same environment's next row
// (kContinue), 0 after a terminal row (kTerminal), or the value of the
// bootstrap observation the row links to (an index j: bootstrap_values[j]).
// Accumulated in double, returned as float. `bootstrap_values` holds
// rollout.num_bootstrap values; `gamma` is in [0, 1].
std::vector<float> NStepReturns(const Rollout& rollout,
                                FloatView bootstrap_values, double gamma);

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_TARGETS_H_
