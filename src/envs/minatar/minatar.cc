#include "asyncrl/envs/minatar/minatar.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "asyncrl/envs/minatar/games.h"
#include "asyncrl/envs/registry.h"
#include "asyncrl/misc/picture.h"
#include "asyncrl/misc/strings.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {

void MinAtarOptions::Validate() const {
  Require(sticky_action_prob >= 0 && sticky_action_prob <= 1,
          "sticky_action_prob", sticky_action_prob, "a probability in [0, 1]");
}

MinAtarGame::MinAtarGame(std::string game, int channels,
                         std::vector<Move> minimal_moves,
                         const MinAtarOptions& options)
    : game_(std::move(game)),
      channels_(channels),
      options_(options),
      observation_space_(Space::Box({channels, kSize, kSize}, 0.0f, 1.0f)),
      obs_(static_cast<size_t>(channels) * kSize * kSize, 0.0f) {
  options_.Validate();
  if (options_.minimal_action_set) {
    moves_ = std::move(minimal_moves);
  } else {
    for (int m = 0; m < kNumMoves; ++m) moves_.push_back(static_cast<Move>(m));
  }
  action_space_ = Space::Discrete(static_cast<int64_t>(moves_.size()));
  ramping_ = options_.difficulty_ramping ? 1.0 : 0.0;
  DeclareParameter("sticky_action_prob", 0.0, 1.0,
                   "probability that the previous move repeats",
                   &options_.sticky_action_prob);
  DeclareParameter("difficulty_ramping", 0.0, 1.0,
                   "1: games that get harder over time do so; 0: they stay "
                   "at their first level",
                   &ramping_, /*integer=*/true);
}

MinAtarGame::Move MinAtarGame::MoveOf(int64_t action_index) const {
  return moves_.at(static_cast<size_t>(action_index));
}

FloatView MinAtarGame::DoReset(std::optional<uint64_t> seed) {
  if (seed) rng_.Seed(*seed);
  options_.difficulty_ramping = ramping_ != 0;  // A parameter set since.
  // Unlike the Python original, the sticky action does not leak from the
  // previous episode: each episode starts from a no-op, so a seeded Reset
  // fully determines the episode.
  last_move_ = kNoop;
  terminal_ = false;
  ResetGame();
  return DrawObservation();
}

StepResult MinAtarGame::DoStep(const Action& action) {
  Move move = moves_[static_cast<size_t>(action.index)];
  // Drawn on every step, as the original does, so the stream of random
  // numbers does not depend on the probability being 0.
  if (rng_.Uniform() < options_.sticky_action_prob) move = last_move_;
  last_move_ = move;
  StepResult result;
  result.reward = Advance(move, &terminal_);
  result.terminated = terminal_;
  result.observation = DrawObservation();
  return result;
}

FloatView MinAtarGame::DrawObservation() {
  std::fill(obs_.begin(), obs_.end(), 0.0f);
  Draw();
  return {obs_.data(), static_cast<int64_t>(obs_.size())};
}

const std::vector<std::string>& MinAtarGameNames() {
  static const std::vector<std::string> names = {
      "Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders"};
  return names;
}

std::unique_ptr<MinAtarGame> MakeMinAtar(const std::string& game,
                                         const MinAtarOptions& options) {
  options.Validate();
  if (game == "Asterix") return minatar::MakeAsterix(options);
  if (game == "Breakout") return minatar::MakeBreakout(options);
  if (game == "Freeway") return minatar::MakeFreeway(options);
  if (game == "Seaquest") return minatar::MakeSeaquest(options);
  if (game == "SpaceInvaders") return minatar::MakeSpaceInvaders(options);
  throw std::invalid_argument("unknown MinAtar game '" + game +
                              "'; accepted: " + JoinNames(MinAtarGameNames()));
}

TrainingDefaults ImageTrainingDefaults() {
  // Rewards unscaled, as the reference's Atari example does not scale them.
  TrainingDefaults defaults;
  defaults.family =
      "image observations (rewards unscaled, as the reference's Atari "
      "example)";
  defaults.reward_scale = 1.0;
  return defaults;
}

void RegisterMinAtar(EnvRegistry& registry) {
  const TrainingDefaults defaults = ImageTrainingDefaults();
  for (const std::string& game : MinAtarGameNames()) {
    registry.Register(
        "MinAtar/" + game, [game] { return MakeMinAtar(game); }, 0, defaults);
    registry.Register(
        "MinAtar/" + game + "-minimal",
        [game] {
          MinAtarOptions options;
          options.minimal_action_set = true;
          return MakeMinAtar(game, options);
        },
        0, defaults);
  }
}

bool MinAtarGame::Render(Picture& picture) const {
  constexpr int kCell = 20;
  picture.Reset(kSize * kCell, kSize * kCell, Color::kDarkGrey);
  picture.fps = 10;
  for (int y = 0; y < kSize; ++y) {
    for (int x = 0; x < kSize; ++x) {
      for (int c = channels_ - 1; c >= 0; --c) {
        if (obs_[(c * kSize + y) * kSize + x] == 0.0f) continue;
        const auto color = static_cast<Color>(
            static_cast<int>(Color::kChannel0) + c % kChannelColors);
        picture.FillRect(x * kCell, y * kCell, (x + 1) * kCell, (y + 1) * kCell,
                         color);
        break;
      }
    }
  }
  return true;
}

}  // namespace asyncrl
