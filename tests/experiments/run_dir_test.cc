// Run folders: created with their parents, never reused; atomic writes
// leave the old file intact when they fail.
#include "asyncrl/experiments/run_dir.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <stdexcept>

#include "test_basics.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace run_dir_test {
namespace {

namespace fs = std::filesystem;
using testing::ReadLines;
using testing::TempDir;

TEST(RunDirTest, CreatesTheOutdirAndANewFolderEachTime) {
  TempDir dir("run_dir");
  const std::string outdir = (dir.path() / "a" / "b").string();
  std::set<fs::path> made;
  for (int i = 0; i < 5; ++i) {
    const fs::path run = MakeRunDir(outdir);
    EXPECT_TRUE(fs::is_directory(run));
    EXPECT_EQ(run.parent_path(), fs::path(outdir));
    EXPECT_TRUE(made.insert(run).second) << "reused " << run;
  }
}

TEST(RunDirTest, AnOutdirThatCannotBeCreatedNamesTheFlag) {
  TempDir dir("run_dir_file");
  const fs::path file = dir.path() / "file";
  std::ofstream(file) << "x";
  try {
    MakeRunDir((file / "sub").string());
    FAIL() << "made a folder under a regular file";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind(
            "--outdir=" + (file / "sub").string() + " is invalid; accepted: ",
            0),
        0u)
        << e.what();
  }
}

TEST(RunDirTest, WriteFileAtomicallyReplacesTheWholeFile) {
  TempDir dir("atomic");
  const fs::path path = dir.path() / "args.json";
  WriteFileAtomically(path, "first\nsecond\n");
  WriteFileAtomically(path, "third\n");
  EXPECT_EQ(ReadLines(path), std::vector<std::string>{"third"});
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST(RunDirTest, AFailedWriteKeepsTheOldFile) {
  // A folder where the temporary file goes makes the write fail even for
  // root (who ignores read-only permissions).
  TempDir dir("atomic_fail");
  const fs::path path = dir.path() / "command.txt";
  WriteFileAtomically(path, "old\n");
  fs::create_directory(path.string() + ".tmp");  // The temporary is taken.
  EXPECT_THROW(WriteFileAtomically(path, "new\n"), std::runtime_error);
  EXPECT_EQ(ReadLines(path), std::vector<std::string>{"old"});
}

TEST(RunDirTest, ShellQuoteQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(ShellQuote("--lr=0.001"), "--lr=0.001");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote(""), "''");
}

}  // namespace
}  // namespace run_dir_test
}  // namespace asyncrl
