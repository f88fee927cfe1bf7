#include "asyncrl/envs/fault_injection.h"

#include <gtest/gtest.h>

#include <cmath>

#include "asyncrl/envs/registry.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace fault_injection_test {
namespace {

TEST(FaultSpecTest, ParsesEveryField) {
  const FaultSpec s = ParseFaultSpec("worker=3,step=42,kind=segv");
  EXPECT_EQ(s.worker, 3);
  EXPECT_EQ(s.step, 42);
  EXPECT_EQ(s.kind, FaultKind::kSegv);
  EXPECT_EQ(ParseFaultSpec("kind=kill").kind, FaultKind::kKill);
  EXPECT_EQ(ParseFaultSpec("kind=stop").kind, FaultKind::kStop);
  EXPECT_EQ(ParseFaultSpec("kind=nan").kind, FaultKind::kNan);
}

TEST(FaultSpecTest, RejectsMalformedSpecsNamingWhatIsAccepted) {
  for (const char* bad : {"worker", "worker=x", "kind=explode", "step=0",
                          "colour=red", "worker=-1"}) {
    try {
      ParseFaultSpec(bad);
      FAIL() << "accepted " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "ASYNCRL_INJECT_FAULT=" + std::string(bad) + " is invalid"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("accepted: worker=<int>"),
                std::string::npos);
      EXPECT_NE(
          std::string(e.what()).find("kind=<throw|abort|segv|kill|stop|nan>"),
          std::string::npos)
          << e.what();
    }
  }
}

TEST(FaultyEnvTest, ThrowsAtTheGivenStepOnly) {
  FaultyEnv env(MakeEnv("MountainCar-v0"), {0, 3, FaultKind::kThrow});
  env.Reset(0);
  EXPECT_NO_THROW(env.Step(Action::Discrete(1)));
  EXPECT_NO_THROW(env.Step(Action::Discrete(1)));
  EXPECT_THROW(env.Step(Action::Discrete(1)), std::runtime_error);
}

TEST(FaultyEnvTest, GivesANanRewardAtTheGivenStepOnly) {
  FaultyEnv env(MakeEnv("CartPole-v1"), {0, 2, FaultKind::kNan});
  env.Reset(0);
  EXPECT_EQ(env.Step(Action::Discrete(1)).reward, 1.0);
  const StepResult bad = env.Step(Action::Discrete(1));
  EXPECT_TRUE(std::isnan(bad.reward));
  EXPECT_FALSE(bad.terminated);
  EXPECT_EQ(env.Step(Action::Discrete(1)).reward, 1.0);
}

}  // namespace
}  // namespace fault_injection_test
}  // namespace asyncrl
