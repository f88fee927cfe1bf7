// train_a3c on two-player games, as a user runs it: self-play with a
// snapshot pool, per-opponent evaluation columns and ELO in scores.txt,
// checkpoints that hold the pool and the ratings (resume continues them;
// one that would change scores.txt's columns is refused),
// --demo's table, a worker failure mid-game, and the flags' errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "../experiments/test_basics.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/tensorboard.h"
#include "test_paths.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace games_train_test {
namespace {

namespace fs = std::filesystem;
using testing::Exec;
using testing::ProcessRun;
using testing::ReadLines;
using testing::RecordedOption;
using testing::TempDir;

ProcessRun TrainA3C(const std::string& args, const std::string& env = "") {
  return Exec(env + (env.empty() ? "" : " ") + TRAIN_A3C_BIN, args);
}

fs::path RunFolder(const ProcessRun& run) {
  return run.Lines().at(0).substr(std::string("results in ").size());
}

std::vector<std::string> Columns(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, '\t')) out.push_back(cell);
  return out;
}

// --eval-score total: the evaluation mean is the mean result over every
// opponent's games, 2 total - 1; --initial-elo starts the rating; Connect
// Four adds the judge's column.
TEST(GamesTrainTest, TheTotalScoreCanChooseTheBestAgent) {
  TempDir dir("games_total");
  const ProcessRun r = TrainA3C(
      "--outdir " + dir.str() +
      " --env TicTacToe --processes 1 --steps 3000 --eval-interval 1000"
      " --eval-n-runs 4 --eval-score total --initial-elo 1500 --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const fs::path run = RunFolder(r);
  const auto scores = ReadLines(run / "scores.txt");
  ASSERT_EQ(scores.size(), 4u);
  const std::vector<std::string> header = Columns(scores[0]);
  ASSERT_EQ(header[header.size() - 2], "total");
  for (size_t row = 1; row < scores.size(); ++row) {
    const std::vector<std::string> cells = Columns(scores[row]);
    EXPECT_NEAR(std::stod(cells[3]),
                2 * std::stod(cells[header.size() - 2]) - 1, 1e-9)
        << scores[row];
  }
  // Connect Four: the judge's agreement share beside the total.
  const ProcessRun c4 = TrainA3C(
      "--outdir " + (dir.path() / "c4").string() +
      " --env ConnectFour --processes 1 --steps 2000 --eval-interval 1000"
      " --eval-n-runs 2 --eval-opponents random --quiet");
  ASSERT_EQ(c4.status, 0) << c4.output;
  const auto c4_scores = ReadLines(RunFolder(c4) / "scores.txt");
  ASSERT_EQ(c4_scores.size(), 3u);
  const std::vector<std::string> c4_header = Columns(c4_scores[0]);
  ASSERT_EQ(c4_header[c4_header.size() - 2], "judge");
  for (size_t row = 1; row < c4_scores.size(); ++row) {
    const double judge =
        std::stod(Columns(c4_scores[row])[c4_header.size() - 2]);
    EXPECT_GE(judge, 0.0);
    EXPECT_LE(judge, 1.0);
  }
  // --demo adds the judge's line under Connect Four's table.
  const ProcessRun c4_demo =
      TrainA3C("--env ConnectFour --demo --load " +
               (RunFolder(c4) / "2000_finish").string() +
               " --eval-n-runs 2 --eval-opponents random");
  ASSERT_EQ(c4_demo.status, 0) << c4_demo.output;
  const size_t at = c4_demo.output.find("judge: ");
  ASSERT_NE(at, std::string::npos) << c4_demo.output;
  const double demo_judge = std::stod(c4_demo.output.substr(at + 7));
  EXPECT_GE(demo_judge, 0.0);
  EXPECT_LE(demo_judge, 1.0);
  EXPECT_NE(c4_demo.output.find(" of 200 positions keep their value"),
            std::string::npos)
      << c4_demo.output;
  const proto::Checkpoint finish =
      LoadCheckpointDir((run / "3000_finish").string());
  // The first snapshot took the initial rating.
  ASSERT_GE(finish.self_play().pool_size(), 1);
  EXPECT_EQ(finish.self_play().pool(0).number(), 1);
  EXPECT_NEAR(
      finish.self_play().pool(0).elo() + (finish.self_play().elo() - 1500),
      1500, 1e-6);
}

// --train-sides: both by default (the agent plays both sides of its games
// against the latest policy), learner for a recurrent arch unless given;
// each run trains, evaluates and records the choice.
TEST(GamesTrainTest, TrainSidesDefaultsByArchAndIsRecorded) {
  TempDir dir("games_sides");
  struct Case {
    std::string args;
    std::string recorded;
  };
  for (const Case& c :
       std::vector<Case>{{"", "both"},
                         {"--train-sides learner", "learner"},
                         {"--arch fc-softmax-lstm", "learner"}}) {
    SCOPED_TRACE(c.args);
    const ProcessRun r = TrainA3C(
        "--outdir " + dir.str() +
        " --env TicTacToe --processes 2 --steps 4000 --eval-interval 2000"
        " --eval-n-runs 4 --quiet " +
        c.args);
    ASSERT_EQ(r.status, 0) << r.output;
    const fs::path run = RunFolder(r);
    EXPECT_EQ(RecordedOption(run, "train-sides"), c.recorded);
    EXPECT_EQ(ReadLines(run / "scores.txt").size(), 3u);
    EXPECT_TRUE(fs::exists(run / "4000_finish"));
  }
}

TEST(GamesTrainTest, SelfPlayWritesOpponentColumnsEloAndAPoolThatResumes) {
  TempDir dir("games");
  const ProcessRun first = TrainA3C(
      "--outdir " + dir.str() +
      " --env TicTacToe --processes 2 --steps 12000 --eval-interval 6000"
      " --eval-n-runs 10 --snapshot-interval 1000 --snapshot-window 4"
      " --checkpoint-interval 6500 --play-against-latest-ratio 0.5");
  ASSERT_EQ(first.status, 0) << first.output;
  const fs::path run = RunFolder(first);
  // Games' defaults: results unscaled, entropy weight 0.1.
  EXPECT_EQ(RecordedOption(run, "beta"), "0.1");
  EXPECT_EQ(RecordedOption(run, "reward-scale-factor"), "1");
  const auto scores = ReadLines(run / "scores.txt");
  ASSERT_EQ(scores.size(), 3u);
  const std::vector<std::string> header = Columns(scores[0]);
  const std::vector<std::string> want = {
      "win_random",   "draw_random", "loss_random", "win_greedy",
      "draw_greedy",  "loss_greedy", "win_minimax", "draw_minimax",
      "loss_minimax", "total",       "elo"};
  ASSERT_GE(header.size(), want.size());
  EXPECT_EQ(std::vector<std::string>(header.end() - want.size(), header.end()),
            want);
  for (size_t row = 1; row < scores.size(); ++row) {
    const std::vector<std::string> cells = Columns(scores[row]);
    ASSERT_EQ(cells.size(), header.size());
    // Rates per opponent sum to 1; the mean is the result against minimax
    // (the last): wins - losses.
    for (size_t o = 0; o < 3; ++o) {
      const size_t at = header.size() - want.size() + 3 * o;
      EXPECT_NEAR(std::stod(cells[at]) + std::stod(cells[at + 1]) +
                      std::stod(cells[at + 2]),
                  1.0, 1e-9);
    }
    const size_t minimax = header.size() - 5;
    EXPECT_NEAR(std::stod(cells[3]),
                std::stod(cells[minimax]) - std::stod(cells[minimax + 2]),
                1e-9);
    // The total: wins and half the draws over every opponent's games (each
    // opponent plays as many).
    double points = 0;
    for (size_t o = 0; o < 3; ++o) {
      const size_t at = header.size() - want.size() + 3 * o;
      points += std::stod(cells[at]) + std::stod(cells[at + 1]) / 2;
    }
    EXPECT_NEAR(std::stod(cells[header.size() - 2]), points / 3, 1e-9);
    EXPECT_LE(std::stod(cells[minimax]), 0.0);  // Nobody beats minimax.
  }
  const proto::Checkpoint at6500 =
      LoadCheckpointDir((run / "6500_checkpoint").string());
  ASSERT_TRUE(at6500.has_self_play());
  const auto& pool = at6500.self_play();
  EXPECT_EQ(pool.pool_size(), 4);  // The window is full by step 6500.
  EXPECT_GE(pool.taken(), 6);
  EXPECT_GT(pool.rated_games(), 0);
  EXPECT_NE(pool.elo(), 1200.0);
  const proto::Checkpoint finish =
      LoadCheckpointDir((run / "12000_finish").string());
  EXPECT_GT(finish.self_play().taken(), pool.taken());
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
       {"selfplay/elo", "selfplay/snapshots", "selfplay/rated_games",
        "eval/win_random", "eval/loss_minimax"}) {
    EXPECT_EQ(tags.count(tag), 1u) << tag;
  }

  // Resumed from 6500 to 6900 (the checkpoint's step is not a snapshot
  // step, and none is due before 7000): the pool is the checkpoint's,
  // snapshot for snapshot, and the ELO and the count of rated games go on
  // from the checkpoint's. One worker: a save never falls between the two
  // halves of another worker's rating update.
  const ProcessRun second =
      TrainA3C("--resume " + (run / "6500_checkpoint").string() +
               " --steps 6900 --processes 1 --quiet");
  ASSERT_EQ(second.status, 0) << second.output;
  const proto::Checkpoint resumed =
      LoadCheckpointDir((run / "6900_finish").string());
  const auto& after = resumed.self_play();
  EXPECT_EQ(after.taken(), pool.taken());
  ASSERT_EQ(after.pool_size(), pool.pool_size());
  // Every rated game since moved the learner's rating and its snapshot's
  // by opposite amounts (ML-Agents' ghost trainer): with no snapshot taken
  // or dropped since the checkpoint, the ratings' sum is the checkpoint's.
  double sum_before = pool.elo(), sum_after = after.elo();
  for (int i = 0; i < pool.pool_size(); ++i) {
    EXPECT_EQ(after.pool(i).number(), pool.pool(i).number());
    EXPECT_EQ(after.pool(i).step(), pool.pool(i).step());
    EXPECT_EQ(after.pool(i).parameters().data(),
              pool.pool(i).parameters().data());
    sum_before += pool.pool(i).elo();
    sum_after += after.pool(i).elo();
  }
  EXPECT_NEAR(sum_after, sum_before, 1e-6 * std::abs(sum_before));
  EXPECT_GE(after.rated_games(), pool.rated_games());
  EXPECT_EQ(after.next_step(), pool.next_step());

  // A resume whose options change scores.txt's columns (one evaluation
  // opponent instead of three) is refused in one line before anything is
  // written: its rows would not fit the header (23 columns under 26).
  const auto command_before = ReadLines(run / "command.txt");
  const auto args_before = ReadLines(run / "args.json");
  const auto scores_before = ReadLines(run / "scores.txt");
  const ProcessRun changed =
      TrainA3C("--resume " + (run / "6500_checkpoint").string() +
               " --steps 6900 --eval-opponents random --quiet");
  EXPECT_EQ(changed.status, 2) << changed.output;
  ASSERT_EQ(changed.Lines().size(), 1u) << changed.output;
  EXPECT_NE(changed.output.find("removed: win_greedy,draw_greedy,loss_greedy,"
                                "win_minimax,draw_minimax,loss_minimax"),
            std::string::npos)
      << changed.output;
  EXPECT_NE(changed.output.find("added: none"), std::string::npos)
      << changed.output;
  EXPECT_EQ(ReadLines(run / "command.txt"), command_before);
  EXPECT_EQ(ReadLines(run / "args.json"), args_before);
  EXPECT_EQ(ReadLines(run / "scores.txt"), scores_before);

  // A run from before --train-sides (its args.json without the key)
  // trained the learner's side: resumed, it goes on so.
  {
    std::string args;
    for (const std::string& line : args_before) {
      if (line.find("\"train-sides\"") == std::string::npos) {
        args += line + "\n";
      }
    }
    ASSERT_LT(args.size(), testing::ReadFile(run / "args.json").size());
    std::ofstream(run / "args.json") << args;
  }
  const ProcessRun old =
      TrainA3C("--resume " + (run / "6500_checkpoint").string() +
               " --steps 6700 --processes 1 --quiet");
  ASSERT_EQ(old.status, 0) << old.output;
  EXPECT_EQ(RecordedOption(run, "train-sides"), "learner");

  // --demo plays the saved agent against every opponent, both sides.
  const ProcessRun demo =
      TrainA3C("--env TicTacToe --demo --load " +
               (run / "12000_finish").string() + " --eval-n-runs 20");
  ASSERT_EQ(demo.status, 0) << demo.output;
  for (const char* row : {"random ", "greedy ", "minimax "}) {
    EXPECT_NE(demo.output.find(row), std::string::npos) << demo.output;
  }
  EXPECT_NE(demo.output.find("moving first: W/D/L"), std::string::npos);
  EXPECT_EQ(demo.output.find("judge: "), std::string::npos);  // Connect Four's.
}

// A game ends thousands of episodes a second: TensorBoard gets their
// returns and lengths as one mean a second and worker 0's agent statistics
// at most ten times a second, and no record is dropped (a 60 s TicTacToe
// run wrote 400 MB and dropped thousands when every episode was a record).
TEST(GamesTrainTest, ShortEpisodesReachTensorBoardAsMeansASecond) {
  TempDir dir("games_means");
  const auto start = std::chrono::steady_clock::now();
  const ProcessRun r =
      TrainA3C("--outdir " + dir.str() +
               " --env TicTacToe --processes 2 --steps 300000"
               " --eval-interval 0 --final-eval-n-runs 0 --quiet");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("dropped"), std::string::npos) << r.output;
  // "finished at step 300000 after E episodes"
  const size_t at = r.output.find(" after ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const int64_t episodes = std::stoll(r.output.substr(at + 7));
  EXPECT_GT(episodes, 10000) << r.output;
  const fs::path run = RunFolder(r);
  std::string events_path;
  for (const auto& e : fs::directory_iterator(run)) {
    if (e.path().filename().string().rfind("events.out.tfevents", 0) == 0) {
      events_path = e.path().string();
    }
  }
  int64_t returns = 0, lengths = 0, policy_losses = 0;
  for (const auto& event : ReadEventFile(events_path)) {
    for (const auto& v : event.summary().value()) {
      if (v.tag() == "train/episode_return") {
        ++returns;
        EXPECT_GE(v.simple_value(), -1.0f);
        EXPECT_LE(v.simple_value(), 1.0f);
      }
      lengths += v.tag() == "train/episode_length";
      policy_losses += v.tag() == "agent/policy_loss";
    }
  }
  EXPECT_GE(returns, 1);
  EXPECT_LE(returns, static_cast<int64_t>(seconds) + 2) << seconds << " s";
  EXPECT_EQ(lengths, returns);
  EXPECT_GE(policy_losses, 1);
  EXPECT_LE(policy_losses, static_cast<int64_t>(10 * seconds) + 2)
      << seconds << " s";
}

TEST(GamesTrainTest, AWorkerFailingMidGameStopsTheRunAndSavesThePool) {
  TempDir dir("games-fault");
  const ProcessRun r =
      TrainA3C("--outdir " + dir.str() +
                   " --env ConnectFour --processes 2 --steps 50000000"
                   " --snapshot-interval 500 --eval-interval 0 --beta 0.05",
               "ASYNCRL_INJECT_FAULT=worker=1,step=3000,kind=throw");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("injected failure at step 3000"), std::string::npos)
      << r.output;
  const fs::path run = RunFolder(r);
  std::string except;
  for (const auto& e : fs::directory_iterator(run)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 7 && name.substr(name.size() - 7) == "_except") {
      except = e.path().string();
    }
  }
  ASSERT_FALSE(except.empty()) << r.output;
  // A given entropy weight is kept (not replaced by the games' 0.1).
  EXPECT_EQ(RecordedOption(run, "beta"), "0.05");
  const proto::Checkpoint checkpoint = LoadCheckpointDir(except);
  ASSERT_TRUE(checkpoint.has_self_play());
  EXPECT_GE(checkpoint.self_play().pool_size(), 1);
}

TEST(GamesTrainTest, BadGameFlagsExitTwoInOneLine) {
  TempDir dir("games-flags");
  const fs::path outdir = dir.path() / "out";
  struct Case {
    std::string args;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {"--env TicTacToe --eval-opponents random,oracle",
            "--eval-opponents=random,oracle is invalid; accepted: random, "
            "greedy, minimax, minimax:D"},
           // Two columns of one name (issue 24, case 6).
           {"--env TicTacToe --eval-opponents random,greedy,random",
            "--eval-opponents=random,greedy,random is invalid; accepted: "
            "each opponent once ('random' is given twice)"},
           {"--env CartPole-v1 --eval-opponents random",
            "--eval-opponents=random is invalid; accepted: only with a "
            "two-player game (--env ConnectFour, TicTacToe)"},
           {"--env TicTacToe --eval-n-steps 100",
            "--eval-n-steps=100 is invalid; accepted: not with a two-player "
            "game"},
           {"--env TicTacToe --snapshot-window 0",
            "--snapshot-window=0 is invalid; accepted: an integer in [1, 64]"},
           {"--env TicTacToe --play-against-latest-ratio 2",
            "--play-against-latest-ratio=2 is invalid"},
           {"--env TicTacToe --elo-k 0", "--elo-k=0 is invalid"},
           {"--env TicTacToe --learner-side left",
            "--learner-side=left is invalid; accepted: alternate, random, "
            "first, second"},
           {"--env TicTacToe --train-sides all",
            "--train-sides=all is invalid; accepted: learner, both"},
           {"--env TicTacToe --arch fc-softmax-lstm --train-sides both",
            "--train-sides=both is invalid; accepted: learner (both: a "
            "recurrent arch's state would run through both players' "
            "turns)"},
           {"--env ConnectFour --env-param minimax_opponent_ratio=3",
            "--env-param=minimax_opponent_ratio=3 is invalid; accepted: "
            "minimax_opponent_ratio=VALUE with VALUE in [0, 1]"}}) {
    SCOPED_TRACE(c.args);
    const ProcessRun r = TrainA3C("--outdir " + outdir.string() + " " + c.args);
    EXPECT_EQ(r.status, 2) << r.output;
    const auto lines = r.Lines();
    ASSERT_EQ(lines.size(), 1u) << r.output;
    EXPECT_NE(lines[0].find(c.expected), std::string::npos) << lines[0];
    EXPECT_FALSE(fs::exists(outdir));
  }
}

}  // namespace
}  // namespace games_train_test
}  // namespace asyncrl
