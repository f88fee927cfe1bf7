// What happens when things go wrong, on the real train_a3c binary: a worker
// that throws, aborts, segfaults or is SIGKILLed from outside; SIGINT and
// SIGTERM to the trainer (twice, too); a disk that fills while saving. Each
// run lives in its own process group, so "no process of the run is left" is
// checked with kill(-pgid, 0).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../experiments/test_helpers.h"
#include "misc/checkpoint.h"

namespace asyncrl {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// train_a3c started in a new session (its own process group) with its
// stdout and stderr on one pipe.
class Spawned {
 public:
  Spawned(const std::vector<std::string>& args, const std::string& fault,
          rlim_t file_size_limit = RLIM_INFINITY) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    pid_ = fork();
    if (pid_ == 0) {
      setsid();
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      close(fds[1]);
      if (!fault.empty()) setenv("ASYNCRL_INJECT_FAULT", fault.c_str(), 1);
      if (file_size_limit != RLIM_INFINITY) {
        signal(SIGXFSZ, SIG_IGN);  // Writes fail with EFBIG instead.
        rlimit limit{file_size_limit, file_size_limit};
        setrlimit(RLIMIT_FSIZE, &limit);
      }
      std::vector<char*> argv{const_cast<char*>(TRAIN_A3C_BIN)};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(TRAIN_A3C_BIN, argv.data());
      _exit(127);
    }
    close(fds[1]);
    fd_ = fds[0];
  }
  ~Spawned() {
    if (fd_ >= 0) close(fd_);
  }

  // Reads output until `needle` appears (or EOF); true when it appeared.
  bool WaitFor(const std::string& needle) {
    while (output_.find(needle) == std::string::npos) {
      if (!ReadSome()) return false;
    }
    return true;
  }

  // Reads to EOF and reaps the trainer; returns its exit status (128 + signal
  // when it was killed).
  int Finish() {
    while (ReadSome()) {
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // True when no process of the run's group is alive.
  bool GroupGone() const { return kill(-pid_, 0) == -1 && errno == ESRCH; }

  std::vector<pid_t> Workers() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/task/" +
                     std::to_string(pid_) + "/children");
    std::vector<pid_t> pids;
    for (pid_t p; in >> p;) pids.push_back(p);
    return pids;
  }

  pid_t pid() const { return pid_; }
  const std::string& output() const { return output_; }

  // The directory named by "results in DIR".
  fs::path RunDir() const {
    const size_t at = output_.find("results in ");
    if (at == std::string::npos) return {};
    const size_t end = output_.find_first_of(" \n", at + 11);
    return output_.substr(at + 11, end - at - 11);
  }

 private:
  bool ReadSome() {
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) return true;
    if (n <= 0) return false;
    output_.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string output_;
};

std::vector<std::string> LongRun(const TempDir& dir, int processes = 3) {
  return {
      "--outdir",    dir.str(),    "--processes",     std::to_string(processes),
      "--steps",     "1000000000", "--eval-interval", "0",
      "--log-level", "debug",      "--quiet"};
}

// The _except checkpoint the trainer reported, loaded back.
proto::Checkpoint ExceptCheckpoint(const Spawned& run) {
  const std::string& out = run.output();
  const size_t at = out.find("train_a3c: saved ");
  EXPECT_NE(at, std::string::npos) << out;
  const std::string dir = out.substr(at + 17, out.find('\n', at) - at - 17);
  EXPECT_NE(dir.find("_except"), std::string::npos) << dir;
  return LoadCheckpointDir(dir);
}

void ExpectOthersStoppedOnTheFlag(const Spawned& run, int failed) {
  const std::string& out = run.output();
  EXPECT_EQ(out.find("was killed by the trainer"), std::string::npos) << out;
  for (int i = 0; i < 3; ++i) {
    if (i == failed) continue;
    EXPECT_NE(out.find("worker " + std::to_string(i) + " (pid "),
              std::string::npos);
  }
}

struct WorkerFault {
  std::string kind;
  std::string expected;
};

class WorkerFaultTest : public ::testing::TestWithParam<WorkerFault> {};

TEST_P(WorkerFaultTest, StopsEveryWorkerSavesExceptAndLeavesNoProcess) {
  TempDir dir("fault_" + GetParam().kind);
  Spawned run(LongRun(dir), "worker=1,step=400,kind=" + GetParam().kind);
  EXPECT_EQ(run.Finish(), 1) << run.output();
  EXPECT_NE(run.output().find("train_a3c: worker 1 (pid "), std::string::npos)
      << run.output();
  EXPECT_NE(run.output().find(GetParam().expected), std::string::npos)
      << run.output();
  ExpectOthersStoppedOnTheFlag(run, 1);
  const proto::Checkpoint c = ExceptCheckpoint(run);
  EXPECT_GT(c.global_step(), 0);
  EXPECT_GT(c.parameters_size(), 0);
  EXPECT_TRUE(run.GroupGone());
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, WorkerFaultTest,
    ::testing::Values(
        WorkerFault{"throw",
                    "exited with status 1: injected failure at step 400"},
        WorkerFault{"abort", "was killed by signal SIGABRT"},
        WorkerFault{"segv", "was killed by signal SIGSEGV"}),
    [](const auto& info) { return info.param.kind; });

TEST(TrainerFaultTest, WorkerKilledFromOutsideIsReported) {
  TempDir dir("sigkill");
  Spawned run(LongRun(dir), "");
  ASSERT_TRUE(run.WaitFor("[debug] worker 0:")) << run.output();
  const auto workers = run.Workers();
  ASSERT_EQ(workers.size(), 3u);
  kill(workers[2], SIGKILL);
  EXPECT_EQ(run.Finish(), 1) << run.output();
  EXPECT_NE(run.output().find("worker 2 (pid " + std::to_string(workers[2]) +
                              ") was killed by signal SIGKILL"),
            std::string::npos)
      << run.output();
  ExpectOthersStoppedOnTheFlag(run, 2);
  ExceptCheckpoint(run);
  EXPECT_TRUE(run.GroupGone());
}

class StopSignalTest : public ::testing::TestWithParam<int> {};

TEST_P(StopSignalTest, StopsCleanlyWithItsExitStatus) {
  const int sig = GetParam();
  TempDir dir("stop_" + std::to_string(sig));
  Spawned run(LongRun(dir), "");
  ASSERT_TRUE(run.WaitFor("[debug] worker 0:")) << run.output();
  kill(run.pid(), sig);
  EXPECT_EQ(run.Finish(), 128 + sig) << run.output();
  EXPECT_NE(run.output().find("stopped by " + SignalName(sig)),
            std::string::npos);
  ExpectOthersStoppedOnTheFlag(run, -1);
  ExceptCheckpoint(run);
  EXPECT_TRUE(run.GroupGone());
}

INSTANTIATE_TEST_SUITE_P(Signals, StopSignalTest,
                         ::testing::Values(SIGINT, SIGTERM),
                         [](const auto& info) {
                           return SignalName(info.param);
                         });

TEST(TrainerFaultTest, SecondSigintStopsAtOnceAndCorruptsNothing) {
  TempDir dir("double_sigint");
  std::vector<std::string> args = LongRun(dir);
  args.insert(args.end(), {"--checkpoint-interval", "500"});
  Spawned run(args, "");
  ASSERT_TRUE(run.WaitFor("[debug] worker 0:")) << run.output();
  kill(run.pid(), SIGINT);
  ASSERT_TRUE(run.WaitFor("SIGINT received")) << run.output();
  kill(run.pid(), SIGINT);
  EXPECT_EQ(run.Finish(), 130) << run.output();
  EXPECT_TRUE(run.GroupGone());
  // Every checkpoint in the run folder loads.
  int checked = 0;
  for (const auto& e : fs::directory_iterator(run.RunDir())) {
    if (!fs::is_directory(e.path())) continue;
    EXPECT_NO_THROW(LoadCheckpointDir(e.path().string())) << e.path();
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

TEST(TrainerFaultTest, FullDiskWhileSavingIsReportedAndKeepsTheGoodCheckpoint) {
  TempDir dir("full_disk");
  // A first run leaves a good 2000_finish and best/.
  Spawned first({"--outdir", dir.str(), "--processes", "1", "--steps", "2000",
                 "--eval-interval", "1000", "--eval-n-runs", "1", "--quiet"},
                "");
  ASSERT_EQ(first.Finish(), 0) << first.output();
  const fs::path best = first.RunDir() / "best" / kCheckpointFileName;
  std::ifstream in(best, std::ios::binary);
  const std::string before((std::istreambuf_iterator<char>(in)), {});
  ASSERT_FALSE(before.empty());
  // Resumed with files limited to 64 KiB: every checkpoint save fails.
  Spawned second({"--resume", (first.RunDir() / "2000_finish").string(),
                  "--steps", "400000", "--eval-interval", "1000", "--quiet"},
                 "", 64 * 1024);
  EXPECT_EQ(second.Finish(), 1) << second.output();
  EXPECT_NE(second.output().find("saving checkpoint "), std::string::npos)
      << second.output();
  EXPECT_NE(second.output().find("File too large"), std::string::npos)
      << second.output();
  std::ifstream again(best, std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(again)), {});
  EXPECT_EQ(after, before) << "best/ was replaced by a broken checkpoint";
  EXPECT_NO_THROW(LoadCheckpointDir((first.RunDir() / "best").string()));
  EXPECT_TRUE(second.GroupGone());
}

}  // namespace
}  // namespace asyncrl
