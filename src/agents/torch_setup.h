// LibTorch settings that make fork safe. Call ConfigureTorchForFork() in the
// parent before any tensor work: with one intra-op and one inter-op thread no
// OpenMP or thread pool exists at fork time (libgomp is not fork-safe: a
// child that inherits a pool hangs on its first parallel region).
#ifndef ASYNCRL_AGENTS_TORCH_SETUP_H_
#define ASYNCRL_AGENTS_TORCH_SETUP_H_

#include <string>

namespace asyncrl {

// Idempotent. Must run before the first tensor operation of the process.
// Also limits OpenBLAS (if that is the BLAS in use) to one thread.
void ConfigureTorchForFork();

// The resolved path of the BLAS library LibTorch calls (the one providing
// sgemm_), e.g. /usr/lib/x86_64-linux-gnu/openblas-serial/libblas.so.3.
std::string BlasLibrary();

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_TORCH_SETUP_H_
