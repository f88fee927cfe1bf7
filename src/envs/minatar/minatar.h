// MinAtar (Young & Tian, 2019): five miniaturised Atari games on a 10x10 grid
// with one binary channel per kind of object. asyncrl implements the games
// natively, following the published rules: the full 6-action set (or each
// game's minimal set), sticky actions (with probability 0.1 the previously
// executed action repeats), difficulty ramping on by default.
//
// Observations are float32 in [C, 10, 10] layout (channel-major, ready for a
// convolution), every element 0 or 1. Registered as MinAtar/Asterix,
// MinAtar/Breakout, MinAtar/Freeway, MinAtar/Seaquest and
// MinAtar/SpaceInvaders, each also with a "-minimal" suffix for the minimal
// action set.
#ifndef ASYNCRL_ENVS_MINATAR_MINATAR_H_
#define ASYNCRL_ENVS_MINATAR_MINATAR_H_

#include <memory>
#include <string>
#include <vector>

#include "asyncrl/envs/env.h"
#include "asyncrl/misc/rng.h"

namespace asyncrl {

class EnvRegistry;
struct TrainingDefaults;

struct MinAtarOptions {
  // Probability that the previously executed action is repeated instead of
  // the chosen one, in [0, 1]. MinAtar's default 0.1.
  double sticky_action_prob = 0.1;
  // Games that get harder over time (Asterix, Seaquest, Space Invaders) do so
  // only when true.
  bool difficulty_ramping = true;
  // Use the game's minimal action set instead of all 6 actions.
  bool minimal_action_set = false;

  // Throws std::invalid_argument naming the bad field and its value.
  void Validate() const;
};

// The games' shared frame: action sets, sticky actions, seeding, rendering
// into the observation buffer. Not thread-safe.
class MinAtarGame : public Env {
 public:
  static constexpr int kSize = 10;
  // The full action set, in MinAtar's order.
  enum Move { kNoop = 0, kLeft = 1, kUp = 2, kRight = 3, kDown = 4, kFire = 5 };
  static constexpr int kNumMoves = 6;

  std::string Name() const override { return "MinAtar/" + game_; }
  const Space& ObservationSpace() const override { return observation_space_; }
  const Space& ActionSpace() const override { return action_space_; }

  const std::string& game() const { return game_; }
  int channels() const { return channels_; }
  const MinAtarOptions& options() const { return options_; }
  // The full-set move an action index of ActionSpace() stands for.
  Move MoveOf(int64_t action_index) const;
  // The move executed by the last Step (after sticky substitution); kNoop
  // after Reset.
  Move last_move() const { return last_move_; }
  // The game's current difficulty level (0 at the start; games that do not
  // ramp stay at 0).
  virtual int Difficulty() const { return 0; }
  // The 10x10 grid, 20 pixels a cell, each cell in the colour of its
  // highest channel set (as MinAtar's GUI shows it), at 10 frames a second.
  bool Render(Picture& picture) const override;

 protected:
  MinAtarGame(std::string game, int channels, std::vector<Move> minimal_moves,
              const MinAtarOptions& options);

  // Puts the game in its start state; may draw from rng().
  virtual void ResetGame() = 0;
  // Advances one frame with `move`; returns the reward and sets *terminal.
  virtual double Advance(Move move, bool* terminal) = 0;
  // Marks the current state's objects with Set(); the buffer is cleared
  // first.
  virtual void Draw() = 0;

  void Set(int channel, int y, int x) {
    obs_[(channel * kSize + y) * kSize + x] = 1.0f;
  }
  Rng& rng() { return rng_; }
  // Uniform integer in [0, n).
  int RandomInt(int n) { return static_cast<int>(rng_.Uniform() * n); }
  bool ramping() const { return options_.difficulty_ramping; }

 private:
  FloatView DoReset(std::optional<uint64_t> seed) override;
  StepResult DoStep(const Action& action) override;
  FloatView DrawObservation();

  std::string game_;
  int channels_;
  MinAtarOptions options_;
  std::vector<Move> moves_;  // Action index -> move.
  Space observation_space_;
  Space action_space_;
  std::vector<float> obs_;
  Rng rng_;
  Move last_move_ = kNoop;
  bool terminal_ = false;
  double ramping_ = 1.0;  // The difficulty_ramping parameter, 0 or 1.
};

// The names of the five games: Asterix, Breakout, Freeway, Seaquest,
// SpaceInvaders.
const std::vector<std::string>& MinAtarGameNames();

// Builds a game by name; throws std::invalid_argument listing the games when
// the name is unknown, or naming a bad option.
std::unique_ptr<MinAtarGame> MakeMinAtar(const std::string& game,
                                         const MinAtarOptions& options = {});

// Registers MinAtar/<Game> and MinAtar/<Game>-minimal for every game, without
// an episode limit (Freeway's 2,500 frames are part of its rules).
// What image-observation tasks ask of a training run (registry.h's
// TrainingDefaults): rewards unscaled.
TrainingDefaults ImageTrainingDefaults();

void RegisterMinAtar(EnvRegistry& registry);

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_MINATAR_MINATAR_H_
