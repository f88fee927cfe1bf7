#include "asyncrl/agents/reward_normalizer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "asyncrl/misc/check.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {

RewardNormalizer::RewardNormalizer(double gamma, double clip)
    : returns_stats_(1, 1, std::numeric_limits<float>::max()),
      gamma_(gamma),
      clip_(clip) {
  Require(gamma >= 0 && gamma <= 1, "gamma", gamma, "a number in [0, 1]");
  Require(std::isfinite(clip) && clip > 0, "normalize_rewards_clip", clip,
          "a finite number > 0");
}

void RewardNormalizer::MergeAndScale(std::vector<double>* rewards,
                                     const std::vector<uint8_t>& ended) {
  const size_t rows = rewards->size();
  ASYNCRL_CHECK_EQ(ended.size(), rows);
  if (returns_.size() != rows) returns_.assign(rows, 0.0);
  batch_.resize(rows);
  scratch_.resize(rows);
  for (size_t j = 0; j < rows; ++j) {
    returns_[j] = returns_[j] * gamma_ + (*rewards)[j];
    batch_[j] = static_cast<float>(returns_[j]);
  }
  // A non-finite return is not merged (ObservationNormalizer counts the
  // batch as skipped); the rewards are scaled with the statistics as they
  // are.
  returns_stats_.MergeAndNormalize(batch_.data(), static_cast<int64_t>(rows),
                                   scratch_.data());
  const double inv = returns_stats_.InverseScale(0);
  for (size_t j = 0; j < rows; ++j) {
    (*rewards)[j] = std::clamp((*rewards)[j] * inv, -clip_, clip_);
    if (ended[j] || !std::isfinite(returns_[j])) returns_[j] = 0.0;
  }
}

}  // namespace asyncrl
