// What an on-policy agent records between two updates: T steps of K
// environments (a rollout), in the layout the learner reads, and the
// model's view of it for recomputing the outputs with autograd
// (MakeUnrollInput). Targets (agents/targets.h) and losses read rows in
// step-major order: row = step * K + k.
#ifndef ASYNCRL_AGENTS_ROLLOUT_H_
#define ASYNCRL_AGENTS_ROLLOUT_H_

#include <cstdint>
#include <vector>

#include "asyncrl/agents/models.h"

namespace asyncrl {

// Owned by one agent; not thread-safe.
struct Rollout {
  // Values of `next` other than a bootstrap index.
  static constexpr int64_t kContinue = -1;  // The env's next row follows.
  static constexpr int64_t kTerminal = -2;  // The episode ended: R = 0.

  int64_t batch = 0;                // Environments per step (K).
  int64_t steps = 0;                // Steps recorded (T).
  std::vector<float> obs;           // [T * K, obs_size].
  std::vector<int64_t> actions;     // Discrete: [T * K].
  std::vector<float> cont_actions;  // Box: [T * K, action_size].
  std::vector<float> rewards;       // [T * K].
  // log mu(a): the log-probability of each action under the parameters
  // that chose it (the behaviour policy), [T * K].
  std::vector<float> behaviour_log_probs;
  // After row i: kContinue, kTerminal, or an index into bootstrap_obs when
  // the row's sequence stops without a terminal state (a time limit, or the
  // end of the rollout): its return continues with V(that observation).
  std::vector<int64_t> next;
  std::vector<float> bootstrap_obs;  // [num_bootstrap, obs_size].
  // Two-player games whose both sides the agent plays (agent.h's
  // TurnTaking): 1 where row i's successor (the next row or its bootstrap
  // observation) is the other player's turn, so its value counts negated.
  // Shorter than rows() (usually empty): the missing rows are 0.
  std::vector<uint8_t> turn_passes;
  int64_t num_bootstrap = 0;
  // Recurrent models: the state before step 0, [K, state size]; empty for
  // feed-forward models.
  std::vector<float> initial_state;

  int64_t rows() const { return steps * batch; }
  // -1 where row i's successor is the other player's turn, else 1.
  double SuccessorSign(int64_t i) const {
    return static_cast<size_t>(i) < turn_passes.size() && turn_passes[i] != 0
               ? -1.0
               : 1.0;
  }

  // Appends one bootstrap observation (obs_size floats); returns its index
  // for `next`.
  int64_t AddBootstrap(const float* observation, int64_t obs_size);

  // Empties the rollout, keeping the buffers' capacity (initial_state is
  // set at the start of each rollout).
  void Clear();
};

// The model's input for recomputing `rollout` (agents/models.h): tensors
// that alias the rollout's buffers, valid while it is not modified.
UnrollInput MakeUnrollInput(const Rollout& rollout, int64_t obs_size);

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_ROLLOUT_H_
