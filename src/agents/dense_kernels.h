// The fast path's products and element loops (agents/dense_path.h), shared
// by its parts: the MLPs and their orchestration (dense_path.cc), the
// convolution trunk (dense_conv.cc) and the LSTM cells (dense_lstm.cc).
// Internal to those files: one overload or template per scalar (float for
// training, double for the tests' reference precision).
#ifndef ASYNCRL_AGENTS_DENSE_KERNELS_H_
#define ASYNCRL_AGENTS_DENSE_KERNELS_H_

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "asyncrl/agents/fast_math.h"

namespace asyncrl::dense {

// C = A op B (+ C when accumulate), row-major, one overload per scalar.
inline void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 const float* a, int64_t lda, const float* b, int64_t ldb,
                 bool accumulate, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb),
              accumulate ? 1.0f : 0.0f, c, static_cast<int>(ldc));
}

inline void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 const double* a, int64_t lda, const double* b, int64_t ldb,
                 bool accumulate, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0, a,
              static_cast<int>(lda), b, static_cast<int>(ldb),
              accumulate ? 1.0 : 0.0, c, static_cast<int>(ldc));
}

// OpenBLAS's AVX-512 x86-64 kernels (SkylakeX, Cooperlake, SapphireRapids)
// have small-matrix kernels: a product of m n k <= 1e6, of a shape they
// accept, is computed without packing either operand. Its generic gemm
// packs both on every call, which for the few rows of acting, or a
// product with a long k and a small result, costs about as much as the
// arithmetic. So with those kernels the products below are cut into
// pieces the small kernels were measured to take; with the others
// (Haswell, Sandybridge, the SSE ones: no small-matrix kernels in 0.3.21)
// they stay whole, as the pieces would only add calls. Measured with
// cblas_sgemm alone, Cooperlake kernel / Haswell kernel: 16 rows x
// Linear(1024, 128) as W x^T 37.0 -> 25.0 us in blocks of 32 outputs
// (Haswell: 51.0 whole, 60.1 in blocks); 16 x 128 -> 512 15.3 -> 12.6
// (25.0 / 30.3); 13 x 128 -> 512 26.8 -> 10.9 (that session's figures,
// for the route few rows took until DirectSmallBlock, below, replaced it:
// faster in the loops, measured there); minatar-conv's weight
// gradient, [16, 36] over k = 5120, 96.8 -> 41.0 us in 4 pieces of k
// (Haswell 105 either way).
// The small kernels' limits as OpenBLAS 0.3.21 checks them (its
// sgemm_small_matrix_permit for these kernels): m n k <= 1e6, and for a
// row-major product whose second operand is transposed (its column-major
// "TN" case: x W^T, W x^T and the convolutions' weight gradients), also a
// result of at most 1200 elements and k >= 32. d h_prev (neither
// transposed) and the weight gradients dY^T X (the first transposed) have
// no further limit; both transposed ("TT") has no small kernel.
inline constexpr int64_t kSmallProduct = 1000000;
inline constexpr int64_t kSmallResult = 1200;
inline constexpr int64_t kSmallMinK = 32;

// y += W x for one row: gemv skips gemm's packing, which dominates at 1 row.
inline void GemvAccumulate(int64_t out, int64_t in, const float* w,
                           const float* x, float* y) {
  cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(out),
              static_cast<int>(in), 1.0f, w, static_cast<int>(in), x, 1, 1.0f,
              y, 1);
}

inline void GemvAccumulate(int64_t out, int64_t in, const double* w,
                           const double* x, double* y) {
  cblas_dgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(out),
              static_cast<int>(in), 1.0, w, static_cast<int>(in), x, 1, 1.0, y,
              1);
}

// With the small-matrix kernels, x W^T for up to ~37 rows (an agent's
// environments while acting) goes whole where the kernels take it (a
// result of at most 1200 elements, m n k <= 1e6, k >= 32), else in blocks
// of outputs they take: a multiple of 16, at least 32, about equal (the
// last takes the remainder). The block, or 0 where none qualifies.
// Measured with cblas_sgemm alone (Cooperlake kernel, a later session than
// the figures above; scratch and transposition included), against W x^T in
// blocks of 32 outputs transposed into y (the route before): 16 rows x 128
// -> 512 (an LSTM's gates) 16.6 -> 14.3 us, 16 x 200 -> 512 27.8 -> 24.3,
// 16 x Linear(200, 200) 10.7 -> 9.2, 13 rows x 128 -> 512 15.3 -> 13.6, 8 x
// Linear(1024, 128) 16.6 -> 15.3, 32 x 128 -> 512 36.5 -> 28.7; 16 x
// Linear(1024, 128) (blocks of 48) 33.9 -> 34.1. Blocks of 16 (40 rows and
// more) were slower as often as faster.
inline int64_t DirectSmallBlock(int64_t rows, int64_t out, int64_t in) {
  if (rows < 2 || in < kSmallMinK) return 0;
  const int64_t cap =
      std::min(kSmallResult / rows, kSmallProduct / (rows * in));
  if (out <= cap) return out;
  const int64_t most = cap / 16 * 16;
  if (most < 32) return 0;
  const int64_t blocks = (out + most - 1) / most;
  return ((out + blocks - 1) / blocks + 15) / 16 * 16;
}

// y += x W^T for `rows` rows of x ([rows, in], rows `ldx` apart) and W
// ([out, in], row-major); y [rows, out], rows `ldy` apart. gemv for one
// row (gemm's packing dominates there); with the small-matrix kernels,
// blocks of outputs where they take them (above). Otherwise, for a few rows
// and many outputs, gemm as W x^T ([out, rows], through `scratch`) then
// transposed into y: OpenBLAS packs the operand on gemm's m side for every
// call, and W there costs ~2x the product itself. Measured with
// cblas_sgemm alone, 16 rows x Linear(1024, 128) (minatar-conv's trunk
// while acting with 16 environments): 61 -> 36 us (SkylakeX kernel), 61 ->
// 51 us (Haswell); 16 x Linear(200, 200) 14.1 -> 10.3 us; 16 x 128 -> 512
// (an LSTM's recurrent gates) 21.5 -> 16.1 us (those with the SkylakeX
// kernel predate the small-matrix kernels' use: such shapes take
// DirectSmallBlock's blocks there now); at 80 rows both ways are within
// 5%, and with few outputs (the heads) the direct product is faster.
template <typename T>
void RowsTimesWeights(const T* w, const T* x, int64_t ldx, int64_t rows,
                      int64_t out, int64_t in, T* y, int64_t ldy,
                      std::vector<T>* scratch, bool small_products) {
  if (rows <= 0) return;
  const int64_t block = small_products ? DirectSmallBlock(rows, out, in) : 0;
  if (rows == 1) {
    GemvAccumulate(out, in, w, x, y);
  } else if (block > 0) {
    for (int64_t j = 0; j < out; j += block) {
      Gemm(false, true, rows, std::min(block, out - j), in, x, ldx, w + j * in,
           in, /*accumulate=*/true, y + j, ldy);
    }
  } else if (out >= 32 && out >= 4 * rows) {
    scratch->resize(static_cast<size_t>(out * rows));
    T* t = scratch->data();
    Gemm(false, true, out, rows, in, w, in, x, ldx, /*accumulate=*/false, t,
         rows);
    for (int64_t r = 0; r < rows; ++r) {
      T* dst = y + r * ldy;
      for (int64_t o = 0; o < out; ++o) dst[o] += t[o * rows + r];
    }
  } else {
    Gemm(false, true, rows, out, in, x, ldx, w, in, /*accumulate=*/true, y,
         ldy);
  }
}

// C = A^T B ([m, n]; A [k, m], B [k, n], row-major): a layer's weight
// gradient over the k rows of an update. With the small-matrix kernels,
// when the product is over their limit, in pieces of at most 128 rows of C
// that they take (m n k <= 1e6), where that allows pieces of 64 columns or
// more (about equal, each a multiple of 16 but the last): the
// generic gemm packs both operands and, writing C, first zeroes all of it.
// Measured with cblas_sgemm alone (Cooperlake kernel), over k = 80 (16
// environments, 5 steps): [512, 128] 71.2 -> 58.0 us (an LSTM's dW_hh),
// [512, 200] 97.8 -> 92.0 (fc-*-lstm's dW_ih), [128, 1024] 155.7 -> 144.0
// (minatar-conv's trunk), [128, 128] 17.7 -> 14.2; over k = 48 8-16%
// faster. From k = 123 (e.g. k = 160, or PPO's minibatches of 128 rows)
// the pieces would be narrower than 64 columns, and those were as often
// slower (up to 1.4x) as faster: the product stays whole.
template <typename T>
void WeightGradient(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                    const T* b, int64_t ldb, T* c, int64_t ldc,
                    bool small_products) {
  int64_t piece_m = m;
  int64_t piece_n = n;
  if (small_products && m * n * k > kSmallProduct) {
    const int64_t m_pieces = (m + 127) / 128;
    const int64_t rows = (m + m_pieces - 1) / m_pieces;
    int64_t most = kSmallProduct / (rows * k);
    if (most < n) most = most / 16 * 16;
    if (most >= 64 || most >= n) {
      piece_m = rows;
      const int64_t n_pieces = (n + most - 1) / most;
      piece_n = (n + n_pieces - 1) / n_pieces;
      // Rounded up to a multiple of 16: still at most `most`, itself a
      // multiple of 16 here (n_pieces > 1).
      if (piece_n < n) piece_n = (piece_n + 15) / 16 * 16;
    }
  }
  for (int64_t i = 0; i < m; i += piece_m) {
    for (int64_t j = 0; j < n; j += piece_n) {
      Gemm(true, false, std::min(piece_m, m - i), std::min(piece_n, n - j), k,
           a + i, lda, b + j, ldb, /*accumulate=*/false, c + i * ldc + j, ldc);
    }
  }
}

// y = x W^T + b for `rows` rows (the bias written first and the product
// added, as addmm does).
template <typename T>
void AffineRows(const T* w, const T* bias, const T* x, int64_t rows,
                int64_t out, int64_t in, T* y, std::vector<T>* scratch,
                bool small_products) {
  for (int64_t r = 0; r < rows; ++r) std::copy(bias, bias + out, y + r * out);
  RowsTimesWeights(w, x, in, rows, out, in, y, out, scratch, small_products);
}

// dst[i] = src[i] * scale for i < n; the two do not overlap.
template <typename T>
inline void ScaledRun(const T* __restrict__ src, int64_t n, T scale,
                      T* __restrict__ dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * scale;
}

// dst[i] = act[i] > 0 ? d[i] : 0 (through a ReLU whose outputs are act) and
// partial[i] += dst[i], for i < n; none of them overlap.
template <typename T>
inline void ReluMaskAndSum(const T* __restrict__ act, const T* __restrict__ d,
                           int64_t n, T* __restrict__ dst,
                           T* __restrict__ partial) {
  for (int64_t i = 0; i < n; ++i) {
    // Both loaded unconditionally, so this is a select the compiler
    // vectorizes, not a branch on the (random) signs.
    const T a = act[i];
    const T g = d[i];
    const T v = a > T{0} ? g : T{0};
    dst[i] = v;
    partial[i] += v;
  }
}

// The column sums of [rows, cols] `d` (a bias's gradient) into `out`.
template <typename T>
void ColumnSums(const T* d, int64_t rows, int64_t cols, T* out) {
  std::fill(out, out + cols, T{0});
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = d + r * cols;
    for (int64_t j = 0; j < cols; ++j) out[j] += row[j];
  }
}

// d through the ReLU whose outputs are `x`. A select, not a branch: the
// signs are random, and a mispredicted branch per element cost ~10% of a
// 16-environment update.
template <typename T>
void ReluBackward(const T* x, int64_t count, T* d) {
  for (int64_t i = 0; i < count; ++i) d[i] = x[i] > T{0} ? d[i] : T{0};
}

// The activations over arrays, in place: float through agents/fast_math.h
// (vectorized; glibc's scalar expf/exp calls and the gate loop around them
// took 19% of the fc-softmax-lstm loop with 16 environments, perf); double
// through std::exp and std::tanh, the tests' reference precision.
inline void SigmoidInPlace(float* x, int64_t n) {
  fast_math::SigmoidInPlace(x, n);
}
inline void SigmoidInPlace(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 1.0 / (1.0 + std::exp(-x[i]));
}
inline void TanhInPlace(float* x, int64_t n) { fast_math::TanhInPlace(x, n); }
inline void TanhInPlace(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
}

}  // namespace asyncrl::dense

#endif  // ASYNCRL_AGENTS_DENSE_KERNELS_H_
