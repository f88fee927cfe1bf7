// PinHeapThresholds: a block the heap gave stays with it when freed (no
// trim), where glibc's initial thresholds map it afresh each time. Each case
// runs in a child process: mallopt settings are process-wide and cannot be
// undone. Only with glibc's own allocator (a sanitizer brings its own).
#include "asyncrl/misc/platform/heap.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

// The end of the program's data (the linker's symbol): the heap follows.
extern "C" char end;

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace heap_test {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kOwnAllocator = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kOwnAllocator = false;
#else
constexpr bool kOwnAllocator = true;
#endif
#else
constexpr bool kOwnAllocator = true;
#endif

// Runs `body` in a child; its exit status (0: every check held).
template <typename F>
int InChild(F body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

constexpr size_t kBlock = size_t{8} << 20;  // Above 128 KiB, below 32 MiB.

// Where the block lay, and the heap's end while it was held and once freed.
struct Block {
  uintptr_t start, stop, heap_end_held, heap_end_freed;
  // Inside the heap (between the program's data and the heap's end), not a
  // mapping of its own.
  bool InHeap() const {
    return start >= reinterpret_cast<uintptr_t>(&::end) &&
           stop <= heap_end_held;
  }
};
Block AllocateAndFree() {
  Block b{};
  void* p = std::malloc(kBlock);
  std::memset(p, 1, kBlock);
  b.start = reinterpret_cast<uintptr_t>(p);
  b.stop = b.start + kBlock;
  b.heap_end_held = reinterpret_cast<uintptr_t>(sbrk(0));
  std::free(p);
  b.heap_end_freed = reinterpret_cast<uintptr_t>(sbrk(0));
  return b;
}

TEST(HeapTest, PinnedThresholdsKeepAFreedBlockInTheHeap) {
  if (!kOwnAllocator) GTEST_SKIP() << "a sanitizer's allocator";
  EXPECT_EQ(InChild([] {
              if (!PinHeapThresholds()) return 1;
              const Block b = AllocateAndFree();
              if (!b.InHeap()) return 2;
              if (b.heap_end_freed < b.stop) return 3;  // Not trimmed.
              return 0;
            }),
            0);
}

// What a worker had before: glibc's initial 128 KiB thresholds map such a
// block and unmap it at free, every time.
TEST(HeapTest, InitialThresholdsMapTheBlockInstead) {
  if (!kOwnAllocator) GTEST_SKIP() << "a sanitizer's allocator";
  EXPECT_EQ(InChild([] {
              mallopt(M_MMAP_THRESHOLD, 128 * 1024);
              mallopt(M_TRIM_THRESHOLD, 128 * 1024);
              return AllocateAndFree().InHeap() ? 2 : 0;
            }),
            0);
}

}  // namespace
}  // namespace heap_test
}  // namespace asyncrl
