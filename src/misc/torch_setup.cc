#include "misc/torch_setup.h"

#include <torch/torch.h>

namespace asyncrl {

void ConfigureTorchForFork() {
  static const bool done = [] {
    torch::set_num_threads(1);
    // The inter-op pool can be sized only once per process.
    try {
      torch::set_num_interop_threads(1);
    } catch (const c10::Error&) {
    }
    return true;
  }();
  (void)done;
}

}  // namespace asyncrl
