#include "asyncrl/agents/torch_setup.h"

#include <dlfcn.h>
#include <torch/torch.h>

#include "asyncrl/misc/platform/blas_kernel.h"

namespace asyncrl {

void ConfigureTorchForFork() {
  static const bool done = [] {
    torch::set_num_threads(1);
    // The inter-op pool can be sized only once per process.
    try {
      torch::set_num_interop_threads(1);
    } catch (const c10::Error&) {
    }
    // OpenBLAS's pthread build runs its own pool; one thread per worker
    // process is as fast and never oversubscribes the cores.
    using SetThreads = void (*)(int);
    if (auto* set = reinterpret_cast<SetThreads>(
            dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
      set(1);
    }
    // Flush denormals to zero (FTZ/DAZ, in this thread's MXCSR, which
    // forked workers inherit). RMSprop's mean squares of gradients that stay
    // 0 (a dead ReLU's weights) decay geometrically into the denormal range
    // after a few thousand updates, and x86 cores take ~100x longer per
    // denormal operand: the optimizer step of the CartPole network went
    // from ~25 us to ~370 us an update. No value a run keeps is that small.
    at::globalContext().setFlushDenormal(true);
    return true;
  }();
  (void)done;
  // Before any fork: OpenBLAS's work buffer, or a one-line error where it
  // would otherwise retry its allocation for ever.
  ReserveBlasWorkBuffer();
}

}  // namespace asyncrl
