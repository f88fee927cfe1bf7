// The fast path's convolution trunk (agents/dense_conv.cc) against
// LibTorch and autograd in double, for the archs with a convolution:
// frames mostly of empty lines through the sparse route or im2col and
// gemm, with and without room to keep the columns.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/conv_models.h"
#include "asyncrl/agents/dense_path.h"
#include "asyncrl/agents/distributions.h"
#include "asyncrl/agents/torch_setup.h"
#include "dense_test_support.h"
#include "gradient_check.h"

namespace asyncrl {
namespace dense_path_test {
namespace {

// DensePathTest's archs with a convolution (ConvCases).
class DenseConvPathTest : public DensePathTest {};

// Frames mostly of lines of zeros (MinAtar's): the first convolution over
// the lines that are set, or as im2col and gemm, or as the rows decide
// (kAuto, which takes the sparse route for these frames), with and without
// room for the columns, and switched between the forward and the backward
// pass or from one piece to the next (a piece forwarded sparse keeps no
// columns, so the backward pass builds them again or takes the sparse
// route): all equal LibTorch and autograd in double.

TEST_P(DenseConvPathTest, SparseInputsEqualLibTorchEitherRoute) {
  ASSERT_FALSE(layout_.convs.empty()) << GetParam().name;
  using Sparse = DenseActorCritic<double>::SparseInputs;
  constexpr int64_t kBackRows = 5;
  SetSparseFrames();
  const double* rows = obs_.data_ptr<double>();
  const ModelOutput want = reference_->Forward(obs_);
  const int64_t p = layout_.policy_size();
  const std::vector<double> want_policy =
      Doubles(PolicyOutput(want).slice(0, 0, 5));
  const std::vector<double> want_values = Doubles(want.value);
  const ReferenceBackward ref =
      BackwardOfReference(obs_.slice(0, 0, kBackRows));
  const torch::Tensor& d_policy = ref.d_policy;
  const torch::Tensor& d_values = ref.d_values;
  const std::vector<double>& want_grads = ref.grads;
  {
    // The frames are sparse enough for the sparse route, and dense ones
    // are not.
    DenseActorCritic<double> fast(layout_);
    EXPECT_TRUE(fast.SparseRoute(rows, kRows));
    const torch::Tensor dense = torch::randn_like(obs_);
    EXPECT_FALSE(fast.SparseRoute(dense.data_ptr<double>(), kRows));
  }
  auto expect_all = [&](DenseActorCritic<double>& fast, Sparse backward) {
    EXPECT_LE(RelativeDifference(
                  std::vector<double>(fast.policy(), fast.policy() + 5 * p),
                  want_policy),
              1e-12);
    EXPECT_LE(RelativeDifference(
                  std::vector<double>(fast.values(), fast.values() + kRows),
                  want_values),
              1e-12);
    fast.set_sparse_inputs(backward);
    std::vector<double> grads(params_.size(), 0.0);
    fast.Backward(params_.data(), rows, kBackRows, d_policy.data_ptr<double>(),
                  d_values.data_ptr<double>(), grads.data());
    EXPECT_LE(RelativeDifference(grads, want_grads), 1e-12);
  };
  const std::vector<std::pair<const char*, Sparse>> modes = {
      {"sparse", Sparse::kAlways},
      {"dense", Sparse::kNever},
      {"auto", Sparse::kAuto}};
  // With room for the columns, a dense forward pass keeps them and the
  // update reads them whatever its mode; without, the update takes its
  // own mode's route.
  for (const bool room : {true, false}) {
    for (const auto& [forward_name, forward] : modes) {
      for (const auto& [backward_name, backward] : modes) {
        SCOPED_TRACE(std::string("forward ") + forward_name + ", backward " +
                     backward_name + (room ? "" : ", no columns kept"));
        DenseActorCritic<double> fast(layout_);
        if (!room) fast.set_kept_columns_bytes(0);
        fast.set_sparse_inputs(forward);
        ForwardInPieces(fast);
        expect_all(fast, backward);
      }
    }
  }
  for (const auto& [backward_name, backward] : modes) {
    // Row 0 dense (its columns kept), rows 1-2 sparse, rows 3-6 dense
    // again: only row 0's columns are kept, so the update over 5 rows
    // builds the columns again or takes the sparse route.
    SCOPED_TRACE(std::string("routes mixed between pieces, backward ") +
                 backward_name);
    DenseActorCritic<double> fast(layout_);
    const int64_t o = GetParam().obs_size;
    fast.set_sparse_inputs(Sparse::kNever);
    fast.Forward(params_.data(), rows, 1);
    fast.set_sparse_inputs(Sparse::kAlways);
    fast.Forward(params_.data(), rows + o, 2, 1);
    fast.set_sparse_inputs(Sparse::kNever);
    fast.Forward(params_.data(), rows + 3 * o, 2, 3);
    fast.Forward(params_.data(), rows + 5 * o, 2, 5, /*with_policy=*/false);
    expect_all(fast, backward);
  }
}

// The float loops (fast_math.cc's vector clones, MinAtar's shape folded at
// compile time for minatar_conv) against LibTorch in double, the sparse
// route and im2col each forced, within the float tolerance.
TEST_P(DenseConvPathTest,
       FloatSparseRouteMatchesDoubleWithinTheFloatTolerance) {
  using Sparse = DenseActorCritic<float>::SparseInputs;
  constexpr int64_t kBackRows = 5;
  SetSparseFrames();
  const torch::Tensor obs = obs_.to(torch::kFloat).contiguous();
  const int64_t p = layout_.policy_size();
  const ModelOutput want = reference_->Forward(obs_);
  const ReferenceBackward ref =
      BackwardOfReference(obs_.slice(0, 0, kBackRows));
  const torch::Tensor want_grads = torch::tensor(ref.grads);
  const torch::Tensor d_policy_f = ref.d_policy.to(torch::kFloat).contiguous();
  const torch::Tensor d_values_f = ref.d_values.to(torch::kFloat).contiguous();
  for (const Sparse mode : {Sparse::kAlways, Sparse::kNever}) {
    SCOPED_TRACE(mode == Sparse::kAlways ? "sparse" : "im2col");
    DenseActorCritic<float> fast(layout_);
    fast.set_sparse_inputs(mode);
    fast.set_kept_columns_bytes(0);  // The update takes the mode's route.
    fast.Forward(flat_->params_data(), obs.data_ptr<float>(), kRows);
    testing::ExpectFloatMatchesDouble(
        torch::from_blob(const_cast<float*>(fast.policy()), {kRows * p}),
        PolicyOutput(want), "policy outputs");
    testing::ExpectFloatMatchesDouble(
        torch::from_blob(const_cast<float*>(fast.values()), {kRows}),
        want.value, "values");
    std::vector<float> grads(params_.size(), 0.0f);
    fast.Backward(flat_->params_data(), obs.data_ptr<float>(), kBackRows,
                  d_policy_f.data_ptr<float>(), d_values_f.data_ptr<float>(),
                  grads.data());
    testing::ExpectFloatMatchesDouble(
        torch::from_blob(grads.data(), {static_cast<int64_t>(grads.size())}),
        want_grads, "gradients");
  }
}

INSTANTIATE_TEST_SUITE_P(ConvArchs, DenseConvPathTest,
                         ::testing::ValuesIn(ConvCases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace dense_path_test
}  // namespace asyncrl
