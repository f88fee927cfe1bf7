#include "asyncrl/misc/seeding.h"

#include <stdexcept>
#include <string>

namespace asyncrl {

int64_t TrainEnvSeed(int process_idx, int64_t seed, int processes) {
  if (seed < 0 || processes <= 0 || process_idx < 0 ||
      process_idx >= processes) {
    throw std::invalid_argument(
        "seed=" + std::to_string(seed) +
        ", processes=" + std::to_string(processes) +
        ", process_idx=" + std::to_string(process_idx) +
        ": accepted: seed >= 0, processes >= 1, 0 <= process_idx < processes");
  }
  if (seed > (kMaxSeed - process_idx) / processes) {
    throw std::invalid_argument("seed=" + std::to_string(seed) +
                                " is too large for " +
                                std::to_string(processes) +
                                " processes; accepted: seed * processes + " +
                                "process_idx <= 2147483647");
  }
  return process_idx + seed * processes;
}

int64_t EvalEnvSeed(int process_idx, int64_t seed, int processes) {
  return kMaxSeed - TrainEnvSeed(process_idx, seed, processes);
}

}  // namespace asyncrl
