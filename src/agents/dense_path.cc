#include "asyncrl/agents/dense_path.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "asyncrl/agents/distributions.h"
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

}  // namespace

DenseLayout DenseLayout::Of(const DenseDescription& description,
                            FlatParameters& flat) {
  DenseLayout layout;
  layout.kind = description.kind;
  layout.tanh = description.tanh;
  int64_t covered = 0;
  layout.pi = Layers(description.pi, flat, "pi", &covered);
  layout.v = Layers(description.v, flat, "v", &covered);
  if (layout.pi.front().in != layout.v.front().in || layout.v.back().out != 1) {
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
      v_acts_(layout_.v.size()) {}

template <typename T>
void DenseActorCritic<T>::ForwardMlp(
    const std::vector<DenseLayout::Layer>& layers, const T* params,
    const T* obs, int64_t rows, int64_t first_row,
    std::vector<std::vector<T>>* acts) {
  const T* x = obs;
  for (size_t l = 0; l < layers.size(); ++l) {
    const DenseLayout::Layer& layer = layers[l];
    std::vector<T>& out = (*acts)[l];
    // Rows before first_row are kept (resize preserves them).
    out.resize(static_cast<size_t>((first_row + rows) * layer.out));
    T* y = out.data() + first_row * layer.out;
    const T* bias = params + layer.bias;
    for (int64_t r = 0; r < rows; ++r) {
      std::copy(bias, bias + layer.out, y + r * layer.out);
    }
    const T* w = params + layer.weight;
    if (rows == 1) {
      GemvAccumulate(layer.out, layer.in, w, x, y);
    } else {
      Gemm(false, true, rows, layer.out, layer.in, x, layer.in, w, layer.in,
           /*accumulate=*/true, y, layer.out);
    }
    if (l + 1 < layers.size()) {
      const int64_t count = rows * layer.out;
      if (layout_.tanh) {
        for (int64_t i = 0; i < count; ++i) y[i] = std::tanh(y[i]);
      } else {
        for (int64_t i = 0; i < count; ++i) y[i] = std::max(y[i], T{0});
      }
    }
    x = y;
  }
}

template <typename T>
void DenseActorCritic<T>::Forward(const T* params, const T* obs, int64_t rows,
                                  int64_t first_row, bool with_policy) {
  ASYNCRL_CHECK_GE(first_row, 0);
  ASYNCRL_CHECK_LE(first_row, rows_);
  rows_ = first_row + rows;
  ForwardMlp(layout_.v, params, obs, rows, first_row, &v_acts_);
  if (!with_policy) return;
  ForwardMlp(layout_.pi, params, obs, rows, first_row, &pi_acts_);
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
  for (int64_t r = first_row; r < rows_; ++r) {
    for (int64_t j = 0; j < d; ++j) {
      const int64_t i = r * d + j;
      squashed_[i] = std::tanh(raw[i]);
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
                                         const double* d_value, T* grads) {
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
    Backward(params, obs, rows, d_policy_.data(), d_values_.data(), grads);
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
  Backward(params, obs, rows, d_policy_.data(), d_values_.data(), grads);
  for (int64_t j = 0; j < n; ++j) {
    grads[layout_.log_std + j] = static_cast<T>(d_log_std[j]);
  }
}

template <typename T>
void DenseActorCritic<T>::BackwardMlp(
    const std::vector<DenseLayout::Layer>& layers, const T* params,
    const T* obs, int64_t rows, const std::vector<std::vector<T>>& acts,
    const T* d_out, T* grads) {
  const T* dy = d_out;
  for (size_t l = layers.size(); l-- > 0;) {
    const DenseLayout::Layer& layer = layers[l];
    // The layer's input: the observations, or the previous layer's output
    // (rows beyond `rows` are never read: the matrices are row-major).
    const T* x = l == 0 ? obs : acts[l - 1].data();
    // dW = dY^T X, db = the column sums of dY.
    Gemm(true, false, layer.out, layer.in, rows, dy, layer.out, x, layer.in,
         /*accumulate=*/false, grads + layer.weight, layer.in);
    T* db = grads + layer.bias;
    std::fill(db, db + layer.out, T{0});
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = dy + r * layer.out;
      for (int64_t j = 0; j < layer.out; ++j) db[j] += row[j];
    }
    if (l == 0) break;
    // dX = dY W, then through the activation that produced X.
    d_next_.resize(static_cast<size_t>(rows * layer.in));
    Gemm(false, false, rows, layer.in, layer.out, dy, layer.out,
         params + layer.weight, layer.in, /*accumulate=*/false, d_next_.data(),
         layer.in);
    const int64_t count = rows * layer.in;
    if (layout_.tanh) {
      T* d = d_next_.data();
      for (int64_t i = 0; i < count; ++i) d[i] *= T{1} - x[i] * x[i];
    } else {
      // A select, not a branch: the signs are random, and a mispredicted
      // branch per element cost ~10% of a 16-environment update.
      T* d = d_next_.data();
      for (int64_t i = 0; i < count; ++i) d[i] = x[i] > T{0} ? d[i] : T{0};
    }
    d_cur_.swap(d_next_);
    dy = d_cur_.data();
  }
}

template <typename T>
void DenseActorCritic<T>::Backward(const T* params, const T* obs, int64_t rows,
                                   const T* d_policy, const T* d_values,
                                   T* grads) {
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
  BackwardMlp(layout_.pi, params, obs, rows, pi_acts_, d_pi, grads);
  BackwardMlp(layout_.v, params, obs, rows, v_acts_, d_values, grads);
}

template class DenseActorCritic<float>;
template class DenseActorCritic<double>;

}  // namespace asyncrl
