// A small, portable random number generator for environments: the same seed
// gives the same stream on every platform and standard library.
#ifndef ASYNCRL_MISC_RNG_H_
#define ASYNCRL_MISC_RNG_H_

#include <cmath>
#include <cstdint>
#include <random>

namespace asyncrl {

// Not thread-safe; each environment owns one.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : engine_(seed) {}
  void Seed(uint64_t seed) { engine_.seed(seed); }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Uniform in [low, high).
  double Uniform(double low, double high) {
    return low + (high - low) * Uniform();
  }
  uint64_t Next() { return engine_(); }
  // Standard normal (Box-Muller on two Uniform() draws: the same numbers on
  // every standard library, which std::normal_distribution does not promise).
  double Normal() {
    const double u = 1.0 - Uniform();  // (0, 1]: log(u) is finite.
    const double v = Uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_RNG_H_
