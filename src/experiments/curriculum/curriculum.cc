#include "asyncrl/experiments/curriculum/curriculum.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/interprocess/sync/scoped_lock.hpp>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "asyncrl/misc/config_file.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/strings.h"

namespace asyncrl {
namespace {

std::string Number(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

// Reads one YAML file's nodes, reporting "SOURCE:LINE: what".
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void Fail(const YAML::Node& at, const std::string& what) const {
    const int line = at.IsDefined() ? at.Mark().line + 1 : 0;
    throw CurriculumError(
        source_ + ":" + (line > 0 ? std::to_string(line) : "?") + ": " + what);
  }

  // The map's keys must all be in `allowed`.
  void OnlyKeys(const YAML::Node& map, const std::set<std::string>& allowed,
                const std::string& where) const {
    for (const auto& item : map) {
      const std::string key = item.first.as<std::string>();
      if (allowed.count(key) == 0) {
        Fail(item.first,
             "unknown key '" + key + "' in " + where +
                 "; accepted: " + JoinNames({allowed.begin(), allowed.end()}));
      }
    }
  }

  double Real(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) Fail(node, what + " must be a number");
    try {
      const double x = node.as<double>();
      if (!std::isfinite(x)) Fail(node, what + " must be finite");
      return x;
    } catch (const YAML::Exception&) {
      Fail(node, what + " must be a number, not '" + node.Scalar() + "'");
    }
  }

  std::string Name(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) Fail(node, what + " must be a name");
    return node.Scalar();
  }

  bool Bool(const YAML::Node& node, const std::string& what) const {
    try {
      return node.as<bool>();
    } catch (const YAML::Exception&) {
      Fail(node, what + " must be true or false, not '" +
                     (node.IsScalar() ? node.Scalar() : "a collection") + "'");
    }
  }

  Sampler ReadSampler(const YAML::Node& node, const std::string& where) const {
    Sampler s;
    if (node.IsScalar()) {
      s.value = Real(node, where);
      return s;
    }
    if (!node.IsMap() || !node["sampler_type"]) {
      Fail(node, where + " must be a number or a map with sampler_type");
    }
    OnlyKeys(node, {"sampler_type", "sampler_parameters"}, where);
    const std::string type =
        Name(node["sampler_type"], where + ": sampler_type");
    const YAML::Node p = node["sampler_parameters"];
    if (!p || !p.IsMap()) {
      Fail(node, where + ": sampler_parameters (a map) is missing");
    }
    auto need = [&](const char* key) {
      if (!p[key]) Fail(p, where + ": " + type + " needs " + key);
      return Real(p[key], where + " " + key);
    };
    if (type == "uniform") {
      OnlyKeys(p, {"min_value", "max_value", "seed"}, where);
      s.kind = Sampler::Kind::kUniform;
      s.min = need("min_value");
      s.max = need("max_value");
      if (!(s.min <= s.max)) {
        Fail(p, where + ": min_value " + Number(s.min) +
                    " is greater than max_value " + Number(s.max));
      }
    } else if (type == "gaussian") {
      OnlyKeys(p, {"mean", "st_dev", "seed"}, where);
      s.kind = Sampler::Kind::kGaussian;
      s.mean = need("mean");
      s.stdev = need("st_dev");
      if (!(s.stdev >= 0)) {
        Fail(p, where + ": st_dev " + Number(s.stdev) + " is negative");
      }
    } else if (type == "multirange_uniform") {
      OnlyKeys(p, {"intervals", "seed"}, where);
      s.kind = Sampler::Kind::kMultiRangeUniform;
      const YAML::Node intervals = p["intervals"];
      if (!intervals || !intervals.IsSequence() || intervals.size() == 0) {
        Fail(p, where + ": intervals must be a list of [min, max] pairs");
      }
      for (const auto& pair : intervals) {
        if (!pair.IsSequence() || pair.size() != 2) {
          Fail(pair, where + ": each interval must be [min, max]");
        }
        const double lo = Real(pair[0], where + " interval min");
        const double hi = Real(pair[1], where + " interval max");
        if (!(lo <= hi)) {
          Fail(pair, where + ": interval [" + Number(lo) + ", " + Number(hi) +
                         "] has min > max");
        }
        s.intervals.emplace_back(lo, hi);
      }
    } else {
      Fail(node["sampler_type"],
           where + ": unknown sampler_type '" + type +
               "'; accepted: uniform, gaussian, multirange_uniform");
    }
    // ML-Agents' per-sampler "seed" is accepted and ignored: draws come from
    // each worker's seeded stream (--seed).
    return s;
  }

  CompletionCriteria ReadCriteria(const YAML::Node& node,
                                  const std::string& where) const {
    if (!node.IsMap())
      Fail(node, where + ": completion_criteria must be a map");
    OnlyKeys(node,
             {"measure", "behavior", "threshold", "min_lesson_length",
              "signal_smoothing", "require_reset"},
             where + " completion_criteria");
    CompletionCriteria c;
    if (node["measure"]) {
      const std::string m = Name(node["measure"], where + ": measure");
      if (m == "reward") {
        c.measure = CompletionCriteria::Measure::kReward;
      } else if (m == "progress") {
        c.measure = CompletionCriteria::Measure::kProgress;
      } else {
        Fail(node["measure"], where + ": unknown measure '" + m +
                                  "'; accepted: reward, progress");
      }
    }
    if (node["threshold"]) {
      c.threshold = Real(node["threshold"], where + " threshold");
    }
    if (c.measure == CompletionCriteria::Measure::kProgress &&
        !(c.threshold >= 0 && c.threshold <= 1)) {
      Fail(node["threshold"] ? node["threshold"] : node,
           where + ": threshold " + Number(c.threshold) +
               " is not a fraction of the run; accepted with measure "
               "progress: [0, 1]");
    }
    if (node["min_lesson_length"]) {
      const double n =
          Real(node["min_lesson_length"], where + " min_lesson_length");
      if (!(n >= 0 && n <= Curriculum::kMaxLessonLength) ||
          std::floor(n) != n) {
        Fail(node["min_lesson_length"],
             where + ": min_lesson_length " + Number(n) +
                 " is invalid; accepted: an integer in [0, " +
                 std::to_string(Curriculum::kMaxLessonLength) + "]");
      }
      c.min_lesson_length = static_cast<int64_t>(n);
    }
    if (node["signal_smoothing"]) {
      c.signal_smoothing =
          Bool(node["signal_smoothing"], where + " signal_smoothing");
    }
    if (node["require_reset"]) {
      c.require_reset = Bool(node["require_reset"], where + " require_reset");
    }
    return c;
  }

  ParameterSchedule ReadParameter(const std::string& name,
                                  const YAML::Node& node) const {
    ParameterSchedule schedule;
    schedule.parameter = name;
    const std::string where = "parameter '" + name + "'";
    if (!node.IsMap() || !node["curriculum"]) {
      schedule.lessons.push_back({name, ReadSampler(node, where), {}});
      return schedule;
    }
    OnlyKeys(node, {"curriculum"}, where);
    const YAML::Node lessons = node["curriculum"];
    if (!lessons.IsSequence() || lessons.size() == 0) {
      Fail(lessons, where + ": curriculum must be a non-empty list of lessons");
    }
    for (size_t i = 0; i < lessons.size(); ++i) {
      const YAML::Node l = lessons[i];
      const std::string lw = where + " lesson " + std::to_string(i + 1);
      if (!l.IsMap()) Fail(l, lw + " must be a map");
      OnlyKeys(l, {"name", "value", "completion_criteria"}, lw);
      if (!l["value"]) Fail(l, lw + " has no value");
      Lesson lesson;
      lesson.name = l["name"] ? Name(l["name"], lw + " name")
                              : "lesson " + std::to_string(i + 1);
      lesson.value = ReadSampler(l["value"], lw + " value");
      const bool last = i + 1 == lessons.size();
      if (l["completion_criteria"]) {
        if (last) {
          Fail(l["completion_criteria"],
               lw + " is the last lesson: it cannot have completion_criteria");
        }
        lesson.criteria = ReadCriteria(l["completion_criteria"], lw);
      } else if (!last) {
        Fail(l, lw + " needs completion_criteria (only the last lesson has "
                     "none)");
      }
      schedule.lessons.push_back(std::move(lesson));
    }
    return schedule;
  }

 private:
  std::string source_;
};

}  // namespace

double Sampler::Draw(std::mt19937_64& rng, double low, double high) const {
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
  return std::clamp(x, low, high);
}

double Sampler::Mean() const {
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
      return Number(value);
    case Kind::kUniform:
      return "uniform(" + Number(min) + ", " + Number(max) + ")";
    case Kind::kGaussian:
      return "gaussian(" + Number(mean) + ", " + Number(stdev) + ")";
    case Kind::kMultiRangeUniform: {
      std::string s = "multirange_uniform(";
      for (size_t i = 0; i < intervals.size(); ++i) {
        s += (i ? ", (" : "(") + Number(intervals[i].first) + ", " +
             Number(intervals[i].second) + ")";
      }
      return s + ")";
    }
  }
  return Number(value);
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

Curriculum Curriculum::Parse(const std::string& text,
                             const std::string& source) {
  // Any yaml-cpp error (syntax, or a conversion such as a map where a name
  // belongs) becomes "SOURCE:LINE: what".
  try {
    const YAML::Node root = YAML::Load(text);
    const Reader reader(source);
    if (!root.IsMap() || !root["environment_parameters"]) {
      throw CurriculumError(source +
                            ":1: expected a map with the key "
                            "environment_parameters");
    }
    reader.OnlyKeys(root, {"environment_parameters"}, "the file");
    const YAML::Node params = root["environment_parameters"];
    if (!params.IsMap() || params.size() == 0) {
      reader.Fail(params,
                  "environment_parameters must map parameter names to values, "
                  "samplers or curricula");
    }
    if (params.size() > static_cast<size_t>(kMaxParameters)) {
      reader.Fail(params, "more than " + std::to_string(kMaxParameters) +
                              " parameters");
    }
    Curriculum curriculum;
    for (const auto& item : params) {
      const std::string name = item.first.as<std::string>();
      for (const ParameterSchedule& p : curriculum.parameters) {
        if (p.parameter == name) {
          reader.Fail(item.first, "parameter '" + name + "' appears twice");
        }
      }
      curriculum.parameters.push_back(reader.ReadParameter(name, item.second));
    }
    return curriculum;
  } catch (const YAML::Exception& e) {
    throw CurriculumError(source + ":" + std::to_string(e.mark.line + 1) +
                          ": " + e.msg);
  }
}

Curriculum Curriculum::Load(const std::string& path) {
  std::string text;
  try {
    text = ReadSmallRegularFile(path, kMaxInputFileBytes);
  } catch (const std::invalid_argument& e) {
    throw CurriculumError(path +
                          ": cannot be read; accepted: a readable regular "
                          "file of at most " +
                          std::to_string(kMaxInputFileBytes) +
                          " bytes (it is " + e.what() + ")");
  }
  return Parse(text, path);
}

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
    const EnvParameter* declared = nullptr;
    std::vector<std::string> names;
    for (const EnvParameter& e : env.Parameters()) {
      names.push_back(e.name);
      if (e.name == p.parameter) declared = &e;
    }
    if (declared == nullptr) {
      throw std::invalid_argument(
          "parameter '" + p.parameter + "' is not one " + env.Name() +
          " declares; accepted: " +
          (names.empty() ? std::string("none") : JoinNames(names)));
    }
    for (const Lesson& l : p.lessons) {
      if (declared->integer &&
          (l.value.kind != Sampler::Kind::kConstant ||
           std::nearbyint(l.value.value) != l.value.value)) {
        throw std::invalid_argument(
            "parameter '" + p.parameter + "' lesson '" + l.name + "' value " +
            l.value.Describe() + " is invalid; accepted: a whole number in [" +
            Number(declared->min) + ", " + Number(declared->max) + "]");
      }
      const auto [lo, hi] = l.value.Support();
      const bool gaussian = l.value.kind == Sampler::Kind::kGaussian;
      const double check_lo = gaussian ? l.value.mean : lo;
      const double check_hi = gaussian ? l.value.mean : hi;
      if (check_lo < declared->min || check_hi > declared->max) {
        throw std::invalid_argument(
            "parameter '" + p.parameter + "' lesson '" + l.name + "' value " +
            l.value.Describe() + " is outside its range; accepted: [" +
            Number(declared->min) + ", " + Number(declared->max) + "]");
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
          (s.kind == Sampler::Kind::kMultiRangeUniform && s.intervals.empty());
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
                                   double reward_scale, uint64_t seed)
    : curriculum_(curriculum),
      block_(block),
      steps_(steps),
      reward_scale_(reward_scale),
      rng_(seed) {}

void CurriculumRunner::Apply(Env& env) {
  for (size_t i = 0; i < curriculum_.parameters.size(); ++i) {
    const ParameterSchedule& p = curriculum_.parameters[i];
    const int32_t lesson = std::clamp<int32_t>(
        block_.lesson[i].load(), 0, static_cast<int32_t>(p.lessons.size()) - 1);
    double low = -HUGE_VAL, high = HUGE_VAL;
    for (const EnvParameter& e : env.Parameters()) {
      if (e.name == p.parameter) {
        low = e.min;
        high = e.max;
      }
    }
    env.SetParameter(
        p.parameter,
        p.lessons[static_cast<size_t>(lesson)].value.Draw(rng_, low, high));
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
  const double value =
      reward_scale_ != 0 ? scaled_return / reward_scale_ : scaled_return;
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
