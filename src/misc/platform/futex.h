// Blocking waits on a 32-bit flag in shared memory across processes (Linux
// futex). The trainer's workers poll the stop flag between steps (a load per
// step is cheaper than a system call); the coordinator raises it with
// StoreAndWakeAll so that any process blocked in WaitUntilNonZero (tests,
// helpers) wakes at once.
#ifndef ASYNCRL_MISC_PLATFORM_FUTEX_H_
#define ASYNCRL_MISC_PLATFORM_FUTEX_H_

#include <atomic>
#include <cstdint>

namespace asyncrl {

// Blocks until `flag` is non-zero. Safe from any process mapping the flag.
void WaitUntilNonZero(std::atomic<int32_t>& flag);

// Sets `flag` to `value` and wakes every process blocked on it.
void StoreAndWakeAll(std::atomic<int32_t>& flag, int32_t value);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_PLATFORM_FUTEX_H_
