// The mean return of uniformly random actions: the floor a learning curve
// starts from, and the figure papers publish as a task's "random" score
// (D4RL's reference scores, Gymnasium's docs).
//   build/bench/random_policy ENV [EPISODES] [FIRST_SEED]
// Episodes use seeds FIRST_SEED, FIRST_SEED + 1, ... and the registered
// episode limit; prints the mean, its standard error, the spread and the
// mean length.
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "asyncrl/envs/registry.h"
#include "asyncrl/misc/rng.h"
#include "random_action.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(
        stderr,
        "usage: random_policy ENV [EPISODES (1000)] [FIRST_SEED (0)]\n");
    return 2;
  }
  try {
    const std::string name = argv[1];
    const long episodes = argc > 2 ? std::stol(argv[2]) : 1000;
    const unsigned long first_seed = argc > 3 ? std::stoul(argv[3]) : 0;
    if (episodes < 2) {
      std::fprintf(stderr, "random_policy: EPISODES %ld: at least 2\n",
                   episodes);
      return 2;
    }
    auto env = asyncrl::MakeEnv(name);
    asyncrl::Rng rng(first_seed + 0x5eed);
    std::vector<float> values;
    std::vector<double> returns;
    double steps = 0;
    for (long e = 0; e < episodes; ++e) {
      env->Reset(first_seed + e);
      double total = 0;
      for (bool done = false; !done; steps += 1) {
        const asyncrl::StepResult r =
            env->Step(asyncrl::RandomAction(*env, rng, values));
        total += r.reward;
        done = r.Done();
      }
      returns.push_back(total);
    }
    double mean = 0;
    for (double r : returns) mean += r;
    mean /= episodes;
    double var = 0, low = returns[0], high = returns[0];
    for (double r : returns) {
      var += (r - mean) * (r - mean);
      low = std::min(low, r);
      high = std::max(high, r);
    }
    var /= episodes - 1;
    std::printf(
        "%s: random policy over %ld episodes (seeds %lu-%lu): mean return "
        "%.2f, standard error %.2f, min %.2f, max %.2f, mean length %.1f\n",
        name.c_str(), episodes, first_seed, first_seed + episodes - 1, mean,
        std::sqrt(var / episodes), low, high, steps / episodes);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "random_policy: %s\n", e.what());
    return 1;
  }
  return 0;
}
