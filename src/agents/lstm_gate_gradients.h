// One step of an LSTM cell's backward pass for one sequence: the gates'
// gradients from the gradient reaching h (the loss's, plus what the next
// step carried back) and c (carried back), and c's gradient carried to the
// step before. Shared by the fast path's double loop and the float one in
// fast_math.cc, which compiles it for several vector widths (each element
// goes through the same operations in the same order, so the widths agree
// bit for bit). Internal: not installed.
#ifndef ASYNCRL_AGENTS_LSTM_GATE_GRADIENTS_H_
#define ASYNCRL_AGENTS_LSTM_GATE_GRADIENTS_H_

#include <cstdint>

namespace asyncrl {

// gates [4h] (i, f, g, o after their activations), tanh_c [h], c_prev [h],
// d_h [h] (the loss's gradient at h); carry_h [h], carry_c [h]: what the
// next step carried back, read only when `carried` (else zero: the
// sequence ended at this step, or it is the last of the rollout); carry_c
// is overwritten with d c_prev. d_gates [4h] is written. None overlap.
template <bool kCarried, typename T>
inline void LstmGateGradientsLoop(int64_t h, const T* __restrict__ gates,
                                  const T* __restrict__ tanh_c,
                                  const T* __restrict__ c_prev,
                                  const T* __restrict__ d_h,
                                  const T* __restrict__ carry_h,
                                  T* __restrict__ carry_c,
                                  T* __restrict__ d_gates) {
  for (int64_t j = 0; j < h; ++j) {
    const T i = gates[j], f = gates[h + j], cg = gates[2 * h + j],
            o = gates[3 * h + j], t = tanh_c[j];
    const T dh = d_h[j] + (kCarried ? carry_h[j] : T{0});
    const T dc = (kCarried ? carry_c[j] : T{0}) + dh * o * (T{1} - t * t);
    d_gates[j] = dc * cg * i * (T{1} - i);
    d_gates[h + j] = dc * c_prev[j] * f * (T{1} - f);
    d_gates[2 * h + j] = dc * i * (T{1} - cg * cg);
    d_gates[3 * h + j] = dh * t * o * (T{1} - o);
    carry_c[j] = dc * f;
  }
}

// The loop above for a step that did or did not carry a gradient back.
template <typename T>
inline void LstmGateGradientsStep(int64_t h, const T* gates, const T* tanh_c,
                                  const T* c_prev, const T* d_h, bool carried,
                                  const T* carry_h, T* carry_c, T* d_gates) {
  if (carried) {
    LstmGateGradientsLoop<true>(h, gates, tanh_c, c_prev, d_h, carry_h, carry_c,
                                d_gates);
  } else {
    LstmGateGradientsLoop<false>(h, gates, tanh_c, c_prev, d_h, carry_h,
                                 carry_c, d_gates);
  }
}

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_LSTM_GATE_GRADIENTS_H_
