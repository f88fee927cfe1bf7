#include "asyncrl/envs/games/self_play_env.h"

#include <stdexcept>

#include "asyncrl/envs/registry.h"
#include "asyncrl/envs/wrappers.h"

namespace asyncrl {
namespace {

// The opponent mix's fixed opponents, in the order of their parameters.
const char* const kMixOpponents[] = {"random", "greedy", "minimax"};

}  // namespace

LearnerSide ParseLearnerSide(const std::string& text) {
  if (text == "alternate") return LearnerSide::kAlternate;
  if (text == "random") return LearnerSide::kRandom;
  if (text == "first") return LearnerSide::kFirst;
  if (text == "second") return LearnerSide::kSecond;
  throw std::invalid_argument("learner side '" + text +
                              "' is unknown; accepted: alternate, random, "
                              "first, second");
}

SelfPlayEnv::SelfPlayEnv(std::unique_ptr<Game> game,
                         const std::string& fixed_opponent)
    : game_(std::move(game)) {
  const int64_t planes = game_->ObservationSize();
  const int64_t n = game_->NumActions();
  observation_space_ = Space::Box({planes + n}, 0.0f, 1.0f);
  observation_space_.action_mask = n;
  observation_space_.planes = game_->ObservationShape();
  action_space_ = Space::Discrete(n);
  fixed_ = MakeFixedOpponent(fixed_opponent, game_->Name());
  obs_.assign(static_cast<size_t>(planes + n), 0.0f);
  for (int i = 0; i < 3; ++i) {
    DeclareParameter(std::string(kMixOpponents[i]) + "_opponent_ratio", 0.0,
                     1.0,
                     std::string("share of training episodes against the "
                                 "fixed opponent ") +
                         kMixOpponents[i] +
                         " instead of self-play (the "
                         "opponent mix)",
                     &mix_ratio_[i]);
  }
  mix_minimax_depth_ = DefaultMinimaxDepth(game_->Name());
  DeclareParameter("minimax_opponent_depth", 1.0,
                   MaxMinimaxDepth(game_->Name()),
                   "search depth (plies) of the opponent mix's minimax",
                   &mix_minimax_depth_, /*integer=*/true);
}

void SelfPlayEnv::SetFixedOpponent(std::unique_ptr<GameOpponent> opponent) {
  if (!opponent) throw std::invalid_argument("SetFixedOpponent: null");
  fixed_ = std::move(opponent);
  fixed_chosen_ = true;
}

FloatView SelfPlayEnv::DoReset(std::optional<uint64_t> seed) {
  if (seed) {
    // A seed repeats the episodes from here: sides start over too.
    rng_.seed(*seed);
    alternate_side_ = 1;
  }
  switch (side_policy_) {
    case LearnerSide::kAlternate:
      alternate_side_ = 1 - alternate_side_;
      learner_side_ = alternate_side_;
      break;
    case LearnerSide::kRandom:
      learner_side_ = static_cast<int>(rng_() & 1);
      break;
    case LearnerSide::kFirst:
      learner_side_ = 0;
      break;
    case LearnerSide::kSecond:
      learner_side_ = 1;
      break;
  }
  game_->Reset();
  provider_episode_ = false;
  both_sides_ = false;
  opponent_ = nullptr;
  if (!fixed_chosen_ && mix_ratio_[0] + mix_ratio_[1] + mix_ratio_[2] > 0) {
    // No draw without a mix: seeded episodes stay as they were.
    double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    for (int i = 0; i < 3 && opponent_ == nullptr; ++i) {
      if (u < mix_ratio_[i]) {
        // The minimax's spec carries the depth parameter; at a new depth
        // (a curriculum's sampler may draw one per episode) the same player
        // searches deeper or shallower, keeping its transposition table.
        const int depth = static_cast<int>(mix_minimax_depth_);
        const std::string spec = i == 2 && depth != DefaultMinimaxDepth(Name())
                                     ? "minimax:" + std::to_string(depth)
                                     : std::string(kMixOpponents[i]);
        if (!mix_[i] || mix_[i]->Name() != spec) {
          auto* minimax = dynamic_cast<MinimaxOpponent*>(mix_[i].get());
          if (minimax != nullptr) {
            minimax->SetDepth(depth, spec);
          } else {
            mix_[i] = MakeFixedOpponent(spec, Name());
          }
        }
        opponent_ = mix_[i].get();
      }
      u -= mix_ratio_[i];
    }
  }
  if (opponent_ == nullptr && provider_ != nullptr && !fixed_chosen_) {
    opponent_ = provider_->BeginEpisode(learner_side_);
    provider_episode_ = true;
    if (opponent_ == nullptr) {
      // The agent plays both sides; the learner's side moves first.
      both_sides_ = true;
      learner_side_ = 0;
      return Observe();
    }
  }
  if (opponent_ == nullptr) opponent_ = fixed_.get();
  if (learner_side_ == 1) {
    RecordFrame();  // The empty board before the opponent's first move.
    OpponentMoves();
  }
  return Observe();
}

StepResult SelfPlayEnv::DoStep(const Action& action) {
  // Illegal moves throw std::invalid_argument naming the game, the action
  // and the legal ones (Game::Play); the episode goes on.
  game_->Play(action.index);
  if (!game_->IsTerminal() && !both_sides_) {
    RecordFrame();  // The learner's move, before the opponent's.
    OpponentMoves();
  }
  if (game_->IsTerminal()) return Finish();
  StepResult result;
  result.observation = Observe();
  result.opponent_turn = game_->CurrentPlayer() != learner_side_;
  return result;
}

void SelfPlayEnv::OpponentMoves() {
  const int64_t move = opponent_->Choose(*game_, rng_);
  if (!game_->IsLegal(move)) {
    throw std::logic_error(Name() + ": opponent '" + opponent_->Name() +
                           "' chose illegal action " + std::to_string(move));
  }
  game_->Play(move);
}

FloatView SelfPlayEnv::Observe() {
  const int player = both_sides_ && !game_->IsTerminal()
                         ? game_->CurrentPlayer()
                         : learner_side_;
  ObserveWithMask(*game_, player, obs_.data());
  return {obs_.data(), static_cast<int64_t>(obs_.size())};
}

StepResult SelfPlayEnv::Finish() {
  StepResult result;
  result.observation = Observe();
  result.reward = game_->Result(learner_side_);
  result.terminated = true;
  if (provider_episode_) provider_->EndEpisode(result.reward);
  return result;
}

void ObserveWithMask(const Game& game, int player, float* out) {
  game.Observe(player, out);
  float* mask = out + game.ObservationSize();
  for (int64_t a = 0; a < game.NumActions(); ++a) {
    mask[a] = game.IsLegal(a) ? 1.0f : 0.0f;
  }
}

SelfPlayEnv* FindSelfPlayEnv(Env& env) {
  Env* e = &env;
  for (;;) {
    if (auto* game = dynamic_cast<SelfPlayEnv*>(e)) return game;
    auto* wrapper = dynamic_cast<Wrapper*>(e);
    if (wrapper == nullptr) return nullptr;
    e = &wrapper->inner();
  }
}

TrainingDefaults GameTrainingDefaults() {
  // Games' results (1, 0, -1) are not scaled: the entropy bonus would drown
  // them. Their entropy weight is 0.1: with the reference's 0.01, pure
  // self-play collapses onto a few lines (measured, docs/games.md); 0.1
  // keeps it exploring.
  TrainingDefaults defaults;
  defaults.family =
      "two-player game (results unscaled, entropy weight 0.1 against "
      "self-play collapsing onto a few lines)";
  defaults.reward_scale = 1.0;
  defaults.entropy_weight = 0.1;
  return defaults;
}

void RegisterGames(EnvRegistry& registry) {
  const TrainingDefaults defaults = GameTrainingDefaults();
  for (const std::string& name : DefaultGameRegistry().Names()) {
    registry.Register(
        name,
        [name] {
          return std::make_unique<SelfPlayEnv>(
              DefaultGameRegistry().Make(name));
        },
        0, defaults);
  }
}

}  // namespace asyncrl
