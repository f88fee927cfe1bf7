#include "asyncrl/misc/platform/heap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace asyncrl {

bool PinHeapThresholds() {
#if defined(__GLIBC__)
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapMmapThreshold)) == 1 &&
         mallopt(M_TRIM_THRESHOLD, static_cast<int>(kHeapTrimThreshold)) == 1;
#else
  return false;
#endif
}

}  // namespace asyncrl
