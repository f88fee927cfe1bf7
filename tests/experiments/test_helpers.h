// Helpers shared by the experiment tests that build agents: a small A3C
// factory and a plain environment factory, over test_basics.h (failing
// environments are the library's FaultyEnv, envs/fault_injection.h).
#ifndef ASYNCRL_TESTS_EXPERIMENTS_TEST_HELPERS_H_
#define ASYNCRL_TESTS_EXPERIMENTS_TEST_HELPERS_H_

#include <string>
#include <vector>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/experiments/train_agent_async.h"
#include "test_basics.h"

namespace asyncrl::testing {

inline A3COptions SmallA3COptions() {
  A3COptions options;
  options.t_max = 5;
  return options;
}

// A3C with a small reference-shaped network on `env_name`'s spaces.
inline MakeAgentFn SmallA3C(const std::string& env_name,
                            std::vector<int64_t> hidden = {32, 32},
                            A3COptions options = SmallA3COptions()) {
  auto probe = MakeEnv(env_name);
  const Space obs = probe->ObservationSpace();
  const Space act = probe->ActionSpace();
  return [=](int idx) -> std::unique_ptr<Agent> {
    torch::manual_seed(0);
    A3COptions o = options;
    o.seed = static_cast<uint64_t>(idx);
    return std::make_unique<A3C>(
        FcSoftmaxActorCritic(obs.FlatSize(), act.n, hidden).ptr(), obs, act, o);
  };
}

inline MakeEnvFn PlainEnv(const std::string& name, double reward_scale = 1.0) {
  return [=](int, bool test) {
    EnvOptions options;
    options.reward_scale = test ? 1.0 : reward_scale;
    return MakeEnv(name, options);
  };
}

}  // namespace asyncrl::testing

#endif  // ASYNCRL_TESTS_EXPERIMENTS_TEST_HELPERS_H_
