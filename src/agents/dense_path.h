// The fast path for small actor-critics: the forward pass and the gradient
// of the actor-critic loss of a model that DenseDescription describes
// (agents/models.h: fc-softmax, fc-gaussian; minatar-conv and atari-conv,
// whose convolutional trunk pi and v share; board-conv's trunk too, though
// agents keep it on LibTorch, faster there; the -lstm forms of all but
// board-conv), computed with BLAS calls directly on the flat parameter
// buffer (agents/flat_parameters.h): no autograd, no dispatcher, no tensor
// allocation once the buffers have grown to a rollout's rows.
//
// A convolution is one gemm over all the rows of a call: the input patches
// laid out as columns (im2col, [C k k, rows * positions]) times the weight
// [out channels, C k k]; its backward pass is the weight's gradient as one
// gemm against the same columns (kept from acting within a budget, else
// built again from the kept input), and the input's gradient (for a
// convolution after the first) as one gemm scattered back over the patches
// (col2im). The first convolution instead goes over the lines of its input
// that are not all zeros (agents/sparse_convolution.h) where few are set
// (MinAtar's frames), forward and for its weight gradient.
//
// An LSTM cell (LstmActorCritic's, gates i, f, g, o) computes the input's
// share of its gates, x W_ih^T + b_ih + b_hh, for all the rows of a call
// in one gemm (a rollout's when unrolling), the state's share h W_hh^T one
// step at a time (one gemm over the step's sequences), and the gates'
// activations in one loop. Its backward pass runs through time, step by
// step from the last (one gemm per step for d h_prev = d gates W_hh, the
// chain cut where a sequence ended, since the next step started from the
// zero state), then gets W_hh's, W_ih's and the input's gradients in one
// gemm each over all the rows.
//
// Why: at the sizes A3C uses (1 to ~100 rows, layers of 64 to 200 units)
// LibTorch's per-operator cost (dispatch, autograd bookkeeping, allocation:
// a few microseconds per operator, dozens of operators per step) is most of
// the time of a step; the arithmetic of the 4-200-200-2 network is ~41k
// multiply-adds. Here a layer is one gemm (gemv for one row) and a loop.
//
// The semantics are LibTorch's, so the two paths agree to rounding
// (tests/agents/dense_path_test.cc, and the A3C gradient tests run both):
// Linear is x W^T + b (the bias written first and the product added, as
// addmm does); a convolution's output is flattened channel by channel;
// ReLU's gradient at 0 is 0; a Gaussian's mean is
// center + half_range * tanh(raw) with a state-independent log standard
// deviation; log-probabilities and entropies are the ones of
// agents/distributions.h, computed in double.
//
// Templated on the scalar: float is what agents run; double exists so that
// tests can compare with LibTorch in double precision.
#ifndef ASYNCRL_AGENTS_DENSE_PATH_H_
#define ASYNCRL_AGENTS_DENSE_PATH_H_

#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "asyncrl/agents/conv_geometry.h"
#include "asyncrl/agents/flat_parameters.h"
#include "asyncrl/agents/models.h"
#include "asyncrl/misc/platform/blas_kernel.h"

namespace asyncrl {

// Where a described model's tensors live in its flat parameter buffer.
struct DenseLayout {
  struct Layer {
    int64_t in = 0;
    int64_t out = 0;
    int64_t weight = 0;  // Offset of the [out, in] row-major weight.
    int64_t bias = 0;    // Offset of the [out] bias.
  };
  // A convolution: its shape, and where its parameters are.
  struct Conv : ConvGeometry {
    int64_t weight = 0;  // Offset of the [out, in, k, k] weight.
    int64_t bias = 0;    // Offset of the [out] bias.
  };
  // An LSTM cell (DenseDescription::Lstm): [4 H, in] and [4 H, H] weights,
  // [4 H] biases, and its encoder over the observation (two branches).
  struct Lstm {
    int64_t in = 0;
    int64_t hidden = 0;  // H.
    int64_t weight_ih = 0;
    int64_t weight_hh = 0;
    int64_t bias_ih = 0;
    int64_t bias_hh = 0;
    std::vector<Layer> encoder;
  };
  PolicyKind kind = PolicyKind::kCategorical;
  // The shared trunk (DenseDescription): none when `convs` and `trunk` are
  // empty; then pi and v (or the LSTM cells) read the observation.
  double input_scale = 1.0;
  std::vector<Conv> convs;
  std::vector<Layer> trunk;
  // Recurrent models: 1 cell (after the trunk) or 2 (the policy's and the
  // value's branches); pi and v read their hidden outputs.
  std::vector<Lstm> lstm;
  std::vector<Layer> pi;
  std::vector<Layer> v;
  bool tanh = false;
  // Floats per observation row: what pi and v read, or the trunk's image;
  // more when the observation carries columns after it (MakeDenseBackend:
  // a board game's action mask).
  int64_t row_size = 0;
  int64_t log_std = -1;  // Offset of the Gaussian's [D] log_std.
  // Categorical: > 0 when the last policy_size() floats of each observation
  // are a legal-action mask (Space::action_mask); Forward sets the illegal
  // actions' logits to kMaskedLogit, so acting, the loss and the entropy
  // give them probability 0 and their logits get no gradient.
  int64_t action_mask = 0;
  std::vector<double> center;      // Gaussian: [D].
  std::vector<double> half_range;  // Gaussian: [D].

  bool has_trunk() const { return !convs.empty() || !trunk.empty(); }
  bool recurrent() const { return !lstm.empty(); }
  // Floats of a sequence's recurrent state: each cell's h then c.
  int64_t state_size() const {
    return recurrent()
               ? 2 * lstm.front().hidden * static_cast<int64_t>(lstm.size())
               : 0;
  }
  int64_t obs_size() const { return row_size; }
  // Logits per row (categorical) or action dimensions (Gaussian).
  int64_t policy_size() const { return pi.back().out; }

  // The offsets of `description`'s tensors in `flat` (the parameters of the
  // model that described itself). Throws std::logic_error if a tensor is not
  // a view into `flat`, the layers do not chain, or the description does not
  // cover every parameter exactly once.
  static DenseLayout Of(const DenseDescription& description,
                        FlatParameters& flat);
};

// A vector whose resize leaves new elements uninitialized (no zeroing): the
// activations kept for a rollout grow by the step's rows at every step
// (the first step of a rollout shrinks them), and each growth zeroed what
// the step then overwrote: ~120 KB a step for minatar-conv-lstm at 16
// environments, 0.6% of its loop. Every kept row is written before it is
// read.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  explicit UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) noexcept(
      std::is_nothrow_constructible_v<U, Args...>) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <typename T>
using KeptRows = std::vector<T, UninitializedAllocator<T>>;

// One instance per agent; holds the activations of its last Forward. Not
// thread-safe.
template <typename T>
class DenseActorCritic {
 public:
  explicit DenseActorCritic(DenseLayout layout);

  const DenseLayout& layout() const { return layout_; }
  // The most bytes of convolution columns kept from acting for the update
  // (default kKeptColumnsBytes; below what the rows need, the update builds
  // them again). Set before the first Forward.
  void set_kept_columns_bytes(int64_t bytes) { kept_columns_bytes_ = bytes; }
  // Whether products are cut into the pieces OpenBLAS's small-matrix
  // kernels take (dense_kernels.h): by default where the BLAS is OpenBLAS on
  // one of its AVX-512 kernels, which have them. Tests set both ways; the
  // results are the same within rounding.
  void set_small_products(bool on) { small_products_ = on; }
  // How the first convolution is computed. kAuto: over the lines of its
  // input that are not all zeros where few are (MinAtar's frames: 6 of
  // Breakout's 40), else as im2col and gemm; kNever and kAlways choose one
  // (the update's weight gradient takes the columns kept from acting
  // whatever the mode, where they were kept). Tests set all three; the
  // results are the same within rounding (agents/sparse_convolution.h).
  enum class SparseInputs { kAuto, kNever, kAlways };
  void set_sparse_inputs(SparseInputs mode) { sparse_inputs_ = mode; }
  // Whether the first convolution of `rows` observations `obs` ([rows,
  // obs_size]) takes the sparse route under the mode set (for tests).
  bool SparseRoute(const T* obs, int64_t rows) {
    return SparseFirstConvolution(obs, layout_.row_size, rows);
  }

  // The outputs for `rows` observations `obs` ([rows, obs_size],
  // row-major) with the parameters `params` (the flat layout), computed into
  // rows [first_row, first_row + rows) of the kept outputs and activations;
  // rows before first_row are kept. So an agent forwards a rollout's steps
  // one after the other as it acts, and its update reads them all without
  // computing them again. `with_policy` false computes the values only
  // (bootstrap observations).
  // Feed-forward models only.
  void Forward(const T* params, const T* obs, int64_t rows,
               int64_t first_row = 0, bool with_policy = true);
  // Recurrent models (layout().recurrent()). One step of `rows` sequences
  // from their states `state` ([rows, state_size()]); the states after it
  // go to `next_state` (which may be `state`). Rows kept as Forward's.
  // `with_policy` false with a cell per branch steps the value's cell only:
  // the policy cell's part of next_state is left as it was and its rows
  // from first_row are not kept (StateAfter refuses them while they are
  // the last; such rows followed by a policy step hold no value: agents
  // step values only for bootstrap rows, after the rollout's).
  void Step(const T* params, const T* obs, int64_t rows, int64_t first_row,
            const T* state, T* next_state, bool with_policy = true);
  // A rollout of `steps` steps of `batch` sequences (rows step-major, as
  // agents/rollout.h), from `initial_state` ([batch, state_size()]; null:
  // zeros), a sequence's state zeroed after a row whose `sequence_end` is
  // set (ActorCriticModel::Unroll's semantics). Kept as rows [0, steps *
  // batch): what Step computes acting them one step after the other.
  void Unroll(const T* params, const T* obs, int64_t batch, int64_t steps,
              const T* initial_state, const uint8_t* sequence_end);
  // The state after kept row `row`'s step ([state_size()]) into `out`.
  void StateAfter(int64_t row, T* out) const;

  // How a recurrent model's kept rows are sequences, for the backward pass
  // through time: steps of `batch` rows, `end` as Unroll's sequence_end.
  struct Sequences {
    int64_t batch = 0;
    const uint8_t* end = nullptr;
  };
  // [rows kept, policy_size]: logits (categorical) or means in the action
  // bounds (Gaussian).
  const T* policy() const {
    return layout_.kind == PolicyKind::kCategorical ? pi_acts_.back().data()
                                                    : means_.data();
  }
  const T* values() const { return v_acts_.back().data(); }  // [rows kept].

  // For the first `rows` kept rows: log pi(a_i) and the entropy of each
  // row's distribution, in double (agents/distributions.h). Categorical
  // actions are indices (`actions`), Gaussian ones [rows, D] floats
  // (`cont_actions`); the other may be null. `params` are Forward's (the
  // Gaussian's log_std).
  void EvaluateActions(const T* params, int64_t rows, const int64_t* actions,
                       const float* cont_actions, double* log_probs,
                       double* entropies);

  // The gradient with respect to every parameter of a loss whose gradients
  // with respect to the first `rows` kept rows' outputs are d_log_prob
  // (d L / d log pi(a_i)), d_entropy (d L / d H_i) and d_value
  // (d L / d v_i), [rows] each; `obs` are what Forward got for those rows
  // ([rows, obs_size]). Written into `grads` (the flat layout; every
  // element is overwritten).
  void OutputGradient(const T* params, const T* obs, int64_t rows,
                      const int64_t* actions, const float* cont_actions,
                      const double* d_log_prob, const double* d_entropy,
                      const double* d_value, T* grads,
                      Sequences sequences = {});

  // Backpropagates d L / d policy output (logits, or the means in the action
  // bounds) and d L / d value of the first `rows` kept rows (observations
  // `obs`) into the gradients of the two MLPs' weights and biases in
  // `grads` (overwritten; the log_std gradient is left alone).
  // Recurrent models: `sequences` says how the rows chain (the initial
  // state takes no gradient).
  void Backward(const T* params, const T* obs, int64_t rows, const T* d_policy,
                const T* d_values, T* grads, Sequences sequences = {});

 private:
  // `x`: the rows' inputs ([rows, layers.front().in]). `relu_all`: ReLU
  // after every layer (the trunk), else layout_'s activation after the
  // hidden ones.
  void ForwardMlp(const std::vector<DenseLayout::Layer>& layers,
                  const T* params, const T* x, int64_t rows, int64_t first_row,
                  std::vector<KeptRows<T>>* acts, bool relu_all);
  // `d_out`: the gradient at the last layer's output (past its activation,
  // if any). `d_input` non-null: the gradient with respect to `x` is
  // written (added, when `add_input`) there.
  void BackwardMlp(const std::vector<DenseLayout::Layer>& layers,
                   const T* params, const T* x, int64_t rows,
                   const std::vector<KeptRows<T>>& acts, const T* d_out,
                   bool relu_hidden, T* grads, T* d_input, bool add_input);
  // The trunk over rows [first_row, first_row + rows) of `obs` (the rows'
  // observations); its output lands in trunk_acts_.back().
  void ForwardTrunk(const T* params, const T* obs, int64_t rows,
                    int64_t first_row);
  // The trunk's weight gradients from d_features_ (the gradient at its
  // output, for the first `rows` kept rows).
  void BackwardTrunk(const T* params, const T* obs, int64_t rows, T* grads);
  // Through conv layer `l`'s ReLU: d_conv_ (d L / d its output, [rows,
  // out size]) into conv_out_ ([out channels, rows * positions], the
  // columns' order; `rows_first`: [rows, out size], the sparse route's),
  // and its bias's gradient into `grads`.
  void ConvOutputGradient(size_t l, int64_t rows, T* grads, bool rows_first);
  // Whether the first convolution takes the sparse route for `rows` inputs
  // (`in`, rows `stride` apart): sparse_inputs_, and under kAuto whether
  // few enough of their lines are set. When it does, line_set_ holds
  // which are, for the route's loops.
  bool SparseFirstConvolution(const T* in, int64_t stride, int64_t rows);
  // The first convolution, bias and ReLU over the rows' lines that are not
  // all zeros (line_set_), into `y` ([rows, out size], conv_acts_'s
  // layout).
  void SparseConvolution(const T* params, const T* in, int64_t stride,
                         int64_t rows, T* y);
  // The first convolution's weight gradient (overwritten in `grads`) from
  // conv_out_ (ConvOutputGradient's, rows first) and the rows' lines that
  // are not all zeros.
  void SparseConvolutionGradient(const T* in, int64_t stride, int64_t rows,
                                 T* grads);
  // d_cols_ (d L / d conv layer `l`'s columns) added back over the patches
  // into d_conv_, which becomes d L / d the layer's input.
  void Col2Im(size_t l, int64_t rows);
  // The columns of the patches of `rows` inputs of conv layer `l` into
  // `cols` ([patch, rows * positions], patch rows `ld` apart); `in` points
  // to the first row's input, rows `stride` floats apart.
  void Im2Col(size_t l, const T* in, int64_t stride, int64_t rows, T* cols,
              int64_t ld);
  // Room in kept_cols_ for `rows` rows, keeping the first `valid` rows'
  // columns; false when `rows` rows' columns would take more than
  // kept_columns_bytes_ (the allocation, and the valid rows, stay).
  bool ReserveColumns(int64_t rows, int64_t valid);
  // The input pi (v: `value`) reads for kept row 0: the observation, the
  // trunk's output or an LSTM cell's hidden output.
  const T* HeadInput(const T* obs, bool value) const;
  // Rows [first_row, first_row + rows) become the last kept.
  void KeepRows(int64_t first_row, int64_t rows);
  // The trunk, and the LSTM cells' encoders and input shares of their gates
  // (x W_ih^T + b_ih + b_hh), for the rows; cells from `first_cell` on.
  void EncodeRows(const T* params, const T* obs, int64_t rows,
                  int64_t first_row, size_t first_cell = 0);
  // One LSTM step of the rows from `state`, into `next_state`; cells from
  // `first_cell` on.
  void CoreRows(const T* params, int64_t rows, int64_t first_row,
                const T* state, T* next_state, size_t first_cell = 0);
  // pi and v over the rows' head inputs; the policy's masking or squashing.
  void HeadRows(const T* params, const T* obs, int64_t rows, int64_t first_row,
                bool with_policy);
  // Backpropagation through time from the cells' d_h into their weights,
  // encoders and (d_features_) the trunk's output.
  void BackwardCells(const T* params, const T* obs, int64_t rows,
                     Sequences sequences, T* grads);
  // Cell `c`'s d_gates (before the activations) from its d_h, step by step
  // from the last.
  void GatesThroughTime(const T* params, size_t c, int64_t rows,
                        Sequences sequences);

  // An LSTM cell's rows kept: its encoder's layers, the gates after their
  // activations ([rows, 4 H]: i, f, g, o), the state before the step
  // ([rows, 2 H]: h, c), c, tanh(c) and h after it ([rows, H]); and the
  // backward pass's scratch.
  struct CellRows {
    std::vector<KeptRows<T>> encoder;
    KeptRows<T> gates, prev, c, tanh_c, h;
    std::vector<T> d_h, d_gates, d_input;
  };

  DenseLayout layout_;
  int64_t rows_ = 0;  // Rows kept.
  // Per MLP, each layer's output for the rows kept (hidden layers after the
  // activation); the last are the logits (or raw means) and the values.
  std::vector<KeptRows<T>> pi_acts_;
  std::vector<KeptRows<T>> v_acts_;
  // The trunk's outputs for the rows kept, per layer (after the ReLU):
  // convolutions [rows, out channels * positions], then the dense layers.
  std::vector<KeptRows<T>> conv_acts_;
  std::vector<KeptRows<T>> trunk_acts_;
  // Im2Col's columns of the rows kept, per convolution [patch,
  // cols_capacity_ * positions]: the weight gradients read them again, so
  // the update does not rebuild them (the inputs do not change between
  // acting and the update, as the activations). The first cols_rows_ rows
  // are valid. Kept up to kept_columns_bytes_ in all (minatar-conv at 16
  // environments and t_max 5: 1.8 MB); past that, cols_ holds one call's
  // and the backward pass rebuilds them.
  static constexpr int64_t kKeptColumnsBytes = int64_t{32} << 20;
  int64_t kept_columns_bytes_ = kKeptColumnsBytes;
  bool small_products_ = BlasHasSmallMatrixKernels();
  SparseInputs sparse_inputs_ = SparseInputs::kAuto;
  // The sparse route's: per row and line of the first convolution's input,
  // whether it is set (not all zeros); its loops' scratch; and the
  // convolution's weights as [patch, out channels].
  std::vector<uint8_t> line_set_;
  std::vector<int64_t> sparse_index_;
  std::vector<T> sparse_weights_;
  std::vector<std::vector<T>> kept_cols_;
  int64_t cols_capacity_ = 0;
  int64_t cols_rows_ = 0;
  std::vector<T> cols_;
  std::vector<T> product_;        // A product's [out, rows] before transposing.
  std::vector<T> conv_out_;       // [out channels, rows * positions].
  std::vector<T> d_features_;     // d L / d trunk output.
  std::vector<T> d_conv_;         // [rows, out size]: d L / d a conv's output.
  std::vector<T> d_cols_;         // [patch, rows * positions].
  std::vector<T> position_sums_;  // A conv bias's partial sums.
  std::vector<T> means_;          // Gaussian: center + half_range * tanh(raw).
  std::vector<T> squashed_;       // Gaussian: tanh(raw), for the backward pass.
  // Backward's scratch: the gradient flowing down, one layer at a time.
  std::vector<T> d_cur_;
  std::vector<T> d_next_;
  std::vector<T> d_policy_;
  std::vector<T> d_values_;
  std::vector<T> d_raw_;           // Gaussian: d L / d raw means.
  std::vector<double> d_log_std_;  // Gaussian.
  std::vector<double> probs_;      // Categorical: one row's softmax.
  std::vector<CellRows> cells_;    // Recurrent models.
  std::vector<T> gate_bias_;       // Per cell, b_ih + b_hh.
  std::vector<T> unroll_state_;    // Unroll's [batch, state size].
  std::vector<T> carry_h_;         // BPTT: d L / d the next step's h, c.
  std::vector<T> carry_c_;
};

extern template class DenseActorCritic<float>;
extern template class DenseActorCritic<double>;

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_DENSE_PATH_H_
