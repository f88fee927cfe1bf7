// Checkpoint files: round trip, atomic replacement, and rejection of
// truncated, corrupt, wrong-version, inconsistent and over-large files.
#include "asyncrl/misc/checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "../experiments/test_basics.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace checkpoint_test {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("asyncrl_ckpt_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Saves a large checkpoint with `save` in a child whose file-size limit
  // is tiny, so its writes fail as on a full disk. Returns the child's exit
  // status: 3 if the save threw naming `name`, 4 if it threw otherwise, 0
  // if it did not throw.
  static int BigSaveOnAFullDisk(
      const std::function<void(proto::Checkpoint&)>& save,
      const std::string& name) {
    const pid_t pid = fork();
    if (pid == 0) {
      signal(SIGXFSZ, SIG_IGN);
      rlimit limit{100, 100};
      setrlimit(RLIMIT_FSIZE, &limit);
      proto::Checkpoint big = Sample(2);
      std::vector<float> w(10000, 1.0f);
      AddFloatTensor(big.mutable_parameters(), "big", {10000}, w.data());
      try {
        save(big);
      } catch (const std::runtime_error& e) {
        _exit(std::string(e.what()).find(name) != std::string::npos ? 3 : 4);
      }
      _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
      return -1;
    }
    return WEXITSTATUS(status);
  }

  static proto::Checkpoint Sample(int64_t step) {
    proto::Checkpoint c;
    c.set_agent_type("a3c");
    c.set_global_step(step);
    c.set_episodes(12);
    std::vector<float> w(6);
    for (int i = 0; i < 6; ++i) w[i] = 0.5f * static_cast<float>(i) + step;
    AddFloatTensor(c.mutable_parameters(), "pi.0.weight", {2, 3}, w.data());
    AddFloatTensor(c.mutable_optimizer_state(), "ms.pi.0.weight", {2, 3},
                   w.data());
    (*c.mutable_metadata()->mutable_config())["lr"] = "0.0007";
    c.mutable_metadata()->set_env("CartPole-v1");
    return c;
  }

  std::string Path(const std::string& name = "checkpoint.pb") const {
    return (dir_ / name).string();
  }

  static std::string ReadBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static void WriteBytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  static std::string Frame(const std::string& payload) {
    return testing::FrameCheckpoint(payload);
  }

  void ExpectLoadError(const std::string& path, const std::string& fragment,
                       uint64_t max_bytes = kDefaultMaxCheckpointBytes) {
    try {
      LoadCheckpointFile(path, max_bytes);
      FAIL() << "loaded a bad file; expected: " << fragment;
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
    }
  }

  fs::path dir_;
};

TEST_F(CheckpointTest, RoundTripKeepsEverything) {
  proto::Checkpoint c = Sample(1000);
  SaveCheckpointFile(c, Path());
  proto::Checkpoint back = LoadCheckpointFile(Path());
  EXPECT_EQ(back.format_version(), kCheckpointFormatVersion);
  EXPECT_EQ(back.global_step(), 1000);
  EXPECT_EQ(back.episodes(), 12);
  EXPECT_EQ(back.metadata().config().at("lr"), "0.0007");
  std::vector<float> w(6);
  ReadFloatTensor(back.parameters(), "pi.0.weight", {2, 3}, w.data());
  EXPECT_EQ(w[5], 1002.5f);
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

// Paths are bytes on Linux: an option value or environment name that is not
// UTF-8 (a run folder named so) is saved and loads back byte for byte.
TEST_F(CheckpointTest, OptionValuesThatAreNotUtf8RoundTrip) {
  proto::Checkpoint c = Sample(7);
  const std::string odd = "out\xff\xfe/\x80x";
  (*c.mutable_metadata()->mutable_config())["outdir"] = odd;
  c.mutable_metadata()->set_env("\xc3\x28");
  SaveCheckpointFile(c, Path());
  const proto::Checkpoint back = LoadCheckpointFile(Path());
  EXPECT_EQ(back.metadata().config().at("outdir"), odd);
  EXPECT_EQ(back.metadata().env(), "\xc3\x28");
}

// A checkpoint protobuf would write but not read back (a text field that is
// not UTF-8) fails when it is saved, and nothing is written.
TEST_F(CheckpointTest, ACheckpointThatWouldNotLoadIsRefusedWhenSaved) {
  proto::Checkpoint c = Sample(7);
  c.set_agent_type("a3c\xff");
  try {
    SaveCheckpointFile(c, Path());
    ADD_FAILURE() << "saved a checkpoint that does not load";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot parse it back"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(CheckpointTest, DirectoryFormRoundTrips) {
  proto::Checkpoint c = Sample(5);
  const std::string d = (dir_ / "run" / "5_finish").string();
  SaveCheckpointDir(c, d);
  EXPECT_TRUE(fs::exists(fs::path(d) / kCheckpointFileName));
  EXPECT_EQ(LoadCheckpointDir(d).global_step(), 5);
  EXPECT_THROW(LoadCheckpointDir((dir_ / "missing").string()),
               std::runtime_error);
}

TEST_F(CheckpointTest, TruncatedFileIsRejected) {
  proto::Checkpoint c = Sample(1);
  SaveCheckpointFile(c, Path());
  const std::string bytes = ReadBytes(Path());
  WriteBytes(Path(), bytes.substr(0, bytes.size() - 7));
  ExpectLoadError(Path(), "truncated");
  WriteBytes(Path(), bytes.substr(0, 10));
  ExpectLoadError(Path(), "truncated");
}

TEST_F(CheckpointTest, FlippedByteIsRejectedAsCorrupt) {
  proto::Checkpoint c = Sample(1);
  SaveCheckpointFile(c, Path());
  std::string bytes = ReadBytes(Path());
  bytes[bytes.size() - 3] ^= 0x40;
  WriteBytes(Path(), bytes);
  ExpectLoadError(Path(), "CRC-32 mismatch");
}

TEST_F(CheckpointTest, ForeignFileIsRejected) {
  WriteBytes(Path(), std::string(100, 'x'));
  ExpectLoadError(Path(), "bad magic");
  ExpectLoadError(Path("nope.pb"), "cannot open");
}

TEST_F(CheckpointTest, GarbagePayloadIsRejected) {
  WriteBytes(Path(), Frame(std::string("\xff\xff\xff\xff\xff", 5)));
  ExpectLoadError(Path(), "not a valid Checkpoint");
}

TEST_F(CheckpointTest, WrongVersionIsRejected) {
  proto::Checkpoint c = Sample(1);
  c.set_format_version(99);
  WriteBytes(Path(), Frame(c.SerializeAsString()));
  ExpectLoadError(Path(), "format version 99 is not supported");
}

TEST_F(CheckpointTest, TensorWhoseBytesDisagreeWithItsShapeIsRejected) {
  proto::Checkpoint c = Sample(1);
  c.mutable_parameters(0)->set_shape(1, 4);
  c.set_format_version(kCheckpointFormatVersion);
  WriteBytes(Path(), Frame(c.SerializeAsString()));
  ExpectLoadError(Path(), "pi.0.weight' of shape [2, 4] needs 8 elements");
}

TEST_F(CheckpointTest, OverflowingShapeIsRejectedBeforeAllocating) {
  proto::Checkpoint c = Sample(1);
  auto* t = c.mutable_parameters(0);
  t->clear_shape();
  t->add_shape(int64_t{1} << 40);
  t->add_shape(int64_t{1} << 40);
  c.set_format_version(kCheckpointFormatVersion);
  WriteBytes(Path(), Frame(c.SerializeAsString()));
  ExpectLoadError(Path(), "overflows");
}

TEST_F(CheckpointTest, OverLargeFileIsRejected) {
  proto::Checkpoint c = Sample(1);
  SaveCheckpointFile(c, Path());
  ExpectLoadError(Path(), "over the limit of 64", 64);
}

TEST_F(CheckpointTest, WrongShapeOnReadNamesBothShapes) {
  proto::Checkpoint c = Sample(1);
  std::vector<float> out(6);
  try {
    ReadFloatTensor(c.parameters(), "pi.0.weight", {3, 2}, out.data());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[3, 2]"), std::string::npos);
  }
  EXPECT_THROW(
      ReadFloatTensor(c.parameters(), "v.0.weight", {2, 3}, out.data()),
      std::runtime_error);
}

TEST_F(CheckpointTest, FailedSaveLeavesTheEarlierCheckpointIntact) {
  proto::Checkpoint good = Sample(1);
  SaveCheckpointFile(good, Path());
  const std::string before = ReadBytes(Path());
  EXPECT_EQ(
      BigSaveOnAFullDisk(
          [&](proto::Checkpoint& c) { SaveCheckpointFile(c, Path()); }, Path()),
      3)
      << "save should fail and name the path";
  EXPECT_EQ(ReadBytes(Path()), before);
  EXPECT_EQ(LoadCheckpointFile(Path()).global_step(), 1);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1) << "the temporary file must be removed";
}

// A new checkpoint directory appears with its complete file or not at all:
// a save that fails (or is killed) half-way leaves no "<t>_checkpoint/"
// without checkpoint.pb, which --resume would choke on.
TEST_F(CheckpointTest, FailedSaveOfANewDirectoryLeavesNoDirectory) {
  const fs::path target = dir_ / "500_checkpoint";
  EXPECT_EQ(
      BigSaveOnAFullDisk(
          [&](proto::Checkpoint& c) { SaveCheckpointDir(c, target.string()); },
          target.string()),
      3)
      << "save should fail and name the path";
  EXPECT_FALSE(fs::exists(target));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), {}), 0)
      << "the temporary directory must be removed";
  // The same save with room succeeds, and a second one replaces the file.
  proto::Checkpoint c = Sample(7);
  SaveCheckpointDir(c, target.string());
  EXPECT_EQ(LoadCheckpointDir(target.string()).global_step(), 7);
  proto::Checkpoint d = Sample(8);
  SaveCheckpointDir(d, target.string());
  EXPECT_EQ(LoadCheckpointDir(target.string()).global_step(), 8);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), {}), 1);
  EXPECT_EQ(std::distance(fs::directory_iterator(target), {}), 1);
}

TEST_F(CheckpointTest, SaveIntoMissingDirectoryNamesThePath) {
  proto::Checkpoint c = Sample(1);
  const std::string path = (dir_ / "no" / "such" / "c.pb").string();
  try {
    SaveCheckpointFile(c, path);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

// A FIFO in the checkpoint file's place is refused at once (opening it
// waited for a writer for ever).
TEST(CheckpointFileTest, AFifoInsteadOfTheFileIsRefusedWithoutBlocking) {
  testing::TempDir dir("checkpoint_fifo");
  ASSERT_EQ(mkfifo((dir.path() / kCheckpointFileName).c_str(), 0600), 0);
  try {
    LoadCheckpointDir(dir.str());
    FAIL() << "loaded a FIFO";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace checkpoint_test
}  // namespace asyncrl
