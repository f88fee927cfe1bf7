// The exported TorchScript policy (agents/policy_script.h) against the
// model and agent it was written from: for every built-in arch, saved,
// loaded back with torch::jit::load (no asyncrl code involved in running
// it) and compared on 1,000 observations (float32 outputs within
// gradient_check.h's tolerance, the most probable actions equal); the
// observation scaling, normalization and a game's mask inside the module;
// the models it refuses, in one line.
#include "asyncrl/agents/policy_script.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/distributions.h"
#include "asyncrl/agents/models.h"
#include "asyncrl/agents/torch_setup.h"
#include "gradient_check.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace policy_script_test {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kRows = 1000;

fs::path TempFile(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("asyncrl-policy-script-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// Saved and loaded back: what a user of the file gets.
torch::jit::Module RoundTrip(const torch::jit::Module& module,
                             const std::string& name) {
  const fs::path path = TempFile(name + ".pt");
  SaveScriptModule(module, path.string());
  torch::jit::Module loaded = torch::jit::load(path.string());
  fs::remove(path);
  return loaded;
}

std::vector<torch::Tensor> Outputs(const torch::jit::IValue& value) {
  std::vector<torch::Tensor> tensors;
  for (const auto& element : value.toTuple()->elements()) {
    tensors.push_back(element.toTensor());
  }
  return tensors;
}

// Rows whose two largest logits are further apart than `tolerance`: the
// most probable action of those cannot depend on rounding.
torch::Tensor Decided(const torch::Tensor& logits, double tolerance) {
  const torch::Tensor top = std::get<0>(logits.topk(2, 1));
  return (top.select(1, 0) - top.select(1, 1)) > tolerance;
}

double Tolerance(const torch::Tensor& reference) {
  return 4096 * std::ldexp(1.0, -24) * reference.abs().max().item<double>();
}

struct ArchCase {
  std::string arch;
  Space obs;
  Space act;
};

void PrintTo(const ArchCase& c, std::ostream* os) { *os << c.arch; }

std::string CaseName(const ::testing::TestParamInfo<ArchCase>& info) {
  std::string name;
  for (char c : info.param.arch) name += std::isalnum(c) ? c : '_';
  return name;
}

class PolicyScriptArchTest : public ::testing::TestWithParam<ArchCase> {};

// The exported module's forward (and act) equal the model's Forward (and
// Step from a random state, for recurrent models) on kRows observations.
TEST_P(PolicyScriptArchTest, TheExportedModuleComputesTheModelsOutputs) {
  ConfigureTorchForFork();
  const ArchCase& c = GetParam();
  torch::manual_seed(7);
  auto model = DefaultModelRegistry().Make(c.arch, c.obs, c.act);
  {
    // A trained policy's log standard deviation is not its initial 0.
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) {
      if (p.key() == "log_std") p.value().uniform_(-1.0, 0.5);
    }
  }
  A3COptions options;
  A3C agent(model, c.obs, c.act, options);
  ExportOptions export_options;
  export_options.info["arch"] = c.arch;
  torch::jit::Module module =
      RoundTrip(ExportPolicy(agent, export_options), CaseName({c, 0}));
  EXPECT_EQ(module.attr("arch").toStringRef(), c.arch);
  EXPECT_EQ(module.attr("observation_size").toInt(), c.obs.FlatSize());
  EXPECT_EQ(module.attr("state_size").toInt(), model->StateSize());

  const bool recurrent = model->StateSize() > 0;
  const torch::Tensor obs =
      torch::rand({kRows, c.obs.FlatSize()}) * 2 - 0.5;  // Some out of bounds.
  const torch::Tensor state =
      recurrent ? torch::randn({kRows, model->StateSize()}) : torch::Tensor();
  torch::NoGradGuard no_grad;
  const ModelStep want = model->Step(obs, state);
  std::vector<torch::jit::IValue> inputs = {obs};
  if (recurrent) inputs.push_back(state);
  const std::vector<torch::Tensor> got =
      Outputs(module.get_method("forward")(inputs));
  const bool categorical = model->Kind() == PolicyKind::kCategorical;
  size_t i = 0;
  if (categorical) {
    testing::ExpectFloatMatchesDouble(got[i++], want.output.logits, "logits");
  } else {
    testing::ExpectFloatMatchesDouble(got[i++], want.output.mean, "mean");
    testing::ExpectFloatMatchesDouble(got[i++], want.output.log_std, "log_std");
  }
  testing::ExpectFloatMatchesDouble(got[i++], want.output.value, "value");
  if (recurrent) {
    testing::ExpectFloatMatchesDouble(got[i++], want.state, "state");
    const torch::Tensor zero =
        module.get_method("initial_state")({int64_t{3}}).toTensor();
    EXPECT_TRUE(zero.equal(torch::zeros({3, model->StateSize()})));
  }
  ASSERT_EQ(got.size(), i);

  const torch::jit::IValue acted = module.get_method("act")(inputs);
  const torch::Tensor actions =
      recurrent ? acted.toTuple()->elements()[0].toTensor() : acted.toTensor();
  if (categorical) {
    const torch::Tensor decided =
        Decided(want.output.logits, Tolerance(want.output.logits));
    EXPECT_GT(decided.sum().item<int64_t>(), kRows * 99 / 100);
    const torch::Tensor same = actions.eq(want.output.logits.argmax(1));
    EXPECT_TRUE(same.masked_select(decided).all().item<bool>());
  } else {
    testing::ExpectFloatMatchesDouble(actions, want.output.mean, "act");
  }
}

Space Image(int64_t c, int64_t side) {
  return Space::Box({c, side, side}, 0.0f, 1.0f);
}

// A Connect Four observation: two 6x7 planes, then the 7-move mask.
Space Board() {
  Space s = Space::Box({2 * 6 * 7 + 7}, 0.0f, 1.0f);
  s.planes = {2, 6, 7};
  s.action_mask = 7;
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    BuiltinArchs, PolicyScriptArchTest,
    ::testing::Values(
        ArchCase{"fc-softmax", Space::Box({4}, -5.0f, 5.0f),
                 Space::Discrete(3)},
        ArchCase{"fc-gaussian", Space::Box({3}, -5.0f, 5.0f),
                 Space::Box({2}, -2.0f, 1.0f)},
        ArchCase{"minatar-conv", Image(4, 10), Space::Discrete(6)},
        ArchCase{"atari-conv", Image(2, 24), Space::Discrete(4)},
        ArchCase{"board-conv", Board(), Space::Discrete(7)},
        ArchCase{"fc-softmax-lstm", Space::Box({4}, -5.0f, 5.0f),
                 Space::Discrete(2)},
        ArchCase{"fc-gaussian-lstm", Space::Box({3}, -5.0f, 5.0f),
                 Space::Box({1}, -2.0f, 2.0f)},
        ArchCase{"minatar-conv-lstm", Image(4, 10), Space::Discrete(6)},
        ArchCase{"atari-conv-lstm", Image(2, 24), Space::Discrete(4)}),
    CaseName);

// Scaling (as ScaleObservations), normalization with the agent's frozen
// statistics (as ObservationNormalizer) and a game's mask: the module's
// actions are the agent's deterministic actions on raw observations.
TEST(PolicyScriptTest, ScalingNormalizationAndMaskAreInsideTheModule) {
  ConfigureTorchForFork();
  torch::manual_seed(11);
  constexpr int64_t kFeatures = 5;
  constexpr int64_t kActions = 4;
  Space obs_space = Space::Box({kFeatures + kActions}, -3.0f, 3.0f);
  obs_space.action_mask = kActions;
  const Space act_space = Space::Discrete(kActions);
  A3COptions options;
  options.act_deterministically = true;
  options.normalize_observations = true;
  options.normalize_observations_clip = 2.0;  // Some rows are clipped.
  A3C agent(FcSoftmaxActorCritic(kFeatures + kActions, kActions,
                                 std::vector<int64_t>{32, 32})
                .ptr(),
            obs_space, act_space, options);

  // Raw observations: features around 3 +- 2, a mask with 1-4 legal actions.
  torch::Tensor raw = torch::randn({kRows, kFeatures + kActions}) * 2 + 3;
  torch::Tensor mask = (torch::rand({kRows, kActions}) < 0.5).to(torch::kFloat);
  // At least one legal action per row: a random column set to 1.
  mask.scatter_(1, torch::randint(kActions, {kRows, 1}), 1.0);
  raw.slice(1, kFeatures).copy_(mask);
  ObservationScaling scaling;
  for (int64_t j = 0; j < kFeatures + kActions; ++j) {
    const bool feature = j < kFeatures;
    scaling.factor.push_back(feature ? 0.25 + 0.1 * j : 1.0);
    scaling.offset.push_back(feature ? -0.5 * j : 0.0);
  }
  const torch::Tensor raw_d = raw.to(torch::kDouble);
  const torch::Tensor scaled =
      (raw_d * torch::tensor(scaling.factor, torch::kDouble) +
       torch::tensor(scaling.offset, torch::kDouble))
          .to(torch::kFloat)
          .contiguous();
  // Statistics of the scaled observations, merged as training merges them.
  std::vector<float> normalized(scaled.numel());
  agent.normalizer()->MergeAndNormalize(scaled.data_ptr<float>(), kRows,
                                        normalized.data());

  ExportOptions export_options;
  export_options.scaling = scaling;
  torch::jit::Module module =
      RoundTrip(ExportPolicy(agent, export_options), "normalized");
  const torch::Tensor logits = Outputs(module.forward({raw}))[0];
  const torch::Tensor acted = module.get_method("act")({raw}).toTensor();
  int64_t illegal = 0;
  int64_t compared = 0;
  const double tolerance = Tolerance(logits.masked_select(mask > 0));
  const torch::Tensor decided = Decided(logits, tolerance);
  for (int64_t r = 0; r < kRows; ++r) {
    const float* row = scaled.data_ptr<float>() + r * scaled.size(1);
    const Action a = agent.Act(FloatView{row, scaled.size(1)});
    agent.StopEpisode();
    const int64_t exported = acted[r].item<int64_t>();
    illegal += mask[r][exported].item<float>() == 0;
    if (decided[r].item<bool>()) {
      EXPECT_EQ(exported, a.index) << "row " << r;
      ++compared;
    }
  }
  EXPECT_EQ(illegal, 0);
  EXPECT_GT(compared, kRows * 99 / 100);
  // Illegal actions' logits are the mask's -1e30.
  EXPECT_TRUE(
      logits.masked_select(mask == 0).eq(kMaskedLogit).all().item<bool>());
}

// A model that does not write itself, and a layer the writer does not
// know: refused in one line each.
TEST(PolicyScriptTest, ModelsThatCannotBeWrittenAreRefusedInOneLine) {
  ConfigureTorchForFork();
  struct Opaque : ActorCriticModel {
    Opaque() { w = register_parameter("w", torch::zeros({2, 2})); }
    PolicyKind Kind() const override { return PolicyKind::kCategorical; }
    ModelOutput Forward(const torch::Tensor& obs) override {
      return {obs.matmul(w), {}, {}, obs.sum(1)};
    }
    torch::Tensor w;
  };
  A3COptions options;
  A3C opaque(std::make_shared<Opaque>(), Space::Box({2}, -1.0f, 1.0f),
             Space::Discrete(2), options);
  try {
    ExportPolicy(opaque, {});
    ADD_FAILURE() << "exported";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "this agent's model cannot be exported: it does not write "
              "itself as TorchScript (ActorCriticModel::Script)");
  }

  torch::nn::Sequential seq(torch::nn::Linear(2, 2), torch::nn::Sigmoid());
  torch::jit::Module module("m");
  ScriptWriter writer(&module);
  try {
    writer.Sequential(*seq, "x", "pi");
    ADD_FAILURE() << "written";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot write pi_1 (torch::nn::Sigmoid) as "
                        "TorchScript"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

// The file is replaced whole: a folder that does not exist is named, and
// what was at the path stays.
TEST(PolicyScriptTest, SavingIntoAMissingFolderNamesThePath) {
  ConfigureTorchForFork();
  torch::jit::Module module("m");
  module.define("def forward(self, x: Tensor) -> Tensor:\n    return x\n");
  const fs::path missing = TempFile("no-such-folder") / "policy.pt";
  try {
    SaveScriptModule(module, missing.string());
    ADD_FAILURE() << "saved";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("cannot write " + missing.string() + ": ", 0), 0u)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(missing.parent_path()));
}

}  // namespace
}  // namespace policy_script_test
}  // namespace asyncrl
