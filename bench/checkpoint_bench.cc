// Checkpoint save (serialize, write, fsync, rename) and load (read, CRC,
// parse, validate) throughput for parameter sets of growing size, and the
// flags of a --config file of growing length (linear: Boost's parser is
// quadratic in the length of one token list).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "asyncrl/experiments/run_flags.h"
#include "asyncrl/misc/checkpoint.h"
#include "bench_main.h"

namespace asyncrl {
namespace {

proto::Checkpoint Make(int64_t floats) {
  proto::Checkpoint c;
  std::vector<float> w(floats, 0.25f);
  AddFloatTensor(c.mutable_parameters(), "params", {floats}, w.data());
  AddFloatTensor(c.mutable_optimizer_state(), "ms", {floats}, w.data());
  return c;
}

std::string TempPath() {
  return (std::filesystem::temp_directory_path() /
          ("asyncrl_bench_" + std::to_string(getpid()) + ".pb"))
      .string();
}

void BM_CheckpointSave(benchmark::State& state) {
  proto::Checkpoint c = Make(state.range(0));
  const std::string path = TempPath();
  for (auto _ : state) SaveCheckpointFile(c, path);
  state.SetBytesProcessed(state.iterations() * state.range(0) * 8);
  std::filesystem::remove(path);
}
BENCHMARK(BM_CheckpointSave)
    ->Arg(1 << 10)
    ->Arg(1 << 16)
    ->Arg(1 << 20)
    ->Unit(benchmark::kMillisecond);

void BM_CheckpointLoad(benchmark::State& state) {
  proto::Checkpoint c = Make(state.range(0));
  const std::string path = TempPath();
  SaveCheckpointFile(c, path);
  for (auto _ : state) benchmark::DoNotOptimize(LoadCheckpointFile(path));
  state.SetBytesProcessed(state.iterations() * state.range(0) * 8);
  std::filesystem::remove(path);
}
BENCHMARK(BM_CheckpointLoad)
    ->Arg(1 << 10)
    ->Arg(1 << 16)
    ->Arg(1 << 20)
    ->Unit(benchmark::kMillisecond);

// A config file of N 'env-param = force_mag=...' lines (CartPole), parsed
// with the command line and validated, as train_a3c starts.
void BM_ParseConfigFile(benchmark::State& state) {
  const std::string path = TempPath() + ".conf";
  {
    std::ofstream out(path);
    for (int64_t i = 0; i < state.range(0); ++i) {
      out << "env-param = force_mag=" << 5 + i % 10 << "\n";
    }
  }
  const std::string config = "--config=" + path;
  const char* argv[] = {"train_a3c", config.c_str()};
  for (auto _ : state) benchmark::DoNotOptimize(ParseRunFlags(2, argv));
  state.SetComplexityN(state.range(0));
  std::filesystem::remove(path);
}
BENCHMARK(BM_ParseConfigFile)
    ->RangeMultiplier(4)
    ->Range(1 << 10, 1 << 15)
    ->Complexity(benchmark::oN)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace asyncrl

ASYNCRL_BENCHMARK_MAIN();
