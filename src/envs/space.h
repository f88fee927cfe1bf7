// Observation and action spaces, in the spirit of gym's Discrete and Box.
#ifndef ASYNCRL_ENVS_SPACE_H_
#define ASYNCRL_ENVS_SPACE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace asyncrl {

enum class SpaceKind { kDiscrete, kBox };
enum class DType { kFloat32, kInt64 };

// A space: Discrete(n) holds the integers [0, n); Box holds float arrays of
// `shape` with elementwise bounds [low, high] (infinite bounds allowed).
struct Space {
  SpaceKind kind = SpaceKind::kDiscrete;
  int64_t n = 0;                // Discrete only.
  std::vector<int64_t> shape;   // Box only; empty for Discrete.
  std::vector<float> low;       // Box only; one per element.
  std::vector<float> high;      // Box only; one per element.
  DType dtype = DType::kInt64;

  static Space Discrete(int64_t n);
  static Space Box(std::vector<int64_t> shape, std::vector<float> low,
                   std::vector<float> high);
  // Box with the same bounds for every element.
  static Space Box(std::vector<int64_t> shape, float low, float high);

  // Number of scalars in one element of the space (1 for Discrete).
  int64_t FlatSize() const;
  bool IsDiscrete() const { return kind == SpaceKind::kDiscrete; }
  // "Discrete(2)" or "Box(shape=[3], low=[-1,-1,-8], high=[1,1,8])".
  std::string ToString() const;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_SPACE_H_
