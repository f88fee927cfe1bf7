// One-thread LibTorch matmul at the sizes of the reference discrete network
// (batch x 200 x 200), and the minatar-conv body's convolution (4 channels
// of 10x10 -> 16 x 3x3, then the 1024 -> 128 layer): shows which BLAS
// libblas.so.3 points to (and which OpenBLAS kernel) pays off. Compare
// BLAS libraries with LD_LIBRARY_PATH=<dir holding another libblas.so.3>.
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

// Forward and backward of minatar-conv's body on `batch` frames of
// Breakout (4 channels).
void BM_MinAtarConv(benchmark::State& state) {
  ConfigureTorchForFork();
  const int64_t batch = state.range(0);
  auto conv = torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 16, 3));
  auto fc = torch::nn::Linear(16 * 8 * 8, 128);
  auto x = torch::rand({batch, 4, 10, 10});
  for (auto _ : state) {
    auto h = torch::relu(fc(torch::relu(conv(x)).flatten(1)));
    h.sum().backward();
    benchmark::DoNotOptimize(h);
  }
  state.counters["passes_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MinAtarConv)->Arg(1)->Arg(32)->Arg(80);

}  // namespace
}  // namespace asyncrl

ASYNCRL_BENCHMARK_MAIN();
