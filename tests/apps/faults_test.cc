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

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../experiments/test_basics.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/platform/process_group.h"
#include "asyncrl/misc/tensorboard.h"
#include "spawned.h"
#include "test_paths.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace faults_test {
namespace {

namespace fs = std::filesystem;
using testing::Spawned;
using testing::TempDir;

std::vector<std::string> LongRun(const TempDir& dir, int processes = 3,
                                 const std::string& steps = "1000000000") {
  return {
      "--outdir",    dir.str(), "--processes",     std::to_string(processes),
      "--steps",     steps,     "--eval-interval", "0",
      "--log-level", "debug",   "--quiet"};
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
  std::vector<std::string> expected;  // Each in the trainer's output.
  // The run's length: a fault that might not stop the run (a NaN reward)
  // gets one it would finish, with exit status 0, so the test ends.
  std::string steps = "1000000000";
};

void PrintTo(const WorkerFault& fault, std::ostream* os) { *os << fault.kind; }

class WorkerFaultTest : public ::testing::TestWithParam<WorkerFault> {};

TEST_P(WorkerFaultTest, StopsEveryWorkerSavesExceptAndLeavesNoProcess) {
  TempDir dir("fault_" + GetParam().kind);
  Spawned run(LongRun(dir, 3, GetParam().steps),
              "worker=1,step=400,kind=" + GetParam().kind);
  EXPECT_EQ(run.Finish(), 1) << run.output();
  EXPECT_NE(run.output().find("train_a3c: worker 1 (pid "), std::string::npos)
      << run.output();
  // The failure is said once: the other workers' ends follow it.
  const size_t first = run.output().find("worker 1 (pid ");
  EXPECT_EQ(run.output().find("worker 1 (pid ", first + 1), std::string::npos)
      << run.output();
  for (const std::string& expected : GetParam().expected) {
    EXPECT_NE(run.output().find(expected), std::string::npos)
        << expected << "\n"
        << run.output();
  }
  ExpectOthersStoppedOnTheFlag(run, 1);
  const proto::Checkpoint c = ExceptCheckpoint(run);
  EXPECT_GT(c.global_step(), 0);
  EXPECT_GT(c.parameters_size(), 0);
  // The parameters and optimizer statistics saved are the last finite ones
  // (a NaN reward's gradient was refused before any worker stepped with
  // it).
  for (const auto* tensors : {&c.parameters(), &c.optimizer_state()}) {
    for (const proto::Tensor& t : *tensors) {
      ASSERT_EQ(t.dtype(), proto::DTYPE_FLOAT32) << t.name();
      ASSERT_EQ(t.data().size() % sizeof(float), 0u) << t.name();
      for (size_t i = 0; i < t.data().size(); i += sizeof(float)) {
        float v = 0;
        std::memcpy(&v, t.data().data() + i, sizeof(float));
        ASSERT_TRUE(std::isfinite(v))
            << t.name() << " at " << i / sizeof(float);
      }
    }
  }
  EXPECT_GT(c.optimizer_state_size(), 0);
  EXPECT_TRUE(run.GroupGone());
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, WorkerFaultTest,
    ::testing::Values(
        WorkerFault{"throw",
                    {"exited with status 1: injected failure at step 400"}},
        WorkerFault{"abort", {"was killed by signal SIGABRT"}},
        WorkerFault{"segv", {"was killed by signal SIGSEGV"}},
        // Every environment of worker 1 gives a NaN reward at its step
        // 400 (near global step 3 x 16 x 400 = 19,200, of 1M): that
        // rollout's update is refused.
        WorkerFault{
            "nan",
            {"exited with status 1: the gradient of this worker's "
             "optimizer step ",
             "(norm NaN)", "of the rollout's", "rewards are NaN or infinite"},
            "1000000"}),
    [](const auto& info) { return info.param.kind; });

// Worker 2 of a 3-process run (`extra` flags added) SIGKILLed once the
// workers started: the run fails naming it, the others stop on the flag,
// _except/ is saved and no process of the run is left.
void ExpectAKilledWorkerStopsTheRun(const TempDir& dir,
                                    const std::vector<std::string>& extra) {
  std::vector<std::string> args = LongRun(dir);
  args.insert(args.end(), extra.begin(), extra.end());
  Spawned run(args, "");
  ASSERT_TRUE(run.WaitFor("workers started")) << run.output();
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

TEST(TrainerFaultTest, WorkerKilledFromOutsideIsReported) {
  TempDir dir("sigkill");
  ExpectAKilledWorkerStopsTheRun(dir, {});
}

// --learner: the learner (the last process) killed from outside stops the
// workers and saves _except/, as any worker's failure does; a worker's
// failure stops the learner too.
TEST(TrainerFaultTest, ALearnerKilledFromOutsideStopsTheRun) {
  TempDir dir("learner_killed");
  ExpectAKilledWorkerStopsTheRun(dir, {"--learner", "--minimum-segments", "1"});
}

TEST(TrainerFaultTest, AWorkerFailureStopsTheLearner) {
  TempDir dir("learner_worker_fails");
  std::vector<std::string> args = LongRun(dir);
  args.insert(args.end(), {"--learner"});
  Spawned run(args, "worker=1,step=400,kind=throw");
  EXPECT_EQ(run.Finish(), 1) << run.output();
  EXPECT_NE(run.output().find("train_a3c: worker 1 (pid "), std::string::npos)
      << run.output();
  EXPECT_NE(run.output().find("injected failure at step 400"),
            std::string::npos)
      << run.output();
  ExpectOthersStoppedOnTheFlag(run, 1);
  ExceptCheckpoint(run);
  EXPECT_TRUE(run.GroupGone());
}

// A worker that neither steps nor exits (SIGSTOP at its first step) used
// to hold the run for ever once the other had spent the steps. It is
// killed after --finish-timeout and the run fails naming it, keeping the
// finished run's checkpoint and saving _except/ at the last step.
TEST(TrainerFaultTest, AWorkerThatNeverEndsIsKilledOnceTheStepsAreSpent) {
  TempDir dir("stopped_worker");
  Spawned run({"--outdir", dir.str(), "--processes", "2", "--steps", "20000",
               "--eval-interval", "0", "--finish-timeout", "1", "--quiet"},
              "worker=1,step=1,kind=stop");
  EXPECT_EQ(run.Finish(), 1) << run.output();
  EXPECT_NE(run.output().find("train_a3c: worker 1 (pid "), std::string::npos)
      << run.output();
  EXPECT_NE(run.output().find("made no progress for"), std::string::npos)
      << run.output();
  const proto::Checkpoint c = ExceptCheckpoint(run);
  EXPECT_EQ(c.global_step(), 20000);
  EXPECT_TRUE(fs::is_directory(run.RunDir() / "20000_finish"));
  EXPECT_TRUE(run.GroupGone());
}

// The other side of the watch: a worker whose last update takes longer
// than --finish-timeout (here PPO, 60 epochs of 16 minibatches over a
// 4096-row rollout, ~3 s in Release on a 2-core AMD EPYC) is working, not
// hung: each minibatch is progress, and the run finishes (was: killed at
// 1 s, exit 1, only _except).
TEST(TrainerFaultTest, ALongLastUpdateIsWorkNotAHang) {
  TempDir dir("long_update");
  Spawned run({"--outdir",
               dir.str(),
               "--algorithm",
               "ppo",
               "--processes",
               "1",
               "--envs-per-process",
               "16",
               "--t-max",
               "256",
               "--epochs",
               "60",
               "--minibatches",
               "16",
               "--hidden-sizes",
               "256,256",
               "--steps",
               "4096",
               "--eval-interval",
               "0",
               "--finish-timeout",
               "1",
               "--quiet"},
              "");
  EXPECT_EQ(run.Finish(), 0) << run.output();
  EXPECT_EQ(run.output().find("made no progress"), std::string::npos)
      << run.output();
  EXPECT_TRUE(fs::is_directory(run.RunDir() / "4096_finish")) << run.output();
}

class StopSignalTest : public ::testing::TestWithParam<int> {};

TEST_P(StopSignalTest, StopsCleanlyWithItsExitStatus) {
  const int sig = GetParam();
  TempDir dir("stop_" + std::to_string(sig));
  Spawned run(LongRun(dir), "");
  ASSERT_TRUE(run.WaitFor("workers started")) << run.output();
  ASSERT_TRUE(run.WaitFor("[debug] outdir:")) << run.output();
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
  ASSERT_TRUE(run.WaitFor("workers started")) << run.output();
  ASSERT_TRUE(run.WaitFor("[debug] outdir:")) << run.output();
  kill(run.pid(), SIGINT);
  ASSERT_TRUE(run.WaitFor("SIGINT received")) << run.output();
  kill(run.pid(), SIGINT);
  EXPECT_EQ(run.Finish(), 130) << run.output();
  EXPECT_TRUE(run.GroupGone());
  // Every checkpoint in the run folder loads (a save cut short leaves only
  // a hidden ".<name>.tmp.*" directory).
  int checked = 0;
  for (const auto& e : fs::directory_iterator(run.RunDir())) {
    if (!fs::is_directory(e.path())) continue;
    if (e.path().filename().string().front() == '.') continue;
    EXPECT_NO_THROW(LoadCheckpointDir(e.path().string())) << e.path();
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

// SIGINT while a finished run evaluates its final agent ends the
// evaluation at once: the run exits 0 as finished, says the evaluation
// stopped, and writes no final_eval.tsv.
TEST(TrainerFaultTest, SigintDuringTheFinalEvaluationLeavesTheRunFinished) {
  TempDir dir("final_eval_sigint");
  Spawned run({"--outdir", dir.str(), "--processes", "1", "--steps", "500",
               "--eval-interval", "0", "--final-eval-n-runs", "100000"},
              "");
  ASSERT_TRUE(run.WaitFor("final evaluation: final")) << run.output();
  kill(run.pid(), SIGINT);
  EXPECT_EQ(run.Finish(), 0) << run.output();
  EXPECT_NE(run.output().find("finished at step 500"), std::string::npos)
      << run.output();
  EXPECT_NE(
      run.output().find("final evaluation: stopped by a signal; not written"),
      std::string::npos)
      << run.output();
  EXPECT_FALSE(fs::exists(run.RunDir() / "final_eval.tsv"));
  EXPECT_TRUE(run.GroupGone());
}

// ulimit -f as a user's shell sets it (SIGXFSZ at its default, which kills
// the writer): every write past the limit fails with EFBIG instead, the run
// stops with exit 1 naming it, and no temporary file or directory stays.
TEST(TrainerFaultTest, AFileSizeLimitFailsTheRunWithItsMessage) {
  TempDir dir("file_limit");
  Spawned run({"--outdir", dir.str(), "--processes", "2", "--steps", "2000",
               "--eval-interval", "1000", "--eval-n-runs", "1", "--quiet"},
              "", 64 * 1024);
  EXPECT_EQ(run.Finish(), 1) << run.output();
  EXPECT_NE(run.output().find("File too large"), std::string::npos)
      << run.output();
  EXPECT_EQ(run.output().find("No space left"), std::string::npos)
      << run.output();
  for (const auto& e : fs::recursive_directory_iterator(run.RunDir())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos)
        << e.path();
  }
  EXPECT_TRUE(run.GroupGone());
}

// A file-size limit the TensorBoard file reaches but no other file does
// (CartPole with 16 hidden units: 4.8 KB checkpoints, args.json 2.2 KB; the
// TensorBoard file grows by worker 0's statistics, 13 records at most ten
// times a second, ~6 KB a second, for the run's 3 seconds): the run
// finishes, says how many records it could not write, and the file holds
// whole records only (it used to end cut inside one, silently).
TEST(TrainerFaultTest, MetricsThatCannotBeWrittenAreCountedAndNeverCut) {
  TempDir dir("events_limit");
  constexpr size_t kLimit = 8 * 1024;
  Spawned run(
      {"--outdir", dir.str(), "--env", "CartPole-v1", "--processes", "2",
       "--steps", "1000000000", "--train-seconds", "3", "--hidden-sizes", "16",
       "--eval-interval", "0", "--final-eval-n-runs", "0", "--quiet"},
      "", kLimit);
  EXPECT_EQ(run.Finish(), 0) << run.output();
  EXPECT_NE(run.output().find("[warning] TensorBoard: cannot write "),
            std::string::npos)
      << run.output();
  const size_t count = run.output().find(" records could not be written to ");
  ASSERT_NE(count, std::string::npos) << run.output();
  EXPECT_NE(run.output().find("(File too large)"), std::string::npos)
      << run.output();
  int files = 0;
  int finishes = 0;
  for (const auto& e : fs::directory_iterator(run.RunDir())) {
    const std::string name = e.path().filename().string();
    if (name.size() > 7 && name.substr(name.size() - 7) == "_finish") {
      ++finishes;
      EXPECT_TRUE(fs::is_regular_file(e.path() / kCheckpointFileName));
    }
    if (name.rfind("events.out.tfevents.", 0) != 0) continue;
    ++files;
    EXPECT_LE(fs::file_size(e.path()), kLimit);
    EXPECT_GT(ReadEventFile(e.path().string()).size(), 10u);  // Whole.
  }
  EXPECT_EQ(files, 1);
  EXPECT_EQ(finishes, 1);
}

// Two --resume of one checkpoint at once: the second is refused (exit 2,
// one line naming the running trainer's pid) before it writes anything;
// they used to interleave their rows and checkpoints in one folder.
// The output's reader is gone before the run starts (`| head` after its
// first line, a killed `tee`): every write to stdout fails with EPIPE, and
// the run trains to its end, saves its checkpoints and exits 0 instead of
// dying of SIGPIPE (status 141) at its first line with nothing saved.
TEST(TrainerFaultTest, AnOutputWhoseReaderIsGoneDoesNotStopTheRun) {
  TempDir dir("broken_pipe");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);
  const std::string err = (dir.path() / "stderr").string();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(fds[1], 1);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(e, 2);
    signal(SIGPIPE, SIG_DFL);
    execl(TRAIN_A3C_BIN, TRAIN_A3C_BIN, "--outdir", dir.str().c_str(),
          "--processes", "2", "--steps", "4000", "--eval-interval", "2000",
          "--eval-n-runs", "1", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status)
                                 << ": " << testing::ReadFile(err);
  EXPECT_EQ(WEXITSTATUS(status), 0) << testing::ReadFile(err);
  std::vector<fs::path> runs;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    if (e.is_directory()) runs.push_back(e.path());
  }
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(LoadCheckpointDir((runs[0] / "4000_finish").string()).global_step(),
            4000);
  EXPECT_GE(testing::ReadLines(runs[0] / "scores.txt").size(), 3u);
}

TEST(TrainerFaultTest, TwoTrainersAreNeverInOneRunFolder) {
  TempDir dir("two_resumes");
  Spawned first({"--outdir", dir.str(), "--processes", "1", "--steps", "2000",
                 "--eval-interval", "1000", "--eval-n-runs", "1", "--quiet"},
                "");
  ASSERT_EQ(first.Finish(), 0) << first.output();
  const std::string checkpoint = (first.RunDir() / "2000_finish").string();
  Spawned running({"--resume", checkpoint, "--steps", "1000000000", "--quiet"},
                  "");
  ASSERT_TRUE(running.WaitFor("results in")) << running.output();
  Spawned second({"--resume", checkpoint, "--steps", "1000000000", "--quiet"},
                 "");
  EXPECT_EQ(second.Finish(), 2) << second.output();
  EXPECT_EQ(std::count(second.output().begin(), second.output().end(), '\n'), 1)
      << second.output();
  EXPECT_NE(
      second.output().find("(pid " + std::to_string(running.pid()) + " holds "),
      std::string::npos)
      << second.output();
  kill(running.pid(), SIGINT);
  EXPECT_EQ(running.Finish(), 130) << running.output();
  // Its lock went with it: the run resumes again.
  Spawned again({"--resume", checkpoint, "--steps", "3000", "--quiet"}, "");
  EXPECT_EQ(again.Finish(), 0) << again.output();
}

// A run folder this user cannot write (another owner's, or read-only) is
// an invalid --resume: one line, exit 2 (it was 1), nothing written. As
// root the trainer runs as nobody (setpriv) on the root-owned folder.
TEST(TrainerFaultTest, AResumeIntoAFolderItCannotWriteExitsTwo) {
  TempDir dir("read_only");
  Spawned first({"--outdir", dir.str(), "--processes", "1", "--steps", "1000",
                 "--eval-interval", "0", "--quiet"},
                "");
  ASSERT_EQ(first.Finish(), 0) << first.output();
  const fs::path run = first.RunDir();
  const auto readable = fs::perms::owner_all | fs::perms::group_read |
                        fs::perms::group_exec | fs::perms::others_read |
                        fs::perms::others_exec;
  std::vector<std::string> as_other;
  if (geteuid() == 0) {
    fs::permissions(dir.path(), readable);
    as_other = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    // Nobody must reach the run (a private TMPDIR would stop it earlier):
    // --demo reads the checkpoint and writes nothing.
    Spawned probe({"--demo", "--load", (run / "1000_finish").string(),
                   "--eval-n-runs", "1"},
                  "", RLIM_INFINITY, as_other);
    if (probe.Finish() != 0) {
      GTEST_SKIP() << "nobody cannot read the run with " << TRAIN_A3C_BIN
                   << ": " << probe.output();
    }
  } else {
    fs::permissions(run / ".lock", fs::perms::owner_read);
    fs::permissions(run, fs::perms::owner_read | fs::perms::owner_exec);
  }
  const auto command_before = testing::ReadLines(run / "command.txt");
  Spawned second({"--resume", (run / "1000_finish").string(), "--steps", "2000",
                  "--quiet"},
                 "", RLIM_INFINITY, as_other);
  EXPECT_EQ(second.Finish(), 2) << second.output();
  EXPECT_EQ(std::count(second.output().begin(), second.output().end(), '\n'), 1)
      << second.output();
  EXPECT_NE(second.output().find("accepted: a run folder this user can write"),
            std::string::npos)
      << second.output();
  EXPECT_NE(second.output().find("Permission denied"), std::string::npos)
      << second.output();
  fs::permissions(run, fs::perms::owner_all);
  EXPECT_EQ(testing::ReadLines(run / "command.txt"), command_before);
  EXPECT_FALSE(fs::exists(run / "2000_finish"));
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
}  // namespace faults_test
}  // namespace asyncrl
