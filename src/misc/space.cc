#include "asyncrl/misc/space.h"

#include <sstream>
#include <stdexcept>

namespace asyncrl {

Space Space::Discrete(int64_t n) {
  if (n <= 0) {
    throw std::invalid_argument("Discrete space: n=" + std::to_string(n) +
                                " must be positive");
  }
  Space s;
  s.kind = SpaceKind::kDiscrete;
  s.n = n;
  return s;
}

Space Space::Box(std::vector<int64_t> shape, std::vector<float> low,
                 std::vector<float> high) {
  Space s;
  s.kind = SpaceKind::kBox;
  s.shape = std::move(shape);
  s.low = std::move(low);
  s.high = std::move(high);
  const auto size = static_cast<size_t>(s.FlatSize());
  if (s.low.size() != size || s.high.size() != size) {
    throw std::invalid_argument(
        "Box space: bounds have " + std::to_string(s.low.size()) + "/" +
        std::to_string(s.high.size()) + " elements, shape needs " +
        std::to_string(size));
  }
  return s;
}

Space Space::Box(std::vector<int64_t> shape, float low, float high) {
  int64_t size = 1;
  for (int64_t d : shape) size *= d;
  return Box(std::move(shape), std::vector<float>(size, low),
             std::vector<float>(size, high));
}

int64_t Space::FlatSize() const {
  if (kind == SpaceKind::kDiscrete) return 1;
  int64_t size = 1;
  for (int64_t d : shape) size *= d;
  return size;
}

std::string Space::ToString() const {
  std::ostringstream os;
  if (kind == SpaceKind::kDiscrete) {
    os << "Discrete(" << n << ")";
    return os.str();
  }
  auto list = [&os](const auto& v) {
    os << "[";
    for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
    os << "]";
  };
  os << "Box(shape=";
  list(shape);
  os << ", low=";
  list(low);
  os << ", high=";
  list(high);
  if (action_mask > 0) os << ", action_mask=" << action_mask;
  os << ")";
  return os.str();
}

}  // namespace asyncrl
