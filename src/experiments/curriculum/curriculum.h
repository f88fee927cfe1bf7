// Environment parameters that change during a run, in Unity ML-Agents'
// shape (its "environment_parameters"): each parameter an environment
// declares (envs/env.h) may be a constant, a sampler drawn per episode, or a
// curriculum of lessons that advance when a measure passes a threshold.
//
//   environment_parameters:
//     pole_length:                      # a sampler, drawn per episode
//       sampler_type: uniform           # uniform | gaussian |
//       multirange_uniform sampler_parameters: {min_value: 0.3, max_value: 0.7}
//     force:                            # a curriculum
//       curriculum:
//         - name: strong
//           completion_criteria:
//             measure: reward           # reward | progress
//             threshold: -150
//             min_lesson_length: 100    # episodes
//             signal_smoothing: true
//             require_reset: false
//           value: 0.0015               # or a sampler
//         - name: default
//           value: 0.001                # the last lesson has no criteria
//     gravity: 0.0025                   # a constant
//
// Semantics (ML-Agents' CompletionCriteriaSettings.need_increment): every
// training episode's return (in the environment's units: training rewards
// divided by --reward-scale-factor) goes into one buffer of the last N
// returns, N the largest min_lesson_length; a lesson with measure reward
// advances once the buffer holds min_lesson_length returns and their mean
// (smoothed: 0.25 * previous + 0.75 * mean, when signal_smoothing) exceeds
// the threshold; measure progress compares step / --steps instead. An
// advance clears the buffer. Lessons live in the trainer's shared region
// (CurriculumBlock): every worker sees an advance at once, and applies a
// new value at each environment's next reset (never mid-episode);
// require_reset ends the running training episodes at once instead.
// Evaluation environments keep --env-param's values: they measure the task
// itself. A whole-number parameter (EnvParameter::integer, e.g. the
// opponent mix's minimax_opponent_depth) takes whole constants and
// samplers with whole bounds: uniform draws each whole number of [min, max]
// equally often, multirange_uniform each of its intervals' whole numbers,
// gaussian rounds to the nearest (Sampler::Draw).
#ifndef ASYNCRL_EXPERIMENTS_CURRICULUM_CURRICULUM_H_
#define ASYNCRL_EXPERIMENTS_CURRICULUM_CURRICULUM_H_

#include <atomic>
#include <boost/interprocess/sync/interprocess_mutex.hpp>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "asyncrl/envs/env.h"

namespace asyncrl {

// The parameter `name` as `env` declares it; null if it declares none.
const EnvParameter* DeclaredParameter(const Env& env, const std::string& name);

// A malformed curriculum file: what() is one line, "FILE:LINE: what is
// wrong" (LINE 1-based).
class CurriculumError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A parameter's value for one episode: a constant or a distribution.
struct Sampler {
  enum class Kind { kConstant, kUniform, kGaussian, kMultiRangeUniform };
  Kind kind = Kind::kConstant;
  double value = 0;                                  // kConstant.
  double min = 0;                                    // kUniform.
  double max = 0;                                    // kUniform.
  double mean = 0;                                   // kGaussian.
  double stdev = 0;                                  // kGaussian.
  std::vector<std::pair<double, double>> intervals;  // kMultiRangeUniform.
  // ML-Agents' sampler_parameters.seed: draws come from a stream of the
  // sampler's own, fixed by the seed and the worker process (not by
  // --seed); absent, from the worker's stream fixed by --seed.
  std::optional<uint64_t> seed;

  // One value, clamped to [low, high] (the parameter's range: a Gaussian
  // has unbounded support). `whole`: the parameter takes whole numbers
  // (EnvParameter::integer): uniform and multirange_uniform draw each whole
  // number of their intervals (ends included; a number in two intervals
  // counts once) within [low, high] with equal probability; gaussian, and a
  // support without a whole number in range, round to the nearest and
  // clamp to the range's whole numbers.
  double Draw(std::mt19937_64& rng, double low, double high,
              bool whole = false) const;
  // The distribution's mean (the constant for a constant, a gaussian's mean
  // as given; uniform's and multirange_uniform's over the whole numbers
  // they draw when `whole`): what TensorBoard shows as the lesson's value.
  double Mean(bool whole = false) const;
  // "0.0015", "uniform(0.3, 0.7)", "gaussian(2, 0.3)",
  // "multirange_uniform((7, 10), (15, 20))".
  std::string Describe() const;
  // Describe(), then " seed N" when seeded.
  std::string DescribeWithSeed() const;
  // The smallest and largest value it can draw (a Gaussian: unbounded).
  std::pair<double, double> Support() const;
};

struct CompletionCriteria {
  enum class Measure { kReward, kProgress };
  Measure measure = Measure::kReward;
  double threshold = 0;
  int64_t min_lesson_length = 0;  // Episodes, >= 0.
  bool signal_smoothing = true;
  bool require_reset = false;
  // "reward > -150 over 100 episodes, smoothed, require_reset".
  std::string Describe() const;
};

struct Lesson {
  std::string name;
  Sampler value;
  std::optional<CompletionCriteria> criteria;  // Absent on the last lesson.
};

// One parameter's schedule: a constant or a sampler is one lesson without
// criteria.
struct ParameterSchedule {
  std::string parameter;
  std::vector<Lesson> lessons;
  bool HasCurriculum() const { return lessons.size() > 1; }
  // Every lesson: "strong: 0.0015 until reward > -150 over 100 episodes,
  // smoothed; default: 0.001" (one lesson: its value alone).
  std::string Describe() const;
};

struct Curriculum {
  // Capacity of the shared buffer of episode returns: the largest
  // min_lesson_length accepted.
  static constexpr int64_t kMaxLessonLength = 4096;
  // Parameters a curriculum file may schedule.
  static constexpr int kMaxParameters = 32;

  std::vector<ParameterSchedule> parameters;  // In file order.
  // What the file holds that asyncrl accepts and ignores, one line each
  // (Parse fills it; the trainer logs them).
  std::vector<std::string> warnings;

  // Parses a curriculum file's text; `source` names it in errors. Throws
  // CurriculumError.
  static Curriculum Parse(const std::string& text, const std::string& source);
  // Reads and parses a file. Throws CurriculumError (also for an unreadable
  // file).
  static Curriculum Load(const std::string& path);

  bool empty() const { return parameters.empty(); }
  // Whether some parameter has more than one lesson.
  bool HasLessons() const {
    for (const ParameterSchedule& p : parameters) {
      if (p.HasCurriculum()) return true;
    }
    return false;
  }
  // The largest min_lesson_length over every lesson (the buffer's size).
  int64_t BufferSize() const;
  // Throws std::invalid_argument (one line) if `env` does not declare a
  // scheduled parameter, a lesson's value (every value a sampler can draw,
  // for a bounded one) is outside the parameter's range, or a whole-number
  // parameter gets a constant or sampler bound that is not a whole number
  // (a gaussian's mean may be any: its draws are rounded).
  void CheckAgainst(const Env& env) const;
  // The rules Parse enforces, for a curriculum built in code
  // (the command line and CurriculumExtension call it): throws
  // std::invalid_argument.
  void Validate() const;
  // "force 2/3" per parameter with a curriculum, comma-separated (lessons
  // counted from 1); empty without curricula.
  std::string LessonSummary(const int32_t* lessons) const;
};

// A curriculum's state shared by the trainer's processes (a member of the
// control block, experiments/shared_region.h): lessons and smoothed
// measures are atomics every process reads without locking; the buffer of
// returns and every advance are under `mutex`, which only workers take.
struct CurriculumBlock {
  boost::interprocess::interprocess_mutex mutex;
  std::atomic<int32_t> lesson[Curriculum::kMaxParameters] = {};
  std::atomic<double> smoothing[Curriculum::kMaxParameters] = {};
  // The global step of each parameter's last advance (0: none yet).
  std::atomic<int64_t> advanced_at[Curriculum::kMaxParameters] = {};
  // Bumped by every advance whose lesson had require_reset.
  std::atomic<int64_t> epoch{0};
  // Every advance, in order, for the parent to report (each once, however
  // many happen between two of its looks): record i is in
  // records[i % kRecords], written before `advances` counts it.
  static constexpr int kRecords = 256;
  struct Advance {
    int32_t parameter = 0;  // Index in Curriculum::parameters.
    int32_t lesson = 0;     // The new lesson.
    int64_t step = 0;       // The global step of the episode end.
  };
  Advance records[kRecords] = {};
  std::atomic<int64_t> advances{0};
  // The last returns (environment units), a ring: under `mutex`.
  int64_t returns_count = 0;
  int64_t returns_next = 0;
  double returns[Curriculum::kMaxLessonLength] = {};
};

// A worker's side of a curriculum: draws each environment's values before
// its resets and feeds episode returns to the shared measure. One per
// worker process; not thread-safe.
class CurriculumRunner {
 public:
  // `steps`: the run's step budget (measure progress); `reward_scale`: what
  // training rewards were multiplied by; `seed`: the worker's sampler
  // stream; `worker`: the worker's index, which a seeded sampler's stream
  // is fixed by with its seed.
  CurriculumRunner(const Curriculum& curriculum, CurriculumBlock& block,
                   int64_t steps, double reward_scale, uint64_t seed,
                   uint64_t worker = 0);

  // Sets every scheduled parameter of `env` for its next episode: the
  // current lesson's value, or a fresh draw from its sampler.
  void Apply(Env& env);
  // A training episode ended at global step `t` with `scaled_return` (the
  // sum of the scaled training rewards); it began when Generation() was
  // `generation`. It counts toward the measure only if no lesson advanced
  // since it began (an advance starts the next lesson's measure afresh,
  // and an episode that began before it ran on the old values). May
  // advance lessons (atomically, once, across workers).
  void EpisodeEnded(int64_t t, double scaled_return, int64_t generation);
  // Changes whenever an advance asks for running episodes to end.
  int64_t Epoch() const { return block_.epoch.load(); }
  // Changes with every advance: read it before Apply() at a reset.
  int64_t Generation() const { return block_.advances.load(); }

 private:
  const Curriculum& curriculum_;
  CurriculumBlock& block_;
  int64_t steps_;
  double reward_scale_;
  std::mt19937_64 rng_;
  // Per parameter and lesson, the stream of a seeded sampler (empty for
  // the others).
  std::vector<std::vector<std::optional<std::mt19937_64>>> seeded_;
};

// What the last episodes and the step say for one lesson's criteria (a
// pure function, ML-Agents' need_increment): whether to advance, and the
// new smoothed measure. `returns` are the buffer's (any order).
struct AdvanceDecision {
  bool advance = false;
  double smoothing = 0;
};
AdvanceDecision NeedIncrement(const CompletionCriteria& criteria,
                              double progress,
                              const std::vector<double>& returns,
                              double smoothing);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_CURRICULUM_CURRICULUM_H_
