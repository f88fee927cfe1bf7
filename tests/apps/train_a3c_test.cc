// The train_a3c and custom_agent_example binaries, run as a user runs them:
// every invalid flag exits 2 with one line before anything is created; a
// run creates a new folder with args.json, command.txt, scores.txt and
// checkpoints; --demo evaluates a saved agent; --config is read.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../experiments/test_basics.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/json.h"
#include "asyncrl/misc/tensorboard.h"
#include "test_paths.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace train_a3c_test {
namespace {

namespace fs = std::filesystem;
using testing::ReadLines;
using testing::RecordedOption;
using testing::TempDir;

using testing::Exec;
using testing::ProcessRun;

ProcessRun TrainA3C(const std::string& args) {
  return Exec(TRAIN_A3C_BIN, args);
}

struct BadFlag {
  std::string args;
  std::string expected;  // A fragment the one-line message must contain.
};

// ctest and gtest list a case by its flags.
void PrintTo(const BadFlag& bad, std::ostream* os) { *os << bad.args; }

// "--seed 2000000000 --processes 4" -> "seed_2000000000_processes_4",
// "--lr -1" -> "lr_minus1".
std::string CaseName(const std::string& args) {
  std::string name;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto c = static_cast<unsigned char>(args[i]);
    if (std::isalnum(c) != 0) {
      name += static_cast<char>(c);
    } else if (c == '-' && i + 1 < args.size() &&
               std::isdigit(static_cast<unsigned char>(args[i + 1])) != 0) {
      name += "minus";
    } else if (!name.empty() && name.back() != '_') {
      name += '_';
    }
  }
  while (!name.empty() && name.back() == '_') name.pop_back();
  return name;
}

class InvalidFlagTest : public ::testing::TestWithParam<BadFlag> {};

TEST_P(InvalidFlagTest, ExitsTwoWithOneLineAndCreatesNothing) {
  TempDir dir("flags");
  const fs::path outdir = dir.path() / "out";
  const ProcessRun r =
      TrainA3C("--outdir " + outdir.string() + " " + GetParam().args);
  EXPECT_EQ(r.status, 2) << r.output;
  const auto lines = r.Lines();
  ASSERT_EQ(lines.size(), 1u) << r.output;
  EXPECT_EQ(lines[0].rfind("train_a3c: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(GetParam().expected), std::string::npos) << lines[0];
  EXPECT_FALSE(fs::exists(outdir)) << "created " << outdir;
}

INSTANTIATE_TEST_SUITE_P(
    Table, InvalidFlagTest,
    ::testing::Values(
        BadFlag{"--processes 0",
                "--processes=0 is invalid; accepted: an integer in [1, 4096]"},
        BadFlag{"--processes -3", "--processes=-3"},
        BadFlag{"--processes 99999999999", "'--processes' is invalid"},
        BadFlag{"--steps 0", "--steps=0 is invalid; accepted: an integer >= 1"},
        BadFlag{"--steps abc",
                "the argument ('abc') for option '--steps' is invalid"},
        BadFlag{"--steps 99999999999999999999", "'--steps' is invalid"},
        BadFlag{"--t-max 0", "--t-max=0"},
        BadFlag{"--gamma 1.5",
                "--gamma=1.5 is invalid; accepted: a number in [0, 1]"},
        BadFlag{"--lr nan", "--lr=nan"}, BadFlag{"--lr -1", "--lr=-1"},
        BadFlag{"--beta inf", "--beta=inf"},
        BadFlag{"--rmsprop-epsilon 0", "--rmsprop-epsilon=0"},
        BadFlag{"--lr-warmup-updates -1",
                "--lr-warmup-updates=-1 is invalid; accepted: an integer >= "
                "0 (0: no warm-up)"},
        BadFlag{"--lag-tolerance 0.5",
                "--lag-tolerance=0.5 is invalid; accepted: 0 (no scaling) or "
                "a finite number >= 1"},
        BadFlag{"--lag-tolerance nan", "--lag-tolerance=nan"},
        BadFlag{"--rmsprop-alpha 1", "--rmsprop-alpha=1"},
        BadFlag{"--weight-decay -0.1", "--weight-decay=-0.1"},
        BadFlag{"--reward-scale-factor nan", "--reward-scale-factor=nan"},
        BadFlag{"--eval-interval -5", "--eval-interval=-5"},
        BadFlag{"--train-seconds -1",
                "--train-seconds=-1 is invalid; accepted: 0 (no limit) or a "
                "number of seconds in (0, 1e9]"},
        BadFlag{"--train-seconds nan", "--train-seconds=nan"},
        BadFlag{"--train-seconds 5 --nnodes 2",
                "--train-seconds=5 is invalid; accepted: 0 with --nnodes=2 "
                "(a clock shared by several hosts is not implemented)"},
        BadFlag{"--learner --processes 1",
                "--processes=1 is invalid; accepted: an integer >= 2 with "
                "--learner"},
        BadFlag{"--learner --processes 2 --algorithm ppo",
                "--algorithm=ppo is invalid; accepted: a3c with --learner"},
        BadFlag{"--learner --processes 2 --policy-target gae",
                "--policy-target=gae is invalid; accepted: vtrace or upgo "
                "with --learner"},
        BadFlag{"--learner --processes 2 --arch fc-softmax-lstm",
                "--learner=true is invalid; accepted: false with a recurrent "
                "arch"},
        BadFlag{"--learner --processes 2 --buffer-mib 0.0001",
                "--buffer-mib=0.0001 is invalid; accepted: at least "},
        BadFlag{"--learner --processes 2 --buffer-mib 0.01 "
                "--minimum-segments 1000",
                "--minimum-segments=1000 is invalid; accepted: at most "},
        BadFlag{"--learner --processes 2 --minimum-segments 5000",
                "--minimum-segments=5000 is invalid; accepted: an integer in "
                "[1, maximum_segments=4096]"},
        BadFlag{"--learner --processes 2 --batch-size 0",
                "--batch-size=0 is invalid; accepted: an integer >= 1"},
        BadFlag{"--reuse 1",
                "--reuse=1 is invalid; accepted: 2 (the default) without "
                "--learner"},
        BadFlag{"--learner --processes 2 --reuse -1",
                "--reuse=-1 is invalid; accepted: 0 (no limit) or a finite "
                "number > 0"},
        BadFlag{"--batch-size 8",
                "--batch-size=8 is invalid; accepted: 32 (the default) "
                "without --learner"},
        BadFlag{"--nnodes 0",
                "--nnodes=0 is invalid; accepted: an integer in "
                "[1, 1024]"},
        BadFlag{"--nnodes 2 --node-rank 2",
                "--node-rank=2 is invalid; accepted: an integer in [0, "
                "nnodes=2)"},
        BadFlag{"--nnodes 2 --master-addr localhost",
                "--master-addr=localhost is invalid; accepted: HOST:PORT"},
        BadFlag{"--master-addr 127.0.0.1:70000",
                "--master-addr=127.0.0.1:70000"},
        BadFlag{"--sync-interval 0", "--sync-interval=0 is invalid"},
        BadFlag{"--dist-timeout -1", "--dist-timeout=-1 is invalid"},
        BadFlag{"--eval-n-runs 0", "--eval-n-runs=0"},
        BadFlag{"--final-eval-n-runs -1",
                "--final-eval-n-runs=-1 is invalid; accepted: an integer in "
                "[0, 100000]"},
        BadFlag{"--eval-n-runs 5 --eval-n-steps 100",
                "not together with --eval-n-runs"},
        BadFlag{"--max-episode-len -1", "--max-episode-len=-1"},
        BadFlag{"--envs-per-process 0", "--envs-per-process=0"},
        BadFlag{"--seed -1", "--seed=-1"},
        BadFlag{"--seed 2000000000 --processes 4", "--seed=2000000000"},
        BadFlag{"--successful-score inf", "--successful-score=inf"},
        BadFlag{"--successful-score 10 --eval-interval 0",
                "only with --eval-interval > 0"},
        BadFlag{"--env Nope-v0",
                "--env=Nope-v0 is invalid; accepted: Acrobot-v1, Ant-v4, "
                "BipedalWalker-v3, BipedalWalkerHardcore-v3, CartPole-v0, "
                "CartPole-v1, ConnectFour, HalfCheetah-v4, Hopper-v4"},
        BadFlag{"--arch nope",
                "--arch=nope is invalid; accepted: auto, atari-conv, "
                "atari-conv-lstm, board-conv, fc-gaussian, fc-gaussian-lstm, "
                "fc-softmax, fc-softmax-lstm, minatar-conv, minatar-conv-lstm"},
        BadFlag{"--arch board-conv",
                "--arch=board-conv is invalid; accepted: arch 'board-conv' "
                "needs a board game's observation planes (--env ConnectFour, "
                "TicTacToe); the environment's observations are Box(shape=[4]"},
        BadFlag{"--arch minatar-conv",
                "--arch=minatar-conv is invalid; accepted: arch "
                "'minatar-conv' needs image observations of shape [C, H, W]"},
        BadFlag{"--env MinAtar/Breakout --arch atari-conv-lstm",
                "H, W >= 20; the environment's are Box(shape=[4,10,10]"},
        BadFlag{"--arch fc-gaussian", "needs a Box action space"},
        BadFlag{"--scale-observations",
                "--scale-observations=true is invalid; accepted: an "
                "environment whose observations have finite bounds "
                "(ScaleObservations: CartPole's observation element 1 has "
                "the bounds [-3.40282e+38, 3.40282e+38], not finite ones)"},
        BadFlag{"--load /nonexistent/ckpt",
                "--load=/nonexistent/ckpt is invalid"},
        BadFlag{"--demo", "--demo=true is invalid; accepted: only with --load"},
        BadFlag{"--record agent.gif",
                "--record=agent.gif is invalid; accepted: only with --demo"},
        BadFlag{"--log-level loud",
                "--log-level=loud is invalid; accepted: debug, info, warning, "
                "error"},
        BadFlag{"--config /nonexistent.conf", "--config=/nonexistent.conf"},
        // Special files are refused unread: /dev/zero read 4.2 GB before
        // bad_alloc, a directory was an empty config.
        BadFlag{"--config /dev/zero",
                "--config=/dev/zero is invalid; accepted: a readable regular "
                "file of 'key = value' lines, at most 1048576 bytes (it is a "
                "device)"},
        BadFlag{"--config /tmp", "(it is a directory)"},
        BadFlag{"--curriculum /dev/zero",
                "--curriculum: /dev/zero: cannot be read; accepted: a "
                "readable regular file of at most 1048576 bytes (it is a "
                "device)"},
        BadFlag{"--bogus", "unrecognised option '--bogus'"},
        BadFlag{"--policy-target td",
                "--policy-target=td is invalid; accepted: nstep, gae, vtrace "
                "or upgo"},
        BadFlag{"--value-target gae", "--value-target=gae is invalid"},
        BadFlag{"--lambda -0.1", "--lambda=-0.1 is invalid"},
        BadFlag{"--vtrace-c-bar 2",
                "--vtrace-c-bar=2 is invalid; accepted: "
                "a number in (0, vtrace_rho_bar=1]"},
        BadFlag{"--fresh-params",
                "--fresh-params=true is invalid; accepted: false with "
                "policy_target=nstep"},
        BadFlag{"--step-offset -1",
                "--step-offset=-1 is invalid; accepted: an integer in [0, "
                "steps)"},
        BadFlag{"--step-offset 100 --steps 100", "--step-offset=100"},
        BadFlag{"--resume /nonexistent/ckpt --step-offset 5",
                "--step-offset=5 is invalid; accepted: not together with "
                "--resume"},
        BadFlag{"--max-grad-norm nan",
                "--max-grad-norm=nan is invalid; accepted: a number"},
        BadFlag{"--keep-checkpoints 0", "--keep-checkpoints=0"},
        BadFlag{"--train-returns-window -1",
                "--train-returns-window=-1 is invalid; accepted: an integer "
                "in [0, 10000] (0: off)"},
        BadFlag{"--train-returns-window 10001", "--train-returns-window=10001"},
        BadFlag{"--collapse-entropy 1",
                "--collapse-entropy=1 is invalid; accepted: a number in "
                "[0, 1) (0: never checked)"},
        BadFlag{"--collapse-entropy -0.5", "--collapse-entropy=-0.5"},
        BadFlag{"--stop-on-collapse --collapse-entropy 0",
                "--stop-on-collapse=true is invalid; accepted: only with "
                "collapse_entropy (--collapse-entropy) above 0"},
        BadFlag{"--checkpoint-interval -1", "--checkpoint-interval=-1"},
        BadFlag{"--env-param length=9",
                "--env-param=length=9 is invalid; accepted: length=VALUE "
                "with VALUE in [0.05, 5]"},
        BadFlag{"--env-param gravity=1",
                "--env-param=gravity=1 is invalid; accepted: NAME=VALUE with "
                "NAME one of length, masspole, masscart, force_mag"},
        BadFlag{"--env-param length",
                "--env-param=length is invalid; "
                "accepted: NAME=VALUE with a number"},
        BadFlag{"--env-param force_mag=20,length=x",
                "--env-param=length=x is invalid"},
        BadFlag{"--env MinAtar/Breakout --env-param difficulty_ramping=0.5",
                "VALUE in [0, 1], a whole number"},
        // Flags that only another setting reads were accepted and unused.
        BadFlag{"--adam-beta1 0.8",
                "--adam-beta1=0.8 is invalid; accepted: 0.9 (the default) "
                "with --optimizer rmsprop: only --optimizer adam reads it"},
        BadFlag{"--optimizer adam --rmsprop-alpha 0.9",
                "--rmsprop-alpha=0.9 is invalid; accepted: 0.99 (the "
                "default) with --optimizer adam"},
        BadFlag{"--snapshot-window 64",
                "--snapshot-window=64 is invalid; accepted: 10 (the default) "
                "with --env CartPole-v1: only two-player games read it"},
        BadFlag{"--swap-steps 1000", "--swap-steps=1000 is invalid"},
        // More minibatches than the rollout has rows was capped silently.
        BadFlag{"--algorithm ppo --minibatches 1000 --t-max 5 "
                "--envs-per-process 2",
                "--minibatches=1000 is invalid; accepted: at most 10 (the "
                "rollout's rows: --t-max x --envs-per-process)"},
        BadFlag{"--algorithm ppo --arch fc-softmax-lstm --minibatches 3 "
                "--envs-per-process 2",
                "--minibatches=3 is invalid; accepted: at most 2 (the "
                "rollout's sequences: --envs-per-process)"},
        // A run whose checkpoints Protobuf cannot serialize trained and
        // then saved none, not even _except.
        BadFlag{"--env ConnectFour --hidden-sizes 2048,2048 "
                "--snapshot-window 64 --snapshot-interval 16",
                "over the 2130706432 one checkpoint can hold (Protobuf's 2 "
                "GiB message limit)"},
        BadFlag{"--env ConnectFour --eval-opponents minimax:13",
                "accepted: random, greedy, minimax, minimax:D (D in 1..12 "
                "for ConnectFour), solver"}),
    [](const auto& info) { return CaseName(info.param.args); });

// The run folder a train_a3c run printed first.
fs::path RunFolder(const ProcessRun& run) {
  return run.Lines().at(0).substr(std::string("results in ").size());
}

// A preset names its curriculum beside itself: it runs from any folder
// (the two curriculum presets named configs/... and so ran only from the
// source root).
TEST(TrainA3CTest, APresetFindsItsCurriculumFromAnyFolder) {
  TempDir dir("preset_folder");
  for (const std::string preset :
       {"mountaincar-curriculum.conf", "connectfour-minimax-depths.conf"}) {
    const ProcessRun run =
        Exec("cd " + dir.str() + " && " + std::string(TRAIN_A3C_BIN),
             "--config " + std::string(ASYNCRL_SOURCE_DIR) + "/configs/" +
                 preset + " --steps 100 --processes 1 --outdir " + dir.str() +
                 "/runs --quiet");
    EXPECT_EQ(run.status, 0) << preset << "\n" << run.output;
  }
}

TEST(TrainA3CTest, HelpAndVersionExitZero) {
  const ProcessRun help = TrainA3C("--help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("--envs-per-process"), std::string::npos);
  // Defaults as written, not as the nearest double prints in full.
  EXPECT_NE(help.output.find("--gamma arg (=0.99)"), std::string::npos)
      << help.output;
  // train_a3c's measured defaults (docs/training.md, "Defaults").
  EXPECT_NE(help.output.find("--lr arg (=0.002)"), std::string::npos);
  EXPECT_NE(help.output.find("--rmsprop-epsilon arg (=1e-05)"),
            std::string::npos);
  EXPECT_NE(help.output.find("--envs-per-process arg (=16)"),
            std::string::npos);
  EXPECT_NE(help.output.find("--step-offset arg (=0)"), std::string::npos);
  EXPECT_NE(help.output.find("--collapse-entropy arg (=0.01)"),
            std::string::npos);
  EXPECT_NE(help.output.find("--stop-on-collapse"), std::string::npos);
  const ProcessRun version = TrainA3C("--version");
  EXPECT_EQ(version.status, 0);
  EXPECT_EQ(version.output.rfind("train_a3c ", 0), 0u) << version.output;
  // The revision of the tree the binary was built from, recorded at build
  // time (cmake/build_info.cmake), not at the last CMake configure; run
  // the tests after building, before changing tracked files.
  const std::string git = std::string("git -C ") + ASYNCRL_SOURCE_DIR;
  const ProcessRun head = Exec(git, "rev-parse --short HEAD");
  if (head.status == 0) {
    std::string revision = head.Lines().at(0);
    const ProcessRun changes =
        Exec(git, "status --porcelain --untracked-files=no");
    if (!changes.output.empty()) revision += "-dirty";
    EXPECT_NE(version.output.find(" (" + revision + ")\n"), std::string::npos)
        << version.output;
  }
}

TEST(TrainA3CTest, RunCreatesANewFolderWithEverythingAndDemoLoadsIt) {
  TempDir dir("run");
  const std::string args = "--outdir " + dir.str() +
                           " --processes 2 --steps 3000 --eval-interval 1000"
                           " --eval-n-runs 2 --log-level warning";
  const ProcessRun first = TrainA3C(args);
  ASSERT_EQ(first.status, 0) << first.output;
  const auto lines = first.Lines();
  ASSERT_FALSE(lines.empty());
  ASSERT_EQ(lines[0].rfind("results in ", 0), 0u) << first.output;
  const fs::path run = lines[0].substr(std::string("results in ").size());
  EXPECT_EQ(run.parent_path(), dir.path());
  for (const char* name : {"args.json", "command.txt", "scores.txt",
                           "3000_finish/checkpoint.pb", "best/checkpoint.pb"}) {
    EXPECT_TRUE(fs::exists(run / name)) << name;
  }
  const auto args_json = ReadLines(run / "args.json");
  EXPECT_NE(
      std::find(args_json.begin(), args_json.end(), "  \"steps\": \"3000\","),
      args_json.end());
  EXPECT_NE(ReadLines(run / "command.txt")[0].find("--steps 3000"),
            std::string::npos);

  const ProcessRun second = TrainA3C(args);
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_NE(second.Lines()[0], lines[0]) << "a run must never reuse a folder";

  const ProcessRun demo = TrainA3C(
      "--demo --load " + (run / "3000_finish").string() + " --eval-n-runs 3");
  ASSERT_EQ(demo.status, 0) << demo.output;
  EXPECT_EQ(demo.output.rfind("n_runs: 3 mean: ", 0), 0u) << demo.output;
}

// When a run ends, its final agent and best/ are evaluated on the same
// fresh episodes, with the greedy and the sampled action
// (experiments/final_evaluation.h): final_eval.tsv, TensorBoard and the
// run's last lines; --final-eval-n-runs 0 turns it off.
TEST(TrainA3CTest, TheFinalAgentAndBestAreEvaluatedOnFreshEpisodes) {
  TempDir dir("final_eval");
  const ProcessRun run = TrainA3C(
      "--outdir " + dir.str() +
      " --processes 2 --steps 4000 --eval-interval 1000 --eval-n-runs 2 "
      "--final-eval-n-runs 7 --seed 5 --log-level warning");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path folder = RunFolder(run);
  const std::vector<std::string> table = ReadLines(folder / "final_eval.tsv");
  ASSERT_EQ(table.size(), 5u) << run.output;
  EXPECT_EQ(table[0],
            "agent\tcheckpoint\tstep\taction\tepisodes\tmean\tmedian\t"
            "stdev\tmax\tmin\tchosen_score");
  const std::vector<std::string> expected_starts = {
      "final\t4000_finish\t4000\tdeterministic\t7\t",
      "final\t4000_finish\t4000\tsampled\t7\t", "best\tbest\t", "best\tbest\t"};
  for (size_t i = 0; i < expected_starts.size(); ++i) {
    EXPECT_EQ(table[i + 1].rfind(expected_starts[i], 0), 0u) << table[i + 1];
  }
  // best/'s rows name the evaluation mean that chose it, the one
  // scores.txt's best row has.
  const std::vector<std::string> best = testing::Split(table[3], '\t');
  ASSERT_EQ(best.size(), 11u);
  EXPECT_FALSE(best[10].empty());
  EXPECT_NE(run.output.find("final agent (4000_finish, step 4000), 7 fresh "
                            "episodes, deterministic: mean "),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("best/ (best, step "), std::string::npos)
      << run.output;
  // TensorBoard has the figures.
  bool tagged = false;
  for (const auto& e : fs::directory_iterator(folder)) {
    if (e.path().filename().string().rfind("events.out.tfevents", 0) != 0) {
      continue;
    }
    std::ifstream in(e.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    tagged = tagged || bytes.find("final_eval/final_deterministic_mean") !=
                           std::string::npos;
  }
  EXPECT_TRUE(tagged);

  TempDir off("final_eval_off");
  const ProcessRun quiet = TrainA3C(
      "--outdir " + off.str() +
      " --processes 1 --steps 500 --eval-interval 0 --final-eval-n-runs 0 "
      "--log-level warning");
  ASSERT_EQ(quiet.status, 0) << quiet.output;
  EXPECT_FALSE(fs::exists(RunFolder(quiet) / "final_eval.tsv"));
  EXPECT_EQ(quiet.output.find("fresh episodes"), std::string::npos);
}

// Paths are bytes on Linux: a run folder whose name is not UTF-8 is
// recorded in every checkpoint, which loads (--demo) and resumes; protobuf
// never complains.
TEST(TrainA3CTest, AnOutdirThatIsNotUtf8IsRecordedAndItsCheckpointsLoad) {
  TempDir dir("bytes");
  const std::string outdir = (dir.path() / "out\xff\xfe").string();
  const ProcessRun first = TrainA3C(
      "--outdir '" + outdir +
      "' --processes 2 --steps 2000 --eval-interval 1000 --eval-n-runs 1"
      " --checkpoint-interval 1000 --quiet");
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_EQ(first.output.find("libprotobuf"), std::string::npos)
      << first.output;
  const fs::path run = RunFolder(first);
  EXPECT_EQ(LoadCheckpointDir((run / "best").string())
                .metadata()
                .config()
                .at("outdir"),
            outdir);
  const ProcessRun demo = TrainA3C("--demo --load '" + (run / "best").string() +
                                   "' --eval-n-runs 2");
  EXPECT_EQ(demo.status, 0) << demo.output;
  const ProcessRun resumed =
      TrainA3C("--resume '" + (run / "1000_checkpoint").string() +
               "' --steps 3000 --quiet");
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_TRUE(fs::exists(run / "3000_finish" / kCheckpointFileName));
}

// A recorded value holding a newline (here a curriculum file's name) is
// merged on --resume as one value: it used to be pasted into config text,
// where the newline ended the option and began another.
TEST(TrainA3CTest, ARecordedValueWithANewlineResumes) {
  TempDir dir("newline");
  const fs::path yaml = dir.path() / "c\nx.yaml";
  {
    std::ofstream out(yaml);
    out << "environment_parameters:\n  length:\n    sampler_type: uniform\n"
           "    sampler_parameters: {min_value: 0.4, max_value: 0.6}\n";
  }
  const ProcessRun first = TrainA3C(
      "--outdir " + dir.str() + " --curriculum '" + yaml.string() +
      "' --processes 1 --steps 2000 --eval-interval 1000 --eval-n-runs 1"
      " --checkpoint-interval 1000 --quiet");
  ASSERT_EQ(first.status, 0) << first.output;
  const fs::path run = RunFolder(first);
  EXPECT_EQ(RecordedOption(run, "curriculum"), yaml.string());
  const ProcessRun resumed =
      TrainA3C("--resume " + (run / "1000_checkpoint").string() +
               " --steps 3000 --quiet");
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_TRUE(fs::exists(run / "3000_finish" / kCheckpointFileName));
}

// A checkpoint of another environment's network is refused in one line,
// exit 2, before anything is written (--load made a run folder first, then
// exited 1; --demo --load exited 1).
TEST(TrainA3CTest, AForeignCheckpointIsRefusedBeforeAnythingIsWritten) {
  TempDir dir("foreign");
  const ProcessRun first =
      TrainA3C("--outdir " + (dir.path() / "first").string() +
               " --processes 1 --steps 1000 --eval-interval 1000"
               " --eval-n-runs 1 --quiet");
  ASSERT_EQ(first.status, 0) << first.output;
  const fs::path checkpoint = RunFolder(first) / "1000_finish";
  const fs::path outdir = dir.path() / "second";
  for (const std::string& args :
       {"--load " + checkpoint.string() +
            " --env Acrobot-v1 --steps 2000 --outdir " + outdir.string(),
        "--demo --load " + checkpoint.string() + " --env Acrobot-v1"}) {
    const ProcessRun r = TrainA3C(args);
    EXPECT_EQ(r.status, 2) << r.output;
    ASSERT_EQ(r.Lines().size(), 1u) << r.output;
    EXPECT_NE(
        r.Lines()[0].find("--load=" + checkpoint.string() + " is invalid: "),
        std::string::npos)
        << r.output;
  }
  EXPECT_FALSE(fs::exists(outdir));
}

// --load takes the agent and starts a new run with fresh counters;
// --step-offset starts the counter and the evaluation schedule elsewhere.
TEST(TrainA3CTest, LoadStartsANewRunAndStepOffsetMovesTheSchedule) {
  TempDir dir("load");
  const std::string common =
      "--outdir " + dir.str() + " --processes 1 --eval-n-runs 1 --quiet";
  const ProcessRun first =
      TrainA3C(common + " --steps 2000 --eval-interval 1000");
  ASSERT_EQ(first.status, 0) << first.output;
  const fs::path ckpt = RunFolder(first) / "2000_finish";

  const ProcessRun loaded = TrainA3C(common + " --load " + ckpt.string() +
                                     " --steps 1000 --eval-interval 500");
  ASSERT_EQ(loaded.status, 0) << loaded.output;
  const fs::path run = RunFolder(loaded);
  EXPECT_NE(run, RunFolder(first));
  const auto rows = ReadLines(run / "scores.txt");
  ASSERT_GE(rows.size(), 2u);
  EXPECT_LT(std::stoll(testing::Split(rows[1], '\t')[0]), 1000);
  EXPECT_TRUE(fs::exists(run / "best" / "checkpoint.pb"));
  EXPECT_EQ(LoadCheckpointDir((run / "1000_finish").string()).global_step(),
            1000);

  const ProcessRun offset =
      TrainA3C(common + " --load " + ckpt.string() +
               " --step-offset 600 --steps 1200 --eval-interval 500");
  ASSERT_EQ(offset.status, 0) << offset.output;
  const auto offset_rows = ReadLines(RunFolder(offset) / "scores.txt");
  ASSERT_GE(offset_rows.size(), 2u);
  // Due at 1000 (the first multiple of 500 after 600), not at once.
  EXPECT_GE(std::stoll(testing::Split(offset_rows[1], '\t')[0]), 1000);
  EXPECT_TRUE(fs::exists(RunFolder(offset) / "1200_finish" / "checkpoint.pb"));
}

// Checks the learning rate, RMSprop epsilon and reward scale in args.json.
void ExpectImageOptions(const fs::path& folder, const std::string& lr,
                        const std::string& eps, const std::string& scale) {
  const auto args = ReadLines(folder / "args.json");
  for (const std::string& line :
       {"  \"lr\": \"" + lr + "\",", "  \"rmsprop-epsilon\": \"" + eps + "\",",
        "  \"reward-scale-factor\": \"" + scale + "\","}) {
    EXPECT_NE(std::find(args.begin(), args.end(), line), args.end()) << line;
  }
}

TEST(TrainA3CTest, MinAtarRunsWithTheRecurrentNetworkAndImageDefaults) {
  // Every environment gets lr 2e-3 and eps 1e-5; image observations are
  // not reward-scaled, the others by 0.01 (the reference's gym example).
  {
    TempDir gym("gym_defaults");
    const ProcessRun run =
        TrainA3C("--outdir " + gym.str() +
                 " --processes 1 --steps 64 --eval-interval 0 --quiet");
    ASSERT_EQ(run.status, 0) << run.output;
    ExpectImageOptions(RunFolder(run), "0.002", "1e-05", "0.01");
    const auto args = ReadLines(RunFolder(run) / "args.json");
    EXPECT_NE(
        std::find(args.begin(), args.end(), "  \"envs-per-process\": \"16\","),
        args.end());
  }
  TempDir dir("minatar");
  const ProcessRun run = TrainA3C(
      "--outdir " + dir.str() +
      " --env MinAtar/Breakout --arch minatar-conv-lstm --processes 2"
      " --steps 2000 --eval-interval 1000 --eval-n-runs 2 --log-level warning");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path folder = RunFolder(run);
  ExpectImageOptions(folder, "0.002", "1e-05", "1");
  EXPECT_EQ(ReadLines(folder / "scores.txt").size(), 3u);  // Header + 2.
  // The environment and network come from the checkpoint.
  const ProcessRun demo =
      TrainA3C("--demo --load " + (folder / "2000_finish").string() +
               " --eval-n-runs 2");
  ASSERT_EQ(demo.status, 0) << demo.output;
  EXPECT_EQ(demo.output.rfind("n_runs: 2 mean: ", 0), 0u) << demo.output;

  // Given explicitly, the options win over the image defaults.
  const ProcessRun given = TrainA3C(
      "--outdir " + dir.str() +
      " --env MinAtar/Freeway --processes 1 --steps 200 --eval-interval 0"
      " --final-eval-n-runs 0"
      " --lr 0.001 --rmsprop-epsilon 0.1 --reward-scale-factor 0.5"
      " --log-level warning");
  ASSERT_EQ(given.status, 0) << given.output;
  ExpectImageOptions(RunFolder(given), "0.001", "0.1", "0.5");
}

// --scale-observations is recorded: --demo applies it from the checkpoint,
// --resume refuses to change it (the network's inputs would change).
TEST(TrainA3CTest, ScaleObservationsIsRecordedForDemoAndResume) {
  TempDir dir("scale_observations");
  const ProcessRun run = TrainA3C(
      "--outdir " + dir.str() +
      " --env Pendulum-v1 --scale-observations --processes 1 --steps 2000"
      " --eval-interval 1000 --eval-n-runs 1 --quiet");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path folder = RunFolder(run);
  EXPECT_EQ(RecordedOption(folder, "scale-observations"), "true");
  const std::string demo =
      "--demo --load " + (folder / "2000_finish").string() + " --eval-n-runs 2";
  const ProcessRun recorded = TrainA3C(demo);
  const ProcessRun given = TrainA3C(demo + " --scale-observations");
  ASSERT_EQ(recorded.status, 0) << recorded.output;
  ASSERT_EQ(given.status, 0) << given.output;
  EXPECT_EQ(recorded.output.rfind("n_runs: 2 mean: ", 0), 0u)
      << recorded.output;
  // The same episodes: the recorded flag reached the demo's environment
  // (unscaled inputs would move the policy's means, hence the returns).
  EXPECT_EQ(recorded.output, given.output);

  const ProcessRun plain =
      TrainA3C("--outdir " + dir.str() +
               " --env Pendulum-v1 --processes 1 --steps 1000"
               " --eval-interval 0 --quiet");
  ASSERT_EQ(plain.status, 0) << plain.output;
  const ProcessRun changed =
      TrainA3C("--resume " + (RunFolder(plain) / "1000_finish").string() +
               " --scale-observations --steps 2000");
  EXPECT_EQ(changed.status, 2) << changed.output;
  EXPECT_NE(changed.output.find("--scale-observations=true is invalid; "
                                "accepted: false, the resumed run's value"),
            std::string::npos)
      << changed.output;
  // A run recorded before the flag existed (no such key) did not scale.
  const fs::path args_path = RunFolder(plain) / "args.json";
  std::vector<std::string> kept;
  for (const std::string& line : ReadLines(args_path)) {
    if (line.find("\"scale-observations\"") == std::string::npos) {
      kept.push_back(line);
    }
  }
  ASSERT_EQ(kept.size() + 1, ReadLines(args_path).size());
  {
    std::ofstream out(args_path);
    for (const std::string& line : kept) out << line << "\n";
  }
  const ProcessRun old_run =
      TrainA3C("--resume " + (RunFolder(plain) / "1000_finish").string() +
               " --scale-observations --steps 2000");
  EXPECT_EQ(old_run.status, 2) << old_run.output;
  EXPECT_NE(old_run.output.find("--scale-observations=true is invalid; "
                                "accepted: not given (the resumed run was "
                                "recorded before --scale-observations "
                                "existed"),
            std::string::npos)
      << old_run.output;
}

// --normalize-observations: the statistics grow with every training step
// and go into checkpoints; the flag is recorded, followed by --demo and
// --resume, and a checkpoint is refused by a run that would read its
// network's inputs differently; where the run cannot keep one set of
// statistics it is refused in one line with nothing created.
TEST(TrainA3CTest, NormalizeObservationsIsRecordedCheckpointedAndGuarded) {
  TempDir dir("normalize_observations");
  const std::string common =
      " --env CartPole-v1 --processes 1 --eval-n-runs 1 --quiet";
  const ProcessRun run =
      TrainA3C("--outdir " + dir.str() + common +
               " --normalize-observations --steps 3000 --eval-interval 1500");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path folder = RunFolder(run);
  EXPECT_EQ(RecordedOption(folder, "normalize-observations"), "true");
  const fs::path finish = folder / "3000_finish";
  // Every training row merged once (the last batch of 16 environments may
  // end past step 3000), evaluations none.
  const double count =
      LoadCheckpointDir(finish.string()).observation_statistics().count();
  EXPECT_GE(count, 3000);
  EXPECT_LE(count, 3000 + 16);

  const std::string demo =
      "--demo --load " + finish.string() + " --eval-n-runs 2";
  const ProcessRun recorded = TrainA3C(demo);
  const ProcessRun given = TrainA3C(demo + " --normalize-observations");
  ASSERT_EQ(recorded.status, 0) << recorded.output;
  EXPECT_EQ(recorded.output, given.output);

  // Resumed (in its folder) with the recorded flag: the statistics go on
  // growing.
  const ProcessRun resumed =
      TrainA3C("--resume " + finish.string() + " --steps 5000");
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  const double resumed_count =
      LoadCheckpointDir((folder / "5000_finish").string())
          .observation_statistics()
          .count();
  EXPECT_GE(resumed_count, 5000);
  EXPECT_LE(resumed_count, 5000 + 32);

  // --load into a run that does not normalize, and the other way round.
  const ProcessRun raw_load = TrainA3C("--outdir " + dir.str() + common +
                                       " --steps 1000 --eval-interval 0" +
                                       " --load " + finish.string());
  EXPECT_EQ(raw_load.status, 2) << raw_load.output;
  ASSERT_EQ(raw_load.Lines().size(), 1u) << raw_load.output;
  EXPECT_NE(raw_load.output.find("holds observation statistics"),
            std::string::npos)
      << raw_load.output;
  const ProcessRun plain = TrainA3C("--outdir " + dir.str() + common +
                                    " --steps 1000 --eval-interval 0");
  ASSERT_EQ(plain.status, 0) << plain.output;
  const fs::path plain_finish = RunFolder(plain) / "1000_finish";
  const ProcessRun normalized_load =
      TrainA3C("--outdir " + dir.str() + common +
               " --normalize-observations --steps 1000 --eval-interval 0" +
               " --load " + plain_finish.string());
  EXPECT_EQ(normalized_load.status, 2) << normalized_load.output;
  EXPECT_NE(normalized_load.output.find("holds no observation statistics"),
            std::string::npos)
      << normalized_load.output;
  const ProcessRun changed = TrainA3C("--resume " + plain_finish.string() +
                                      " --normalize-observations --steps 2000");
  EXPECT_EQ(changed.status, 2) << changed.output;
  EXPECT_NE(changed.output.find("--normalize-observations=true is invalid; "
                                "accepted: false, the resumed run's value"),
            std::string::npos)
      << changed.output;

  struct Refused {
    std::string flags;
    std::string accepted;
  };
  for (const Refused& c : std::vector<Refused>{
           {"--env MinAtar/Breakout", "only vectors are normalized"},
           {"--env TicTacToe", "false for a two-player game"},
           {"--env CartPole-v1 --normalize-observations-clip 0",
            "a finite number > 0"}}) {
    SCOPED_TRACE(c.flags);
    const fs::path out = dir.path() / "refused";
    const ProcessRun r = TrainA3C(c.flags + " --normalize-observations" +
                                  " --outdir " + out.string());
    EXPECT_EQ(r.status, 2) << r.output;
    ASSERT_EQ(r.Lines().size(), 1u) << r.output;
    EXPECT_NE(r.output.find("--normalize-observations"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find(c.accepted), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out));
  }
}

// --hidden-sizes and --activation: recorded, followed by --demo and
// --resume, a change refused on resume and by --load's parameters.
TEST(TrainA3CTest, NetworkShapeIsRecordedFollowedAndGuarded) {
  TempDir dir("network_shape");
  const std::string common =
      " --env CartPole-v1 --processes 1 --eval-n-runs 1 --quiet";
  const ProcessRun run =
      TrainA3C("--outdir " + dir.str() + common +
               " --hidden-sizes 16,8 --activation tanh --steps 1000" +
               " --eval-interval 0");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path folder = RunFolder(run);
  EXPECT_EQ(RecordedOption(folder, "hidden-sizes"), "16,8");
  EXPECT_EQ(RecordedOption(folder, "activation"), "tanh");
  const fs::path finish = folder / "1000_finish";
  const proto::Checkpoint checkpoint = LoadCheckpointDir(finish.string());
  bool found = false;
  for (const auto& t : checkpoint.parameters()) {
    if (t.name() != "pi.2.weight") continue;  // Linear, Tanh, Linear.
    found = true;
    EXPECT_EQ(std::vector<int64_t>(t.shape().begin(), t.shape().end()),
              (std::vector<int64_t>{8, 16}));
  }
  EXPECT_TRUE(found);

  const std::string demo =
      "--demo --load " + finish.string() + " --eval-n-runs 2";
  const ProcessRun recorded = TrainA3C(demo);
  const ProcessRun given =
      TrainA3C(demo + " --hidden-sizes 16,8 --activation tanh");
  ASSERT_EQ(recorded.status, 0) << recorded.output;
  EXPECT_EQ(recorded.output, given.output);
  // The default widths cannot take these parameters.
  const ProcessRun other_load =
      TrainA3C("--outdir " + dir.str() + common +
               " --steps 1000 --eval-interval 0 --activation tanh" +
               " --load " + finish.string());
  EXPECT_EQ(other_load.status, 2) << other_load.output;
  ASSERT_EQ(other_load.Lines().size(), 1u) << other_load.output;
  EXPECT_NE(other_load.output.find("has shape [16, 4]; expected float32 "
                                   "[200, 4]"),
            std::string::npos)
      << other_load.output;

  // Nor, though they load, parameters of the other activation.
  const ProcessRun relu_load = TrainA3C(
      "--outdir " + dir.str() + common + " --steps 1000 --eval-interval 0" +
      " --hidden-sizes 16,8 --load " + finish.string());
  EXPECT_EQ(relu_load.status, 2) << relu_load.output;
  ASSERT_EQ(relu_load.Lines().size(), 1u) << relu_load.output;
  EXPECT_NE(relu_load.output.find("--activation=auto is invalid; accepted: "
                                  "tanh, the --load checkpoint's"),
            std::string::npos)
      << relu_load.output;
  const ProcessRun relu_demo = TrainA3C(demo + " --activation relu");
  EXPECT_EQ(relu_demo.status, 2) << relu_demo.output;
  const ProcessRun tanh_load = TrainA3C(
      "--outdir " + dir.str() + common + " --steps 1000 --eval-interval 0" +
      " --hidden-sizes 16,8 --activation tanh --load " + finish.string());
  EXPECT_EQ(tanh_load.status, 0) << tanh_load.output;

  const ProcessRun changed = TrainA3C("--resume " + finish.string() +
                                      " --activation relu --steps 2000");
  EXPECT_EQ(changed.status, 2) << changed.output;
  EXPECT_NE(changed.output.find("--activation=relu is invalid; accepted: "
                                "tanh, the resumed run's value"),
            std::string::npos)
      << changed.output;
  const ProcessRun resumed =
      TrainA3C("--resume " + finish.string() + " --steps 2000");
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_TRUE(fs::exists(folder / "2000_finish"));
  EXPECT_EQ(LoadCheckpointDir((folder / "2000_finish").string())
                .metadata()
                .config()
                .at("activation"),
            "tanh");
  // Other text for the same network is no change: 016,8 is 16,8, and
  // auto is the arch's own widths and activation.
  const ProcessRun same_widths =
      TrainA3C("--resume " + (folder / "2000_finish").string() +
               " --hidden-sizes 016,8 --steps 2500");
  EXPECT_EQ(same_widths.status, 0) << same_widths.output;
  const ProcessRun defaults = TrainA3C("--outdir " + dir.str() + common +
                                       " --steps 500" + " --eval-interval 0");
  ASSERT_EQ(defaults.status, 0) << defaults.output;
  const ProcessRun explicit_defaults =
      TrainA3C("--resume " + (RunFolder(defaults) / "500_finish").string() +
               " --hidden-sizes 200,200 --activation relu --steps 1000");
  EXPECT_EQ(explicit_defaults.status, 0) << explicit_defaults.output;
  const ProcessRun other_widths =
      TrainA3C("--resume " + (RunFolder(defaults) / "500_finish").string() +
               " --hidden-sizes 200,100 --steps 1000");
  EXPECT_EQ(other_widths.status, 2) << other_widths.output;
  // (The resume before recorded its own text, 200,200.)
  EXPECT_NE(other_widths.output.find("--hidden-sizes=200,100 is invalid; "
                                     "accepted: 200,200, the resumed run's "
                                     "value"),
            std::string::npos)
      << other_widths.output;
}

// A network --hidden-sizes, --activation or --conv-channels cannot shape (an
// arch of a fixed shape, widths that cannot be built) is refused in one line
// with nothing created. (Apart from the test above so that neither takes
// more than a few seconds.)
TEST(TrainA3CTest, NetworkShapesThatCannotBeBuiltAreRefusedInOneLine) {
  TempDir dir("network_shape_refused");
  struct Refused {
    std::string flags;
    std::string message;
  };
  for (const Refused& c : std::vector<Refused>{
           {"--env MinAtar/Breakout --activation tanh",
            "--activation=tanh is invalid; accepted: auto (arch minatar-conv "
            "takes only --hidden-sizes and --conv-channels)"},
           {"--conv-channels 32",
            "--conv-channels=32 is invalid; accepted: auto (arch fc-softmax "
            "takes only --hidden-sizes and --activation)"},
           {"--env MinAtar/Breakout --conv-channels 300",
            "--conv-channels=300 is invalid; accepted: auto, or a whole "
            "number from 1 to 256"},
           {"--arch fc-softmax-lstm --hidden-sizes 64",
            "--hidden-sizes=64 is invalid; accepted: auto (arch "
            "fc-softmax-lstm has a fixed shape"},
           {"--hidden-sizes 64,0",
            "--hidden-sizes=64,0 is invalid; accepted: "
            "auto, or 1 to 8 comma-separated widths"},
           {"--activation gelu",
            "--activation=gelu is invalid; accepted: auto, relu, tanh"}}) {
    SCOPED_TRACE(c.flags);
    const fs::path out = dir.path() / "refused";
    const ProcessRun r = TrainA3C(c.flags + " --outdir " + out.string());
    EXPECT_EQ(r.status, 2) << r.output;
    ASSERT_EQ(r.Lines().size(), 1u) << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out));
  }
}

// --conv-channels and --hidden-sizes shape minatar-conv: recorded in the
// checkpoint, followed by --demo, a change refused on resume.
TEST(TrainA3CTest, ConvShapeIsRecordedFollowedAndGuarded) {
  TempDir dir("conv_shape");
  const std::string common =
      " --env MinAtar/Breakout --processes 1 --eval-n-runs 1 --quiet";
  const ProcessRun run = TrainA3C(
      "--outdir " + dir.str() + common +
      " --conv-channels 4 --hidden-sizes 8 --steps 500" + " --eval-interval 0");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path folder = RunFolder(run);
  EXPECT_EQ(RecordedOption(folder, "conv-channels"), "4");
  EXPECT_EQ(RecordedOption(folder, "hidden-sizes"), "8");
  const fs::path finish = folder / "500_finish";
  const proto::Checkpoint checkpoint = LoadCheckpointDir(finish.string());
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& t : checkpoint.parameters()) {
    shapes[t.name()] = std::vector<int64_t>(t.shape().begin(), t.shape().end());
  }
  // Conv2d(4 planes, 4, 3) over 10x10, then Linear(4 * 8 * 8, 8).
  EXPECT_EQ(shapes["trunk.1.weight"], (std::vector<int64_t>{4, 4, 3, 3}));
  EXPECT_EQ(shapes["trunk.4.weight"], (std::vector<int64_t>{8, 256}));
  // MinAtar's full action set: 6 actions.
  EXPECT_EQ(shapes["pi.weight"], (std::vector<int64_t>{6, 8}));

  const std::string demo =
      "--demo --load " + finish.string() + " --eval-n-runs 2";
  const ProcessRun recorded = TrainA3C(demo);
  const ProcessRun given =
      TrainA3C(demo + " --conv-channels 4 --hidden-sizes 8");
  ASSERT_EQ(recorded.status, 0) << recorded.output;
  EXPECT_EQ(recorded.output, given.output);

  const ProcessRun changed = TrainA3C("--resume " + finish.string() +
                                      " --conv-channels 8 --steps 1000");
  EXPECT_EQ(changed.status, 2) << changed.output;
  ASSERT_EQ(changed.Lines().size(), 1u) << changed.output;
  EXPECT_NE(changed.output.find("--conv-channels=8 is invalid; accepted: 4, "
                                "the resumed run's value"),
            std::string::npos)
      << changed.output;
  const ProcessRun resumed =
      TrainA3C("--resume " + finish.string() + " --steps 1000");
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_TRUE(fs::exists(folder / "1000_finish"));
}

// --normalize-rewards: recorded, every training row's return merged once
// into the checkpoint's statistics, scores still in CartPole's units
// (whole episode lengths with one evaluation episode), resumed, loaded by
// a run without the flag, refused with a clip of 0 (several hosts combine
// the statistics: hosts_test.cc).
TEST(TrainA3CTest, NormalizeRewardsIsRecordedCheckpointedAndReportsRawScores) {
  TempDir dir("normalize_rewards");
  const std::string common =
      " --env CartPole-v1 --processes 1 --eval-n-runs 1 --quiet";
  const ProcessRun run =
      TrainA3C("--outdir " + dir.str() + common +
               " --normalize-rewards --steps 3000 --eval-interval 1000");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path folder = RunFolder(run);
  EXPECT_EQ(RecordedOption(folder, "normalize-rewards"), "true");
  const fs::path finish = folder / "3000_finish";
  const proto::Checkpoint checkpoint = LoadCheckpointDir(finish.string());
  EXPECT_FALSE(checkpoint.has_observation_statistics());
  ASSERT_TRUE(checkpoint.has_reward_statistics());
  EXPECT_GE(checkpoint.reward_statistics().count(), 3000);
  EXPECT_LE(checkpoint.reward_statistics().count(), 3000 + 16);
  const auto scores = ReadLines(folder / "scores.txt");
  ASSERT_EQ(scores.size(), 4u);
  for (size_t row = 1; row < scores.size(); ++row) {
    const double mean = std::stod(testing::Split(scores[row], '\t').at(3));
    EXPECT_EQ(mean, std::floor(mean)) << scores[row];
    EXPECT_GE(mean, 8);
    EXPECT_LE(mean, 500);
  }
  // Resumed with the recorded flag: the statistics go on growing.
  const ProcessRun resumed =
      TrainA3C("--resume " + finish.string() + " --steps 4000");
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_GE(LoadCheckpointDir((folder / "4000_finish").string())
                .reward_statistics()
                .count(),
            4000);
  // A run that does not normalize rewards loads the agent and leaves the
  // statistics unused.
  const ProcessRun raw_load =
      TrainA3C("--outdir " + dir.str() + common +
               " --steps 500 --eval-interval 0" + " --load " + finish.string());
  ASSERT_EQ(raw_load.status, 0) << raw_load.output;
  EXPECT_FALSE(LoadCheckpointDir((RunFolder(raw_load) / "500_finish").string())
                   .has_reward_statistics());
  const fs::path out = dir.path() / "refused";
  const ProcessRun r =
      TrainA3C("--normalize-rewards-clip 0 --normalize-rewards --outdir " +
               out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  ASSERT_EQ(r.Lines().size(), 1u) << r.output;
  EXPECT_NE(r.output.find("--normalize-rewards-clip=0"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(out));
}

// The mean return of the last training episodes: scores.txt's train_mean
// (right after the agent's statistics) in the environment's units (CartPole's
// returns are episode lengths, 8 to 500, whatever --reward-scale-factor),
// the run's last lines, checkpoints, resumed; off with a window of 0.
TEST(TrainA3CTest, TrainingReturnsAreReportedInTheEnvironmentsUnits) {
  TempDir dir("train_returns");
  const std::string common =
      " --env CartPole-v1 --processes 1 --eval-n-runs 1 --eval-interval 1000"
      " --quiet";
  const ProcessRun run = TrainA3C("--outdir " + dir.str() + common +
                                  " --steps 3000 --train-returns-window 20");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path folder = RunFolder(run);
  EXPECT_EQ(RecordedOption(folder, "train-returns-window"), "20");
  const auto scores = ReadLines(folder / "scores.txt");
  ASSERT_EQ(scores.size(), 4u);
  const auto header = testing::Split(scores[0], '\t');
  const auto column = std::find(header.begin(), header.end(), "train_mean");
  ASSERT_NE(column, header.end()) << scores[0];
  const size_t at = static_cast<size_t>(column - header.begin());
  for (size_t row = 1; row < scores.size(); ++row) {
    const double mean = std::stod(testing::Split(scores[row], '\t').at(at));
    EXPECT_GE(mean, 8) << scores[row];
    EXPECT_LE(mean, 500) << scores[row];
  }
  EXPECT_NE(run.output.find("training episodes: mean return of the last 20: "),
            std::string::npos)
      << run.output;
  const proto::Checkpoint finish =
      LoadCheckpointDir((folder / "3000_finish").string());
  const int64_t recorded = finish.training_returns().recorded();
  EXPECT_GT(recorded, 20);  // 3000 steps of episodes of at most ~100.
  EXPECT_EQ(finish.training_returns().newest_size(), 20);
  for (double r : finish.training_returns().newest()) {
    // Steps of 0.01 summed, then divided by 0.01: an integer up to rounding.
    EXPECT_NEAR(r, std::round(r), 1e-9 * r);
    EXPECT_GE(r, 8);
  }
  // Resumed: the ring goes on from the checkpoint's.
  const ProcessRun resumed = TrainA3C(
      "--resume " + (folder / "3000_finish").string() + " --steps 4000");
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_GT(LoadCheckpointDir((folder / "4000_finish").string())
                .training_returns()
                .recorded(),
            recorded);
  // Off: no column, no line, nothing in the checkpoint.
  const ProcessRun off = TrainA3C("--outdir " + dir.str() + common +
                                  " --steps 1000 --train-returns-window 0");
  ASSERT_EQ(off.status, 0) << off.output;
  EXPECT_EQ(ReadLines(RunFolder(off) / "scores.txt")[0].find("train_mean"),
            std::string::npos);
  EXPECT_EQ(off.output.find("training episodes"), std::string::npos);
  EXPECT_FALSE(LoadCheckpointDir((RunFolder(off) / "1000_finish").string())
                   .has_training_returns());
}

// --learner: the last process learns from the buffer the other fills;
// recorded, reported in scores.txt and at the end, and its runs finish
// with the checkpoints of any run.
TEST(TrainA3CTest, ALearnerTrainsFromTheBufferAndReportsIt) {
  TempDir dir("learner");
  const ProcessRun run =
      TrainA3C("--outdir " + dir.str() +
               " --env CartPole-v1 --learner --processes 2 --steps 6000"
               " --minimum-segments 16 --batch-size 8 --eval-interval 3000"
               " --eval-n-runs 1 --final-eval-n-runs 0 --quiet");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path folder = RunFolder(run);
  EXPECT_EQ(RecordedOption(folder, "learner"), "true");
  EXPECT_EQ(RecordedOption(folder, "policy-target"), "vtrace");
  EXPECT_EQ(RecordedOption(folder, "batch-size"), "8");
  const auto scores = ReadLines(folder / "scores.txt");
  ASSERT_EQ(scores.size(), 3u);
  const auto header = testing::Split(scores[0], '\t');
  for (const char* column : {"learner_updates", "reuse", "buffer_segments",
                             "importance_ratio", "policy_lag"}) {
    EXPECT_NE(std::find(header.begin(), header.end(), column), header.end())
        << column << " in " << scores[0];
  }
  const size_t segments = static_cast<size_t>(
      std::find(header.begin(), header.end(), "buffer_segments") -
      header.begin());
  // By the last evaluation the worker has written ~6000 / 5 segments.
  EXPECT_GT(std::stod(testing::Split(scores[2], '\t').at(segments)), 16)
      << scores[2];
  const size_t at = run.output.find("learner: ");
  ASSERT_NE(at, std::string::npos) << run.output;
  // "learner: N updates of 8 segments of 5 steps; ..."
  EXPECT_GT(std::stoll(run.output.substr(at + 9)), 0) << run.output;
  EXPECT_NE(run.output.find("updates of 8 segments of 5 steps"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find(" rows/s, the workers "), std::string::npos)
      << run.output;
  const proto::Checkpoint finish =
      LoadCheckpointDir((folder / "6000_finish").string());
  EXPECT_GT(finish.parameters_size(), 0);
}

// --train-seconds ends a run its steps would not: exit 0, <t>_finish/
// named by the step the run reached is saved and is the final agent the
// final evaluation measures.
TEST(TrainA3CTest, TrainSecondsEndsTheRunAndItsFinalAgentIsMeasured) {
  TempDir dir("train_seconds");
  const ProcessRun run = TrainA3C(
      "--outdir " + dir.str() +
      " --env CartPole-v1 --processes 2 --steps 1000000000"
      " --train-seconds 1 --eval-interval 0 --final-eval-n-runs 2 --quiet");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("stopped by --train-seconds 1.0 at step "),
            std::string::npos)
      << run.output;
  const fs::path folder = RunFolder(run);
  std::vector<std::string> finishes;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 7 && name.substr(name.size() - 7) == "_finish") {
      finishes.push_back(name);
    }
  }
  ASSERT_EQ(finishes.size(), 1u) << run.output;
  const int64_t step = std::stoll(finishes[0]);
  EXPECT_GT(step, 0);
  EXPECT_LT(step, 1000000000);
  EXPECT_NE(run.output.find("final agent: " + (folder / finishes[0]).string()),
            std::string::npos)
      << run.output;
  EXPECT_GT(
      LoadCheckpointDir((folder / finishes[0]).string()).parameters_size(), 0);
  const auto evaluations = ReadLines(folder / "final_eval.tsv");
  ASSERT_GE(evaluations.size(), 2u);
  EXPECT_EQ(testing::Split(evaluations[1], '\t').at(1), finishes[0])
      << evaluations[1];
  EXPECT_EQ(RecordedOption(folder, "train-seconds"), "1");
}

// --reuse R holds the learner and the workers to R rows trained a row
// written, within a rollout and a batch (here 1.5 x 16 x 5 + 8 x 5 = 160
// rows of ~20,000).
TEST(TrainA3CTest, ReuseHoldsTheLearnerToItsRatio) {
  TempDir dir("learner_reuse");
  const ProcessRun run = TrainA3C(
      "--outdir " + dir.str() +
      " --env CartPole-v1 --learner --processes 2 --steps 20000"
      " --envs-per-process 16 --t-max 5 --minimum-segments 16 --batch-size 8"
      " --reuse 1.5 --eval-interval 0 --final-eval-n-runs 0 --quiet");
  ASSERT_EQ(run.status, 0) << run.output;
  const std::string said = "each step written trained on ";
  const size_t at = run.output.find(said);
  ASSERT_NE(at, std::string::npos) << run.output;
  const double reuse = std::stod(run.output.substr(at + said.size()));
  EXPECT_GE(reuse, 1.4) << run.output;
  EXPECT_LE(reuse, 1.6) << run.output;
}

// Each of `flag_sets` exits 2 with one line and creates no --outdir.
void ExpectRefusedInOneLine(const TempDir& dir,
                            const std::vector<std::string>& flag_sets) {
  for (const std::string& flags : flag_sets) {
    SCOPED_TRACE(flags);
    const fs::path out = dir.path() / "refused";
    const ProcessRun r = TrainA3C(flags + " --outdir " + out.string());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.Lines().size(), 1u) << r.output;
    EXPECT_FALSE(fs::exists(out));
  }
}

// --algorithm ppo: recorded, its checkpoints say "ppo" and hold what A3C's
// do, --demo --load builds PPO from the recorded flag, a resume cannot
// change the algorithm, and each algorithm's own flags are refused with the
// other one, nothing created.
TEST(TrainA3CTest, PpoIsRecordedCheckpointedAndResumed) {
  TempDir dir("ppo");
  const std::string common =
      " --env CartPole-v1 --processes 1 --eval-n-runs 1 --quiet";
  const ProcessRun run = TrainA3C(
      "--outdir " + dir.str() + common +
      " --algorithm ppo --t-max 8 --epochs 2 --minibatches 4 --clip-range "
      "0.1 --clip-value-range 0.5 --steps 3000 --eval-interval 1000");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path folder = RunFolder(run);
  EXPECT_EQ(RecordedOption(folder, "algorithm"), "ppo");
  EXPECT_EQ(RecordedOption(folder, "epochs"), "2");
  EXPECT_EQ(RecordedOption(folder, "clip-value-range"), "0.5");
  const fs::path finish = folder / "3000_finish";
  const proto::Checkpoint checkpoint = LoadCheckpointDir(finish.string());
  EXPECT_EQ(checkpoint.agent_type(), "ppo");
  EXPECT_GT(checkpoint.parameters_size(), 0);
  EXPECT_EQ(checkpoint.optimizer_state_size(), checkpoint.parameters_size());
  const auto header =
      testing::Split(ReadLines(folder / "scores.txt").at(0), '\t');
  EXPECT_NE(std::find(header.begin(), header.end(), "approx_kl"), header.end());
  EXPECT_NE(std::find(header.begin(), header.end(), "clip_fraction"),
            header.end());
  const ProcessRun demo =
      TrainA3C("--demo --load " + finish.string() + " --eval-n-runs 1");
  EXPECT_EQ(demo.status, 0) << demo.output;
  const ProcessRun resumed =
      TrainA3C("--resume " + finish.string() + " --steps 4000");
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_EQ(LoadCheckpointDir((folder / "4000_finish").string()).agent_type(),
            "ppo");
  const ProcessRun changed =
      TrainA3C("--resume " + finish.string() + " --steps 5000 --algorithm a3c");
  EXPECT_EQ(changed.status, 2) << changed.output;
  EXPECT_NE(changed.output.find("--algorithm=a3c is invalid; accepted: ppo"),
            std::string::npos)
      << changed.output;
  ExpectRefusedInOneLine(
      dir,
      {"--algorithm ppo --policy-target gae", "--algorithm ppo --fresh-params",
       "--epochs 2", "--algorithm ppo --epochs 0",
       "--algorithm ppo --clip-range 1.5", "--algorithm dqn"});
}

// --optimizer adam: recorded; checkpoints hold m, v and the step count,
// which a resume continues; --demo --load takes the recorded optimizer; a
// resume cannot change it; bad values exit 2 with one line.
TEST(TrainA3CTest, AdamIsRecordedCheckpointedAndResumed) {
  TempDir dir("adam");
  const std::string common =
      " --env CartPole-v1 --processes 1 --eval-n-runs 1 --quiet";
  const ProcessRun run =
      TrainA3C("--outdir " + dir.str() + common +
               " --optimizer adam --lr 0.001 --adam-beta2 0.99 --steps 3000 "
               "--eval-interval 1000");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path folder = RunFolder(run);
  EXPECT_EQ(RecordedOption(folder, "optimizer"), "adam");
  EXPECT_EQ(RecordedOption(folder, "adam-beta2"), "0.99");
  const fs::path finish = folder / "3000_finish";
  const proto::Checkpoint checkpoint = LoadCheckpointDir(finish.string());
  EXPECT_EQ(checkpoint.optimizer_state_size(),
            2 * checkpoint.parameters_size() + 1);
  float step_at_3000 = 0;
  ReadFloatTensor(checkpoint.optimizer_state(), "adam/step", {1},
                  &step_at_3000);
  EXPECT_GT(step_at_3000, 0);
  const ProcessRun demo =
      TrainA3C("--demo --load " + finish.string() + " --eval-n-runs 1");
  EXPECT_EQ(demo.status, 0) << demo.output;
  const ProcessRun resumed =
      TrainA3C("--resume " + finish.string() + " --steps 4000");
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  float step_at_4000 = 0;
  ReadFloatTensor(
      LoadCheckpointDir((folder / "4000_finish").string()).optimizer_state(),
      "adam/step", {1}, &step_at_4000);
  EXPECT_GT(step_at_4000, step_at_3000);
  const ProcessRun changed = TrainA3C("--resume " + finish.string() +
                                      " --steps 5000 --optimizer rmsprop");
  EXPECT_EQ(changed.status, 2) << changed.output;
  EXPECT_NE(changed.output.find("--optimizer=rmsprop is invalid; accepted: "
                                "adam, the resumed run's value"),
            std::string::npos)
      << changed.output;
  ExpectRefusedInOneLine(
      dir, {"--optimizer sgd", "--adam-beta1 1", "--adam-epsilon 0"});
}

// Steps near INT64_MAX (a --step-offset 807 steps before it): the schedule
// is due every 100,000 steps from the offset's multiple, so nothing is due
// before the budget ends; it used to overflow and evaluate on every step,
// writing 34 rows out of order (issue 24).
TEST(TrainA3CTest, TheEvaluationScheduleDoesNotOverflowNearTheLastStep) {
  TempDir dir("schedule_overflow");
  const ProcessRun first =
      TrainA3C("--outdir " + dir.str() +
               " --processes 1 --steps 1000 --eval-interval 0 --quiet");
  ASSERT_EQ(first.status, 0) << first.output;
  const ProcessRun run = TrainA3C(
      "--outdir " + dir.str() + " --load " +
      (RunFolder(first) / "1000_finish").string() +
      " --processes 2 --steps 9223372036854775807 --step-offset "
      "9223372036854775000 --eval-interval 100000 --eval-n-runs 1 --quiet");
  ASSERT_EQ(run.status, 0) << run.output;
  const std::vector<std::string> lines =
      ReadLines(RunFolder(run) / "scores.txt");
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.size(), 1u) << "rows after the header: " << lines.size() - 1;
}

// configs/acrobot.conf, the Acrobot-v1 preset (issue 26 part 5): a short
// run of it records its settings.
// A short run of configs/<name>: its run folder (the run must succeed).
fs::path RunPreset(const TempDir& dir, const std::string& name,
                   const std::string& steps, const std::string& flags = "") {
  const ProcessRun run =
      TrainA3C("--config " + std::string(ASYNCRL_SOURCE_DIR) + "/configs/" +
               name + " --outdir " + dir.str() + " --processes 1 --steps " +
               steps + " --quiet --final-eval-n-runs 0 " + flags);
  EXPECT_EQ(run.status, 0) << run.output;
  return RunFolder(run);
}

TEST(TrainA3CTest, AcrobotPresetRecordsItsSettings) {
  TempDir dir("acrobot_preset");
  const fs::path folder = RunPreset(dir, "acrobot.conf", "300");
  EXPECT_EQ(RecordedOption(folder, "env"), "Acrobot-v1");
  EXPECT_EQ(RecordedOption(folder, "normalize-rewards"), "true");
  EXPECT_EQ(RecordedOption(folder, "successful-score"), "-80");
  EXPECT_TRUE(LoadCheckpointDir((folder / "300_finish").string())
                  .has_reward_statistics());
}

TEST(TrainA3CTest, CartpolePresetRecordsItsSettings) {
  TempDir dir("cartpole_preset");
  const fs::path folder = RunPreset(dir, "cartpole.conf", "300");
  EXPECT_EQ(RecordedOption(folder, "env"), "CartPole-v1");
  EXPECT_EQ(RecordedOption(folder, "normalize-observations"), "true");
  EXPECT_EQ(RecordedOption(folder, "normalize-rewards"), "true");
  EXPECT_EQ(RecordedOption(folder, "successful-score"), "475");
  const proto::Checkpoint checkpoint =
      LoadCheckpointDir((folder / "300_finish").string());
  EXPECT_TRUE(checkpoint.has_observation_statistics());
  EXPECT_TRUE(checkpoint.has_reward_statistics());
}

TEST(TrainA3CTest, PendulumPresetRecordsItsSettings) {
  TempDir dir("pendulum_preset");
  const fs::path folder = RunPreset(dir, "pendulum.conf", "600");
  EXPECT_EQ(RecordedOption(folder, "env"), "Pendulum-v1");
  EXPECT_EQ(RecordedOption(folder, "algorithm"), "ppo");
  EXPECT_EQ(RecordedOption(folder, "optimizer"), "adam");
  EXPECT_EQ(RecordedOption(folder, "gamma"), "0.98");
  EXPECT_EQ(RecordedOption(folder, "lr"), "0.0005");
  EXPECT_EQ(RecordedOption(folder, "lr-decay"), "true");
  // Its whole budget: the agent it ends with is the one measured.
  EXPECT_EQ(RecordedOption(folder, "successful-score"), "(not recorded)");
  const proto::Checkpoint checkpoint =
      LoadCheckpointDir((folder / "600_finish").string());
  EXPECT_EQ(checkpoint.agent_type(), "ppo");
  EXPECT_TRUE(checkpoint.has_reward_statistics());
}

// The MinAtar presets: Breakout's names its game, the shared one takes the
// game from the command line; both keep their entropy bonus.
TEST(TrainA3CTest, MinatarPresetsRecordTheirSettings) {
  TempDir dir("minatar_presets");
  const fs::path breakout = RunPreset(dir, "minatar-breakout.conf", "300");
  EXPECT_EQ(RecordedOption(breakout, "env"), "MinAtar/Breakout");
  EXPECT_DOUBLE_EQ(std::stod(RecordedOption(breakout, "lr")), 4e-3);
  EXPECT_DOUBLE_EQ(std::stod(RecordedOption(breakout, "beta")), 0.02);
  const ProcessRun run =
      TrainA3C("--config " + std::string(ASYNCRL_SOURCE_DIR) +
               "/configs/minatar.conf --env MinAtar/SpaceInvaders --outdir " +
               dir.str() + " --processes 1 --steps 300 --quiet " +
               "--final-eval-n-runs 0");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path shared = RunFolder(run);
  EXPECT_EQ(RecordedOption(shared, "env"), "MinAtar/SpaceInvaders");
  EXPECT_DOUBLE_EQ(std::stod(RecordedOption(shared, "lr")), 2e-3);
  EXPECT_DOUBLE_EQ(std::stod(RecordedOption(shared, "beta")), 0.02);
}

// The MinAtar PPO preset (Asterix, Seaquest, Space Invaders) is PPO with
// the shared Adam, a decaying rate and greedy evaluations, the game from
// the command line; its run of 600 steps (more than one worker's rollout
// of 32 steps of 16 environments) ends in a PPO checkpoint.
TEST(TrainA3CTest, MinatarPpoPresetRecordsItsSettings) {
  TempDir dir("minatar_ppo_preset");
  const fs::path folder =
      RunPreset(dir, "minatar-ppo.conf", "600", "--env MinAtar/Seaquest");
  const std::vector<std::pair<std::string, std::string>> text = {
      {"env", "MinAtar/Seaquest"},
      {"algorithm", "ppo"},
      {"optimizer", "adam"},
      {"lr-decay", "true"},
      {"act-deterministically", "true"},
      {"t-max", "32"},
      {"epochs", "3"},
      {"minibatches", "4"}};
  for (const auto& [key, want] : text) {
    EXPECT_EQ(RecordedOption(folder, key), want) << key;
  }
  EXPECT_DOUBLE_EQ(std::stod(RecordedOption(folder, "lr")), 1e-3);
  EXPECT_DOUBLE_EQ(std::stod(RecordedOption(folder, "beta")), 0.02);
  EXPECT_EQ(LoadCheckpointDir((folder / "600_finish").string()).agent_type(),
            "ppo");
}

// configs/chainerrl-gym.conf is the reference's gym example setting for
// setting (issue 25: it ran 16 environments per process, the file predating
// that default): what a run from it records, value by value.
TEST(TrainA3CTest, ChainerrlGymConfigIsTheReferenceExample) {
  TempDir dir("chainerrl_gym");
  const std::string config =
      std::string(ASYNCRL_SOURCE_DIR) + "/configs/chainerrl-gym.conf";
  // A short run of it (the command line wins over the file).
  const ProcessRun run =
      TrainA3C("--config " + config + " --outdir " + dir.str() +
               " --processes 1 --steps 2000 --eval-interval 1000"
               " --eval-n-runs 1 --quiet");
  ASSERT_EQ(run.status, 0) << run.output;
  const fs::path folder = RunFolder(run);
  // ChainerRL examples/gym/train_a3c_gym.py: its argparse defaults, the
  // agent's gamma, RMSpropAsync(alpha 0.99), GradientClipping(40).
  const std::vector<std::pair<std::string, std::string>> text = {
      {"env", "CartPole-v0"},
      {"arch", "fc-softmax"},
      {"policy-target", "nstep"},
      {"value-target", "nstep"}};
  for (const auto& [key, want] : text) {
    EXPECT_EQ(RecordedOption(folder, key), want) << key;
  }
  const std::vector<std::pair<std::string, double>> numbers = {
      {"seed", 0},
      {"t-max", 5},
      {"beta", 0.01},
      {"gamma", 0.99},
      {"lr", 7e-4},
      {"rmsprop-epsilon", 0.1},
      {"rmsprop-alpha", 0.99},
      {"weight-decay", 0},
      {"max-grad-norm", 40},
      {"lr-warmup-updates", 0},
      {"lag-tolerance", 0},
      {"reward-scale-factor", 0.01},
      {"envs-per-process", 1}};
  for (const auto& [key, want] : numbers) {
    EXPECT_DOUBLE_EQ(std::stod(RecordedOption(folder, key)), want) << key;
  }
  // The two the short run overrode, as the file gives them.
  std::map<std::string, std::string> file;
  for (const std::string& line : ReadLines(config)) {
    const size_t eq = line.find(" = ");
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    file[line.substr(0, eq)] = line.substr(eq + 3);
  }
  EXPECT_EQ(file["steps"], "80000000");
  EXPECT_EQ(file["eval-interval"], "100000");
  EXPECT_EQ(file["eval-n-runs"], "10");
}

TEST(TrainA3CTest, ConfigFileSetsOptionsAndTheCommandLineWins) {
  TempDir dir("config");
  const fs::path conf = dir.path() / "run.conf";
  {
    std::ofstream out(conf);
    out << "# a comment\nsteps = 1500\nprocesses = 1\neval-interval = 0\n"
           "t-max = 7  # trailing comment\nlr-decay = true\nprofile = false\n";
  }
  const ProcessRun r = TrainA3C("--config " + conf.string() + " --outdir " +
                                (dir.path() / "out").string() +
                                " --t-max 3 --log-level warning");
  ASSERT_EQ(r.status, 0) << r.output;
  const fs::path run = RunFolder(r);
  EXPECT_TRUE(fs::exists(run / "1500_finish"));
  const auto json = ReadLines(run / "args.json");
  EXPECT_NE(std::find(json.begin(), json.end(), "  \"t-max\": \"3\","),
            json.end());
}

// MountainCar's goal moved to -0.4 (where episodes start, between -0.6 and
// -0.4): episodes end within a few steps instead of at the 200-step limit,
// in training and in evaluation, set from a config file and from the
// command line (which replaces the file's list).
TEST(TrainA3CTest, EnvParamsReachTrainingAndEvaluationEnvironments) {
  TempDir dir("env_param");
  const fs::path conf = dir.path() / "run.conf";
  {
    std::ofstream out(conf);
    out << "env = MountainCar-v0\nenv-param = goal_position=-0.4\n"
           "env-param = force=0.002\n";
  }
  auto mean_score = [](const fs::path& run) {
    const auto lines = ReadLines(run / "scores.txt");
    EXPECT_GE(lines.size(), 2u);
    std::istringstream row(lines.back());
    double steps, episodes, elapsed, mean;
    row >> steps >> episodes >> elapsed >> mean;
    return mean;
  };
  const std::string common =
      " --processes 1 --steps 2000 --eval-interval "
      "1000 --eval-n-runs 3 --log-level warning";
  const ProcessRun near = TrainA3C("--config " + conf.string() + " --outdir " +
                                   (dir.path() / "near").string() + common);
  ASSERT_EQ(near.status, 0) << near.output;
  const fs::path run = RunFolder(near);
  // Every evaluation episode ends well before the 200-step limit (the far
  // goal's runs below all hit it), whatever 2,000 steps of training made of
  // the policy.
  EXPECT_GT(mean_score(run), -150.0);
  const auto json = ReadLines(run / "args.json");
  EXPECT_NE(std::find(json.begin(), json.end(),
                      "  \"env-param\": \"goal_position=-0.4,force=0.002\","),
            json.end());

  // The command line's list replaces the file's: the goal is back at 0.5,
  // which an untrained agent does not reach in 200 steps.
  const ProcessRun far =
      TrainA3C("--config " + conf.string() + " --env-param force=0.002" +
               " --outdir " + (dir.path() / "far").string() + common);
  ASSERT_EQ(far.status, 0) << far.output;
  EXPECT_EQ(mean_score(RunFolder(far)), -200.0);
}

// A curriculum whose lessons advance by progress (at 30% and 60% of the
// run): each advance is logged once, scores.txt has the lessons, TensorBoard
// the lesson and value, checkpoints keep the lessons and --resume continues
// from them. One worker with one environment, so that episode ends (where
// lessons advance and evaluations start) fall on fixed steps: MountainCar's
// 200-step episodes end at multiples of 200 (with two workers of 16
// environments the first evaluation's step, and so its lesson, depended on
// how far ahead one worker ran).
TEST(TrainA3CTest, CurriculumAdvancesIsVisibleAndResumes) {
  TempDir dir("curriculum");
  const fs::path yaml = dir.path() / "goal.yaml";
  {
    std::ofstream out(yaml);
    out << "environment_parameters:\n"
           "  goal_position:\n"
           "    curriculum:\n"
           "      - name: near\n"
           "        completion_criteria: {measure: progress, threshold: 0.3}\n"
           "        value: -0.3\n"
           "      - name: middle\n"
           "        completion_criteria: {measure: progress, threshold: 0.6}\n"
           "        value: 0.1\n"
           "      - name: far\n"
           "        value: 0.5\n"
           "  force:\n"
           "    sampler_type: uniform\n"
           "    sampler_parameters: {min_value: 0.001, max_value: 0.002}\n";
  }
  const ProcessRun first = TrainA3C(
      "--outdir " + dir.str() + " --env MountainCar-v0 --curriculum " +
      yaml.string() +
      " --processes 1 --envs-per-process 1 --steps 20000"
      " --eval-interval 5000 --eval-n-runs 1 --checkpoint-interval 5000");
  ASSERT_EQ(first.status, 0) << first.output;
  const fs::path run = RunFolder(first);
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos;
         at = text.find(what, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count(first.output,
                  "curriculum: lesson 2 of 3 of goal_position "
                  "('middle'): -0.3 -> 0.1 at step "),
            1u)
      << first.output;
  EXPECT_EQ(count(first.output,
                  "curriculum: lesson 3 of 3 of goal_position "
                  "('far'): 0.1 -> 0.5 at step "),
            1u)
      << first.output;
  const auto scores = ReadLines(run / "scores.txt");
  ASSERT_EQ(scores.size(), 5u);
  EXPECT_EQ(scores[0].substr(scores[0].rfind('\t') + 1), "lessons");
  EXPECT_EQ(scores[1].substr(scores[1].rfind('\t') + 1), "goal_position=1/3");
  EXPECT_EQ(scores[4].substr(scores[4].rfind('\t') + 1), "goal_position=3/3");
  // Checkpoints keep the lesson of their moment.
  const proto::Checkpoint at5000 =
      LoadCheckpointDir((run / "5000_checkpoint").string());
  ASSERT_EQ(at5000.curriculum_size(), 2);
  EXPECT_EQ(at5000.curriculum(0).parameter(), "goal_position");
  EXPECT_EQ(at5000.curriculum(0).lesson(), 0);
  const proto::Checkpoint at15000 =
      LoadCheckpointDir((run / "15000_checkpoint").string());
  EXPECT_EQ(at15000.curriculum(0).lesson(), 2);
  std::string events_path;
  for (const auto& e : fs::directory_iterator(run)) {
    if (e.path().filename().string().rfind("events.out.tfevents", 0) == 0) {
      events_path = e.path().string();
    }
  }
  std::set<std::string> tags;
  for (const auto& event : ReadEventFile(events_path)) {
    for (const auto& v : event.summary().value()) tags.insert(v.tag());
  }
  for (const char* tag :
       {"curriculum/goal_position/lesson", "curriculum/goal_position/value",
        "curriculum/force/lesson", "curriculum/force/value"}) {
    EXPECT_EQ(tags.count(tag), 1u) << tag;
  }

  // Resumed at 15000 of a 40000-step run: progress 0.375 is past the first
  // threshold only, but the checkpoint's lesson (the last) holds, and no
  // advance is reported again. The file changed since: a lesson fewer is
  // refused (its lessons used to be matched by name and clamped silently),
  // and nothing of the run changes; another value is said.
  const auto scores_before = ReadLines(run / "scores.txt");
  auto write_goal = [&](const std::string& far) {
    std::ofstream out(yaml);
    out << "environment_parameters:\n"
           "  goal_position:\n"
           "    curriculum:\n"
           "      - name: near\n"
           "        completion_criteria: {measure: progress, threshold: 0.3}\n"
           "        value: -0.3\n"
           "      - name: middle\n"
        << (far.empty() ? ""
                        : "        completion_criteria: {measure: progress, "
                          "threshold: 0.6}\n")
        << "        value: 0.1\n"
        << far
        << "  force:\n"
           "    sampler_type: uniform\n"
           "    sampler_parameters: {min_value: 0.001, max_value: 0.002}\n";
  };
  write_goal("");
  const ProcessRun fewer =
      TrainA3C("--resume " + (run / "15000_checkpoint").string() +
               " --steps 40000 --quiet");
  EXPECT_EQ(fewer.status, 2) << fewer.output;
  ASSERT_EQ(fewer.Lines().size(), 1u) << fewer.output;
  EXPECT_EQ(fewer.Lines()[0],
            "train_a3c: --curriculum=" + yaml.string() +
                " is invalid; accepted: a file with the resumed run's "
                "parameters and lessons (parameter 'goal_position': lessons "
                "near, middle, far in the checkpoint, near, middle now; start "
                "a new run with --load to change them)");
  EXPECT_EQ(ReadLines(run / "scores.txt"), scores_before);
  write_goal("      - name: far\n        value: 0.45\n");
  const ProcessRun second =
      TrainA3C("--resume " + (run / "15000_checkpoint").string() +
               " --steps 40000 --quiet");
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_EQ(second.output.find("curriculum: lesson"), std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find(
                "resume: changed curriculum parameter goal_position: near: "
                "-0.3 until progress > 0.3 over 0 episodes, smoothed; middle: "
                "0.1 until progress > 0.6 over 0 episodes, smoothed; far: 0.5 "
                "-> near: -0.3 until progress > 0.3 over 0 episodes, "
                "smoothed; middle: 0.1 until progress > 0.6 over 0 episodes, "
                "smoothed; far: 0.45\n"),
            std::string::npos)
      << second.output;
  const proto::Checkpoint finish =
      LoadCheckpointDir((run / "40000_finish").string());
  EXPECT_EQ(finish.curriculum(0).lesson(), 2);
  const auto resumed = ReadLines(run / "scores.txt");
  EXPECT_EQ(resumed.back().substr(resumed.back().rfind('\t') + 1),
            "goal_position=3/3");
}

// A FIFO with no writer as --config or --curriculum is refused at once
// (it used to block for ever with no message).
TEST(TrainA3CTest, AFifoAsAnInputFileIsRefusedWithoutBlocking) {
  TempDir dir("fifo");
  const fs::path fifo = dir.path() / "input";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string flag : {"--config", "--curriculum"}) {
    const ProcessRun r = TrainA3C(flag + " " + fifo.string() + " --outdir " +
                                  (dir.path() / "out").string());
    EXPECT_EQ(r.status, 2) << r.output;
    ASSERT_EQ(r.Lines().size(), 1u) << r.output;
    EXPECT_NE(r.Lines()[0].find("(it is a FIFO)"), std::string::npos)
        << r.output;
  }
}

TEST(TrainA3CTest, AMalformedCurriculumExitsTwoWithItsLine) {
  TempDir dir("bad_curriculum");
  const fs::path yaml = dir.path() / "bad.yaml";
  {
    std::ofstream out(yaml);
    out << "environment_parameters:\n  length:\n    sampler_type: uniform\n"
           "    sampler_parameters: {min_value: 0.3}\n";
  }
  const fs::path outdir = dir.path() / "out";
  for (const std::string& args :
       {"--curriculum " + yaml.string(),
        std::string("--curriculum /nonexistent.yaml")}) {
    const ProcessRun r = TrainA3C(args + " --outdir " + outdir.string());
    EXPECT_EQ(r.status, 2) << r.output;
    ASSERT_EQ(r.Lines().size(), 1u) << r.output;
    EXPECT_FALSE(fs::exists(outdir));
    if (args.find("nonexistent") != std::string::npos) {
      EXPECT_EQ(r.Lines()[0],
                "train_a3c: --curriculum: /nonexistent.yaml: cannot be read; "
                "accepted: a readable regular file of at most 1048576 bytes "
                "(it is missing)");
    } else {
      EXPECT_EQ(r.Lines()[0], "train_a3c: --curriculum: " + yaml.string() +
                                  ":4: parameter 'length': uniform needs "
                                  "max_value");
    }
  }
  // A parameter the environment does not declare.
  {
    std::ofstream out(yaml);
    out << "environment_parameters:\n  gravity: 9.8\n";
  }
  const ProcessRun r = TrainA3C("--curriculum " + yaml.string() + " --outdir " +
                                outdir.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("parameter 'gravity' is not one CartPole declares"),
            std::string::npos)
      << r.output;
}

TEST(TrainA3CTest, RunWritesProfilesTimersEventsAndCurve) {
  TempDir dir("observe");
  const ProcessRun r = TrainA3C(
      "--outdir " + dir.str() +
      " --processes 2 --steps 20000 --eval-interval 5000 --eval-n-runs 2"
      " --profile --log-level debug");
  ASSERT_EQ(r.status, 0) << r.output;
  const fs::path run = RunFolder(r);
  // Worker 0's episode log at debug level as the reference's two lines,
  // the saves at info, and the timer summary.
  EXPECT_NE(r.output.find("[debug] outdir:" + run.string() + " global_step:"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[debug] statistics:[('average_value', "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[info] Saved the agent to " +
                          (run / "20000_finish").string() + "\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[info] Saved the agent to " +
                          (run / "best").string() + "\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("time per timer, summed over 2 workers:"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("      optimizer"), std::string::npos) << r.output;
  // The agent's statistics after the timers, one line each.
  EXPECT_NE(r.output.find("agent statistics over the last 100 updates, mean "
                          "of 2 workers (max for *_max):"),
            std::string::npos)
      << r.output;
  for (const char* name : {"policy_loss", "value_loss", "grad_norm",
                           "policy_lag_max", "importance_ratio"}) {
    EXPECT_NE(r.output.find("\n  " + std::string(name) + " "),
              std::string::npos)
        << name;
  }
  int profiles = 0;
  std::string events_path;
  for (const auto& e : fs::directory_iterator(run)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("profile-", 0) == 0) {
      ++profiles;
      EXPECT_GT(fs::file_size(e.path()), 0u) << name;
    }
    if (name.rfind("events.out.tfevents.", 0) == 0) events_path = e.path();
  }
  EXPECT_EQ(profiles, 3) << "two workers and the parent";
  for (int i = 0; i < 2; ++i) {
    const auto timers =
        ReadLines(run / ("timers-" + std::to_string(i) + ".json"));
    ASSERT_FALSE(timers.empty());
    const Json tree = Json::Parse([&] {
      std::string all;
      for (const auto& l : timers) all += l + "\n";
      return all;
    }());
    EXPECT_GT(tree.at("children")
                  .at("agent")
                  .at("children")
                  .at("update")
                  .at("count")
                  .number(),
              0);
  }
  ASSERT_FALSE(events_path.empty());
  std::set<std::string> tags;
  for (const auto& event : ReadEventFile(events_path)) {
    for (const auto& v : event.summary().value()) tags.insert(v.tag());
  }
  for (const char* tag :
       {"eval/mean", "eval/median", "eval/stdev", "eval/max", "eval/min",
        "train/episode_return", "train/episode_length", "train/lr",
        "train/steps_per_s", "agent/average_value", "agent/average_entropy",
        "agent/policy_loss", "agent/value_loss", "agent/entropy",
        "agent/grad_norm", "agent/policy_lag", "agent/policy_lag_max",
        "agent/importance_ratio", "agent/ratio_clipped"}) {
    EXPECT_EQ(tags.count(tag), 1u) << tag;
  }
  EXPECT_TRUE(fs::exists(run / "scores.svg"));
  // google-pprof reads the worker profiles.
  if (std::system("command -v google-pprof > /dev/null") == 0) {
    const ProcessRun pprof =
        Exec("google-pprof", std::string("--text ") + TRAIN_A3C_BIN + " " +
                                 (run / ("profile-0-*.prof")).string() +
                                 " 2>/dev/null | head -5");
    EXPECT_NE(pprof.output.find("Total:"), std::string::npos) << pprof.output;
  }
}

// A periodic <t>_checkpoint/ holds step t: the shared counter it used to
// store also counts the steps the other worker had claimed (up to 16 at a
// time here) and not yet taken, so a resume from it skipped them.
TEST(TrainA3CTest, PeriodicCheckpointsHoldTheStepTheyAreNamedAfter) {
  TempDir dir("periodic");
  const ProcessRun run_process =
      TrainA3C("--outdir " + dir.str() +
               " --processes 2 --envs-per-process 16 --steps 40000"
               " --eval-interval 1000000 --checkpoint-interval 1000"
               " --keep-checkpoints 100 --quiet");
  ASSERT_EQ(run_process.status, 0) << run_process.output;
  const fs::path run = RunFolder(run_process);
  int checked = 0;
  for (int64_t t = 1000; t < 40000; t += 1000) {
    const fs::path checkpoint = run / (std::to_string(t) + "_checkpoint");
    ASSERT_TRUE(fs::exists(checkpoint)) << checkpoint;
    EXPECT_EQ(LoadCheckpointDir(checkpoint.string()).global_step(), t)
        << checkpoint;
    ++checked;
  }
  EXPECT_EQ(checked, 39);
}

TEST(TrainA3CTest, ResumeContinuesTheRunInItsFolder) {
  TempDir dir("resume");
  const ProcessRun first = TrainA3C(
      "--outdir " + dir.str() +
      " --processes 2 --steps 6000 --eval-interval 2000 --eval-n-runs 2"
      " --checkpoint-interval 1000 --keep-checkpoints 3 --lr 0.001 --quiet");
  ASSERT_EQ(first.status, 0) << first.output;
  const fs::path run = RunFolder(first);
  // Periodic checkpoints: the newest three are kept.
  for (int t : {1000, 2000, 3000}) {
    EXPECT_FALSE(fs::exists(run / (std::to_string(t) + "_checkpoint"))) << t;
  }
  for (int t : {4000, 5000, 6000}) {
    EXPECT_TRUE(fs::exists(run / (std::to_string(t) + "_checkpoint"))) << t;
  }
  const auto scores_before = ReadLines(run / "scores.txt");

  const ProcessRun second =
      TrainA3C("--resume " + (run / "6000_finish").string() +
               " --steps 9000 --lr 0.0005 --quiet");
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_EQ(second.Lines()[0],
            "results in " + run.string() + " (resuming from " +
                (run / "6000_finish").string() + " at step 6000)");
  EXPECT_NE(second.output.find("resume: changed lr: 0.001 -> 0.0005"),
            std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("resume: changed steps: 6000 -> 9000"),
            std::string::npos);
  // The run's other options (processes, eval, checkpoints) carried over.
  EXPECT_EQ(second.output.find("changed processes"), std::string::npos);
  EXPECT_TRUE(fs::exists(run / "9000_finish"));
  EXPECT_TRUE(fs::exists(run / "9000_checkpoint"));
  EXPECT_FALSE(fs::exists(run / "6000_checkpoint"));
  const proto::Checkpoint finish =
      LoadCheckpointDir((run / "9000_finish").string());
  EXPECT_EQ(finish.global_step(), 9000);
  EXPECT_EQ(finish.metadata().config().at("lr"), "0.0005");
  // scores.txt was appended to, not rewritten; the schedule continued.
  const auto scores_after = ReadLines(run / "scores.txt");
  ASSERT_GT(scores_after.size(), scores_before.size());
  for (size_t i = 0; i < scores_before.size(); ++i) {
    EXPECT_EQ(scores_after[i], scores_before[i]);
  }
  EXPECT_GE(std::stoll(scores_after[scores_before.size()]), 8000);
  // The elapsed column continues the run's time instead of restarting.
  EXPECT_GT(
      std::stod(testing::Split(scores_after[scores_before.size()], '\t')[2]),
      std::stod(testing::Split(scores_before.back(), '\t')[2]));
  EXPECT_EQ(ReadLines(run / "command.txt").size(), 2u);
  // The step-size remedies for many workers are recorded, so a resume
  // steps as the run did.
  EXPECT_EQ(RecordedOption(run, "lr-warmup-updates"), "500");
  EXPECT_EQ(RecordedOption(run, "lag-tolerance"), "8");

  // Changing the environment or going backwards is refused, nothing written.
  const auto files_before = std::distance(fs::directory_iterator(run), {});
  const ProcessRun env_change =
      TrainA3C("--resume " + (run / "9000_finish").string() +
               " --env Acrobot-v1 --steps 20000");
  EXPECT_EQ(env_change.status, 2);
  EXPECT_NE(env_change.output.find("--env=Acrobot-v1 is invalid; accepted: "
                                   "CartPole-v1, the resumed run's value"),
            std::string::npos)
      << env_change.output;
  const ProcessRun backwards =
      TrainA3C("--resume " + (run / "9000_finish").string() + " --steps 9000");
  EXPECT_EQ(backwards.status, 2);
  EXPECT_NE(backwards.output.find("--steps=9000 is invalid; accepted: more "
                                  "than the checkpoint's step 9000"),
            std::string::npos)
      << backwards.output;
  EXPECT_EQ(std::distance(fs::directory_iterator(run), {}), files_before);

  // A run recorded before the warm-up and the lag scaling existed (its
  // args.json without their keys) stepped without them: resumed, it goes
  // on so, unless the command line sets them.
  {
    std::string args;
    for (const std::string& line : ReadLines(run / "args.json")) {
      if (line.find("\"lr-warmup-updates\"") == std::string::npos &&
          line.find("\"lag-tolerance\"") == std::string::npos) {
        args += line + "\n";
      }
    }
    ASSERT_LT(args.size(), testing::ReadFile(run / "args.json").size());
    std::ofstream(run / "args.json") << args;
  }
  const ProcessRun old = TrainA3C("--resume " + (run / "9000_finish").string() +
                                  " --steps 10000 --lag-tolerance 4 --quiet");
  ASSERT_EQ(old.status, 0) << old.output;
  EXPECT_EQ(RecordedOption(run, "lr-warmup-updates"), "0");
  EXPECT_EQ(RecordedOption(run, "lag-tolerance"), "4");
}

// Every kind of damage to a checkpoint, on the binary: --resume and --load
// exit 2 with one line naming the file and the problem, and write nothing
// (the run's files stay as they were; --load makes no run folder).
TEST(TrainA3CTest, EveryKindOfDamagedCheckpointIsRefusedInOneLine) {
  TempDir dir("damaged");
  const ProcessRun first =
      TrainA3C("--outdir " + (dir.path() / "out").string() +
               " --processes 1 --steps 1000 --eval-interval 1000"
               " --eval-n-runs 1 --quiet");
  ASSERT_EQ(first.status, 0) << first.output;
  const fs::path run = RunFolder(first);
  const std::string good =
      testing::ReadFile(run / "1000_finish" / kCheckpointFileName);
  proto::Checkpoint future = LoadCheckpointDir((run / "1000_finish").string());
  future.set_format_version(99);
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x40;
  const std::vector<std::pair<std::string, std::string>> damaged = {
      {good.substr(0, good.size() - 7), "truncated"},
      {good.substr(0, 10), "truncated: 10 bytes, shorter than the 24-byte"},
      {flipped, "corrupt: CRC-32 mismatch"},
      {std::string(100, 'x'), "not an asyncrl checkpoint (bad magic)"},
      {testing::FrameCheckpoint(std::string("\xff\xff\xff\xff\xff", 5)),
       "not a valid Checkpoint"},
      {testing::FrameCheckpoint(future.SerializeAsString()),
       "format version 99 is not supported"},
  };
  const auto args_before = testing::ReadFile(run / "args.json");
  const auto scores_before = testing::ReadFile(run / "scores.txt");
  for (size_t i = 0; i < damaged.size(); ++i) {
    SCOPED_TRACE(damaged[i].second);
    const fs::path ckpt = run / ("damaged_" + std::to_string(i));
    fs::create_directories(ckpt);
    std::ofstream(ckpt / kCheckpointFileName, std::ios::binary)
        << damaged[i].first;
    const ProcessRun resumed =
        TrainA3C("--resume " + ckpt.string() + " --steps 2000 --quiet");
    EXPECT_EQ(resumed.status, 2) << resumed.output;
    ASSERT_EQ(resumed.Lines().size(), 1u) << resumed.output;
    EXPECT_NE(resumed.output.find(ckpt.string()), std::string::npos)
        << resumed.output;
    EXPECT_NE(resumed.output.find(damaged[i].second), std::string::npos)
        << resumed.output;
    EXPECT_EQ(testing::ReadFile(run / "args.json"), args_before);
    EXPECT_EQ(testing::ReadFile(run / "scores.txt"), scores_before);
    const fs::path load_out = dir.path() / ("load_" + std::to_string(i));
    const ProcessRun loaded =
        TrainA3C("--load " + ckpt.string() + " --outdir " + load_out.string() +
                 " --steps 2000 --quiet");
    EXPECT_EQ(loaded.status, 2) << loaded.output;
    ASSERT_EQ(loaded.Lines().size(), 1u) << loaded.output;
    EXPECT_NE(loaded.output.find(damaged[i].second), std::string::npos)
        << loaded.output;
    EXPECT_FALSE(fs::exists(load_out));
  }
}

// An output directory that cannot be created (under a regular file, or in
// a folder this user cannot write): exit 2, one line naming --outdir,
// nothing written.
TEST(TrainA3CTest, AnOutdirThatCannotBeCreatedExitsTwoInOneLine) {
  TempDir dir("outdir_fails");
  const fs::path file = dir.path() / "a_file";
  std::ofstream(file) << "x";
  const ProcessRun under_file =
      TrainA3C("--outdir " + (file / "out").string() + " --steps 1000 --quiet");
  EXPECT_EQ(under_file.status, 2) << under_file.output;
  ASSERT_EQ(under_file.Lines().size(), 1u) << under_file.output;
  EXPECT_NE(under_file.output.find("--outdir=" + (file / "out").string()),
            std::string::npos)
      << under_file.output;
  EXPECT_EQ(testing::ReadFile(file), "x");
  if (geteuid() == 0) return;  // root writes anywhere.
  const fs::path locked = dir.path() / "locked";
  fs::create_directories(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  const ProcessRun denied = TrainA3C("--outdir " + (locked / "out").string() +
                                     " --steps 1000 --quiet");
  fs::permissions(locked, fs::perms::owner_all);
  EXPECT_EQ(denied.status, 2) << denied.output;
  ASSERT_EQ(denied.Lines().size(), 1u) << denied.output;
  EXPECT_NE(denied.output.find("--outdir=" + (locked / "out").string()),
            std::string::npos)
      << denied.output;
  EXPECT_TRUE(fs::is_empty(locked));
}

TEST(TrainA3CTest, CorruptResumeCheckpointIsRejectedWithExitTwo) {
  TempDir dir("resume_corrupt");
  const fs::path ckpt = dir.path() / "run" / "100_checkpoint";
  fs::create_directories(ckpt);
  std::ofstream(ckpt / "checkpoint.pb") << std::string(100, 'x');
  std::ofstream(dir.path() / "run" / "args.json") << "{}";
  const ProcessRun r = TrainA3C("--resume " + ckpt.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("bad magic"), std::string::npos) << r.output;
}

// A program's own global-step hook (TrainerPlugins::step_hooks, the
// reference's global_step_hooks): --anneal-noise decays the agent's noise
// with the step, as each evaluation's noise column shows.
TEST(CustomAgentExampleTest, ItsStepHookAnnealsTheNoise) {
  TempDir dir("custom_hook");
  const ProcessRun r = Exec(CUSTOM_AGENT_EXAMPLE_BIN,
                            "--env CartPole-v0 --processes 1 --steps 20000 "
                            "--eval-interval 4000 --eval-n-runs 1 "
                            "--anneal-noise --noise 0.5 --quiet --outdir " +
                                dir.str());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto lines = ReadLines(RunFolder(r) / "scores.txt");
  ASSERT_GE(lines.size(), 4u);
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto fields = testing::Split(lines[i], '\t');
    ASSERT_EQ(fields.size(), 13u) << lines[i];  // The last: train_mean.
    // The evaluation runs at an episode end whose last step set the noise.
    const double expected =
        0.5 * std::max(0.01, 1.0 - std::stod(fields[0]) / 20000.0);
    EXPECT_NEAR(std::stod(fields[11]), expected, 1e-4) << lines[i];
  }
  const ProcessRun plain = Exec(CUSTOM_AGENT_EXAMPLE_BIN,
                                "--env CartPole-v0 --processes 1 --steps 8000 "
                                "--eval-interval 4000 --eval-n-runs 1 "
                                "--quiet --outdir " +
                                    (dir.path() / "plain").string());
  ASSERT_EQ(plain.status, 0) << plain.output;
  const auto kept = ReadLines(RunFolder(plain) / "scores.txt");
  ASSERT_GE(kept.size(), 2u);
  EXPECT_EQ(testing::Split(kept.back(), '\t').at(11), "0.5");
}

TEST(CustomAgentExampleTest, TrainsCartPoleToTheSuccessfulScore) {
  TempDir dir("custom_agent");
  const ProcessRun r = Exec(CUSTOM_AGENT_EXAMPLE_BIN,
                            "--env CartPole-v0 --processes 1 --steps 200000 "
                            "--eval-interval 2000 --successful-score 195 "
                            "--quiet --outdir " +
                                dir.str());
  ASSERT_EQ(r.status, 0) << r.output;
  const fs::path run = RunFolder(r);
  EXPECT_TRUE(fs::exists(run / "successful" / "checkpoint.pb")) << r.output;
  // The agent's own statistics are scores.txt columns.
  const auto header = testing::Split(ReadLines(run / "scores.txt").at(0), '\t');
  ASSERT_EQ(header.size(), 13u);
  EXPECT_EQ(header[8], "best_return");
  EXPECT_EQ(header[10], "episodes_seen");
  EXPECT_EQ(header[11], "noise");
  EXPECT_EQ(header[12], "train_mean");  // The trainer's own extension's.
  // The same flags and errors as train_a3c, under the program's name.
  const ProcessRun bad = Exec(CUSTOM_AGENT_EXAMPLE_BIN, "--t-max 0");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.output.rfind("hill_climbing: --t-max=0 is invalid", 0), 0u)
      << bad.output;
  // The program's own flag: in --help, checked by the agent, named as a flag.
  const ProcessRun help = Exec(CUSTOM_AGENT_EXAMPLE_BIN, "--help");
  EXPECT_NE(help.output.find("--noise arg (=0.5)"), std::string::npos)
      << help.output;
  const ProcessRun bad_noise =
      Exec(CUSTOM_AGENT_EXAMPLE_BIN, "--noise 0 --quiet --outdir " + dir.str());
  EXPECT_EQ(bad_noise.status, 2) << bad_noise.output;
  EXPECT_EQ(bad_noise.output,
            "hill_climbing: --noise=0 is invalid; accepted: a finite number "
            "> 0\n");
  // Its network is its own: the fc archs' shape flags are refused.
  const ProcessRun shaped =
      Exec(CUSTOM_AGENT_EXAMPLE_BIN,
           "--activation tanh --quiet --outdir " + dir.str());
  EXPECT_EQ(shaped.status, 2) << shaped.output;
  EXPECT_EQ(shaped.output,
            "hill_climbing: --activation=tanh is invalid; accepted: auto "
            "(the program's own agent builds its network)\n");
  // A single-environment agent cannot step a batch: exit 2, nothing made.
  const fs::path batch_dir = dir.path() / "batch";
  const ProcessRun batch =
      Exec(CUSTOM_AGENT_EXAMPLE_BIN,
           "--envs-per-process 2 --quiet --outdir " + batch_dir.string());
  EXPECT_EQ(batch.status, 2) << batch.output;
  EXPECT_EQ(batch.output,
            "hill_climbing: --envs-per-process=2 is invalid; accepted: 1 "
            "(agent type 'hill-climbing' does not act on batches)\n");
  EXPECT_FALSE(fs::exists(batch_dir));
  // An agent that refuses the environment: exit 2, one line, nothing made.
  const fs::path wrong_dir = dir.path() / "wrong";
  const ProcessRun wrong_env = Exec(
      CUSTOM_AGENT_EXAMPLE_BIN,
      "--env Pendulum-v1 --steps 100 --quiet --outdir " + wrong_dir.string());
  EXPECT_EQ(wrong_env.status, 2) << wrong_env.output;
  EXPECT_EQ(wrong_env.Lines().size(), 1u) << wrong_env.output;
  EXPECT_NE(wrong_env.output.find("hill_climbing: hill-climbing needs a flat "
                                  "observation and discrete actions"),
            std::string::npos)
      << wrong_env.output;
  EXPECT_FALSE(fs::exists(wrong_dir));
}

// examples/custom_env: an environment of the program's own, registered by
// name in its main(), trains with --env, takes --env-param, is played by
// --demo; being of no built-in family, its rewards are not scaled, and the
// run's first lines say so. train_a3c says which family's defaults a
// built-in environment got, and nothing when the flags gave them.
TEST(CustomEnvExampleTest, AnEnvironmentRegisteredByNameTrainsUnscaled) {
  TempDir dir("custom_env");
  const ProcessRun r =
      Exec(CUSTOM_ENV_EXAMPLE_BIN,
           "--env Corridor --env-param length=5 --processes 2 --steps 4000 "
           "--eval-interval 2000 --eval-n-runs 2 --outdir " +
               dir.str());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("environment defaults: --reward-scale-factor 1 "
                          "(Corridor: an environment of no built-in family, "
                          "so its rewards are unscaled;"),
            std::string::npos)
      << r.output;
  const fs::path run = RunFolder(r);
  EXPECT_EQ(RecordedOption(run, "env"), "Corridor");
  EXPECT_EQ(RecordedOption(run, "reward-scale-factor"), "1");
  EXPECT_EQ(RecordedOption(run, "env-param"), "length=5");
  const ProcessRun demo = Exec(
      CUSTOM_ENV_EXAMPLE_BIN,
      "--demo --load " + (run / "4000_finish").string() + " --eval-n-runs 1");
  EXPECT_EQ(demo.status, 0) << demo.output;

  const ProcessRun unknown = Exec(CUSTOM_ENV_EXAMPLE_BIN,
                                  "--env Corridr --outdir " + dir.str() + "/x");
  EXPECT_EQ(unknown.status, 2) << unknown.output;
  ASSERT_EQ(unknown.Lines().size(), 1u) << unknown.output;
  EXPECT_NE(unknown.output.find("Corridor"), std::string::npos)
      << unknown.output;
  EXPECT_FALSE(fs::exists(dir.path() / "x"));

  const std::string short_run =
      " --processes 1 --steps 500 --eval-interval 0 --outdir " + dir.str();
  const ProcessRun cartpole = TrainA3C("--env CartPole-v1" + short_run);
  ASSERT_EQ(cartpole.status, 0) << cartpole.output;
  EXPECT_NE(cartpole.output.find("environment defaults: --reward-scale-factor "
                                 "0.01 (CartPole-v1: classic control"),
            std::string::npos)
      << cartpole.output;
  const ProcessRun given =
      TrainA3C("--env CartPole-v1 --reward-scale-factor 0.5" + short_run);
  ASSERT_EQ(given.status, 0) << given.output;
  EXPECT_EQ(given.output.find("environment defaults"), std::string::npos)
      << given.output;
  EXPECT_EQ(RecordedOption(RunFolder(given), "reward-scale-factor"), "0.5");
}

}  // namespace
}  // namespace train_a3c_test
}  // namespace asyncrl
