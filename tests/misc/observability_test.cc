// File formats of the observability outputs: TensorBoard event files (CRCs
// decoded back), JSON, timer trees and their merge.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "asyncrl/misc/json.h"
#include "asyncrl/misc/tensorboard.h"
#include "asyncrl/misc/timers.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace observability_test {
namespace {

namespace fs = std::filesystem;

TEST(Crc32cTest, MatchesKnownVectors) {
  // RFC 3720 test vector and the classic "123456789" check value.
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
}

class EventFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() / ("asyncrl_tb_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(EventFileTest, ScalarsDecodeBackWithValidCrcs) {
  std::string path;
  {
    EventWriter writer(dir_.string());
    path = writer.path();
    writer.WriteScalar("eval/mean", 1000, 195.5, 1.7e9);
    writer.WriteScalar("train/episode_return", 1200, 0.42, 1.7e9 + 1);
  }
  EXPECT_EQ(fs::path(path).filename().string().rfind("events.out.tfevents.", 0),
            0u);
  const auto events = ReadEventFile(path);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[1].step(), 1000);
  ASSERT_EQ(events[1].summary().value_size(), 1);
  EXPECT_EQ(events[1].summary().value(0).tag(), "eval/mean");
  EXPECT_FLOAT_EQ(events[1].summary().value(0).simple_value(), 195.5f);
  EXPECT_DOUBLE_EQ(events[2].wall_time(), 1.7e9 + 1);
}

TEST_F(EventFileTest, CorruptedRecordIsDetected) {
  std::string path;
  {
    EventWriter writer(dir_.string());
    path = writer.path();
    writer.WriteScalar("x", 1, 2.0, 3.0);
  }
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(-6, std::ios::end);
  f.put('\x7f');
  f.close();
  try {
    ReadEventFile(path);
    FAIL() << "a flipped byte went unnoticed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("record 1: data CRC mismatch"),
              std::string::npos)
        << e.what();
  }
}

// A file that cannot take every record (a file-size limit here, as a full
// disk; SIGXFSZ ignored as train_a3c does, so writes fail with EFBIG): the
// records that do not fit are counted, and the file is cut back to its last
// whole record, never left inside one (issue 24, case 4); the records that
// fit whole stay, however many records the failed flush held.
TEST_F(EventFileTest, RecordsThatDoNotFitAreCountedAndNeverCut) {
  constexpr rlim_t kLimit = 400;
  const fs::path report = dir_ / "report";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{kLimit, kLimit};
    setrlimit(RLIMIT_FSIZE, &limit);
    EventWriter writer(dir_.string());
    int failed_flushes = 0;
    for (int i = 0; i < 100; ++i) {
      writer.WriteScalar("x", i, i, 1.0);
      if (i % 5 == 4 && !writer.Flush()) ++failed_flushes;
    }
    std::ofstream out(report);
    out << writer.path() << "\n"
        << writer.lost() << "\n"
        << failed_flushes << "\n"
        << writer.first_error() << "\n";
    out.close();
    _exit(out ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::ifstream in(report);
  std::string path, lost, failed, error;
  std::getline(in, path);
  std::getline(in, lost);
  std::getline(in, failed);
  std::getline(in, error);
  EXPECT_GT(std::stoll(lost), 0);
  EXPECT_GT(std::stoll(failed), 0);
  EXPECT_EQ(error, std::strerror(EFBIG));
  EXPECT_LE(fs::file_size(path), kLimit);
  // Every record in the file is whole: written plus lost is everything.
  const auto events = ReadEventFile(path);
  EXPECT_EQ(static_cast<int64_t>(events.size()) + std::stoll(lost), 101);
  EXPECT_EQ(events.back().step(), static_cast<int64_t>(events.size()) - 2);
  // The records of the flush that failed which fit whole were kept: the
  // next one (the same size: one-byte steps) would not have fitted.
  const auto record =
      static_cast<uintmax_t>(12 + events.back().ByteSizeLong() + 4);
  EXPECT_GT(fs::file_size(path) + record, kLimit);
}

TEST(JsonTest, DumpsAndParsesBack) {
  Json::Object inner;
  inner["x"] = 1.5;
  inner["name"] = std::string("a \"quoted\"\nline");
  Json::Object outer;
  outer["inner"] = inner;
  outer["n"] = 42.0;
  const Json value(outer);
  for (int indent : {0, 2}) {
    const Json back = Json::Parse(value.Dump(indent));
    EXPECT_EQ(back.at("n").number(), 42.0);
    EXPECT_EQ(back.at("inner").at("name").string(), "a \"quoted\"\nline");
    EXPECT_EQ(back.Dump(), value.Dump());
  }
}

TEST(JsonTest, MalformedInputNamesTheOffset) {
  for (const char* bad : {"{", "{\"a\" 1}", "[1,]", "{\"a\":1} x", "\"open"}) {
    try {
      Json::Parse(bad);
      FAIL() << "parsed " << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("invalid JSON at byte"),
                std::string::npos);
    }
  }
}

TEST(TimerTreeTest, NestedScopesBuildTheTree) {
  TimerTree& tree = TimerTree::Process();
  tree.Clear();
  for (int i = 0; i < 3; ++i) {
    ScopedTimer outer("update");
    { ScopedTimer inner("forward"); }
    { ScopedTimer inner("backward"); }
  }
  { ScopedTimer other("env_step"); }
  const Json j = tree.ToJson();
  const Json& update = j.at("children").at("update");
  EXPECT_EQ(update.at("count").number(), 3);
  EXPECT_EQ(update.at("children").at("forward").at("count").number(), 3);
  EXPECT_EQ(j.at("children").at("env_step").at("count").number(), 1);
  const double children =
      update.at("children").at("forward").at("total").number() +
      update.at("children").at("backward").at("total").number();
  EXPECT_NEAR(update.at("self").number(),
              update.at("total").number() - children, 1e-12);
  EXPECT_GE(update.at("self").number(), 0.0);
  EXPECT_NEAR(j.at("total").number(),
              update.at("total").number() +
                  j.at("children").at("env_step").at("total").number(),
              1e-12);
  tree.Clear();
}

TEST(TimerTreeTest, DisabledTimersRecordNothing) {
  TimerTree& tree = TimerTree::Process();
  tree.Clear();
  tree.set_enabled(false);
  { ScopedTimer t("x"); }
  tree.set_enabled(true);
  EXPECT_TRUE(tree.root().children.empty());
}

TEST(TimerTreeTest, MergeSumsNodeByNodeAndSummaryShowsShares) {
  auto tree = [](double a, double b) {
    Json::Object leaf_a{{"total", a},
                        {"count", 1.0},
                        {"self", a},
                        {"children", Json::Object{}}};
    Json::Object leaf_b{{"total", b},
                        {"count", 2.0},
                        {"self", b},
                        {"children", Json::Object{}}};
    return Json(
        Json::Object{{"total", a + b},
                     {"count", 1.0},
                     {"self", 0.0},
                     {"children", Json::Object{{"a", leaf_a}, {"b", leaf_b}}}});
  };
  const Json merged = MergeTimerTrees({tree(1, 3), tree(2, 2)});
  EXPECT_DOUBLE_EQ(merged.at("total").number(), 8);
  EXPECT_DOUBLE_EQ(merged.at("children").at("a").at("total").number(), 3);
  EXPECT_DOUBLE_EQ(merged.at("children").at("b").at("count").number(), 4);
  const std::string summary = FormatTimerSummary(merged);
  EXPECT_NE(summary.find("37.5%"), std::string::npos) << summary;  // a: 3/8
  EXPECT_NE(summary.find("62.5%"), std::string::npos) << summary;  // b: 5/8
}

}  // namespace
}  // namespace observability_test
}  // namespace asyncrl
