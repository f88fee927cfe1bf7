// Environment steps per second for every registered environment, with
// uniformly random valid actions (legal moves in two-player games, against
// their default opponent, random) and resets at episode ends.
#include <benchmark/benchmark.h>

#include <vector>

#include "asyncrl/envs/games/self_play_env.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/misc/rng.h"
#include "bench_main.h"

namespace asyncrl {
namespace {

void BM_EnvStep(benchmark::State& state, const std::string& name) {
  auto env = MakeEnv(name);
  Rng rng(0);
  const Space& space = env->ActionSpace();
  std::vector<float> values(space.FlatSize(), 0.0f);
  env->Reset(0);
  for (auto _ : state) {
    Action action;
    if (SelfPlayEnv* game = FindSelfPlayEnv(*env)) {
      const std::vector<int64_t> legal = game->game().LegalActions();
      action = Action::Discrete(legal[rng.Next() % legal.size()]);
    } else if (space.IsDiscrete()) {
      action = Action::Discrete(static_cast<int64_t>(rng.Next() % space.n));
    } else {
      values[0] = static_cast<float>(rng.Uniform(space.low[0], space.high[0]));
      action = Action::Continuous(values.data(), space.FlatSize());
    }
    StepResult r = env->Step(action);
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
