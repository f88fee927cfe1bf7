// Shared-memory global step counter: increments per second from 1..N threads
// on one cache line (the contention every worker meets once per step).
#include <benchmark/benchmark.h>

#include "asyncrl/experiments/shared_region.h"
#include "bench_main.h"

namespace asyncrl {
namespace {

SharedRegion& Region() {
  static SharedRegion region(0, 0);
  return region;
}

void BM_GlobalStepIncrement(benchmark::State& state) {
  auto& counter = Region().control().global_step;
  for (auto _ : state) {
    benchmark::DoNotOptimize(counter.fetch_add(1));
  }
  state.counters["increments_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_GlobalStepIncrement)->ThreadRange(1, 4)->UseRealTime();

}  // namespace
}  // namespace asyncrl

ASYNCRL_BENCHMARK_MAIN();
