// One-thread LibTorch matmul at the sizes of the reference discrete network
// (batch x 200 x 200): shows which BLAS libblas.so.3 points to pays off.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "asyncrl/agents/torch_setup.h"
#include "bench_main.h"

namespace asyncrl {
namespace {

void BM_Linear200(benchmark::State& state) {
  ConfigureTorchForFork();
  c10::InferenceMode guard;
  auto x = torch::randn({state.range(0), 200});
  auto w = torch::randn({200, 200});
  for (auto _ : state) benchmark::DoNotOptimize(torch::mm(x, w));
  state.counters["matmuls_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Linear200)->Arg(1)->Arg(8)->Arg(40)->Arg(80);

}  // namespace
}  // namespace asyncrl

ASYNCRL_BENCHMARK_MAIN();
