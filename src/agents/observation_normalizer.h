// Running normalization of observations (--normalize-observations), as
// Stable-Baselines3's VecNormalize does it, shared by every worker of a run:
// a running mean and variance per observation element (starting from mean
// 0, variance 1 and a count of 1e-4), each training step's batch merged in
// with Chan et al.'s parallel formula, observations mapped to
// clip((x - mean) / sqrt(var + 1e-8), -clip, clip).
//
// The statistics live in the trainer's shared memory (the agent's state
// area, agents/agent.h) behind a spinlock held for one merge (O(size)); a
// worker keeps a copy of the mean and scale taken under the lock, so
// normalizing needs no lock. Training merges then normalizes; evaluation
// and --demo normalize with the statistics as they are (frozen: nothing is
// merged). Checkpoints carry them (proto RunningStatistics).
//
// Several hosts (--nnodes) combine their statistics at each round: the area
// also keeps what this host's workers merged since the last round (its
// "since" statistics, merged into under the same lock once the hosts'
// coordinator asks for them: TrackSinceRounds). The hosts'
// coordinator takes and clears them (TakeSinceRound), combines every
// host's with the last round's combined set (Chan's merge, in rank order,
// so every host computes the same set), and sets the run's statistics to
// the result merged with what was merged here during the exchange
// (SetRound). After the last round, when no worker merges, every host holds
// the statistics of all hosts' rows.
#ifndef ASYNCRL_AGENTS_OBSERVATION_NORMALIZER_H_
#define ASYNCRL_AGENTS_OBSERVATION_NORMALIZER_H_

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "asyncrl/proto/checkpoint.pb.h"

namespace asyncrl {

// Count, mean and (population) variance of a set of vectors, in double.
struct MomentStatistics {
  double count = 0;
  std::vector<double> mean;
  std::vector<double> var;

  // Of `n` vectors: the first `size` floats of each row of `stride`
  // (default: size) floats.
  static MomentStatistics Of(const float* rows, int64_t n, int64_t size,
                             int64_t stride = 0);
  // Chan et al.'s merge: the statistics of both sets together.
  void Merge(const MomentStatistics& other);
  // The same on raw arrays of `size` elements: (count, mean, var) becomes
  // the merge with (other_count, other_mean, other_var).
  static void MergeInto(double* count, double* mean, double* var, int64_t size,
                        double other_count, const double* other_mean,
                        const double* other_var);

  // As doubles: the count, the means, the variances (1 + 2 size).
  std::vector<double> Packed() const;
  // The inverse, of `size` elements at `packed`.
  static MomentStatistics Unpacked(const double* packed, int64_t size);
  // Several hosts' round: merges every host's packed set (`hosts` of them,
  // back to back in rank order, each of 1 + 2 * this->mean.size() doubles)
  // into this set, in rank order.
  void MergeHosts(const std::vector<double>& packed_sets, int hosts);
};

class ObservationNormalizer {
 public:
  // What VecNormalize starts from, and adds under the square root.
  static constexpr double kInitialCount = 1e-4;
  static constexpr double kEpsilon = 1e-8;
  // What normalizing multiplies by, for an element of variance `var`.
  static double InverseScaleOf(double var) {
    return 1.0 / std::sqrt(var + kEpsilon);
  }

  // Normalizes the first `size` floats of each observation of `obs_size`
  // (the rest, e.g. a legal-action mask, passes through); clip > 0.
  ObservationNormalizer(int64_t size, int64_t obs_size, double clip);
  // Not copyable: a copy would share (or dangle into) the area.
  ObservationNormalizer(const ObservationNormalizer&) = delete;
  ObservationNormalizer& operator=(const ObservationNormalizer&) = delete;

  // Bytes of shared state (a multiple of 64).
  size_t SharedBytes() const;
  // Uses `area` (SharedBytes() bytes, 64-byte aligned) from now on; with
  // `initialize`, first copies the statistics held so far into it.
  void Bind(void* area, bool initialize);

  // Training: merges the statistics of `rows` observations `obs` into the
  // shared ones, then writes the rows normalized with the result into
  // `out` ([rows, obs_size]).
  void MergeAndNormalize(const float* obs, int64_t rows, float* out);
  // Evaluation, bootstrap observations: normalizes with the shared
  // statistics as they are now, merging nothing.
  void Normalize(const float* obs, int64_t rows, float* out);
  // As Normalize, with the copy taken at the last merge or Normalize
  // (no lock): the bootstrap observations of the step just merged.
  void NormalizeWithCopy(const float* obs, int64_t rows, float* out) const;

  // The shared statistics (a copy taken under the lock, or without it if
  // it is not had within a second: a worker died holding it).
  MomentStatistics Statistics();

  // Hosts (see above), from the parent's coordinator thread; they touch
  // the shared area only, and take the lock for at most a second (a worker
  // killed while holding it does not stop the hosts' rounds; a merge holds
  // it for microseconds). From now on, merges also keep what they add in
  // the since statistics (off by default: one host never reads them).
  void TrackSinceRounds();
  // What was merged since the last round (count 0: nothing), cleared.
  MomentStatistics TakeSinceRound();
  // The run's statistics become `combined` (all hosts' rows up to this
  // round) merged with what was merged here since TakeSinceRound. Throws
  // std::invalid_argument if its size differs or a value is not finite.
  void SetRound(const MomentStatistics& combined);

  // Into / from a checkpoint's RunningStatistics. LoadFrom throws
  // std::runtime_error if the sizes differ or a value is not finite, a
  // variance negative or the count not positive; it changes nothing then.
  void SaveTo(proto::RunningStatistics* out) const;
  void LoadFrom(const proto::RunningStatistics& in);

  int64_t size() const { return size_; }
  double clip() const { return clip_; }
  // Element i's 1 / sqrt(var + eps) in the copy taken at the last merge or
  // Normalize.
  double InverseScale(int64_t i) const { return inv_scale_.at(i); }
  // Training batches not merged because an observation was not finite.
  int64_t skipped_batches() const { return skipped_batches_; }

 private:
  struct Header;
  Header* header() const;
  double* mean_area() const;
  double* var_area() const;
  double* since_mean_area() const;
  double* since_var_area() const;
  void Lock() const;
  // Lock() unless it takes longer than `limit`; whether it locked.
  bool TryLockFor(std::chrono::steady_clock::duration limit) const;
  void Unlock() const;
  // Locks unless the lock is not had within a second (see SaveTo); pass
  // the result to UnlockIf.
  bool LockBounded() const;
  void UnlockIf(bool locked) const;
  // The copy of the mean and 1 / sqrt(var + eps), from the shared area;
  // under the lock.
  void CopyLocked();
  void Apply(const float* obs, int64_t rows, float* out) const;

  int64_t size_;
  int64_t obs_size_;
  double clip_;
  std::vector<unsigned char> owned_;  // The area until Bind.
  unsigned char* area_ = nullptr;
  std::vector<double> mean_;       // The copy.
  std::vector<double> inv_scale_;  // 1 / sqrt(var + eps).
  MomentStatistics batch_;         // Scratch of MergeAndNormalize.
  int64_t skipped_batches_ = 0;
};

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_OBSERVATION_NORMALIZER_H_
