// Shared by the agent-loop benchmarks: one agent and `k` environments in
// one process (no trainer), the agent acting for all of them at once
// (BatchActAndTrain / BatchObserveAndTrain), environment steps per second.
#ifndef ASYNCRL_BENCH_AGENT_LOOP_BENCH_H_
#define ASYNCRL_BENCH_AGENT_LOOP_BENCH_H_

#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "asyncrl/agents/agent.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/misc/timers.h"

namespace asyncrl {

// Rewards are multiplied by `reward_scale` before the agent sees them.
inline void RunAgentLoop(benchmark::State& state, BatchAgent& agent,
                         const std::string& env_name, int64_t k,
                         double reward_scale = 1.0) {
  std::vector<std::unique_ptr<Env>> envs;
  const int64_t obs_size = MakeEnv(env_name)->ObservationSpace().FlatSize();
  std::vector<float> obs(k * obs_size), next(k * obs_size);
  std::vector<double> rewards(k);
  std::vector<uint8_t> terminal(k), ended(k);
  for (int64_t j = 0; j < k; ++j) {
    envs.push_back(MakeEnv(env_name));
    FloatView o = envs[j]->Reset(j);
    std::copy(o.data, o.data + obs_size, obs.begin() + j * obs_size);
  }
  for (auto _ : state) {
    const auto& actions = agent.BatchActAndTrain({obs.data(), k * obs_size}, k);
    for (int64_t j = 0; j < k; ++j) {
      ScopedTimer timer("env_step");
      const StepResult r = envs[j]->Step(actions[j]);
      std::copy(r.observation.data, r.observation.data + obs_size,
                next.begin() + j * obs_size);
      rewards[j] = r.reward * reward_scale;
      terminal[j] = r.terminated;
      ended[j] = r.Done();
    }
    agent.BatchObserveAndTrain({next.data(), k * obs_size}, rewards, terminal,
                               ended, /*end_rollout=*/false);
    for (int64_t j = 0; j < k; ++j) {
      FloatView o = ended[j] ? envs[j]->Reset()
                             : FloatView{next.data() + j * obs_size, obs_size};
      std::copy(o.data, o.data + obs_size, obs.begin() + j * obs_size);
    }
  }
  state.counters["steps_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * k), benchmark::Counter::kIsRate);
}

}  // namespace asyncrl

#endif  // ASYNCRL_BENCH_AGENT_LOOP_BENCH_H_
