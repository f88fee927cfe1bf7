// The policies' action distributions: a categorical over n actions
// (parameterised by logits) and a diagonal Gaussian (mean and log standard
// deviation). Each has one definition of its log-probability and entropy,
// shared by learning and acting:
// - learning builds a distribution over a batch of a model's outputs and
//   reads LogProb()/Entropy() as LibTorch tensors with autograd;
// - acting calls Sample() on the raw float rows of a forward pass (a tensor
//   op per row would cost more than the whole step), which draws the
//   actions and returns the entropies. For the Gaussian both paths use the
//   same per-dimension entropy template; for the categorical the scalar
//   loop is the softmax written out, and tests/agents/distributions_test.cc
//   proves that it agrees with the tensor entropy to double precision.
//
// Sampling semantics are part of the contract (a run with a fixed seed
// repeats its actions): a categorical draws one uniform(0, 1) per row and
// inverts the CDF (a draw past the last cumulative sum picks the last
// action); a Gaussian draws one standard normal per dimension, row-major,
// from one std::normal_distribution per Sample() call.
#ifndef ASYNCRL_AGENTS_DISTRIBUTIONS_H_
#define ASYNCRL_AGENTS_DISTRIBUTIONS_H_

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "asyncrl/agents/models.h"

namespace asyncrl {

// log(2 * pi).
inline constexpr double kLog2Pi = 1.8378770664093453;

// What an illegal action's logit becomes under an action mask
// (misc/space.h: Space::action_mask): finite, so that its probability is
// exactly 0 in float and double and p log p is 0, not NaN.
inline constexpr float kMaskedLogit = -1e30f;

// `logits` [N, A] with the entries whose action is illegal replaced by
// kMaskedLogit; `obs` is [N, observation size], its last A columns the
// mask. No gradient flows to the replaced entries.
torch::Tensor MaskLogits(const torch::Tensor& logits, const torch::Tensor& obs);

// The same on raw rows: `logits` [rows, n] in place, `obs` [rows, obs_size]
// whose last n floats per row are the mask.
template <typename T>
void MaskLogitRows(T* logits, int64_t rows, int64_t n, const T* obs,
                   int64_t obs_size) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* mask = obs + r * obs_size + (obs_size - n);
    for (int64_t a = 0; a < n; ++a) {
      if (mask[a] == T{0}) logits[r * n + a] = static_cast<T>(kMaskedLogit);
    }
  }
}

// The row-level math, on raw rows in double (acting, and the fast path's
// update: agents/dense_path.h), one definition each.

// One row of a softmax: log sum_a exp(l_a) and the entropy -sum p log p.
struct SoftmaxRow {
  double log_sum_exp = 0;
  double entropy = 0;
};

// The softmax of `n` logits, with the maximum subtracted so that exp cannot
// overflow; the probabilities go into `probs` ([n]). A logit of
// kMaskedLogit gets probability exactly 0.
template <typename T>
SoftmaxRow SoftmaxOfRow(const T* logits, int64_t n, double* probs) {
  const double max = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int64_t a = 0; a < n; ++a) sum += probs[a] = std::exp(logits[a] - max);
  SoftmaxRow row;
  row.log_sum_exp = std::log(sum) + max;
  for (int64_t a = 0; a < n; ++a) {
    probs[a] /= sum;
    row.entropy -= probs[a] * (logits[a] - row.log_sum_exp);
  }
  return row;
}

// d/dl_j of d_log_prob * log pi(action) + d_entropy * H for one row
// (`probs` and `row` from SoftmaxOfRow), into d_logits ([n]):
// dlog pi(a)/dl_j = [j = a] - p_j, dH/dl_j = -p_j (log p_j + H). A logit of
// probability 0 (a masked action) gets 0.
template <typename T>
void CategoricalRowGradient(const T* logits, const double* probs, int64_t n,
                            const SoftmaxRow& row, int64_t action,
                            double d_log_prob, double d_entropy, T* d_logits) {
  for (int64_t a = 0; a < n; ++a) {
    const double p = probs[a];
    const double one_hot = a == action ? 1.0 : 0.0;
    const double log_p = logits[a] - row.log_sum_exp;
    d_logits[a] = p == 0
                      ? T{0}
                      : static_cast<T>(d_log_prob * (one_hot - p) -
                                       d_entropy * p * (log_p + row.entropy));
  }
}

// A diagonal Gaussian's entropy and log-density in one dimension, for
// tensors (learning with autograd) or doubles (acting, the fast path).
template <typename T>
T GaussianEntropyPerDim(const T& log_std) {
  return 0.5 + 0.5 * kLog2Pi + log_std;
}

template <typename T>
T GaussianLogDensityPerDim(const T& action, const T& mean, const T& log_std) {
  using std::exp;
  using torch::exp;
  const T z = (action - mean) * exp(-log_std);
  return -0.5 * z * z - log_std - 0.5 * kLog2Pi;
}

// d/dmean and d/dlog_std of d_log_prob * log N(action; mean, exp(log_std))
// + d_entropy * H in one dimension: with z = (action - mean) / sigma,
// dlog p/dmean = z / sigma, dlog p/dlog_std = z^2 - 1, dH/dlog_std = 1.
struct GaussianDimGradient {
  double mean = 0;
  double log_std = 0;
};

inline GaussianDimGradient GaussianRowGradient(double action, double mean,
                                               double log_std,
                                               double d_log_prob,
                                               double d_entropy) {
  const double inv_sigma = std::exp(-log_std);
  const double z = (action - mean) * inv_sigma;
  return {d_log_prob * z * inv_sigma, d_log_prob * (z * z - 1) + d_entropy};
}

// A batch of N categorical distributions. Not thread-safe (holds tensors).
class Categorical {
 public:
  // `logits` is [N, A] (float or double); gradients flow back into it.
  explicit Categorical(const torch::Tensor& logits);

  // log pi(a) of int64 `actions` [N]: [N].
  torch::Tensor LogProb(const torch::Tensor& actions) const;
  // -sum_a pi(a) log pi(a): [N].
  torch::Tensor Entropy() const;

  // Acting: for each of `rows` rows of `n` logits (row-major), the action
  // (argmax of the probabilities, first on ties, when `deterministic`;
  // otherwise inverse-CDF of one uniform draw from `rng`; never an action
  // of probability 0, such as a masked one) into
  // actions[row] and the entropy, in double, into entropies[row]; if
  // `log_probs` is not null, log pi(action) into log_probs[row] (the
  // behaviour log-probability an off-policy target needs).
  // `scratch` is reused storage of the caller.
  static void Sample(const float* logits, int64_t rows, int64_t n,
                     bool deterministic, std::mt19937_64& rng, int64_t* actions,
                     double* entropies, std::vector<double>* scratch,
                     double* log_probs = nullptr);

 private:
  torch::Tensor log_p_;  // [N, A]: log_softmax of the logits, computed once.
};

// A batch of N diagonal Gaussians over D dimensions. Not thread-safe.
class Gaussian {
 public:
  // `mean` and `log_std` are [N, D]; gradients flow back into both.
  Gaussian(torch::Tensor mean, torch::Tensor log_std);

  // log density of `actions` [N, D]: [N].
  torch::Tensor LogProb(const torch::Tensor& actions) const;
  // sum_d (1/2 + log(2 pi)/2 + log_std_d): [N].
  torch::Tensor Entropy() const;

  // Acting: for each of `rows` rows of `d` dimensions, mean + exp(log_std) *
  // normal (the mean when `deterministic`) into actions[row * d + j], not
  // clipped to any bounds, and the entropy into entropies[row]; if
  // `log_probs` is not null, the log density of the float action stored
  // into log_probs[row].
  static void Sample(const float* mean, const float* log_std, int64_t rows,
                     int64_t d, bool deterministic, std::mt19937_64& rng,
                     float* actions, double* entropies,
                     double* log_probs = nullptr);

 private:
  torch::Tensor mean_;
  torch::Tensor log_std_;
};

// Per row of a policy's output, the log-probability of the action taken and
// the entropy: what a policy-gradient loss needs.
struct PolicyTerms {
  torch::Tensor log_prob;  // [N].
  torch::Tensor entropy;   // [N].
};

// The terms of the `kind` policy over the N rows of `out`: categorical
// actions are int64 [N], Gaussian ones float [N, D].
PolicyTerms EvaluateActions(PolicyKind kind, const ModelOutput& out,
                            const torch::Tensor& actions);

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_DISTRIBUTIONS_H_
