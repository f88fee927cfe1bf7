// A two-player game as an environment for one learning side: the learner's
// observation (its pieces, the other's, then the legal-action mask; the
// observation space's action_mask says so), its action, then the
// opponent's reply within the same step; the reward is the learner's result
// at the end (win 1, loss -1, draw 0), 0 before. Who the opponent is comes
// per episode from an OpponentProvider (the trainer's self-play: the latest
// policy or a past snapshot) or, without one, from a fixed opponent
// (envs/games/opponents.h). When the provider gives no opponent, the agent
// plays both sides (--train-sides both): each step is one move, the
// observation is the mover's view and StepResult::opponent_turn says whose
// turn it is. Registered as --env TicTacToe / ConnectFour.
#ifndef ASYNCRL_ENVS_GAMES_SELF_PLAY_ENV_H_
#define ASYNCRL_ENVS_GAMES_SELF_PLAY_ENV_H_

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "asyncrl/envs/env.h"
#include "asyncrl/envs/games/game.h"
#include "asyncrl/envs/games/opponents.h"

namespace asyncrl {

class EnvRegistry;
struct TrainingDefaults;

// Supplies each training episode's opponent and receives its result.
// Called by the environment's owner process only.
class OpponentProvider {
 public:
  virtual ~OpponentProvider() = default;
  // The opponent of the episode that starts now; the learner plays side
  // `learner_side` (0 moves first). The pointer stays valid until the next
  // call. Null: the learner plays the opponent's side too (both sides
  // trained): the environment hands the opponent's turns to the agent
  // (StepResult::opponent_turn), and the learner moves first.
  virtual GameOpponent* BeginEpisode(int learner_side) = 0;
  // The episode begun by the last BeginEpisode ended with the game's end:
  // the learner's result (1, 0, -1). Not called for episodes cut short.
  virtual void EndEpisode(double learner_result) = 0;
};

// Which side the learner plays in each episode.
enum class LearnerSide { kAlternate, kRandom, kFirst, kSecond };

// Parses "alternate" | "random" | "first" | "second"; throws
// std::invalid_argument naming the value and the accepted ones.
LearnerSide ParseLearnerSide(const std::string& text);

class SelfPlayEnv : public Env {
 public:
  // The fixed opponent `fixed_opponent` (a MakeFixedOpponent spec) plays
  // the episodes that neither the opponent mix nor a provider takes.
  // The opponent mix (parameters random_opponent_ratio,
  // greedy_opponent_ratio, minimax_opponent_ratio; 0 by default): the
  // share of episodes each fixed opponent plays, drawn per episode (shares
  // summing past 1 are taken in that order until 1); the parameter
  // minimax_opponent_depth is the mix's minimax search depth (default:
  // "minimax"'s, MakeFixedOpponent). It does not apply once
  // SetFixedOpponent chose the opponent (evaluation).
  explicit SelfPlayEnv(std::unique_ptr<Game> game,
                       const std::string& fixed_opponent = "random");

  std::string Name() const override { return game_->Name(); }
  const Space& ObservationSpace() const override { return observation_space_; }
  const Space& ActionSpace() const override { return action_space_; }
  // The game's picture; when recorded, a frame after each side's move.
  bool Render(Picture& picture) const override {
    return game_->Render(picture);
  }

  // The provider of training opponents (not owned; null: the fixed one).
  void SetOpponentProvider(OpponentProvider* provider) { provider_ = provider; }
  // Replaces the fixed opponent for every episode from the next Reset
  // (evaluation against a named opponent; the opponent mix is off).
  void SetFixedOpponent(std::unique_ptr<GameOpponent> opponent);
  const GameOpponent& fixed_opponent() const { return *fixed_; }
  void SetLearnerSide(LearnerSide side) { side_policy_ = side; }

  // The side the learner plays in the current episode.
  int learner_side() const { return learner_side_; }
  const Game& game() const { return *game_; }
  // Whether the current episode's opponent came from the provider.
  bool provider_episode() const { return provider_episode_; }
  // Whether the agent plays both sides of the current episode (the
  // provider gave no opponent): every observation after the learner's
  // moves is the opponent's turn (StepResult::opponent_turn).
  bool both_sides() const { return both_sides_; }
  // The current episode's opponent (null while the agent plays both sides).
  const GameOpponent* episode_opponent() const { return opponent_; }

 protected:
  FloatView DoReset(std::optional<uint64_t> seed) override;
  StepResult DoStep(const Action& action) override;

 private:
  void OpponentMoves();
  // The observation of the player to move (the learner's, but for the
  // opponent's turns of a both-sides episode).
  FloatView Observe();
  StepResult Finish();

  std::unique_ptr<Game> game_;
  Space observation_space_;
  Space action_space_;
  std::unique_ptr<GameOpponent> fixed_;
  bool fixed_chosen_ = false;  // SetFixedOpponent was called.
  // The opponent mix's players: random, greedy, minimax (made on first use).
  std::unique_ptr<GameOpponent> mix_[3];
  GameOpponent* opponent_ = nullptr;  // This episode's.
  OpponentProvider* provider_ = nullptr;
  bool provider_episode_ = false;
  bool both_sides_ = false;
  LearnerSide side_policy_ = LearnerSide::kAlternate;
  int learner_side_ = 1;
  // Alternate: the side the last episode drew (the next flips it to 0);
  // a both-sides episode's learner moves first whatever was drawn.
  int alternate_side_ = 1;
  std::mt19937_64 rng_{0};
  std::vector<float> obs_;
  // Parameters (Env::DeclareParameter), applied at Reset: the opponent
  // mix's shares, in the order random, greedy, minimax.
  double mix_ratio_[3] = {0.0, 0.0, 0.0};
  // The mix's minimax search depth (parameter minimax_opponent_depth).
  double mix_minimax_depth_ = 0.0;
};

// What a SelfPlayEnv's observation space describes, for `player`:
// game.Observe(player) followed by the legal-action mask (1 legal, 0 not);
// game.ObservationSize() + game.NumActions() floats into `out`. The
// learner's view, and a network opponent's.
void ObserveWithMask(const Game& game, int player, float* out);

// The SelfPlayEnv inside `env` (through wrappers), or null.
SelfPlayEnv* FindSelfPlayEnv(Env& env);

// Registers TicTacToe and ConnectFour (no time limit: games end).
// What two-player games ask of a training run (registry.h's
// TrainingDefaults): results unscaled, entropy weight 0.1.
TrainingDefaults GameTrainingDefaults();

void RegisterGames(EnvRegistry& registry);

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_GAMES_SELF_PLAY_ENV_H_
