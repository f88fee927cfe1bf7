// The fast path's MLPs (the pi and v heads, a trunk's dense layers, the
// LSTM encoders) and what ties the parts together: forward over kept rows,
// the policy's outputs and their gradients, backward. The convolution trunk
// is in dense_conv.cc, the LSTM cells in dense_lstm.cc, the layout in
// dense_layout.cc.
#include "asyncrl/agents/dense_path.h"

#include <algorithm>
#include <utility>

#include "asyncrl/agents/dense_kernels.h"
#include "asyncrl/agents/distributions.h"
#include "asyncrl/misc/check.h"

namespace asyncrl {

using dense::AffineRows;
using dense::ColumnSums;
using dense::Gemm;
using dense::ReluBackward;
using dense::TanhInPlace;
using dense::WeightGradient;

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

template class DenseActorCritic<float>;
template class DenseActorCritic<double>;

}  // namespace asyncrl
