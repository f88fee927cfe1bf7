// Curriculum files: parsing (every sampler, lessons, defaults, every
// malformed case with its line), sampler draws, ML-Agents' advance rule
// (minimum length, smoothing, progress), lessons shared by worker
// processes through the shared region, and lessons kept by checkpoints.
#include "asyncrl/experiments/curriculum/curriculum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "asyncrl/envs/registry.h"
#include "asyncrl/experiments/curriculum/curriculum_extension.h"
#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/misc/platform/process_group.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace curriculum_test {
namespace {

Curriculum Parse(const std::string& text) {
  return Curriculum::Parse(text, "test.yaml");
}

constexpr const char* kFull = R"(environment_parameters:
  length:
    sampler_type: uniform
    sampler_parameters:
      min_value: 0.3
      max_value: 0.7
  masspole:
    sampler_type: gaussian
    sampler_parameters: {mean: 0.1, st_dev: 0.02}
  masscart:
    sampler_type: multirange_uniform
    sampler_parameters:
      intervals: [[0.5, 1.0], [2.0, 4.0]]
  force_mag:
    curriculum:
      - name: strong
        completion_criteria:
          measure: reward
          behavior: ignored
          threshold: 100
          min_lesson_length: 3
          signal_smoothing: false
          require_reset: true
        value: 20
      - name: middle
        completion_criteria:
          measure: progress
          threshold: 0.5
        value:
          sampler_type: uniform
          sampler_parameters: {min_value: 12, max_value: 14}
      - value: 10
)";

TEST(CurriculumParseTest, ReadsEverySamplerAndLessons) {
  const Curriculum c = Parse(kFull);
  ASSERT_EQ(c.parameters.size(), 4u);
  const Sampler& uniform = c.parameters[0].lessons[0].value;
  EXPECT_EQ(c.parameters[0].parameter, "length");
  EXPECT_EQ(uniform.kind, Sampler::Kind::kUniform);
  EXPECT_EQ(uniform.min, 0.3);
  EXPECT_EQ(uniform.max, 0.7);
  EXPECT_FALSE(c.parameters[0].HasCurriculum());
  const Sampler& gaussian = c.parameters[1].lessons[0].value;
  EXPECT_EQ(gaussian.kind, Sampler::Kind::kGaussian);
  EXPECT_EQ(gaussian.mean, 0.1);
  EXPECT_EQ(gaussian.stdev, 0.02);
  const Sampler& multi = c.parameters[2].lessons[0].value;
  EXPECT_EQ(multi.kind, Sampler::Kind::kMultiRangeUniform);
  ASSERT_EQ(multi.intervals.size(), 2u);
  EXPECT_EQ(multi.intervals[1], std::make_pair(2.0, 4.0));
  EXPECT_EQ(multi.Describe(), "multirange_uniform((0.5, 1), (2, 4))");

  const ParameterSchedule& force = c.parameters[3];
  ASSERT_EQ(force.lessons.size(), 3u);
  EXPECT_TRUE(force.HasCurriculum());
  EXPECT_EQ(force.lessons[0].name, "strong");
  EXPECT_EQ(force.lessons[0].value.value, 20);
  const CompletionCriteria& first = *force.lessons[0].criteria;
  EXPECT_EQ(first.measure, CompletionCriteria::Measure::kReward);
  EXPECT_EQ(first.threshold, 100);
  EXPECT_EQ(first.min_lesson_length, 3);
  EXPECT_FALSE(first.signal_smoothing);
  EXPECT_TRUE(first.require_reset);
  const CompletionCriteria& second = *force.lessons[1].criteria;
  EXPECT_EQ(second.measure, CompletionCriteria::Measure::kProgress);
  EXPECT_EQ(second.min_lesson_length, 0);  // ML-Agents' defaults.
  EXPECT_TRUE(second.signal_smoothing);
  EXPECT_FALSE(second.require_reset);
  EXPECT_EQ(force.lessons[1].value.Describe(), "uniform(12, 14)");
  EXPECT_EQ(force.lessons[2].name, "lesson 3");
  EXPECT_FALSE(force.lessons[2].criteria.has_value());
  EXPECT_EQ(c.BufferSize(), 3);
  EXPECT_TRUE(c.HasLessons());
  const int32_t lessons[4] = {0, 0, 0, 1};
  EXPECT_EQ(c.LessonSummary(lessons), "force_mag 2/3");
}

// ML-Agents' completion_criteria.behavior is accepted with one warning line
// naming where it is; a file without it has no warning.
TEST(CurriculumParseTest, ABehaviorIsNamedInOneWarningLine) {
  const Curriculum c = Parse(kFull);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0],
            "test.yaml: completion_criteria.behavior (line 19) is ignored: "
            "asyncrl trains one behaviour, whose episodes every measure "
            "counts");
  EXPECT_TRUE(
      Parse("environment_parameters:\n  gravity: 0.0025\n").warnings.empty());
}

// What a checkpoint records of a parameter, so a resume sees a change.
TEST(CurriculumParseTest, DescribesEveryLessonValueAndCriteria) {
  const Curriculum c = Parse(kFull);
  EXPECT_EQ(c.parameters[0].Describe(), "uniform(0.3, 0.7)");
  EXPECT_EQ(c.parameters[3].Describe(),
            "strong: 20 until reward > 100 over 3 episodes, require_reset; "
            "middle: uniform(12, 14) until progress > 0.5 over 0 episodes, "
            "smoothed; lesson 3: 10");
}

constexpr const char* kSeeded = R"(environment_parameters:
  length:
    sampler_type: uniform
    sampler_parameters: {min_value: 0.3, max_value: 0.7, seed: 1234}
  masspole:
    sampler_type: uniform
    sampler_parameters: {min_value: 0.05, max_value: 0.2, seed: -1}
)";

std::vector<std::pair<double, double>> Draws(const Curriculum& c, uint64_t seed,
                                             uint64_t worker) {
  auto block = std::make_unique<CurriculumBlock>();
  CurriculumRunner runner(c, *block, 1000, 1, seed, worker);
  auto env = MakeEnv("CartPole-v1");
  std::vector<std::pair<double, double>> draws;
  for (int i = 0; i < 20; ++i) {
    runner.Apply(*env);
    env->Reset(0);
    draws.emplace_back(env->Parameter("length"), env->Parameter("masspole"));
  }
  return draws;
}

// A sampler's seed fixes its draws (ML-Agents seeds a sampler from it):
// the same for any --seed, other for another worker; a sampler without one
// (-1 is ML-Agents' "none") follows --seed.
TEST(CurriculumParseTest, ASamplersSeedFixesItsDraws) {
  const Curriculum c = Parse(kSeeded);
  ASSERT_EQ(c.parameters[0].lessons[0].value.seed,
            std::optional<uint64_t>(1234));
  EXPECT_FALSE(c.parameters[1].lessons[0].value.seed.has_value());
  EXPECT_EQ(c.parameters[0].Describe(), "uniform(0.3, 0.7) seed 1234");
  const auto a = Draws(c, /*seed=*/1, /*worker=*/0);
  const auto b = Draws(c, /*seed=*/2, /*worker=*/0);
  const auto other_worker = Draws(c, /*seed=*/1, /*worker=*/1);
  int same_length = 0, same_masspole = 0, same_other_worker = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    same_length += a[i].first == b[i].first;
    same_masspole += a[i].second == b[i].second;
    same_other_worker += a[i].first == other_worker[i].first;
    EXPECT_GE(a[i].first, 0.3);
    EXPECT_LE(a[i].first, 0.7);
  }
  EXPECT_EQ(same_length, 20);
  EXPECT_EQ(same_masspole, 0);
  EXPECT_EQ(same_other_worker, 0);
  // Its stream is its own: the unseeded draws do not move it.
  const Curriculum alone = Parse(
      "environment_parameters:\n  length:\n    sampler_type: uniform\n"
      "    sampler_parameters: {min_value: 0.3, max_value: 0.7, seed: 1234}\n");
  const auto lone = Draws(alone, 1, 0);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(lone[i].first, a[i].first);
}

TEST(CurriculumParseTest, AConstantIsOneLesson) {
  const Curriculum c = Parse("environment_parameters:\n  gravity: 0.0025\n");
  ASSERT_EQ(c.parameters.size(), 1u);
  EXPECT_EQ(c.parameters[0].lessons[0].value.kind, Sampler::Kind::kConstant);
  EXPECT_EQ(c.parameters[0].lessons[0].value.value, 0.0025);
  EXPECT_FALSE(c.HasLessons());
}

struct Malformed {
  std::string text;
  std::string expected;  // "test.yaml:LINE: ..." fragment.
};

class MalformedCurriculumTest : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedCurriculumTest, IsRefusedWithTheLineAndWhatIsWrong) {
  try {
    Parse(GetParam().text);
    FAIL() << "accepted:\n" << GetParam().text;
  } catch (const CurriculumError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(GetParam().expected), std::string::npos) << what;
    EXPECT_EQ(what.rfind("test.yaml:", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

const char* kHead = "environment_parameters:\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedCurriculumTest,
    ::testing::Values(
        Malformed{"parameters:\n  a: 1\n",
                  "test.yaml:1: expected a map with "
                  "the key environment_parameters"},
        Malformed{"environment_parameters:\n  a: [1\n", "test.yaml:3:"},
        Malformed{std::string(kHead) +
                      "  a:\n    sampler_type: uniform\n    sampler_parameters:"
                      " {min_value: 0, max_value: 1, seed: 1.5}\n",
                  "test.yaml:4: parameter 'a': seed 1.5 is invalid; accepted: "
                  "an integer in [0, 2^53], or -1 for none"},
        Malformed{
            std::string(kHead) +
                "  a:\n    sampler_type: gaussian\n    sampler_parameters:"
                " {mean: 0, st_dev: 1, seed: -2}\n",
            "test.yaml:4: parameter 'a': seed -2 is invalid"},
        Malformed{std::string(kHead) + "  a: abc\n",
                  "test.yaml:2: parameter 'a' must be a number, not 'abc'"},
        Malformed{std::string(kHead) +
                      "  a:\n    sampler_type: beta\n"
                      "    sampler_parameters: {min_value: 1}\n",
                  "test.yaml:3: parameter 'a': unknown sampler_type 'beta'; "
                  "accepted: uniform, gaussian, multirange_uniform"},
        Malformed{std::string(kHead) +
                      "  a:\n    sampler_type: uniform\n"
                      "    sampler_parameters: {min_value: 2, max_value: 1}\n",
                  "test.yaml:4: parameter 'a': min_value 2 is greater than "
                  "max_value 1"},
        Malformed{std::string(kHead) +
                      "  a:\n    sampler_type: uniform\n"
                      "    sampler_parameters: {min_value: 2}\n",
                  "test.yaml:4: parameter 'a': uniform needs max_value"},
        Malformed{std::string(kHead) +
                      "  a:\n    sampler_type: gaussian\n"
                      "    sampler_parameters: {mean: 0, st_dev: -1}\n",
                  "st_dev -1 is negative"},
        Malformed{std::string(kHead) +
                      "  a:\n    sampler_type: multirange_uniform\n"
                      "    sampler_parameters:\n      intervals: [[1, 2, 3]]\n",
                  "test.yaml:5: parameter 'a': each interval must be [min, "
                  "max]"},
        Malformed{std::string(kHead) + "  a:\n    sampler_type: uniform\n",
                  "sampler_parameters (a map) is missing"},
        Malformed{std::string(kHead) +
                      "  a:\n    sampler_type: uniform\n    colour: red\n"
                      "    sampler_parameters: {min_value: 0, max_value: 1}\n",
                  "test.yaml:4: unknown key 'colour' in parameter 'a'"},
        Malformed{std::string(kHead) + "  a:\n    curriculum: []\n",
                  "curriculum must be a non-empty list of lessons"},
        Malformed{std::string(kHead) +
                      "  a:\n    curriculum:\n      - name: one\n"
                      "      - value: 2\n",
                  "test.yaml:4: parameter 'a' lesson 1 has no value"},
        Malformed{std::string(kHead) +
                      "  a:\n    curriculum:\n      - value: 1\n"
                      "      - value: 2\n",
                  "test.yaml:4: parameter 'a' lesson 1 needs "
                  "completion_criteria"},
        Malformed{std::string(kHead) +
                      "  a:\n    curriculum:\n      - value: 1\n"
                      "        completion_criteria: {threshold: 1}\n",
                  "lesson 1 is the last lesson: it cannot have "
                  "completion_criteria"},
        Malformed{std::string(kHead) +
                      "  a:\n    curriculum:\n      - value: 1\n"
                      "        completion_criteria: {measure: time}\n"
                      "      - value: 2\n",
                  "unknown measure 'time'; accepted: reward, progress"},
        Malformed{std::string(kHead) +
                      "  a:\n    curriculum:\n      - value: 1\n"
                      "        completion_criteria:\n"
                      "          measure: progress\n          threshold: 1.5\n"
                      "      - value: 2\n",
                  "test.yaml:7: parameter 'a' lesson 1: threshold 1.5 is not "
                  "a fraction of the run"},
        Malformed{std::string(kHead) +
                      "  a:\n    curriculum:\n      - value: 1\n"
                      "        completion_criteria: {min_lesson_length: 2.5}\n"
                      "      - value: 2\n",
                  "min_lesson_length 2.5 is invalid; accepted: an integer in "
                  "[0, 4096]"},
        Malformed{std::string(kHead) +
                      "  a:\n    curriculum:\n      - value: 1\n"
                      "        completion_criteria: {min_lesson_length: 5000}\n"
                      "      - value: 2\n",
                  "min_lesson_length 5000 is invalid"},
        Malformed{std::string(kHead) +
                      "  a:\n    curriculum:\n      - value: 1\n"
                      "        completion_criteria: {signal_smoothing: maybe}\n"
                      "      - value: 2\n",
                  "signal_smoothing must be true or false, not 'maybe'"},
        Malformed{std::string(kHead) +
                      "  a:\n    curriculum:\n      - value: 1\n"
                      "        completion_criteria: {patience: 3}\n"
                      "      - value: 2\n",
                  "unknown key 'patience'"},
        Malformed{std::string(kHead) + "  a: 1\n  a: 2\n",
                  "test.yaml:3: parameter 'a' appears twice"},
        Malformed{std::string(kHead) +
                      "  a:\n    sampler_type: [uniform]\n"
                      "    sampler_parameters: {min_value: 0, max_value: 1}\n",
                  "test.yaml:3: parameter 'a': sampler_type must be a name"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

// yaml-cpp stops at 2000 levels with the message "bad file": the error
// says what is wrong instead.
TEST(CurriculumParseTest, DeepNestingIsNamedAsSuch) {
  const std::string text =
      "a: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  try {
    Curriculum::Parse(text, "deep.yaml");
    ADD_FAILURE() << "parsed";
  } catch (const CurriculumError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("deep.yaml:1: nested too deeply", 0),
              0u)
        << e.what();
  }
}

TEST(CurriculumParseTest, AMissingFileIsACurriculumError) {
  EXPECT_THROW(Curriculum::Load("/nonexistent/curriculum.yaml"),
               CurriculumError);
}

TEST(CurriculumCheckTest, NamesAndRangesAreCheckedAgainstTheEnvironment) {
  auto env = MakeEnv("CartPole-v1");
  EXPECT_NO_THROW(Parse(kFull).CheckAgainst(*env));
  try {
    Parse("environment_parameters:\n  gravity: 1\n").CheckAgainst(*env);
    FAIL() << "accepted an undeclared parameter";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "parameter 'gravity' is not one CartPole declares; "
                  "accepted: length, masspole, masscart, force_mag"),
              std::string::npos)
        << e.what();
  }
  try {
    Parse(
        "environment_parameters:\n  length:\n    sampler_type: uniform\n"
        "    sampler_parameters: {min_value: 0.1, max_value: 9}\n")
        .CheckAgainst(*env);
    FAIL() << "accepted a sampler reaching outside the range";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("uniform(0.1, 9) is outside its "
                                         "range; accepted: [0.05, 5]"),
              std::string::npos)
        << e.what();
  }
}

TEST(CurriculumCheckTest, WholeNumberParametersTakeWholeNumberBounds) {
  auto env = MakeEnv("ConnectFour");  // minimax_opponent_depth: 1..12.
  const std::string head = "environment_parameters:\n  minimax_opponent_depth:";
  for (const std::string accepted :
       {" 2\n",
        "\n    sampler_type: uniform\n"
        "    sampler_parameters: {min_value: 2, max_value: 4}\n",
        "\n    sampler_type: multirange_uniform\n"
        "    sampler_parameters: {intervals: [[1, 1], [4, 5]]}\n",
        // A gaussian's draws are rounded: its mean need not be whole.
        "\n    sampler_type: gaussian\n"
        "    sampler_parameters: {mean: 2.5, st_dev: 1}\n"}) {
    EXPECT_NO_THROW(Parse(head + accepted).CheckAgainst(*env)) << accepted;
  }
  const std::pair<std::string, std::string> refused[] = {
      {" 2.5\n", "value 2.5 is invalid"},
      {"\n    sampler_type: uniform\n"
       "    sampler_parameters: {min_value: 2, max_value: 4.5}\n",
       "value uniform(2, 4.5) is invalid"},
      {"\n    sampler_type: multirange_uniform\n"
       "    sampler_parameters: {intervals: [[1, 1.5], [4, 5]]}\n",
       "value multirange_uniform((1, 1.5), (4, 5)) is invalid"}};
  for (const auto& [text, what] : refused) {
    try {
      Parse(head + text).CheckAgainst(*env);
      FAIL() << "accepted " << text;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "parameter 'minimax_opponent_depth' lesson "),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(what + "; accepted: whole numbers "
                                                  "in [1, 12]"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(CurriculumCheckTest, ACurriculumBuiltInCodeIsValidated) {
  Curriculum c = Parse(kFull);
  EXPECT_NO_THROW(c.Validate());
  c.parameters[3].lessons[0].criteria.reset();  // Not the last lesson.
  EXPECT_THROW(c.Validate(), std::invalid_argument);
  c = Parse(kFull);
  c.parameters[2].lessons[0].value.intervals.clear();
  EXPECT_THROW(c.Validate(), std::invalid_argument);
  c = Parse(kFull);
  c.parameters[2].lessons[0].value.intervals[0] = {2.0, 1.0};  // min > max.
  EXPECT_THROW(c.Validate(), std::invalid_argument);
  c = Parse(kFull);
  c.parameters[3].lessons[0].criteria->min_lesson_length = 5000;
  EXPECT_THROW(c.Validate(), std::invalid_argument);
  c = Parse(kFull);
  c.parameters[1].parameter = "length";  // Twice.
  EXPECT_THROW(c.Validate(), std::invalid_argument);
}

Sampler Uniform(double min, double max) {
  Sampler s;
  s.kind = Sampler::Kind::kUniform;
  s.min = min;
  s.max = max;
  return s;
}

Sampler MultiRange(std::vector<std::pair<double, double>> intervals) {
  Sampler s;
  s.kind = Sampler::Kind::kMultiRangeUniform;
  s.intervals = std::move(intervals);
  return s;
}

Sampler Gaussian(double mean, double stdev) {
  Sampler s;
  s.kind = Sampler::Kind::kGaussian;
  s.mean = mean;
  s.stdev = stdev;
  return s;
}

TEST(SamplerTest, DrawsStayInTheirSupportAndTheParameterRange) {
  std::mt19937_64 rng(1);
  const Sampler uniform = Uniform(2, 3);
  Sampler multi = MultiRange({{0, 1}, {10, 13}});  // 1/4 and 3/4 of draws.
  Sampler gaussian = Gaussian(0, 10);
  double sum = 0;
  int in_second = 0;
  int clamped = 0;
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) {
    const double u = uniform.Draw(rng, -100, 100);
    ASSERT_TRUE(u >= 2 && u <= 3) << u;
    sum += u;
    const double m = multi.Draw(rng, -100, 100);
    ASSERT_TRUE((m >= 0 && m <= 1) || (m >= 10 && m <= 13)) << m;
    in_second += m >= 10;
    const double g = gaussian.Draw(rng, -5, 5);
    ASSERT_TRUE(g >= -5 && g <= 5) << g;
    clamped += g == 5 || g == -5;
  }
  // Binomial/uniform sampling error: 5 standard deviations.
  EXPECT_NEAR(sum / kDraws, 2.5, 5 * std::sqrt(1.0 / 12 / kDraws));
  EXPECT_NEAR(in_second / double{kDraws}, 0.75,
              5 * std::sqrt(0.75 * 0.25 / kDraws));
  EXPECT_GT(clamped, kDraws / 3);  // P(|N(0, 10)| > 5) = 0.62.
  EXPECT_EQ(multi.Mean(), (0.5 * 1 + 11.5 * 3) / 4);
  // Unsorted intervals: the support spans them all.
  multi.intervals = {{10, 13}, {-2, 1}};
  EXPECT_EQ(multi.Support(), std::make_pair(-2.0, 13.0));
  gaussian.stdev = 0;  // A constant.
  EXPECT_EQ(gaussian.Draw(rng, -5, 5), 0.0);
}

CompletionCriteria Reward(double threshold, int64_t min_length,
                          bool smoothing) {
  CompletionCriteria c;
  c.threshold = threshold;
  c.min_lesson_length = min_length;
  c.signal_smoothing = smoothing;
  return c;
}

// A whole-number parameter's sampler draws each whole number of its
// support equally often (each interval's ends included), a gaussian rounds,
// and the reported mean is the whole numbers'.
TEST(SamplerTest, WholeNumberDrawsAreEachEquallyLikely) {
  std::mt19937_64 rng(2);
  const Sampler uniform = Uniform(2, 4);
  Sampler multi = MultiRange({{1, 1}, {4, 5}});  // 1, 4 and 5: a third each.
  const Sampler gaussian = Gaussian(2.5, 3);
  constexpr int kDraws = 30000;
  std::map<double, int> u_counts, m_counts, g_counts;
  for (int i = 0; i < kDraws; ++i) {
    ++u_counts[uniform.Draw(rng, 1, 42, /*whole=*/true)];
    ++m_counts[multi.Draw(rng, 1, 42, true)];
    ++g_counts[gaussian.Draw(rng, 1.5, 4.5, true)];  // Clamped to [2, 4].
  }
  const double third = kDraws / 3.0;
  const double tolerance = 5 * std::sqrt(kDraws * (1.0 / 3) * (2.0 / 3));
  ASSERT_EQ(u_counts.size(), 3u);
  for (double v : {2.0, 3.0, 4.0}) EXPECT_NEAR(u_counts[v], third, tolerance);
  ASSERT_EQ(m_counts.size(), 3u);
  for (double v : {1.0, 4.0, 5.0}) EXPECT_NEAR(m_counts[v], third, tolerance);
  ASSERT_EQ(g_counts.size(), 3u);
  for (const auto& [v, n] : g_counts) {
    EXPECT_TRUE(v == 2 || v == 3 || v == 4) << v;
  }
  EXPECT_EQ(uniform.Mean(true), 3.0);
  EXPECT_DOUBLE_EQ(multi.Mean(true), (1.0 + 4.0 + 5.0) / 3);
  EXPECT_EQ(multi.Mean(false), 4.5);  // Real-valued: (1, 1) has no width.
  // Overlapping intervals: 3 counts once (a fifth of the draws, not 2/6);
  // the range [1.5, 4] cuts 1 and 5 off.
  multi.intervals = {{1, 3}, {3, 5}};
  std::map<double, int> counts;
  for (int i = 0; i < kDraws; ++i) ++counts[multi.Draw(rng, 1.5, 4, true)];
  ASSERT_EQ(counts.size(), 3u);
  for (double v : {2.0, 3.0, 4.0}) EXPECT_NEAR(counts[v], third, tolerance);
  EXPECT_EQ(multi.Mean(true), 3.0);
}

// The runner draws a whole-number parameter's value per episode from the
// environment's declaration: every depth of the range shows up.
TEST(CurriculumRunnerTest, DrawsAWholeNumberParameterPerEpisode) {
  const Curriculum c = Parse(
      "environment_parameters:\n  minimax_opponent_depth:\n"
      "    sampler_type: uniform\n"
      "    sampler_parameters: {min_value: 2, max_value: 4}\n");
  auto env = MakeEnv("ConnectFour");
  c.CheckAgainst(*env);
  auto block = std::make_unique<CurriculumBlock>();
  CurriculumRunner runner(c, *block, /*steps=*/1000, /*reward_scale=*/1,
                          /*seed=*/4);
  std::map<double, int> depths;
  for (int episode = 0; episode < 60; ++episode) {
    runner.Apply(*env);
    env->Reset();
    ++depths[env->Parameter("minimax_opponent_depth")];
  }
  ASSERT_EQ(depths.size(), 3u);
  EXPECT_EQ(depths.begin()->first, 2.0);
  EXPECT_EQ(depths.rbegin()->first, 4.0);
}

TEST(NeedIncrementTest, FollowsMlAgentsRule) {
  // Too few episodes: no advance, smoothing unchanged.
  AdvanceDecision d = NeedIncrement(Reward(0, 3, true), 0, {5, 5}, 1.5);
  EXPECT_FALSE(d.advance);
  EXPECT_EQ(d.smoothing, 1.5);
  // Smoothed: 0.25 * 1.5 + 0.75 * mean(1, 2, 3) = 1.875.
  d = NeedIncrement(Reward(1.8, 3, true), 0, {1, 2, 3}, 1.5);
  EXPECT_TRUE(d.advance);
  EXPECT_DOUBLE_EQ(d.smoothing, 1.875);
  d = NeedIncrement(Reward(1.9, 3, true), 0, {1, 2, 3}, 1.5);
  EXPECT_FALSE(d.advance);
  EXPECT_DOUBLE_EQ(d.smoothing, 1.875);
  // Not smoothed: the mean itself; strictly greater than the threshold.
  d = NeedIncrement(Reward(2, 3, false), 0, {1, 2, 3}, 1.5);
  EXPECT_FALSE(d.advance);
  EXPECT_EQ(d.smoothing, 1.5);
  d = NeedIncrement(Reward(1.99, 3, false), 0, {1, 2, 3}, 1.5);
  EXPECT_TRUE(d.advance);
  // Progress: the fraction of the run, after the minimum length too.
  CompletionCriteria progress;
  progress.measure = CompletionCriteria::Measure::kProgress;
  progress.threshold = 0.5;
  progress.min_lesson_length = 1;
  EXPECT_FALSE(NeedIncrement(progress, 0.9, {}, 0).advance);
  EXPECT_FALSE(NeedIncrement(progress, 0.5, {1}, 0).advance);
  EXPECT_TRUE(NeedIncrement(progress, 0.51, {1}, 0).advance);
  // No episode yet: a reward measure never advances.
  EXPECT_FALSE(NeedIncrement(Reward(-1e9, 0, false), 0, {}, 0).advance);
}

constexpr const char* kTwoLessons = R"(environment_parameters:
  force_mag:
    curriculum:
      - name: strong
        completion_criteria: {threshold: 100, min_lesson_length: 3, signal_smoothing: false}
        value: 20
      - name: weak
        completion_criteria: {measure: progress, threshold: 0.5, require_reset: true}
        value: 15
      - name: default
        value: 10
)";

TEST(CurriculumRunnerTest, AdvancesAppliesAtTheNextResetAndAsksForResets) {
  const Curriculum c = Parse(kTwoLessons);
  auto block = std::make_unique<CurriculumBlock>();
  // Rewards scaled by 0.01 in training: the measure divides it out.
  CurriculumRunner runner(c, *block, /*steps=*/1000, /*reward_scale=*/0.01,
                          /*seed=*/3);
  auto env = MakeEnv("CartPole-v1");
  runner.Apply(*env);
  env->Reset(0);
  EXPECT_EQ(env->Parameter("force_mag"), 20);
  runner.EpisodeEnded(10, 2.00, 0);  // Return 200.
  runner.EpisodeEnded(20, 0.50, 0);  // 50: mean 125 > 100, but only 2 episodes.
  EXPECT_EQ(block->lesson[0].load(), 0);
  runner.EpisodeEnded(30, 0.20, 0);  // Mean of 200, 50, 20 = 90: not yet.
  EXPECT_EQ(block->lesson[0].load(), 0);
  runner.EpisodeEnded(40, 2.00, 0);  // The last 3: 50, 20, 200 -> 90.
  EXPECT_EQ(block->lesson[0].load(), 0);
  runner.EpisodeEnded(50, 2.00, 0);  // 20, 200, 200 -> 140.
  EXPECT_EQ(block->lesson[0].load(), 1);
  EXPECT_EQ(block->advanced_at[0].load(), 50);
  EXPECT_EQ(block->returns_count, 0);  // Cleared for the next lesson.
  EXPECT_EQ(block->epoch.load(), 0);   // Lesson 1 did not require a reset.
  EXPECT_EQ(runner.Generation(), 1);
  // An episode that began before the advance ran on the old value: it does
  // not count toward the new lesson.
  runner.EpisodeEnded(60, -5.0, /*generation=*/0);
  EXPECT_EQ(block->returns_count, 0);
  runner.EpisodeEnded(61, -5.0, /*generation=*/1);
  EXPECT_EQ(block->returns_count, 1);
  // The running episode keeps its value; the next reset takes the new one.
  runner.Apply(*env);
  EXPECT_EQ(env->Parameter("force_mag"), 20);
  env->Reset();
  EXPECT_EQ(env->Parameter("force_mag"), 15);
  // Progress: step 500 of 1000 is not past 0.5; 501 is.
  runner.EpisodeEnded(500, 0, 1);
  EXPECT_EQ(block->lesson[0].load(), 1);
  runner.EpisodeEnded(501, 0, 1);
  EXPECT_EQ(block->lesson[0].load(), 2);
  EXPECT_EQ(block->epoch.load(), 1);  // require_reset.
  runner.EpisodeEnded(900, 1e9, 2);   // The last lesson stays.
  EXPECT_EQ(block->lesson[0].load(), 2);
}

// Two worker processes feed one shared buffer (neither reaches the minimum
// length alone); the advance one of them makes is seen by a third process.
TEST(CurriculumRunnerTest, LessonsAreSharedByWorkerProcesses) {
  const Curriculum c = Parse(kTwoLessons);
  // The block where the trainer puts it: the extension's area of the region.
  CurriculumExtension extension(std::make_shared<const Curriculum>(c));
  SharedRegion region(1, 1, {extension.SharedBytes(SharedStateSizes{})});
  RunInfo run;
  run.control = &region.control();
  extension.Place(region.extension(0), run);
  CurriculumBlock& block = extension.block();
  ProcessGroupOptions options;
  options.num_workers = 2;
  GroupReport feed = RunProcessGroup(options, [&](int idx) {
    CurriculumRunner runner(c, block, 1000, 1.0, static_cast<uint64_t>(idx));
    runner.EpisodeEnded(10 + idx, 150, 0);
  });
  ASSERT_TRUE(feed.Ok());
  EXPECT_EQ(block.lesson[0].load(), 0);  // 2 of the 3 episodes needed.
  options.num_workers = 1;
  GroupReport third = RunProcessGroup(options, [&](int) {
    CurriculumRunner runner(c, block, 1000, 1.0, 7);
    runner.EpisodeEnded(30, 150, 0);  // The third: mean 150 > 100.
  });
  ASSERT_TRUE(third.Ok());
  EXPECT_EQ(block.lesson[0].load(), 1);
  GroupReport reader = RunProcessGroup(options, [&](int) {
    CurriculumRunner runner(c, block, 1000, 1.0, 9);
    auto env = MakeEnv("CartPole-v1");
    runner.Apply(*env);
    env->Reset(0);
    if (env->Parameter("force_mag") != 15) {
      throw std::runtime_error("a worker did not see the shared lesson");
    }
  });
  EXPECT_TRUE(reader.Ok()) << reader.workers[0].Describe();
}

}  // namespace
}  // namespace curriculum_test
}  // namespace asyncrl
