// --demo --record FILE on the train_a3c binary: the evaluation episodes of a
// saved agent as an animated GIF, one frame a step and one at each episode's
// start (a move, in two-player games), and a bad path refused in one line
// before any episode runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "../experiments/test_basics.h"
#include "asyncrl/misc/gif_file.h"
#include "test_paths.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace record_test {
namespace {

namespace fs = std::filesystem;
using testing::Exec;
using testing::ProcessRun;
using testing::TempDir;

// Trains `env` for 500 steps in one process; the final checkpoint.
fs::path Train(const TempDir& dir, const std::string& env) {
  const ProcessRun run =
      Exec(TRAIN_A3C_BIN, "--outdir " + dir.str() + " --env " + env +
                              " --processes 1 --envs-per-process 2"
                              " --steps 500 --eval-interval 0 --quiet");
  EXPECT_EQ(run.status, 0) << run.output;
  const std::string prefix = "results in ";
  const size_t at = run.output.find(prefix);
  if (at == std::string::npos) return {};
  const std::string folder = run.output.substr(
      at + prefix.size(), run.output.find('\n', at) - at - prefix.size());
  return fs::path(folder) / "500_finish";
}

double Mean(const std::string& demo_output) {
  const size_t at = demo_output.find(" mean: ");
  return at == std::string::npos ? -1e9 : std::stod(demo_output.substr(at + 7));
}

struct Recorded {
  std::string env;
  int width;
  int height;
  int delay_cs;
  // Frames for two episodes of a mean return `mean` (-1: not known from
  // the return).
  int64_t (*frames)(double mean);
};

void PrintTo(const Recorded& r, std::ostream* os) { *os << r.env; }

class RecordTest : public ::testing::TestWithParam<Recorded> {};

TEST_P(RecordTest, TheEvaluationEpisodesBecomeAGifOfTheirSteps) {
  const Recorded& r = GetParam();
  TempDir dir("record");
  const fs::path checkpoint = Train(dir, r.env);
  ASSERT_TRUE(fs::exists(checkpoint)) << checkpoint;
  const fs::path gif = dir.path() / "agent.gif";
  const std::string opponents =
      r.env == "ConnectFour" ? " --eval-opponents random" : "";
  const ProcessRun demo =
      Exec(TRAIN_A3C_BIN, "--demo --load " + checkpoint.string() +
                              " --eval-n-runs 2" + opponents + " --record " +
                              gif.string());
  ASSERT_EQ(demo.status, 0) << demo.output;
  const GifFrames frames = ReadGif(gif.string());
  EXPECT_EQ(frames.width, r.width);
  EXPECT_EQ(frames.height, r.height);
  EXPECT_TRUE(frames.loops);
  ASSERT_FALSE(frames.frames.empty());
  EXPECT_NE(
      demo.output.find("Recorded " + std::to_string(frames.frames.size()) +
                       " frames to " + gif.string()),
      std::string::npos)
      << demo.output;
  const int64_t expected = r.frames(Mean(demo.output));
  if (expected > 0) {
    EXPECT_EQ(static_cast<int64_t>(frames.frames.size()), expected)
        << demo.output;
  }
  std::set<std::vector<uint8_t>> distinct;
  for (size_t i = 0; i < frames.frames.size(); ++i) {
    const auto& f = frames.frames[i];
    EXPECT_GE(std::set<uint8_t>(f.begin(), f.end()).size(), 2u)
        << "frame " << i << " is blank";
    EXPECT_EQ(frames.delays_cs[i], r.delay_cs);
    distinct.insert(f);
  }
  EXPECT_GE(distinct.size(), 3u) << "the frames do not show the episodes";
}

INSTANTIATE_TEST_SUITE_P(
    Families, RecordTest,
    ::testing::Values(
        // Reward 1 a step: two episodes of mean M are 2M steps, plus their
        // two first frames.
        Recorded{
            "CartPole-v1", 600, 400, 2,
            [](double mean) { return static_cast<int64_t>(2 * mean) + 2; }},
        // 200 steps an episode.
        Recorded{"Pendulum-v1", 500, 500, 3,
                 [](double) { return int64_t{2 * 200 + 2}; }},
        Recorded{"MinAtar/Breakout", 200, 200, 10,
                 [](double) { return int64_t{-1}; }},
        Recorded{"ConnectFour", 560, 480, 50,
                 [](double) { return int64_t{-1}; }}),
    [](const ::testing::TestParamInfo<Recorded>& info) {
      std::string name;
      for (char c : info.param.env) name += std::isalnum(c) != 0 ? c : '_';
      return name;
    });

TEST(RecordFlagTest, APathThatCannotBeWrittenIsRefusedBeforeAnyEpisode) {
  TempDir dir("record_bad");
  const fs::path checkpoint = Train(dir, "CartPole-v1");
  ASSERT_TRUE(fs::exists(checkpoint)) << checkpoint;
  const std::string missing = (dir.path() / "no" / "a.gif").string();
  for (const std::string& path :
       {missing, dir.str(), std::string("/dev/null")}) {
    const ProcessRun demo =
        Exec(TRAIN_A3C_BIN,
             "--demo --load " + checkpoint.string() + " --record " + path);
    EXPECT_EQ(demo.status, 2) << demo.output;
    const auto lines = demo.Lines();
    ASSERT_EQ(lines.size(), 1u) << demo.output;
    EXPECT_NE(lines[0].find("--record=" + path + " is invalid; accepted: "),
              std::string::npos)
        << lines[0];
    EXPECT_EQ(demo.output.find("n_runs:"), std::string::npos)
        << "an episode ran";
  }
  EXPECT_FALSE(fs::exists(dir.path() / "no"));
  for (const auto& e : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename().string().find(".asyncrl-"), std::string::npos)
        << e.path();
  }
}

}  // namespace
}  // namespace record_test
}  // namespace asyncrl
