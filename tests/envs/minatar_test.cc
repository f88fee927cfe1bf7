// Rule tests of the MinAtar games: each checks a published rule through the
// observations a player sees (channels, rewards, episode ends).
#include "asyncrl/envs/minatar/minatar.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "asyncrl/envs/registry.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace minatar_test {
namespace {

using Move = MinAtarGame::Move;
using Cell = std::pair<int, int>;  // (y, x)
constexpr int kN = MinAtarGame::kSize;

MinAtarOptions NotSticky() {
  MinAtarOptions options;
  options.sticky_action_prob = 0.0;
  return options;
}

// The cells set in `channel` of an observation, row-major.
std::vector<Cell> Cells(FloatView obs, int channel) {
  std::vector<Cell> cells;
  for (int y = 0; y < kN; ++y) {
    for (int x = 0; x < kN; ++x) {
      if (obs[(channel * kN + y) * kN + x] != 0.0f) cells.emplace_back(y, x);
    }
  }
  return cells;
}

int Count(FloatView obs, int channel) {
  return static_cast<int>(Cells(obs, channel).size());
}

// The observation is copied: the view dies with the next step.
struct Frame {
  std::vector<float> obs;
  FloatView view() const {
    return {obs.data(), static_cast<int64_t>(obs.size())};
  }
};
Frame Copy(FloatView v) { return Frame{{v.data, v.data + v.size}}; }

TEST(MinAtarTest, GamesHaveThePublishedChannelsAndActionSets) {
  const std::vector<std::tuple<std::string, int, int>> expected = {
      {"Asterix", 4, 5},
      {"Breakout", 4, 3},
      {"Freeway", 7, 3},
      {"Seaquest", 10, 6},
      {"SpaceInvaders", 6, 4}};
  for (const auto& [game, channels, minimal] : expected) {
    auto env = MakeEnv("MinAtar/" + game);
    EXPECT_EQ(env->Name(), "MinAtar/" + game);
    EXPECT_EQ(env->ObservationSpace().shape,
              (std::vector<int64_t>{channels, kN, kN}))
        << game;
    EXPECT_EQ(env->ActionSpace().n, 6) << game;
    EXPECT_EQ(MakeEnv("MinAtar/" + game + "-minimal")->ActionSpace().n, minimal)
        << game;
  }
}

TEST(MinAtarTest, ObservationsAreBinary) {
  for (const std::string& game : MinAtarGameNames()) {
    auto env = MakeMinAtar(game);
    FloatView obs = env->Reset(3);
    Rng rng(3);
    for (int t = 0; t < 2000; ++t) {
      for (int64_t i = 0; i < obs.size; ++i) {
        ASSERT_TRUE(obs[i] == 0.0f || obs[i] == 1.0f) << game << " t=" << t;
      }
      StepResult r = env->Step(Action::Discrete(rng.Next() % 6));
      obs = r.Done() ? env->Reset() : r.observation;
    }
  }
}

TEST(MinAtarTest, MinimalActionSetsMapToTheFullSet) {
  MinAtarOptions options;
  options.minimal_action_set = true;
  auto breakout = MakeMinAtar("Breakout", options);
  EXPECT_EQ(breakout->MoveOf(0), MinAtarGame::kNoop);
  EXPECT_EQ(breakout->MoveOf(1), MinAtarGame::kLeft);
  EXPECT_EQ(breakout->MoveOf(2), MinAtarGame::kRight);
  auto freeway = MakeMinAtar("Freeway", options);
  EXPECT_EQ(freeway->MoveOf(1), MinAtarGame::kUp);
  EXPECT_EQ(freeway->MoveOf(2), MinAtarGame::kDown);
  auto invaders = MakeMinAtar("SpaceInvaders", options);
  EXPECT_EQ(invaders->MoveOf(3), MinAtarGame::kFire);
}

TEST(MinAtarTest, InvalidOptionsAndNamesAreRejected) {
  MinAtarOptions options;
  options.sticky_action_prob = 1.5;
  try {
    MakeMinAtar("Breakout", options);
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sticky_action_prob=1.5"),
              std::string::npos)
        << e.what();
  }
  try {
    MakeMinAtar("Pong");
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("SpaceInvaders"), std::string::npos)
        << e.what();
  }
}

TEST(MinAtarTest, StickyActionsRepeatTheLastExecutedMove) {
  MinAtarOptions always;
  always.sticky_action_prob = 1.0;
  auto stuck = MakeMinAtar("Breakout", always);
  stuck->Reset(0);
  stuck->Step(Action::Discrete(MinAtarGame::kRight));
  EXPECT_EQ(stuck->last_move(), MinAtarGame::kNoop);

  auto free = MakeMinAtar("Breakout", NotSticky());
  free->Reset(0);
  free->Step(Action::Discrete(MinAtarGame::kRight));
  EXPECT_EQ(free->last_move(), MinAtarGame::kRight);

  // The default: about 1 step in 10 repeats the previous move. Alternate
  // left and right, so every repeat shows.
  auto env = MakeMinAtar("Freeway");  // Never ends early.
  env->Reset(11);
  int repeats = 0;
  int steps = 0;
  Move previous = MinAtarGame::kNoop;
  for (int t = 0; t < 2400; ++t) {
    const Move chosen = t % 2 == 0 ? MinAtarGame::kLeft : MinAtarGame::kRight;
    env->Step(Action::Discrete(chosen));
    if (env->last_move() != chosen) {
      ++repeats;
      EXPECT_EQ(env->last_move(), previous);
    }
    previous = env->last_move();
    ++steps;
  }
  const double fraction = static_cast<double>(repeats) / steps;
  EXPECT_GT(fraction, 0.07);
  EXPECT_LT(fraction, 0.13);
}

// ---- Breakout: channels paddle 0, ball 1, trail 2, brick 3.

// Moves the paddle under the ball.
Move Track(FloatView obs) {
  const auto ball = Cells(obs, 1);
  const auto paddle = Cells(obs, 0);
  if (ball.empty() || paddle.empty()) return MinAtarGame::kNoop;
  if (ball[0].second < paddle[0].second) return MinAtarGame::kLeft;
  if (ball[0].second > paddle[0].second) return MinAtarGame::kRight;
  return MinAtarGame::kNoop;
}

TEST(MinAtarBreakoutTest, StartsWithThreeRowsOfBricksAndTheBallOnRowThree) {
  auto env = MakeMinAtar("Breakout");
  FloatView obs = env->Reset(0);
  EXPECT_EQ(Count(obs, 3), 30);
  for (const Cell& c : Cells(obs, 3)) {
    EXPECT_GE(c.first, 1);
    EXPECT_LE(c.first, 3);
  }
  ASSERT_EQ(Count(obs, 1), 1);
  EXPECT_EQ(Cells(obs, 1)[0].first, 3);
  EXPECT_EQ(Cells(obs, 0), (std::vector<Cell>{{9, 4}}));
}

TEST(MinAtarBreakoutTest, EachBrickHitPaysOneAndTheTrailFollowsTheBall) {
  auto env = MakeMinAtar("Breakout", NotSticky());
  Frame frame = Copy(env->Reset(1));
  double total = 0;
  for (int t = 0; t < 400; ++t) {
    const Cell ball = Cells(frame.view(), 1).at(0);
    const int bricks = Count(frame.view(), 3);
    StepResult r = env->Step(Action::Discrete(Track(frame.view())));
    Frame next = Copy(r.observation);
    EXPECT_EQ(Cells(next.view(), 2), (std::vector<Cell>{ball})) << "t=" << t;
    const int bricks_after = Count(next.view(), 3);
    if (bricks_after != 30 || bricks != 0) {  // Not a new set of bricks.
      EXPECT_EQ(bricks - bricks_after, static_cast<int>(r.reward)) << t;
    }
    EXPECT_TRUE(r.reward == 0.0 || r.reward == 1.0);
    total += r.reward;
    if (r.Done()) break;
    frame = std::move(next);
  }
  EXPECT_GE(total, 5.0);  // The tracking paddle keeps returning the ball.
}

TEST(MinAtarBreakoutTest, TheBallReachingTheBottomEndsTheEpisode) {
  auto env = MakeMinAtar("Breakout", NotSticky());
  for (uint64_t seed = 0; seed < 4; ++seed) {
    env->Reset(seed);
    StepResult r;
    int steps = 0;
    do {
      // Run away from the ball.
      r = env->Step(Action::Discrete(MinAtarGame::kLeft));
      ++steps;
    } while (!r.Done() && steps < 1000);
    ASSERT_TRUE(r.terminated) << "seed " << seed;
    const Cell ball = Cells(r.observation, 1).at(0);
    EXPECT_EQ(ball.first, 9);
    EXPECT_NE(ball.second, Cells(r.observation, 0).at(0).second);
  }
}

// ---- Freeway: channels chicken 0, car 1, speed trails 2..6.

TEST(MinAtarFreewayTest, EndsAfterTwoThousandFiveHundredFrames) {
  auto env = MakeMinAtar("Freeway");
  env->Reset(0);
  int steps = 0;
  StepResult r;
  do {
    r = env->Step(Action::Discrete(MinAtarGame::kNoop));
    ++steps;
  } while (!r.Done());
  EXPECT_TRUE(r.terminated);
  EXPECT_EQ(steps, 2501);  // The timer runs from 2,500 down past 0.
}

TEST(MinAtarFreewayTest, CrossingPaysOneAndTheChickenMovesEveryThirdFrame) {
  auto env = MakeMinAtar("Freeway", NotSticky());
  Frame frame = Copy(env->Reset(2));
  ASSERT_EQ(Count(frame.view(), 1), 8);  // One car per lane, rows 1..8.
  for (int y = 1; y <= 8; ++y) {
    int in_row = 0;
    for (const Cell& c : Cells(frame.view(), 1)) in_row += c.first == y;
    EXPECT_EQ(in_row, 1);
  }
  double total = 0;
  int last_move_t = -10;
  for (int t = 0; t < 2500; ++t) {
    const int row = Cells(frame.view(), 0).at(0).first;
    StepResult r = env->Step(Action::Discrete(MinAtarGame::kUp));
    Frame next = Copy(r.observation);
    const Cell chicken = Cells(next.view(), 0).at(0);
    EXPECT_EQ(chicken.second, 4);
    if (r.reward > 0) {
      EXPECT_EQ(r.reward, 1.0);
      EXPECT_EQ(chicken.first, 9);  // Back at the bottom.
    } else if (chicken.first == row - 1) {
      EXPECT_GE(t - last_move_t, 3) << "moved twice within 3 frames";
      last_move_t = t;
    }
    total += r.reward;
    if (r.Done()) break;
    frame = std::move(next);
  }
  EXPECT_GE(total, 3.0);
}

// ---- Asterix: channels player 0, enemy 1, trail 2, gold 3.

TEST(MinAtarAsterixTest, ThePlayerStaysBetweenRowsOneAndEight) {
  auto env = MakeMinAtar("Asterix", NotSticky());
  FloatView obs = env->Reset(0);
  EXPECT_EQ(Cells(obs, 0), (std::vector<Cell>{{5, 5}}));
  for (int t = 0; t < 8; ++t)
    obs = env->Step(Action::Discrete(MinAtarGame::kUp)).observation;
  EXPECT_EQ(Cells(obs, 0).at(0).first, 1);
}

TEST(MinAtarAsterixTest, GoldPaysAndAnEnemyEndsTheEpisode) {
  auto env = MakeMinAtar("Asterix");
  Rng rng(4);
  double total = 0;
  for (int episode = 0; episode < 20; ++episode) {
    Frame frame = Copy(env->Reset(100 + episode));
    StepResult r;
    do {
      const int gold = Count(frame.view(), 3);
      r = env->Step(Action::Discrete(rng.Next() % 6));
      Frame next = Copy(r.observation);
      if (r.reward > 0) {
        // The collected treasure is gone (at most one new entity spawns).
        EXPECT_LE(Count(next.view(), 3), gold - static_cast<int>(r.reward) + 1);
      }
      total += r.reward;
      frame = std::move(next);
    } while (!r.Done());
    EXPECT_TRUE(r.terminated);
    // The episode ends with the player on an enemy's cell, or on the cell an
    // enemy just left (its trail) when the enemy moved on in the same frame.
    const Cell player = Cells(frame.view(), 0).at(0);
    const auto enemies = Cells(frame.view(), 1);
    const auto trails = Cells(frame.view(), 2);
    EXPECT_TRUE(
        std::find(enemies.begin(), enemies.end(), player) != enemies.end() ||
        std::find(trails.begin(), trails.end(), player) != trails.end());
  }
  EXPECT_GT(total, 0.0);
}

TEST(MinAtarAsterixTest, DifficultyRampsOnlyWhenEnabled) {
  for (bool ramping : {true, false}) {
    MinAtarOptions options;
    options.difficulty_ramping = ramping;
    auto env = MakeMinAtar("Asterix", options);
    Rng rng(8);
    int longest = 0;
    for (uint64_t seed = 0; seed < 200 && longest < 150; ++seed) {
      env->Reset(seed);
      int steps = 0;
      while (!env->Step(Action::Discrete(rng.Next() % 6)).Done()) {
        if (++steps == 150) break;
      }
      longest = std::max(longest, steps);
    }
    ASSERT_EQ(longest, 150) << "no random episode lasted 150 frames";
    EXPECT_EQ(env->Difficulty() > 0, ramping);
  }
}

// ---- Seaquest: sub front 0, back 1, friendly bullet 2, oxygen gauge 7,
// diver gauge 8.

TEST(MinAtarSeaquestTest, SurfacingWithoutADiverEndsTheEpisode) {
  auto env = MakeMinAtar("Seaquest", NotSticky());
  env->Reset(0);
  StepResult r = env->Step(Action::Discrete(MinAtarGame::kDown));
  EXPECT_FALSE(r.Done());
  r = env->Step(Action::Discrete(MinAtarGame::kUp));
  EXPECT_TRUE(r.terminated);
  EXPECT_EQ(r.reward, 0.0);
}

TEST(MinAtarSeaquestTest, OxygenDrainsUnderWaterAndBulletsFlyAhead) {
  auto env = MakeMinAtar("Seaquest", NotSticky());
  FloatView obs = env->Reset(0);
  EXPECT_EQ(Count(obs, 7), 10);  // A full oxygen bar.
  EXPECT_EQ(Count(obs, 8), 0);   // No divers.
  EXPECT_EQ(Cells(obs, 0), (std::vector<Cell>{{0, 5}}));
  EXPECT_EQ(Cells(obs, 1), (std::vector<Cell>{{0, 6}}));  // Facing left.
  obs = env->Step(Action::Discrete(MinAtarGame::kFire)).observation;
  EXPECT_EQ(Cells(obs, 2), (std::vector<Cell>{{0, 4}}));
  obs = env->Step(Action::Discrete(MinAtarGame::kDown)).observation;
  for (int t = 0; t < 19; ++t) {
    obs = env->Step(Action::Discrete(MinAtarGame::kNoop)).observation;
  }
  // 20 frames under water: 180 of 200 units, 9 cells.
  EXPECT_EQ(Count(obs, 7), 9);
}

TEST(MinAtarSeaquestTest, ShootingAnEnemyPaysOne) {
  auto env = MakeMinAtar("Seaquest");
  Rng rng(6);
  double total = 0;
  for (uint64_t seed = 0; seed < 30 && total == 0; ++seed) {
    env->Reset(seed);
    env->Step(Action::Discrete(MinAtarGame::kDown));
    StepResult r;
    do {
      // Stay under water, fire often.
      const int a = rng.Next() % 3;
      r = env->Step(Action::Discrete(a == 0   ? MinAtarGame::kFire
                                     : a == 1 ? MinAtarGame::kLeft
                                              : MinAtarGame::kRight));
      EXPECT_TRUE(r.reward == 0.0 || r.reward == 1.0);
      total += r.reward;
    } while (!r.Done());
  }
  EXPECT_GT(total, 0.0);
}

// ---- Space Invaders: cannon 0, alien 1, left 2, right 3, friendly bullet 4,
// enemy bullet 5.

TEST(MinAtarSpaceInvadersTest, ShootingAliensPaysOneEach) {
  auto env = MakeMinAtar("SpaceInvaders", NotSticky());
  Frame frame = Copy(env->Reset(0));
  EXPECT_EQ(Count(frame.view(), 1), 24);
  EXPECT_EQ(Count(frame.view(), 2), 24);  // Marching left.
  EXPECT_EQ(Count(frame.view(), 3), 0);
  double total = 0;
  StepResult r;
  do {
    const int aliens = Count(frame.view(), 1);
    r = env->Step(Action::Discrete(MinAtarGame::kFire));
    Frame next = Copy(r.observation);
    if (Count(next.view(), 1) != 24 || aliens > static_cast<int>(r.reward)) {
      EXPECT_EQ(aliens - Count(next.view(), 1), static_cast<int>(r.reward));
    }
    total += r.reward;
    frame = std::move(next);
  } while (!r.Done());
  EXPECT_GE(total, 3.0);
  EXPECT_TRUE(r.terminated);
  // It ends with an alien or an alien bullet on the cannon.
  const Cell cannon = Cells(frame.view(), 0).at(0);
  const auto bullets = Cells(frame.view(), 5);
  const auto aliens = Cells(frame.view(), 1);
  EXPECT_TRUE(std::find(bullets.begin(), bullets.end(), cannon) !=
                  bullets.end() ||
              std::find(aliens.begin(), aliens.end(), cannon) != aliens.end());
}

}  // namespace
}  // namespace minatar_test
}  // namespace asyncrl
