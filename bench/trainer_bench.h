// Shared by the trainer benchmarks: runs the whole trainer
// (train_agent_async) for `steps` global steps per benchmark iteration,
// evaluation off, in a fresh temporary folder, timing each run manually and
// reporting global steps per second.
#ifndef ASYNCRL_BENCH_TRAINER_BENCH_H_
#define ASYNCRL_BENCH_TRAINER_BENCH_H_

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "asyncrl/experiments/train_agent_async.h"

namespace asyncrl {

template <typename MakeEnvFn, typename MakeAgentFn>
void RunTrainerBenchmark(benchmark::State& state, int processes, int64_t steps,
                         int envs_per_process, MakeEnvFn make_env,
                         MakeAgentFn make_agent) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("asyncrl_bench_trainer_" + std::to_string(getpid()));
  for (auto _ : state) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    TrainOptions options;
    options.processes = processes;
    options.envs_per_process = envs_per_process;
    options.steps = steps;
    options.eval_interval = 0;  // Training alone.
    options.outdir = dir.string();
    options.progress_interval = std::chrono::milliseconds(0);
    const auto start = std::chrono::steady_clock::now();
    const TrainResult r = TrainAgentAsync(options, make_env, make_agent);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (r.exit_code != 0) state.SkipWithError(r.message.c_str());
    state.SetIterationTime(secs);
  }
  std::filesystem::remove_all(dir);
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * steps),
                         benchmark::Counter::kIsRate);
}

}  // namespace asyncrl

#endif  // ASYNCRL_BENCH_TRAINER_BENCH_H_
