// The fast path's convolution trunk (agents/dense_path.h): im2col and
// gemm, or the sparse route for a first convolution over mostly empty
// inputs, forward and backward.
#include <algorithm>
#include <utility>

#include "asyncrl/agents/dense_kernels.h"
#include "asyncrl/agents/dense_path.h"
#include "asyncrl/agents/fast_math.h"
#include "asyncrl/agents/sparse_convolution.h"

namespace asyncrl {

using dense::Gemm;
using dense::kSmallMinK;
using dense::kSmallProduct;
using dense::kSmallResult;
using dense::ReluBackward;
using dense::ReluMaskAndSum;
using dense::ScaledRun;

namespace {

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

}  // namespace

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
    // kernels take, where it has them (dense_kernels.h).
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

// The members this file defines, for both scalars (dense_path.cc
// instantiates the class; agents/dense_path.h declares it extern).
#define ASYNCRL_DENSE_CONV_MEMBERS(T)                                          \
  template void DenseActorCritic<T>::Im2Col(size_t, const T*, int64_t,         \
                                            int64_t, T*, int64_t);             \
  template bool DenseActorCritic<T>::SparseFirstConvolution(const T*, int64_t, \
                                                            int64_t);          \
  template void DenseActorCritic<T>::SparseConvolution(const T*, const T*,     \
                                                       int64_t, int64_t, T*);  \
  template void DenseActorCritic<T>::SparseConvolutionGradient(                \
      const T*, int64_t, int64_t, T*);                                         \
  template bool DenseActorCritic<T>::ReserveColumns(int64_t, int64_t);         \
  template void DenseActorCritic<T>::ForwardTrunk(const T*, const T*, int64_t, \
                                                  int64_t);                    \
  template void DenseActorCritic<T>::ConvOutputGradient(size_t, int64_t, T*,   \
                                                        bool);                 \
  template void DenseActorCritic<T>::Col2Im(size_t, int64_t);                  \
  template void DenseActorCritic<T>::BackwardTrunk(const T*, const T*,         \
                                                   int64_t, T*);
ASYNCRL_DENSE_CONV_MEMBERS(float)
ASYNCRL_DENSE_CONV_MEMBERS(double)
#undef ASYNCRL_DENSE_CONV_MEMBERS

}  // namespace asyncrl
