// Reading a curriculum file: ML-Agents' environment_parameters YAML
// (samplers, curricula, completion criteria) into a Curriculum, every error
// "SOURCE:LINE: what". What the curriculum does is curriculum.cc.
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>

#include "asyncrl/experiments/curriculum/curriculum.h"
#include "asyncrl/misc/config_file.h"
#include "asyncrl/misc/strings.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

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
        Fail(p, where + ": min_value " + FormatValue(s.min) +
                    " is greater than max_value " + FormatValue(s.max));
      }
    } else if (type == "gaussian") {
      OnlyKeys(p, {"mean", "st_dev", "seed"}, where);
      s.kind = Sampler::Kind::kGaussian;
      s.mean = need("mean");
      s.stdev = need("st_dev");
      if (!(s.stdev >= 0)) {
        Fail(p, where + ": st_dev " + FormatValue(s.stdev) + " is negative");
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
          Fail(pair, where + ": interval [" + FormatValue(lo) + ", " +
                         FormatValue(hi) + "] has min > max");
        }
        s.intervals.emplace_back(lo, hi);
      }
    } else {
      Fail(node["sampler_type"],
           where + ": unknown sampler_type '" + type +
               "'; accepted: uniform, gaussian, multirange_uniform");
    }
    // ML-Agents' per-sampler seed: the sampler draws from its own stream,
    // fixed by it (and the worker) instead of --seed; -1, ML-Agents'
    // default, is no seed.
    if (p["seed"]) {
      const double seed = Real(p["seed"], where + " seed");
      if (std::floor(seed) != seed || seed < -1 || seed > kMaxSeed) {
        Fail(p["seed"], where + ": seed " + FormatValue(seed) +
                            " is invalid; accepted: an integer in [0, 2^53], "
                            "or -1 for none");
      }
      if (seed >= 0) s.seed = static_cast<uint64_t>(seed);
    }
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
    if (node["behavior"])
      behavior_lines_.push_back(node["behavior"].Mark().line + 1);
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
           where + ": threshold " + FormatValue(c.threshold) +
               " is not a fraction of the run; accepted with measure "
               "progress: [0, 1]");
    }
    if (node["min_lesson_length"]) {
      const double n =
          Real(node["min_lesson_length"], where + " min_lesson_length");
      if (!(n >= 0 && n <= Curriculum::kMaxLessonLength) ||
          std::floor(n) != n) {
        Fail(node["min_lesson_length"],
             where + ": min_lesson_length " + FormatValue(n) +
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

  // The lines of the completion criteria that name a behavior.
  const std::vector<int>& BehaviorLines() const { return behavior_lines_; }

 private:
  // Integers above 2^53 are not exact in the double YAML reads them as.
  static constexpr double kMaxSeed = 9007199254740992.0;
  std::string source_;
  mutable std::vector<int> behavior_lines_;
};

}  // namespace

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
    // ML-Agents names the behavior a lesson's measure comes from; asyncrl
    // trains one.
    const std::vector<int>& lines = reader.BehaviorLines();
    if (!lines.empty()) {
      std::string at;
      for (size_t i = 0; i < lines.size() && i < 5; ++i) {
        at += (i ? ", " : "") + std::to_string(lines[i]);
      }
      if (lines.size() > 5) at += ", ...";
      curriculum.warnings.push_back(
          source + ": completion_criteria.behavior (line" +
          (lines.size() > 1 ? "s " : " ") + at +
          ") is ignored: asyncrl trains one behaviour, whose episodes every "
          "measure counts");
    }
    return curriculum;
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own message for it is "bad file".
    throw CurriculumError(source + ":" + std::to_string(e.mark.line + 1) +
                          ": nested too deeply (more than " +
                          std::to_string(e.depth() - 1) +
                          " levels of brackets or indentation)");
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

}  // namespace asyncrl
