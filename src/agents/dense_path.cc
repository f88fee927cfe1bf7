#include "asyncrl/agents/dense_path.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "asyncrl/agents/distributions.h"
#include "asyncrl/agents/fast_math.h"
#include "asyncrl/agents/lstm_gate_gradients.h"
#include "asyncrl/agents/sparse_convolution.h"
#include "asyncrl/misc/check.h"

namespace asyncrl {
namespace {

// C = A op B (+ C when accumulate), row-major, one overload per scalar.
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const float* a, int64_t lda, const float* b, int64_t ldb,
          bool accumulate, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb),
              accumulate ? 1.0f : 0.0f, c, static_cast<int>(ldc));
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
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
constexpr int64_t kSmallProduct = 1000000;
constexpr int64_t kSmallResult = 1200;
constexpr int64_t kSmallMinK = 32;

// y += W x for one row: gemv skips gemm's packing, which dominates at 1 row.
void GemvAccumulate(int64_t out, int64_t in, const float* w, const float* x,
                    float* y) {
  cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(out),
              static_cast<int>(in), 1.0f, w, static_cast<int>(in), x, 1, 1.0f,
              y, 1);
}

void GemvAccumulate(int64_t out, int64_t in, const double* w, const double* x,
                    double* y) {
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
int64_t DirectSmallBlock(int64_t rows, int64_t out, int64_t in) {
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
void SigmoidInPlace(float* x, int64_t n) { fast_math::SigmoidInPlace(x, n); }
void SigmoidInPlace(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 1.0 / (1.0 + std::exp(-x[i]));
}
void TanhInPlace(float* x, int64_t n) { fast_math::TanhInPlace(x, n); }
void TanhInPlace(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
}

// One step of a cell's backward pass for one sequence
// (agents/lstm_gate_gradients.h): float compiled for several vector widths
// in fast_math.cc (the loop before, with a per-element choice on the carry
// and pointers that might alias, took 4% of the fc-softmax-lstm loop with
// 16 environments; now 1.4%), double the same template compiled once
// (baseline SSE2, not multiversioned).
void LstmGateGradients(int64_t h, const float* gates, const float* tanh_c,
                       const float* c_prev, const float* d_h, bool carried,
                       const float* carry_h, float* carry_c, float* d_gates) {
  fast_math::LstmGateGradients(h, gates, tanh_c, c_prev, d_h, carried, carry_h,
                               carry_c, d_gates);
}
void LstmGateGradients(int64_t h, const double* gates, const double* tanh_c,
                       const double* c_prev, const double* d_h, bool carried,
                       const double* carry_h, double* carry_c,
                       double* d_gates) {
  LstmGateGradientsStep(h, gates, tanh_c, c_prev, d_h, carried, carry_h,
                        carry_c, d_gates);
}

// The activations of one row's gates [i, f, g, o] (each `h` wide) in place,
// the new cell state, its tanh and the new hidden state. Separate loops
// over contiguous arrays, so that the float functions above vectorize.
template <typename T>
void CellStep(T* __restrict__ gates, const T* __restrict__ c_prev, int64_t h,
              T* __restrict__ c_new, T* __restrict__ tanh_c,
              T* __restrict__ h_new) {
  SigmoidInPlace(gates, 2 * h);
  TanhInPlace(gates + 2 * h, h);
  SigmoidInPlace(gates + 3 * h, h);
  const T* i = gates;
  const T* f = gates + h;
  const T* g = gates + 2 * h;
  const T* o = gates + 3 * h;
  for (int64_t j = 0; j < h; ++j) c_new[j] = f[j] * c_prev[j] + i[j] * g[j];
  std::copy_n(c_new, h, tanh_c);
  TanhInPlace(tanh_c, h);
  for (int64_t j = 0; j < h; ++j) h_new[j] = o[j] * tanh_c[j];
}

// Offset of `t` in `flat`, checking that it is a contiguous float32 view
// into it of `numel` elements.
int64_t OffsetIn(const torch::Tensor& t, FlatParameters& flat,
                 const std::string& what, int64_t numel) {
  if (!t.defined() || t.scalar_type() != torch::kFloat32 ||
      !t.is_contiguous() || t.numel() != numel) {
    throw std::logic_error("DenseLayout: " + what +
                           " is not a contiguous float32 tensor of " +
                           std::to_string(numel) + " elements");
  }
  const float* base = flat.params_data();
  const float* p = t.data_ptr<float>();
  if (p < base || p + numel > base + flat.size()) {
    throw std::logic_error("DenseLayout: " + what +
                           " is not in the flat parameter buffer");
  }
  return p - base;
}

std::vector<DenseLayout::Layer> Layers(
    const std::vector<DenseDescription::Layer>& described, FlatParameters& flat,
    const std::string& name, int64_t* covered) {
  if (described.empty()) {
    throw std::logic_error("DenseLayout: the " + name + " MLP has no layers");
  }
  std::vector<DenseLayout::Layer> layers;
  for (size_t l = 0; l < described.size(); ++l) {
    const auto& w = described[l].weight;
    const std::string what = name + " layer " + std::to_string(l);
    if (!w.defined() || w.dim() != 2) {
      throw std::logic_error("DenseLayout: " + what + " weight is not 2-D");
    }
    DenseLayout::Layer layer;
    layer.out = w.size(0);
    layer.in = w.size(1);
    layer.weight = OffsetIn(w, flat, what + " weight", layer.out * layer.in);
    layer.bias = OffsetIn(described[l].bias, flat, what + " bias", layer.out);
    if (!layers.empty() && layers.back().out != layer.in) {
      throw std::logic_error("DenseLayout: " + what + " takes " +
                             std::to_string(layer.in) + " inputs after " +
                             std::to_string(layers.back().out) + " outputs");
    }
    *covered += layer.out * layer.in + layer.out;
    layers.push_back(layer);
  }
  return layers;
}

std::vector<double> ToDoubles(const torch::Tensor& t, int64_t n,
                              const std::string& what) {
  if (!t.defined() || t.numel() != n) {
    throw std::logic_error("DenseLayout: " + what + " does not have " +
                           std::to_string(n) + " elements");
  }
  const torch::Tensor d = t.to(torch::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + n};
}

// The convolutions of a trunk over a `image` ([C, H, W]) input, chained.
std::vector<DenseLayout::Conv> Convs(
    const std::vector<DenseDescription::Conv>& described,
    const std::vector<int64_t>& image, FlatParameters& flat, int64_t* covered) {
  if (image.size() != 3 || image[0] <= 0 || image[1] <= 0 || image[2] <= 0) {
    throw std::logic_error("DenseLayout: the trunk's image is not [C, H, W]");
  }
  if (described.empty()) {
    throw std::logic_error("DenseLayout: the trunk has no convolution");
  }
  std::vector<DenseLayout::Conv> convs;
  int64_t c = image[0], h = image[1], w = image[2];
  for (size_t l = 0; l < described.size(); ++l) {
    const auto& d = described[l];
    const std::string what = "conv " + std::to_string(l);
    if (!d.weight.defined() || d.weight.dim() != 4 || d.weight.size(1) != c ||
        d.weight.size(2) != d.weight.size(3) || d.stride < 1 || d.padding < 0) {
      throw std::logic_error("DenseLayout: " + what + " weight is not [out, " +
                             std::to_string(c) +
                             ", k, k], or its stride or padding is invalid");
    }
    DenseLayout::Conv conv;
    conv.in_channels = c;
    conv.out_channels = d.weight.size(0);
    conv.kernel = d.weight.size(2);
    conv.stride = d.stride;
    conv.padding = d.padding;
    conv.in_h = h;
    conv.in_w = w;
    if (h + 2 * conv.padding < conv.kernel ||
        w + 2 * conv.padding < conv.kernel) {
      throw std::logic_error("DenseLayout: " + what + "'s kernel is larger " +
                             "than its padded input");
    }
    conv.out_h = (h + 2 * conv.padding - conv.kernel) / conv.stride + 1;
    conv.out_w = (w + 2 * conv.padding - conv.kernel) / conv.stride + 1;
    const int64_t weights = conv.out_channels * conv.patch();
    conv.weight = OffsetIn(d.weight, flat, what + " weight", weights);
    conv.bias = OffsetIn(d.bias, flat, what + " bias", conv.out_channels);
    *covered += weights + conv.out_channels;
    convs.push_back(conv);
    c = conv.out_channels;
    h = conv.out_h;
    w = conv.out_w;
  }
  return convs;
}

// The LSTM cells of `description` into `layout`, after a trunk of
// `features` outputs (0: none; the cells then read the observation, or
// their encoders do); returns the cells' hidden size, what pi and v read.
int64_t Cells(const DenseDescription& description, FlatParameters& flat,
              int64_t features, DenseLayout* layout, int64_t* covered) {
  const size_t count = description.lstm.size();
  if (count > 2) {
    throw std::logic_error("DenseLayout: 1 or 2 LSTM cells, got " +
                           std::to_string(count));
  }
  int64_t hidden = 0;
  for (size_t i = 0; i < count; ++i) {
    const DenseDescription::Lstm& d = description.lstm[i];
    const std::string what = "lstm " + std::to_string(i);
    DenseLayout::Lstm cell;
    if (!d.weight_ih.defined() || d.weight_ih.dim() != 2 ||
        d.weight_ih.size(0) % 4 != 0 || d.weight_ih.size(0) == 0) {
      throw std::logic_error("DenseLayout: " + what +
                             " weight_ih is not [4 H, in]");
    }
    cell.hidden = d.weight_ih.size(0) / 4;
    cell.in = d.weight_ih.size(1);
    const int64_t gates = 4 * cell.hidden;
    cell.weight_ih =
        OffsetIn(d.weight_ih, flat, what + " weight_ih", gates * cell.in);
    cell.weight_hh =
        OffsetIn(d.weight_hh, flat, what + " weight_hh", gates * cell.hidden);
    cell.bias_ih = OffsetIn(d.bias_ih, flat, what + " bias_ih", gates);
    cell.bias_hh = OffsetIn(d.bias_hh, flat, what + " bias_hh", gates);
    *covered += gates * (cell.in + cell.hidden + 2);
    if (hidden != 0 && cell.hidden != hidden) {
      throw std::logic_error("DenseLayout: the LSTM cells' sizes differ");
    }
    hidden = cell.hidden;
    // What the cell reads: its encoder's output, the trunk's, or the
    // observation.
    int64_t input = features;
    if (!d.encoder.empty()) {
      if (count != 2 || features != 0) {
        throw std::logic_error(
            "DenseLayout: LSTM encoders need two branches and no trunk");
      }
      cell.encoder = Layers(d.encoder, flat, what + " encoder", covered);
      input = cell.encoder.back().out;
      const int64_t obs = cell.encoder.front().in;
      if (layout->row_size != 0 && layout->row_size != obs) {
        throw std::logic_error("DenseLayout: the LSTM encoders read " +
                               std::to_string(layout->row_size) + " and " +
                               std::to_string(obs) + " floats");
      }
      layout->row_size = obs;
    } else if (count == 2) {
      throw std::logic_error("DenseLayout: two LSTM branches without encoders");
    } else if (input == 0) {
      input = cell.in;
      layout->row_size = cell.in;
    }
    if (cell.in != input) {
      throw std::logic_error("DenseLayout: " + what + " takes " +
                             std::to_string(cell.in) + " inputs after " +
                             std::to_string(input) + " outputs");
    }
    layout->lstm.push_back(cell);
  }
  return hidden;
}

}  // namespace

DenseLayout DenseLayout::Of(const DenseDescription& description,
                            FlatParameters& flat) {
  DenseLayout layout;
  layout.kind = description.kind;
  layout.tanh = description.tanh;
  int64_t covered = 0;
  int64_t features = 0;  // What pi and v read.
  if (!description.image.empty()) {
    layout.input_scale = description.input_scale;
    layout.convs = Convs(description.convs, description.image, flat, &covered);
    layout.trunk = Layers(description.trunk, flat, "trunk", &covered);
    if (layout.trunk.front().in != layout.convs.back().out_size()) {
      throw std::logic_error(
          "DenseLayout: the trunk's first dense layer takes " +
          std::to_string(layout.trunk.front().in) + " inputs after " +
          std::to_string(layout.convs.back().out_size()) + " outputs");
    }
    features = layout.trunk.back().out;
    layout.row_size = layout.convs.front().in_size();
  } else if (!description.convs.empty() || !description.trunk.empty()) {
    throw std::logic_error("DenseLayout: a trunk without an image");
  }
  if (!description.lstm.empty()) {
    features = Cells(description, flat, features, &layout, &covered);
  }
  layout.pi = Layers(description.pi, flat, "pi", &covered);
  layout.v = Layers(description.v, flat, "v", &covered);
  if (features == 0) {
    features = layout.pi.front().in;
    layout.row_size = features;
  }
  if (layout.pi.front().in != features || layout.v.front().in != features ||
      layout.v.back().out != 1) {
    throw std::logic_error(
        "DenseLayout: the pi and v MLPs must read the same input and v must "
        "end in one output");
  }
  if (layout.kind == PolicyKind::kGaussian) {
    const int64_t d = layout.policy_size();
    layout.log_std = OffsetIn(description.log_std, flat, "log_std", d);
    covered += d;
    layout.center = ToDoubles(description.center, d, "center");
    layout.half_range = ToDoubles(description.half_range, d, "half_range");
  }
  if (covered != flat.size()) {
    throw std::logic_error("DenseLayout: the description covers " +
                           std::to_string(covered) + " of the model's " +
                           std::to_string(flat.size()) + " parameters");
  }
  return layout;
}

template <typename T>
DenseActorCritic<T>::DenseActorCritic(DenseLayout layout)
    : layout_(std::move(layout)),
      pi_acts_(layout_.pi.size()),
      v_acts_(layout_.v.size()),
      conv_acts_(layout_.convs.size()),
      trunk_acts_(layout_.trunk.size()),
      cells_(layout_.lstm.size()) {
  for (size_t c = 0; c < cells_.size(); ++c) {
    cells_[c].encoder.resize(layout_.lstm[c].encoder.size());
  }
}

template <typename T>
void DenseActorCritic<T>::ForwardMlp(
    const std::vector<DenseLayout::Layer>& layers, const T* params, const T* x,
    int64_t rows, int64_t first_row, std::vector<KeptRows<T>>* acts,
    bool relu_all) {
  for (size_t l = 0; l < layers.size(); ++l) {
    const DenseLayout::Layer& layer = layers[l];
    KeptRows<T>& out = (*acts)[l];
    // Rows before first_row are kept (resize preserves them).
    out.resize(static_cast<size_t>((first_row + rows) * layer.out));
    T* y = out.data() + first_row * layer.out;
    AffineRows(params + layer.weight, params + layer.bias, x, rows, layer.out,
               layer.in, y, &product_, small_products_);
    if (relu_all || l + 1 < layers.size()) {
      const int64_t count = rows * layer.out;
      if (!relu_all && layout_.tanh) {
        TanhInPlace(y, count);
      } else {
        for (int64_t i = 0; i < count; ++i) y[i] = std::max(y[i], T{0});
      }
    }
    x = y;
  }
}

// The output columns [lo, hi) whose input column ox * stride - padding +
// offset lies in [0, in): the others read the zero padding.
std::pair<int64_t, int64_t> Inside(int64_t offset, int64_t padding,
                                   int64_t stride, int64_t in, int64_t out) {
  const int64_t first = padding - offset;  // ox * stride >= first.
  const int64_t lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  const int64_t last = in - 1 + padding - offset;  // ox * stride <= last.
  const int64_t hi = last < 0 ? 0 : std::min(out, last / stride + 1);
  return {std::min(lo, hi), hi};
}

template <typename T>
void DenseActorCritic<T>::Im2Col(size_t l, const T* in, int64_t stride,
                                 int64_t rows, T* cols, int64_t ld) {
  const DenseLayout::Conv& c = layout_.convs[l];
  const int64_t positions = c.positions();
  // The first convolution reads the observation times the input scale, as
  // LibTorch's Scale module does before it.
  const T scale = l == 0 ? static_cast<T>(layout_.input_scale) : T{1};
  const int64_t k = c.kernel;
  if (c.padding == 0 && c.stride == 1) {
    // Every patch lies inside the input, so each output row is one run of
    // an input row: no bounds or padding per run, and runs that cannot
    // overlap, so the copy vectorizes without the compiler's alias checks
    // (minatar-conv Breakout loop at 16 environments: Im2Col 7.9% -> 3.8%).
    for (int64_t ci = 0; ci < c.in_channels; ++ci) {
      for (int64_t ky = 0; ky < k; ++ky) {
        for (int64_t kx = 0; kx < k; ++kx) {
          T* col = cols + ((ci * k + ky) * k + kx) * ld;
          for (int64_t r = 0; r < rows; ++r) {
            const T* image = in + r * stride + (ci * c.in_h + ky) * c.in_w + kx;
            T* dst = col + r * positions;
            for (int64_t oy = 0; oy < c.out_h; ++oy) {
              ScaledRun(image + oy * c.in_w, c.out_w, scale,
                        dst + oy * c.out_w);
            }
          }
        }
      }
    }
    return;
  }
  for (int64_t ci = 0; ci < c.in_channels; ++ci) {
    for (int64_t ky = 0; ky < k; ++ky) {
      for (int64_t kx = 0; kx < k; ++kx) {
        T* col = cols + ((ci * k + ky) * k + kx) * ld;
        const auto [lo, hi] = Inside(kx, c.padding, c.stride, c.in_w, c.out_w);
        for (int64_t r = 0; r < rows; ++r) {
          const T* image = in + r * stride + ci * c.in_h * c.in_w;
          T* dst = col + r * positions;
          for (int64_t oy = 0; oy < c.out_h; ++oy) {
            const int64_t iy = oy * c.stride - c.padding + ky;
            T* out = dst + oy * c.out_w;
            if (iy < 0 || iy >= c.in_h) {
              std::fill(out, out + c.out_w, T{0});
              continue;
            }
            // Input column of output column ox: base + ox * stride (>= 0
            // for ox in [lo, hi); base itself may be negative).
            const int64_t base = iy * c.in_w - c.padding + kx;
            std::fill(out, out + lo, T{0});
            if (c.stride == 1) {
              // Measured: the unit-stride loop vectorizes; dropping it cost
              // ~10% of the Breakout agent loop (minatar_bench).
              for (int64_t ox = lo; ox < hi; ++ox) {
                out[ox] = image[base + ox] * scale;
              }
            } else {
              for (int64_t ox = lo; ox < hi; ++ox) {
                out[ox] = image[base + ox * c.stride] * scale;
              }
            }
            std::fill(out + hi, out + c.out_w, T{0});
          }
        }
      }
    }
  }
}

// The first convolution takes the sparse route (agents/sparse_convolution.h)
// where at most 1 in kSparseLines of its input's lines (over the rows) has
// a value that is not zero. Measured on [4, 10, 10] frames, 16 channels
// (minatar-conv's), per row, forward and weight gradient together, this
// 2-core AMD EPYC: im2col and gemm ~1.8 us whatever the frames; the sparse
// route 0.7 us with 6 of the 40 lines set (Breakout's), 1.2 us with 13,
// 2.3 us with 23: even at about half of them. A third leaves a margin.
constexpr int64_t kSparseLines = 3;

template <typename T>
bool DenseActorCritic<T>::SparseFirstConvolution(const T* in, int64_t stride,
                                                 int64_t rows) {
  if (sparse_inputs_ == SparseInputs::kNever) return false;
  const DenseLayout::Conv& c = layout_.convs.front();
  const int64_t lines = c.in_channels * c.in_h;
  const int64_t budget = sparse_inputs_ == SparseInputs::kAlways
                             ? rows * lines
                             : rows * lines / kSparseLines;
  line_set_.resize(static_cast<size_t>(rows * lines));
  int64_t set = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const T* image = in + r * stride;
    uint8_t* row_set = line_set_.data() + r * lines;
    for (int64_t j = 0; j < lines; ++j) {
      row_set[j] = AnyNonzero(image + j * c.in_w, c.in_w) ? 1 : 0;
      set += row_set[j];
    }
    // Dense inputs (Atari's frames) stop at the first row.
    if (set > budget) return false;
  }
  return true;
}

namespace {

// The sparse route's loops (agents/sparse_convolution.h), one overload per
// scalar: float vectorized in fast_math.cc.
void SparseConvolutionOf(const ConvGeometry& g, const float* in, int64_t stride,
                         int64_t rows, float scale, const uint8_t* set,
                         const float* w, const float* bias, int64_t* index,
                         float* y) {
  fast_math::SparseConvolution(g, in, stride, rows, scale, set, w, bias, index,
                               y);
}

void SparseConvolutionOf(const ConvGeometry& g, const double* in,
                         int64_t stride, int64_t rows, double scale,
                         const uint8_t* set, const double* w,
                         const double* bias, int64_t* index, double* y) {
  SparseConvolutionRows(g, in, stride, rows, scale, set, w, bias, index, y);
}

void SparseConvolutionGradientOf(const ConvGeometry& g, const float* in,
                                 int64_t stride, int64_t rows, float scale,
                                 const uint8_t* set, const float* d_out,
                                 int64_t* index, float* dw) {
  fast_math::SparseConvolutionGradient(g, in, stride, rows, scale, set, d_out,
                                       index, dw);
}

void SparseConvolutionGradientOf(const ConvGeometry& g, const double* in,
                                 int64_t stride, int64_t rows, double scale,
                                 const uint8_t* set, const double* d_out,
                                 int64_t* index, double* dw) {
  SparseConvolutionGradientRows(g, in, stride, rows, scale, set, d_out, index,
                                dw);
}

}  // namespace

template <typename T>
void DenseActorCritic<T>::SparseConvolution(const T* params, const T* in,
                                            int64_t stride, int64_t rows,
                                            T* y) {
  const DenseLayout::Conv& c = layout_.convs.front();
  // The weights as [patch, out channels] (agents/sparse_convolution.h).
  const int64_t channels = c.out_channels;
  const int64_t patch = c.patch();
  sparse_weights_.resize(static_cast<size_t>(patch * channels));
  for (int64_t co = 0; co < channels; ++co) {
    for (int64_t p = 0; p < patch; ++p) {
      sparse_weights_[p * channels + co] = params[c.weight + co * patch + p];
    }
  }
  sparse_index_.resize(static_cast<size_t>(2 * c.in_channels * c.kernel));
  SparseConvolutionOf(c, in, stride, rows, static_cast<T>(layout_.input_scale),
                      line_set_.data(), sparse_weights_.data(), params + c.bias,
                      sparse_index_.data(), y);
}

template <typename T>
void DenseActorCritic<T>::SparseConvolutionGradient(const T* in, int64_t stride,
                                                    int64_t rows, T* grads) {
  const DenseLayout::Conv& c = layout_.convs.front();
  sparse_index_.resize(
      static_cast<size_t>(rows * c.in_channels * (c.in_h + 1)));
  SparseConvolutionGradientOf(c, in, stride, rows,
                              static_cast<T>(layout_.input_scale),
                              line_set_.data(), conv_out_.data(),
                              sparse_index_.data(), grads + c.weight);
}

template <typename T>
bool DenseActorCritic<T>::ReserveColumns(int64_t rows, int64_t valid) {
  if (rows <= cols_capacity_) return true;
  int64_t row_bytes = 0;
  for (const DenseLayout::Conv& c : layout_.convs) {
    row_bytes += c.patch() * c.positions() * static_cast<int64_t>(sizeof(T));
  }
  const int64_t most = row_bytes > 0 ? kept_columns_bytes_ / row_bytes : rows;
  // Past the budget nothing more is kept, but what was allocated stays:
  // the next rollout's first rows use it again, without allocating.
  if (rows > most) return false;
  // Doubling (up to the budget), so a rollout's rows appended step by step
  // grow it a few times only, during the first rollout.
  const int64_t capacity = std::min(std::max(rows, 2 * cols_capacity_), most);
  kept_cols_.resize(layout_.convs.size());
  for (size_t l = 0; l < layout_.convs.size(); ++l) {
    const DenseLayout::Conv& c = layout_.convs[l];
    const int64_t positions = c.positions();
    std::vector<T> grown(static_cast<size_t>(c.patch() * capacity * positions));
    for (int64_t p = 0; p < c.patch() && valid > 0; ++p) {
      std::copy_n(kept_cols_[l].data() + p * cols_capacity_ * positions,
                  valid * positions, grown.data() + p * capacity * positions);
    }
    kept_cols_[l].swap(grown);
  }
  cols_capacity_ = capacity;
  return true;
}

template <typename T>
void DenseActorCritic<T>::ForwardTrunk(const T* params, const T* obs,
                                       int64_t rows, int64_t first_row) {
  // Rows from first_row on are replaced; those before keep their columns
  // if they had them.
  cols_rows_ = std::min(cols_rows_, first_row);
  // The sparse route keeps no columns (the backward pass reads the
  // observations again), so no row from here on has its columns kept.
  const bool sparse = SparseFirstConvolution(obs, layout_.row_size, rows);
  const bool keep = !sparse && ReserveColumns(first_row + rows, cols_rows_);
  const T* in = obs;
  int64_t stride = layout_.row_size;
  for (size_t l = 0; l < layout_.convs.size(); ++l) {
    const DenseLayout::Conv& c = layout_.convs[l];
    const int64_t positions = c.positions();
    const int64_t n = rows * positions;
    KeptRows<T>& out = conv_acts_[l];
    out.resize(static_cast<size_t>((first_row + rows) * c.out_size()));
    T* y = out.data() + first_row * c.out_size();
    if (l == 0 && sparse) {
      SparseConvolution(params, in, stride, rows, y);
      in = y;
      stride = c.out_size();
      continue;
    }
    T* cols = nullptr;
    int64_t ld = n;
    if (keep) {
      ld = cols_capacity_ * positions;
      cols = kept_cols_[l].data() + first_row * positions;
    } else {
      cols_.resize(static_cast<size_t>(c.patch() * n));
      cols = cols_.data();
    }
    Im2Col(l, in, stride, rows, cols, ld);
    // [out channels, rows * positions] = W [out, patch] x columns.
    conv_out_.resize(static_cast<size_t>(c.out_channels * n));
    Gemm(false, false, c.out_channels, n, c.patch(), params + c.weight,
         c.patch(), cols, ld, /*accumulate=*/false, conv_out_.data(), n);
    // Bias and ReLU into the rows' [channel, position] layout.
    for (int64_t co = 0; co < c.out_channels; ++co) {
      const T b = params[c.bias + co];
      for (int64_t r = 0; r < rows; ++r) {
        const T* src = conv_out_.data() + co * n + r * positions;
        T* dst = y + r * c.out_size() + co * positions;
        for (int64_t p = 0; p < positions; ++p) {
          dst[p] = std::max(src[p] + b, T{0});
        }
      }
    }
    in = y;
    stride = c.out_size();
  }
  if (keep && cols_rows_ == first_row) cols_rows_ = first_row + rows;
  ForwardMlp(layout_.trunk, params, in, rows, first_row, &trunk_acts_,
             /*relu_all=*/true);
}

template <typename T>
const T* DenseActorCritic<T>::HeadInput(const T* obs, bool value) const {
  if (layout_.recurrent()) {
    return (value ? cells_.back() : cells_.front()).h.data();
  }
  return layout_.has_trunk() ? trunk_acts_.back().data() : obs;
}

template <typename T>
void DenseActorCritic<T>::KeepRows(int64_t first_row, int64_t rows) {
  ASYNCRL_CHECK_GE(first_row, 0);
  ASYNCRL_CHECK_LE(first_row, rows_);
  rows_ = first_row + rows;
}

template <typename T>
void DenseActorCritic<T>::Forward(const T* params, const T* obs, int64_t rows,
                                  int64_t first_row, bool with_policy) {
  ASYNCRL_CHECK(!layout_.recurrent());
  KeepRows(first_row, rows);
  EncodeRows(params, obs, rows, first_row);
  HeadRows(params, obs, rows, first_row, with_policy);
}

template <typename T>
void DenseActorCritic<T>::Step(const T* params, const T* obs, int64_t rows,
                               int64_t first_row, const T* state, T* next_state,
                               bool with_policy) {
  ASYNCRL_CHECK(layout_.recurrent());
  KeepRows(first_row, rows);
  // Values only, with a cell per branch: the policy's cell is not stepped.
  const size_t first_cell = !with_policy && cells_.size() == 2 ? 1 : 0;
  EncodeRows(params, obs, rows, first_row, first_cell);
  CoreRows(params, rows, first_row, state, next_state, first_cell);
  HeadRows(params, obs, rows, first_row, with_policy);
}

template <typename T>
void DenseActorCritic<T>::Unroll(const T* params, const T* obs, int64_t batch,
                                 int64_t steps, const T* initial_state,
                                 const uint8_t* sequence_end) {
  ASYNCRL_CHECK(layout_.recurrent());
  ASYNCRL_CHECK_GT(batch, 0);
  const int64_t n = batch * steps;
  KeepRows(0, n);
  // Everything but the recurrence over all the rows at once.
  EncodeRows(params, obs, n, 0);
  const int64_t size = layout_.state_size();
  if (initial_state != nullptr) {
    unroll_state_.assign(initial_state, initial_state + batch * size);
  } else {
    unroll_state_.assign(static_cast<size_t>(batch * size), T{0});
  }
  for (int64_t s = 0; s < steps; ++s) {
    CoreRows(params, batch, s * batch, unroll_state_.data(),
             unroll_state_.data());
    if (s + 1 == steps) break;
    for (int64_t b = 0; b < batch; ++b) {
      if (sequence_end[s * batch + b] == 0) continue;
      std::fill_n(unroll_state_.begin() + b * size, size, T{0});
    }
  }
  HeadRows(params, obs, n, 0, /*with_policy=*/true);
}

template <typename T>
void DenseActorCritic<T>::StateAfter(int64_t row, T* out) const {
  ASYNCRL_CHECK_LT(row, rows_);
  for (size_t c = 0; c < cells_.size(); ++c) {
    const int64_t h = layout_.lstm[c].hidden;
    // A values-only Step leaves the policy cell's rows unstepped.
    ASYNCRL_CHECK_LE((row + 1) * h, static_cast<int64_t>(cells_[c].h.size()));
    T* dst = out + 2 * h * static_cast<int64_t>(c);
    std::copy_n(cells_[c].h.data() + row * h, h, dst);
    std::copy_n(cells_[c].c.data() + row * h, h, dst + h);
  }
}

template <typename T>
void DenseActorCritic<T>::EncodeRows(const T* params, const T* obs,
                                     int64_t rows, int64_t first_row,
                                     size_t first_cell) {
  if (layout_.has_trunk()) ForwardTrunk(params, obs, rows, first_row);
  for (size_t c = first_cell; c < cells_.size(); ++c) {
    const DenseLayout::Lstm& lstm = layout_.lstm[c];
    CellRows& cell = cells_[c];
    const int64_t gates = 4 * lstm.hidden;
    const T* x = obs;
    if (!lstm.encoder.empty()) {
      ForwardMlp(lstm.encoder, params, obs, rows, first_row, &cell.encoder,
                 /*relu_all=*/true);
      x = cell.encoder.back().data() + first_row * lstm.in;
    } else if (layout_.has_trunk()) {
      x = trunk_acts_.back().data() + first_row * lstm.in;
    }
    // b_ih + b_hh, then x W_ih^T added (LstmActorCritic::Encode's addmm).
    gate_bias_.resize(static_cast<size_t>(gates));
    for (int64_t j = 0; j < gates; ++j) {
      gate_bias_[j] = params[lstm.bias_ih + j] + params[lstm.bias_hh + j];
    }
    cell.gates.resize(static_cast<size_t>((first_row + rows) * gates));
    AffineRows(params + lstm.weight_ih, gate_bias_.data(), x, rows, gates,
               lstm.in, cell.gates.data() + first_row * gates, &product_,
               small_products_);
  }
}

template <typename T>
void DenseActorCritic<T>::CoreRows(const T* params, int64_t rows,
                                   int64_t first_row, const T* state,
                                   T* next_state, size_t first_cell) {
  const int64_t size = layout_.state_size();
  // The states before the step, kept (and copied before any is
  // overwritten: next_state may be state).
  for (size_t c = first_cell; c < cells_.size(); ++c) {
    const int64_t h2 = 2 * layout_.lstm[c].hidden;
    KeptRows<T>& prev = cells_[c].prev;
    prev.resize(static_cast<size_t>((first_row + rows) * h2));
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(state + r * size + h2 * static_cast<int64_t>(c), h2,
                  prev.data() + (first_row + r) * h2);
    }
  }
  for (size_t c = first_cell; c < cells_.size(); ++c) {
    const DenseLayout::Lstm& lstm = layout_.lstm[c];
    CellRows& cell = cells_[c];
    const int64_t h = lstm.hidden;
    const int64_t gates = 4 * h;
    T* g_rows = cell.gates.data() + first_row * gates;
    const T* prev = cell.prev.data() + first_row * 2 * h;
    // The state's share of the gates, h W_hh^T, added.
    const T* w = params + lstm.weight_hh;
    RowsTimesWeights(w, prev, 2 * h, rows, gates, h, g_rows, gates, &product_,
                     small_products_);
    const auto size_after = static_cast<size_t>((first_row + rows) * h);
    cell.c.resize(size_after);
    cell.tanh_c.resize(size_after);
    cell.h.resize(size_after);
    for (int64_t r = 0; r < rows; ++r) {
      T* g = g_rows + r * gates;
      const T* c_prev = prev + r * 2 * h + h;
      const int64_t at = (first_row + r) * h;
      T* c_new = cell.c.data() + at;
      T* t_new = cell.tanh_c.data() + at;
      T* h_new = cell.h.data() + at;
      CellStep(g, c_prev, h, c_new, t_new, h_new);
      T* out = next_state + r * size + 2 * h * static_cast<int64_t>(c);
      std::copy_n(h_new, h, out);
      std::copy_n(c_new, h, out + h);
    }
  }
}

template <typename T>
void DenseActorCritic<T>::HeadRows(const T* params, const T* obs, int64_t rows,
                                   int64_t first_row, bool with_policy) {
  // Kept activations are indexed from kept row 0; `obs` starts at the rows.
  const int64_t offset = layout_.recurrent() || layout_.has_trunk()
                             ? first_row * layout_.pi.front().in
                             : 0;
  ForwardMlp(layout_.v, params, HeadInput(obs, /*value=*/true) + offset, rows,
             first_row, &v_acts_,
             /*relu_all=*/false);
  if (!with_policy) return;
  ForwardMlp(layout_.pi, params, HeadInput(obs, /*value=*/false) + offset, rows,
             first_row, &pi_acts_,
             /*relu_all=*/false);
  if (layout_.kind == PolicyKind::kCategorical) {
    if (layout_.action_mask > 0) {
      const int64_t n = layout_.policy_size();
      MaskLogitRows(pi_acts_.back().data() + first_row * n, rows, n, obs,
                    layout_.obs_size());
    }
    return;
  }
  const int64_t d = layout_.policy_size();
  const size_t size = static_cast<size_t>(rows_ * d);
  squashed_.resize(size);
  means_.resize(size);
  const T* raw = pi_acts_.back().data();
  std::copy(raw + first_row * d, raw + rows_ * d,
            squashed_.begin() + first_row * d);
  TanhInPlace(squashed_.data() + first_row * d, (rows_ - first_row) * d);
  for (int64_t r = first_row; r < rows_; ++r) {
    for (int64_t j = 0; j < d; ++j) {
      const int64_t i = r * d + j;
      means_[i] = static_cast<T>(layout_.center[j]) +
                  static_cast<T>(layout_.half_range[j]) * squashed_[i];
    }
  }
}

template <typename T>
void DenseActorCritic<T>::EvaluateActions(const T* params, int64_t rows,
                                          const int64_t* actions,
                                          const float* cont_actions,
                                          double* log_probs,
                                          double* entropies) {
  ASYNCRL_CHECK_LE(rows, rows_);
  const int64_t n = layout_.policy_size();
  if (layout_.kind == PolicyKind::kCategorical) {
    probs_.resize(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const T* l = policy() + r * n;
      const SoftmaxRow row = SoftmaxOfRow(l, n, probs_.data());
      log_probs[r] = l[actions[r]] - row.log_sum_exp;
      entropies[r] = row.entropy;
    }
    return;
  }
  const T* log_std = params + layout_.log_std;
  for (int64_t r = 0; r < rows; ++r) {
    double log_prob = 0;
    double entropy = 0;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = r * n + j;
      log_prob += GaussianLogDensityPerDim<double>(cont_actions[i], policy()[i],
                                                   log_std[j]);
      entropy += GaussianEntropyPerDim<double>(log_std[j]);
    }
    log_probs[r] = log_prob;
    entropies[r] = entropy;
  }
}

template <typename T>
void DenseActorCritic<T>::OutputGradient(const T* params, const T* obs,
                                         int64_t rows, const int64_t* actions,
                                         const float* cont_actions,
                                         const double* d_log_prob,
                                         const double* d_entropy,
                                         const double* d_value, T* grads,
                                         Sequences sequences) {
  ASYNCRL_CHECK_LE(rows, rows_);
  const int64_t n = layout_.policy_size();
  d_policy_.resize(static_cast<size_t>(rows * n));
  d_values_.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) d_values_[r] = static_cast<T>(d_value[r]);
  if (layout_.kind == PolicyKind::kCategorical) {
    probs_.resize(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const T* l = policy() + r * n;
      const SoftmaxRow row = SoftmaxOfRow(l, n, probs_.data());
      CategoricalRowGradient(l, probs_.data(), n, row, actions[r],
                             d_log_prob[r], d_entropy[r],
                             d_policy_.data() + r * n);
    }
    Backward(params, obs, rows, d_policy_.data(), d_values_.data(), grads,
             sequences);
    return;
  }
  const T* log_std = params + layout_.log_std;
  std::vector<double>& d_log_std = d_log_std_;
  d_log_std.assign(static_cast<size_t>(n), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = r * n + j;
      const GaussianDimGradient g =
          GaussianRowGradient(cont_actions[i], policy()[i], log_std[j],
                              d_log_prob[r], d_entropy[r]);
      d_policy_[i] = static_cast<T>(g.mean);
      d_log_std[j] += g.log_std;
    }
  }
  Backward(params, obs, rows, d_policy_.data(), d_values_.data(), grads,
           sequences);
  for (int64_t j = 0; j < n; ++j) {
    grads[layout_.log_std + j] = static_cast<T>(d_log_std[j]);
  }
}

template <typename T>
void DenseActorCritic<T>::BackwardMlp(
    const std::vector<DenseLayout::Layer>& layers, const T* params,
    const T* input, int64_t rows, const std::vector<KeptRows<T>>& acts,
    const T* d_out, bool relu_hidden, T* grads, T* d_input, bool add_input) {
  const T* dy = d_out;
  for (size_t l = layers.size(); l-- > 0;) {
    const DenseLayout::Layer& layer = layers[l];
    // The layer's input: the MLP's, or the previous layer's output (rows
    // beyond `rows` are never read: the matrices are row-major).
    const T* x = l == 0 ? input : acts[l - 1].data();
    // dW = dY^T X, db = the column sums of dY.
    WeightGradient(layer.out, layer.in, rows, dy, layer.out, x, layer.in,
                   grads + layer.weight, layer.in, small_products_);
    ColumnSums(dy, rows, layer.out, grads + layer.bias);
    if (l == 0) {
      if (d_input != nullptr) {
        Gemm(false, false, rows, layer.in, layer.out, dy, layer.out,
             params + layer.weight, layer.in, add_input, d_input, layer.in);
      }
      break;
    }
    // dX = dY W, then through the activation that produced X.
    d_next_.resize(static_cast<size_t>(rows * layer.in));
    Gemm(false, false, rows, layer.in, layer.out, dy, layer.out,
         params + layer.weight, layer.in, /*accumulate=*/false, d_next_.data(),
         layer.in);
    const int64_t count = rows * layer.in;
    if (!relu_hidden) {
      T* d = d_next_.data();
      for (int64_t i = 0; i < count; ++i) d[i] *= T{1} - x[i] * x[i];
    } else {
      ReluBackward(x, count, d_next_.data());
    }
    d_cur_.swap(d_next_);
    dy = d_cur_.data();
  }
}

template <typename T>
void DenseActorCritic<T>::Backward(const T* params, const T* obs, int64_t rows,
                                   const T* d_policy, const T* d_values,
                                   T* grads, Sequences sequences) {
  ASYNCRL_CHECK_LE(rows, rows_);
  const T* d_pi = d_policy;
  if (layout_.kind == PolicyKind::kGaussian) {
    // mean = center + half_range * tanh(raw).
    const int64_t d = layout_.policy_size();
    d_raw_.resize(static_cast<size_t>(rows * d));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < d; ++j) {
        const int64_t i = r * d + j;
        const T t = squashed_[i];
        d_raw_[i] = d_policy[i] * static_cast<T>(layout_.half_range[j]) *
                    (T{1} - t * t);
      }
    }
    d_pi = d_raw_.data();
  }
  // Where the heads' input gradients go: the cells' d_h (v's added when
  // the one cell feeds both), or the trunk's output gradient.
  T* d_pi_input = nullptr;
  T* d_v_input = nullptr;
  if (layout_.recurrent()) {
    for (size_t c = 0; c < cells_.size(); ++c) {
      cells_[c].d_h.resize(static_cast<size_t>(rows * layout_.lstm[c].hidden));
    }
    d_pi_input = cells_.front().d_h.data();
    d_v_input = cells_.back().d_h.data();
  } else if (layout_.has_trunk()) {
    d_features_.resize(static_cast<size_t>(rows * layout_.trunk.back().out));
    d_pi_input = d_v_input = d_features_.data();
  }
  BackwardMlp(layout_.pi, params, HeadInput(obs, /*value=*/false), rows,
              pi_acts_, d_pi, !layout_.tanh, grads, d_pi_input,
              /*add_input=*/false);
  BackwardMlp(layout_.v, params, HeadInput(obs, /*value=*/true), rows, v_acts_,
              d_values, !layout_.tanh, grads, d_v_input,
              /*add_input=*/d_v_input == d_pi_input);
  if (layout_.recurrent()) BackwardCells(params, obs, rows, sequences, grads);
  if (layout_.has_trunk()) BackwardTrunk(params, obs, rows, grads);
}

template <typename T>
void DenseActorCritic<T>::GatesThroughTime(const T* params, size_t c,
                                           int64_t rows, Sequences sequences) {
  const int64_t k = sequences.batch;
  ASYNCRL_CHECK_GT(k, 0);
  ASYNCRL_CHECK(sequences.end != nullptr);
  ASYNCRL_CHECK_EQ(rows % k, 0);
  const int64_t steps = rows / k;
  CellRows& cell = cells_[c];
  const int64_t h = layout_.lstm[c].hidden;
  const int64_t gates = 4 * h;
  cell.d_gates.resize(static_cast<size_t>(rows * gates));
  // d L / d (h, c) of the state entering the step after the one being
  // processed, per sequence.
  carry_h_.assign(static_cast<size_t>(k * h), T{0});
  carry_c_.assign(static_cast<size_t>(k * h), T{0});
  // d h_prev = d gates W_hh (below, per step) in column blocks of d h_prev
  // whose products stay within OpenBLAS's small-matrix limit (above; it
  // then skips packing W_hh for every step): 16 sequences x 512 gates x 128
  // is 1.05e6, so two blocks of 64.
  int64_t block = h;
  while (small_products_ && block > 8 && k * block * gates > kSmallProduct) {
    block /= 2;
  }
  for (int64_t s = steps; s-- > 0;) {
    for (int64_t b = 0; b < k; ++b) {
      const int64_t r = s * k + b;
      // The next step started from this one's state unless the sequence
      // ended here (its state was zeroed: no gradient flows back).
      const bool carried = s + 1 < steps && sequences.end[r] == 0;
      const T* g = cell.gates.data() + r * gates;
      const T* t = cell.tanh_c.data() + r * h;
      const T* c_prev = cell.prev.data() + r * 2 * h + h;
      const T* d_h = cell.d_h.data() + r * h;
      T* d_g = cell.d_gates.data() + r * gates;
      T* carry_h = carry_h_.data() + b * h;
      T* carry_c = carry_c_.data() + b * h;
      LstmGateGradients(h, g, t, c_prev, d_h, carried, carry_h, carry_c, d_g);
    }
    // d h_prev = d gates W_hh, for the step before, block by block.
    if (s > 0) {
      for (int64_t j = 0; j < h; j += block) {
        Gemm(false, false, k, std::min(block, h - j), gates,
             cell.d_gates.data() + s * k * gates, gates,
             params + layout_.lstm[c].weight_hh + j, h, /*accumulate=*/false,
             carry_h_.data() + j, h);
      }
    }
  }
}

template <typename T>
void DenseActorCritic<T>::BackwardCells(const T* params, const T* obs,
                                        int64_t rows, Sequences sequences,
                                        T* grads) {
  for (size_t c = 0; c < cells_.size(); ++c) {
    const DenseLayout::Lstm& lstm = layout_.lstm[c];
    CellRows& cell = cells_[c];
    const int64_t h = lstm.hidden;
    const int64_t gates = 4 * h;
    GatesThroughTime(params, c, rows, sequences);
    const T* d_g = cell.d_gates.data();
    // dW_hh = d gates^T h_prev and dW_ih = d gates^T x over all the rows;
    // both biases get the column sums.
    WeightGradient(gates, h, rows, d_g, gates, cell.prev.data(), 2 * h,
                   grads + lstm.weight_hh, h, small_products_);
    ColumnSums(d_g, rows, gates, grads + lstm.bias_ih);
    std::copy_n(grads + lstm.bias_ih, gates, grads + lstm.bias_hh);
    const T* x = !lstm.encoder.empty() ? cell.encoder.back().data()
                 : layout_.has_trunk() ? trunk_acts_.back().data()
                                       : obs;
    WeightGradient(gates, lstm.in, rows, d_g, gates, x, lstm.in,
                   grads + lstm.weight_ih, lstm.in, small_products_);
    if (lstm.encoder.empty() && !layout_.has_trunk()) continue;
    // d x = d gates W_ih: into the encoder (through its last ReLU) or the
    // trunk's output gradient.
    std::vector<T>& d_x = lstm.encoder.empty() ? d_features_ : cell.d_input;
    d_x.resize(static_cast<size_t>(rows * lstm.in));
    Gemm(false, false, rows, lstm.in, gates, d_g, gates,
         params + lstm.weight_ih, lstm.in, /*accumulate=*/false, d_x.data(),
         lstm.in);
    if (lstm.encoder.empty()) continue;
    ReluBackward(x, rows * lstm.in, d_x.data());
    BackwardMlp(lstm.encoder, params, obs, rows, cell.encoder, d_x.data(),
                /*relu_hidden=*/true, grads, /*d_input=*/nullptr,
                /*add_input=*/false);
  }
}

template <typename T>
void DenseActorCritic<T>::ConvOutputGradient(size_t l, int64_t rows, T* grads,
                                             bool rows_first) {
  // Through this convolution's ReLU, into [out channels, rows *
  // positions] (the columns' order; with rows_first [rows, out channels,
  // positions], the sparse route's), and the bias's gradient.
  // The bias's sums go through one partial sum per position: a single
  // running sum is a chain of dependent adds the compiler may not
  // reorder. With that and the loop on restrict pointers (it reloaded
  // d_conv_'s data pointer at every element and branched), this went from
  // 9% of the minatar-conv loop at 16 environments to 2.1% (perf).
  // Rows outermost, so that each row's outputs are read once and the
  // partial sums ([channel, position]) stay in L1; rows first, one run per
  // row (the sparse route's layout: 2.3% -> 1.4% of the minatar-conv-lstm
  // loop at 16 environments).
  const DenseLayout::Conv& c = layout_.convs[l];
  const int64_t positions = c.positions();
  const int64_t n = rows * positions;
  const int64_t size = c.out_size();
  const T* act = conv_acts_[l].data();
  const T* d = d_conv_.data();
  conv_out_.resize(static_cast<size_t>(c.out_channels * n));
  position_sums_.assign(static_cast<size_t>(size), T{0});
  T* partial = position_sums_.data();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = r * size;
    if (rows_first) {
      ReluMaskAndSum(act + at, d + at, size, conv_out_.data() + at, partial);
      continue;
    }
    for (int64_t co = 0; co < c.out_channels; ++co) {
      const int64_t q = co * positions;
      ReluMaskAndSum(act + at + q, d + at + q, positions,
                     conv_out_.data() + co * n + r * positions, partial + q);
    }
  }
  T* db = grads + c.bias;
  for (int64_t co = 0; co < c.out_channels; ++co) {
    T sum{0};
    for (int64_t p = 0; p < positions; ++p) sum += partial[co * positions + p];
    db[co] = sum;
  }
}

template <typename T>
void DenseActorCritic<T>::Col2Im(size_t l, int64_t rows) {
  // d columns (d_cols_) added back over the patches into the gradient at
  // this convolution's input (d_conv_, [rows, in size]).
  const DenseLayout::Conv& c = layout_.convs[l];
  const int64_t positions = c.positions();
  const int64_t n = rows * positions;
  d_conv_.assign(static_cast<size_t>(rows * c.in_size()), T{0});
  const int64_t k = c.kernel;
  for (int64_t ci = 0; ci < c.in_channels; ++ci) {
    for (int64_t ky = 0; ky < k; ++ky) {
      for (int64_t kx = 0; kx < k; ++kx) {
        const T* col = d_cols_.data() + ((ci * k + ky) * k + kx) * n;
        const auto [lo, hi] = Inside(kx, c.padding, c.stride, c.in_w, c.out_w);
        for (int64_t r = 0; r < rows; ++r) {
          T* image = d_conv_.data() + r * c.in_size() + ci * c.in_h * c.in_w;
          const T* src = col + r * positions;
          for (int64_t oy = 0; oy < c.out_h; ++oy) {
            const int64_t iy = oy * c.stride - c.padding + ky;
            if (iy < 0 || iy >= c.in_h) continue;
            const int64_t base = iy * c.in_w - c.padding + kx;
            const T* from = src + oy * c.out_w;
            for (int64_t ox = lo; ox < hi; ++ox) {
              image[base + ox * c.stride] += from[ox];
            }
          }
        }
      }
    }
  }
}

template <typename T>
void DenseActorCritic<T>::BackwardTrunk(const T* params, const T* obs,
                                        int64_t rows, T* grads) {
  // Through the ReLU after the trunk's last layer.
  ReluBackward(trunk_acts_.back().data(), rows * layout_.trunk.back().out,
               d_features_.data());
  const DenseLayout::Conv& last = layout_.convs.back();
  d_conv_.resize(static_cast<size_t>(rows * last.out_size()));
  BackwardMlp(layout_.trunk, params, conv_acts_.back().data(), rows,
              trunk_acts_, d_features_.data(), /*relu_hidden=*/true, grads,
              d_conv_.data(), /*add_input=*/false);
  for (size_t l = layout_.convs.size(); l-- > 0;) {
    const DenseLayout::Conv& c = layout_.convs[l];
    const int64_t positions = c.positions();
    const int64_t n = rows * positions;
    // dW = dY columns^T: the columns kept from the forward pass, else
    // built again from this layer's input; or the first convolution's over
    // its nonzero inputs (where its forward pass took that route, no
    // columns were kept).
    const bool kept = rows > 0 && rows <= cols_rows_;
    if (l == 0 && !kept &&
        SparseFirstConvolution(obs, layout_.row_size, rows)) {
      ConvOutputGradient(l, rows, grads, /*rows_first=*/true);
      SparseConvolutionGradient(obs, layout_.row_size, rows, grads);
      break;
    }
    ConvOutputGradient(l, rows, grads, /*rows_first=*/false);
    const T* cols = nullptr;
    int64_t ld = n;
    if (kept) {
      cols = kept_cols_[l].data();
      ld = cols_capacity_ * positions;
    } else {
      const T* in = l == 0 ? obs : conv_acts_[l - 1].data();
      cols_.resize(static_cast<size_t>(c.patch() * n));
      Im2Col(l, in, l == 0 ? layout_.row_size : layout_.convs[l - 1].out_size(),
             rows, cols_.data(), n);
      cols = cols_.data();
    }
    // In pieces of the rows' positions (k) that OpenBLAS's small-matrix
    // kernels take, where it has them (above).
    int64_t piece = n;
    while (small_products_ && c.out_channels * c.patch() <= kSmallResult &&
           piece > 2 * kSmallMinK &&
           c.out_channels * c.patch() * piece > kSmallProduct) {
      piece = (piece + 1) / 2;
    }
    for (int64_t j = 0; j < n; j += piece) {
      Gemm(false, true, c.out_channels, c.patch(), std::min(piece, n - j),
           conv_out_.data() + j, n, cols + j, ld, /*accumulate=*/j > 0,
           grads + c.weight, c.patch());
    }
    if (l == 0) break;
    // d columns = W^T dY, added back over the patches (col2im) into the
    // previous convolution's output gradient.
    d_cols_.resize(static_cast<size_t>(c.patch() * n));
    Gemm(true, false, c.patch(), n, c.out_channels, params + c.weight,
         c.patch(), conv_out_.data(), n, /*accumulate=*/false, d_cols_.data(),
         n);
    Col2Im(l, rows);
  }
}

template class DenseActorCritic<float>;
template class DenseActorCritic<double>;

}  // namespace asyncrl
