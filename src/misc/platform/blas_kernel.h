// OpenBLAS picks its kernels by the CPU model it knows; on a CPU newer than
// the OpenBLAS build (Debian 12's 0.3.21 on a Xeon of family 6 model 207)
// it falls back to its generic "Prescott" (SSE3) kernels, up to 3.6x slower
// for our matrix sizes, without a word. This checks the kernel OpenBLAS
// chose against the CPU's instruction sets and, when a better one exists,
// re-executes the program once with OPENBLAS_CORETYPE naming it (OpenBLAS
// reads it when it loads, before main), logging one line. A user's own
// OPENBLAS_CORETYPE is never overridden; a BLAS other than OpenBLAS is left
// alone.
#ifndef ASYNCRL_MISC_PLATFORM_BLAS_KERNEL_H_
#define ASYNCRL_MISC_PLATFORM_BLAS_KERNEL_H_

#include <string>

namespace asyncrl {

// The instruction sets that decide OpenBLAS's x86-64 kernels.
struct CpuFeatures {
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool avx512 = false;  // F, CD, BW, DQ and VL: what SkylakeX needs.
};

// This CPU's (cpuid, through __builtin_cpu_supports).
CpuFeatures DetectCpuFeatures();

// How wide a named OpenBLAS x86-64 kernel is: 1 SSE (Prescott, Core2,
// Nehalem, ...), 2 AVX (Sandybridge, Bulldozer, ...), 3 AVX2 (Haswell, Zen,
// Excavator), 4 AVX-512 (SkylakeX, Cooperlake, SapphireRapids); 0 for a name
// this does not know (case-insensitive).
int KernelTier(const std::string& core);

// The widest OpenBLAS kernel the CPU runs: "SkylakeX", "Haswell",
// "Sandybridge", or "" where the SSE kernels are all there is.
std::string BestKernel(const CpuFeatures& cpu);

// What to do about the kernel in use.
struct BlasKernelDecision {
  bool reexec = false;  // Restart with OPENBLAS_CORETYPE=core.
  std::string core;
  std::string message;  // The line to log when re-executing.
};

// `current`: the kernel OpenBLAS runs ("" if the BLAS is not OpenBLAS);
// `user_coretype`: OPENBLAS_CORETYPE as the user set it (null or empty if
// not); `reexecuted`: this process is already the re-executed one. Pure.
BlasKernelDecision DecideBlasKernel(const std::string& current,
                                    const CpuFeatures& cpu,
                                    const char* user_coretype, bool reexecuted);

// The resolved path of the BLAS library LibTorch calls (the one answering
// sgemm_), e.g. /usr/lib/x86_64-linux-gnu/openblas-serial/libblas.so.3.
std::string BlasLibrary();

// The kernel OpenBLAS runs in this process (openblas_get_corename), or ""
// if the library that answers sgemm_ is not OpenBLAS's. Known by its
// symbols (the shared library or one it depends on defines
// openblas_get_corename), not by its file's name.
std::string CurrentBlasKernel();

// Whether the BLAS is OpenBLAS on one of its AVX-512 x86-64 kernels
// (SkylakeX, Cooperlake, SapphireRapids), the ones with small-matrix
// kernels: products of m n k <= 1e6 of the shapes they accept computed
// without packing either operand. Decided once per process.
bool BlasHasSmallMatrixKernels();

// Re-executes this program (/proc/self/exe with the same arguments) with
// OPENBLAS_CORETYPE set when DecideBlasKernel says so, after logging its
// message at info level; returns if not (or if exec fails, with a warning).
// Call first in main, before any thread or child exists.
// ASYNCRL_BLAS_KERNEL=keep turns it off (the test suite runs so, to print
// the same lines on every machine); ASYNCRL_BLAS_REEXEC marks the
// re-executed process; ASYNCRL_BLAS_TEST_FORCED_CORETYPE=1 (tests) makes
// OPENBLAS_CORETYPE count as OpenBLAS's own generic choice, not the user's.
void EnsureBestBlasKernel(int argc, const char* const* argv);

// OpenBLAS (0.3.21) takes a work buffer of about 128 MiB at its first
// larger product and, when that allocation fails (e.g. under `ulimit -v`),
// retries for ever at full CPU. This has it taken now, in the calling
// process, so that workers forked later inherit it: call before fork, once
// threads are limited (ConfigureTorchForFork does). Throws
// std::runtime_error naming the size and the address-space limit when the
// memory cannot be had. Does nothing for a BLAS other than OpenBLAS, or
// when this process has done it already.
void ReserveBlasWorkBuffer();

// ReserveBlasWorkBuffer's check: throws its std::runtime_error when the
// buffer's memory (with a margin) cannot be had now; else frees it again.
void CheckBlasWorkBufferRoom();

// The address-space limit (RLIMIT_AS) in words: "unlimited", or
// "681574400 bytes (ulimit -v 665600)".
std::string AddressSpaceLimit();

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_PLATFORM_BLAS_KERNEL_H_
