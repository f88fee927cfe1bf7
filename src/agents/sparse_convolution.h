// The first convolution of a trunk over the lines of its input that are
// not all zeros. MinAtar's frames set ~8% of their cells (Breakout: 33 of
// 400), in few lines: the paddle's, the ball's and its trail's one line
// each, three of bricks, ~6 of the 40 lines of [4, 10, 10]. A line that is
// all zeros adds nothing to any output, so only the others go through the
// kernel: each output row is the sum, over the lines its patches read that
// are set and their offsets kx, of the line's inputs times one weight, in
// runs of 8 output columns. Im2col and gemm go through every input. The
// outputs stay in the layout the next layer reads ([channel, position]),
// with no transposition. (Leaving the zeros out differs from the product
// only where a weight or an output gradient is infinite or NaN: 0 times it
// is NaN there, left out here.)
//
// Shared by the fast path's double loops and the float ones in
// fast_math.cc, which compiles them for several vector widths (each
// element goes through the same operations in the same order at every
// width, so the widths agree bit for bit). Internal: not installed.
#ifndef ASYNCRL_AGENTS_SPARSE_CONVOLUTION_H_
#define ASYNCRL_AGENTS_SPARSE_CONVOLUTION_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "asyncrl/agents/conv_geometry.h"

namespace asyncrl {

// Vectors passed by value between these functions: GCC warns that their
// calling convention differs with the vector width, which no call here
// has (every function is inlined).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

// Inlined into each of fast_math.cc's vector clones (an out-of-line copy
// is compiled once, for the baseline, and every clone would call it).
#define ASYNCRL_SPARSE_INLINE __attribute__((always_inline)) inline

// Whether line[i] != 0 (or is NaN) for some i < n: their bits but the
// sign's ORed as integers, which vectorizes (a float compare per element,
// with its NaN test, did not: it was most of the route's time).
template <typename T>
ASYNCRL_SPARSE_INLINE bool AnyNonzero(const T* line, int64_t n) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  static_assert(sizeof(Bits) == sizeof(T), "float or double");
  Bits any = 0;
  for (int64_t i = 0; i < n; ++i) {
    Bits b;
    std::memcpy(&b, line + i, sizeof(b));
    any |= b << 1;
  }
  return any != 0;
}

// Outputs are computed in runs of kRun columns of one output row, each
// run's sums in one vector (GCC's vector extensions: 8 floats, one AVX
// register; two SSE ones in the baseline clone). Left to the compiler, a
// loop over a run (or over out_w columns) stayed scalar, or took
// AVX-512's 16-wide body only from 16 columns on: MinAtar's outputs have 8.
constexpr int64_t kRun = 8;

template <typename T>
struct RunOf {
  typedef T type __attribute__((vector_size(kRun * sizeof(T))));
};
template <typename T>
using Run = typename RunOf<T>::type;

template <typename T>
ASYNCRL_SPARSE_INLINE Run<T> LoadRun(const T* p) {
  Run<T> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The geometry the loops read: ConvGeometry's, or with K > 0 fixed at
// compile time for a kernel of K, stride 1, no padding and W output
// columns (MinAtar's: 3 and 8), so that the compiler unrolls and folds
// what depends on them. Measured on Breakout's frames (16 rows forward,
// 80 backward, this 2-core AMD EPYC): the runtime shape took ~2x as long.
template <int K, int W>
struct Shape {
  const ConvGeometry& g;
  int64_t k() const { return K > 0 ? K : g.kernel; }
  int64_t stride() const { return K > 0 ? 1 : g.stride; }
  int64_t padding() const { return K > 0 ? 0 : g.padding; }
  int64_t out_w() const { return K > 0 ? W : g.out_w; }
  int64_t in_w() const { return K > 0 ? W + K - 1 : g.in_w; }
  int64_t patch() const { return g.in_channels * k() * k(); }
  int64_t positions() const { return g.out_h * out_w(); }
  int64_t out_size() const { return g.out_channels * positions(); }
};

// Input column of output column ox for kernel column kx: ox * stride +
// base, base = kx - padding. Whether the run [ox0, ox0 + kRun) is whole
// (within out_w) and, stride 1, reads inside the line for every base in
// [base_lo, base_hi], so that no column needs a check.
template <typename S>
ASYNCRL_SPARSE_INLINE bool RunInside(const S& s, int64_t ox0, int64_t base_lo,
                                     int64_t base_hi) {
  return s.stride() == 1 && ox0 + kRun <= s.out_w() && ox0 + base_lo >= 0 &&
         ox0 + kRun - 1 + base_hi < s.in_w();
}

// The inputs at columns ox * stride + base of `line` for the run's ox,
// zero outside the line (the padding) or past out_w.
template <typename S, typename T>
ASYNCRL_SPARSE_INLINE Run<T> InputRun(const S& s, const T* line, int64_t ox0,
                                      int64_t base) {
  Run<T> v = {};
  for (int64_t j = 0; j < kRun; ++j) {
    const int64_t ox = ox0 + j;
    const int64_t ix = ox * s.stride() + base;
    if (ox < s.out_w() && ix >= 0 && ix < s.in_w()) v[j] = line[ix];
  }
  return v;
}

// Output channels are taken kChannels at a time: their sums are
// independent chains of adds (one channel's would wait on each add), and
// they share each run of inputs loaded.
constexpr int64_t kChannels = 8;

// acc[j] += the run of output columns [ox0, ox0 + kRun) of channel j of a
// block, over the lines `taps` lists (n of them): w is the block's first
// channel's weights, `channels` of the block real (all of them: kFull,
// which leaves the test out of the loop).
template <bool kFull, typename S, typename T>
ASYNCRL_SPARSE_INLINE void OutputRun(const S& s, const T* image,
                                     const int64_t* taps, int64_t n, const T* w,
                                     int64_t channels, int64_t ox0, T scale,
                                     Run<T>* acc) {
  const int64_t k = s.k();
  const int64_t next = s.g.out_channels;  // From one tap's weights to the next.
  const bool inside = RunInside(s, ox0, -s.padding(), k - 1 - s.padding());
  for (int64_t t = 0; t < n; ++t) {
    const T* wt = w + taps[2 * t] * next;
    const T* line = image + taps[2 * t + 1];
    for (int64_t kx = 0; kx < k; ++kx) {
      const int64_t base = kx - s.padding();
      const Run<T> x =
          (inside ? LoadRun(line + ox0 + base) : InputRun(s, line, ox0, base)) *
          scale;
      const T* wk = wt + kx * next;
#pragma GCC unroll 8
      for (int64_t j = 0; j < kChannels; ++j) {
        if (kFull || j < channels) acc[j] += wk[j] * x;
      }
    }
  }
}

// acc[j] += d's run for channel j (channels `positions` apart) times x.
template <bool kFull, typename T>
ASYNCRL_SPARSE_INLINE void GradientRun(const T* d, int64_t positions,
                                       int64_t channels, Run<T> x,
                                       Run<T>* acc) {
#pragma GCC unroll 8
  for (int64_t j = 0; j < kChannels; ++j) {
    if (kFull || j < channels) acc[j] += LoadRun(d + j * positions) * x;
  }
}

template <typename S, typename T>
ASYNCRL_SPARSE_INLINE void SparseConvolutionOfShape(
    const S& s, const T* in, int64_t stride, int64_t rows, T scale,
    const uint8_t* set, const T* w, const T* bias, int64_t* taps, T* y) {
  const ConvGeometry& g = s.g;
  const int64_t k = s.k();
  const int64_t out_w = s.out_w();
  const int64_t in_w = s.in_w();
  const int64_t positions = s.positions();
  const int64_t size = s.out_size();
  const int64_t lines = g.in_channels * g.in_h;
  for (int64_t r = 0; r < rows; ++r) {
    const T* image = in + r * stride;
    const uint8_t* row_set = set + r * lines;
    T* out = y + r * size;
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      // The lines output row oy reads that are not all zeros: (weight
      // offset of (in channel, ky) within an output channel's, line).
      int64_t n = 0;
      for (int64_t ci = 0; ci < g.in_channels; ++ci) {
        for (int64_t ky = 0; ky < k; ++ky) {
          const int64_t iy = oy * s.stride() - s.padding() + ky;
          if (iy < 0 || iy >= g.in_h || row_set[ci * g.in_h + iy] == 0) {
            continue;
          }
          taps[2 * n] = (ci * k + ky) * k;
          taps[2 * n + 1] = (ci * g.in_h + iy) * in_w;
          ++n;
        }
      }
      for (int64_t co0 = 0; co0 < g.out_channels; co0 += kChannels) {
        const int64_t channels = std::min(kChannels, g.out_channels - co0);
        for (int64_t ox0 = 0; ox0 < out_w; ox0 += kRun) {
          Run<T> acc[kChannels] = {};
          if (channels == kChannels) {
            OutputRun<true>(s, image, taps, n, w + co0, channels, ox0, scale,
                            acc);
          } else {
            OutputRun<false>(s, image, taps, n, w + co0, channels, ox0, scale,
                             acc);
          }
          const int64_t m = std::min(kRun, out_w - ox0);
          // (Every loop over acc has a fixed count and is unrolled: an
          // index the compiler cannot fold keeps acc in memory.)
#pragma GCC unroll 8
          for (int64_t j = 0; j < kChannels; ++j) {
            if (j >= channels) continue;
            // max(sum + b, 0) as std::max: NaN and -0 pass.
            Run<T> v = acc[j] + bias[co0 + j];
            v = v < T{0} ? Run<T>{} : v;
            T* o = out + (co0 + j) * positions + oy * out_w + ox0;
            if (m == kRun) {
              std::memcpy(o, &v, sizeof(v));
            } else {
              for (int64_t q = 0; q < m; ++q) o[q] = v[q];
            }
          }
        }
      }
    }
  }
}

template <typename S, typename T>
ASYNCRL_SPARSE_INLINE void SparseConvolutionGradientOfShape(
    const S& s, const T* in, int64_t stride, int64_t rows, T scale,
    const uint8_t* set, const T* d_out, int64_t* index, T* dw) {
  const ConvGeometry& g = s.g;
  const int64_t k = s.k();
  const int64_t out_w = s.out_w();
  const int64_t in_w = s.in_w();
  const int64_t patch = s.patch(), positions = s.positions();
  const int64_t size = s.out_size();
  const bool unit = s.stride() == 1;
  // Per row and in channel: how many lines are not all zeros, then their
  // input rows.
  const int64_t per = g.in_h + 1;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t ci = 0; ci < g.in_channels; ++ci) {
      int64_t* list = index + (r * g.in_channels + ci) * per;
      const uint8_t* line_set = set + (r * g.in_channels + ci) * g.in_h;
      int64_t n = 0;
      for (int64_t iy = 0; iy < g.in_h; ++iy) {
        if (line_set[iy] != 0) list[1 + n++] = iy;
      }
      list[0] = n;
    }
  }
  for (int64_t co0 = 0; co0 < g.out_channels; co0 += kChannels) {
    const int64_t channels = std::min(kChannels, g.out_channels - co0);
    for (int64_t ci = 0; ci < g.in_channels; ++ci) {
      for (int64_t ky = 0; ky < k; ++ky) {
        for (int64_t kx = 0; kx < k; ++kx) {
          const int64_t base = kx - s.padding();
          Run<T> acc[kChannels] = {};
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t* list = index + (r * g.in_channels + ci) * per;
            const T* image = in + r * stride + ci * g.in_h * in_w;
            const T* d_rows = d_out + r * size + co0 * positions;
            for (int64_t t = 1; t <= list[0]; ++t) {
              const int64_t ty = list[t] + s.padding() - ky;  // oy * stride.
              // (No division at stride 1: it was most of this loop's time.)
              if (ty < 0 || (!unit && ty % s.stride() != 0)) continue;
              const int64_t oy = unit ? ty : ty / s.stride();
              if (oy >= g.out_h) continue;
              const T* line = image + list[t] * in_w;
              const T* d = d_rows + oy * out_w;
              for (int64_t ox0 = 0; ox0 < out_w; ox0 += kRun) {
                if (RunInside(s, ox0, base, base)) {
                  const Run<T> x = LoadRun(line + ox0 + base) * scale;
                  if (channels == kChannels) {
                    GradientRun<true>(d + ox0, positions, channels, x, acc);
                  } else {
                    GradientRun<false>(d + ox0, positions, channels, x, acc);
                  }
                } else {
                  const Run<T> x = InputRun(s, line, ox0, base) * scale;
#pragma GCC unroll 8
                  for (int64_t j = 0; j < kChannels; ++j) {
                    if (j >= channels) continue;
                    Run<T> dv = {};
                    for (int64_t q = 0; q < kRun && ox0 + q < out_w; ++q) {
                      dv[q] = d[j * positions + ox0 + q];
                    }
                    acc[j] += dv * x;
                  }
                }
              }
            }
          }
#pragma GCC unroll 8
          for (int64_t j = 0; j < kChannels; ++j) {
            if (j >= channels) continue;
            T sum{0};
            for (int64_t q = 0; q < kRun; ++q) sum += acc[j][q];
            dw[(co0 + j) * patch + (ci * k + ky) * k + kx] = sum;
          }
        }
      }
    }
  }
}

// Whether `g` is the shape Shape<3, 8> fixes (MinAtar's convolution).
inline bool MinAtarShape(const ConvGeometry& g) {
  return g.kernel == 3 && g.stride == 1 && g.padding == 0 && g.out_w == 8 &&
         g.in_w == 10;
}

// The convolution (weights `w` as [in channels, k, k, out channels]:
// LibTorch's transposed, so that a tap's weights for a block of channels
// are one run), its bias and a ReLU for `rows` rows of `in` (rows `stride`
// apart) into y ([rows, out channels, positions]). Each output is the sum
// over its patch in the patch's order (in channel, ky, kx), as a product
// over im2col's columns, the lines of zeros left out, then the bias.
// `set`: per row and line of the input ([rows, in channels, in_h]),
// whether it is set (AnyNonzero); `index`: scratch of 2 * in channels * k.
template <typename T>
ASYNCRL_SPARSE_INLINE void SparseConvolutionRows(
    const ConvGeometry& g, const T* in, int64_t stride, int64_t rows, T scale,
    const uint8_t* set, const T* w, const T* bias, int64_t* index, T* y) {
  if (MinAtarShape(g)) {
    SparseConvolutionOfShape(Shape<3, 8>{g}, in, stride, rows, scale, set, w,
                             bias, index, y);
  } else {
    SparseConvolutionOfShape(Shape<0, 0>{g}, in, stride, rows, scale, set, w,
                             bias, index, y);
  }
}

// The weight gradient over `rows` rows from the gradient at the outputs
// (`d_out`, [rows, out channels, positions], past the ReLU) into `dw`
// ([out channels, in channels, k, k], overwritten). Per weight, one
// partial sum per column of a run (one vector) over the rows and the
// output rows whose lines are set, then their sum. `set` as
// SparseConvolutionRows'; `index`: scratch of rows * in channels * (in_h +
// 1).
template <typename T>
ASYNCRL_SPARSE_INLINE void SparseConvolutionGradientRows(
    const ConvGeometry& g, const T* in, int64_t stride, int64_t rows, T scale,
    const uint8_t* set, const T* d_out, int64_t* index, T* dw) {
  if (MinAtarShape(g)) {
    SparseConvolutionGradientOfShape(Shape<3, 8>{g}, in, stride, rows, scale,
                                     set, d_out, index, dw);
  } else {
    SparseConvolutionGradientOfShape(Shape<0, 0>{g}, in, stride, rows, scale,
                                     set, d_out, index, dw);
  }
}

}  // namespace asyncrl

#undef ASYNCRL_SPARSE_INLINE
#pragma GCC diagnostic pop

#endif  // ASYNCRL_AGENTS_SPARSE_CONVOLUTION_H_
