#include "asyncrl/misc/platform/blas_kernel.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "asyncrl/misc/logging.h"

namespace asyncrl {
namespace {

constexpr const char* kReexecVar = "ASYNCRL_BLAS_REEXEC";
constexpr const char* kTestForcedVar = "ASYNCRL_BLAS_TEST_FORCED_CORETYPE";

struct NamedTier {
  const char* name;
  int tier;
};

// OpenBLAS 0.3.21's x86-64 kernel names (driver/others/dynamic.c).
constexpr NamedTier kKernels[] = {
    {"Katmai", 1},       {"Coppermine", 1},    {"Northwood", 1},
    {"Prescott", 1},     {"Banias", 1},        {"Atom", 1},
    {"Core2", 1},        {"Penryn", 1},        {"Dunnington", 1},
    {"Nehalem", 1},      {"Athlon", 1},        {"Opteron", 1},
    {"Opteron_SSE3", 1}, {"Barcelona", 1},     {"Nano", 1},
    {"Bobcat", 1},       {"Sandybridge", 2},   {"Bulldozer", 2},
    {"Piledriver", 2},   {"Steamroller", 2},   {"Haswell", 3},
    {"Excavator", 3},    {"Zen", 3},           {"SkylakeX", 4},
    {"Cooperlake", 4},   {"SapphireRapids", 4}};

const char* TierName(int tier) {
  switch (tier) {
    case 2:
      return "AVX";
    case 3:
      return "AVX2";
    case 4:
      return "AVX-512";
    default:
      return "SSE";
  }
}

}  // namespace

CpuFeatures DetectCpuFeatures() {
  __builtin_cpu_init();
  CpuFeatures cpu;
  cpu.avx = __builtin_cpu_supports("avx");
  cpu.avx2 = __builtin_cpu_supports("avx2");
  cpu.fma = __builtin_cpu_supports("fma");
  cpu.avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return cpu;
}

int KernelTier(const std::string& core) {
  for (const NamedTier& k : kKernels) {
    if (strcasecmp(core.c_str(), k.name) == 0) return k.tier;
  }
  return 0;
}

std::string BestKernel(const CpuFeatures& cpu) {
  if (cpu.avx512 && cpu.avx2 && cpu.fma) return "SkylakeX";
  if (cpu.avx2 && cpu.fma) return "Haswell";
  if (cpu.avx) return "Sandybridge";
  return "";
}

BlasKernelDecision DecideBlasKernel(const std::string& current,
                                    const CpuFeatures& cpu,
                                    const char* user_coretype,
                                    bool reexecuted) {
  BlasKernelDecision d;
  // The user's choice stands; a BLAS that is not OpenBLAS, a kernel name
  // this does not know, or a second start change nothing.
  if (user_coretype != nullptr && user_coretype[0] != '\0') return d;
  if (current.empty() || reexecuted) return d;
  const int tier = KernelTier(current);
  const std::string best = BestKernel(cpu);
  if (tier == 0 || best.empty() || KernelTier(best) <= tier) return d;
  d.reexec = true;
  d.core = best;
  d.message = "OpenBLAS chose its " + current + " (" + TierName(tier) +
              ") kernels on this " + TierName(KernelTier(best)) +
              " CPU; restarting with OPENBLAS_CORETYPE=" + best +
              " (set OPENBLAS_CORETYPE yourself to choose)";
  return d;
}

std::string BlasLibrary() {
  // The loader names the library by the path it opened, e.g. the
  // alternatives symlink /lib/x86_64-linux-gnu/libblas.so.3: resolve it.
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (sgemm == nullptr || dladdr(sgemm, &info) == 0 ||
      info.dli_fname == nullptr) {
    return "unknown (sgemm_ not found)";
  }
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) return info.dli_fname;
  return resolved;
}

std::string CurrentBlasKernel() {
  // OpenBLAS may be loaded (through LAPACK) while another library answers
  // sgemm_ (LD_LIBRARY_PATH, alternatives): only OpenBLAS's own sgemm_
  // runs its kernels. The library answering sgemm_ is OpenBLAS's when it,
  // or a library it depends on, defines openblas_get_corename (Debian's
  // openblas-*/libblas.so.3 is a thin library over libopenblas.so.0),
  // whatever its file is called: a copy under another name, in a folder
  // on LD_LIBRARY_PATH, is still OpenBLAS (dlsym on a handle searches the
  // library and its dependencies, not the whole process). An OpenBLAS
  // linked statically into the program is not recognized (dlopen does not
  // find the program by its file name): the check then changes nothing.
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (sgemm == nullptr || dladdr(sgemm, &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  void* library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (library == nullptr) return "";
  using CoreName = char* (*)();
  auto* name =
      reinterpret_cast<CoreName>(dlsym(library, "openblas_get_corename"));
  dlclose(library);
  if (name == nullptr) return "";
  const char* core = name();
  return core != nullptr ? core : "";
}

bool BlasHasSmallMatrixKernels() {
  static const bool yes = KernelTier(CurrentBlasKernel()) == 4;
  return yes;
}

std::string AddressSpaceLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return "unlimited";
  }
  return std::to_string(limit.rlim_cur) + " bytes (ulimit -v " +
         std::to_string(limit.rlim_cur / 1024) + ")";
}

void CheckBlasWorkBufferRoom() {
  // OpenBLAS's x86-64 BUFFER_SIZE (32 << 22) and its alignment page, as it
  // asks malloc for them, with a margin for what else may be mapped first.
  constexpr size_t kBuffer = (size_t{32} << 22) + 4096;
  constexpr size_t kMargin = size_t{8} << 20;
  void* probe = std::malloc(kBuffer + kMargin);
  if (probe == nullptr) {
    throw std::runtime_error(
        "cannot allocate OpenBLAS's work buffer (" + std::to_string(kBuffer) +
        " bytes, with " + std::to_string(kMargin) +
        " to spare): " + std::strerror(ENOMEM) + "; address-space limit " +
        AddressSpaceLimit() + ": raise it (ulimit -v) or free memory");
  }
  std::free(probe);
}

void ReserveBlasWorkBuffer() {
  static bool reserved = false;
  if (reserved || CurrentBlasKernel().empty()) return;
  CheckBlasWorkBufferRoom();
  // A product too large for OpenBLAS's small-matrix kernels: it takes the
  // buffer from its allocator and keeps it for the life of the process.
  using Sgemm =
      void (*)(const char*, const char*, const int*, const int*, const int*,
               const float*, const float*, const int*, const float*, const int*,
               const float*, float*, const int*);
  auto* sgemm = reinterpret_cast<Sgemm>(dlsym(RTLD_DEFAULT, "sgemm_"));
  if (sgemm != nullptr) {
    constexpr int kN = 256;
    std::vector<float> a(kN * kN, 0.0f), c(kN * kN, 0.0f);
    const float one = 1.0f, zero = 0.0f;
    const int n = kN;
    sgemm("N", "N", &n, &n, &n, &one, a.data(), &n, a.data(), &n, &zero,
          c.data(), &n);
  }
  reserved = true;
}

void EnsureBestBlasKernel(int argc, const char* const* argv) {
  const char* keep = std::getenv("ASYNCRL_BLAS_KERNEL");
  if (keep != nullptr && std::strcmp(keep, "keep") == 0) return;
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if (std::getenv(kTestForcedVar) != nullptr) user = nullptr;
  const BlasKernelDecision d =
      DecideBlasKernel(CurrentBlasKernel(), DetectCpuFeatures(), user,
                       std::getenv(kReexecVar) != nullptr);
  if (!d.reexec) return;
  Log(LogLevel::kInfo, d.message);
  setenv("OPENBLAS_CORETYPE", d.core.c_str(), 1);
  setenv(kReexecVar, "1", 1);
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) args.push_back(const_cast<char*>(argv[i]));
  args.push_back(nullptr);
  execv("/proc/self/exe", args.data());
  // Still here: carry on with the kernel OpenBLAS chose.
  Log(LogLevel::kWarning, std::string("could not restart (") +
                              std::strerror(errno) + "); running with " +
                              "OpenBLAS's own kernel choice");
  unsetenv(kReexecVar);
}

}  // namespace asyncrl
