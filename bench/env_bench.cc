// Environment steps per second for every registered environment, with
// uniformly random valid actions (legal moves in two-player games, against
// their default opponent, random) and resets at episode ends.
#include <benchmark/benchmark.h>

#include <vector>

#include "asyncrl/envs/registry.h"
#include "asyncrl/misc/rng.h"
#include "bench_main.h"
#include "random_action.h"

namespace asyncrl {
namespace {

void BM_EnvStep(benchmark::State& state, const std::string& name) {
  auto env = MakeEnv(name);
  Rng rng(0);
  std::vector<float> values;
  env->Reset(0);
  for (auto _ : state) {
    StepResult r = env->Step(RandomAction(*env, rng, values));
    benchmark::DoNotOptimize(r.observation.data);
    if (r.Done()) env->Reset();
  }
  state.counters["steps_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

const bool kRegistered = [] {
  for (const auto& name : DefaultEnvRegistry().Names()) {
    benchmark::RegisterBenchmark(("BM_EnvStep/" + name).c_str(), BM_EnvStep,
                                 name);
  }
  return true;
}();

}  // namespace
}  // namespace asyncrl

ASYNCRL_BENCHMARK_MAIN();
