// The status line, the learning-curve SVG and the metrics pipe.
#include "asyncrl/experiments/progress.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "asyncrl/experiments/learning_curve.h"
#include "asyncrl/experiments/metrics.h"
#include "test_basics.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace progress_test {
namespace {

namespace fs = std::filesystem;

TEST(ProgressTest, PlainLineHasEveryField) {
  SharedRegion region(0, 0);
  ControlBlock& control = region.control();
  TrainOptions options;
  options.steps = 1000;
  options.processes = 2;
  const auto start = Progress::Clock::now();
  control.global_step = 250;
  control.episodes = 12;
  std::ostringstream out;
  Progress progress(options, control, start, &out, /*terminal=*/false);
  const std::string line = progress.Line(start + std::chrono::seconds(10));
  EXPECT_EQ(line,
            "step 250/1000 (25.0%)  25 steps/s (12/worker)  episodes 12  "
            "elapsed 10s  left 30s");
  control.last_score = 150.5;
  control.has_last_score = 1;
  control.best_score = 180;
  EXPECT_NE(progress.Line(start + std::chrono::seconds(10))
                .find("eval last 150.5 best 180"),
            std::string::npos);
  progress.Update(/*force=*/true);
  EXPECT_EQ(out.str().back(), '\n');  // Plain lines, no carriage return.
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
}

// The policy lag shown is the mean over the updates since the last line.
TEST(ProgressTest, ShowsTheMeanPolicyLagOfTheUpdatesSinceTheLastLine) {
  SharedRegion region(0, 0);
  ControlBlock& control = region.control();
  TrainOptions options;
  options.steps = 1000;
  const auto start = Progress::Clock::now();
  std::ostringstream out;
  Progress progress(options, control, start, &out, /*terminal=*/false);
  const auto at = start + std::chrono::seconds(1);
  EXPECT_EQ(progress.Line(at).find("lag"), std::string::npos);  // No update.
  control.agent_counters.updates = 4;
  control.agent_counters.policy_lag_sum = 6;
  EXPECT_NE(progress.Line(at).find("episodes 0  lag 1.5  elapsed"),
            std::string::npos)
      << progress.Line(at);
  progress.Update(/*force=*/true);
  control.agent_counters.updates = 14;
  control.agent_counters.policy_lag_sum = 36;  // 30 over 10 updates.
  EXPECT_NE(progress.Line(at).find("lag 3.0"), std::string::npos)
      << progress.Line(at);
}

TEST(ProgressTest, TerminalRedrawsOneLineWithABar) {
  SharedRegion region(0, 0);
  TrainOptions options;
  options.steps = 100;
  region.control().global_step = 50;
  std::ostringstream out;
  Progress progress(options, region.control(), Progress::Clock::now(), &out,
                    /*terminal=*/true);
  progress.Update(true);
  progress.Update(true);
  const std::string s = out.str();
  EXPECT_EQ(s.rfind("\r\033[K[############............] step 50/100", 0), 0u)
      << s;
  EXPECT_EQ(s.find('\n'), std::string::npos);
  progress.Finish();
  EXPECT_EQ(out.str().back(), '\n');
}

TEST(ProgressTest, DurationsAreReadable) {
  EXPECT_EQ(FormatDuration(42), "42s");
  EXPECT_EQ(FormatDuration(185), "3m05s");
  EXPECT_EQ(FormatDuration(3720), "1h02m");
  EXPECT_EQ(FormatDuration(NAN), "?");
}

TEST(LearningCurveTest, SvgDrawsMeanAndBandFromScores) {
  testing::TempDir dir("svg");
  {
    std::ofstream out(dir.path() / "scores.txt");
    out << "steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin\n"
        << "2000\t9\t1.0\t20\t20\t1\t30\t10\n"
        << "1000\t5\t0.5\t10\t10\t1\t15\t5\n"
        << "garbage\n";
  }
  EXPECT_EQ(WriteLearningCurve(dir.str(), "CartPole-v1"), 2u);
  std::ifstream in(dir.path() / "scores.svg");
  const std::string svg((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("<polygon"), std::string::npos);
  EXPECT_NE(svg.find("CartPole-v1"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  const auto rows = ReadScores((dir.path() / "scores.txt").string());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].steps, 2000);  // In file order (drawn by steps).
  EXPECT_EQ(rows[0].max, 30);
  EXPECT_EQ(rows[1].steps, 1000);
  EXPECT_TRUE(std::isnan(rows[0].average_entropy));  // No such column.
}

// The agent's average_entropy by its name in the header, whole lines only:
// a row being appended (no newline yet) is left for a later read.
TEST(LearningCurveTest, ReadScoresTakesTheEntropyColumnAndWholeLines) {
  testing::TempDir dir("read_scores");
  const fs::path path = dir.path() / "scores.txt";
  {
    std::ofstream out(path);
    out << "steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin\t"
           "average_value\taverage_entropy\tpolicy_loss\n"
        << "1000\t5\t0.5\t10\t10\t1\t15\t5\t0.3\t0.69\t-0.1\n"
        << "2000\t9\t1.0\t20\t20\t1\t30\t10\t0.4\tnan\t-0.1\n"
        << "3000\t9\t1.0\t20\t20\t1\t30\t10\t0.4\t0.5";  // Half a row.
  }
  auto rows = ReadScores(path.string());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].average_entropy, 0.69);
  EXPECT_TRUE(std::isnan(rows[1].average_entropy));
  {
    std::ofstream out(path, std::ios::app);
    out << "\t-0.2\n";
  }
  rows = ReadScores(path.string());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].steps, 3000);
  EXPECT_DOUBLE_EQ(rows[2].average_entropy, 0.5);
}

TEST(LearningCurveTest, NoScoresGivesAPlaceholder) {
  EXPECT_NE(LearningCurveSvg({}, "t").find("no evaluation yet"),
            std::string::npos);
}

TEST(MetricsChannelTest, RecordsFromChildrenReachTheParentWhole) {
  MetricsChannel channel;
  constexpr int kChildren = 3;
  constexpr int kRecords = 500;
  for (int c = 0; c < kChildren; ++c) {
    if (fork() == 0) {
      for (int i = 0; i < kRecords; ++i) channel.Send("train/x", c, i);
      _exit(channel.dropped() == 0 ? 0 : 1);
    }
  }
  for (int c = 0; c < kChildren; ++c) {
    int status = 0;
    wait(&status);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  int count = 0;
  double sum = 0;
  channel.Drain([&](const MetricRecord& r) {
    EXPECT_STREQ(r.tag, "train/x");
    ++count;
    sum += r.value;
  });
  EXPECT_EQ(count, kChildren * kRecords);
  EXPECT_DOUBLE_EQ(sum, kChildren * (kRecords - 1) * kRecords / 2.0);
}

// The per-episode scalars are written as one mean a second: each tag's
// mean since the last flush, at its newest step; other tags are not
// averaged.
TEST(EpisodeMeansTest, AveragesEachTagSinceTheLastFlush) {
  EXPECT_TRUE(EpisodeMeans::Averaged("train/episode_return"));
  EXPECT_TRUE(EpisodeMeans::Averaged("train/episode_length"));
  EXPECT_FALSE(EpisodeMeans::Averaged("train/lr"));
  EXPECT_FALSE(EpisodeMeans::Averaged("eval/mean"));
  EpisodeMeans means;
  const auto record = [](const char* tag, int64_t step, double value,
                         double wall) {
    MetricRecord r;
    std::snprintf(r.tag, sizeof(r.tag), "%s", tag);
    r.step = step;
    r.value = value;
    r.wall_time = wall;
    return r;
  };
  // Two workers' episodes, not in step order.
  means.Add(record("train/episode_return", 120, 1.0, 10.5));
  means.Add(record("train/episode_return", 100, -0.5, 10.2));
  means.Add(record("train/episode_length", 120, 9, 10.5));
  means.Add(record("train/episode_return", 90, 2.0, 10.1));
  struct Written {
    std::string tag;
    int64_t step;
    double mean, wall;
  };
  std::vector<Written> written;
  const auto write = [&](const std::string& tag, int64_t step, double mean,
                         double wall) {
    written.push_back({tag, step, mean, wall});
  };
  means.Flush(write);
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0].tag, "train/episode_length");
  EXPECT_EQ(written[0].step, 120);
  EXPECT_DOUBLE_EQ(written[0].mean, 9);
  EXPECT_EQ(written[1].tag, "train/episode_return");
  EXPECT_EQ(written[1].step, 120);
  EXPECT_DOUBLE_EQ(written[1].mean, 2.5 / 3);
  EXPECT_DOUBLE_EQ(written[1].wall, 10.5);
  written.clear();
  means.Flush(write);  // Nothing since.
  EXPECT_TRUE(written.empty());
  means.Add(record("train/episode_return", 130, 4.0, 11.0));
  means.Flush(write);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_DOUBLE_EQ(written[0].mean, 4.0);
}

}  // namespace
}  // namespace progress_test
}  // namespace asyncrl
