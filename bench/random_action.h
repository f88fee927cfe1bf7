// A uniformly random valid action for a benchmark's environment: a legal
// move in a two-player game, any index of a discrete space, each value of a
// Box uniform in its bounds.
#ifndef ASYNCRL_BENCH_RANDOM_ACTION_H_
#define ASYNCRL_BENCH_RANDOM_ACTION_H_

#include <vector>

#include "asyncrl/envs/games/self_play_env.h"
#include "asyncrl/misc/rng.h"

namespace asyncrl {

// `values` holds a continuous action's values (valid until the next call).
inline Action RandomAction(Env& env, Rng& rng, std::vector<float>& values) {
  const Space& space = env.ActionSpace();
  if (SelfPlayEnv* game = FindSelfPlayEnv(env)) {
    const std::vector<int64_t> legal = game->game().LegalActions();
    return Action::Discrete(legal[rng.Next() % legal.size()]);
  }
  if (space.IsDiscrete()) {
    return Action::Discrete(static_cast<int64_t>(rng.Next() % space.n));
  }
  values.resize(space.FlatSize());
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>(rng.Uniform(space.low[i], space.high[i]));
  }
  return Action::Continuous(values.data(), space.FlatSize());
}

}  // namespace asyncrl

#endif  // ASYNCRL_BENCH_RANDOM_ACTION_H_
