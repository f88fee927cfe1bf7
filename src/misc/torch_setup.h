// LibTorch settings that make fork safe. Call ConfigureTorchForFork() in the
// parent before any tensor work: with one intra-op and one inter-op thread no
// OpenMP or thread pool exists at fork time (libgomp is not fork-safe: a
// child that inherits a pool hangs on its first parallel region).
#ifndef ASYNCRL_MISC_TORCH_SETUP_H_
#define ASYNCRL_MISC_TORCH_SETUP_H_

namespace asyncrl {

// Idempotent. Must run before the first tensor operation of the process.
void ConfigureTorchForFork();

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_TORCH_SETUP_H_
