#include "asyncrl/experiments/training_returns.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "asyncrl/envs/registry.h"
#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/misc/platform/process_group.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace training_returns_test {
namespace {

// The extension placed in a region of its own, as the trainer does.
struct Placed {
  explicit Placed(int64_t window, double reward_scale = 1.0,
                  const std::string& resume = "",
                  const std::string& outdir = "unused") {
    TrainOptions options;
    options.train_returns_window = window;
    options.reward_scale = reward_scale;
    options.resume = resume;
    options.outdir = outdir;
    auto probe = MakeEnv("CartPole-v1");
    extension.Configure(options, *probe);
    region = std::make_unique<SharedRegion>(
        1, 1, std::vector<size_t>{extension.SharedBytes(SharedStateSizes{})});
    RunInfo run;
    run.control = &region->control();
    extension.Place(region->extension(0), run);
  }
  TrainingReturnsExtension extension;
  std::unique_ptr<SharedRegion> region;
};

TEST(TrainingReturnsTest, TheMeanIsOverTheLastWindowOfReturns) {
  Placed p(3);
  TrainingReturnsBlock& block = p.extension.block();
  EXPECT_FALSE(block.Mean().has_value());  // Nothing recorded yet.
  EXPECT_EQ(p.extension.Status(), "");
  std::vector<std::string> none;
  p.extension.EvaluationBegins(0, &none);
  EXPECT_EQ(none, std::vector<std::string>{"nan"});
  block.Record(1);
  block.Record(2);
  int64_t count = 0;
  ASSERT_TRUE(block.Mean(&count).has_value());
  EXPECT_EQ(count, 2);
  EXPECT_DOUBLE_EQ(*block.Mean(), 1.5);
  block.Record(10);
  block.Record(20);
  block.Record(-6);  // The window: 10, 20, -6.
  EXPECT_DOUBLE_EQ(*block.Mean(&count), 8.0);
  EXPECT_EQ(count, 3);
  EXPECT_EQ(block.recorded.load(), 5);
  EXPECT_EQ(block.Newest(), (std::vector<double>{10, 20, -6}));
  EXPECT_EQ(p.extension.Status(), "train R 8");
  std::vector<std::string> cells;
  p.extension.EvaluationBegins(5, &cells);
  EXPECT_EQ(cells, std::vector<std::string>{"8"});
  EXPECT_EQ(p.extension.ScoreColumns(), std::vector<std::string>{"train_mean"});
}

TEST(TrainingReturnsTest, WorkersRecordMeasuredEpisodesInTheEnvironmentsUnits) {
  Placed p(100, /*reward_scale=*/0.01);
  WorkerInfo w;
  std::unique_ptr<WorkerExtension> worker = p.extension.StartWorker(w);
  ASSERT_NE(worker, nullptr);
  worker->EpisodeEnded(0, 10, 2.5, /*measured=*/true);    // 250 in the env.
  worker->EpisodeEnded(1, 11, 0.07, /*measured=*/false);  // Cut: not counted.
  worker->EpisodeEnded(0, 12, 1.5, /*measured=*/true);
  int64_t count = 0;
  EXPECT_NEAR(*p.extension.block().Mean(&count), 200.0, 1e-12);
  EXPECT_EQ(count, 2);
}

TEST(TrainingReturnsTest, WindowZeroTurnsItOff) {
  Placed p(0);
  EXPECT_TRUE(p.extension.ScoreColumns().empty());
  EXPECT_EQ(p.extension.SharedBytes(SharedStateSizes{}), 0u);
  EXPECT_EQ(p.extension.StartWorker(WorkerInfo{}), nullptr);
  EXPECT_EQ(p.extension.Status(), "");
  std::vector<std::string> cells;
  p.extension.EvaluationBegins(1, &cells);
  EXPECT_TRUE(cells.empty());
  RunEnd end;
  p.extension.Conclude(GroupReport{}, &end);
  EXPECT_TRUE(end.notes.empty());
}

TEST(TrainingReturnsTest, WorkerProcessesShareTheRing) {
  Placed p(1000);
  TrainingReturnsBlock& block = p.extension.block();
  ProcessGroupOptions options;
  options.num_workers = 3;
  // Worker i records i*100 + 0..49: 150 returns, each once.
  GroupReport report = RunProcessGroup(options, [&](int idx) {
    for (int k = 0; k < 50; ++k) block.Record(idx * 100 + k);
  });
  ASSERT_TRUE(report.Ok());
  int64_t count = 0;
  const double mean = *block.Mean(&count);
  EXPECT_EQ(count, 150);
  EXPECT_EQ(block.recorded.load(), 150);
  // (0 + 100 + 200) * 50 / 150 + 24.5
  EXPECT_NEAR(mean, 124.5, 1e-9);
  RunEnd end;
  p.extension.Conclude(GroupReport{}, &end);
  ASSERT_EQ(end.notes.size(), 1u);
  EXPECT_EQ(end.notes[0],
            "training episodes: mean return of the last 150: 124.5 "
            "(environment units; 150 recorded)");
}

TEST(TrainingReturnsTest, CheckpointsKeepTheWindowAcrossResume) {
  Placed before(4);
  for (double r : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0})
    before.extension.block().Record(r);
  proto::Checkpoint checkpoint;
  before.extension.SaveTo(&checkpoint);
  ASSERT_TRUE(checkpoint.has_training_returns());
  EXPECT_EQ(checkpoint.training_returns().recorded(), 6);
  ASSERT_EQ(checkpoint.training_returns().newest_size(), 4);

  // The same window: the same ring, recording goes on where it was.
  Placed same(4);
  same.extension.LoadFrom(checkpoint);
  EXPECT_EQ(same.extension.block().Newest(), (std::vector<double>{3, 4, 5, 6}));
  same.extension.block().Record(7);
  EXPECT_EQ(same.extension.block().Newest(), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_DOUBLE_EQ(*same.extension.block().Mean(), 5.5);

  // A smaller window keeps the newest; a larger one all that were saved.
  Placed smaller(2);
  smaller.extension.LoadFrom(checkpoint);
  EXPECT_EQ(smaller.extension.block().Newest(), (std::vector<double>{5, 6}));
  Placed larger(10);
  larger.extension.LoadFrom(checkpoint);
  EXPECT_EQ(larger.extension.block().Newest(),
            (std::vector<double>{3, 4, 5, 6}));
  EXPECT_EQ(larger.extension.block().recorded.load(), 6);

  // A checkpoint from before the ring: nothing restored.
  Placed old(4);
  old.extension.LoadFrom(proto::Checkpoint{});
  EXPECT_FALSE(old.extension.block().Mean().has_value());
}

TEST(TrainingReturnsTest, ACorruptSavedRingKeepsItsFiniteReturns) {
  Placed p(4);
  proto::Checkpoint bad;
  bad.mutable_training_returns()->set_recorded(-3);
  bad.mutable_training_returns()->add_newest(std::nan(""));
  bad.mutable_training_returns()->add_newest(7);
  bad.mutable_training_returns()->add_newest(INFINITY);
  p.extension.LoadFrom(bad);
  EXPECT_EQ(p.extension.block().Newest(), std::vector<double>{7});
  EXPECT_EQ(p.extension.block().recorded.load(), 1);
}

TEST(TrainingReturnsTest, NonFiniteReturnsAndAZeroScaleAreHandled) {
  Placed p(4, /*reward_scale=*/0.0);
  std::unique_ptr<WorkerExtension> worker = p.extension.StartWorker({});
  worker->EpisodeEnded(0, 1, 3.0, true);  // Nothing to divide out: 3.
  worker->EpisodeEnded(0, 2, std::nan(""), true);
  worker->EpisodeEnded(0, 3, -INFINITY, true);
  EXPECT_EQ(p.extension.block().Newest(), std::vector<double>{3});
  EXPECT_EQ(p.extension.block().recorded.load(), 1);
}

TEST(TrainingReturnsTest, ARunResumedFromBeforeTheColumnKeepsItsColumns) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("asyncrl_train_returns_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "scores.txt")
        << "steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin\n";
  }
  Placed old_run(100, 1.0, (dir / "1000_checkpoint").string(), dir.string());
  EXPECT_TRUE(old_run.extension.ScoreColumns().empty());
  EXPECT_NE(old_run.extension.StartWorker(WorkerInfo{}), nullptr);
  {
    std::ofstream(dir / "scores.txt")
        << "steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin\t"
           "train_mean\n";
  }
  Placed new_run(100, 1.0, (dir / "1000_checkpoint").string(), dir.string());
  EXPECT_EQ(new_run.extension.ScoreColumns(),
            std::vector<std::string>{"train_mean"});
  // Resumed with the window off, it keeps the column and writes "nan".
  Placed off(0, 1.0, (dir / "1000_checkpoint").string(), dir.string());
  EXPECT_EQ(off.extension.ScoreColumns(),
            std::vector<std::string>{"train_mean"});
  std::vector<std::string> cells;
  off.extension.EvaluationBegins(1000, &cells);
  EXPECT_EQ(cells, std::vector<std::string>{"nan"});
  EXPECT_EQ(off.extension.StartWorker(WorkerInfo{}), nullptr);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace training_returns_test
}  // namespace asyncrl
