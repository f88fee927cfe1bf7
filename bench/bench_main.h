// main() of every benchmark program: Google Benchmark's, after the OpenBLAS
// kernel check every asyncrl program makes first (misc/platform/blas_kernel.h),
// so a benchmark measures the kernel train_a3c would run.
#ifndef ASYNCRL_BENCH_BENCH_MAIN_H_
#define ASYNCRL_BENCH_BENCH_MAIN_H_

#include <benchmark/benchmark.h>

#include "asyncrl/misc/platform/blas_kernel.h"

#define ASYNCRL_BENCHMARK_MAIN()                              \
  int main(int argc, char** argv) {                           \
    asyncrl::EnsureBestBlasKernel(argc, argv);                \
    benchmark::Initialize(&argc, argv);                       \
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) { \
      return 1;                                               \
    }                                                         \
    benchmark::RunSpecifiedBenchmarks();                      \
    benchmark::Shutdown();                                    \
    return 0;                                                 \
  }                                                           \
  int main(int, char**)

#endif  // ASYNCRL_BENCH_BENCH_MAIN_H_
