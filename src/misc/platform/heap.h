// The C library's heap in a worker process: pinned thresholds, so a steady
// training loop neither gives its memory back to the kernel nor asks for it
// again around every update.
#ifndef ASYNCRL_MISC_PLATFORM_HEAP_H_
#define ASYNCRL_MISC_PLATFORM_HEAP_H_

#include <cstddef>

namespace asyncrl {

// What PinHeapThresholds sets: blocks below kHeapMmapThreshold come from the
// heap (not a fresh mapping each), and the heap keeps up to
// kHeapTrimThreshold free bytes at its top instead of returning them.
inline constexpr size_t kHeapMmapThreshold = size_t{32} << 20;  // glibc's max.
inline constexpr size_t kHeapTrimThreshold = size_t{64} << 20;

// Sets glibc malloc's mmap and trim thresholds to the values above, which
// also turns off its dynamic adjustment of them. Why: glibc starts both at
// 128 KiB and raises them only when a block it mapped is freed, so a worker
// inherited whatever its parent had happened to free before fork: with
// train_a3c --quiet the parent had freed no such block, and a MinAtar worker
// (16 environments, minatar-conv) returned the top of its heap to the kernel
// after every update and grew it again for the next: 4,996 brk calls in
// 100k steps against 14 without --quiet, and twice the wall time. Returns
// false where the C library has no mallopt (nothing is changed then).
bool PinHeapThresholds();

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_PLATFORM_HEAP_H_
