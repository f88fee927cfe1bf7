// train_a3c --env python:MODULE:FACTORY: a Python environment stepped in
// the workers (experiments/python_env/python_env.h). The environments are
// examples/python_env/cartpole.py and tests/python_envs/bad_envs.py (one
// broken rule each).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../experiments/test_basics.h"
#include "asyncrl/misc/checkpoint.h"
#include "test_paths.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace python_worker_env_test {
namespace {

namespace fs = std::filesystem;
using testing::Exec;
using testing::ProcessRun;
using testing::TempDir;

// train_a3c run from the test environments' folder, with the example's
// folder on PYTHONPATH, writing under `out`.
ProcessRun Train(const TempDir& out, const std::string& args) {
  const std::string source = testing::paths::kSourceDir;
  return Exec("cd " + source +
                  "/tests/python_envs && env PYTHONPATH=" + source +
                  "/examples/python_env " + testing::paths::kTrainA3cBin,
              "--outdir " + out.str() + "/runs --quiet " + args);
}

std::vector<fs::path> Runs(const TempDir& out) {
  std::vector<fs::path> runs;
  if (!fs::exists(out.path() / "runs")) return runs;
  for (const auto& e : fs::directory_iterator(out.path() / "runs")) {
    runs.push_back(e.path());
  }
  return runs;
}

// The lines of `output` that name `text`.
int CountLines(const std::string& output, const std::string& text) {
  int n = 0;
  for (const std::string& line : testing::Split(output, '\n')) {
    n += line.find(text) != std::string::npos;
  }
  return n;
}

TEST(PythonWorkerEnvTest, TrainsAndRecordsTheEnvironmentAndItsKwargs) {
  TempDir out("pyenv_train");
  const ProcessRun run =
      Train(out,
            "--env python:bad_envs:Sized --env-kwargs '{\"extra_dims\": 2}' "
            "--processes 2 --steps 4000 --eval-interval 2000 "
            "--eval-n-runs 2 --env-param length=0.7");
  ASSERT_EQ(run.status, 0) << run.output;
  const std::vector<fs::path> runs = Runs(out);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(testing::RecordedOption(runs[0], "env"), "python:bad_envs:Sized");
  EXPECT_EQ(testing::RecordedOption(runs[0], "env-kwargs"),
            "{\"extra_dims\": 2}");
  EXPECT_TRUE(fs::exists(runs[0] / "4000_finish")) << run.output;
  // Evaluations ran in the workers' interpreters (rows after the header).
  EXPECT_GE(testing::ReadLines(runs[0] / "scores.txt").size(), 3u);
  // An environment of no family: rewards unscaled, and said.
  EXPECT_NE(run.output.find("--reward-scale-factor 1"), std::string::npos)
      << run.output;
}

TEST(PythonWorkerEnvTest, ResumesByImportingTheEnvironmentAgain) {
  TempDir out("pyenv_resume");
  const ProcessRun first =
      Train(out,
            "--env python:cartpole:CartPole --processes 2 --steps 2000 "
            "--eval-interval 0");
  ASSERT_EQ(first.status, 0) << first.output;
  const fs::path run = Runs(out).at(0);
  const ProcessRun resumed = Train(
      out, "--resume " + (run / "2000_finish").string() + " --steps 4000");
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  int finished = 0;
  for (const fs::path& r : Runs(out)) finished += fs::exists(r / "4000_finish");
  EXPECT_EQ(finished, 1) << resumed.output;
}

// A vector environment of the user's own (num_envs copies stepped by one
// step(actions) call, same-step autoreset) trains exactly as its copies
// would one by one: with one process and no evaluation the agent's
// statistics are equal to the digit. Episodes are cut at 20 steps, so the
// copies' last observations (infos["final_obs"]) are bootstrapped from;
// stepping the copies one at a time (each call stepping all) would change
// every trajectory.
TEST(PythonWorkerEnvTest, AVectorEnvironmentTrainsAsItsCopiesWould) {
  const std::string common =
      " --processes 1 --steps 3000 --eval-interval 0 --seed 3";
  TempDir single_out("pyenv_copies");
  const ProcessRun single = Train(single_out,
                                  "--env python:cartpole:CartPole --env-kwargs "
                                  "'{\"max_steps\": 20}' --envs-per-process 4" +
                                      common);
  ASSERT_EQ(single.status, 0) << single.output;
  TempDir vector_out("pyenv_vector");
  const ProcessRun vector =
      Train(vector_out,
            "--env python:vector_cartpole:VectorCartPole --env-kwargs "
            "'{\"num_envs\": 4, \"max_steps\": 20}'" +
                common);
  ASSERT_EQ(vector.status, 0) << vector.output;
  EXPECT_NE(vector.output.find("--envs-per-process 4 (its num_envs)"),
            std::string::npos)
      << vector.output;
  const fs::path single_run = Runs(single_out).at(0);
  const fs::path vector_run = Runs(vector_out).at(0);
  EXPECT_EQ(testing::RecordedOption(vector_run, "envs-per-process"), "4");
  const std::vector<std::string> expected =
      testing::ReadLines(single_run / "statistics-0.tsv");
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(testing::ReadLines(vector_run / "statistics-0.tsv"), expected);

  // Several workers with evaluations: each evaluates with a vector
  // environment of its own (its first copy).
  TempDir eval_out("pyenv_vector_eval");
  const ProcessRun evaluated = Train(
      eval_out,
      "--env python:vector_cartpole:VectorCartPole --env-kwargs "
      "'{\"num_envs\": 3}' --processes 2 --steps 3000 --eval-interval 1000 "
      "--eval-n-runs 2");
  ASSERT_EQ(evaluated.status, 0) << evaluated.output;
  const fs::path run = Runs(eval_out).at(0);
  EXPECT_TRUE(fs::exists(run / "3000_finish")) << evaluated.output;
  EXPECT_GE(testing::ReadLines(run / "scores.txt").size(), 3u);
}

// Vector environments that check what they are given
// (tests/python_envs/vector_envs.py): an int seed and Gymnasium 0.29's
// final_observation keys, Box actions of shape (2,) and of shape () as
// NumPy's [num_envs, ...] float32 arrays. A last batch shorter than the
// copies (1001 steps), evaluations and --demo of the run's agent.
TEST(PythonWorkerEnvTest, VectorEnvironmentsOfEachKindTrainAndPlay) {
  for (const std::string env :
       {"Gymnasium029", "ContinuousVector", "ScalarActionVector"}) {
    TempDir out("pyenv_vector_kinds");
    const ProcessRun run =
        Train(out, "--env python:vector_envs:" + env +
                       " --processes 2 --steps 1001 --eval-interval 500 "
                       "--eval-n-runs 2");
    ASSERT_EQ(run.status, 0) << env << "\n" << run.output;
    const fs::path finish = Runs(out).at(0) / "1001_finish";
    ASSERT_TRUE(fs::exists(finish)) << env << "\n" << run.output;
    const ProcessRun demo =
        Train(out, "--env python:vector_envs:" + env + " --demo --load " +
                       finish.string() + " --eval-n-runs 2");
    EXPECT_EQ(demo.status, 0) << env << "\n" << demo.output;
  }
}

// The run is done when its final evaluation fails: exit 0, the finished
// line, the failure named in the last lines, no final_eval.tsv.
TEST(PythonWorkerEnvTest, AFinalEvaluationThatFailsLeavesTheRunFinished) {
  TempDir out("pyenv_final_eval_fails");
  const ProcessRun run =
      Train(out,
            "--env python:bad_envs:RefusesLargeSeeds --processes 2 "
            "--steps 2000 --eval-interval 1000 --eval-n-runs 2");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("finished at step 2000"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("final evaluation: failed (python:bad_envs:"
                            "RefusesLargeSeeds: reset() raised ValueError: "
                            "seed 2147483648 is too large for this track)"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(Runs(out).at(0) / "final_eval.tsv"));
  EXPECT_TRUE(fs::exists(Runs(out).at(0) / "2000_finish"));
}

// Each refusal: exit 2, one line naming the flag, the value and what is
// accepted, nothing created.
TEST(PythonWorkerEnvTest, RefusalsAreOneLineAndCreateNothing) {
  struct Case {
    std::string args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"--env python:bad_envs", "is not python:MODULE:FACTORY"},
      {"--env python:no_such_module:Env", "no module named 'no_such_module'"},
      {"--env python:bad_envs:Nope", "bad_envs has no attribute 'Nope'"},
      {"--env python:bad_envs:raises_in_factory",
       "raises_in_factory() raised RuntimeError: no such track"},
      {"--env python:bad_envs:returns_none", "returned None"},
      {"--env python:bad_envs:NoReset", "has no reset() method"},
      {"--env python:bad_envs:DictObservation",
       "asyncrl trains Box (shape, low, high) and Discrete (n) spaces"},
      {"--env python:bad_envs:Sized --env-kwargs '[1]'",
       "--env-kwargs=[1] is invalid; accepted: a JSON object"},
      {"--env python:bad_envs:Sized --env-kwargs '{\"nope\": 1}'",
       "unexpected keyword argument 'nope'"},
      {"--env CartPole-v1 --env-kwargs '{}'",
       "keyword arguments are for python:MODULE:FACTORY"},
      {"--env python:cartpole:CartPole --env-param length=7",
       "--env-param=length=7 is invalid; accepted: length=VALUE with VALUE "
       "in [0.1, 2]"},
      // Vector environments (examples/python_env/vector_cartpole.py).
      {"--env python:bad_envs:NextStepVector",
       "its autoreset_mode is NextStep; asyncrl takes a vector environment "
       "that resets an ended copy in the same step"},
      {"--env python:bad_envs:VectorWithParameters",
       "asyncrl_parameters on a vector environment is not taken"},
      {"--env python:vector_cartpole:VectorCartPole --envs-per-process 3",
       "--envs-per-process=3 is invalid; accepted: 8 "
       "(python:vector_cartpole:VectorCartPole is a vector environment of 8 "
       "copies, its num_envs)"},
      {"--env python:vector_cartpole:VectorCartPole --max-episode-len 100",
       "--max-episode-len=100 is invalid; accepted: 0 for a vector "
       "environment"},
  };
  for (const Case& c : cases) {
    TempDir out("pyenv_refused");
    const ProcessRun run = Train(out, c.args + " --steps 100");
    EXPECT_EQ(run.status, 2) << c.args << "\n" << run.output;
    EXPECT_EQ(CountLines(run.output, "train_a3c: "), 1) << c.args << "\n"
                                                        << run.output;
    EXPECT_NE(run.output.find(c.says), std::string::npos) << c.args << "\n"
                                                          << run.output;
    EXPECT_FALSE(fs::exists(out.path() / "runs")) << c.args;
  }
}

// A rule broken while training (a gym-0.21 step, an observation of the
// wrong shape) or an exception raised by the environment stops the run as
// any worker failure: exit 1, the line, a loadable _except/.
TEST(PythonWorkerEnvTest, AnEnvironmentThatFailsWhileTrainingStopsTheRun) {
  struct Case {
    std::string env;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"RaisesInStep",
       "python:bad_envs:RaisesInStep: step() raised ValueError: the cart "
       "fell off the table"},
      {"OldGymStep", "step() returned 4 values (gym 0.21's"},
      {"WrongShape",
       "step() at step 7 of an episode returned an observation whose "
       "dimension 0 has 3 values; observation_space has shape [4]"},
      {"NoFinalObsVector",
       "'s episode without its last observation in infos; asyncrl takes a "
       "vector environment that resets an ended copy in the same step"},
      {"ShortVector",
       "step() returned observations for 3 copies; num_envs "
       "is 4"},
      {"ShortFinalVector",
       "step() returned infos[\"final_obs\"] for 1 copies; num_envs is 8"},
  };
  for (const Case& c : cases) {
    TempDir out("pyenv_fails");
    const ProcessRun run = Train(out, "--env python:bad_envs:" + c.env +
                                          " --processes 2 --steps 100000");
    EXPECT_EQ(run.status, 1) << c.env << "\n" << run.output;
    EXPECT_NE(run.output.find(c.says), std::string::npos) << c.env << "\n"
                                                          << run.output;
    const size_t at = run.output.find("train_a3c: saved ");
    ASSERT_NE(at, std::string::npos) << run.output;
    const std::string dir =
        run.output.substr(at + 17, run.output.find('\n', at) - at - 17);
    EXPECT_NE(dir.find("_except"), std::string::npos) << dir;
    EXPECT_NO_THROW(LoadCheckpointDir(dir)) << dir;
  }
  // The exception's traceback is on the worker's stderr.
  TempDir out("pyenv_traceback");
  const ProcessRun run =
      Train(out,
            "--env python:bad_envs:RaisesInStep --processes 1 "
            "--steps 100000");
  EXPECT_NE(run.output.find("Traceback (most recent call last):"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("bad_envs.py"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace python_worker_env_test
}  // namespace asyncrl
