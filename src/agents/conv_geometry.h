// A convolution's shape, as the fast path's loops read it: the layout's
// convolutions (agents/dense_path.h) and the sparse route's loops
// (agents/sparse_convolution.h, fast_math.h). Internal: not installed.
#ifndef ASYNCRL_AGENTS_CONV_GEOMETRY_H_
#define ASYNCRL_AGENTS_CONV_GEOMETRY_H_

#include <cstdint>

namespace asyncrl {

struct ConvGeometry {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel = 0;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t in_h = 0, in_w = 0;    // Input image size.
  int64_t out_h = 0, out_w = 0;  // Output image size.

  int64_t patch() const { return in_channels * kernel * kernel; }
  int64_t positions() const { return out_h * out_w; }
  int64_t in_size() const { return in_channels * in_h * in_w; }
  int64_t out_size() const { return out_channels * positions(); }
};

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_CONV_GEOMETRY_H_
