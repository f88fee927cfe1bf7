// Per-worker seeds, as the reference trainer derives them: worker i trains on
// seed i + seed * processes and evaluates on 2^31 - 1 minus that.
#ifndef ASYNCRL_MISC_SEEDING_H_
#define ASYNCRL_MISC_SEEDING_H_

#include <cstdint>

namespace asyncrl {

constexpr int64_t kMaxSeed = (int64_t{1} << 31) - 1;

// Throws std::invalid_argument if the seed is negative or the derived seed
// leaves [0, 2^31 - 1].
int64_t TrainEnvSeed(int process_idx, int64_t seed, int processes);
int64_t EvalEnvSeed(int process_idx, int64_t seed, int processes);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_SEEDING_H_
