// What a curriculum does: samplers, checks against an environment, the
// lessons' advance (CurriculumRunner). Reading the file is
// curriculum_file.cc.
#include "asyncrl/experiments/curriculum/curriculum.h"

#include <algorithm>
#include <array>
#include <boost/interprocess/sync/scoped_lock.hpp>
#include <cmath>

#include "asyncrl/experiments/train_options.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/strings.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {

const EnvParameter* DeclaredParameter(const Env& env, const std::string& name) {
  for (const EnvParameter& e : env.Parameters()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

namespace {

using WholeRun = std::pair<int64_t, int64_t>;  // first, last: inclusive.

// The whole numbers a uniform or multirange_uniform sampler draws for a
// whole-number parameter of range [low, high]: those of its intervals
// within the range, as sorted, disjoint runs (a number in two intervals
// counts once). Beyond +-2^53 doubles skip whole numbers: bounds stop there.
std::vector<WholeRun> WholeRuns(
    const std::vector<std::pair<double, double>>& intervals, double low,
    double high) {
  constexpr double kLimit = 9007199254740992.0;  // 2^53.
  const double range_lo = std::max(std::ceil(low), -kLimit);
  const double range_hi = std::min(std::floor(high), kLimit);
  std::vector<WholeRun> runs;
  for (const auto& [a, b] : intervals) {
    const double lo = std::max(std::ceil(a), range_lo);
    const double hi = std::min(std::floor(b), range_hi);
    if (!(lo <= hi)) continue;  // No whole number (or a NaN bound).
    runs.emplace_back(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
  }
  std::sort(runs.begin(), runs.end());
  std::vector<WholeRun> merged;
  for (const WholeRun& r : runs) {
    if (!merged.empty() && r.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

// The sampler's intervals: [min, max] for uniform.
std::vector<std::pair<double, double>> IntervalsOf(const Sampler& s) {
  if (s.kind == Sampler::Kind::kUniform) return {{s.min, s.max}};
  return s.intervals;
}

}  // namespace

double Sampler::Draw(std::mt19937_64& rng, double low, double high,
                     bool whole) const {
  if (whole && (kind == Kind::kUniform || kind == Kind::kMultiRangeUniform)) {
    // Every whole number of the support equally likely.
    const std::vector<WholeRun> runs = WholeRuns(IntervalsOf(*this), low, high);
    int64_t count = 0;
    for (const auto& [first, last] : runs) count += last - first + 1;
    if (count > 0) {
      int64_t k = std::uniform_int_distribution<int64_t>(0, count - 1)(rng);
      for (const auto& [first, last] : runs) {
        if (k <= last - first) return static_cast<double>(first + k);
        k -= last - first + 1;
      }
    }
    // No whole number within the range: the clamped draw below.
  }
  double x = value;
  switch (kind) {
    case Kind::kConstant:
      break;
    case Kind::kUniform:
      x = std::uniform_real_distribution<double>(min, max)(rng);
      break;
    case Kind::kGaussian:
      // st_dev 0 is the constant `mean` (normal_distribution needs > 0).
      x = stdev > 0 ? std::normal_distribution<double>(mean, stdev)(rng) : mean;
      break;
    case Kind::kMultiRangeUniform: {
      // An interval chosen in proportion to its width, then uniform in it
      // (ML-Agents' MultiRangeUniformSampler).
      double total = 0;
      for (const auto& [lo, hi] : intervals) total += hi - lo;
      double u = std::uniform_real_distribution<double>(0.0, total)(rng);
      if (intervals.empty()) break;
      x = intervals.back().second;
      for (const auto& [lo, hi] : intervals) {
        if (u <= hi - lo) {
          x = lo + u;
          break;
        }
        u -= hi - lo;
      }
      break;
    }
  }
  if (whole) {
    // Rounded to the nearest, then into the range's whole numbers (when it
    // holds any).
    x = std::round(x);
    if (std::ceil(low) <= std::floor(high)) {
      return std::clamp(x, std::ceil(low), std::floor(high));
    }
  }
  return std::clamp(x, low, high);
}

double Sampler::Mean(bool whole) const {
  if (whole && (kind == Kind::kUniform || kind == Kind::kMultiRangeUniform)) {
    double total = 0, sum = 0;
    for (const auto& [first, last] :
         WholeRuns(IntervalsOf(*this), -HUGE_VAL, HUGE_VAL)) {
      const auto n = static_cast<double>(last - first + 1);
      total += n;
      sum += n * (static_cast<double>(first) + static_cast<double>(last)) / 2;
    }
    if (total > 0) return sum / total;
  }
  switch (kind) {
    case Kind::kConstant:
      return value;
    case Kind::kUniform:
      return (min + max) / 2;
    case Kind::kGaussian:
      return mean;
    case Kind::kMultiRangeUniform: {
      double total = 0, sum = 0;
      for (const auto& [lo, hi] : intervals) {
        total += hi - lo;
        sum += (hi - lo) * (lo + hi) / 2;
      }
      if (total > 0) return sum / total;
      return intervals.empty() ? 0.0 : intervals.front().first;
    }
  }
  return value;
}

std::string Sampler::Describe() const {
  switch (kind) {
    case Kind::kConstant:
      return FormatValue(value);
    case Kind::kUniform:
      return "uniform(" + FormatValue(min) + ", " + FormatValue(max) + ")";
    case Kind::kGaussian:
      return "gaussian(" + FormatValue(mean) + ", " + FormatValue(stdev) + ")";
    case Kind::kMultiRangeUniform: {
      std::string s = "multirange_uniform(";
      for (size_t i = 0; i < intervals.size(); ++i) {
        s += (i ? ", (" : "(") + FormatValue(intervals[i].first) + ", " +
             FormatValue(intervals[i].second) + ")";
      }
      return s + ")";
    }
  }
  return FormatValue(value);
}

std::string Sampler::DescribeWithSeed() const {
  return Describe() + (seed ? " seed " + std::to_string(*seed) : "");
}

std::string CompletionCriteria::Describe() const {
  std::string s = measure == Measure::kReward ? "reward" : "progress";
  s += " > " + FormatValue(threshold) + " over " +
       std::to_string(min_lesson_length) + " episodes";
  if (signal_smoothing) s += ", smoothed";
  if (require_reset) s += ", require_reset";
  return s;
}

std::string ParameterSchedule::Describe() const {
  if (lessons.size() == 1) return lessons[0].value.DescribeWithSeed();
  std::string s;
  for (const Lesson& l : lessons) {
    if (!s.empty()) s += "; ";
    s += l.name + ": " + l.value.DescribeWithSeed();
    if (l.criteria) s += " until " + l.criteria->Describe();
  }
  return s;
}

std::pair<double, double> Sampler::Support() const {
  switch (kind) {
    case Kind::kConstant:
      return {value, value};
    case Kind::kUniform:
      return {min, max};
    case Kind::kGaussian:
      return {-HUGE_VAL, HUGE_VAL};
    case Kind::kMultiRangeUniform: {
      double lo = HUGE_VAL, hi = -HUGE_VAL;
      for (const auto& [a, b] : intervals) {
        lo = std::min(lo, a);
        hi = std::max(hi, b);
      }
      return {lo, hi};
    }
  }
  return {value, value};
}

namespace {

// Whether a whole-number parameter can take the sampler: its constant or
// every bound whole (a gaussian's draws are rounded, its mean may be any).
bool WholeBounds(const Sampler& s) {
  const auto whole = [](double x) { return std::nearbyint(x) == x; };
  switch (s.kind) {
    case Sampler::Kind::kConstant:
      return whole(s.value);
    case Sampler::Kind::kUniform:
      return whole(s.min) && whole(s.max);
    case Sampler::Kind::kGaussian:
      return true;
    case Sampler::Kind::kMultiRangeUniform:
      for (const auto& [lo, hi] : s.intervals) {
        if (!whole(lo) || !whole(hi)) return false;
      }
      return true;
  }
  return false;
}

}  // namespace

int64_t Curriculum::BufferSize() const {
  int64_t n = 0;
  for (const ParameterSchedule& p : parameters) {
    for (const Lesson& l : p.lessons) {
      if (l.criteria) n = std::max(n, l.criteria->min_lesson_length);
    }
  }
  return n;
}

void Curriculum::CheckAgainst(const Env& env) const {
  for (const ParameterSchedule& p : parameters) {
    const EnvParameter* declared = DeclaredParameter(env, p.parameter);
    if (declared == nullptr) {
      std::vector<std::string> names;
      for (const EnvParameter& e : env.Parameters()) names.push_back(e.name);
      throw std::invalid_argument(
          "parameter '" + p.parameter + "' is not one " + env.Name() +
          " declares; accepted: " +
          (names.empty() ? std::string("none") : JoinNames(names)));
    }
    for (const Lesson& l : p.lessons) {
      if (declared->integer && !WholeBounds(l.value)) {
        throw std::invalid_argument(
            "parameter '" + p.parameter + "' lesson '" + l.name + "' value " +
            l.value.Describe() + " is invalid; accepted: whole numbers in [" +
            FormatValue(declared->min) + ", " + FormatValue(declared->max) +
            "] (a whole constant, uniform or multirange_uniform with whole "
            "bounds, or a gaussian, whose draws are rounded)");
      }
      const auto [lo, hi] = l.value.Support();
      const bool gaussian = l.value.kind == Sampler::Kind::kGaussian;
      const double check_lo = gaussian ? l.value.mean : lo;
      const double check_hi = gaussian ? l.value.mean : hi;
      if (check_lo < declared->min || check_hi > declared->max) {
        throw std::invalid_argument("parameter '" + p.parameter + "' lesson '" +
                                    l.name + "' value " + l.value.Describe() +
                                    " is outside its range; accepted: [" +
                                    FormatValue(declared->min) + ", " +
                                    FormatValue(declared->max) + "]");
      }
    }
  }
}

void Curriculum::Validate() const {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("curriculum: " + what);
  };
  if (parameters.size() > static_cast<size_t>(kMaxParameters)) {
    fail("more than " + std::to_string(kMaxParameters) + " parameters");
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    const ParameterSchedule& p = parameters[i];
    for (size_t j = 0; j < i; ++j) {
      if (parameters[j].parameter == p.parameter) {
        fail("parameter '" + p.parameter + "' appears twice");
      }
    }
    if (p.lessons.empty()) {
      fail("parameter '" + p.parameter + "' has no lessons");
    }
    for (size_t l = 0; l < p.lessons.size(); ++l) {
      const Lesson& lesson = p.lessons[l];
      const bool last = l + 1 == p.lessons.size();
      if (last == lesson.criteria.has_value()) {
        fail("parameter '" + p.parameter + "' lesson " + std::to_string(l + 1) +
             (last ? " is the last: it cannot have completion criteria"
                   : " needs completion criteria"));
      }
      if (lesson.criteria &&
          (lesson.criteria->min_lesson_length < 0 ||
           lesson.criteria->min_lesson_length > kMaxLessonLength)) {
        fail("parameter '" + p.parameter + "' min_lesson_length " +
             std::to_string(lesson.criteria->min_lesson_length) +
             " is outside [0, " + std::to_string(kMaxLessonLength) + "]");
      }
      const Sampler& s = lesson.value;
      const bool bad =
          (s.kind == Sampler::Kind::kUniform && !(s.min <= s.max)) ||
          (s.kind == Sampler::Kind::kGaussian && !(s.stdev >= 0)) ||
          (s.kind == Sampler::Kind::kMultiRangeUniform &&
           (s.intervals.empty() ||
            std::any_of(s.intervals.begin(), s.intervals.end(),
                        [](const auto& i) { return !(i.first <= i.second); })));
      if (bad) {
        fail("parameter '" + p.parameter + "' lesson " + std::to_string(l + 1) +
             " has an invalid sampler " + s.Describe());
      }
    }
  }
}

std::string Curriculum::LessonSummary(const int32_t* lessons) const {
  std::string s;
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (!parameters[i].HasCurriculum()) continue;
    s += (s.empty() ? "" : ", ") + parameters[i].parameter + " " +
         std::to_string(lessons[i] + 1) + "/" +
         std::to_string(parameters[i].lessons.size());
  }
  return s;
}

AdvanceDecision NeedIncrement(const CompletionCriteria& criteria,
                              double progress,
                              const std::vector<double>& returns,
                              double smoothing) {
  AdvanceDecision d{false, smoothing};
  if (static_cast<int64_t>(returns.size()) < criteria.min_lesson_length) {
    return d;
  }
  if (criteria.measure == CompletionCriteria::Measure::kProgress) {
    d.advance = progress > criteria.threshold;
    return d;
  }
  if (returns.empty()) return d;
  double measure = 0;
  for (double r : returns) measure += r;
  measure /= static_cast<double>(returns.size());
  if (std::isnan(measure)) return d;
  if (criteria.signal_smoothing) {
    measure = 0.25 * smoothing + 0.75 * measure;
    d.smoothing = measure;
  }
  d.advance = measure > criteria.threshold;
  return d;
}

CurriculumRunner::CurriculumRunner(const Curriculum& curriculum,
                                   CurriculumBlock& block, int64_t steps,
                                   double reward_scale, uint64_t seed,
                                   uint64_t worker)
    : curriculum_(curriculum),
      block_(block),
      steps_(steps),
      reward_scale_(reward_scale),
      rng_(seed) {
  for (const ParameterSchedule& p : curriculum_.parameters) {
    seeded_.emplace_back();
    for (const Lesson& lesson : p.lessons) {
      seeded_.back().emplace_back();
      if (!lesson.value.seed) continue;
      std::seed_seq seq{*lesson.value.seed, worker, uint64_t{0x5EED}};
      std::array<uint64_t, 1> stream{};
      seq.generate(stream.begin(), stream.end());
      seeded_.back().back().emplace(stream[0]);
    }
  }
}

void CurriculumRunner::Apply(Env& env) {
  for (size_t i = 0; i < curriculum_.parameters.size(); ++i) {
    const ParameterSchedule& p = curriculum_.parameters[i];
    const int32_t lesson = std::clamp<int32_t>(
        block_.lesson[i].load(), 0, static_cast<int32_t>(p.lessons.size()) - 1);
    const EnvParameter* declared = DeclaredParameter(env, p.parameter);
    auto& seeded = seeded_[i][static_cast<size_t>(lesson)];
    env.SetParameter(
        p.parameter,
        p.lessons[static_cast<size_t>(lesson)].value.Draw(
            seeded ? *seeded : rng_, declared ? declared->min : -HUGE_VAL,
            declared ? declared->max : HUGE_VAL,
            declared && declared->integer));
  }
}

void CurriculumRunner::EpisodeEnded(int64_t t, double scaled_return,
                                    int64_t generation) {
  const int64_t capacity = std::max<int64_t>(1, curriculum_.BufferSize());
  // Nothing to measure once every curriculum is at its last lesson (or
  // there is none): no lock at all.
  bool pending = false;
  for (size_t i = 0; i < curriculum_.parameters.size(); ++i) {
    const auto lessons =
        static_cast<int32_t>(curriculum_.parameters[i].lessons.size());
    pending |= block_.lesson[i].load() + 1 < lessons;
  }
  if (!pending) return;
  const double value = EnvironmentUnits(scaled_return, reward_scale_);
  boost::interprocess::scoped_lock<boost::interprocess::interprocess_mutex>
      lock(block_.mutex);
  if (generation != block_.advances.load()) return;  // Began before.
  if (capacity > 0) {
    block_.returns[block_.returns_next] = value;
    block_.returns_next = (block_.returns_next + 1) % capacity;
    block_.returns_count = std::min(block_.returns_count + 1, capacity);
  }
  const std::vector<double> returns(block_.returns,
                                    block_.returns + block_.returns_count);
  const double progress =
      steps_ > 0 ? static_cast<double>(t) / static_cast<double>(steps_) : 0;
  bool advanced = false;
  for (size_t i = 0; i < curriculum_.parameters.size(); ++i) {
    const ParameterSchedule& p = curriculum_.parameters[i];
    const int32_t lesson = block_.lesson[i].load();
    if (lesson + 1 >= static_cast<int32_t>(p.lessons.size())) continue;
    const Lesson& current = p.lessons[static_cast<size_t>(lesson)];
    const AdvanceDecision d = NeedIncrement(
        *current.criteria, progress, returns, block_.smoothing[i].load());
    block_.smoothing[i].store(d.smoothing);
    if (!d.advance) continue;
    block_.lesson[i].store(lesson + 1);
    block_.advanced_at[i].store(t);
    const int64_t n = block_.advances.load();
    block_.records[n % CurriculumBlock::kRecords] = {static_cast<int32_t>(i),
                                                     lesson + 1, t};
    block_.advances.store(n + 1, std::memory_order_release);
    if (current.criteria->require_reset) block_.epoch.fetch_add(1);
    advanced = true;
  }
  // As ML-Agents clears its reward buffer after a lesson change: the next
  // lesson is measured on its own episodes (EpisodeEnded drops those that
  // began before this advance).
  if (advanced) {
    block_.returns_count = 0;
    block_.returns_next = 0;
  }
}

}  // namespace asyncrl
