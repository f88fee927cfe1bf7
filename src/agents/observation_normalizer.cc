#include "asyncrl/agents/observation_normalizer.h"

#include <sched.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "asyncrl/misc/check.h"
#include "asyncrl/misc/logging.h"

namespace asyncrl {
namespace {

// Two passes in double: the mean, then the mean squared deviation.
void OfInto(const float* rows, int64_t n, int64_t size, int64_t stride,
            MomentStatistics* s) {
  s->count = static_cast<double>(n);
  s->mean.assign(static_cast<size_t>(size), 0.0);
  s->var.assign(static_cast<size_t>(size), 0.0);
  if (n == 0) return;
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < size; ++j) s->mean[j] += rows[r * stride + j];
  }
  for (double& m : s->mean) m /= s->count;
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < size; ++j) {
      const double d = rows[r * stride + j] - s->mean[j];
      s->var[j] += d * d;
    }
  }
  for (double& v : s->var) v /= s->count;
}

}  // namespace

MomentStatistics MomentStatistics::Of(const float* rows, int64_t n,
                                      int64_t size, int64_t stride) {
  MomentStatistics s;
  OfInto(rows, n, size, stride == 0 ? size : stride, &s);
  return s;
}

void MomentStatistics::Merge(const MomentStatistics& other) {
  ASYNCRL_CHECK_EQ(mean.size(), other.mean.size());
  MergeInto(&count, mean.data(), var.data(), static_cast<int64_t>(mean.size()),
            other.count, other.mean.data(), other.var.data());
}

void MomentStatistics::MergeInto(double* count, double* mean, double* var,
                                 int64_t size, double other_count,
                                 const double* other_mean,
                                 const double* other_var) {
  if (other_count <= 0) return;
  const double total = *count + other_count;
  for (int64_t j = 0; j < size; ++j) {
    const double delta = other_mean[j] - mean[j];
    const double m2 = var[j] * *count + other_var[j] * other_count +
                      delta * delta * *count * other_count / total;
    mean[j] += delta * other_count / total;
    var[j] = m2 / total;
  }
  *count = total;
}

std::vector<double> MomentStatistics::Packed() const {
  std::vector<double> out{count};
  out.insert(out.end(), mean.begin(), mean.end());
  out.insert(out.end(), var.begin(), var.end());
  return out;
}

MomentStatistics MomentStatistics::Unpacked(const double* packed,
                                            int64_t size) {
  MomentStatistics s;
  s.count = packed[0];
  s.mean.assign(packed + 1, packed + 1 + size);
  s.var.assign(packed + 1 + size, packed + 1 + 2 * size);
  return s;
}

void MomentStatistics::MergeHosts(const std::vector<double>& packed_sets,
                                  int hosts) {
  const auto size = static_cast<int64_t>(mean.size());
  const size_t each = static_cast<size_t>(1 + 2 * size);
  ASYNCRL_CHECK_EQ(packed_sets.size(), each * static_cast<size_t>(hosts));
  for (int r = 0; r < hosts; ++r) {
    Merge(Unpacked(&packed_sets[r * each], size));
  }
}

// At the start of the area; at kDataOffset follow the run's means and
// variances, then the since-round means and variances.
struct ObservationNormalizer::Header {
  std::atomic<int32_t> lock{0};
  int32_t track_since = 0;  // Under the lock.
  double count = 0;
  double since_count = 0;
};

namespace {

constexpr size_t kDataOffset = 64;
static_assert(std::atomic<int32_t>::is_always_lock_free,
              "the lock must work across processes");

size_t RoundUp64(size_t n) { return (n + 63) / 64 * 64; }

}  // namespace

ObservationNormalizer::ObservationNormalizer(int64_t size, int64_t obs_size,
                                             double clip)
    // Within float range: the clipped value is stored as a float.
    : size_(size),
      obs_size_(obs_size),
      clip_(std::min(clip, static_cast<double>(FLT_MAX))) {
  ASYNCRL_CHECK_GT(size, 0);
  ASYNCRL_CHECK_LE(size, obs_size);
  ASYNCRL_CHECK(clip > 0);
  static_assert(sizeof(Header) <= kDataOffset);
  owned_.assign(SharedBytes() + 64, 0);
  // 64-byte aligned inside the owned storage, as a shared area is.
  auto address = reinterpret_cast<uintptr_t>(owned_.data());
  area_ = owned_.data() + (RoundUp64(address) - address);
  new (area_) Header();
  header()->count = kInitialCount;
  std::fill_n(mean_area(), size_, 0.0);
  std::fill_n(var_area(), size_, 1.0);
  std::fill_n(since_mean_area(), 2 * size_, 0.0);
  Lock();
  CopyLocked();
  Unlock();
}

size_t ObservationNormalizer::SharedBytes() const {
  return RoundUp64(kDataOffset +
                   4 * static_cast<size_t>(size_) * sizeof(double));
}

ObservationNormalizer::Header* ObservationNormalizer::header() const {
  return reinterpret_cast<Header*>(area_);
}
double* ObservationNormalizer::mean_area() const {
  return reinterpret_cast<double*>(area_ + kDataOffset);
}
double* ObservationNormalizer::var_area() const { return mean_area() + size_; }
double* ObservationNormalizer::since_mean_area() const {
  return var_area() + size_;
}
double* ObservationNormalizer::since_var_area() const {
  return since_mean_area() + size_;
}

void ObservationNormalizer::Lock() const {
  std::atomic<int32_t>& lock = header()->lock;
  while (lock.exchange(1, std::memory_order_acquire) != 0) {
    while (lock.load(std::memory_order_relaxed) != 0) sched_yield();
  }
}

bool ObservationNormalizer::TryLockFor(
    std::chrono::steady_clock::duration limit) const {
  std::atomic<int32_t>& lock = header()->lock;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (lock.exchange(1, std::memory_order_acquire) != 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    sched_yield();
  }
  return true;
}

void ObservationNormalizer::Unlock() const {
  header()->lock.store(0, std::memory_order_release);
}

void ObservationNormalizer::Bind(void* area, bool initialize) {
  ASYNCRL_CHECK(area != nullptr);
  ASYNCRL_CHECK_EQ(reinterpret_cast<uintptr_t>(area) % 64, 0u);
  auto* target = static_cast<unsigned char*>(area);
  if (initialize) {
    std::memcpy(target + kDataOffset, area_ + kDataOffset,
                SharedBytes() - kDataOffset);
    new (target) Header();
    reinterpret_cast<Header*>(target)->count = header()->count;
    reinterpret_cast<Header*>(target)->since_count = header()->since_count;
    reinterpret_cast<Header*>(target)->track_since = header()->track_since;
  }
  area_ = target;
  owned_ = {};
  Lock();
  CopyLocked();
  Unlock();
}

void ObservationNormalizer::CopyLocked() {
  mean_.assign(mean_area(), mean_area() + size_);
  inv_scale_.resize(static_cast<size_t>(size_));
  const double* var = var_area();
  for (int64_t j = 0; j < size_; ++j) {
    inv_scale_[j] = InverseScaleOf(var[j]);
  }
}

void ObservationNormalizer::Apply(const float* obs, int64_t rows,
                                  float* out) const {
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = obs + r * obs_size_;
    float* y = out + r * obs_size_;
    for (int64_t j = 0; j < size_; ++j) {
      const double z = (x[j] - mean_[j]) * inv_scale_[j];
      y[j] = static_cast<float>(std::clamp(z, -clip_, clip_));
    }
    std::copy(x + size_, x + obs_size_, y + size_);  // A mask passes.
  }
}

void ObservationNormalizer::MergeAndNormalize(const float* obs, int64_t rows,
                                              float* out) {
  OfInto(obs, rows, size_, obs_size_, &batch_);  // No allocation after the
                                                 // first call.
  // A non-finite observation would make the run's statistics NaN for good
  // (and its checkpoints unloadable): such a batch is normalized, not
  // merged, and counted.
  for (int64_t j = 0; j < size_; ++j) {
    if (!std::isfinite(batch_.mean[j]) || !std::isfinite(batch_.var[j])) {
      ++skipped_batches_;
      Normalize(obs, rows, out);
      return;
    }
  }
  Lock();
  MomentStatistics::MergeInto(&header()->count, mean_area(), var_area(), size_,
                              batch_.count, batch_.mean.data(),
                              batch_.var.data());
  if (header()->track_since != 0) {
    MomentStatistics::MergeInto(&header()->since_count, since_mean_area(),
                                since_var_area(), size_, batch_.count,
                                batch_.mean.data(), batch_.var.data());
  }
  CopyLocked();
  Unlock();
  Apply(obs, rows, out);
}

void ObservationNormalizer::Normalize(const float* obs, int64_t rows,
                                      float* out) {
  Lock();
  CopyLocked();
  Unlock();
  Apply(obs, rows, out);
}

void ObservationNormalizer::NormalizeWithCopy(const float* obs, int64_t rows,
                                              float* out) const {
  Apply(obs, rows, out);
}

MomentStatistics ObservationNormalizer::Statistics() {
  MomentStatistics s;
  const bool locked = LockBounded();
  s.count = header()->count;
  s.mean.assign(mean_area(), mean_area() + size_);
  s.var.assign(var_area(), var_area() + size_);
  UnlockIf(locked);
  return s;
}

bool ObservationNormalizer::LockBounded() const {
  if (TryLockFor(std::chrono::seconds(1))) return true;
  Log(LogLevel::kWarning,
      "running statistics: their lock was held for over 1 s (a worker died "
      "or stopped holding it); reading and writing them without it");
  return false;
}

void ObservationNormalizer::UnlockIf(bool locked) const {
  if (locked) Unlock();
}

void ObservationNormalizer::TrackSinceRounds() {
  const bool locked = LockBounded();
  header()->track_since = 1;
  UnlockIf(locked);
}

MomentStatistics ObservationNormalizer::TakeSinceRound() {
  MomentStatistics s;
  const bool locked = LockBounded();
  s.count = header()->since_count;
  s.mean.assign(since_mean_area(), since_mean_area() + size_);
  s.var.assign(since_var_area(), since_var_area() + size_);
  header()->since_count = 0;
  std::fill_n(since_mean_area(), 2 * size_, 0.0);
  UnlockIf(locked);
  return s;
}

void ObservationNormalizer::SetRound(const MomentStatistics& combined) {
  if (static_cast<int64_t>(combined.mean.size()) != size_ ||
      static_cast<int64_t>(combined.var.size()) != size_) {
    throw std::invalid_argument(
        "hosts' combined statistics have " +
        std::to_string(combined.mean.size()) +
        " elements; accepted: " + std::to_string(size_));
  }
  bool finite = std::isfinite(combined.count) && combined.count > 0;
  for (int64_t j = 0; j < size_; ++j) {
    finite = finite && std::isfinite(combined.mean[j]) &&
             std::isfinite(combined.var[j]) && combined.var[j] >= 0;
  }
  if (!finite) {
    throw std::invalid_argument(
        "hosts' combined statistics are not finite (count " +
        std::to_string(combined.count) +
        "); accepted: finite means, variances >= 0 and a count > 0");
  }
  const bool locked = LockBounded();
  header()->count = combined.count;
  std::copy(combined.mean.begin(), combined.mean.end(), mean_area());
  std::copy(combined.var.begin(), combined.var.end(), var_area());
  MomentStatistics::MergeInto(&header()->count, mean_area(), var_area(), size_,
                              header()->since_count, since_mean_area(),
                              since_var_area());
  UnlockIf(locked);
}

void ObservationNormalizer::SaveTo(proto::RunningStatistics* out) const {
  // Under the lock when it can be had within a second, so that count, means
  // and variances are of one merge; the parent saving <t>_except after a
  // worker died holding it reads them without (as the parameters are read,
  // Hogwild), rather than wait for ever.
  const bool locked = LockBounded();
  out->set_count(header()->count);
  out->clear_mean();
  out->clear_var();
  for (int64_t j = 0; j < size_; ++j) {
    out->add_mean(mean_area()[j]);
    out->add_var(var_area()[j]);
  }
  if (locked) Unlock();
}

void ObservationNormalizer::LoadFrom(const proto::RunningStatistics& in) {
  if (in.mean_size() != size_ || in.var_size() != size_) {
    throw std::runtime_error("checkpoint's observation statistics have " +
                             std::to_string(in.mean_size()) + " means and " +
                             std::to_string(in.var_size()) +
                             " variances; this run normalizes " +
                             std::to_string(size_) + " observation elements");
  }
  if (!std::isfinite(in.count()) || in.count() <= 0) {
    throw std::runtime_error("checkpoint's observation statistics have count " +
                             std::to_string(in.count()) +
                             "; accepted: a finite number > 0");
  }
  for (int64_t j = 0; j < size_; ++j) {
    if (!std::isfinite(in.mean(j)) || !std::isfinite(in.var(j)) ||
        in.var(j) < 0) {
      throw std::runtime_error(
          "checkpoint's observation statistics are invalid at element " +
          std::to_string(j) + " (mean " + std::to_string(in.mean(j)) +
          ", variance " + std::to_string(in.var(j)) + ")");
    }
  }
  Lock();
  header()->count = in.count();
  std::copy(in.mean().begin(), in.mean().end(), mean_area());
  std::copy(in.var().begin(), in.var().end(), var_area());
  CopyLocked();
  Unlock();
}

}  // namespace asyncrl
