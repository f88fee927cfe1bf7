// LibTorch after fork: the parent does real tensor work (a large matmul and a
// backward pass), then children run forward and backward. With the thread
// settings of ConfigureTorchForFork the children never hang on an inherited
// thread pool.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/misc/platform/blas_kernel.h"
#include "asyncrl/misc/platform/process_group.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace torch_fork_test {
namespace {

TEST(TorchForkTest, ChildrenRunForwardAndBackwardAfterParent) {
  ConfigureTorchForFork();
  EXPECT_EQ(torch::get_num_threads(), 1);
  torch::manual_seed(0);
  auto a = torch::randn({512, 512}, torch::requires_grad());
  auto b = torch::randn({512, 512});
  torch::matmul(a, b).relu().sum().backward();
  ASSERT_TRUE(a.grad().defined());

  ProcessGroupOptions options;
  options.num_workers = 2;
  GroupReport report = RunProcessGroup(options, [](int idx) {
    torch::manual_seed(idx);
    torch::nn::Linear l1(64, 256);
    torch::nn::Linear l2(256, 4);
    auto x = torch::randn({32, 64});
    auto y = torch::randn({512, 512}).matmul(torch::randn({512, 512}));
    auto loss = l2(torch::relu(l1(x))).pow(2).mean() + y.mean() * 0;
    loss.backward();
    if (!l1->weight.grad().defined() ||
        !torch::isfinite(l1->weight.grad()).all().item<bool>()) {
      throw std::runtime_error("gradient missing or not finite");
    }
  });
  for (const auto& w : report.workers) {
    EXPECT_FALSE(w.Failed()) << w.Describe();
  }
  EXPECT_TRUE(report.Ok());
}

// A product whose exact result is denormal, computed where the compiler
// cannot fold it.
float DenormalProduct() {
  volatile float small = 1e-30f;
  volatile float factor = 1e-10f;
  return small * factor;  // 1e-40 is below FLT_MIN (1.2e-38).
}

TEST(TorchSetupTest, DenormalsAreFlushedHereAndInForkedWorkers) {
  ConfigureTorchForFork();
  EXPECT_EQ(DenormalProduct(), 0.0f);
  ProcessGroupOptions options;
  options.num_workers = 1;
  GroupReport report = RunProcessGroup(options, [](int) {
    if (DenormalProduct() != 0.0f) {
      throw std::runtime_error("a worker computes with denormals");
    }
  });
  EXPECT_TRUE(report.Ok()) << report.workers[0].Describe();
}

TEST(TorchSetupTest, LibTorchRunsOnOpenBlas) {
  // The reference BLAS is ~6x slower at batch 8: scripts/install-deps.sh
  // must have selected OpenBLAS.
  ConfigureTorchForFork();
  torch::mm(torch::ones({8, 8}), torch::ones({8, 8}));  // Loads the BLAS.
  EXPECT_NE(BlasLibrary().find("openblas"), std::string::npos)
      << "LibTorch calls " << BlasLibrary();
}

}  // namespace
}  // namespace torch_fork_test
}  // namespace asyncrl
