#include "asyncrl/envs/games/opponents.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "asyncrl/envs/games/connect_four_solver.h"

namespace asyncrl {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// A win is worth 1 plus this per ply left: quicker wins, slower losses. Wins
// (>= 1) always beat heuristic values (< 1).
constexpr double kPlyBonus = 0.01;
// Root scores closer than this are ties.
constexpr double kTie = 1e-9;
// The transposition table is cleared when it holds this many entries.
constexpr size_t kMaxTableEntries = size_t{1} << 20;

int64_t PickUniform(const std::vector<int64_t>& actions, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, actions.size() - 1);
  return actions[pick(rng)];
}

std::vector<int64_t> LegalActionsOf(const Game& game) {
  std::vector<int64_t> actions = game.LegalActions();
  if (actions.empty()) {
    throw std::invalid_argument(game.Name() +
                                ": no legal action to choose; the game is "
                                "over:\n" +
                                game.ToString());
  }
  return actions;
}

// Actions from the middle outwards (3, 2, 4, 1, 5, 0, 6): central moves are
// usually better, so alpha-beta cuts more.
std::vector<int64_t> CenterFirst(int64_t num_actions) {
  std::vector<int64_t> order;
  const int64_t center = num_actions / 2;
  for (int64_t k = 0; static_cast<int64_t>(order.size()) < num_actions; ++k) {
    const int64_t a = center + (k % 2 ? -(k + 1) / 2 : k / 2);
    if (a >= 0 && a < num_actions) order.push_back(a);
  }
  return order;
}

std::string UnknownOpponent(const std::string& spec,
                            const std::string& game_name) {
  return "opponent '" + spec +
         "' is unknown; accepted: random, greedy, minimax, minimax:D (D in "
         "1.." +
         std::to_string(MaxMinimaxDepth(game_name)) + " for " + game_name +
         "), solver (ConnectFour)";
}

}  // namespace

int64_t RandomOpponent::Choose(const Game& game, std::mt19937_64& rng) {
  return PickUniform(LegalActionsOf(game), rng);
}

int64_t GreedyOpponent::Choose(const Game& game, std::mt19937_64& rng) {
  const std::vector<int64_t> legal = LegalActionsOf(game);
  const int me = game.CurrentPlayer();
  std::vector<int64_t> wins;
  std::vector<int64_t> blocks;
  for (int64_t a : legal) {
    if (game.WouldWin(me, a)) wins.push_back(a);
    if (game.WouldWin(1 - me, a)) blocks.push_back(a);
  }
  if (!wins.empty()) return PickUniform(wins, rng);
  if (!blocks.empty()) return PickUniform(blocks, rng);
  return PickUniform(legal, rng);
}

// Entries are exact values or bounds of (position, depth left); scores
// depend on the depth left only, so they hold across calls.
struct MinimaxOpponent::Table {
  enum class Bound : uint8_t { kExact, kLower, kUpper };
  struct Key {
    uint64_t position;
    int depth;
    bool operator==(const Key& other) const {
      return position == other.position && depth == other.depth;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& key) const {
      return std::hash<uint64_t>()(key.position * 0x9E3779B97F4A7C15ull ^
                                   static_cast<uint64_t>(key.depth));
    }
  };
  struct Entry {
    double value;
    Bound bound;
  };
  std::unordered_map<Key, Entry, KeyHash> entries;
  std::vector<int64_t> order;  // CenterFirst(NumActions()) of the game
};

MinimaxOpponent::MinimaxOpponent(int depth, std::string name)
    : table_(std::make_unique<Table>()) {
  SetDepth(depth, std::move(name));
}

void MinimaxOpponent::SetDepth(int depth, std::string name) {
  if (depth < 1 || depth > kMaxMinimaxDepth) {
    throw std::invalid_argument("minimax depth " + std::to_string(depth) +
                                " is invalid; accepted: 1.." +
                                std::to_string(kMaxMinimaxDepth));
  }
  depth_ = depth;
  name_ = std::move(name);
}

MinimaxOpponent::~MinimaxOpponent() = default;

size_t MinimaxOpponent::table_entries() const { return table_->entries.size(); }

double MinimaxOpponent::Negamax(const Game& game, int player, int depth,
                                double alpha, double beta) {
  if (game.IsTerminal()) {
    return game.Result(player) * (1.0 + kPlyBonus * depth);
  }
  if (depth == 0) return game.Heuristic(player);
  const std::vector<int64_t>& order = table_->order;
  for (int64_t a : order) {
    if (game.WouldWin(player, a)) return 1.0 + kPlyBonus * (depth - 1);
  }
  const std::optional<uint64_t> position = game.PositionKey();
  const Table::Key key{position.value_or(0), depth};
  if (position) {
    auto it = table_->entries.find(key);
    if (it != table_->entries.end()) {
      const Table::Entry& entry = it->second;
      if (entry.bound == Table::Bound::kExact) return entry.value;
      if (entry.bound == Table::Bound::kLower) {
        alpha = std::max(alpha, entry.value);
      } else {
        beta = std::min(beta, entry.value);
      }
      if (alpha >= beta) return entry.value;
    }
  }
  const double original_alpha = alpha;
  double best = -kInfinity;
  for (int64_t a : order) {
    if (!game.IsLegal(a)) continue;
    std::unique_ptr<Game> child = game.Clone();
    child->Play(a);
    const double value = -Negamax(*child, 1 - player, depth - 1, -beta, -alpha);
    best = std::max(best, value);
    alpha = std::max(alpha, value);
    if (alpha >= beta) break;
  }
  if (position) {
    if (table_->entries.size() >= kMaxTableEntries) table_->entries.clear();
    const Table::Bound bound = best <= original_alpha ? Table::Bound::kUpper
                               : best >= beta         ? Table::Bound::kLower
                                                      : Table::Bound::kExact;
    table_->entries[key] = {best, bound};
  }
  return best;
}

int64_t MinimaxOpponent::Choose(const Game& game, std::mt19937_64& rng) {
  const std::vector<int64_t> legal = LegalActionsOf(game);
  if (static_cast<int64_t>(table_->order.size()) != game.NumActions()) {
    table_->order = CenterFirst(game.NumActions());
  }
  const int player = game.CurrentPlayer();
  double best = -kInfinity;
  std::vector<int64_t> best_actions;
  for (int64_t a : legal) {
    std::unique_ptr<Game> child = game.Clone();
    child->Play(a);
    // Searched with the window (best - kTie, inf): a move worse than the
    // best so far fails low, one as good gets its exact score.
    const double value =
        -Negamax(*child, 1 - player, depth_ - 1, -kInfinity, -(best - kTie));
    if (value > best + kTie) {
      best = value;
      best_actions.assign(1, a);
    } else if (value >= best - kTie) {
      best_actions.push_back(a);
    }
  }
  return PickUniform(best_actions, rng);
}

double MinimaxOpponent::Evaluate(const Game& game) {
  if (static_cast<int64_t>(table_->order.size()) != game.NumActions()) {
    table_->order = CenterFirst(game.NumActions());
  }
  return Negamax(game, game.CurrentPlayer(), depth_, -kInfinity, kInfinity);
}

int MaxMinimaxDepth(const std::string& game_name) {
  return game_name == "ConnectFour" ? 12 : kMaxMinimaxDepth;
}

int DefaultMinimaxDepth(const std::string& game_name) {
  // Tic-tac-toe ends within 9 plies: the deepest search is perfect play.
  return game_name == "TicTacToe" ? kMaxMinimaxDepth : 4;
}

std::unique_ptr<GameOpponent> MakeFixedOpponent(const std::string& spec,
                                                const std::string& game_name) {
  if (spec == "random") return std::make_unique<RandomOpponent>();
  if (spec == "solver" && game_name == "ConnectFour") {
    return std::make_unique<SolverOpponent>();
  }
  if (spec == "greedy") return std::make_unique<GreedyOpponent>();
  if (spec == "minimax") {
    return std::make_unique<MinimaxOpponent>(DefaultMinimaxDepth(game_name),
                                             spec);
  }
  const std::string prefix = "minimax:";
  if (spec.compare(0, prefix.size(), prefix) == 0) {
    const std::string digits = spec.substr(prefix.size());
    const bool all_digits =
        !digits.empty() && digits.size() <= 2 &&
        std::all_of(digits.begin(), digits.end(),
                    [](char c) { return c >= '0' && c <= '9'; });
    if (all_digits) {
      const int depth = std::stoi(digits);
      if (depth >= 1 && depth <= MaxMinimaxDepth(game_name)) {
        return std::make_unique<MinimaxOpponent>(depth, spec);
      }
    }
  }
  throw std::invalid_argument(UnknownOpponent(spec, game_name));
}

std::vector<std::string> DefaultEvalOpponents(const std::string& game_name) {
  if (game_name == "TicTacToe") return {"random", "greedy", "minimax"};
  if (game_name == "ConnectFour") return {"random", "greedy", "minimax:2"};
  return {"random", "greedy"};
}

}  // namespace asyncrl
