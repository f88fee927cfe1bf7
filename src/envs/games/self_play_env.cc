#include "asyncrl/envs/games/self_play_env.h"

#include <stdexcept>

#include "asyncrl/envs/registry.h"
#include "asyncrl/envs/wrappers.h"

namespace asyncrl {
namespace {

// The fixed opponents parameter fixed_opponent selects, by index.
const char* const kFixedKinds[] = {"random", "greedy", "minimax"};

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
  action_space_ = Space::Discrete(n);
  fixed_ = MakeFixedOpponent(fixed_opponent, game_->Name());
  obs_.assign(static_cast<size_t>(planes + n), 0.0f);
  DeclareParameter("fixed_opponent_ratio", 0.0, 1.0,
                   "share of training episodes played against the fixed "
                   "opponent instead of self-play (the opponent mix)",
                   &fixed_opponent_ratio_);
  DeclareParameter("fixed_opponent", 0.0, 2.0,
                   "the fixed opponent of training episodes: 0 random, "
                   "1 greedy, 2 minimax",
                   &fixed_opponent_kind_, /*integer=*/true);
}

void SelfPlayEnv::SetFixedOpponent(std::unique_ptr<GameOpponent> opponent) {
  if (!opponent) throw std::invalid_argument("SetFixedOpponent: null");
  fixed_ = std::move(opponent);
  applied_kind_ = fixed_opponent_kind_;  // An explicit choice wins.
}

FloatView SelfPlayEnv::DoReset(std::optional<uint64_t> seed) {
  if (seed) {
    // A seed repeats the episodes from here: sides start over too.
    rng_.seed(*seed);
    learner_side_ = 1;
  }
  if (fixed_opponent_kind_ != applied_kind_) {
    // A changed parameter (--env-param, a curriculum) takes effect here.
    fixed_ = MakeFixedOpponent(
        kFixedKinds[static_cast<int>(fixed_opponent_kind_)], game_->Name());
    applied_kind_ = fixed_opponent_kind_;
  }
  switch (side_policy_) {
    case LearnerSide::kAlternate:
      learner_side_ = 1 - learner_side_;
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
  opponent_ = fixed_.get();
  if (provider_ != nullptr) {
    const bool fixed = fixed_opponent_ratio_ > 0 &&
                       std::uniform_real_distribution<double>(0.0, 1.0)(rng_) <
                           fixed_opponent_ratio_;
    if (!fixed) {
      opponent_ = &provider_->BeginEpisode(learner_side_);
      provider_episode_ = true;
    }
  }
  if (learner_side_ == 1) OpponentMoves();
  return Observe();
}

StepResult SelfPlayEnv::DoStep(const Action& action) {
  // Illegal moves throw std::invalid_argument naming the game, the action
  // and the legal ones (Game::Play); the episode goes on.
  game_->Play(action.index);
  if (!game_->IsTerminal()) OpponentMoves();
  if (game_->IsTerminal()) return Finish();
  StepResult result;
  result.observation = Observe();
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
  game_->Observe(learner_side_, obs_.data());
  const int64_t planes = game_->ObservationSize();
  const int64_t n = game_->NumActions();
  for (int64_t a = 0; a < n; ++a) {
    obs_[static_cast<size_t>(planes + a)] = game_->IsLegal(a) ? 1.0f : 0.0f;
  }
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

SelfPlayEnv* FindSelfPlayEnv(Env& env) {
  Env* e = &env;
  for (;;) {
    if (auto* game = dynamic_cast<SelfPlayEnv*>(e)) return game;
    auto* wrapper = dynamic_cast<Wrapper*>(e);
    if (wrapper == nullptr) return nullptr;
    e = &wrapper->inner();
  }
}

void RegisterGames(EnvRegistry& registry) {
  for (const std::string& name : DefaultGameRegistry().Names()) {
    registry.Register(
        name,
        [name] {
          return std::make_unique<SelfPlayEnv>(
              DefaultGameRegistry().Make(name));
        },
        0);
  }
}

}  // namespace asyncrl
