// Evaluation: statistics, step and episode budgets, the shared schedule with
// catch-up, scores.txt rows and best/ under the lock; the learning-rate hook.
#include "asyncrl/experiments/evaluator.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <type_traits>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/ppo.h"
#include "asyncrl/experiments/hooks.h"
#include "asyncrl/misc/checkpoint.h"
#include "test_helpers.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace evaluator_test {
namespace {

using testing::ReadFile;
using testing::ReadLines;
using testing::Split;
using testing::TempDir;

// Episodes of exactly `length` steps, reward 1 per step (plus `bonus` on the
// first step of every episode, to tell episodes apart).
class FixedLengthEnv : public Env {
 public:
  explicit FixedLengthEnv(int64_t length) : length_(length) {}
  std::string Name() const override { return "FixedLength"; }
  const Space& ObservationSpace() const override { return obs_space_; }
  const Space& ActionSpace() const override { return act_space_; }

 protected:
  FloatView DoReset(std::optional<uint64_t>) override {
    t_ = 0;
    return {&obs_, 1};
  }
  StepResult DoStep(const Action&) override {
    ++t_;
    StepResult r;
    r.observation = {&obs_, 1};
    r.reward = 1.0;
    r.terminated = t_ >= length_;
    return r;
  }

 private:
  int64_t length_;
  int64_t t_ = 0;
  float obs_ = 0;
  Space obs_space_ = Space::Box({1}, -1, 1);
  Space act_space_ = Space::Discrete(2);
};

// Always action 0; one parameter in shared memory; counts evaluation calls.
class ConstantAgent : public Agent {
 public:
  std::string Type() const override { return "constant"; }
  Action Act(FloatView) override {
    ++acts;
    return Action::Discrete(0);
  }
  Action ActAndTrain(FloatView, double) override { return Action::Discrete(0); }
  void StopEpisodeAndTrain(FloatView, double, bool) override {}
  void StopEpisode() override { ++episodes_stopped; }
  std::vector<Statistic> Statistics() const override {
    return {{"calls", 1.5}};
  }
  SharedStateSizes SharedSizes() const override { return {1, 0}; }
  void BindShared(SharedBuffers, bool) override {}
  void SaveTo(proto::Checkpoint* c) const override {
    const float w = 3.0f;
    AddFloatTensor(c->mutable_parameters(), "w", {1}, &w);
  }
  void LoadFrom(const proto::Checkpoint&) override {}

  int acts = 0;
  int episodes_stopped = 0;
};

TEST(SummarizeTest, MeanMedianSampleStdevMaxMin) {
  const EvalStats s = Summarize({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_NEAR(s.stdev, std::sqrt(32.0 / 7.0), 1e-12);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(Summarize({3}).stdev, 0.0);
  EXPECT_THROW(Summarize({}), std::invalid_argument);
}

TEST(RunEvaluationTest, EpisodeModeRunsThatManyEpisodes) {
  FixedLengthEnv env(7);
  ConstantAgent agent;
  const auto returns = RunEvaluation(agent, env, 0, 3, 0);
  EXPECT_EQ(returns, std::vector<double>({7, 7, 7}));
  EXPECT_EQ(agent.acts, 21);
  EXPECT_EQ(agent.episodes_stopped, 3);
}

TEST(RunEvaluationTest, StepModeDropsTheUnfinishedLastEpisode) {
  FixedLengthEnv env(10);
  ConstantAgent agent;
  EXPECT_EQ(RunEvaluation(agent, env, 25, 0, 0), std::vector<double>({10, 10}));
  EXPECT_EQ(agent.acts, 25);
}

TEST(RunEvaluationTest, StepModeKeepsALoneUnfinishedEpisode) {
  FixedLengthEnv env(100);
  ConstantAgent agent;
  EXPECT_EQ(RunEvaluation(agent, env, 30, 0, 0), std::vector<double>({30}));
}

TEST(RunEvaluationTest, MaxEpisodeLenCutsEpisodes) {
  FixedLengthEnv env(100);
  ConstantAgent agent;
  EXPECT_EQ(RunEvaluation(agent, env, 0, 2, 40), std::vector<double>({40, 40}));
}

// A stop request during a long evaluation (SIGINT, a failed worker) is seen
// at the next step: the evaluation returns what it finished instead of
// playing on until the parent's SIGKILL (issue 24, smaller).
TEST(RunEvaluationTest, AStopRequestEndsItAtTheNextStep) {
  // The flag goes up during the 3rd episode's 5th step.
  class StoppingAgent : public ConstantAgent {
   public:
    explicit StoppingAgent(std::atomic<int32_t>* stop) : stop_(stop) {}
    Action Act(FloatView obs) override {
      if (acts == 24) stop_->store(1);
      return ConstantAgent::Act(obs);
    }

   private:
    std::atomic<int32_t>* stop_;
  };
  std::atomic<int32_t> stop{0};
  StoppingAgent agent(&stop);
  FixedLengthEnv env(10);
  const auto returns = RunEvaluation(agent, env, 0, 1000000, 0, &stop);
  EXPECT_EQ(returns, std::vector<double>({10, 10}));
  EXPECT_EQ(agent.acts, 25);
  EXPECT_EQ(agent.episodes_stopped, 3);
  // Not raised: the whole budget.
  std::atomic<int32_t> never{0};
  ConstantAgent other;
  EXPECT_EQ(RunEvaluation(other, env, 0, 3, 0, &never).size(), 3u);
}

TEST(RunEvaluationTest, BothOrNeitherBudgetIsRejected) {
  FixedLengthEnv env(5);
  ConstantAgent agent;
  EXPECT_THROW(RunEvaluation(agent, env, 10, 2, 0), std::invalid_argument);
  EXPECT_THROW(RunEvaluation(agent, env, 0, 0, 0), std::invalid_argument);
}

class AsyncEvaluatorTest : public ::testing::Test {
 protected:
  AsyncEvaluatorTest() : dir_("evaluator"), region_(0, 0) {
    options_.outdir = dir_.str();
    options_.steps = 1000;
    options_.eval_interval = 100;
    options_.eval_n_episodes = 2;
  }
  TempDir dir_;
  SharedRegion region_;
  TrainOptions options_;
  ConstantAgent agent_;
};

TEST_F(AsyncEvaluatorTest, ScheduleClaimsOneIntervalPerCheckAndCatchesUp) {
  AsyncEvaluator::WriteHeader(options_.outdir, {"calls"});
  AsyncEvaluator evaluator(options_, region_.control());
  FixedLengthEnv env(5);
  EXPECT_FALSE(evaluator.MaybeEvaluate(99, agent_, env));
  EXPECT_TRUE(evaluator.MaybeEvaluate(250, agent_, env));  // Interval 1.
  EXPECT_EQ(region_.control().prev_eval_t.load(), 100);
  EXPECT_TRUE(evaluator.MaybeEvaluate(250, agent_, env));  // Catches up.
  EXPECT_EQ(region_.control().prev_eval_t.load(), 200);
  EXPECT_FALSE(evaluator.MaybeEvaluate(250, agent_, env));
  const auto lines = ReadLines(dir_.path() / "scores.txt");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin\tcalls");
  const auto row = Split(lines[1], '\t');
  ASSERT_EQ(row.size(), 9u);
  EXPECT_EQ(row[0], "250");
  EXPECT_EQ(row[3], "5");    // mean
  EXPECT_EQ(row[5], "0");    // stdev
  EXPECT_EQ(row[8], "1.5");  // the agent's statistic
}

TEST_F(AsyncEvaluatorTest, BestIsSavedOnlyWhenTheMeanImproves) {
  AsyncEvaluator evaluator(options_, region_.control());
  FixedLengthEnv short_env(5);
  FixedLengthEnv long_env(9);
  evaluator.MaybeEvaluate(100, agent_, short_env);
  EXPECT_DOUBLE_EQ(region_.control().best_score, 5);
  const auto best = dir_.path() / "best" / kCheckpointFileName;
  ASSERT_TRUE(std::filesystem::exists(best));
  const auto first_write = std::filesystem::last_write_time(best);
  evaluator.MaybeEvaluate(200, agent_, long_env);
  EXPECT_DOUBLE_EQ(region_.control().best_score, 9);
  EXPECT_DOUBLE_EQ(LoadCheckpointFile(best.string()).best_score(), 9);
  const auto second_write = std::filesystem::last_write_time(best);
  evaluator.MaybeEvaluate(300, agent_, short_env);  // Worse: best/ untouched.
  EXPECT_EQ(std::filesystem::last_write_time(best), second_write);
  EXPECT_DOUBLE_EQ(LoadCheckpointFile(best.string()).best_score(), 9);
  (void)first_write;
}

TEST_F(AsyncEvaluatorTest, HeaderIsNotRewrittenForAnExistingFile) {
  AsyncEvaluator::WriteHeader(options_.outdir, {"calls"});
  AsyncEvaluator evaluator(options_, region_.control());
  FixedLengthEnv env(5);
  evaluator.MaybeEvaluate(100, agent_, env);
  AsyncEvaluator::WriteHeader(options_.outdir, {"calls"});
  EXPECT_EQ(ReadLines(dir_.path() / "scores.txt").size(), 2u);
}

// Other columns than the table's (a resume with other evaluation
// opponents): refused, naming what was added and removed, and the table
// is left as it was; the same columns, or a header an earlier run cut
// before its end, are accepted.
TEST_F(AsyncEvaluatorTest, AHeaderOfOtherColumnsIsRefusedAndKept) {
  AsyncEvaluator::WriteHeader(options_.outdir, {"calls", "win_random"});
  const std::filesystem::path scores = dir_.path() / "scores.txt";
  const std::string before = ReadFile(scores);
  auto refusal = [this](const std::vector<std::string>& columns) {
    try {
      AsyncEvaluator::WriteHeader(options_.outdir, columns);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string more = refusal({"calls", "win_random", "win_greedy"});
  EXPECT_NE(more.find("has 10 columns and this run would append rows of 11 "
                      "(added: win_greedy; removed: none)"),
            std::string::npos)
      << more;
  EXPECT_NE(refusal({"calls"}).find("(added: none; removed: win_random)"),
            std::string::npos);
  EXPECT_NE(refusal({"win_random", "calls"}).find("; reordered"),
            std::string::npos);
  EXPECT_EQ(ReadFile(scores), before);
  EXPECT_EQ(refusal({"calls", "win_random"}), "accepted");
  EXPECT_EQ(ReadFile(scores), before);
  // A header cut before its end is rewritten whole, whatever it held.
  std::ofstream(scores, std::ios::trunc) << "steps\tepisodes\tela";
  EXPECT_EQ(refusal({"calls", "win_greedy"}), "accepted");
  EXPECT_EQ(ReadLines(scores).at(0),
            "steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin\tcalls\t"
            "win_greedy");
}

// A row that cannot be written whole (a file-size limit 10 bytes past the
// table, in a child process) leaves the table as it was, and the error is
// the system's own, not "No space left on device".
TEST_F(AsyncEvaluatorTest, ARowIsAppendedWholeOrNotAtAll) {
  AsyncEvaluator::WriteHeader(options_.outdir, {"calls"});
  AsyncEvaluator evaluator(options_, region_.control());
  FixedLengthEnv env(5);
  evaluator.MaybeEvaluate(100, agent_, env);
  const std::filesystem::path scores = dir_.path() / "scores.txt";
  const std::string before = ReadFile(scores);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    const rlim_t limit = before.size() + 10;
    const rlimit r{limit, limit};
    setrlimit(RLIMIT_FSIZE, &r);
    int code = 1;  // Wrote past the limit.
    try {
      evaluator.MaybeEvaluate(200, agent_, env);
    } catch (const std::runtime_error& e) {
      code = std::string(e.what()).find("File too large") != std::string::npos
                 ? 0
                 : 2;
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(ReadFile(scores), before);
}

// A table a killed run left with half a row is repaired when it is opened
// again: the next row starts a line of its own.
TEST_F(AsyncEvaluatorTest, AnIncompleteLastRowIsRemovedWhenTheTableIsReopened) {
  AsyncEvaluator::WriteHeader(options_.outdir, {"calls"});
  AsyncEvaluator evaluator(options_, region_.control());
  FixedLengthEnv env(5);
  evaluator.MaybeEvaluate(100, agent_, env);
  const std::filesystem::path scores = dir_.path() / "scores.txt";
  const std::string whole = ReadFile(scores);
  {
    std::ofstream out(scores, std::ios::app);
    out << "200\t7\t0.5\t5";
  }
  AsyncEvaluator::WriteHeader(options_.outdir, {"calls"});
  EXPECT_EQ(ReadFile(scores), whole);
  evaluator.MaybeEvaluate(200, agent_, env);
  const auto lines = ReadLines(scores);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(Split(lines[2], '\t').size(), 9u);
  EXPECT_EQ(Split(lines[2], '\t')[0], "200");
}

TEST(LinearLearningRateDecayTest, DecaysLinearlyToTheEnd) {
  auto probe = MakeEnv("CartPole-v1");
  auto agent = testing::SmallA3C("CartPole-v1", {4})(0);
  StepHook hook = LinearLearningRateDecay(1.0, 0.0, 100);
  hook(*probe, *agent, 25);
  EXPECT_DOUBLE_EQ(dynamic_cast<LearningRateControl&>(*agent).LearningRate(),
                   0.75);
  hook(*probe, *agent, 100);
  EXPECT_DOUBLE_EQ(dynamic_cast<LearningRateControl&>(*agent).LearningRate(),
                   0.0);
  ConstantAgent constant;
  EXPECT_THROW(hook(*probe, constant, 1), std::invalid_argument);
}

// --beta-decay: A3C's and PPO's entropy weight, scheduled like the learning
// rate; an agent without one is named.
TEST(LinearEntropyWeightDecayTest, DecaysLinearlyToTheEnd) {
  static_assert(std::is_base_of_v<EntropyWeightControl, PPO>,
                "PPO's entropy weight can be scheduled");
  auto probe = MakeEnv("CartPole-v1");
  auto agent = testing::SmallA3C("CartPole-v1", {4})(0);
  auto& a3c = dynamic_cast<A3C&>(*agent);
  StepHook hook = LinearEntropyWeightDecay(0.02, 0.0, 200);
  hook(*probe, *agent, 50);
  EXPECT_DOUBLE_EQ(a3c.options().beta, 0.015);
  hook(*probe, *agent, 300);  // past --steps: stays at the end
  EXPECT_DOUBLE_EQ(a3c.EntropyWeight(), 0.0);
  ConstantAgent constant;
  try {
    hook(*probe, constant, 1);
    ADD_FAILURE() << "a constant agent's entropy weight was scheduled";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("has no entropy weight to schedule"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(LinearEntropyWeightDecay(0.02, 0.0, 0), std::invalid_argument);
}

}  // namespace
}  // namespace evaluator_test
}  // namespace asyncrl
