// A state area as the trainer's shared region gives one to an agent's
// normalizers: 64-byte aligned and zeroed (here in the test's own memory).
#ifndef ASYNCRL_TESTS_AGENTS_SHARED_AREA_H_
#define ASYNCRL_TESTS_AGENTS_SHARED_AREA_H_

#include <algorithm>
#include <cstddef>
#include <cstdlib>

namespace asyncrl::testing {

struct Area {
  explicit Area(size_t bytes)
      : memory(static_cast<unsigned char*>(std::aligned_alloc(64, bytes))) {
    std::fill_n(memory, bytes, 0);
  }
  ~Area() { std::free(memory); }
  Area(const Area&) = delete;
  Area& operator=(const Area&) = delete;
  unsigned char* memory;
};

}  // namespace asyncrl::testing

#endif  // ASYNCRL_TESTS_AGENTS_SHARED_AREA_H_
