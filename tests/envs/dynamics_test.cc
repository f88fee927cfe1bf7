// Short trajectories of each environment compared with values computed
// independently from gym's published equations (a straight transcription in
// double precision, run outside this code base).
#include <gtest/gtest.h>

#include <array>

#include "asyncrl/envs/acrobot.h"
#include "asyncrl/envs/cartpole.h"
#include "asyncrl/envs/mountain_car.h"
#include "asyncrl/envs/pendulum.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace dynamics_test {
namespace {

constexpr double kTol = 1e-12;

template <size_t N>
void ExpectState(const std::array<double, N>& got,
                 const std::array<double, N>& want) {
  for (size_t i = 0; i < N; ++i) {
    EXPECT_NEAR(got[i], want[i], kTol) << "state[" << i << "]";
  }
}

TEST(CartPoleDynamicsTest, FollowsGymEquations) {
  CartPole env;
  env.Reset(0);
  env.set_state({0.01, -0.02, 0.03, 0.04});
  StepResult r = env.Step(Action::Discrete(1));
  ExpectState(env.state(), {0.0096000000000000009, 0.17467919574755525,
                            0.030799999999999998, -0.24306871796000809});
  EXPECT_EQ(r.reward, 1.0);
  EXPECT_FALSE(r.terminated);
  EXPECT_FLOAT_EQ(r.observation[1], 0.17467919574755525f);
  env.Step(Action::Discrete(0));
  ExpectState(env.state(), {0.013093583914951107, -0.020868848948191993,
                            0.025938625640799837, 0.059167999939416599});
  env.Step(Action::Discrete(1));
  ExpectState(env.state(), {0.012676206935987267, 0.17387177487348129,
                            0.027121985639588168, -0.22521957255967326});
}

TEST(CartPoleDynamicsTest, TerminatesWhenThePoleFalls) {
  CartPole env;
  env.Reset(0);
  env.set_state({0.0, 0.0, CartPole::kThetaThreshold - 1e-4, 1.0});
  StepResult r = env.Step(Action::Discrete(1));
  EXPECT_TRUE(r.terminated);
  EXPECT_EQ(r.reward, 1.0);
}

TEST(AcrobotDynamicsTest, FollowsGymEquationsWithRk4) {
  Acrobot env;
  env.Reset(0);
  env.set_state({0.05, -0.03, 0.02, 0.01});
  StepResult r = env.Step(Action::Discrete(2));
  ExpectState(env.state(), {0.033964268077167063, 0.014028356136744108,
                            -0.17546465025153701, 0.41971560226526911});
  EXPECT_EQ(r.reward, -1.0);
  env.Step(Action::Discrete(0));
  ExpectState(env.state(), {0.010256406751987378, 0.061304367014462395,
                            -0.055584146076503763, 0.041737111311264397});
  env.Step(Action::Discrete(1));
  ExpectState(env.state(), {-0.00046751124082028417, 0.063639685627065484,
                            -0.049426499407036022, -0.020389087054447329});
}

TEST(AcrobotDynamicsTest, ReachingTheGoalHeightTerminatesWithZeroReward) {
  Acrobot env;
  env.Reset(0);
  env.set_state({Acrobot::kPi, 0.0, 0.0, 0.0});  // Hanging straight up.
  StepResult r = env.Step(Action::Discrete(1));
  EXPECT_TRUE(r.terminated);
  EXPECT_EQ(r.reward, 0.0);
}

TEST(MountainCarDynamicsTest, FollowsGymEquations) {
  MountainCar env;
  env.Reset(0);
  env.set_state({-0.5, 0.0});
  env.Step(Action::Discrete(2));
  ExpectState(env.state(), {-0.49917684300416926, 0.00082315699583074275});
  env.Step(Action::Discrete(2));
  ExpectState(env.state(), {-0.49753668667935325, 0.0016401563248160246});
  StepResult r = env.Step(Action::Discrete(0));
  ExpectState(env.state(), {-0.4970917969323474, 0.00044488974700586273});
  EXPECT_EQ(r.reward, -1.0);
}

TEST(MountainCarDynamicsTest, LeftWallStopsTheCarAndGoalTerminates) {
  MountainCar env;
  env.Reset(0);
  env.set_state({-1.19, -0.05});
  env.Step(Action::Discrete(0));
  ExpectState(env.state(), {MountainCar::kMinPosition, 0.0});
  env.set_state({0.49, 0.02});
  EXPECT_TRUE(env.Step(Action::Discrete(2)).terminated);
}

TEST(PendulumDynamicsTest, FollowsGymEquations) {
  Pendulum env;
  env.Reset(0);
  env.set_state({3.0, -0.5});
  float u = 1.5f;
  StepResult r = env.Step(Action::Continuous(&u, 1));
  ExpectState(env.state(), {2.9915420003022448, -0.16915999395509962});
  EXPECT_NEAR(r.reward, -9.0272500000000004, kTol);
  u = -2.0f;
  r = env.Step(Action::Continuous(&u, 1));
  ExpectState(env.state(), {2.9736898087340249, -0.35704383136440176});
  EXPECT_NEAR(r.reward, -8.956185049927841, kTol);
  u = 0.25f;
  r = env.Step(Action::Continuous(&u, 1));
  ExpectState(env.state(), {2.9639794317050989, -0.19420754057852299});
  EXPECT_NEAR(r.reward, -8.8556416083201377, kTol);
  EXPECT_FALSE(r.terminated);
}

TEST(PendulumDynamicsTest, AngleNormalizeWrapsIntoMinusPiPi) {
  EXPECT_NEAR(Pendulum::AngleNormalize(3 * Pendulum::kPi / 2),
              -Pendulum::kPi / 2, 1e-12);
  EXPECT_NEAR(Pendulum::AngleNormalize(-3 * Pendulum::kPi / 2),
              Pendulum::kPi / 2, 1e-12);
  EXPECT_NEAR(Pendulum::AngleNormalize(0.25), 0.25, 1e-15);
}

}  // namespace
}  // namespace dynamics_test
}  // namespace asyncrl
