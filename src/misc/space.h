// The contract between environments and agents: observation and action
// spaces (in the spirit of gym's Discrete and Box), float views, actions.
#ifndef ASYNCRL_MISC_SPACE_H_
#define ASYNCRL_MISC_SPACE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace asyncrl {

enum class SpaceKind { kDiscrete, kBox };

// A space: Discrete(n) holds the integers [0, n); Box holds float arrays of
// `shape` with elementwise bounds [low, high] (infinite bounds allowed).
struct Space {
  SpaceKind kind = SpaceKind::kDiscrete;
  int64_t n = 0;               // Discrete only.
  std::vector<int64_t> shape;  // Box only; empty for Discrete.
  std::vector<float> low;      // Box only; one per element.
  std::vector<float> high;     // Box only; one per element.
  // Box only: when > 0, the last `action_mask` elements of every
  // observation are the legal-action mask of a Discrete(action_mask) action
  // space (1 legal, 0 illegal), as two-player games give it
  // (envs/games/self_play_env.h). Agents put zero probability on the
  // illegal actions.
  int64_t action_mask = 0;
  // Box only: when not empty, the first C * H * W elements of every
  // observation are an image of this [C, H, W] shape (a two-player game's
  // board planes; the mask follows), for networks that convolve over it
  // (--arch board-conv).
  std::vector<int64_t> planes;

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

// A read-only view of `size` floats. Valid as long as its owner says.
struct FloatView {
  const float* data = nullptr;
  int64_t size = 0;
  float operator[](int64_t i) const { return data[i]; }
};

// An action: an index for Discrete spaces, or a view of floats for Box spaces.
struct Action {
  int64_t index = 0;
  FloatView values;

  static Action Discrete(int64_t index) { return Action{index, {}}; }
  static Action Continuous(const float* data, int64_t size) {
    return Action{0, FloatView{data, size}};
  }
};

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_SPACE_H_
