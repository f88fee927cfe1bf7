// The shared optimizers of the actor-critic agents, over flat float arrays:
// RMSprop with eps inside the square root, as the reference uses it, and
// Adam as torch.optim.Adam computes it (the shared Adam many A3C
// implementations train with). Their statistics live in shared memory and
// every worker updates parameters and statistics without locks (Hogwild).
#ifndef ASYNCRL_AGENTS_SHARED_RMSPROP_H_
#define ASYNCRL_AGENTS_SHARED_RMSPROP_H_

#include <cstdint>
#include <string>

#include "asyncrl/misc/flag_spec.h"

namespace asyncrl {

struct OptimizerOptions {
  // "rmsprop" (statistics: one array, ms) or "adam" (two, m and v, and the
  // step count, which is the run's update counter).
  std::string kind = "rmsprop";
  double lr = 7e-4;           // Learning rate, >= 0.
  double alpha = 0.99;        // RMSprop: decay of the squared-gradient
                              // average, [0, 1).
  double eps = 0.1;           // RMSprop: added inside the square root, > 0.
  double adam_beta1 = 0.9;    // Adam: decay of the gradient average, [0, 1).
  double adam_beta2 = 0.999;  // Adam: of the squared gradient's, [0, 1).
  double adam_eps = 1e-8;     // Adam: added to sqrt(v_hat), > 0.
  double weight_decay = 0;    // L2 penalty added to the gradient, >= 0.

  bool adam() const { return kind == "adam"; }
  // Floats of statistics per parameter: 1 (RMSprop) or 2 (Adam).
  int64_t StatisticsPerParameter() const { return adam() ? 2 : 1; }
  // Throws std::invalid_argument naming the field, value and accepted range.
  void Validate() const;
  // Its command-line flags: --optimizer, --lr, --rmsprop-epsilon,
  // --rmsprop-alpha, --adam-beta1, --adam-beta2, --adam-epsilon,
  // --weight-decay (misc/flag_spec.h).
  FlagSpecs Flags();
};
// The name it had while RMSprop was the only one.
using RmspropOptions = OptimizerOptions;

// Squared L2 norm of `n` floats, accumulated in double.
double SquaredNorm(const float* x, int64_t n);

// For each i: g = grad_scale * grads[i] + weight_decay * params[i];
// ms[i] = alpha * ms[i] + (1 - alpha) * g^2;
// params[i] -= lr * g / sqrt(ms[i] + eps); local[i] = params[i].
// One pass over the arrays: `params` and `ms` are the shared ones, `local`
// the worker's copy of the model, refreshed in the same pass. The arrays
// must not overlap.
void RmspropStepAndCopy(const RmspropOptions& options, float grad_scale,
                        const float* grads, float* params, float* ms,
                        float* local, int64_t n);

// Adam's step `step` (1-based; the bias corrections use it) as
// torch.optim.Adam computes it, for each i:
// g = grad_scale * grads[i] + weight_decay * params[i];
// m[i] = beta1 m[i] + (1 - beta1) g; v[i] = beta2 v[i] + (1 - beta2) g^2;
// params[i] -= lr * (m[i] / (1 - beta1^step)) /
//              (sqrt(v[i] / (1 - beta2^step)) + eps); local[i] = params[i].
// One pass, as RmspropStepAndCopy.
void AdamStepAndCopy(const OptimizerOptions& options, float grad_scale,
                     int64_t step, const float* grads, float* params, float* m,
                     float* v, float* local, int64_t n);

// The factor that scales gradients of norm `norm` down to `max_norm`
// (1 when already within it, or when max_norm <= 0 disables clipping), as
// torch.nn.utils.clip_grad_norm_ computes it.
float ClipScale(double norm, double max_norm);

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_SHARED_RMSPROP_H_
