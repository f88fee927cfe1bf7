// A3C throughput on the reference discrete network (policy and value MLPs
// 200-200) and CartPole-v1 with t_max 5:
//  - BM_AgentEnvLoop/K/T/F/L: a bare loop of one agent and K environments
//    in one process (no trainer), environment steps per second, with the
//    hierarchical timers on (T=1) or off (T=0) to measure their cost, and
//    the fast path (agents/dense_path.h) on (F=1) or off (F=0, LibTorch);
//    L=1: fc-softmax-lstm instead of fc-softmax;
//  - BM_Trainer/P/E/F: the whole trainer (train_agent_async) with P worker
//    processes of E environments each, global steps per second, evaluation
//    off.
#include <benchmark/benchmark.h>

#include "agent_loop_bench.h"
#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/misc/timers.h"
#include "bench_main.h"
#include "trainer_bench.h"

namespace asyncrl {
namespace {

std::unique_ptr<A3C> MakeAgent(int idx, bool fast,
                               const std::string& arch = "fc-softmax") {
  torch::manual_seed(0);
  auto probe = MakeEnv("CartPole-v1");
  A3COptions options;
  options.t_max = 5;
  options.seed = static_cast<uint64_t>(idx);
  options.no_fast_path = !fast;
  return std::make_unique<A3C>(
      DefaultModelRegistry().Make(arch, probe->ObservationSpace(),
                                  probe->ActionSpace()),
      probe->ObservationSpace(), probe->ActionSpace(), options);
}

void BM_AgentEnvLoop(benchmark::State& state) {
  ConfigureTorchForFork();
  const int64_t k = state.range(0);
  TimerTree::Process().set_enabled(state.range(1) != 0);
  const char* arch = state.range(3) == 0 ? "fc-softmax" : "fc-softmax-lstm";
  state.SetLabel(arch);
  auto agent = MakeAgent(0, state.range(2) != 0, arch);
  RunAgentLoop(state, *agent, "CartPole-v1", k, /*reward_scale=*/0.01);
  TimerTree::Process().set_enabled(true);
  TimerTree::Process().Clear();
}
BENCHMARK(BM_AgentEnvLoop)
    ->ArgNames({"envs", "timers", "fast", "lstm"})
    ->ArgsProduct({{1, 4, 16, 64}, {1, 0}, {1, 0}, {0}})
    ->ArgsProduct({{1, 16}, {0}, {1, 0}, {1}})
    ->UseRealTime();

void BM_Trainer(benchmark::State& state) {
  ConfigureTorchForFork();
  const int processes = static_cast<int>(state.range(0));
  const int envs = static_cast<int>(state.range(1));
  const bool fast = state.range(2) != 0;
  RunTrainerBenchmark(
      state, processes, 40000 * processes * (envs > 1 ? 4 : 1), envs,
      [](int, bool) {
        EnvOptions o;
        o.reward_scale = 0.01;
        return MakeEnv("CartPole-v1", o);
      },
      [fast](int idx) -> std::unique_ptr<Agent> {
        return MakeAgent(idx, fast);
      });
}
BENCHMARK(BM_Trainer)
    ->ArgNames({"processes", "envs", "fast"})
    ->ArgsProduct({{1, 2}, {1, 16}, {1, 0}})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace asyncrl

ASYNCRL_BENCHMARK_MAIN();
