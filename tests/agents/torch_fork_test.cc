// LibTorch after fork: the parent does real tensor work (a large matmul and a
// backward pass), then children run forward and backward. With the thread
// settings of ConfigureTorchForFork the children never hang on an inherited
// thread pool.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/misc/blas_kernel.h"
#include "asyncrl/misc/process_group.h"

namespace asyncrl {
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

TEST(TorchSetupTest, LibTorchRunsOnOpenBlas) {
  // The reference BLAS is ~6x slower at batch 8: scripts/install-deps.sh
  // must have selected OpenBLAS.
  ConfigureTorchForFork();
  torch::mm(torch::ones({8, 8}), torch::ones({8, 8}));  // Loads the BLAS.
  EXPECT_NE(BlasLibrary().find("openblas"), std::string::npos)
      << "LibTorch calls " << BlasLibrary();
}

}  // namespace
}  // namespace asyncrl
