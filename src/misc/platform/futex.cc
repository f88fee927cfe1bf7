#include "asyncrl/misc/platform/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

namespace asyncrl {
namespace {

static_assert(sizeof(std::atomic<int32_t>) == sizeof(int32_t),
              "futex needs a plain 32-bit word");

long Futex(std::atomic<int32_t>& flag, int op, int32_t value) {
  // Shared (not FUTEX_PRIVATE) so that it works across processes.
  return syscall(SYS_futex, reinterpret_cast<int32_t*>(&flag), op, value,
                 nullptr, nullptr, 0);
}

}  // namespace

void WaitUntilNonZero(std::atomic<int32_t>& flag) {
  while (flag.load() == 0) {
    // Returns at once if the flag is no longer 0 (EAGAIN) or on a signal.
    Futex(flag, FUTEX_WAIT, 0);
  }
}

void StoreAndWakeAll(std::atomic<int32_t>& flag, int32_t value) {
  flag.store(value);
  Futex(flag, FUTEX_WAKE, INT_MAX);
}

}  // namespace asyncrl
