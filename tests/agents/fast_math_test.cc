// agents/fast_math.h: the vectorized float exp, sigmoid and tanh against
// double precision, in float ulps of the exact value, on a grid over the
// range the fast path meets (and beyond, where they saturate).
#include "asyncrl/agents/fast_math.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <functional>
#include <vector>

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace fast_math_test {
namespace {

// |got - exact| in units of the float spacing at `exact`; under float's
// smallest normal number, in units of that number (a flush to zero may take
// such results).
double Ulps(float got, double exact) {
  if (std::abs(exact) < FLT_MIN) return std::abs(got - exact) / FLT_MIN;
  // The spacing from the exponent, in double: other tests of this program
  // flush float denormals to zero in this thread (ConfigureTorchForFork),
  // and a float subtraction of neighbours near FLT_MIN would give 0.
  const float rounded = std::abs(static_cast<float>(exact));
  const double ulp = std::ldexp(1.0, std::ilogb(rounded) - 23);
  return std::abs(static_cast<double>(got) - exact) / ulp;
}

// Every 1/1024 in [lo, hi], then +-10^-30 ... 1 by factors of 1.01 (where
// tanh's polynomial and the cancellations live).
std::vector<float> Grid(double lo, double hi) {
  std::vector<float> x;
  for (double v = lo; v <= hi; v += 1.0 / 1024)
    x.push_back(static_cast<float>(v));
  for (double v = 1e-30; v < 1; v *= 1.01) {
    x.push_back(static_cast<float>(v));
    x.push_back(static_cast<float>(-v));
  }
  x.push_back(0.0F);
  // An odd length, so that the vector loops' remainder runs too.
  if (x.size() % 2 == 0) x.push_back(0.25F);
  return x;
}

// The largest error of `apply` over `x` against `exact`; `at` gets the
// argument where it was.
double MaxUlps(const std::vector<float>& x,
               const std::function<void(float*, int64_t)>& apply,
               const std::function<double(double)>& exact, float* at) {
  std::vector<float> y(x);
  apply(y.data(), static_cast<int64_t>(y.size()));
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = Ulps(y[i], exact(x[i]));
    if (e > worst) {
      worst = e;
      *at = x[i];
    }
  }
  return worst;
}

TEST(FastMathTest, ExpWithinOneAndAHalfUlps) {
  float at = 0;
  const double worst = MaxUlps(
      Grid(-87.33, 88.0), fast_math::ExpInPlace,
      [](double v) { return std::exp(v); }, &at);
  EXPECT_LE(worst, 1.5) << "at x = " << at;
}

TEST(FastMathTest, ExpClampsOutsideFloatsRange) {
  std::vector<float> x = {88.0F, 100.0F, 1e30F, -87.0F, -100.0F, -1e30F};
  fast_math::ExpInPlace(x.data(), static_cast<int64_t>(x.size()));
  const float e88 = static_cast<float>(std::exp(88.0));
  EXPECT_NEAR(x[0], e88, e88 * 1e-6);
  EXPECT_EQ(x[1], x[0]);
  EXPECT_EQ(x[2], x[0]);
  EXPECT_TRUE(std::isfinite(x[2]));
  EXPECT_NEAR(x[3], std::exp(-87.0), std::exp(-87.0) * 1e-6);
  for (int i : {4, 5}) {
    EXPECT_GE(x[i], 0.0F) << i;
    EXPECT_LE(x[i], 1.0001F * FLT_MIN) << i;
  }
}

TEST(FastMathTest, SigmoidWithinThreeUlps) {
  float at = 0;
  const double worst = MaxUlps(
      Grid(-100.0, 100.0), fast_math::SigmoidInPlace,
      [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, &at);
  EXPECT_LE(worst, 3.0) << "at x = " << at;
  std::vector<float> ends = {-1e30F, 1e30F, 0.0F};
  fast_math::SigmoidInPlace(ends.data(), 3);
  EXPECT_LE(ends[0], FLT_MIN);
  EXPECT_GE(ends[0], 0.0F);
  EXPECT_EQ(ends[1], 1.0F);
  EXPECT_EQ(ends[2], 0.5F);
}

TEST(FastMathTest, TanhWithinTwoUlpsAndOdd) {
  float at = 0;
  const std::vector<float> x = Grid(-30.0, 30.0);
  const double worst = MaxUlps(
      x, fast_math::TanhInPlace, [](double v) { return std::tanh(v); }, &at);
  EXPECT_LE(worst, 2.0) << "at x = " << at;
  // Odd to the bit, exact at 0 and saturating at +-1.
  std::vector<float> pos, neg;
  for (float v : x) {
    if (v > 0) {
      pos.push_back(v);
      neg.push_back(-v);
    }
  }
  fast_math::TanhInPlace(pos.data(), static_cast<int64_t>(pos.size()));
  fast_math::TanhInPlace(neg.data(), static_cast<int64_t>(neg.size()));
  for (size_t i = 0; i < pos.size(); ++i) ASSERT_EQ(neg[i], -pos[i]) << i;
  std::vector<float> ends = {0.0F, 50.0F, -50.0F, 1e30F, -1e30F};
  fast_math::TanhInPlace(ends.data(), 5);
  EXPECT_EQ(ends[0], 0.0F);
  EXPECT_EQ(ends[1], 1.0F);
  EXPECT_EQ(ends[2], -1.0F);
  EXPECT_EQ(ends[3], 1.0F);
  EXPECT_EQ(ends[4], -1.0F);
}

}  // namespace
}  // namespace fast_math_test
}  // namespace asyncrl
