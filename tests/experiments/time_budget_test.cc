#include "asyncrl/experiments/time_budget.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "asyncrl/envs/registry.h"
#include "asyncrl/experiments/final_evaluation.h"
#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/misc/platform/process_group.h"
#include "asyncrl/misc/tensorboard.h"
#include "test_basics.h"

namespace asyncrl {
namespace {

using Clock = TimeBudgetExtension::Clock;

// The extension on a clock the test moves, over a run of 1000 steps whose
// parent saves by recording the folder it was asked for.
class TimeBudgetTest : public ::testing::Test {
 protected:
  TimeBudgetTest()
      : dir_(::testing::UnitTest::GetInstance()->current_test_info()->name()),
        events_(dir_.str()) {
    extension_.SetClock([this] { return now_; });
    TrainOptions options;
    options.outdir = dir_.str();
    options.steps = 1000;
    options.train_seconds = 60;
    auto probe = MakeEnv("CartPole-v1");
    extension_.Configure(options, *probe);
    region_ = std::make_unique<SharedRegion>(1, 1, std::vector<size_t>{0});
    RunInfo run;
    run.control = &control();
    run.save = [this](const std::string& dir) {
      if (fail_save_) throw std::runtime_error("cannot write " + dir);
      saved_.push_back(dir);
    };
    extension_.Place(nullptr, run);
    extension_.Start(run);
  }

  ControlBlock& control() { return region_->control(); }
  void Advance(double seconds) {
    now_ += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(seconds));
  }
  void Tick() { extension_.Report(events_, /*periodic=*/false); }

  testing::TempDir dir_;
  TimeBudgetExtension extension_;
  EventWriter events_;
  std::unique_ptr<SharedRegion> region_;
  Clock::time_point now_ = Clock::time_point() + std::chrono::hours(1);
  std::vector<std::string> saved_;
  bool fail_save_ = false;
};

TEST_F(TimeBudgetTest, EndsTheRunOnceItsSecondsAreSpentAndSavesTheFinalAgent) {
  Advance(100);  // Before the workers start nothing counts.
  Tick();
  EXPECT_EQ(control().training_done.load(), 0);
  extension_.WorkersStarted();
  EXPECT_EQ(extension_.Status(), "60.0 s left");
  control().global_step.store(400);
  Advance(59.9);
  Tick();
  EXPECT_EQ(control().training_done.load(), 0);
  EXPECT_EQ(extension_.Status(), "0.1 s left");
  Advance(0.1);
  Tick();
  EXPECT_EQ(control().training_done.load(), 1);
  EXPECT_TRUE(extension_.stopped());
  EXPECT_EQ(extension_.Status(), "");
  // The workers end their episodes: the run ends a little later.
  control().global_step.store(432);
  RunEnd end;
  end.step = 432;
  extension_.Conclude(GroupReport{}, &end);
  EXPECT_EQ(end.exit_code, 0);
  EXPECT_FALSE(end.save_except);
  const std::string finish = FinishDir(dir_.str(), 432);
  EXPECT_EQ(saved_, std::vector<std::string>{finish});
  ASSERT_EQ(end.notes.size(), 1u);
  EXPECT_EQ(end.notes[0],
            "stopped by --train-seconds 60.0 at step 400 of "
            "1000; final agent: " +
                finish);
  // The final evaluation takes that folder as the final agent.
  std::filesystem::create_directories(finish);
  EXPECT_EQ(FinalAgentDir(dir_.path(), 1000, 432).string(), finish);
}

// Without a budget (train_seconds 0, the default) the extension, which
// RunTrainer always adds, does nothing.
TEST_F(TimeBudgetTest, WithoutABudgetNothingEnds) {
  TrainOptions options;
  options.outdir = dir_.str();
  options.steps = 1000;
  auto probe = MakeEnv("CartPole-v1");
  extension_.Configure(options, *probe);
  extension_.WorkersStarted();
  EXPECT_EQ(extension_.Status(), "");
  Advance(1e6);
  Tick();
  EXPECT_EQ(control().training_done.load(), 0);
  EXPECT_FALSE(extension_.stopped());
  RunEnd end;
  end.step = 1000;
  extension_.Conclude(GroupReport{}, &end);
  EXPECT_TRUE(end.notes.empty());
  EXPECT_TRUE(saved_.empty());
}

// A run whose steps are spent, or whose evaluation succeeded, before the
// clock runs out keeps its own ending; so does a failed or stopped one.
TEST_F(TimeBudgetTest, KeepsEveryOtherEnding) {
  extension_.WorkersStarted();
  Advance(61);
  control().global_step.store(1000);
  Tick();
  EXPECT_EQ(control().training_done.load(), 0);
  control().global_step.store(500);
  control().training_done.store(1);  // A successful evaluation.
  Tick();
  EXPECT_FALSE(extension_.stopped());
  RunEnd end;
  end.step = 500;
  extension_.Conclude(GroupReport{}, &end);
  EXPECT_TRUE(end.notes.empty());
  EXPECT_TRUE(saved_.empty());
}

TEST_F(TimeBudgetTest, AFailedRunKeepsItsFailureAndASaveThatFailsIsNamed) {
  extension_.WorkersStarted();
  control().global_step.store(300);
  Advance(60);
  Tick();
  ASSERT_TRUE(extension_.stopped());
  RunEnd failed;
  failed.exit_code = 1;
  failed.message = "worker 1 failed";
  failed.save_except = true;
  extension_.Conclude(GroupReport{}, &failed);
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(failed.message, "worker 1 failed");
  EXPECT_TRUE(saved_.empty());
  fail_save_ = true;
  RunEnd end;
  end.step = 310;
  extension_.Conclude(GroupReport{}, &end);
  EXPECT_EQ(end.exit_code, 1);
  EXPECT_TRUE(end.save_except);
  EXPECT_EQ(end.message,
            "--train-seconds: saving the final agent failed: cannot write " +
                FinishDir(dir_.str(), 310));
}

}  // namespace
}  // namespace asyncrl
