// One-thread LibTorch matmul at the sizes of the reference discrete network
// (batch x 200 x 200), and the minatar-conv body's convolution (4 channels
// of 10x10 -> 16 x 3x3, then the 1024 -> 128 layer): shows which BLAS
// libblas.so.3 points to (and which OpenBLAS kernel) pays off. Compare
// BLAS libraries with LD_LIBRARY_PATH=<dir holding another libblas.so.3>.
// BM_SgemmPeak: one thread's float32 peak through the BLAS (a large square
// sgemm), the denominator of docs/results/performance.md's "share of the
// arithmetic limit".
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <torch/torch.h>

#include <vector>

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

void BM_SgemmPeak(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<float> a(static_cast<size_t>(n) * n, 0.5f);
  std::vector<float> b(static_cast<size_t>(n) * n, 0.25f);
  std::vector<float> c(static_cast<size_t>(n) * n, 0.0f);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["flops"] = benchmark::Counter(
      2.0 * n * n * n * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SgemmPeak)->Arg(256)->Arg(1024)->UseRealTime();

}  // namespace
}  // namespace asyncrl

ASYNCRL_BENCHMARK_MAIN();
