// Placeholder until the A3C trainer lands: runs a uniformly random policy on
// CartPole-v1 for a few episodes and prints the mean return.
#include <iostream>

#include "envs/registry.h"
#include "misc/rng.h"

int main() {
  auto env = asyncrl::MakeEnv("CartPole-v1");
  asyncrl::Rng rng(0);
  double total = 0;
  constexpr int kEpisodes = 20;
  for (int e = 0; e < kEpisodes; ++e) {
    env->Reset(e);
    asyncrl::StepResult r;
    do {
      r = env->Step(asyncrl::Action::Discrete(static_cast<int64_t>(rng.Next() % 2)));
      total += r.reward;
    } while (!r.Done());
  }
  std::cout << "random policy on CartPole-v1: mean return "
            << total / kEpisodes << " over " << kEpisodes << " episodes\n";
  return 0;
}
