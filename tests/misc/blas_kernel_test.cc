// The OpenBLAS kernel check: kernel names and tiers, the best kernel for a
// CPU, the decision (only OpenBLAS's own generic choice on a wider CPU is
// replaced; a user's OPENBLAS_CORETYPE, another BLAS and a second start
// are left alone), and a real restart: train_a3c started on the generic
// Prescott kernels ends on the widest one this CPU runs. OpenBLAS's work
// buffer: taken up front, or a one-line error where OpenBLAS would retry
// its allocation for ever.
#include "asyncrl/misc/platform/blas_kernel.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "../experiments/test_basics.h"
#include "test_paths.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace blas_kernel_test {
namespace {

CpuFeatures Avx512() { return {true, true, true, true}; }
CpuFeatures Avx2() { return {true, true, true, false}; }
CpuFeatures AvxOnly() { return {true, false, false, false}; }
CpuFeatures SseOnly() { return {}; }

// In a child whose address space has 64 MiB to spare, fewer than the
// buffer needs: the check ReserveBlasWorkBuffer makes first throws a line
// naming the buffer and the limit (OpenBLAS itself, at its first larger
// product, would spin). (The check itself: ReserveBlasWorkBuffer does it
// once per process.)
TEST(ReserveBlasWorkBufferTest, TooLittleAddressSpaceIsAnErrorNotAHang) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory needs RLIMIT_AS unset";
#endif
  if (CurrentBlasKernel().empty()) GTEST_SKIP() << "the BLAS is not OpenBLAS";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    size_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t size =
        pages * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{64} << 20);
    const rlimit limit{size, size};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(5);
    try {
      CheckBlasWorkBufferRoom();
      _exit(3);  // It found the memory after all.
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      const bool ok = m.find("OpenBLAS's work buffer") != std::string::npos &&
                      m.find("ulimit -v " + std::to_string(size / 1024)) !=
                          std::string::npos &&
                      m.find('\n') == std::string::npos;
      _exit(ok ? 0 : 4);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "3: no error, 4: the message lacks what it should name, "
         "5: setrlimit failed";
}

TEST(ReserveBlasWorkBufferTest, WithRoomTheCheckPasses) {
  EXPECT_NO_THROW(CheckBlasWorkBufferRoom());
}

TEST(BlasKernelTest, TiersFollowTheKernelsInstructionSets) {
  EXPECT_EQ(KernelTier("Prescott"), 1);
  EXPECT_EQ(KernelTier("Nehalem"), 1);
  EXPECT_EQ(KernelTier("Sandybridge"), 2);
  EXPECT_EQ(KernelTier("Haswell"), 3);
  EXPECT_EQ(KernelTier("Zen"), 3);
  EXPECT_EQ(KernelTier("SkylakeX"), 4);
  EXPECT_EQ(KernelTier("COOPERLAKE"), 4);  // Case-insensitive.
  EXPECT_EQ(KernelTier("Neoverse"), 0);    // Not an x86-64 kernel.
  EXPECT_EQ(KernelTier(""), 0);
}

TEST(BlasKernelTest, BestKernelIsTheWidestTheCpuRuns) {
  EXPECT_EQ(BestKernel(Avx512()), "SkylakeX");
  EXPECT_EQ(BestKernel(Avx2()), "Haswell");
  EXPECT_EQ(BestKernel(AvxOnly()), "Sandybridge");
  EXPECT_EQ(BestKernel(SseOnly()), "");
  // AVX2 without FMA (no such Intel or AMD CPU, but cpuid allows it): the
  // Haswell kernels use FMA, so AVX is what is safe.
  EXPECT_EQ(BestKernel({true, true, false, false}), "Sandybridge");
}

TEST(BlasKernelTest, ReplacesOnlyOpenBlasOwnNarrowerChoice) {
  // The filed case: Prescott on an AVX-512 Xeon.
  BlasKernelDecision d = DecideBlasKernel("Prescott", Avx512(), nullptr, false);
  EXPECT_TRUE(d.reexec);
  EXPECT_EQ(d.core, "SkylakeX");
  EXPECT_EQ(d.message,
            "OpenBLAS chose its Prescott (SSE) kernels on this AVX-512 CPU; "
            "restarting with OPENBLAS_CORETYPE=SkylakeX (set "
            "OPENBLAS_CORETYPE yourself to choose)");
  d = DecideBlasKernel("Haswell", Avx512(), "", false);  // Empty: not set.
  EXPECT_TRUE(d.reexec);
  EXPECT_EQ(d.core, "SkylakeX");
  d = DecideBlasKernel("Nehalem", Avx2(), nullptr, false);
  EXPECT_TRUE(d.reexec);
  EXPECT_EQ(d.core, "Haswell");

  // Left alone: the right tier already (whatever its name), a CPU with
  // nothing wider, the user's own choice, another BLAS, an unknown kernel
  // name, and the re-executed process itself.
  for (const char* core : {"SkylakeX", "Cooperlake"}) {
    EXPECT_FALSE(DecideBlasKernel(core, Avx512(), nullptr, false).reexec)
        << core;
  }
  EXPECT_FALSE(DecideBlasKernel("Zen", Avx2(), nullptr, false).reexec);
  EXPECT_FALSE(DecideBlasKernel("Prescott", SseOnly(), nullptr, false).reexec);
  EXPECT_FALSE(
      DecideBlasKernel("Prescott", Avx512(), "Prescott", false).reexec);
  EXPECT_FALSE(DecideBlasKernel("", Avx512(), nullptr, false).reexec);
  EXPECT_FALSE(DecideBlasKernel("Mystery", Avx512(), nullptr, false).reexec);
  EXPECT_FALSE(DecideBlasKernel("Prescott", Avx512(), nullptr, true).reexec);
}

testing::ProcessRun Shell(const std::string& command) {
  return testing::Exec(command, "");
}

// The suite runs with ASYNCRL_BLAS_KERNEL=keep (tests/CMakeLists.txt).
std::string CleanEnv() {
  return "env -u ASYNCRL_BLAS_KERNEL -u ASYNCRL_BLAS_REEXEC ";
}

// The file of the library that defines openblas_get_corename ("" if none
// is loaded): OpenBLAS itself, under the library answering sgemm_.
std::string OpenBlasItself() {
  void* symbol = dlsym(RTLD_DEFAULT, "openblas_get_corename");
  Dl_info info{};
  if (symbol == nullptr || dladdr(symbol, &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  return std::filesystem::canonical(info.dli_fname).string();
}

TEST(BlasKernelTest, AProgramStartedOnGenericKernelsRestartsOnTheBestOne) {
  const std::string best = BestKernel(DetectCpuFeatures());
  if (BlasLibrary().find("openblas") == std::string::npos || best.empty()) {
    GTEST_SKIP() << "the BLAS is " << BlasLibrary()
                 << ", not OpenBLAS, or this CPU has only SSE";
  }
  // OpenBLAS answers sgemm_ here: the check must see its kernel.
  ASSERT_NE(CurrentBlasKernel(), "");
  // So does an OpenBLAS loaded under names that do not say so: the
  // library answering sgemm_ and its OpenBLAS copied to a folder of their
  // own, found through LD_LIBRARY_PATH (as a bundle of libraries carried
  // to another machine is). The check used to go by "openblas" in the
  // path and let such a program run on the generic kernels.
  const testing::TempDir bundle("blas_bundle");
  // As train_a3c prints it: resolved (the temporary folder may be a link).
  const std::string folder = std::filesystem::canonical(bundle.path());
  const std::string openblas = OpenBlasItself();
  ASSERT_FALSE(openblas.empty());
  std::filesystem::copy_file(BlasLibrary(), folder + "/libblas.so.3");
  std::filesystem::copy_file(openblas, folder + "/libopenblas.so.0");
  const char* old_path = std::getenv("LD_LIBRARY_PATH");
  const std::string path = folder + (old_path != nullptr && old_path[0] != '\0'
                                         ? ":" + std::string(old_path)
                                         : "");
  const testing::ProcessRun moved = Shell(
      CleanEnv() + "LD_LIBRARY_PATH='" + path +
      "' OPENBLAS_CORETYPE=Prescott ASYNCRL_BLAS_TEST_FORCED_CORETYPE=1 " +
      std::string(TRAIN_A3C_BIN) + " --version");
  ASSERT_EQ(moved.status, 0) << moved.output;
  EXPECT_NE(moved.output.find("blas: " + folder +
                              "/libblas.so.3 (OpenBLAS kernel " + best + ")\n"),
            std::string::npos)
      << moved.output;
  EXPECT_NE(moved.output.find("OpenBLAS chose its Prescott (SSE) kernels"),
            std::string::npos)
      << moved.output;
  const std::string clean = CleanEnv();
  const std::string bin = TRAIN_A3C_BIN;
  // OpenBLAS loads on Prescott, as on a CPU newer than itself.
  const testing::ProcessRun generic =
      Shell(clean +
            "OPENBLAS_CORETYPE=Prescott "
            "ASYNCRL_BLAS_TEST_FORCED_CORETYPE=1 " +
            bin + " --version");
  ASSERT_EQ(generic.status, 0) << generic.output;
  EXPECT_NE(generic.output.find("OpenBLAS chose its Prescott (SSE) kernels"),
            std::string::npos)
      << generic.output;
  EXPECT_NE(generic.output.find("(OpenBLAS kernel " + best + ")\n"),
            std::string::npos)
      << generic.output;
  // The restart line is printed once.
  EXPECT_EQ(generic.output.find("restarting"),
            generic.output.rfind("restarting"));

  // The user's own Prescott stays, silently.
  const testing::ProcessRun user =
      Shell(clean + "OPENBLAS_CORETYPE=Prescott " + bin + " --version");
  ASSERT_EQ(user.status, 0) << user.output;
  EXPECT_EQ(user.output.find("restarting"), std::string::npos) << user.output;
  EXPECT_NE(user.output.find("(OpenBLAS kernel Prescott)\n"), std::string::npos)
      << user.output;
  // Another library answering sgemm_ (BLIS or the reference BLAS, where
  // installed) is left alone although OpenBLAS is loaded too (through
  // LAPACK).
  for (const std::string other_blas : {"/usr/lib/x86_64-linux-gnu/blis-serial",
                                       "/usr/lib/x86_64-linux-gnu/blas"}) {
    if (!std::filesystem::exists(other_blas + "/libblas.so.3")) continue;
    const testing::ProcessRun other = Shell(
        clean + "LD_LIBRARY_PATH=" + other_blas +
        " OPENBLAS_CORETYPE=Prescott ASYNCRL_BLAS_TEST_FORCED_CORETYPE=1 " +
        bin + " --version");
    EXPECT_EQ(other.output.find("restarting"), std::string::npos)
        << other.output;
    const std::string file =
        std::filesystem::canonical(other_blas + "/libblas.so.3").string();
    EXPECT_NE(other.output.find("blas: " + file + "\n"), std::string::npos)
        << other.output;
  }
  // And ASYNCRL_BLAS_KERNEL=keep keeps OpenBLAS's own choice.
  const testing::ProcessRun keep = Shell(
      "env -u ASYNCRL_BLAS_REEXEC ASYNCRL_BLAS_KERNEL=keep "
      "OPENBLAS_CORETYPE=Prescott ASYNCRL_BLAS_TEST_FORCED_CORETYPE=1 " +
      bin + " --version");
  EXPECT_NE(keep.output.find("(OpenBLAS kernel Prescott)\n"), std::string::npos)
      << keep.output;
}

}  // namespace
}  // namespace blas_kernel_test
}  // namespace asyncrl
