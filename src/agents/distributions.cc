#include "asyncrl/agents/distributions.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace asyncrl {

torch::Tensor MaskLogits(const torch::Tensor& logits,
                         const torch::Tensor& obs) {
  const int64_t n = logits.size(-1);
  const torch::Tensor illegal = obs.slice(-1, obs.size(-1) - n).eq(0);
  return logits.masked_fill(illegal, kMaskedLogit);
}

Categorical::Categorical(const torch::Tensor& logits)
    : log_p_(torch::log_softmax(logits, -1)) {}

torch::Tensor Categorical::LogProb(const torch::Tensor& actions) const {
  return log_p_.gather(1, actions.view({-1, 1})).squeeze(1);
}

torch::Tensor Categorical::Entropy() const {
  return -(log_p_.exp() * log_p_).sum(-1);
}

void Categorical::Sample(const float* logits, int64_t rows, int64_t n,
                         bool deterministic, std::mt19937_64& rng,
                         int64_t* actions, double* entropies,
                         std::vector<double>* scratch, double* log_probs) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double>& probs = *scratch;
  probs.resize(n);
  for (int64_t r = 0; r < rows; ++r) {
    const float* l = logits + r * n;
    const SoftmaxRow row = SoftmaxOfRow(l, n, probs.data());
    int64_t action = 0;
    if (deterministic) {
      action = std::max_element(probs.begin(), probs.end()) - probs.begin();
    } else {
      // Rounding can leave the cumulative sum just below 1: a draw past it
      // picks the last action of non-zero probability.
      double u = uniform(rng);
      action = n - 1;
      while (action > 0 && probs[action] == 0) --action;
      for (int64_t a = 0; a < n; ++a) {
        if (probs[a] == 0) continue;
        u -= probs[a];
        if (u < 0) {
          action = a;
          break;
        }
      }
    }
    actions[r] = action;
    entropies[r] = row.entropy;
    if (log_probs != nullptr) log_probs[r] = l[action] - row.log_sum_exp;
  }
}

Gaussian::Gaussian(torch::Tensor mean, torch::Tensor log_std)
    : mean_(std::move(mean)), log_std_(std::move(log_std)) {}

torch::Tensor Gaussian::LogProb(const torch::Tensor& actions) const {
  return GaussianLogDensityPerDim(actions, mean_, log_std_).sum(-1);
}

torch::Tensor Gaussian::Entropy() const {
  return GaussianEntropyPerDim(log_std_).sum(-1);
}

void Gaussian::Sample(const float* mean, const float* log_std, int64_t rows,
                      int64_t d, bool deterministic, std::mt19937_64& rng,
                      float* actions, double* entropies, double* log_probs) {
  // One distribution for the whole call: libstdc++'s normal draws in pairs
  // and keeps the second for the next call, so this fixes the draws a seed
  // gives.
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int64_t r = 0; r < rows; ++r) {
    double entropy = 0;
    double log_prob = 0;
    for (int64_t j = 0; j < d; ++j) {
      const int64_t i = r * d + j;
      const double a = deterministic
                           ? mean[i]
                           : mean[i] + std::exp(log_std[i]) * normal(rng);
      actions[i] = static_cast<float>(a);
      entropy += GaussianEntropyPerDim<double>(log_std[i]);
      // Of the float the rollout keeps, as LogProb() reads it.
      log_prob +=
          GaussianLogDensityPerDim<double>(actions[i], mean[i], log_std[i]);
    }
    entropies[r] = entropy;
    if (log_probs != nullptr) log_probs[r] = log_prob;
  }
}

PolicyTerms EvaluateActions(PolicyKind kind, const ModelOutput& out,
                            const torch::Tensor& actions) {
  if (kind == PolicyKind::kCategorical) {
    const Categorical policy(out.logits);
    return {policy.LogProb(actions), policy.Entropy()};
  }
  const Gaussian policy(out.mean, out.log_std);
  return {policy.LogProb(actions), policy.Entropy()};
}

}  // namespace asyncrl
