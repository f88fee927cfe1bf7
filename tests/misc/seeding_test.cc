#include "asyncrl/misc/seeding.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace seeding_test {
namespace {

TEST(SeedingTest, FollowsTheReferenceFormula) {
  EXPECT_EQ(TrainEnvSeed(0, 0, 16), 0);
  EXPECT_EQ(TrainEnvSeed(3, 2, 16), 3 + 2 * 16);
  EXPECT_EQ(EvalEnvSeed(3, 2, 16), 2147483647 - 35);
}

TEST(SeedingTest, DistinctWorkersGetDistinctSeeds) {
  for (int i = 0; i < 8; ++i) {
    for (int j = i + 1; j < 8; ++j) {
      EXPECT_NE(TrainEnvSeed(i, 5, 8), TrainEnvSeed(j, 5, 8));
      EXPECT_NE(EvalEnvSeed(i, 5, 8), TrainEnvSeed(j, 5, 8));
    }
  }
}

TEST(SeedingTest, RejectsOutOfRangeInput) {
  EXPECT_THROW(TrainEnvSeed(0, -1, 4), std::invalid_argument);
  EXPECT_THROW(TrainEnvSeed(4, 0, 4), std::invalid_argument);
  EXPECT_THROW(TrainEnvSeed(0, int64_t{1} << 40, 4), std::invalid_argument);
}

}  // namespace
}  // namespace seeding_test
}  // namespace asyncrl
