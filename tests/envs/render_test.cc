// Every built-in environment draws itself (--demo --record): a picture of
// its state, frames at each Reset and Step while recorded, and the pictures
// follow the state.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "asyncrl/envs/cartpole.h"
#include "asyncrl/envs/games/connect_four.h"
#include "asyncrl/envs/games/self_play_env.h"
#include "asyncrl/envs/games/tictactoe.h"
#include "asyncrl/envs/minatar/minatar.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/envs/wrappers.h"
#include "asyncrl/misc/picture.h"
#include "experiments/test_basics.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace render_test {
namespace {

class CountingSink : public FrameSink {
 public:
  void Frame(const Env& env) override {
    Picture picture;
    ASSERT_TRUE(env.Render(picture));
    pictures.push_back(picture.pixels());
  }
  std::vector<std::vector<uint8_t>> pictures;
};

std::set<uint8_t> Colors(const Picture& p) {
  return std::set<uint8_t>(p.pixels().begin(), p.pixels().end());
}

class RenderTest : public ::testing::TestWithParam<std::string> {};

// Each environment, wrapped as the trainer wraps it (time limit, reward
// scale), plays random legal actions while recorded.
TEST_P(RenderTest, EveryResetAndStepGivesAFrameOfOneSize) {
  std::unique_ptr<Env> env = MakeEnv(GetParam());
  CountingSink sink;
  SelfPlayEnv* game = FindSelfPlayEnv(*env);
  Env& recorded = game != nullptr ? *game : *env;
  recorded.RecordTo(&sink);
  std::mt19937_64 rng(7);
  std::vector<float> values;
  FloatView obs = env->Reset(3);
  int64_t steps = 0;
  int64_t ends = 0;
  for (int i = 0; i < 60; ++i) {
    const Action a = testing::RandomLegalAction(
        env->ObservationSpace(), env->ActionSpace(), obs.data, rng, &values);
    const StepResult r = env->Step(a);
    ++steps;
    obs = r.observation;
    if (r.Done()) {
      obs = env->Reset();
      ++ends;
    }
  }
  recorded.RecordTo(nullptr);
  env->Step(testing::RandomLegalAction(
      env->ObservationSpace(), env->ActionSpace(), obs.data, rng, &values));
  if (game == nullptr) {
    EXPECT_EQ(static_cast<int64_t>(sink.pictures.size()), 1 + steps + ends);
  } else {
    // One frame a move: the opponent's moves too.
    EXPECT_GE(static_cast<int64_t>(sink.pictures.size()), 1 + steps + ends);
  }
  Picture picture;
  ASSERT_TRUE(env->Render(picture));
  EXPECT_GT(picture.width(), 0);
  EXPECT_GT(picture.fps, 0);
  EXPECT_GE(Colors(picture).size(), 2u) << "a blank picture";
  std::set<std::vector<uint8_t>> distinct;
  for (const auto& pixels : sink.pictures) {
    ASSERT_EQ(pixels.size(), picture.pixels().size());
    distinct.insert(pixels);
  }
  EXPECT_GE(distinct.size(), 3u) << "the pictures do not follow the state";
}

std::vector<std::string> Drawable() {
  std::vector<std::string> names;
  for (const std::string& name : DefaultEnvRegistry().Names()) {
    if (name.rfind("python:", 0) != 0) names.push_back(name);
  }
  return names;
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name;
  for (char c : info.param) name += std::isalnum(c) != 0 ? c : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllBuiltIn, RenderTest,
                         ::testing::ValuesIn(Drawable()), TestName);

TEST(RenderCartPoleTest, ThePoleLeansWithTheAngle) {
  CartPole env;
  env.Reset(1);
  Picture upright;
  env.set_state({0, 0, 0, 0});
  ASSERT_TRUE(env.Render(upright));
  EXPECT_EQ(upright.width(), 600);
  EXPECT_EQ(upright.height(), 400);
  EXPECT_EQ(upright.fps, 50);
  // gym: the cart's centre at y = 100 from the bottom, the axle 7.5 above,
  // the pole 125 pixels long for the default half-length 0.5.
  EXPECT_EQ(upright.At(300, 400 - 100), Color::kBlack);
  EXPECT_EQ(upright.At(300, 400 - 180), Color::kPole);
  EXPECT_EQ(upright.At(340, 400 - 180), Color::kWhite);
  Picture leaning;
  env.set_state({1.0, 0, 0.4, 0});
  ASSERT_TRUE(env.Render(leaning));
  const int cart_x = 300 + 125;  // x = 1 at 125 pixels a unit.
  EXPECT_EQ(leaning.At(cart_x, 400 - 100), Color::kBlack);
  EXPECT_EQ(leaning.At(cart_x, 400 - 180), Color::kWhite);
  // 70 pixels up the pole, leaning right by sin(0.4).
  const int px = cart_x + static_cast<int>(70 * std::sin(0.4));
  const int py = 400 - static_cast<int>(107.5 + 70 * std::cos(0.4));
  EXPECT_EQ(leaning.At(px, py), Color::kPole);
}

TEST(RenderGamesTest, ConnectFourDropsPiecesToTheBottomInTheirColours) {
  ConnectFour game;
  game.Reset();
  game.Play(3);  // Player 0.
  game.Play(3);  // Player 1, on top.
  Picture p;
  ASSERT_TRUE(game.Render(p));
  EXPECT_EQ(p.width(), 7 * 80);
  EXPECT_EQ(p.height(), 6 * 80);
  EXPECT_EQ(p.At(3 * 80 + 40, 5 * 80 + 40), Color::kRed);
  EXPECT_EQ(p.At(3 * 80 + 40, 4 * 80 + 40), Color::kYellow);
  EXPECT_EQ(p.At(2 * 80 + 40, 5 * 80 + 40), Color::kWhite);
  EXPECT_EQ(p.At(1, 1), Color::kBoard);
}

TEST(RenderGamesTest, TicTacToeDrawsCrossesAndNoughts) {
  TicTacToe game;
  game.Reset();
  game.Play(0);  // X, top left.
  game.Play(4);  // O, centre.
  Picture p;
  ASSERT_TRUE(game.Render(p));
  EXPECT_EQ(p.At(50, 50), Color::kRed);      // The cross's middle.
  EXPECT_EQ(p.At(150, 150), Color::kWhite);  // The nought's hole.
  EXPECT_EQ(p.At(150 + 30, 150), Color::kBoard);
  EXPECT_EQ(p.At(250, 250), Color::kWhite);
}

TEST(RenderMinAtarTest, EachCellHasItsHighestChannelsColour) {
  std::unique_ptr<Env> env = MakeEnv("MinAtar/Breakout");
  const FloatView obs = env->Reset(5);
  Picture p;
  ASSERT_TRUE(env->Render(p));
  constexpr int kSize = MinAtarGame::kSize;
  const int channels = static_cast<int>(obs.size / (kSize * kSize));
  int filled = 0;
  for (int y = 0; y < kSize; ++y) {
    for (int x = 0; x < kSize; ++x) {
      Color expected = Color::kDarkGrey;
      for (int c = channels - 1; c >= 0; --c) {
        if (obs.data[(c * kSize + y) * kSize + x] != 0.0f) {
          expected = static_cast<Color>(static_cast<int>(Color::kChannel0) + c);
          ++filled;
          break;
        }
      }
      EXPECT_EQ(p.At(x * 20 + 10, y * 20 + 10), expected) << x << "," << y;
    }
  }
  EXPECT_GT(filled, 10);  // The bricks, the paddle, the ball.
}

TEST(RenderWrapperTest, AnEnvironmentWithoutAPictureSaysSoThroughItsWrapper) {
  class Bare : public Env {
   public:
    std::string Name() const override { return "Bare"; }
    const Space& ObservationSpace() const override { return space_; }
    const Space& ActionSpace() const override { return space_; }

   protected:
    FloatView DoReset(std::optional<uint64_t>) override { return {&x_, 1}; }
    StepResult DoStep(const Action&) override { return {{&x_, 1}}; }

   private:
    Space space_ = Space::Discrete(2);
    float x_ = 0;
  };
  TimeLimit wrapped(std::make_unique<Bare>(), 5);
  Picture p;
  EXPECT_FALSE(wrapped.Render(p));
}

}  // namespace
}  // namespace render_test
}  // namespace asyncrl
