// Running normalization of rewards (--normalize-rewards), as Stable-
// Baselines3's VecNormalize does it, shared by every worker of a run: each
// environment row keeps its discounted return R <- gamma R + r (reset to 0
// when its episode ends); the running variance of R over every row of every
// worker scales the reward the learner sees,
// clip(r / sqrt(var + 1e-8), -clip, clip). The mean is not subtracted (a
// constant shift of rewards changes the optimal policy where episodes end).
//
// The statistics are an ObservationNormalizer of one element over the
// returns: the same shared area, lock, merge and checkpoint message. Only
// the learner sees scaled rewards: what the trainer reports (scores.txt,
// TensorBoard, the status line, curriculum measures) stays in the
// environment's units, since it sums the rewards the environments gave.
#ifndef ASYNCRL_AGENTS_REWARD_NORMALIZER_H_
#define ASYNCRL_AGENTS_REWARD_NORMALIZER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "asyncrl/agents/observation_normalizer.h"
#include "asyncrl/proto/checkpoint.pb.h"

namespace asyncrl {

class RewardNormalizer {
 public:
  // gamma in [0, 1]: the return's discount (the agent's); clip > 0.
  RewardNormalizer(double gamma, double clip);
  RewardNormalizer(const RewardNormalizer&) = delete;
  RewardNormalizer& operator=(const RewardNormalizer&) = delete;

  // Bytes of shared state (a multiple of 64).
  size_t SharedBytes() const { return returns_stats_.SharedBytes(); }
  // As ObservationNormalizer::Bind.
  void Bind(void* area, bool initialize) {
    returns_stats_.Bind(area, initialize);
  }

  // Training: `rewards` of one step of `rows` environments (row j its
  // environment j); `ended[j]` ends row j's episode with this reward.
  // Updates each row's return, merges the returns into the shared
  // statistics and rewrites `rewards` scaled by the result. The number of
  // rows may change between calls only when every episode has ended (a new
  // rollout of another size starts them afresh).
  void MergeAndScale(std::vector<double>* rewards,
                     const std::vector<uint8_t>& ended);

  // 1 / sqrt(var + eps) of the shared statistics as last merged here.
  double InverseScale() const { return returns_stats_.InverseScale(0); }
  // The shared statistics of the returns (a copy taken under the lock).
  MomentStatistics Statistics() { return returns_stats_.Statistics(); }
  // They themselves (one element), e.g. for the hosts to combine.
  ObservationNormalizer& statistics() { return returns_stats_; }
  // Steps whose returns were not merged because one was not finite (its
  // row's return then starts again at 0).
  int64_t skipped_batches() const { return returns_stats_.skipped_batches(); }

  // As ObservationNormalizer's (one element).
  void SaveTo(proto::RunningStatistics* out) const {
    returns_stats_.SaveTo(out);
  }
  void LoadFrom(const proto::RunningStatistics& in) {
    returns_stats_.LoadFrom(in);
  }

 private:
  ObservationNormalizer returns_stats_;
  double gamma_;
  double clip_;
  std::vector<double> returns_;  // Per row, this worker's.
  std::vector<float> batch_;     // The returns as one-element rows.
  std::vector<float> scratch_;   // What the merge writes (unused).
};

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_REWARD_NORMALIZER_H_
