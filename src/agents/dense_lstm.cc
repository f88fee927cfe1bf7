// The fast path's LSTM cells (agents/dense_path.h): steps and unrolls of
// one or two cells, and backpropagation through time.
#include <algorithm>

#include "asyncrl/agents/dense_kernels.h"
#include "asyncrl/agents/dense_path.h"
#include "asyncrl/agents/fast_math.h"
#include "asyncrl/agents/lstm_gate_gradients.h"
#include "asyncrl/misc/check.h"

namespace asyncrl {

using dense::ColumnSums;
using dense::Gemm;
using dense::kSmallProduct;
using dense::ReluBackward;
using dense::RowsTimesWeights;
using dense::SigmoidInPlace;
using dense::TanhInPlace;
using dense::WeightGradient;

namespace {

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

}  // namespace

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
  // whose products stay within OpenBLAS's small-matrix limit (dense_kernels.h;
  // it then skips packing W_hh for every step): 16 sequences x 512 gates x 128
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

// The members this file defines, for both scalars (dense_path.cc
// instantiates the class; agents/dense_path.h declares it extern).
#define ASYNCRL_DENSE_LSTM_MEMBERS(T)                                      \
  template void DenseActorCritic<T>::Unroll(                               \
      const T*, const T*, int64_t, int64_t, const T*, const uint8_t*);     \
  template void DenseActorCritic<T>::StateAfter(int64_t, T*) const;        \
  template void DenseActorCritic<T>::CoreRows(const T*, int64_t, int64_t,  \
                                              const T*, T*, size_t);       \
  template void DenseActorCritic<T>::GatesThroughTime(const T*, size_t,    \
                                                      int64_t, Sequences); \
  template void DenseActorCritic<T>::BackwardCells(const T*, const T*,     \
                                                   int64_t, Sequences, T*);
ASYNCRL_DENSE_LSTM_MEMBERS(float)
ASYNCRL_DENSE_LSTM_MEMBERS(double)
#undef ASYNCRL_DENSE_LSTM_MEMBERS

}  // namespace asyncrl
