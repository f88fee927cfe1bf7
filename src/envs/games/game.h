// Turn-based games of two players (zero-sum, perfect information), apart
// from the single-agent Env: the player to move, the legal actions as a
// mask, an observation from the point of view of either player, and each
// player's result at the end (win 1, loss -1, draw 0). Games are
// deterministic: the same actions give the same positions. A game is turned
// into an Env for one learning side by envs/games/self_play_env.h.
#ifndef ASYNCRL_ENVS_GAMES_GAME_H_
#define ASYNCRL_ENVS_GAMES_GAME_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace asyncrl {

class Picture;

// One game in progress. Not thread-safe; cheap to copy with Clone().
class Game {
 public:
  virtual ~Game() = default;
  Game() = default;
  Game(const Game&) = delete;
  Game& operator=(const Game&) = delete;

  virtual std::string Name() const = 0;
  // Actions are 0..NumActions()-1 (TicTacToe: cells row-major; Connect
  // Four: columns).
  virtual int64_t NumActions() const = 0;
  // Planes of the observation, [2, rows, cols]: plane 0 the observing
  // player's pieces, plane 1 the other player's (1 where a piece is, else 0).
  virtual std::vector<int64_t> ObservationShape() const = 0;

  // Back to the initial position, player 0 to move.
  virtual void Reset() = 0;
  // 0 or 1; meaningless once IsTerminal().
  virtual int CurrentPlayer() const = 0;
  virtual bool IsTerminal() const = 0;
  // Whether `action` is legal now (false for any action once terminal, and
  // for out-of-range actions).
  virtual bool IsLegal(int64_t action) const = 0;
  // The player to move plays `action`. Throws std::invalid_argument naming
  // the game, the action and the legal actions when it is illegal (or the
  // game is over).
  virtual void Play(int64_t action) = 0;
  // At a terminal position: 1 if `player` won, -1 if it lost, 0 for a draw.
  // 0 before the end.
  virtual double Result(int player) const = 0;
  // Writes the observation of `player` (ObservationShape() floats).
  virtual void Observe(int player, float* out) const = 0;
  // Whether `player` playing `action` now would complete a winning line
  // (whoever is to move; false for illegal actions). Greedy and minimax
  // opponents use it.
  virtual bool WouldWin(int player, int64_t action) const = 0;
  // A heuristic value of the position for `player` in (-1, 1), used by
  // depth-limited search at its leaves (0 = no opinion).
  virtual double Heuristic(int /*player*/) const { return 0.0; }
  // A number that identifies the position (the pieces and the player to
  // move) among all positions of this game, for search memos; nullopt when
  // the game has none.
  virtual std::optional<uint64_t> PositionKey() const { return std::nullopt; }
  // A text diagram of the position (tests, logs).
  virtual std::string ToString() const = 0;
  // Draws the position (--demo --record) and returns true; false: the game
  // has no picture (the default).
  virtual bool Render(Picture& picture) const {
    static_cast<void>(picture);
    return false;
  }
  virtual std::unique_ptr<Game> Clone() const = 0;

  // The legal actions' mask, NumActions() entries of 0/1.
  std::vector<uint8_t> LegalMask() const;
  // The legal actions in increasing order.
  std::vector<int64_t> LegalActions() const;
  int64_t ObservationSize() const;
};

// "TicTacToe: action 4 is illegal (cell taken); legal: 0, 1, 2, 3, 5", the
// message of the std::invalid_argument that Play throws for an illegal
// action; `reason` says why ("cell taken", "out of range", "game over").
std::string IllegalActionMessage(const Game& game, int64_t action,
                                 const std::string& reason);

// Name-to-factory registry of games; an unknown name's error lists every
// registered name. Not thread-safe while registering.
class GameRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Game>()>;
  // Throws std::invalid_argument if the name is taken.
  void Register(const std::string& name, Factory factory);
  bool Contains(const std::string& name) const;
  std::vector<std::string> Names() const;
  // Throws std::invalid_argument listing the registered names if unknown.
  std::unique_ptr<Game> Make(const std::string& name) const;

 private:
  std::map<std::string, Factory> factories_;
};

// The process-wide registry: TicTacToe and ConnectFour.
GameRegistry& DefaultGameRegistry();

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_GAMES_GAME_H_
