// A3C throughput on MinAtar Breakout with the convolutional networks, t_max
// 5, default options:
//  - BM_BreakoutAgentLoop/arch: one agent and one environment in one process
//    (no trainer), environment steps per second;
//  - BM_BreakoutTrainer/arch/P: the whole trainer (train_agent_async) with P
//    worker processes, global steps per second, evaluation off.
// arch 0 = minatar-conv (feed-forward), 1 = minatar-conv-lstm.
#include <benchmark/benchmark.h>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/envs/registry.h"
#include "bench_main.h"
#include "trainer_bench.h"

namespace asyncrl {
namespace {

const char* kEnv = "MinAtar/Breakout";

std::string Arch(int64_t index) {
  return index == 0 ? "minatar-conv" : "minatar-conv-lstm";
}

std::unique_ptr<A3C> MakeAgent(const std::string& arch, int idx) {
  torch::manual_seed(0);
  auto probe = MakeEnv(kEnv);
  A3COptions options;
  options.seed = static_cast<uint64_t>(idx);
  return std::make_unique<A3C>(
      DefaultModelRegistry().Make(arch, probe->ObservationSpace(),
                                  probe->ActionSpace()),
      probe->ObservationSpace(), probe->ActionSpace(), options);
}

void BM_BreakoutAgentLoop(benchmark::State& state) {
  ConfigureTorchForFork();
  const std::string arch = Arch(state.range(0));
  state.SetLabel(arch);
  auto agent = MakeAgent(arch, 0);
  auto env = MakeEnv(kEnv);
  FloatView obs = env->Reset(0);
  double reward = 0;
  for (auto _ : state) {
    const StepResult r = env->Step(agent->ActAndTrain(obs, reward));
    reward = r.reward;
    obs = r.observation;
    if (r.Done()) {
      agent->StopEpisodeAndTrain(obs, reward, r.terminated);
      obs = env->Reset();
      reward = 0;
    }
  }
  state.counters["steps_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BreakoutAgentLoop)->ArgName("arch")->Arg(0)->Arg(1)->UseRealTime();

void BM_BreakoutTrainer(benchmark::State& state) {
  ConfigureTorchForFork();
  const std::string arch = Arch(state.range(0));
  state.SetLabel(arch);
  const int processes = static_cast<int>(state.range(1));
  RunTrainerBenchmark(
      state, processes, 20000 * processes, /*envs_per_process=*/1,
      [](int, bool) { return MakeEnv(kEnv); },
      [&arch](int idx) -> std::unique_ptr<Agent> {
        return MakeAgent(arch, idx);
      });
}
BENCHMARK(BM_BreakoutTrainer)
    ->ArgNames({"arch", "processes"})
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace asyncrl

ASYNCRL_BENCHMARK_MAIN();
