#include "asyncrl/agents/fast_math.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "asyncrl/agents/lstm_gate_gradients.h"
#include "asyncrl/agents/sparse_convolution.h"
#include "asyncrl/misc/platform/vector_clones.h"

namespace asyncrl {
namespace fast_math {
namespace {

// These are inlined into the loops below, which GCC vectorizes: no calls,
// no branches that survive if-conversion (this file is compiled with
// -fno-trapping-math, so the selects may evaluate both sides), bit casts
// through memcpy.
inline float BitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint32_t FloatToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

inline float Exp(float x) {
  x = x > 88.0F ? 88.0F : x;
  x = x < -87.3365447505531F ? -87.3365447505531F : x;
  // n = round(x / ln 2): adding 1.5 * 2^23 leaves the integer in the low
  // mantissa bits (|n| < 2^22 here).
  const float shifted = x * 1.44269504088896341F + 12582912.0F;
  const float n = shifted - 12582912.0F;
  // (Unsigned: a NaN's bits pass through without overflow, giving NaN.)
  const uint32_t k = FloatToBits(shifted) - 0x4B400000U;
  float r = x - n * 0.693359375F;
  r = r - n * -2.12194440e-4F;
  float p = 1.9875691500e-4F;
  p = p * r + 1.3981999507e-3F;
  p = p * r + 8.3334519073e-3F;
  p = p * r + 4.1665795894e-2F;
  p = p * r + 1.6666665459e-1F;
  p = p * r + 5.0000001201e-1F;
  p = p * r * r + r + 1.0F;
  return p * BitsToFloat((k + 127U) << 23);
}

inline float Tanh(float x) {
  const float a = std::abs(x);
  const float z = x * x;
  float p = -5.70498872745e-3F;
  p = p * z + 2.06390887954e-2F;
  p = p * z - 5.37397155531e-2F;
  p = p * z + 1.33314422036e-1F;
  p = p * z - 3.33332819422e-1F;
  const float small = p * z * x + x;
  const float large = 1.0F - 2.0F / (Exp(2.0F * a) + 1.0F);
  return a < 0.625F ? small : (x < 0.0F ? -large : large);
}

}  // namespace

ASYNCRL_VECTOR_CLONES
void ExpInPlace(float* __restrict__ x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = Exp(x[i]);
}

ASYNCRL_VECTOR_CLONES
void SigmoidInPlace(float* __restrict__ x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 1.0F / (1.0F + Exp(-x[i]));
}

ASYNCRL_VECTOR_CLONES
void TanhInPlace(float* __restrict__ x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = Tanh(x[i]);
}

ASYNCRL_VECTOR_CLONES
void LstmGateGradients(int64_t h, const float* gates, const float* tanh_c,
                       const float* c_prev, const float* d_h, bool carried,
                       const float* carry_h, float* carry_c, float* d_gates) {
  LstmGateGradientsStep(h, gates, tanh_c, c_prev, d_h, carried, carry_h,
                        carry_c, d_gates);
}

ASYNCRL_VECTOR_CLONES
void SparseConvolution(const ConvGeometry& g, const float* in, int64_t stride,
                       int64_t rows, float scale, const uint8_t* set,
                       const float* w, const float* bias, int64_t* index,
                       float* y) {
  SparseConvolutionRows(g, in, stride, rows, scale, set, w, bias, index, y);
}

ASYNCRL_VECTOR_CLONES
void SparseConvolutionGradient(const ConvGeometry& g, const float* in,
                               int64_t stride, int64_t rows, float scale,
                               const uint8_t* set, const float* d_out,
                               int64_t* index, float* dw) {
  SparseConvolutionGradientRows(g, in, stride, rows, scale, set, d_out, index,
                                dw);
}

}  // namespace fast_math
}  // namespace asyncrl
