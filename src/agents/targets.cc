#include "asyncrl/agents/targets.h"

#include "asyncrl/misc/check.h"

namespace asyncrl {

std::vector<float> NStepReturns(const Rollout& rollout,
                                FloatView bootstrap_values, double gamma) {
  const int64_t k = rollout.batch;
  const int64_t n = rollout.rows();
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(rollout.rewards.size()), n);
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(rollout.next.size()), n);
  ASYNCRL_CHECK_EQ(bootstrap_values.size, rollout.num_bootstrap);
  // A complete rollout links every row of its last step somewhere.
  for (int64_t i = n - k; i < n; ++i) {
    ASYNCRL_CHECK_NE(rollout.next[i], Rollout::kContinue);
  }
  std::vector<float> returns(n);
  // One running return per environment, walking the steps backwards.
  std::vector<double> running(k, 0.0);
  for (int64_t s = rollout.steps - 1; s >= 0; --s) {
    for (int64_t r = 0; r < k; ++r) {
      const int64_t i = s * k + r;
      const int64_t next = rollout.next[i];
      if (next == Rollout::kTerminal) {
        running[r] = 0.0;
      } else if (next >= 0) {
        running[r] = bootstrap_values[next];
      }
      running[r] = rollout.rewards[i] + gamma * running[r];
      returns[i] = static_cast<float>(running[r]);
    }
  }
  return returns;
}

}  // namespace asyncrl
