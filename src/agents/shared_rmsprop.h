// The shared optimizer of A3C: RMSprop with eps inside the square root, as
// the reference uses it, over flat float arrays. Its statistics (ms) live in
// shared memory and every worker updates parameters and ms without locks
// (Hogwild).
#ifndef ASYNCRL_AGENTS_SHARED_RMSPROP_H_
#define ASYNCRL_AGENTS_SHARED_RMSPROP_H_

#include <cstdint>

#include "asyncrl/misc/flag_spec.h"

namespace asyncrl {

struct RmspropOptions {
  double lr = 7e-4;         // Learning rate, >= 0.
  double alpha = 0.99;      // Decay of the squared-gradient average, [0, 1).
  double eps = 0.1;         // Added inside the square root, > 0.
  double weight_decay = 0;  // L2 penalty added to the gradient, >= 0.

  // Throws std::invalid_argument naming the field, value and accepted range.
  void Validate() const;
  // Its command-line flags: --lr, --rmsprop-epsilon, --rmsprop-alpha,
  // --weight-decay (misc/flag_spec.h).
  FlagSpecs Flags();
};

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

// The factor that scales gradients of norm `norm` down to `max_norm`
// (1 when already within it, or when max_norm <= 0 disables clipping), as
// torch.nn.utils.clip_grad_norm_ computes it.
float ClipScale(double norm, double max_norm);

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_SHARED_RMSPROP_H_
