// A3C throughput on MinAtar Breakout with the convolutional networks, t_max
// 5, default options:
//  - BM_BreakoutAgentLoop/arch: one agent and one environment in one process
//    (no trainer), environment steps per second;
//  - BM_BreakoutTrainer/arch/P: the whole trainer (train_agent_async) with P
//    worker processes, global steps per second, evaluation off.
//  - BM_BreakoutWorkerHeap/pinned: the whole trainer, one worker with 16
//    environments (minatar-conv, 40k steps): the worker's minor page faults
//    and system time per update (an update is 16 x 5 steps), from its
//    rusage. pinned 0: the worker keeps glibc's initial 128 KiB thresholds
//    (what a train_a3c --quiet worker inherited before the trainer pinned
//    them); 1: PinHeapThresholds, as every worker now does.
//  - BM_BreakoutBatchLoop/arch/envs/fast: one agent and `envs`
//    environments in one process (no trainer, timers off), environment steps
//    per second, with the fast path (agents/dense_path.h) on (fast 1) or
//    off (0, LibTorch).
// arch 0 = minatar-conv (feed-forward), 1 = minatar-conv-lstm.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>

#include "agent_loop_bench.h"
#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/misc/timers.h"
#include "bench_main.h"
#include "trainer_bench.h"

namespace asyncrl {
namespace {

const char* kEnv = "MinAtar/Breakout";

std::string Arch(int64_t index) {
  return index == 0 ? "minatar-conv" : "minatar-conv-lstm";
}

std::unique_ptr<A3C> MakeAgent(const std::string& arch, int idx,
                               bool fast = true) {
  torch::manual_seed(0);
  auto probe = MakeEnv(kEnv);
  A3COptions options;
  options.seed = static_cast<uint64_t>(idx);
  options.no_fast_path = !fast;
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

void BM_BreakoutBatchLoop(benchmark::State& state) {
  ConfigureTorchForFork();
  const std::string arch = Arch(state.range(0));
  const int64_t k = state.range(1);
  const bool fast = state.range(2) != 0;
  TimerTree::Process().set_enabled(false);
  auto agent = MakeAgent(arch, 0, fast);
  state.SetLabel(arch + (agent->fast_path() ? " fast path" : " LibTorch"));
  RunAgentLoop(state, *agent, kEnv, k);
  TimerTree::Process().set_enabled(true);
  TimerTree::Process().Clear();
}
BENCHMARK(BM_BreakoutBatchLoop)
    ->ArgNames({"arch", "envs", "fast"})
    ->ArgsProduct({{0, 1}, {1, 16}, {1, 0}})
    ->UseRealTime();

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

void BM_BreakoutWorkerHeap(benchmark::State& state) {
  ConfigureTorchForFork();
  const bool pinned = state.range(0) == 1;
  constexpr int64_t kSteps = 40000, kEnvs = 16;
  constexpr double kUpdates = kSteps / (kEnvs * 5.0);
  const auto dir = std::filesystem::temp_directory_path() /
                   ("asyncrl_bench_heap_" + std::to_string(getpid()));
  double faults = 0, system_s = 0;
  for (auto _ : state) {
    std::filesystem::remove_all(dir);
    TrainOptions options;
    options.processes = 1;
    options.envs_per_process = kEnvs;
    options.steps = kSteps;
    options.eval_interval = 0;
    options.outdir = dir.string();
    options.progress_interval = std::chrono::milliseconds(0);
    options.pin_heap_thresholds = pinned;
    rusage before{}, after{};
    getrusage(RUSAGE_CHILDREN, &before);
    const auto start = std::chrono::steady_clock::now();
    const TrainResult r = TrainAgentAsync(
        options,
        [pinned](int, bool test) {
          // Training environments are made in the worker alone: there it
          // fixes glibc's initial thresholds (mallopt also stops their
          // dynamic adjustment).
          if (!test && !pinned) {
            mallopt(M_MMAP_THRESHOLD, 128 * 1024);
            mallopt(M_TRIM_THRESHOLD, 128 * 1024);
          }
          return MakeEnv(kEnv);
        },
        [](int idx) -> std::unique_ptr<Agent> {
          return MakeAgent("minatar-conv", idx);
        });
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
    getrusage(RUSAGE_CHILDREN, &after);
    if (r.exit_code != 0) state.SkipWithError(r.message.c_str());
    faults += static_cast<double>(after.ru_minflt - before.ru_minflt);
    system_s +=
        static_cast<double>(after.ru_stime.tv_sec - before.ru_stime.tv_sec) +
        1e-6 * static_cast<double>(after.ru_stime.tv_usec -
                                   before.ru_stime.tv_usec);
  }
  std::filesystem::remove_all(dir);
  const double runs = static_cast<double>(state.iterations());
  state.counters["minflt_per_update"] = faults / runs / kUpdates;
  state.counters["system_us_per_update"] = 1e6 * system_s / runs / kUpdates;
}
BENCHMARK(BM_BreakoutWorkerHeap)
    ->ArgName("pinned")
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace asyncrl

ASYNCRL_BENCHMARK_MAIN();
