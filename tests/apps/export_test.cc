// train_a3c --export: a trained checkpoint of each built-in arch (and the
// run's recorded observation scaling, normalization, a game's mask) written
// as TorchScript by the program, then run where asyncrl is not: loaded with
// torch::jit::load here and with torch.jit.load in Python
// (tests/python/run_policy.py, Debian's python3-torch). Both must give the
// policy asyncrl itself computes from the checkpoint (its model, loaded by
// the agent, on the observations as the agent sees them) on 1,000 recorded
// observations: float32 within gradient_check.h's tolerance, the most
// probable action the same. atari-conv has no built-in environment; the
// numeric test (tests/agents/policy_script_test.cc) covers it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../agents/gradient_check.h"
#include "../experiments/test_helpers.h"
#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/distributions.h"
#include "asyncrl/agents/models.h"
#include "asyncrl/agents/policy_script.h"
#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/envs/wrappers.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/seeding.h"
#include "test_paths.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace export_test {
namespace {

namespace fs = std::filesystem;
using testing::Exec;
using testing::ProcessRun;
using testing::TempDir;

constexpr int64_t kRows = 1000;

struct ExportCase {
  std::string name;
  std::string env;
  std::string arch;
  std::string flags;  // Recorded by the run; the export must apply them.
};

void PrintTo(const ExportCase& c, std::ostream* os) { *os << c.name; }

ProcessRun TrainA3C(const std::string& args) {
  return Exec(TRAIN_A3C_BIN, args);
}

// A run of `steps` steps (one worker, no evaluation) of `binary` with
// `args` into `outdir`; returns its final checkpoint, or "" after a failure
// the test reports.
std::string TrainBriefly(const std::string& binary, const std::string& outdir,
                         const std::string& args, int steps) {
  const ProcessRun run = Exec(
      binary, "--outdir " + outdir + " --processes 1 --steps " +
                  std::to_string(steps) + " --eval-interval 0 --quiet " + args);
  EXPECT_EQ(run.status, 0) << run.output;
  if (run.status != 0) return "";
  return run.Lines().at(0).substr(std::string("results in ").size()) + "/" +
         std::to_string(steps) + "_finish";
}

// kRows raw observations of `env`, acting at random (legal moves only).
torch::Tensor RecordObservations(Env& env) {
  std::mt19937_64 rng(5);
  const Space obs_space = env.ObservationSpace();
  const Space act_space = env.ActionSpace();
  const int64_t size = obs_space.FlatSize();
  torch::Tensor rows = torch::empty({kRows, size});
  FloatView obs = env.Reset(uint64_t{3});
  std::vector<float> values;
  for (int64_t r = 0; r < kRows; ++r) {
    std::copy(obs.data, obs.data + size, rows.data_ptr<float>() + r * size);
    const Action action = testing::RandomLegalAction(obs_space, act_space,
                                                     obs.data, rng, &values);
    const StepResult step = env.Step(action);
    obs = step.Done() ? env.Reset() : step.observation;
  }
  return rows;
}

void WriteFloats(const fs::path& path, const torch::Tensor& t) {
  std::ofstream out(path, std::ios::binary);
  const torch::Tensor c = t.contiguous();
  out.write(reinterpret_cast<const char*>(c.data_ptr<float>()),
            static_cast<std::streamsize>(c.numel() * sizeof(float)));
}

torch::Tensor ReadFloats(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  torch::Tensor t =
      torch::empty({static_cast<int64_t>(bytes.size() / sizeof(float))});
  std::memcpy(t.data_ptr<float>(), bytes.data(), bytes.size());
  return t;
}

class ExportTest : public ::testing::TestWithParam<ExportCase> {};

TEST_P(ExportTest, TheExportedPolicyIsTheAgentsInCppAndPython) {
  ConfigureTorchForFork();
  const ExportCase& c = GetParam();
  TempDir dir("export_" + c.name);
  const std::string trained =
      TrainBriefly(TRAIN_A3C_BIN, dir.str(),
                   "--env " + c.env + " --arch " + c.arch + " " + c.flags, 400);
  ASSERT_FALSE(trained.empty());
  const fs::path checkpoint(trained);
  const fs::path policy = dir.path() / "policy.pt";
  // Only --load: the environment, arch and observation options come from
  // the checkpoint.
  const ProcessRun exported = TrainA3C("--export " + policy.string() +
                                       " --load " + checkpoint.string());
  ASSERT_EQ(exported.status, 0) << exported.output;
  EXPECT_EQ(exported.output, "[info] Exported the policy of " +
                                 checkpoint.string() + " to " +
                                 policy.string() + "\n");

  // The agent as the trainer builds it, loaded from the checkpoint.
  std::unique_ptr<Env> env = MakeEnv(c.env);
  const torch::Tensor raw = RecordObservations(*env);
  torch::Tensor seen = raw;
  Space obs_space = env->ObservationSpace();
  const bool scaled = c.flags.find("--scale-observations") != std::string::npos;
  if (scaled) {
    ScaleObservations scale(MakeEnv(c.env));
    obs_space = scale.ObservationSpace();
    seen = (raw.to(torch::kDouble) * torch::tensor(scale.factor()) +
            torch::tensor(scale.offset()))
               .to(torch::kFloat);
  }
  const Space act_space = env->ActionSpace();
  A3COptions options;
  options.normalize_observations =
      c.flags.find("--normalize-observations") != std::string::npos;
  A3C agent(DefaultModelRegistry().Make(c.arch, obs_space, act_space),
            obs_space, act_space, options);
  agent.LoadFrom(LoadCheckpointDir(checkpoint.string()));
  if (agent.normalizer() != nullptr) {
    torch::Tensor normalized = torch::empty_like(seen);
    agent.normalizer()->Normalize(seen.contiguous().data_ptr<float>(), kRows,
                                  normalized.data_ptr<float>());
    seen = normalized;
  }
  ActorCriticModel& model = agent.model();
  const bool recurrent = model.StateSize() > 0;
  torch::manual_seed(9);
  const torch::Tensor state =
      recurrent ? torch::randn({kRows, model.StateSize()}) * 0.5
                : torch::Tensor();
  torch::NoGradGuard no_grad;
  ModelStep want = model.Step(seen, state);
  if (obs_space.action_mask > 0) {
    want.output.logits = MaskLogits(want.output.logits, seen);
  }
  const bool categorical = model.Kind() == PolicyKind::kCategorical;
  std::vector<torch::Tensor> expected;
  if (categorical) {
    expected = {want.output.logits, want.output.value};
  } else {
    expected = {want.output.mean, want.output.log_std, want.output.value};
  }
  if (recurrent) expected.push_back(want.state);
  const torch::Tensor first = expected[0];
  const torch::Tensor expected_act =
      categorical ? first.argmax(1).to(torch::kFloat) : first;
  // Rows whose two best logits are too close to call are not compared.
  torch::Tensor decided = torch::ones({kRows}, torch::kBool);
  if (categorical) {
    const torch::Tensor legal = first.masked_select(first > kMaskedLogit);
    const double tolerance =
        4096 * std::ldexp(1.0, -24) * legal.abs().max().item<double>();
    const torch::Tensor top = std::get<0>(first.topk(2, 1));
    decided = (top.select(1, 0) - top.select(1, 1)) > tolerance;
    EXPECT_GT(decided.sum().item<int64_t>(), kRows * 99 / 100);
  }
  const auto compare = [&](const std::vector<torch::Tensor>& got,
                           const torch::Tensor& acted,
                           const std::string& where) {
    ASSERT_EQ(got.size(), expected.size()) << where;
    for (size_t i = 0; i < got.size(); ++i) {
      torch::Tensor g = got[i].reshape_as(expected[i]);
      torch::Tensor e = expected[i];
      if (i == 0 && obs_space.action_mask > 0) {
        // Illegal actions' logits are exactly the mask's; the legal ones are
        // compared on their own scale.
        const torch::Tensor illegal = e.eq(kMaskedLogit);
        EXPECT_TRUE(g.eq(kMaskedLogit).eq(illegal).all().item<bool>()) << where;
        g = g.masked_fill(illegal, 0);
        e = e.masked_fill(illegal, 0);
      }
      testing::ExpectFloatMatchesDouble(g, e,
                                        where + " output " + std::to_string(i));
    }
    const torch::Tensor a = acted.reshape_as(expected_act);
    if (categorical) {
      EXPECT_TRUE(a.eq(expected_act).masked_select(decided).all().item<bool>())
          << where << ": the most probable actions differ";
    } else {
      testing::ExpectFloatMatchesDouble(a, expected_act, where + " act");
    }
  };

  // C++: torch::jit::load.
  torch::jit::Module module = torch::jit::load(policy.string());
  EXPECT_EQ(module.attr("env").toStringRef(), c.env);
  EXPECT_EQ(module.attr("arch").toStringRef(), c.arch);
  std::vector<torch::jit::IValue> inputs = {raw};
  if (recurrent) inputs.push_back(state);
  // Held while its elements are read (a temporary tuple would dangle).
  const torch::jit::IValue outputs = module.forward(inputs);
  std::vector<torch::Tensor> got;
  for (const auto& v : outputs.toTupleRef().elements()) {
    got.push_back(v.toTensor());
  }
  const torch::jit::IValue acted = module.get_method("act")(inputs);
  compare(
      got,
      (recurrent ? acted.toTuple()->elements()[0].toTensor() : acted.toTensor())
          .to(torch::kFloat),
      "C++");

  // Python: torch.jit.load.
  WriteFloats(dir.path() / "obs.f32", raw);
  if (recurrent) WriteFloats(dir.path() / "state.f32", state);
  const ProcessRun python =
      Exec(ASYNCRL_PYTHON,
           std::string(ASYNCRL_SOURCE_DIR) + "/tests/python/run_policy.py " +
               policy.string() + " " + std::to_string(kRows) + " " +
               (dir.path() / "obs.f32").string() + " " +
               (recurrent ? (dir.path() / "state.f32").string() : "-") + " " +
               (dir.path() / "out").string());
  ASSERT_EQ(python.status, 0) << python.output;
  std::vector<torch::Tensor> from_python;
  for (size_t i = 0; i < expected.size(); ++i) {
    from_python.push_back(
        ReadFloats(dir.path() / ("out." + std::to_string(i))));
  }
  compare(from_python, ReadFloats(dir.path() / "out.act"), "Python");

  // ONNX: the graph passes onnx.checker, its inputs and outputs named.
  const fs::path onnx = dir.path() / "policy.onnx";
  const ProcessRun converted =
      Exec(ASYNCRL_PYTHON, std::string(ASYNCRL_SOURCE_DIR) +
                               "/scripts/export_onnx.py " + policy.string() +
                               " " + onnx.string());
  ASSERT_EQ(converted.status, 0) << converted.output;
  const std::string names =
      std::string(recurrent ? "inputs obs, state; " : "inputs obs; ") +
      "outputs " + (categorical ? "logits" : "mean, log_std") + ", value" +
      (recurrent ? ", next_state" : "");
  EXPECT_EQ(converted.output, "export_onnx: wrote " + onnx.string() +
                                  " (opset 14; " + names +
                                  "); onnx.checker passed\n");
  EXPECT_TRUE(fs::is_regular_file(onnx));
}

INSTANTIATE_TEST_SUITE_P(
    Archs, ExportTest,
    ::testing::Values(
        ExportCase{"fc_softmax", "CartPole-v1", "fc-softmax", ""},
        ExportCase{"fc_gaussian_scaled", "Pendulum-v1", "fc-gaussian",
                   "--scale-observations"},
        ExportCase{"fc_softmax_lstm_normalized", "Acrobot-v1",
                   "fc-softmax-lstm", "--normalize-observations"},
        ExportCase{"fc_gaussian_lstm", "Pendulum-v1", "fc-gaussian-lstm", ""},
        ExportCase{"minatar_conv", "MinAtar/Breakout", "minatar-conv", ""},
        ExportCase{"minatar_conv_lstm", "MinAtar/Breakout", "minatar-conv-lstm",
                   ""},
        ExportCase{"masked_game", "TicTacToe", "fc-softmax", ""},
        ExportCase{"board_conv", "ConnectFour", "board-conv", ""}),
    [](const ::testing::TestParamInfo<ExportCase>& info) {
      return info.param.name;
    });

// The exported policy played in the Python environment gives the episodes
// --demo --act-deterministically gives with the checkpoint: the same seed
// (the demo's evaluation seed), the same most probable actions, the same
// returns. A policy trained briefly, so that the returns differ.
class ExportPlayTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExportPlayTest, TheDemoAndAPythonLoopGiveTheSameReturns) {
  if (std::string(ASYNCRL_PYTHON_PACKAGE).empty()) {
    GTEST_SKIP() << "this build has no Python module (sanitizer builds)";
  }
  const std::string& arch = GetParam();
  TempDir dir("export_play_" + arch);
  const std::string checkpoint = TrainBriefly(
      TRAIN_A3C_BIN, dir.str(), "--env CartPole-v1 --arch " + arch, 6000);
  ASSERT_FALSE(checkpoint.empty());
  const ProcessRun demo =
      TrainA3C("--demo --load " + checkpoint +
               " --act-deterministically --eval-n-runs 5 --log-level warning");
  ASSERT_EQ(demo.status, 0) << demo.output;
  const std::string policy = dir.str() + "/policy.pt";
  ASSERT_EQ(TrainA3C("--export " + policy + " --load " + checkpoint).status, 0);
  const ProcessRun played =
      Exec("PYTHONPATH=" + std::string(ASYNCRL_PYTHON_PACKAGE) + " " +
               ASYNCRL_PYTHON,
           std::string(ASYNCRL_SOURCE_DIR) + "/tests/python/play_policy.py " +
               policy + " CartPole-v1 " + std::to_string(EvalEnvSeed(0, 0, 1)) +
               " 5");
  ASSERT_EQ(played.status, 0) << played.output;
  std::vector<double> returns;
  for (const std::string& r : testing::Split(played.Lines().at(0), ' ')) {
    returns.push_back(std::stod(r));
  }
  ASSERT_EQ(returns.size(), 5u) << played.output;
  double sum = 0;
  for (double r : returns) sum += r;
  std::vector<double> sorted = returns;
  std::sort(sorted.begin(), sorted.end());
  std::ostringstream expected;
  expected << "n_runs: 5 mean: " << sum / 5 << " median: " << sorted[2];
  EXPECT_EQ(demo.output.rfind(expected.str(), 0), 0u)
      << demo.output << " vs Python's " << played.output;
  EXPECT_NE(sorted.front(), sorted.back())
      << "every episode returned the same: the comparison tells nothing";
}

INSTANTIATE_TEST_SUITE_P(Archs, ExportPlayTest,
                         ::testing::Values("fc-softmax", "fc-softmax-lstm"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name;
                           for (char c : info.param) {
                             name += std::isalnum(c) ? c : '_';
                           }
                           return name;
                         });

// atari-conv has no built-in environment to train on: its export (a model
// with its initial parameters, as --export writes it) converts to ONNX too,
// both layouts, so every built-in arch passes the checker.
TEST(ExportOnnxTest, AtariConvConvertsWithoutAnEnvironment) {
  ConfigureTorchForFork();
  TempDir dir("export_atari");
  const Space obs = Space::Box({4, 84, 84}, 0.0f, 255.0f);
  const Space act = Space::Discrete(6);
  const A3COptions options;
  for (const std::string arch : {"atari-conv", "atari-conv-lstm"}) {
    SCOPED_TRACE(arch);
    A3C agent(DefaultModelRegistry().Make(arch, obs, act), obs, act, options);
    const fs::path policy = dir.path() / (arch + ".pt");
    SaveScriptModule(ExportPolicy(agent, {}), policy.string());
    const fs::path onnx = dir.path() / (arch + ".onnx");
    const ProcessRun converted =
        Exec(ASYNCRL_PYTHON, std::string(ASYNCRL_SOURCE_DIR) +
                                 "/scripts/export_onnx.py " + policy.string() +
                                 " " + onnx.string());
    ASSERT_EQ(converted.status, 0) << converted.output;
    EXPECT_NE(converted.output.find("onnx.checker passed"), std::string::npos)
        << converted.output;
  }
}

// A program's own agent that is not an actor-critic (the custom-agent
// example's hill climber) is refused in one line.
TEST(ExportFlagsTest, AnAgentThatIsNotAnActorCriticIsRefused) {
  TempDir dir("export_custom");
  const std::string checkpoint =
      TrainBriefly(CUSTOM_AGENT_EXAMPLE_BIN, dir.str(), "", 200);
  ASSERT_FALSE(checkpoint.empty());
  const std::string file = dir.str() + "/policy.pt";
  const ProcessRun r = Exec(CUSTOM_AGENT_EXAMPLE_BIN,
                            "--export " + file + " --load " + checkpoint);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output, "hill_climbing: --export=" + file +
                          " is invalid; accepted: an agent derived from "
                          "ActorCriticAgent (hill_climbing's make_agent "
                          "returns another)\n");
  EXPECT_FALSE(fs::exists(file));
}

// scripts/export_onnx.py on what is not an exported policy: one line, exit
// 1, nothing written.
TEST(ExportFlagsTest, ExportOnnxRefusesWhatIsNotAPolicyInOneLine) {
  TempDir dir("export_onnx_bad");
  const fs::path bogus = dir.path() / "bogus.pt";
  std::ofstream(bogus) << "not a TorchScript archive";
  const fs::path out = dir.path() / "out.onnx";
  const std::string script =
      std::string(ASYNCRL_SOURCE_DIR) + "/scripts/export_onnx.py ";
  const ProcessRun r =
      Exec(ASYNCRL_PYTHON, script + bogus.string() + " " + out.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.rfind("export_onnx: " + bogus.string() +
                               " is not a TorchScript policy: ",
                           0),
            0u)
      << r.output;
  EXPECT_EQ(testing::Split(r.output, '\n').size(), 1u) << r.output;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()),
                          fs::directory_iterator()),
            1);  // No temporary file left behind.
}

// export_onnx.py writes only regular files, as --export: a device or a
// FIFO is refused in one line (it replaced /dev/null with a file), and a
// symbolic link is written through.
TEST(ExportFlagsTest, ExportOnnxWritesOnlyRegularFiles) {
  TempDir dir("export_onnx_targets");
  const std::string checkpoint =
      TrainBriefly(TRAIN_A3C_BIN, dir.str(), "", 200);
  ASSERT_FALSE(checkpoint.empty());
  const fs::path policy = dir.path() / "policy.pt";
  ASSERT_EQ(
      TrainA3C("--export " + policy.string() + " --load " + checkpoint).status,
      0);
  const std::string script = std::string(ASYNCRL_SOURCE_DIR) +
                             "/scripts/export_onnx.py " + policy.string() + " ";
  ProcessRun r = Exec(ASYNCRL_PYTHON, script + "/dev/null");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output,
            "export_onnx: cannot write /dev/null: it is a character device; "
            "only a regular file is written\n");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  ASSERT_EQ(mkfifo((dir.path() / "fifo").c_str(), 0600), 0);
  r = Exec(ASYNCRL_PYTHON, script + (dir.path() / "fifo").string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("it is a FIFO"), std::string::npos) << r.output;
  fs::create_symlink("policy.onnx", dir.path() / "link.onnx");
  r = Exec(ASYNCRL_PYTHON, script + (dir.path() / "link.onnx").string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(dir.path() / "link.onnx"));
  EXPECT_TRUE(fs::is_regular_file(dir.path() / "policy.onnx"));
}

// What --export refuses, in one line and with nothing written.
TEST(ExportFlagsTest, BadExportFlagsExitTwoInOneLine) {
  TempDir dir("export_flags");
  const std::string checkpoint =
      TrainBriefly(TRAIN_A3C_BIN, dir.str(), "", 200);
  ASSERT_FALSE(checkpoint.empty());
  const std::string file = dir.str() + "/policy.pt";
  ASSERT_EQ(mkfifo((dir.str() + "/fifo").c_str(), 0600), 0);
  struct Case {
    std::string args;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {"--export " + file,
            "--export=" + file +
                " is invalid; accepted: only with --load DIR (the agent to "
                "export)"},
           {"--export " + file + " --load " + checkpoint + " --demo",
            "--export=" + file + " is invalid; accepted: not with --demo"},
           {"--export " + dir.str() + "/missing/policy.pt --load " + checkpoint,
            "--export=" + dir.str() +
                "/missing/policy.pt is invalid; accepted: a file name in an "
                "existing folder (the folder " +
                dir.str() + "/missing does not exist)"},
           {"--export " + dir.str() + " --load " + checkpoint,
            "--export=" + dir.str() +
                " is invalid; accepted: a file name in an existing folder (" +
                dir.str() + " is a directory; only a regular file is written)"},
           {"--export /dev/null --load " + checkpoint,
            "--export=/dev/null is invalid; accepted: a file name in an "
            "existing folder (/dev/null is a character device; only a "
            "regular file is written)"},
           {"--export " + dir.str() + "/fifo --load " + checkpoint,
            "--export=" + dir.str() +
                "/fifo is invalid; accepted: a file name in an existing "
                "folder (" +
                dir.str() + "/fifo is a FIFO; only a regular file is written)"},
           {"--export '' --load " + checkpoint,
            "--export='' is invalid; accepted: a file name in an existing "
            "folder"}}) {
    SCOPED_TRACE(c.args);
    const ProcessRun r = TrainA3C(c.args);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output, "train_a3c: " + c.expected + "\n");
    EXPECT_FALSE(fs::exists(file));
  }
}

// Where the export writes: through a symbolic link to the file it names
// (the link stays), under a 250-character name (its temporary name is
// short), and on a disk that fills (here: a file-size limit, EFBIG) one
// line, exit 1, nothing left behind (no temporary, the old file intact).
TEST(ExportFlagsTest, ExportWritesThroughLinksLongNamesAndFailsCleanly) {
  TempDir dir("export_targets");
  const std::string checkpoint =
      TrainBriefly(TRAIN_A3C_BIN, dir.str(), "", 200);
  ASSERT_FALSE(checkpoint.empty());
  const fs::path out = dir.path() / "out";
  fs::create_directories(out);
  fs::create_symlink("policy.pt", out / "link.pt");
  ProcessRun r = TrainA3C("--export " + (out / "link.pt").string() +
                          " --load " + checkpoint);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(out / "link.pt"));
  EXPECT_TRUE(fs::is_regular_file(out / "policy.pt"));
  const std::string before = testing::ReadFile(out / "policy.pt");

  const std::string long_name = std::string(247, 'a') + ".pt";
  r = TrainA3C("--export " + (out / long_name).string() + " --load " +
               checkpoint);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(testing::ReadFile(out / long_name), before);

  r = Exec(
      "ulimit -f 64; " + std::string(TRAIN_A3C_BIN),
      "--export " + (out / "policy.pt").string() + " --load " + checkpoint);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output, "train_a3c: cannot write " +
                          (out / "policy.pt").string() + ": File too large\n");
  EXPECT_EQ(testing::ReadFile(out / "policy.pt"), before);
  // link.pt, policy.pt and the long name: no temporary file.
  EXPECT_EQ(
      std::distance(fs::directory_iterator(out), fs::directory_iterator()), 3);
}

}  // namespace
}  // namespace export_test
}  // namespace asyncrl
