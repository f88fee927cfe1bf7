// Comparing gradients an agent computed in float32 (its flat buffers are
// float) with a reference formulation computed in double.
//
// Why a tolerance, and this one: the float32 result depends on the order in
// which the BLAS kernel sums (OpenBLAS picks the kernel by CPU: Prescott,
// Haswell, SkylakeX... give different float sums), so exact equality cannot
// hold across machines. The double reference is exact to ~1e-16, so what is
// left is the float32 rounding of the agent's computation. Every gradient
// element is built from sums of products through a few layers; its rounding
// error is bounded by (number of terms) x (unit roundoff 2^-24) x (the
// magnitude of the terms), and the terms are of the order of the largest
// gradient element. So the tolerance is
//   kTerms x 2^-24 x max|reference|,   kTerms = 4096,
// i.e. ~2.4e-4 of the largest gradient: generous for rounding (measured,
// worst test: 1.0e-5 of it with OpenBLAS's Prescott kernels, 2.9e-6 with
// Haswell's and SkylakeX's) and far below a real error (a wrong sign, scale
// or missing term moves elements by O(max|reference|)).
#ifndef ASYNCRL_TESTS_AGENTS_GRADIENT_CHECK_H_
#define ASYNCRL_TESTS_AGENTS_GRADIENT_CHECK_H_

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <utility>
#include <vector>

#include "asyncrl/agents/models.h"

namespace asyncrl::testing {

inline void ExpectFloatMatchesDouble(const torch::Tensor& float_grads,
                                     const torch::Tensor& double_reference,
                                     const std::string& what = "gradients") {
  ASSERT_EQ(float_grads.numel(), double_reference.numel()) << what;
  const torch::Tensor got = float_grads.to(torch::kDouble).flatten();
  const torch::Tensor want = double_reference.to(torch::kDouble).flatten();
  const double scale = want.abs().max().item<double>();
  ASSERT_GT(scale, 0.0) << what << ": the reference gradient is zero";
  constexpr double kTerms = 4096;
  const double tolerance = kTerms * std::ldexp(1.0, -24) * scale;
  const double difference = (got - want).abs().max().item<double>();
  EXPECT_LE(difference, tolerance)
      << what << ": max difference " << difference << " (" << difference / scale
      << " of the largest element " << scale << "); tolerance " << tolerance;
  // Printed so a run shows how much of the tolerance each kernel uses.
  std::cout << "[ numeric  ] " << what << ": max difference "
            << difference / scale << " of max |reference| " << scale
            << " (tolerance " << kTerms * std::ldexp(1.0, -24) << ")\n";
}

// log pi(a) and the entropy of one row of a model's output (a batch of
// one), with autograd: softmax over logits, or a diagonal Gaussian.
inline std::pair<torch::Tensor, torch::Tensor> RowTerms(
    const ModelOutput& out, const std::vector<float>& a) {
  if (out.logits.defined()) {
    const auto lp = torch::log_softmax(out.logits.squeeze(0), -1);
    return {lp[static_cast<int64_t>(a[0])], -(lp.exp() * lp).sum()};
  }
  const auto x = torch::tensor(a).to(torch::kDouble);
  const auto mean = out.mean.squeeze(0);
  const auto log_std = out.log_std.squeeze(0);
  const auto var = torch::exp(2 * log_std);
  return {(-(x - mean).pow(2) / (2 * var) - log_std - 0.5 * std::log(2 * M_PI))
              .sum(),
          (0.5 + 0.5 * std::log(2 * M_PI) + log_std).sum()};
}

}  // namespace asyncrl::testing

#endif  // ASYNCRL_TESTS_AGENTS_GRADIENT_CHECK_H_
