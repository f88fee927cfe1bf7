// The model registry and the networks: output shapes for every
// architecture, "auto" choosing by the spaces, clear errors for
// observations an architecture cannot take.
#include "asyncrl/agents/models.h"

#include <gtest/gtest.h>

#include "asyncrl/agents/conv_models.h"
#include "asyncrl/agents/recurrent_models.h"
#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/envs/registry.h"

namespace asyncrl {
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
  const RecurrentStep step = recurrent->Step(
      recurrent->Encode(obs), torch::zeros({2, recurrent->StateSize()}));
  const ModelOutput b = recurrent->Heads(step.hidden);
  EXPECT_TRUE(torch::allclose(a.logits, b.logits));
  // A different state gives a different output.
  const ModelOutput c = recurrent->Heads(
      recurrent->Step(recurrent->Encode(obs), step.state).hidden);
  EXPECT_FALSE(torch::allclose(a.logits, c.logits));
}

}  // namespace
}  // namespace asyncrl
