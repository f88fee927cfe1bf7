// exp, the logistic sigmoid and tanh in float over arrays, vectorized: the
// fast path (agents/dense_lstm.cc, dense_kernels.h) applies them to the LSTM
// gates, tanh layers and the Gaussian mean's squashing, where glibc's scalar
// expf and exp calls (one element at a time) and the loops around them took 19%
// of the fc-softmax-lstm loop with 16 environments (perf).
//
// The algorithms are Cephes' single-precision expf and tanhf (S. Moshier):
// exp reduces x by n ln 2 (n = round(x / ln 2), ln 2 in two parts so that
// the reduction is exact), evaluates a degree-5 polynomial on the remainder
// and puts n into the exponent bits; tanh is an odd polynomial below |x| =
// 0.625 and 1 - 2 / (exp(2|x|) + 1) above. Measured against double on a
// grid of the whole range (tests/agents/fast_math_test.cc): exp within 1
// float ulp, tanh 1.3, the sigmoid 2.5; LibTorch's own vectorized kernels
// are of that order too. exp is clamped to [e^-87.34, e^88]: below, the
// result is under float's smallest normal number (a flush to zero takes it
// anyway); above, 2^n would leave the exponent's range.
//
// Compiled for several vector widths (GCC's target_clones: AVX-512, AVX2,
// the SSE2 baseline) without contraction into FMAs, so every CPU computes
// the same bits. Internal to the library: not installed.
#ifndef ASYNCRL_AGENTS_FAST_MATH_H_
#define ASYNCRL_AGENTS_FAST_MATH_H_

#include <cstdint>

#include "asyncrl/agents/conv_geometry.h"

namespace asyncrl {

namespace fast_math {

// x[i] = e^x[i], i < n.
void ExpInPlace(float* x, int64_t n);
// x[i] = 1 / (1 + e^-x[i]).
void SigmoidInPlace(float* x, int64_t n);
// x[i] = tanh(x[i]).
void TanhInPlace(float* x, int64_t n);

// One step of an LSTM cell's backward pass for one sequence, in float
// (agents/lstm_gate_gradients.h says what it computes), vectorized.
void LstmGateGradients(int64_t h, const float* gates, const float* tanh_c,
                       const float* c_prev, const float* d_h, bool carried,
                       const float* carry_h, float* carry_c, float* d_gates);

// The first convolution over the lines of its input that are not all
// zeros, and its weight gradient, in float (agents/sparse_convolution.h
// says what they compute), vectorized.
void SparseConvolution(const ConvGeometry& g, const float* in, int64_t stride,
                       int64_t rows, float scale, const uint8_t* set,
                       const float* w, const float* bias, int64_t* index,
                       float* y);
void SparseConvolutionGradient(const ConvGeometry& g, const float* in,
                               int64_t stride, int64_t rows, float scale,
                               const uint8_t* set, const float* d_out,
                               int64_t* index, float* dw);

}  // namespace fast_math
}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_FAST_MATH_H_
