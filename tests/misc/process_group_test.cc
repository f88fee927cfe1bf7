// The worker process group and the shared region, exercised through real
// forks: counters under contention, failures by exception and by signal,
// SIGINT to the parent, workers that ignore the stop flag, and workers that
// stop making progress.
#include "asyncrl/misc/platform/process_group.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/misc/platform/futex.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace process_group_test {
namespace {

class ProcessGroupTest : public ::testing::Test {
 protected:
  ProcessGroupTest() : region_(16, 0) {}

  ProcessGroupOptions Options(int n) {
    ProcessGroupOptions options;
    options.num_workers = n;
    options.stop_flag = &region_.control().stop;
    options.grace = std::chrono::milliseconds(5000);
    return options;
  }

  // Blocks the calling worker until the group raises the stop flag.
  void WaitForStop() { WaitUntilNonZero(region_.control().stop); }

  SharedRegion region_;
};

TEST_F(ProcessGroupTest, CounterIncrementsFromAllWorkersAddUp) {
  constexpr int kWorkers = 4;
  constexpr int kIncrements = 20000;
  auto& control = region_.control();
  GroupReport report = RunProcessGroup(Options(kWorkers), [&](int idx) {
    for (int i = 0; i < kIncrements; ++i) control.global_step.fetch_add(1);
    region_.params()[idx] = static_cast<float>(idx + 1);
  });
  EXPECT_TRUE(report.Ok());
  EXPECT_EQ(control.global_step.load(), kWorkers * kIncrements);
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_EQ(region_.params()[i], static_cast<float>(i + 1));  // Child writes.
    EXPECT_EQ(report.workers[i].exit_code, 0);
    EXPECT_FALSE(report.workers[i].Failed());
  }
}

TEST_F(ProcessGroupTest, SegfaultIsReportedAndStopsTheOthers) {
  GroupReport report = RunProcessGroup(Options(3), [&](int idx) {
    if (idx == 1) {
      signal(SIGSEGV, SIG_DFL);  // Sanitizers install their own handler.
      raise(SIGSEGV);
    }
    WaitForStop();
  });
  EXPECT_FALSE(report.Ok());
  EXPECT_EQ(report.first_failure, 1);
  const WorkerEnd& w = report.workers[1];
  EXPECT_TRUE(w.signaled);
  EXPECT_EQ(w.signal, SIGSEGV);
  EXPECT_NE(w.Describe().find("SIGSEGV"), std::string::npos) << w.Describe();
  EXPECT_NE(w.Describe().find("worker 1 (pid " + std::to_string(w.pid)),
            std::string::npos);
  // The others saw the stop flag and exited cleanly.
  EXPECT_EQ(report.workers[0].exit_code, 0);
  EXPECT_FALSE(report.workers[0].signaled);
  EXPECT_EQ(report.workers[2].exit_code, 0);
  EXPECT_EQ(region_.control().stop.load(), 1);
}

TEST_F(ProcessGroupTest, ExceptionIsReportedWithExitCodeAndMessage) {
  GroupReport report = RunProcessGroup(Options(2), [&](int idx) {
    if (idx == 0) throw std::runtime_error("env exploded at step 7");
    WaitForStop();
  });
  EXPECT_EQ(report.first_failure, 0);
  const WorkerEnd& w = report.workers[0];
  EXPECT_FALSE(w.signaled);
  EXPECT_EQ(w.exit_code, 1);
  EXPECT_EQ(w.message, "env exploded at step 7");
  EXPECT_NE(w.Describe().find("exited with status 1: env exploded at step 7"),
            std::string::npos)
      << w.Describe();
  EXPECT_FALSE(report.workers[1].Failed());
}

TEST_F(ProcessGroupTest, SigintToParentStopsTheGroup) {
  GroupReport report = RunProcessGroup(Options(3), [&](int idx) {
    if (idx == 2) kill(getppid(), SIGINT);
    WaitForStop();
  });
  EXPECT_EQ(report.stop_signal, SIGINT);
  EXPECT_EQ(report.first_failure, -1);
  EXPECT_FALSE(report.Ok());
  for (const auto& w : report.workers) EXPECT_EQ(w.exit_code, 0);
}

TEST_F(ProcessGroupTest, WorkerIgnoringStopIsKilledAfterGrace) {
  ProcessGroupOptions options = Options(2);
  options.grace = std::chrono::milliseconds(200);
  GroupReport report = RunProcessGroup(options, [&](int idx) {
    if (idx == 0) throw std::runtime_error("boom");
    while (true) pause();  // Never looks at the stop flag.
  });
  EXPECT_EQ(report.first_failure, 0);
  const WorkerEnd& stubborn = report.workers[1];
  EXPECT_TRUE(stubborn.signaled);
  EXPECT_EQ(stubborn.signal, SIGKILL);
  EXPECT_TRUE(stubborn.killed_by_group);
  EXPECT_FALSE(stubborn.Failed());
  EXPECT_NE(stubborn.Describe().find("was killed by the trainer (SIGKILL)"),
            std::string::npos)
      << stubborn.Describe();
}

// Another thread of the parent (the hosts' coordinator) raises the flag:
// workers that see it return; one blocked where it cannot is killed after
// the grace, and nobody counts as failed.
TEST_F(ProcessGroupTest, StopFlagRaisedFromOutsideStopsTheGroup) {
  ProcessGroupOptions options = Options(2);
  options.grace = std::chrono::milliseconds(200);
  options.on_started = [this](const std::vector<pid_t>&) {
    StoreAndWakeAll(region_.control().stop, 1);
  };
  GroupReport report = RunProcessGroup(options, [&](int idx) {
    if (idx == 0) {
      WaitForStop();
      return;
    }
    while (true) pause();  // Blocked, as in I/O without a timeout.
  });
  EXPECT_TRUE(report.Ok());
  EXPECT_EQ(report.workers[0].exit_code, 0);
  EXPECT_FALSE(report.workers[0].signaled);
  EXPECT_TRUE(report.workers[1].signaled);
  EXPECT_TRUE(report.workers[1].killed_by_group);
  EXPECT_FALSE(report.workers[1].Failed());
}

// Once the work is done, a worker that makes no progress (stopped, hung)
// is killed after finish_timeout and fails; one that returned is not
// touched.
TEST_F(ProcessGroupTest, AWorkerSilentAfterTheWorkIsDoneIsKilledAndFails) {
  auto& control = region_.control();
  ProcessGroupOptions options = Options(2);
  options.finish_timeout = std::chrono::milliseconds(200);
  options.tick_interval = std::chrono::milliseconds(10);
  options.work_done = [&control] { return control.training_done.load() != 0; };
  GroupReport report = RunProcessGroup(options, [&](int idx) {
    ReportWorkerProgress();
    if (idx == 0) {
      control.training_done.store(1);
      return;
    }
    while (true) pause();  // Neither progresses nor looks at any flag.
  });
  EXPECT_EQ(report.first_failure, 1);
  EXPECT_FALSE(report.workers[0].Failed());
  EXPECT_EQ(report.workers[0].exit_code, 0);
  const WorkerEnd& silent = report.workers[1];
  EXPECT_TRUE(silent.stalled);
  EXPECT_TRUE(silent.Failed());
  EXPECT_EQ(silent.signal, SIGKILL);
  EXPECT_GE(silent.stalled_for, options.finish_timeout);
  EXPECT_NE(
      silent.Describe().find("worker 1 (pid " + std::to_string(silent.pid) +
                             ") made no progress for "),
      std::string::npos)
      << silent.Describe();
  EXPECT_NE(silent.Describe().find("after the work was done"),
            std::string::npos)
      << silent.Describe();
}

// A worker still busy when the work is done (an evaluation, a save) goes
// on as long as it makes progress, well past finish_timeout: it runs until
// the parent has ticked 120 times after the work was done (at least 1.2 s;
// finish_timeout 500 ms).
TEST_F(ProcessGroupTest, AWorkerProgressingAfterTheWorkIsDoneIsLeftToFinish) {
  auto& control = region_.control();
  ProcessGroupOptions options = Options(2);
  options.finish_timeout = std::chrono::milliseconds(500);
  options.tick_interval = std::chrono::milliseconds(10);
  std::atomic<int64_t>& ticks = control.episodes;  // Shared with workers.
  options.work_done = [&control] { return control.training_done.load() != 0; };
  options.on_tick = [&control, &ticks] {
    if (control.training_done.load() != 0) ticks.fetch_add(1);
  };
  GroupReport report = RunProcessGroup(options, [&](int idx) {
    if (idx == 0) {
      control.training_done.store(1);
      return;
    }
    while (ticks.load() < 120) ReportWorkerProgress();
  });
  EXPECT_TRUE(report.Ok());
  EXPECT_FALSE(report.workers[1].stalled);
  EXPECT_EQ(report.workers[1].exit_code, 0);
  EXPECT_FALSE(report.workers[1].signaled);
}

// A worker that made progress and then none for stall_warning is named
// once; one that never started is not watched. Here the warning's handler
// ends the run by raising the stop flag.
TEST_F(ProcessGroupTest, AQuietWorkerIsNamedOnceWhileTheGroupRuns) {
  ProcessGroupOptions options = Options(2);
  options.tick_interval = std::chrono::milliseconds(10);
  options.stall_warning = std::chrono::milliseconds(50);
  std::vector<int> named;
  options.on_stall = [&](int idx, pid_t, std::chrono::milliseconds idle) {
    named.push_back(idx);
    EXPECT_GE(idle, std::chrono::milliseconds(50));
    StoreAndWakeAll(region_.control().stop, 1);
  };
  GroupReport report = RunProcessGroup(options, [&](int idx) {
    if (idx == 1) ReportWorkerProgress();
    WaitForStop();
  });
  EXPECT_TRUE(report.Ok());
  EXPECT_EQ(named, std::vector<int>{1});
}

// A callback that throws (here on_started) leaves no worker behind and
// gives the caller its signal mask back.
TEST_F(ProcessGroupTest, ACallbackThatThrowsLeavesNoWorkerBehind) {
  ProcessGroupOptions options = Options(2);
  options.on_started = [](const std::vector<pid_t>&) {
    throw std::runtime_error("callback failed");
  };
  EXPECT_THROW(RunProcessGroup(options, [&](int) { WaitForStop(); }),
               std::runtime_error);
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  EXPECT_EQ(sigismember(&mask, SIGINT), 0);
  EXPECT_EQ(sigismember(&mask, SIGCHLD), 0);
}

TEST(ProgressWatchTest, IdleRunsFromTheLastChangeAndNotBeforeSince) {
  using Clock = ProgressWatch::Clock;
  const Clock::time_point t0{};
  const auto ms = [](int n) { return std::chrono::milliseconds(n); };
  ProgressWatch watch(2, t0);
  EXPECT_FALSE(watch.Started(0));
  EXPECT_EQ(watch.Idle(0, t0 + ms(40)), ms(40));  // Idle since the start.
  watch.Observe(0, 5, t0 + ms(100));
  EXPECT_TRUE(watch.Started(0));
  watch.Observe(0, 5, t0 + ms(150));  // No change: still idle since 100.
  EXPECT_EQ(watch.Idle(0, t0 + ms(180)), ms(80));
  EXPECT_EQ(watch.Idle(0, t0 + ms(180), t0 + ms(160)), ms(20));
  EXPECT_EQ(watch.Idle(0, t0 + ms(180), t0 + ms(300)), ms(0));
  watch.Observe(0, 6, t0 + ms(200));
  EXPECT_EQ(watch.Idle(0, t0 + ms(200)), ms(0));
  EXPECT_FALSE(watch.Started(1));
}

TEST_F(ProcessGroupTest, NonPositiveWorkerCountIsRejected) {
  EXPECT_THROW(RunProcessGroup(Options(0), [](int) {}), std::invalid_argument);
}

TEST(SignalNameTest, NamesKnownAndUnknownSignals) {
  EXPECT_EQ(SignalName(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(SignalName(12345), "signal 12345");
}

TEST(SharedRegionTest, ArraysAreAlignedAndZeroed) {
  SharedRegion region(1000, 333);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(region.params()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(region.optimizer_state()) % 64, 0u);
  EXPECT_GE(region.optimizer_state(), region.params() + 1000);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(region.params()[i], 0.0f);
  for (int i = 0; i < 333; ++i) ASSERT_EQ(region.optimizer_state()[i], 0.0f);
  EXPECT_EQ(region.control().global_step.load(), 0);
}

TEST(SharedRegionTest, FailedMappingReportsTheSizeAskedFor) {
  const int64_t huge = int64_t{1} << 58;  // 1 EiB of floats.
  const std::string bytes = std::to_string(SharedRegion::BytesFor(huge, 0));
  try {
    SharedRegion region(huge, 0);
    FAIL() << "mapped " << bytes << " bytes";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bytes), std::string::npos) << e.what();
  }
}

TEST(SharedRegionTest, NegativeSizesAreRejected) {
  EXPECT_THROW(SharedRegion(-1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace process_group_test
}  // namespace asyncrl
