// The asynchronous trainer end to end, in real worker processes: exact step
// counter, checkpoints (finish, best, successful, except), failures by
// exception and by signal, SIGINT/SIGTERM, resume, batched environments and
// a fixed-seed learning test.
#include "asyncrl/experiments/train_agent_async.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <new>

#include "asyncrl/envs/fault_injection.h"
#include "asyncrl/experiments/curriculum/curriculum_extension.h"
#include "asyncrl/experiments/evaluator.h"
#include "asyncrl/experiments/policy_collapse.h"
#include "asyncrl/misc/checkpoint.h"
#include "test_helpers.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace train_agent_async_test {
namespace {

namespace fs = std::filesystem;
using testing::PlainEnv;
using testing::ReadLines;
using testing::SmallA3C;
using testing::SmallA3COptions;
using testing::Split;
using testing::TempDir;

class TrainAgentAsyncTest : public ::testing::Test {
 protected:
  TrainAgentAsyncTest()
      : dir_(::testing::UnitTest::GetInstance()->current_test_info()->name()) {}

  TrainOptions Options(int processes, int64_t steps) {
    TrainOptions o;
    o.processes = processes;
    o.steps = steps;
    o.outdir = dir_.str();
    o.env_name = "CartPole-v1";
    o.progress_interval = std::chrono::milliseconds(0);
    o.eval_interval = 0;  // Each test that evaluates says when.
    return o;
  }

  fs::path Path(const std::string& name) const { return dir_.path() / name; }

  TempDir dir_;
};

TEST_F(TrainAgentAsyncTest, FinishBestAndScoresAfterAShortRun) {
  TrainOptions o = Options(2, 4000);
  o.eval_interval = 1000;
  o.eval_n_episodes = 2;
  const TrainResult r =
      TrainAgentAsync(o, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"));
  ASSERT_EQ(r.exit_code, 0) << r.message;
  EXPECT_EQ(r.global_step, 4000);
  EXPECT_GT(r.episodes, 0);
  const proto::Checkpoint finish =
      LoadCheckpointDir(Path("4000_finish").string());
  EXPECT_EQ(finish.global_step(), 4000);
  EXPECT_EQ(finish.agent_type(), "a3c");
  EXPECT_GT(finish.parameters_size(), 0);

  const auto lines = ReadLines(Path("scores.txt"));
  ASSERT_GE(lines.size(), 4u);  // Header and at least three evaluations.
  EXPECT_EQ(lines[0],
            "steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin\t"
            "average_value\taverage_entropy\tpolicy_loss\tvalue_loss\t"
            "entropy\tgrad_norm\tpolicy_lag\tpolicy_lag_max\t"
            "importance_ratio\tratio_clipped");
  double best = -1e300;
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto fields = Split(lines[i], '\t');
    ASSERT_EQ(fields.size(), 18u) << lines[i];
    EXPECT_GE(std::stoll(fields[0]), 1000);
    EXPECT_LE(std::stoll(fields[0]), 4000);
    best = std::max(best, std::stod(fields[3]));
  }
  const proto::Checkpoint best_ckpt = LoadCheckpointDir(Path("best").string());
  EXPECT_TRUE(best_ckpt.has_best_score());
  EXPECT_NEAR(best_ckpt.best_score(), best, 1e-6 * std::abs(best) + 1e-9);
  EXPECT_FALSE(fs::exists(Path("successful")));
}

TEST_F(TrainAgentAsyncTest, BatchedEnvironmentsEndExactlyAtSteps) {
  TrainOptions o = Options(2, 3001);
  o.envs_per_process = 3;
  const TrainResult r =
      TrainAgentAsync(o, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"));
  ASSERT_EQ(r.exit_code, 0) << r.message;
  EXPECT_EQ(r.global_step, 3001);
  EXPECT_GT(r.episodes, 3001 / 500);
  EXPECT_EQ(LoadCheckpointDir(Path("3001_finish").string()).global_step(),
            3001);
}

TEST_F(TrainAgentAsyncTest, SuccessfulScoreStopsTrainingEarly) {
  TrainOptions o = Options(2, 1000000);
  o.eval_interval = 500;
  o.eval_n_episodes = 1;
  o.successful_score = -1.0;  // Any evaluation succeeds.
  const TrainResult r =
      TrainAgentAsync(o, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"));
  ASSERT_EQ(r.exit_code, 0) << r.message;
  EXPECT_LT(r.global_step, 1000000);
  EXPECT_TRUE(fs::exists(Path("successful") / kCheckpointFileName));
  EXPECT_FALSE(fs::exists(Path("1000000_finish")));
}

TEST_F(TrainAgentAsyncTest, WorkerExceptionStopsEveryWorkerAndSavesExcept) {
  TrainOptions o = Options(2, 100000000);
  auto make_env = [](int idx, bool test) -> std::unique_ptr<Env> {
    auto env = MakeEnv("CartPole-v1");
    if (idx != 1 || test) return env;
    return std::make_unique<FaultyEnv>(std::move(env),
                                       FaultSpec{1, 300, FaultKind::kThrow});
  };
  const TrainResult r = TrainAgentAsync(o, make_env, SmallA3C("CartPole-v1"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.message.find("worker 1 (pid"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("injected failure at step 300"), std::string::npos)
      << r.message;
  EXPECT_LT(r.global_step, 100000000);
  ASSERT_FALSE(r.except_dir.empty());
  EXPECT_EQ(r.except_dir,
            Path(std::to_string(r.global_step) + "_except").string());
  const proto::Checkpoint c = LoadCheckpointDir(r.except_dir);
  EXPECT_EQ(c.global_step(), r.global_step);
  EXPECT_GT(c.parameters_size(), 0);
  // The healthy worker stopped on the flag, not by SIGKILL.
  EXPECT_FALSE(r.report.workers[0].signaled) << r.report.workers[0].Describe();
}

class WorkerSignalTest : public TrainAgentAsyncTest,
                         public ::testing::WithParamInterface<int> {};

TEST_P(WorkerSignalTest, WorkerDyingBySignalIsReported) {
  const int sig = GetParam();
  TrainOptions o = Options(2, 100000000);
  auto make_env = [sig](int idx, bool test) -> std::unique_ptr<Env> {
    auto env = MakeEnv("CartPole-v1");
    if (idx != 0 || test) return env;
    const FaultKind kind = sig == SIGKILL   ? FaultKind::kKill
                           : sig == SIGSEGV ? FaultKind::kSegv
                                            : FaultKind::kAbort;
    return std::make_unique<FaultyEnv>(std::move(env), FaultSpec{0, 200, kind});
  };
  const TrainResult r = TrainAgentAsync(o, make_env, SmallA3C("CartPole-v1"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.message.find("worker 0 (pid"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(SignalName(sig)), std::string::npos) << r.message;
  ASSERT_FALSE(r.except_dir.empty());
  EXPECT_NO_THROW(LoadCheckpointDir(r.except_dir));
}

INSTANTIATE_TEST_SUITE_P(Signals, WorkerSignalTest,
                         ::testing::Values(SIGKILL, SIGSEGV, SIGABRT),
                         [](const auto& info) {
                           return SignalName(info.param);
                         });

class ParentSignalTest : public TrainAgentAsyncTest,
                         public ::testing::WithParamInterface<int> {};

TEST_P(ParentSignalTest, SignalToParentStopsTheRunWithItsStatus) {
  const int sig = GetParam();
  TrainOptions o = Options(2, 100000000);
  // Worker 0 signals the trainer once a few hundred steps are done.
  std::vector<StepHook> hooks = {[sig](Env&, Agent&, int64_t t) {
    static bool sent = false;
    if (!sent && t >= 500) {
      sent = true;
      kill(getppid(), sig);
    }
  }};
  const TrainResult r = TrainAgentAsync(o, PlainEnv("CartPole-v1"),
                                        SmallA3C("CartPole-v1"), hooks);
  EXPECT_EQ(r.exit_code, 128 + sig);
  EXPECT_NE(r.message.find(SignalName(sig)), std::string::npos) << r.message;
  ASSERT_FALSE(r.except_dir.empty());
  EXPECT_NO_THROW(LoadCheckpointDir(r.except_dir));
  for (const auto& w : r.report.workers)
    EXPECT_FALSE(w.Failed()) << w.Describe();
}

INSTANTIATE_TEST_SUITE_P(Signals, ParentSignalTest,
                         ::testing::Values(SIGINT, SIGTERM),
                         [](const auto& info) {
                           return SignalName(info.param);
                         });

TEST_F(TrainAgentAsyncTest, ResumeRestoresCountersAndParameters) {
  TrainOptions first = Options(1, 2000);
  ASSERT_EQ(
      TrainAgentAsync(first, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"))
          .exit_code,
      0);
  const std::string ckpt = Path("2000_finish").string();
  const proto::Checkpoint saved = LoadCheckpointDir(ckpt);
  TempDir second_dir("resume_second");
  TrainOptions second = Options(1, 3000);
  second.outdir = second_dir.str();
  second.resume = ckpt;
  const TrainResult r =
      TrainAgentAsync(second, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"));
  ASSERT_EQ(r.exit_code, 0) << r.message;
  EXPECT_EQ(r.global_step, 3000);
  EXPECT_GT(r.episodes, saved.episodes());
  const proto::Checkpoint finish =
      LoadCheckpointDir((second_dir.path() / "3000_finish").string());
  EXPECT_EQ(finish.global_step(), 3000);
  EXPECT_GT(finish.episodes(), saved.episodes());
}

// --load as the reference: the agent only; counters, schedule and best score
// start fresh (a fine-tuning run writes best/ at its first evaluation).
TEST_F(TrainAgentAsyncTest, LoadTakesTheAgentAndStartsCountersFresh) {
  TrainOptions first = Options(1, 2000);
  first.eval_interval = 1000;
  first.eval_n_episodes = 1;
  ASSERT_EQ(
      TrainAgentAsync(first, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"))
          .exit_code,
      0);
  const std::string ckpt = Path("2000_finish").string();
  const proto::Checkpoint saved = LoadCheckpointDir(ckpt);
  ASSERT_TRUE(saved.has_best_score());

  TempDir second_dir("load_second");
  TrainOptions second = Options(1, 1000);
  second.outdir = second_dir.str();
  second.eval_interval = 500;
  second.eval_n_episodes = 1;
  second.load = ckpt;
  A3COptions frozen = testing::SmallA3COptions();
  frozen.optimizer.lr = 0;  // The parameters stay the loaded ones.
  const TrainResult r =
      TrainAgentAsync(second, PlainEnv("CartPole-v1"),
                      SmallA3C("CartPole-v1", {32, 32}, frozen));
  ASSERT_EQ(r.exit_code, 0) << r.message;
  EXPECT_EQ(r.global_step, 1000);
  const auto rows = ReadLines(second_dir.path() / "scores.txt");
  // The schedule starts from 0 (the checkpoint's would allow none before
  // step 3000): evaluations at the first episode ends past 500 and 1000.
  ASSERT_GE(rows.size(), 2u);
  const int64_t first_eval = std::stoll(Split(rows[1], '\t')[0]);
  EXPECT_GE(first_eval, 500);
  EXPECT_LT(first_eval, 1000);
  EXPECT_TRUE(fs::exists(second_dir.path() / "best" / "checkpoint.pb"));
  const proto::Checkpoint finish =
      LoadCheckpointDir((second_dir.path() / "1000_finish").string());
  EXPECT_EQ(finish.global_step(), 1000);
  EXPECT_EQ(finish.episodes(), r.episodes);
  ASSERT_EQ(finish.parameters_size(), saved.parameters_size());
  for (int i = 0; i < saved.parameters_size(); ++i) {
    EXPECT_EQ(finish.parameters(i).data(), saved.parameters(i).data())
        << saved.parameters(i).name();
  }
}

// --load restores the optimizer statistics too: RMSprop's ms' = alpha * ms +
// (1 - alpha) * g^2 >= alpha * ms, so after at most 10 updates every
// statistic is still >= alpha^10 of the loaded one; fresh statistics (zeros)
// would be far below it.
TEST_F(TrainAgentAsyncTest, LoadRestoresTheOptimizerStatistics) {
  TrainOptions first = Options(1, 2000);
  ASSERT_EQ(
      TrainAgentAsync(first, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"))
          .exit_code,
      0);
  const proto::Checkpoint saved =
      LoadCheckpointDir(Path("2000_finish").string());
  TempDir second_dir("load_optimizer");
  TrainOptions second = Options(1, 10);
  second.outdir = second_dir.str();
  second.load = Path("2000_finish").string();
  ASSERT_EQ(
      TrainAgentAsync(second, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"))
          .exit_code,
      0);
  const proto::Checkpoint finish =
      LoadCheckpointDir((second_dir.path() / "10_finish").string());
  ASSERT_EQ(finish.optimizer_state_size(), saved.optimizer_state_size());
  const double bound = std::pow(SmallA3COptions().optimizer.alpha, 10);
  double saved_sum = 0;
  for (int t = 0; t < saved.optimizer_state_size(); ++t) {
    const std::string& before = saved.optimizer_state(t).data();
    const std::string& after = finish.optimizer_state(t).data();
    ASSERT_EQ(before.size(), after.size());
    std::vector<float> ms0(before.size() / sizeof(float));
    std::vector<float> ms1(ms0.size());
    std::memcpy(ms0.data(), before.data(), before.size());
    std::memcpy(ms1.data(), after.data(), after.size());
    for (size_t i = 0; i < ms0.size(); ++i) {
      saved_sum += ms0[i];
      ASSERT_GE(ms1[i], bound * ms0[i] * (1 - 1e-5))
          << saved.optimizer_state(t).name() << "[" << i << "]";
    }
  }
  EXPECT_GT(saved_sum, 0.0);
}

TEST_F(TrainAgentAsyncTest, StepOffsetStartsTheCounterAndTheSchedule) {
  TrainOptions o = Options(1, 2000);
  o.step_offset = 1200;
  o.eval_interval = 500;
  o.eval_n_episodes = 1;
  const TrainResult r =
      TrainAgentAsync(o, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"));
  ASSERT_EQ(r.exit_code, 0) << r.message;
  EXPECT_EQ(r.global_step, 2000);
  const auto rows = ReadLines(Path("scores.txt"));
  // The reference's schedule: the first evaluation is due at the first
  // multiple of eval_interval after the offset (1500), and happens at the
  // first episode end from there; without the offset in the schedule it
  // would be due at once (step 1201).
  ASSERT_GE(rows.size(), 2u);
  const int64_t first_eval = std::stoll(Split(rows[1], '\t')[0]);
  EXPECT_GE(first_eval, 1500);
  EXPECT_LE(first_eval, 2000);
}

TEST_F(TrainAgentAsyncTest, LoadWithResumeOrOffsetWithResumeIsRefused) {
  TrainOptions o = Options(1, 100);
  o.load = "a";
  o.resume = "b";
  EXPECT_THROW(
      TrainAgentAsync(o, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1")),
      std::invalid_argument);
  o.load.clear();
  o.step_offset = 10;
  EXPECT_THROW(
      TrainAgentAsync(o, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1")),
      std::invalid_argument);
}

TEST_F(TrainAgentAsyncTest, TheOutdirIsCreatedWhenMissing) {
  TrainOptions o = Options(1, 200);
  o.outdir = (Path("new") / "nested").string();
  const TrainResult r =
      TrainAgentAsync(o, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"));
  ASSERT_EQ(r.exit_code, 0) << r.message;
  EXPECT_TRUE(
      fs::exists(Path("new") / "nested" / "200_finish" / "checkpoint.pb"));
}

TEST_F(TrainAgentAsyncTest, LoadOfAnIncompatibleCheckpointIsRefused) {
  TrainOptions first = Options(1, 500);
  ASSERT_EQ(TrainAgentAsync(first, PlainEnv("CartPole-v1"),
                            SmallA3C("CartPole-v1", {16}))
                .exit_code,
            0);
  TempDir second_dir("incompatible");
  TrainOptions second = Options(1, 1000);
  second.outdir = second_dir.str();
  second.load = Path("500_finish").string();
  try {
    TrainAgentAsync(second, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"));
    FAIL() << "loaded a checkpoint of another network";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(second.load), std::string::npos)
        << e.what();
  }
}

// The trainer cuts every training episode at max_episode_len steps,
// whatever the environment's own limit (CartPole-v1's is 500; a random
// policy's episodes last 8 steps or more): 2000 steps are 400 episodes.
TEST_F(TrainAgentAsyncTest, TheTrainerCutsEpisodesAtMaxEpisodeLen) {
  TrainOptions o = Options(1, 2000);
  o.max_episode_len = 5;
  const TrainResult r =
      TrainAgentAsync(o, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"));
  ASSERT_EQ(r.exit_code, 0) << r.message;
  EXPECT_EQ(r.episodes, 400);
}

// The defaults are train_agent_async's.
TEST(TrainOptionsTest, DefaultsAreTheReferences) {
  TrainOptions o;
  EXPECT_EQ(o.steps, 80000000);
  EXPECT_EQ(o.eval_interval, 1000000);
  EXPECT_EQ(o.eval_n_episodes, 10);
  EXPECT_EQ(o.eval_n_steps, 0);
  EXPECT_EQ(o.max_episode_len, 0);
  EXPECT_TRUE(o.save_best_so_far_agent);
  o.outdir = "x";
  EXPECT_NO_THROW(o.Validate());
  o.eval_n_steps = 1000;  // Both: the reference refuses it too.
  EXPECT_THROW(o.Validate(), std::invalid_argument);
  o.eval_n_episodes = 0;
  EXPECT_NO_THROW(o.Validate());
}

// Without an evaluation environment, a worker evaluates on the training
// environment whose episode just ended, as the reference does with
// eval_env=None (it used to skip evaluation without a word).
TEST_F(TrainAgentAsyncTest, EvaluatesOnTheTrainingEnvironmentWithoutAnother) {
  TrainOptions o = Options(2, 4000);
  o.eval_interval = 1000;
  o.eval_n_episodes = 2;
  const MakeEnvFn training_only = [](int, bool test) {
    return test ? nullptr : MakeEnv("CartPole-v1");
  };
  const TrainResult r =
      TrainAgentAsync(o, training_only, SmallA3C("CartPole-v1"));
  ASSERT_EQ(r.exit_code, 0) << r.message;
  const auto lines = ReadLines(Path("scores.txt"));
  ASSERT_GE(lines.size(), 4u);  // Header and at least three evaluations.
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto fields = Split(lines[i], '\t');
    EXPECT_GE(std::stod(fields[3]), 1.0) << lines[i];  // Whole episodes.
  }
  EXPECT_TRUE(fs::exists(Path("best")));
}

// save_best_so_far_agent off (the reference's save_best_so_far_agent=False):
// evaluations are written, best/ never is, the best score is kept.
TEST_F(TrainAgentAsyncTest, NoBestCheckpointWhenSaveBestSoFarIsOff) {
  TrainOptions o = Options(2, 4000);
  o.eval_interval = 1000;
  o.eval_n_episodes = 2;
  o.save_best_so_far_agent = false;
  const TrainResult r =
      TrainAgentAsync(o, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"));
  ASSERT_EQ(r.exit_code, 0) << r.message;
  EXPECT_GE(ReadLines(Path("scores.txt")).size(), 4u);
  EXPECT_FALSE(fs::exists(Path("best")));
  const proto::Checkpoint finish =
      LoadCheckpointDir(Path("4000_finish").string());
  EXPECT_TRUE(finish.has_best_score());
}

TEST_F(TrainAgentAsyncTest, InvalidOptionsAreRejectedBeforeAnythingIsWritten) {
  TrainOptions o = Options(2, 0);
  EXPECT_THROW(
      TrainAgentAsync(o, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1")),
      std::invalid_argument);
  o = Options(2, 100);
  o.eval_interval = 10;
  o.eval_n_episodes = 1;
  o.eval_n_steps = 5;
  EXPECT_THROW(
      TrainAgentAsync(o, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1")),
      std::invalid_argument);
  EXPECT_TRUE(fs::is_empty(dir_.path()));
}

// An environment with CartPole's spaces whose episodes last 10 steps
// (`short_episodes`) or never end on their own; it declares a parameter "p"
// for a curriculum.
class EndlessOrShortEnv : public Env {
 public:
  explicit EndlessOrShortEnv(bool short_episodes)
      : short_(short_episodes), probe_(MakeEnv("CartPole-v1")) {
    DeclareParameter("p", 0, 10, "a lesson number", &p_);
  }
  std::string Name() const override { return "EndlessOrShort"; }
  const Space& ObservationSpace() const override {
    return probe_->ObservationSpace();
  }
  const Space& ActionSpace() const override { return probe_->ActionSpace(); }

 protected:
  FloatView DoReset(std::optional<uint64_t>) override {
    len_ = 0;
    obs_ = {static_cast<float>(p_), 0, 0, 0};
    return FloatView{obs_.data(), 4};
  }
  StepResult DoStep(const Action&) override {
    StepResult r;
    r.observation = FloatView{obs_.data(), 4};
    r.terminated = short_ && ++len_ == 10;
    return r;
  }

 private:
  bool short_;
  std::unique_ptr<Env> probe_;
  double p_ = 0;
  int64_t len_ = 0;
  std::array<float, 4> obs_{};
};

// require_reset end to end: one worker steps a short-episode environment
// (whose episode ends feed the progress measure) and an endless one. The
// advance at 30% of the run ends the endless episode at once when its
// lesson requires a reset (one more episode), and leaves it running when
// it does not; the run is otherwise identical (one process: the same
// global steps in the same order).
TEST_F(TrainAgentAsyncTest, RequireResetEndsTheRunningEpisodesAtTheAdvance) {
  auto episodes = [this](bool require_reset) {
    TrainOptions o = Options(1, 4000);
    o.envs_per_process = 2;
    o.eval_interval = 0;
    o.outdir = Path(require_reset ? "reset" : "no_reset").string();
    auto curriculum = std::make_shared<const Curriculum>(Curriculum::Parse(
        std::string("environment_parameters:\n"
                    "  p:\n"
                    "    curriculum:\n"
                    "      - name: one\n"
                    "        completion_criteria: {measure: progress, "
                    "threshold: 0.3, require_reset: ") +
            (require_reset ? "true" : "false") +
            "}\n"
            "        value: 1\n"
            "      - name: two\n"
            "        value: 2\n",
        "test.yaml"));
    // The worker's two training environments are made one after the
    // other: consecutive numbers, so exactly one of them has short episodes
    // (the parent's probes before the fork shift both alike).
    auto made = std::make_shared<int64_t>(0);
    const TrainResult r =
        TrainAgentAsync(o,
                        [made](int, bool test) -> std::unique_ptr<Env> {
                          return std::make_unique<EndlessOrShortEnv>(
                              test || (*made)++ % 2 == 0);
                        },
                        SmallA3C("CartPole-v1"), {}, nullptr,
                        {std::make_shared<CurriculumExtension>(curriculum)});
    EXPECT_EQ(r.exit_code, 0) << r.message;
    EXPECT_EQ(r.global_step, 4000);
    return r.episodes;
  };
  // 2000 steps of the short environment: 200 episodes; the endless one is
  // cut when the budget is spent: 1, and once more at the advance.
  EXPECT_EQ(episodes(false), 201);
  EXPECT_EQ(episodes(true), 202);
}

// A feature from outside the trainer (experiments/extension.h): counts its
// hooks in its shared area, cuts every 7th step's episode, adds a column
// and plays the evaluations itself.
struct RecordingBlock {
  std::atomic<int64_t> worker_starts{0};
  std::atomic<int64_t> resets{0};
  std::atomic<int64_t> measured{0};
  std::atomic<int64_t> unmeasured{0};
  std::atomic<int64_t> cuts{0};
  std::atomic<int64_t> envs_seen{0};
};

class RecordingWorker : public WorkerExtension {
 public:
  explicit RecordingWorker(RecordingBlock& block) : block_(block) {}
  void BeforeReset(int64_t, Env&) override { block_.resets.fetch_add(1); }
  bool CutEpisode(int64_t) override {
    if (++calls_ % 7 != 0) return false;
    block_.cuts.fetch_add(1);
    return true;
  }
  void EpisodeEnded(int64_t, int64_t, double, bool measured) override {
    (measured ? block_.measured : block_.unmeasured).fetch_add(1);
  }

 private:
  RecordingBlock& block_;
  int64_t calls_ = 0;
};

class RecordingExtension : public TrainerExtension {
 public:
  std::string Name() const override { return "recording"; }
  void Configure(const TrainOptions& options, Env& probe) override {
    ++configured;
    EXPECT_EQ(options.processes, 2);
    EXPECT_EQ(probe.ActionSpace().n, 2);
  }
  size_t SharedBytes(const SharedStateSizes& sizes) const override {
    EXPECT_GT(sizes.params, 0);
    return sizeof(RecordingBlock);
  }
  void Place(void* shared, const RunInfo&) override {
    block = new (shared) RecordingBlock();
  }
  void Start(const RunInfo& run) override {
    ++started;
    EXPECT_EQ(run.control->global_step.load(), 0);
  }
  void SaveTo(proto::Checkpoint* checkpoint) const override {
    (*checkpoint->mutable_metadata()->mutable_config())["recorded_cuts"] =
        std::to_string(block->cuts.load());
  }
  std::vector<std::string> ScoreColumns() const override { return {"at"}; }
  void EvaluationBegins(int64_t t, std::vector<std::string>* cells) override {
    cells->push_back("t" + std::to_string(t));
  }
  std::optional<std::vector<double>> Evaluate(
      int64_t, Agent&, Env&, MetricsChannel*,
      std::vector<std::string>*) override {
    return std::vector<double>{7.0, 9.0};
  }
  std::unique_ptr<WorkerExtension> StartWorker(const WorkerInfo& w) override {
    block->worker_starts.fetch_add(1);
    block->envs_seen.fetch_add(static_cast<int64_t>(w.envs->size()));
    return std::make_unique<RecordingWorker>(*block);
  }
  // The shared area is unmapped when the run returns: what the test reads
  // is copied at the end.
  void WorkersEnded(const GroupReport&) override {
    worker_starts = block->worker_starts.load();
    envs_seen = block->envs_seen.load();
    resets = block->resets.load();
    measured = block->measured.load();
    unmeasured = block->unmeasured.load();
    cuts = block->cuts.load();
  }

  int configured = 0;
  int started = 0;
  RecordingBlock* block = nullptr;
  int64_t worker_starts = 0, envs_seen = 0, resets = 0, measured = 0,
          unmeasured = 0, cuts = 0;
};

TEST_F(TrainAgentAsyncTest, AnExtensionsHooksAreCalledInEveryProcess) {
  TrainOptions o = Options(2, 4000);
  o.eval_interval = 1000;
  o.eval_n_episodes = 1;
  auto recording = std::make_shared<RecordingExtension>();
  const TrainResult r =
      TrainAgentAsync(o, PlainEnv("CartPole-v1"), SmallA3C("CartPole-v1"), {},
                      nullptr, {recording});
  ASSERT_EQ(r.exit_code, 0) << r.message;
  EXPECT_EQ(recording->configured, 1);
  EXPECT_EQ(recording->started, 1);
  const RecordingExtension& b = *recording;
  EXPECT_EQ(b.worker_starts, 2);
  EXPECT_EQ(b.envs_seen, 2);  // One environment each.
  // Every counted episode passed EpisodeEnded once; the extension's cuts are
  // not measured (nor are the last rows the trainer cuts at the budget).
  EXPECT_EQ(b.measured + b.unmeasured, r.episodes);
  EXPECT_GE(b.unmeasured, b.cuts);
  EXPECT_LE(b.unmeasured, b.cuts + 2);
  EXPECT_GT(b.cuts, 0);
  // A reset for each worker's first episode and after each episode but the
  // ones the budget ended.
  EXPECT_GE(b.resets, r.episodes);
  EXPECT_LE(b.resets, r.episodes + 2);
  const std::vector<std::string> lines = ReadLines(Path("scores.txt"));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(Split(lines[0], '\t').back(), "at");
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> row = Split(lines[i], '\t');
    EXPECT_EQ(row.back(), "t" + row[0]) << lines[i];  // Its step.
    EXPECT_EQ(row[3], "8") << lines[i];  // The mean of its returns 7, 9.
  }
  const proto::Checkpoint finish =
      LoadCheckpointDir(Path("4000_finish").string());
  // SaveTo wrote its state into the checkpoint (the other worker may cut
  // an episode after the last step's worker saved it).
  const int64_t recorded =
      std::stoll(finish.metadata().config().at("recorded_cuts"));
  EXPECT_GT(recorded, 0);
  EXPECT_LE(recorded, b.cuts);
}

// A3C whose policy chooses action 0 whatever it sees (its output layer's
// weights 0, its biases 30 and -30): its entropy is ~1e-25 and its
// gradients vanish with it, so it stays collapsed; CartPole's episodes last
// ~9 steps.
MakeAgentFn CollapsedA3C(const std::string& env_name) {
  auto probe = MakeEnv(env_name);
  const Space obs = probe->ObservationSpace();
  const Space act = probe->ActionSpace();
  return [=](int idx) -> std::unique_ptr<Agent> {
    torch::manual_seed(0);
    A3COptions o = SmallA3COptions();
    o.seed = static_cast<uint64_t>(idx);
    auto model = FcSoftmaxActorCritic(obs.FlatSize(), act.n,
                                      std::vector<int64_t>{32, 32})
                     .ptr();
    torch::NoGradGuard no_grad;
    torch::Tensor weight, bias;  // The last of the policy head's.
    for (const auto& p : model->named_parameters()) {
      const std::string& name = p.key();
      if (name.rfind("pi.", 0) != 0) continue;
      if (name.size() > 7 && name.substr(name.size() - 7) == ".weight") {
        weight = p.value();
      } else if (name.size() > 5 && name.substr(name.size() - 5) == ".bias") {
        bias = p.value();
      }
    }
    weight.zero_();
    bias.copy_(torch::tensor({30.0f, -30.0f}));
    return std::make_unique<A3C>(model, obs, act, o);
  };
}

// A run made to collapse: named once on stderr, and --stop-on-collapse ends
// it with status 3 and <t>_except/ long before its budget.
TEST_F(TrainAgentAsyncTest,
       ACollapsedPolicyIsNamedAndStopOnCollapseEndsTheRun) {
  TrainOptions o = Options(1, 500000);
  o.eval_interval = 1000;
  o.eval_n_episodes = 5;
  o.stop_on_collapse = true;
  ::testing::internal::CaptureStderr();
  const TrainResult r = TrainAgentAsync(
      o, PlainEnv("CartPole-v1"), CollapsedA3C("CartPole-v1"), {}, nullptr,
      {std::make_shared<PolicyCollapseExtension>()});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.exit_code, 3) << r.message << err;
  EXPECT_NE(r.message.find("(--stop-on-collapse): the policy collapsed at "
                           "step "),
            std::string::npos)
      << r.message;
  EXPECT_LT(r.global_step, o.steps);
  ASSERT_FALSE(r.except_dir.empty()) << r.message;
  EXPECT_TRUE(fs::exists(fs::path(r.except_dir) / kCheckpointFileName));
  EXPECT_FALSE(fs::exists(Path("successful")));
  // Said once, on one line, at the fifth evaluation (after the three that
  // set the baseline, two collapsed rows in a row).
  const std::string said = "the policy collapsed at step ";
  ASSERT_NE(err.find(said), std::string::npos) << err;
  EXPECT_EQ(err.find(said, err.find(said) + 1), std::string::npos) << err;
  const std::vector<std::string> rows = ReadLines(Path("scores.txt"));
  ASSERT_GE(rows.size(), 6u);  // Header and five evaluations.
  const std::string fifth_step = Split(rows[5], '\t').at(0);
  EXPECT_NE(err.find(said + fifth_step + ":"), std::string::npos)
      << err << "\nfifth evaluation: " << rows[5];
}

TEST_F(TrainAgentAsyncTest, LearnsCartPoleV0WithAFixedSeed) {
  // The reference's discrete network and hyperparameters, one process.
  TrainOptions o = Options(1, 400000);
  o.env_name = "CartPole-v0";
  o.eval_interval = 10000;
  o.eval_n_episodes = 10;
  o.successful_score = 195;
  A3COptions a;
  a.optimizer.lr = 7e-4;
  const TrainResult r = TrainAgentAsync(o, PlainEnv("CartPole-v0", 0.01),
                                        SmallA3C("CartPole-v0", {200, 200}, a));
  ASSERT_EQ(r.exit_code, 0) << r.message;
  const proto::Checkpoint best = LoadCheckpointDir(Path("best").string());
  EXPECT_GE(best.best_score(), 195.0) << "after " << r.global_step << " steps";
  EXPECT_TRUE(fs::exists(Path("successful") / kCheckpointFileName));
}

}  // namespace
}  // namespace train_agent_async_test
}  // namespace asyncrl
