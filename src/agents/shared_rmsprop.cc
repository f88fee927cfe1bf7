#include "asyncrl/agents/shared_rmsprop.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "asyncrl/misc/platform/vector_clones.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {

void OptimizerOptions::Validate() const {
  Require(kind == "rmsprop" || kind == "adam", "optimizer", kind,
          "rmsprop, adam");
  Require(std::isfinite(lr) && lr >= 0, "lr", lr, "a finite number >= 0");
  Require(adam_beta1 >= 0 && adam_beta1 < 1, "adam_beta1", adam_beta1,
          "a number in [0, 1)");
  Require(adam_beta2 >= 0 && adam_beta2 < 1, "adam_beta2", adam_beta2,
          "a number in [0, 1)");
  Require(std::isfinite(adam_eps) && adam_eps > 0, "adam_epsilon", adam_eps,
          "a finite number > 0");
  Require(alpha >= 0 && alpha < 1, "rmsprop_alpha", alpha,
          "a number in [0, 1)");
  Require(std::isfinite(eps) && eps > 0, "rmsprop_epsilon", eps,
          "a finite number > 0");
  Require(std::isfinite(weight_decay) && weight_decay >= 0, "weight_decay",
          weight_decay, "a finite number >= 0");
}

FlagSpecs OptimizerOptions::Flags() {
  return {
      {"optimizer",
       "the shared optimizer: rmsprop (the reference's) or adam "
       "(torch.optim.Adam's step; its two averages in shared memory, "
       "checkpointed)",
       &kind},
      {"lr", "learning rate", &lr},
      {"rmsprop-epsilon", "RMSprop epsilon (inside the square root)", &eps},
      {"rmsprop-alpha", "RMSprop decay of the squared-gradient average",
       &alpha},
      {"adam-beta1", "Adam decay of the gradient average, in [0, 1)",
       &adam_beta1},
      {"adam-beta2", "Adam decay of the squared-gradient average, in [0, 1)",
       &adam_beta2},
      {"adam-epsilon", "Adam epsilon (added to the square root), > 0",
       &adam_eps},
      {"weight-decay", "L2 penalty", &weight_decay}};
}

// The two passes over every parameter of an update, compiled for several
// vector widths (misc/platform/vector_clones.h).

ASYNCRL_VECTOR_CLONES
double SquaredNorm(const float* x, int64_t n) {
  // Independent partial sums let the loop vectorize and pipeline: 32 are
  // four AVX-512 vectors of doubles (eight AVX2, sixteen SSE2 ones), so
  // several chains of adds run at once (with 8, in the AVX-512 clone one
  // vector, each add waited for the one before: 26 -> 13 us for 263k
  // floats, minatar-conv-lstm's, in L3).
  constexpr int kLanes = 32;
  double partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      partial[j] += static_cast<double>(x[i + j]) * x[i + j];
    }
  }
  double sum = 0;
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  for (double p : partial) sum += p;
  return sum;
}

ASYNCRL_VECTOR_CLONES
void RmspropStepAndCopy(const RmspropOptions& options, float grad_scale,
                        const float* __restrict grads, float* __restrict params,
                        float* __restrict ms, float* __restrict local,
                        int64_t n) {
  const auto lr = static_cast<float>(options.lr);
  const auto alpha = static_cast<float>(options.alpha);
  const float one_minus_alpha = 1.0f - alpha;
  const auto eps = static_cast<float>(options.eps);
  const auto wd = static_cast<float>(options.weight_decay);
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad_scale * grads[i] + wd * params[i];
    const float m = alpha * ms[i] + one_minus_alpha * g * g;
    ms[i] = m;
    const float p = params[i] - lr * g / std::sqrt(m + eps);
    params[i] = p;
    // Written while the cache line is held: no second pass re-reads the
    // shared array, which the other workers keep writing.
    local[i] = p;
  }
}

ASYNCRL_VECTOR_CLONES
void AdamStepAndCopy(const OptimizerOptions& options, float grad_scale,
                     int64_t step, const float* __restrict grads,
                     float* __restrict params, float* __restrict m,
                     float* __restrict v, float* __restrict local, int64_t n) {
  const auto b1 = static_cast<float>(options.adam_beta1);
  const auto b2 = static_cast<float>(options.adam_beta2);
  // 1 - beta in double: 1.0f - 0.999f is 0.0010000467, 5e-5 off.
  const auto one_minus_b1 = static_cast<float>(1.0 - options.adam_beta1);
  const auto one_minus_b2 = static_cast<float>(1.0 - options.adam_beta2);
  const auto eps = static_cast<float>(options.adam_eps);
  const auto wd = static_cast<float>(options.weight_decay);
  // The bias corrections, in double (beta^step underflows gracefully).
  const auto t = static_cast<double>(step);
  const auto step_size =
      static_cast<float>(options.lr / (1.0 - std::pow(options.adam_beta1, t)));
  const auto v_scale = static_cast<float>(
      1.0 / std::sqrt(1.0 - std::pow(options.adam_beta2, t)));
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad_scale * grads[i] + wd * params[i];
    const float mi = b1 * m[i] + one_minus_b1 * g;
    const float vi = b2 * v[i] + one_minus_b2 * g * g;
    m[i] = mi;
    v[i] = vi;
    const float p =
        params[i] - step_size * mi / (std::sqrt(vi) * v_scale + eps);
    params[i] = p;
    local[i] = p;
  }
}

float ClipScale(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0f;
  const double scale = max_norm / (norm + 1e-6);
  return scale < 1.0 ? static_cast<float>(scale) : 1.0f;
}

}  // namespace asyncrl
