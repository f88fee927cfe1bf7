#include "asyncrl/experiments/policy_collapse.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asyncrl/envs/registry.h"
#include "asyncrl/experiments/evaluator.h"
#include "asyncrl/experiments/learning_curve.h"
#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/misc/platform/process_group.h"
#include "test_helpers.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace policy_collapse_test {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const double kLn2 = std::log(2.0);

// Rows (mean, entropy) from step 1000 on, one every 1000 steps: the step
// of the row Observe first answers true at (0: never).
int64_t FoundAt(CollapseDetector& d,
                const std::vector<std::pair<double, double>>& rows) {
  int64_t steps = 0;
  for (const auto& [mean, entropy] : rows) {
    steps += 1000;
    if (d.Observe({steps, mean, entropy})) return steps;
  }
  return 0;
}

TEST(CollapseDetectorTest,
     LowEntropyWhileTheMeansStayAtTheFirstOnesIsFoundOnce) {
  CollapseDetector d(kLn2, 0.01);
  // The runs: entropy to 1e-5 while CartPole's mean stays ~9.5.
  EXPECT_EQ(FoundAt(d, {{9.4, 0.69},
                        {9.1, 0.5},
                        {9.6, 0.02},
                        {9.3, 3e-5},
                        {9.5, 2e-5},
                        {9.4, 1e-5}}),
            5000);
  EXPECT_TRUE(d.collapsed());
  EXPECT_EQ(d.found().steps, 5000);
  EXPECT_DOUBLE_EQ(d.found().entropy, 2e-5);
  EXPECT_DOUBLE_EQ(d.baseline_low(), 9.1);
  EXPECT_DOUBLE_EQ(d.baseline_high(), 9.6);
  EXPECT_NEAR(d.ceiling(), 10.56, 1e-12);  // 9.6 + max(0.5, 0.96).
  // Once: later collapsed rows answer false.
  EXPECT_FALSE(d.Observe({7000, 9.4, 1e-6}));
  EXPECT_FALSE(d.Observe({8000, 9.4, 1e-6}));
  EXPECT_EQ(d.found().steps, 5000);
}

TEST(CollapseDetectorTest, ALowEntropyPolicyThatLearnedIsNotACollapse) {
  CollapseDetector d(kLn2, 0.01);
  EXPECT_EQ(FoundAt(d, {{20, 0.69},
                        {22, 0.6},
                        {25, 0.5},
                        {200, 0.001},
                        {500, 0.0001},
                        {500, 0.0001}}),
            0);
  EXPECT_FALSE(d.collapsed());
}

TEST(CollapseDetectorTest, FlatMeansWithEntropyLeftAreNotACollapse) {
  CollapseDetector d(kLn2, 0.01);
  EXPECT_EQ(FoundAt(d, {{10, 0.69},
                        {11, 0.68},
                        {10, 0.67},
                        {10, 0.3},
                        {11, 0.2},
                        {10, 0.1},
                        {10, 0.01}}),
            0);
}

TEST(CollapseDetectorTest, TheFirstRowsAreNeverJudgedAndOneLowRowIsNotEnough) {
  CollapseDetector d(kLn2, 0.01);
  // The average entropy starts at 0: the baseline rows may read 0.
  EXPECT_EQ(FoundAt(d, {{10, 0}, {10, 0}, {10, 0}}), 0);
  // One low row, then the policy's entropy again, then one low row.
  EXPECT_FALSE(d.Observe({4000, 10, 1e-4}));
  EXPECT_FALSE(d.Observe({5000, 10, 0.3}));
  EXPECT_FALSE(d.Observe({6000, 10, 1e-4}));
  EXPECT_TRUE(d.Observe({7000, 10, 1e-4}));
}

TEST(CollapseDetectorTest, RowsWithoutANumberAreSkipped) {
  CollapseDetector d(kLn2, 0.01);
  const double nan = std::nan("");
  EXPECT_EQ(FoundAt(d, {{nan, 0.6},
                        {-50, 0.6},
                        {-48, nan},
                        {-52, 0.6},
                        {-49, 0.6},
                        {-50, 1e-4},
                        {nan, 1e-4},
                        {-50, 1e-4}}),
            8000);
  // The baseline is the first three rows with numbers; its band grows by a
  // tenth of a negative mean's size when the spread (3) is smaller.
  EXPECT_DOUBLE_EQ(d.baseline_low(), -52);
  EXPECT_DOUBLE_EQ(d.baseline_high(), -49);
  EXPECT_NEAR(d.ceiling(), -44.1, 1e-12);
}

// A game's observation as the trainer's probe has it: the board, then the
// legal-action mask of its Discrete(9) actions.
class MaskedProbe : public Env {
 public:
  MaskedProbe() { obs_space_.action_mask = 9; }
  std::string Name() const override { return "MaskedProbe"; }
  const Space& ObservationSpace() const override { return obs_space_; }
  const Space& ActionSpace() const override { return act_space_; }

 protected:
  FloatView DoReset(std::optional<uint64_t>) override {
    return {obs_.data(), 18};
  }
  StepResult DoStep(const Action&) override {
    StepResult r;
    r.observation = {obs_.data(), 18};
    r.terminated = true;
    return r;
  }

 private:
  std::vector<float> obs_ = std::vector<float>(18, 1.0f);
  Space obs_space_ = Space::Box({18}, 0, 1);
  Space act_space_ = Space::Discrete(9);
};

// The extension over a run folder's scores.txt, placed as the trainer does.
class PolicyCollapseExtensionTest : public ::testing::Test {
 protected:
  PolicyCollapseExtensionTest()
      : dir_(::testing::UnitTest::GetInstance()->current_test_info()->name()) {}

  void Place(const std::string& env = "CartPole-v1", double fraction = 0.01,
             bool stop = false) {
    auto probe = MakeEnv(env);
    Place(*probe, fraction, stop);
  }
  void Place(Env& probe, double fraction, bool stop) {
    TrainOptions options;
    options.outdir = dir_.str();
    options.collapse_entropy = fraction;
    options.stop_on_collapse = stop;
    options.config = {{"lr", "0.002"}, {"beta", "0.01"}};
    for (const auto& [key, value] : extra_config_) options.config[key] = value;
    extension_.Configure(options, probe);
    region_ = std::make_unique<SharedRegion>(1, 1, std::vector<size_t>{0});
    RunInfo run;
    run.control = &region_->control();
    extension_.Place(nullptr, run);
  }
  // The run starts (from `step`, as a resumed run does) and its workers
  // start: rows in scores.txt by then are an earlier run's.
  void StartAt(int64_t step) {
    region_->control().global_step.store(step);
    RunInfo run;
    run.control = &region_->control();
    extension_.Start(run);
    extension_.WorkersStarted();
  }
  void PlaceAndStart(const std::string& env = "CartPole-v1",
                     double fraction = 0.01, bool stop = false) {
    Place(env, fraction, stop);
    StartAt(0);
  }

  // The parent's read of scores.txt after it changed.
  void Read() { extension_.ScoresRead(ReadScores(ScoresPath(dir_.str()))); }
  void Append(const std::string& text) {
    std::ofstream out(ScoresPath(dir_.str()), std::ios::app | std::ios::binary);
    out << text;
  }

  // scores.txt's header and fixed columns, with one statistic column and
  // an extension's column after it.
  static std::string Header() {
    return "steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin\t"
           "average_value\taverage_entropy\ttrain_mean\n";
  }
  static std::string Row(int64_t steps, double mean, double entropy) {
    return std::to_string(steps) + "\t1\t0.5\t" + FormatCell(mean) + "\t" +
           FormatCell(mean) + "\t0\t" + FormatCell(mean) + "\t" +
           FormatCell(mean) + "\t0.1\t" + FormatCell(entropy) + "\tnan\n";
  }
  void AppendCollapsedRun() {
    Append(Header());
    Append(Row(1000, 9.4, 0.69) + Row(2000, 9.1, 0.5) + Row(3000, 9.6, 0.3));
    Append(Row(4000, 9.3, 3e-5) + Row(5000, 9.5, 2e-5));
  }

  TempDir dir_;
  // Recorded options beside lr and beta, set before Place.
  std::map<std::string, std::string> extra_config_;
  PolicyCollapseExtension extension_;
  std::unique_ptr<SharedRegion> region_;
};

TEST_F(PolicyCollapseExtensionTest, NamesTheCollapseOnceWithCausesAndANote) {
  PlaceAndStart();
  Read();  // No scores.txt yet.
  EXPECT_EQ(extension_.Status(), "");
  AppendCollapsedRun();
  Read();
  ASSERT_TRUE(extension_.collapsed());
  EXPECT_EQ(extension_.Status(), "COLLAPSED (entropy 2e-05)");
  const std::string& m = extension_.message();
  for (const std::string part :
       {"the policy collapsed at step 5000", "its entropy is 2e-05",
        "below 0.01 x ln 2 = 0.00693", "mean stays at 9.5",
        "the first three evaluations': 9.1 to 9.6",
        "1 processes x 1 environments", "--lr 0.002", "(--beta 0.01)",
        "--rmsprop-epsilon 0.1",
        "--stop-on-collapse would end such a run here"}) {
    EXPECT_NE(m.find(part), std::string::npos) << part << " in: " << m;
  }
  EXPECT_EQ(m.find('\n'), std::string::npos);  // One line.
  // Not stopping: the run goes on and its end has a note.
  EXPECT_EQ(region_->control().training_done.load(), 0);
  RunEnd end;
  end.step = 6000;
  extension_.Conclude(GroupReport{}, &end);
  EXPECT_EQ(end.exit_code, 0);
  EXPECT_FALSE(end.save_except);
  ASSERT_EQ(end.notes.size(), 1u);
  EXPECT_NE(end.notes[0].find("the policy collapsed at step 5000"),
            std::string::npos);
}

// The step-size remedies for many workers are suggested only to a run that
// turned them off.
TEST_F(PolicyCollapseExtensionTest, KeepsQuietAboutStepRemediesARunHas) {
  extra_config_ = {{"lr-warmup-updates", "500"}, {"lag-tolerance", "8"}};
  PlaceAndStart();
  AppendCollapsedRun();
  Read();
  ASSERT_TRUE(extension_.collapsed());
  EXPECT_EQ(extension_.message().find("--lr-warmup-updates"), std::string::npos)
      << extension_.message();
  EXPECT_EQ(extension_.message().find("--lag-tolerance"), std::string::npos)
      << extension_.message();
}

TEST_F(PolicyCollapseExtensionTest, SuggestsTheStepRemediesToARunWithout) {
  extra_config_ = {{"lr-warmup-updates", "0"}, {"lag-tolerance", "0"}};
  PlaceAndStart();
  AppendCollapsedRun();
  Read();
  ASSERT_TRUE(extension_.collapsed());
  for (const char* part : {"--lr-warmup-updates 500", "--lag-tolerance 8"}) {
    EXPECT_NE(extension_.message().find(part), std::string::npos)
        << part << " in: " << extension_.message();
  }
}

TEST_F(PolicyCollapseExtensionTest, StopOnCollapseEndsTheRunWithStatusThree) {
  PlaceAndStart("CartPole-v1", 0.01, /*stop=*/true);
  AppendCollapsedRun();
  Read();
  ASSERT_TRUE(extension_.collapsed());
  EXPECT_NE(extension_.message().find("--stop-on-collapse ends the run here"),
            std::string::npos);
  EXPECT_EQ(region_->control().training_done.load(), 1);
  RunEnd end;
  end.step = 5200;
  extension_.Conclude(GroupReport{}, &end);
  EXPECT_EQ(end.exit_code, 3);
  EXPECT_TRUE(end.save_except);
  EXPECT_NE(end.message.find("stopped at step 5200 (--stop-on-collapse): the "
                             "policy collapsed at step 5000"),
            std::string::npos)
      << end.message;
  // A worker's failure stays the run's result.
  RunEnd failed;
  failed.exit_code = 1;
  failed.message = "worker 0 failed";
  extension_.Conclude(GroupReport{}, &failed);
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(failed.message, "worker 0 failed");
  EXPECT_FALSE(failed.save_except);  // As the trainer had it.
}

// A collapse found once the run has ended (the final read of scores.txt),
// or after an evaluation succeeded, keeps the run's own ending.
TEST_F(PolicyCollapseExtensionTest, StopOnCollapseKeepsAnEndedRunsEnding) {
  for (const bool succeeded : {false, true}) {
    SCOPED_TRACE(succeeded ? "successful" : "budget spent");
    std::filesystem::remove(ScoresPath(dir_.str()));
    Place("CartPole-v1", 0.01, /*stop=*/true);
    StartAt(0);
    if (succeeded) {
      region_->control().training_done.store(1);
    } else {
      region_->control().global_step.store(TrainOptions().steps);
    }
    AppendCollapsedRun();
    Read();
    ASSERT_TRUE(extension_.collapsed());
    EXPECT_NE(extension_.message().find("; the run had already ended"),
              std::string::npos);
    RunEnd end;
    extension_.Conclude(GroupReport{}, &end);
    EXPECT_EQ(end.exit_code, 0);
    EXPECT_FALSE(end.save_except);
    EXPECT_EQ(end.notes.size(), 1u);
  }
}

// A resumed run: the earlier run's rows up to the checkpoint's step set the
// baseline and are not judged; rows past it (from a resume of an earlier
// checkpoint) are not this run's.
TEST_F(PolicyCollapseExtensionTest, AResumedRunJudgesOnlyItsOwnRows) {
  Place("CartPole-v1", 0.01, /*stop=*/true);
  AppendCollapsedRun();  // Collapsed at 5000...
  Append(Row(6000, 9.4, 1e-5));
  StartAt(3000);  // ... but resumed from step 3000's checkpoint.
  Read();
  EXPECT_FALSE(extension_.collapsed());
  EXPECT_EQ(region_->control().training_done.load(), 0);
  // This run's rows, one poll each: the baseline of 1000-3000 holds.
  Append(Row(4000, 30, 0.2));
  Read();
  Append(Row(5000, 9.3, 3e-5));
  Read();
  EXPECT_FALSE(extension_.collapsed());
  Append(Row(6000, 9.5, 2e-5));
  Read();
  ASSERT_TRUE(extension_.collapsed());
  EXPECT_NE(extension_.message().find("at step 6000:"), std::string::npos);
  EXPECT_NE(extension_.message().find("the first three evaluations': 9.1 to "
                                      "9.6"),
            std::string::npos);
  EXPECT_EQ(region_->control().training_done.load(), 1);
}

TEST_F(PolicyCollapseExtensionTest, ARowBeingWrittenIsReadWhenItIsWhole) {
  PlaceAndStart();
  Append(Header());
  Append(Row(1000, 9.4, 0.69) + Row(2000, 9.1, 0.5) + Row(3000, 9.6, 0.3));
  Append(Row(4000, 9.3, 3e-5));
  const std::string last = Row(5000, 9.5, 2e-5);
  // All of the row but its last cell and newline: its mean and entropy are
  // there, so only reading whole lines keeps it from being judged now.
  const size_t cut = last.rfind('\t');
  Append(last.substr(0, cut));
  Read();
  EXPECT_FALSE(extension_.collapsed());
  Append(last.substr(cut));
  Read();
  ASSERT_TRUE(extension_.collapsed());
  EXPECT_NE(extension_.message().find("at step 5000:"), std::string::npos);
}

TEST_F(PolicyCollapseExtensionTest,
       OffForGaussianPoliciesZeroAndAgentsWithoutEntropy) {
  // Pendulum: a Gaussian policy's entropy has no largest value.
  PlaceAndStart("Pendulum-v1");
  AppendCollapsedRun();
  Read();
  EXPECT_FALSE(extension_.collapsed());
  // A game: legal moves change the largest entropy.
  fs::remove(ScoresPath(dir_.str()));
  MaskedProbe game;
  Place(game, 0.01, false);
  StartAt(0);
  AppendCollapsedRun();
  Read();
  EXPECT_FALSE(extension_.collapsed());
  // --collapse-entropy 0.
  fs::remove(ScoresPath(dir_.str()));
  PlaceAndStart("CartPole-v1", 0);
  AppendCollapsedRun();
  Read();
  EXPECT_FALSE(extension_.collapsed());
  // The control: the same rows are a collapse on CartPole.
  fs::remove(ScoresPath(dir_.str()));
  PlaceAndStart();
  AppendCollapsedRun();
  Read();
  EXPECT_TRUE(extension_.collapsed());
  // An agent of a program's own that reports no average_entropy.
  fs::remove(ScoresPath(dir_.str()));
  PlaceAndStart();
  Append("steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin\n");
  for (int i = 1; i <= 8; ++i) {
    Append(std::to_string(i * 1000) + "\t1\t0\t9\t9\t0\t9\t9\n");
  }
  Read();
  EXPECT_FALSE(extension_.collapsed());
}

}  // namespace
}  // namespace policy_collapse_test
}  // namespace asyncrl
