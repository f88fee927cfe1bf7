// The model registry and the networks: output shapes for every
// architecture, "auto" choosing by the spaces, clear errors for
// observations an architecture cannot take.
#include "asyncrl/agents/models.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "asyncrl/agents/conv_models.h"
#include "asyncrl/agents/recurrent_models.h"
#include "asyncrl/agents/rollout.h"
#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/misc/validate.h"
#include "gradient_check.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace models_test {
namespace {

class ModelsTest : public ::testing::Test {
 protected:
  void SetUp() override { ConfigureTorchForFork(); }
};

TEST_F(ModelsTest, EveryArchitectureGivesOneOutputPerRow) {
  const Space minatar = MakeEnv("MinAtar/Seaquest")->ObservationSpace();
  const Space atari = Space::Box({4, 84, 84}, 0.0f, 255.0f);
  const Space flat = Space::Box({5}, -1.0f, 1.0f);
  const Space discrete = Space::Discrete(6);
  const Space box = Space::Box({2}, -2.0f, 2.0f);
  struct Case {
    std::string arch;
    Space obs;
    Space act;
  };
  const std::vector<Case> cases = {{"fc-softmax", flat, discrete},
                                   {"fc-gaussian", flat, box},
                                   {"minatar-conv", minatar, discrete},
                                   {"atari-conv", atari, discrete},
                                   {"minatar-conv-lstm", minatar, discrete},
                                   {"atari-conv-lstm", atari, discrete},
                                   {"fc-softmax-lstm", flat, discrete},
                                   {"fc-gaussian-lstm", flat, box}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.arch);
    auto model = DefaultModelRegistry().Make(c.arch, c.obs, c.act);
    const auto obs = torch::rand({3, c.obs.FlatSize()});
    const ModelOutput out = model->Forward(obs);
    EXPECT_EQ(out.value.sizes(), torch::IntArrayRef({3}));
    if (c.act.IsDiscrete()) {
      EXPECT_EQ(out.logits.sizes(), torch::IntArrayRef({3, 6}));
    } else {
      EXPECT_EQ(out.mean.sizes(), torch::IntArrayRef({3, 2}));
      EXPECT_TRUE((out.mean.abs() <= 2.0).all().item<bool>());
    }
    const bool recurrent =
        dynamic_cast<RecurrentActorCritic*>(model.get()) != nullptr;
    EXPECT_EQ(recurrent, c.arch.size() > 5 && c.arch.compare(c.arch.size() - 5,
                                                             5, "-lstm") == 0);
    EXPECT_EQ(model->StateSize() > 0, recurrent);
  }
}

// --hidden-sizes and --activation shape fc-softmax and fc-gaussian (each of
// the policy's and the value's networks); "auto" keeps each arch's own.
TEST_F(ModelsTest, NetworkOptionsShapeTheFullyConnectedArchs) {
  const Space flat = Space::Box({5}, -1.0f, 1.0f);
  const Space discrete = Space::Discrete(3);
  const Space box = Space::Box({2}, -2.0f, 2.0f);
  struct Case {
    std::string arch;
    std::string hidden_sizes;
    std::string activation;
    std::vector<int64_t> widths;  // Expected hidden widths.
    bool tanh;                    // Expected activation.
  };
  for (const Case& c :
       std::vector<Case>{{"fc-softmax", "auto", "auto", {200, 200}, false},
                         {"fc-gaussian", "auto", "auto", {64, 64}, true},
                         {"fc-softmax", "32,16,8", "tanh", {32, 16, 8}, true},
                         {"fc-softmax", "7", "relu", {7}, false},
                         {"fc-gaussian", "auto", "relu", {64, 64}, false},
                         {"fc-gaussian", "48", "auto", {48}, true}}) {
    SCOPED_TRACE(c.arch + " " + c.hidden_sizes + " " + c.activation);
    NetworkOptions network;
    network.hidden_sizes = c.hidden_sizes;
    network.activation = c.activation;
    const Space& act = c.arch == "fc-softmax" ? discrete : box;
    auto model = DefaultModelRegistry().Make(c.arch, flat, act, network);
    model->to(torch::kDouble);
    const std::optional<DenseDescription> d = model->Describe();
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->tanh, c.tanh);
    for (const auto* layers : {&d->pi, &d->v}) {
      ASSERT_EQ(layers->size(), c.widths.size() + 1);
      int64_t in = 5;
      for (size_t i = 0; i < c.widths.size(); ++i) {
        EXPECT_EQ((*layers)[i].weight.sizes(),
                  torch::IntArrayRef({c.widths[i], in}));
        in = c.widths[i];
      }
      EXPECT_EQ(layers->back().weight.size(1), in);
    }
    // The forward pass applies the activation the description says.
    const torch::Tensor obs = torch::rand({4, 5}, torch::kDouble) * 2 - 1;
    torch::Tensor h = obs;
    for (size_t i = 0; i < d->v.size(); ++i) {
      h = torch::addmm(d->v[i].bias, h, d->v[i].weight.t());
      if (i + 1 < d->v.size()) h = c.tanh ? torch::tanh(h) : torch::relu(h);
    }
    const torch::Tensor value = model->Forward(obs).value;
    EXPECT_LE((value - h.squeeze(-1)).abs().max().item<double>(),
              1e-12 * (1 + h.abs().max().item<double>()));
  }
}

// Shapes that cannot be built, and archs of a fixed shape given one, are
// refused naming the option; "auto" is what every arch takes.
TEST_F(ModelsTest, NetworkOptionsRefuseWhatCannotBeBuilt) {
  const Space flat = Space::Box({5}, -1.0f, 1.0f);
  const Space discrete = Space::Discrete(3);
  for (const std::string bad :
       {"", "0", "64,", ",64", "64,,64", "a", "-5", " 64", "64 ", "1e3", "4097",
        "65536", "123456", "1,1,1,1,1,1,1,1,1"}) {
    SCOPED_TRACE("hidden_sizes '" + bad + "'");
    NetworkOptions network;
    network.hidden_sizes = bad;
    try {
      DefaultModelRegistry().Make("fc-softmax", flat, discrete, network);
      ADD_FAILURE() << "accepted";
    } catch (const InvalidOption& e) {
      EXPECT_EQ(e.field(), "hidden_sizes");
      EXPECT_EQ(e.value(), bad);
    }
  }
  NetworkOptions limits;
  limits.hidden_sizes = "4096,1,1,1,1,1,1,1";
  EXPECT_NO_THROW(limits.Validate());
  NetworkOptions sigmoid;
  sigmoid.activation = "sigmoid";
  try {
    DefaultModelRegistry().Make("fc-softmax", flat, discrete, sigmoid);
    ADD_FAILURE() << "accepted";
  } catch (const InvalidOption& e) {
    EXPECT_EQ(e.field(), "activation");
    EXPECT_EQ(e.accepted(), "auto, relu, tanh");
  }

  for (const std::string bad :
       {"", "0", "257", "1000", "-1", "a", " 8", "8 ", "1e2", "16,16"}) {
    SCOPED_TRACE("conv_channels '" + bad + "'");
    NetworkOptions network;
    network.conv_channels = bad;
    try {
      network.Validate();
      ADD_FAILURE() << "accepted";
    } catch (const InvalidOption& e) {
      EXPECT_EQ(e.field(), "conv_channels");
      EXPECT_EQ(e.value(), bad);
      EXPECT_EQ(e.accepted(), "auto, or a whole number from 1 to 256");
    }
  }
  NetworkOptions widest;
  widest.conv_channels = "256";
  EXPECT_NO_THROW(widest.Validate());

  for (const std::string bad : {"", "-5.5", "2.01", "nan", "inf", "-2x", "a"}) {
    SCOPED_TRACE("log_std_init '" + bad + "'");
    NetworkOptions network;
    network.log_std_init = bad;
    try {
      network.Validate();
      ADD_FAILURE() << "accepted";
    } catch (const InvalidOption& e) {
      EXPECT_EQ(e.field(), "log_std_init");
      EXPECT_EQ(e.accepted(), "auto, or a number from -5 to 2");
    }
  }
  // fc-gaussian starts with the given log standard deviation; fc-softmax
  // (no Gaussian) refuses it.
  NetworkOptions narrow;
  narrow.log_std_init = "-2";
  const Space box = Space::Box({2}, -1.0f, 1.0f);
  auto gaussian = DefaultModelRegistry().Make("fc-gaussian", flat, box, narrow);
  const ModelOutput out = gaussian->Forward(torch::zeros({3, flat.FlatSize()}));
  EXPECT_TRUE(torch::allclose(out.log_std, torch::full({3, 2}, -2.0f)));
  const ModelOutput plain = DefaultModelRegistry()
                                .Make("fc-gaussian", flat, box, {})
                                ->Forward(torch::zeros({1, flat.FlatSize()}));
  EXPECT_TRUE(torch::allclose(plain.log_std, torch::zeros({1, 2})));
  EXPECT_THROW(
      DefaultModelRegistry().Make("fc-softmax", flat, discrete, narrow),
      InvalidOption);

  // Each arch refuses the options it does not read, saying which it reads.
  const Space minatar = MakeEnv("MinAtar/Breakout")->ObservationSpace();
  const Space atari = Space::Box({4, 84, 84}, 0.0f, 255.0f);
  struct Refused {
    std::string arch;
    std::string field;
    std::string reason;
  };
  for (const Refused& c : std::vector<Refused>{
           {"minatar-conv", "activation",
            "auto (arch minatar-conv takes only --hidden-sizes and "
            "--conv-channels)"},
           {"minatar-conv-lstm", "activation",
            "auto (arch minatar-conv-lstm takes only --hidden-sizes and "
            "--conv-channels)"},
           {"fc-softmax", "conv_channels",
            "auto (arch fc-softmax takes only --hidden-sizes and "
            "--activation)"},
           {"atari-conv", "conv_channels",
            "auto (arch atari-conv has a fixed shape"},
           // The archs that take a shape, as registered.
           {"atari-conv", "hidden_sizes",
            "auto (arch atari-conv has a fixed shape; fc-gaussian takes "
            "--hidden-sizes and --activation and --log-std-init, fc-softmax "
            "takes --hidden-sizes "
            "and --activation, minatar-conv takes --hidden-sizes and "
            "--conv-channels, minatar-conv-lstm takes --hidden-sizes and "
            "--conv-channels)"},
           {"fc-softmax-lstm", "hidden_sizes",
            "auto (arch fc-softmax-lstm has a fixed shape"}}) {
    SCOPED_TRACE(c.arch + " " + c.field);
    NetworkOptions network;
    (c.field == "activation"      ? network.activation
     : c.field == "conv_channels" ? network.conv_channels
                                  : network.hidden_sizes) =
        c.field == "activation" ? "tanh" : "32";
    const Space& obs = c.arch.rfind("minatar", 0) == 0 ? minatar
                       : c.arch.rfind("atari", 0) == 0 ? atari
                                                       : flat;
    try {
      DefaultModelRegistry().Make(c.arch, obs, discrete, network);
      ADD_FAILURE() << "accepted";
    } catch (const InvalidOption& e) {
      EXPECT_EQ(e.field(), c.field);
      EXPECT_EQ(e.accepted().rfind(c.reason, 0), 0u) << e.accepted();
    }
    EXPECT_NO_THROW(
        DefaultModelRegistry().Make(c.arch, obs, discrete, NetworkOptions{}));
  }
  // An option the arch does not read is refused as such, whatever its
  // value; with one it reads beside it, the other is still refused.
  NetworkOptions too_wide;
  too_wide.conv_channels = "300";
  NetworkOptions mixed;
  mixed.hidden_sizes = "64";
  mixed.activation = "tanh";
  for (const auto& [arch, network, field] :
       {std::tuple<std::string, NetworkOptions, std::string>{
            "fc-softmax", too_wide, "conv_channels"},
        {"minatar-conv", mixed, "activation"}}) {
    SCOPED_TRACE(arch);
    try {
      DefaultModelRegistry().Make(arch, arch == "fc-softmax" ? flat : minatar,
                                  discrete, network);
      ADD_FAILURE() << "accepted";
    } catch (const InvalidOption& e) {
      EXPECT_EQ(e.field(), field);
      EXPECT_EQ(e.accepted().rfind("auto (arch " + arch + " takes only", 0), 0u)
          << e.accepted();
    }
  }
}

// --conv-channels and --hidden-sizes shape minatar-conv's convolution and
// the fully connected layers after it (minatar-conv-lstm's LSTM takes the
// last width); "auto" is the MinAtar paper's 16 channels and 128 units, and
// the fast path describes every shape.
TEST_F(ModelsTest, NetworkOptionsShapeTheMinAtarArchs) {
  const Space minatar = MakeEnv("MinAtar/Breakout")->ObservationSpace();
  const Space discrete = Space::Discrete(3);
  const int64_t c_in = minatar.shape[0];
  const int64_t maps = (minatar.shape[1] - 2) * (minatar.shape[2] - 2);
  struct Case {
    std::string arch;
    std::string channels;
    std::string sizes;
    int64_t expect_channels;
    std::vector<int64_t> expect_widths;
  };
  for (const Case& c :
       std::vector<Case>{{"minatar-conv", "auto", "auto", 16, {128}},
                         {"minatar-conv", "32", "256", 32, {256}},
                         {"minatar-conv", "8", "64,32", 8, {64, 32}},
                         {"minatar-conv-lstm", "auto", "auto", 16, {128}},
                         {"minatar-conv-lstm", "24", "96", 24, {96}}}) {
    SCOPED_TRACE(c.arch + " " + c.channels + " " + c.sizes);
    NetworkOptions network;
    network.conv_channels = c.channels;
    network.hidden_sizes = c.sizes;
    auto model =
        DefaultModelRegistry().Make(c.arch, minatar, discrete, network);
    const std::optional<DenseDescription> d = model->Describe();
    ASSERT_TRUE(d.has_value());
    ASSERT_EQ(d->convs.size(), 1u);
    EXPECT_EQ(d->convs[0].weight.sizes(),
              torch::IntArrayRef({c.expect_channels, c_in, 3, 3}));
    const bool recurrent = !d->lstm.empty();
    const std::vector<DenseDescription::Layer>& trunk = d->trunk;
    ASSERT_EQ(trunk.size(), c.expect_widths.size());
    int64_t in = c.expect_channels * maps;
    for (size_t i = 0; i < trunk.size(); ++i) {
      EXPECT_EQ(trunk[i].weight.sizes(),
                torch::IntArrayRef({c.expect_widths[i], in}));
      in = c.expect_widths[i];
    }
    if (recurrent) {
      ASSERT_EQ(d->lstm.size(), 1u);
      EXPECT_EQ(d->lstm[0].weight_ih.sizes(), torch::IntArrayRef({4 * in, in}));
      EXPECT_EQ(model->StateSize(), 2 * in);
    }
    EXPECT_EQ(d->v.back().weight.size(1), in);
    EXPECT_EQ(d->pi.back().weight.size(0), 3);
  }
}

TEST_F(ModelsTest, MinAtarNetworkIsTheBaselineBody) {
  // 3x3 conv with 16 channels over 10x10 (8x8 out), then 128 units.
  auto model = DefaultModelRegistry().Make(
      "minatar-conv", MakeEnv("MinAtar/Breakout")->ObservationSpace(),
      Space::Discrete(6));
  int64_t count = 0;
  for (const auto& p : model->parameters()) count += p.numel();
  const int64_t expected =
      (4 * 9 * 16 + 16) + (16 * 8 * 8 * 128 + 128) + (128 * 6 + 6) + (128 + 1);
  EXPECT_EQ(count, expected);
}

TEST_F(ModelsTest, AutoChoosesByTheSpaces) {
  const auto minatar = MakeEnv("MinAtar/Breakout");
  EXPECT_EQ(AutoArch(minatar->ObservationSpace(), minatar->ActionSpace()),
            "minatar-conv");
  EXPECT_EQ(AutoArch(Space::Box({4, 84, 84}, 0.0f, 255.0f), Space::Discrete(4)),
            "atari-conv");
  const auto cartpole = MakeEnv("CartPole-v1");
  EXPECT_EQ(AutoArch(cartpole->ObservationSpace(), cartpole->ActionSpace()),
            "fc-softmax");
  const auto pendulum = MakeEnv("Pendulum-v1");
  EXPECT_EQ(AutoArch(pendulum->ObservationSpace(), pendulum->ActionSpace()),
            "fc-gaussian");
}

TEST_F(ModelsTest, ConvolutionalArchitecturesNeedImages) {
  const auto cartpole = MakeEnv("CartPole-v1");
  for (const std::string arch : {"minatar-conv", "atari-conv-lstm"}) {
    try {
      DefaultModelRegistry().Make(arch, cartpole->ObservationSpace(),
                                  cartpole->ActionSpace());
      FAIL() << arch << " accepted flat observations";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("[C, H, W]"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("shape=[4]"), std::string::npos)
          << e.what();
    }
  }
  // MinAtar's 10x10 frames are too small for the Atari network.
  const auto breakout = MakeEnv("MinAtar/Breakout");
  EXPECT_THROW(
      DefaultModelRegistry().Make("atari-conv", breakout->ObservationSpace(),
                                  breakout->ActionSpace()),
      std::invalid_argument);
}

TEST_F(ModelsTest, RecurrentForwardStartsFromTheZeroState) {
  auto model = DefaultModelRegistry().Make(
      "fc-softmax-lstm", Space::Box({3}, -1.0f, 1.0f), Space::Discrete(2));
  auto* recurrent = dynamic_cast<RecurrentActorCritic*>(model.get());
  ASSERT_NE(recurrent, nullptr);
  EXPECT_EQ(recurrent->StateSize(), 2 * 2 * 128);  // h and c per branch.
  const auto obs = torch::rand({2, 3});
  const ModelOutput a = model->Forward(obs);
  const RecurrentStep step = recurrent->CoreStep(
      recurrent->Encode(obs), torch::zeros({2, recurrent->StateSize()}));
  const ModelOutput b = recurrent->Heads(step.hidden);
  EXPECT_TRUE(torch::allclose(a.logits, b.logits));
  // A different state gives a different output.
  const ModelOutput c = recurrent->Heads(
      recurrent->CoreStep(recurrent->Encode(obs), step.state).hidden);
  EXPECT_FALSE(torch::allclose(a.logits, c.logits));
}

// A rollout of 3 steps of 2 sequences: sequence 1 is cut by a time limit
// after step 0 (bootstrap 0) and restarts; both are bootstrapped at the end
// (bootstraps 1 and 2).
Rollout SmallRollout(int64_t obs_size, int64_t state_size) {
  Rollout rollout;
  rollout.batch = 2;
  rollout.steps = 3;
  const auto obs = torch::randn({6 * obs_size}).contiguous();
  rollout.obs.assign(obs.data_ptr<float>(),
                     obs.data_ptr<float>() + obs.numel());
  const auto boot = torch::randn({3 * obs_size}).contiguous();
  rollout.bootstrap_obs.assign(boot.data_ptr<float>(),
                               boot.data_ptr<float>() + boot.numel());
  rollout.num_bootstrap = 3;
  rollout.next = {Rollout::kContinue, 0, Rollout::kContinue,
                  Rollout::kContinue, 1, 2};
  rollout.rewards.assign(6, 0.0f);
  if (state_size > 0) {
    const auto state = torch::randn({2 * state_size}).contiguous();
    rollout.initial_state.assign(state.data_ptr<float>(),
                                 state.data_ptr<float>() + state.numel());
  }
  return rollout;
}

TEST_F(ModelsTest, FeedForwardStepAndUnrollAreForward) {
  torch::manual_seed(4);
  auto model = DefaultModelRegistry().Make(
      "fc-softmax", Space::Box({3}, -1.0f, 1.0f), Space::Discrete(2));
  EXPECT_EQ(model->StateSize(), 0);
  const Rollout rollout = SmallRollout(3, 0);
  const UnrollInput input = MakeUnrollInput(rollout, 3);
  EXPECT_FALSE(input.initial_state.defined());
  const ModelStep step = model->Step(input.obs, torch::Tensor());
  const ModelOutput forward = model->Forward(input.obs);
  EXPECT_TRUE(torch::equal(step.output.logits, forward.logits));
  EXPECT_FALSE(step.state.defined());

  const UnrollOutput unrolled = model->Unroll(input);
  EXPECT_EQ(unrolled.output.logits.size(0), 6);
  EXPECT_TRUE(unrolled.output.value.requires_grad());
  EXPECT_FALSE(unrolled.bootstrap_values.requires_grad());
  // One batched pass over both: compare with separate passes in double.
  model->to(torch::kDouble);
  const ModelOutput rows = model->Forward(input.obs.to(torch::kDouble));
  const ModelOutput boot =
      model->Forward(input.bootstrap_obs.to(torch::kDouble));
  testing::ExpectFloatMatchesDouble(unrolled.output.logits.detach(),
                                    rows.logits.detach(), "logits");
  testing::ExpectFloatMatchesDouble(unrolled.output.value.detach(),
                                    rows.value.detach(), "values");
  testing::ExpectFloatMatchesDouble(unrolled.bootstrap_values,
                                    boot.value.detach(), "bootstrap values");
}

// Unroll against Step called step by step (the acting path, in double):
// the state is carried, zeroed after a sequence stops, and each bootstrap
// value comes from the state after the step that led to it.
TEST_F(ModelsTest, RecurrentUnrollEqualsSteppingOneStepAtATime) {
  torch::manual_seed(5);
  auto model = DefaultModelRegistry().Make("fc-gaussian-lstm",
                                           Space::Box({3}, -1.0f, 1.0f),
                                           Space::Box({2}, -2.0f, 2.0f));
  const int64_t s = model->StateSize();
  const Rollout rollout = SmallRollout(3, s);
  const UnrollInput input = MakeUnrollInput(rollout, 3);
  const UnrollOutput unrolled = model->Unroll(input);
  EXPECT_TRUE(unrolled.output.mean.requires_grad());
  EXPECT_FALSE(unrolled.bootstrap_values.requires_grad());

  model->to(torch::kDouble);
  torch::NoGradGuard no_grad;
  const auto obs = input.obs.to(torch::kDouble);
  const auto boot_obs = input.bootstrap_obs.to(torch::kDouble);
  torch::Tensor state = input.initial_state.to(torch::kDouble);
  std::vector<torch::Tensor> means, values, boot(3);
  for (int64_t t = 0; t < 3; ++t) {
    const ModelStep step = model->Step(obs.slice(0, 2 * t, 2 * t + 2), state);
    means.push_back(step.output.mean);
    values.push_back(step.output.value);
    state = step.state.clone();
    for (int64_t r = 0; r < 2; ++r) {
      const int64_t next = rollout.next[2 * t + r];
      if (next >= 0) {
        boot[next] = model
                         ->Step(boot_obs.slice(0, next, next + 1),
                                step.state.slice(0, r, r + 1))
                         .output.value;
      }
      if (next != Rollout::kContinue) state[r].zero_();
    }
  }
  testing::ExpectFloatMatchesDouble(unrolled.output.mean.detach(),
                                    torch::cat(means), "means");
  testing::ExpectFloatMatchesDouble(unrolled.output.value.detach(),
                                    torch::cat(values), "values");
  testing::ExpectFloatMatchesDouble(unrolled.bootstrap_values, torch::cat(boot),
                                    "bootstrap values");
}

}  // namespace
}  // namespace models_test
}  // namespace asyncrl
