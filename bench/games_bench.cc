// Two-player games: learner steps per second of each game against each
// fixed opponent (the learner plays uniformly random legal moves; a step
// is its move and the opponent's reply), and the whole trainer's global
// steps per second on each game by self-play (A3C, fc-softmax, masked
// policy; evaluation off); and BM_ConnectFourJudge/plies:P, the Connect
// Four solver judging one position P stones in (every column's value, the
// judge's verdict; random positions from seed 1, a fresh solver each).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/envs/games/connect_four_solver.h"
#include "asyncrl/envs/games/self_play_env.h"
#include "asyncrl/envs/registry.h"
#include "bench_main.h"
#include "trainer_bench.h"

namespace asyncrl {
namespace {

void BM_GameStep(benchmark::State& state, const std::string& game,
                 const std::string& opponent) {
  SelfPlayEnv env(DefaultGameRegistry().Make(game));
  env.SetFixedOpponent(MakeFixedOpponent(opponent, game));
  std::mt19937_64 rng(0);
  env.Reset(0);
  int64_t games = 0;
  for (auto _ : state) {
    const std::vector<int64_t> legal = env.game().LegalActions();
    const int64_t a =
        legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)];
    const StepResult r = env.Step(Action::Discrete(a));
    benchmark::DoNotOptimize(r.observation.data);
    if (r.Done()) {
      ++games;
      env.Reset();
    }
  }
  state.counters["steps_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["games_per_s"] = benchmark::Counter(
      static_cast<double>(games), benchmark::Counter::kIsRate);
}

void BM_SelfPlayTrainer(benchmark::State& state, const std::string& game) {
  ConfigureTorchForFork();
  const int processes = static_cast<int>(state.range(0));
  const int envs = static_cast<int>(state.range(1));
  const Space obs = MakeEnv(game)->ObservationSpace();
  const Space act = MakeEnv(game)->ActionSpace();
  RunTrainerBenchmark(
      state, processes, 200000 * processes, envs,
      [game](int, bool) { return MakeEnv(game); },
      [obs, act](int idx) -> std::unique_ptr<Agent> {
        torch::manual_seed(0);
        A3COptions options;
        options.seed = static_cast<uint64_t>(idx);
        return std::make_unique<A3C>(
            DefaultModelRegistry().Make("fc-softmax", obs, act), obs, act,
            options);
      });
}

const bool kRegistered = [] {
  for (const auto& game : DefaultGameRegistry().Names()) {
    for (const auto& opponent : DefaultEvalOpponents(game)) {
      benchmark::RegisterBenchmark(
          ("BM_GameStep/" + game + "/" + opponent).c_str(), BM_GameStep, game,
          opponent);
    }
    if (game == "ConnectFour") {
      benchmark::RegisterBenchmark("BM_GameStep/ConnectFour/minimax:4",
                                   BM_GameStep, game, "minimax:4");
    }
    benchmark::RegisterBenchmark(("BM_SelfPlayTrainer/" + game).c_str(),
                                 BM_SelfPlayTrainer, game)
        ->ArgNames({"processes", "envs"})
        ->ArgsProduct({{1, 2}, {1, 16}})
        ->UseManualTime()
        ->Iterations(2)
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

void BM_ConnectFourJudge(benchmark::State& state) {
  const int plies = static_cast<int>(state.range(0));
  ConnectFourSolver finder(22);
  const auto positions = JudgePositions(8, plies, plies, 1, finder);
  size_t next = 0;
  int64_t nodes = 0;
  for (auto _ : state) {
    ConnectFourSolver solver(22);
    const auto game = PlayColumns(positions[next++ % positions.size()]);
    benchmark::DoNotOptimize(ValueKeepingMoves(*game, solver));
    nodes += solver.nodes();
  }
  state.counters["nodes"] = benchmark::Counter(
      static_cast<double>(nodes), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_ConnectFourJudge)
    ->ArgName("plies")
    ->Arg(12)
    ->Arg(16)
    ->Arg(20)
    ->Arg(24)
    ->Iterations(8)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace asyncrl

ASYNCRL_BENCHMARK_MAIN();
