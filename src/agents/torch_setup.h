// LibTorch settings that make fork safe. Call ConfigureTorchForFork() in the
// parent before any tensor work: with one intra-op and one inter-op thread no
// OpenMP or thread pool exists at fork time (libgomp is not fork-safe: a
// child that inherits a pool hangs on its first parallel region).
#ifndef ASYNCRL_AGENTS_TORCH_SETUP_H_
#define ASYNCRL_AGENTS_TORCH_SETUP_H_

#include <string>

namespace asyncrl {

// Idempotent. Must run before the first tensor operation of the process.
// Also limits OpenBLAS (if that is the BLAS in use) to one thread, and
// flushes denormal floats to zero in the calling thread (inherited by the
// processes it forks; see torch_setup.cc for why), and has OpenBLAS take
// its work buffer (ReserveBlasWorkBuffer: throws std::runtime_error when
// the address space is too small for it).
// (Which BLAS and kernel run: misc/platform/blas_kernel.h.)
void ConfigureTorchForFork();

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_TORCH_SETUP_H_
