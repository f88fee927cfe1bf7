#include "asyncrl/envs/games/connect_four_solver.h"

#include <algorithm>
#include <stdexcept>

namespace asyncrl {
namespace {

constexpr int kWidth = ConnectFour::kColumns;
constexpr int kHeight = ConnectFour::kRows;
constexpr int kCells = kWidth * kHeight;
// Scores lie in [kMinScore, kMaxScore].
constexpr int kMinScore = -(kCells) / 2 + 3;

constexpr uint64_t BottomMask() {
  uint64_t m = 0;
  for (int c = 0; c < kWidth; ++c) m |= uint64_t{1} << (c * (kHeight + 1));
  return m;
}
constexpr uint64_t kBottom = BottomMask();
constexpr uint64_t kBoard = kBottom * ((uint64_t{1} << kHeight) - 1);

constexpr uint64_t ColumnMask(int column) {
  return ((uint64_t{1} << kHeight) - 1) << (column * (kHeight + 1));
}

// The empty cells that would complete a line of four of `stones`.
uint64_t WinningCells(uint64_t stones, uint64_t mask) {
  // Vertical: three stacked below.
  uint64_t r = (stones << 1) & (stones << 2) & (stones << 3);
  // The three other directions: shifts of H+1 (horizontal), H (one
  // diagonal) and H+2 (the other).
  for (const int d : {kHeight + 1, kHeight, kHeight + 2}) {
    uint64_t p = (stones << d) & (stones << (2 * d));
    r |= p & (stones << (3 * d));
    r |= p & (stones >> d);
    p = (stones >> d) & (stones >> (2 * d));
    r |= p & (stones << d);
    r |= p & (stones >> (3 * d));
  }
  return r & (kBoard ^ mask);
}

// The cells a stone can be played on now.
uint64_t Playable(uint64_t mask) { return (mask + kBottom) & kBoard; }

int PopCount(uint64_t x) { return __builtin_popcountll(x); }

// Centre columns first: they take part in the most lines.
constexpr std::array<int, kWidth> kColumnOrder = {3, 2, 4, 1, 5, 0, 6};

}  // namespace

// Upper bounds of scores by position key (current + mask, unique, < 2^49).
struct ConnectFourSolver::Table {
  explicit Table(int log2) : keys(size_t{1} << log2), values(keys.size()) {}
  size_t Index(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >>
                               (64 - __builtin_ctzll(keys.size())));
  }
  void Put(uint64_t key, int8_t value) {
    const size_t i = Index(key);
    keys[i] = key;
    values[i] = value;
  }
  int8_t Get(uint64_t key) const {
    const size_t i = Index(key);
    return keys[i] == key ? values[i] : 0;
  }
  std::vector<uint64_t> keys;
  std::vector<int8_t> values;  // 0: none; else bound - kMinScore + 1.
};

ConnectFourSolver::ConnectFourSolver(int table_log2) {
  if (table_log2 < 10 || table_log2 > 28) {
    throw std::invalid_argument("ConnectFourSolver: table_log2 " +
                                std::to_string(table_log2) +
                                " is invalid; accepted: 10..28");
  }
  table_ = std::make_unique<Table>(table_log2);
}

ConnectFourSolver::~ConnectFourSolver() = default;

int ConnectFourSolver::Negamax(uint64_t current, uint64_t mask, int moves,
                               int alpha, int beta) {
  ++nodes_;
  const uint64_t opponent = current ^ mask;
  const uint64_t opponent_wins = WinningCells(opponent, mask);
  uint64_t possible = Playable(mask);
  // Moves that do not let the opponent win at once: a forced block if it
  // threatens a cell we can play (two such threats: lost), and never the
  // cell below one of its threats.
  const uint64_t forced = possible & opponent_wins;
  if (forced != 0) {
    if (forced & (forced - 1)) return -(kCells - moves) / 2;
    possible = forced;
  }
  const uint64_t next = possible & ~(opponent_wins >> 1);
  if (next == 0) return -(kCells - moves) / 2;
  if (moves >= kCells - 2) return 0;  // Neither can win in the last two.
  const int min = -(kCells - 2 - moves) / 2;
  if (alpha < min) {
    alpha = min;
    if (alpha >= beta) return alpha;
  }
  int max = (kCells - 1 - moves) / 2;
  const uint64_t key = current + mask;
  if (const int8_t bound = table_->Get(key)) max = bound + kMinScore - 1;
  if (beta > max) {
    beta = max;
    if (alpha >= beta) return beta;
  }
  // Threat-count order (more own threats after the move first), ties in
  // centre-first order.
  std::array<uint64_t, kWidth> order{};
  std::array<int, kWidth> score{};
  int n = 0;
  for (const int c : kColumnOrder) {
    const uint64_t move = next & ColumnMask(c);
    if (move == 0) continue;
    const int s = PopCount(WinningCells(current | move, mask));
    int at = n++;
    while (at > 0 && score[at - 1] < s) {
      order[at] = order[at - 1];
      score[at] = score[at - 1];
      --at;
    }
    order[at] = move;
    score[at] = s;
  }
  for (int i = 0; i < n; ++i) {
    const uint64_t child_mask = mask | order[i];
    const int value =
        -Negamax(current ^ mask, child_mask, moves + 1, -beta, -alpha);
    if (value >= beta) return value;
    if (value > alpha) alpha = value;
  }
  table_->Put(key, static_cast<int8_t>(alpha - kMinScore + 1));
  return alpha;
}

int ConnectFourSolver::Solve(uint64_t current, uint64_t mask, int moves) {
  if (WinningCells(current, mask) & Playable(mask)) {
    return (kCells + 1 - moves) / 2;
  }
  int min = -(kCells - moves) / 2;
  int max = (kCells + 1 - moves) / 2;
  // Null-window searches narrowing [min, max], first around 0 (is it a
  // win, a draw or a loss) and then towards the bounds.
  while (min < max) {
    int med = min + (max - min) / 2;
    if (med <= 0 && min / 2 < med) {
      med = min / 2;
    } else if (med >= 0 && max / 2 > med) {
      med = max / 2;
    }
    const int r = Negamax(current, mask, moves, med, med + 1);
    if (r <= med) {
      max = r;
    } else {
      min = r;
    }
  }
  return min;
}

int ConnectFourSolver::Solve(const ConnectFour& game) {
  if (game.IsTerminal()) {
    throw std::invalid_argument("ConnectFourSolver: the game is over");
  }
  return Solve(game.Stones(game.CurrentPlayer()), game.Occupied(),
               game.Moves());
}

std::array<std::optional<int>, ConnectFour::kColumns>
ConnectFourSolver::ScoreMoves(const ConnectFour& game) {
  if (game.IsTerminal()) {
    throw std::invalid_argument("ConnectFourSolver: the game is over");
  }
  std::array<std::optional<int>, kWidth> scores;
  const uint64_t current = game.Stones(game.CurrentPlayer());
  const uint64_t mask = game.Occupied();
  const int moves = game.Moves();
  for (int c = 0; c < kWidth; ++c) {
    const uint64_t move = Playable(mask) & ColumnMask(c);
    if (move == 0) continue;
    if (WinningCells(current, mask) & move) {
      scores[c] = (kCells + 1 - moves) / 2;
    } else if (moves + 1 == kCells) {
      scores[c] = 0;  // The last cell, and no line: a draw.
    } else {
      // The opponent to move, with the stone played.
      scores[c] = -Solve(current ^ mask, mask | move, moves + 1);
    }
  }
  return scores;
}

std::array<bool, ConnectFour::kColumns> ValueKeepingMoves(
    const ConnectFour& game, ConnectFourSolver& solver) {
  const auto scores = solver.ScoreMoves(game);
  int best = -1;
  for (const auto& s : scores) {
    if (s) best = std::max(best, ScoreValue(*s));
  }
  std::array<bool, ConnectFour::kColumns> keeps{};
  for (int c = 0; c < kWidth; ++c) {
    keeps[c] = scores[c] && ScoreValue(*scores[c]) == best;
  }
  return keeps;
}

std::unique_ptr<ConnectFour> PlayColumns(const std::vector<int64_t>& columns) {
  auto game = std::make_unique<ConnectFour>();
  game->Reset();
  for (const int64_t c : columns) {
    if (game->IsTerminal() || !game->IsLegal(c)) {
      throw std::invalid_argument("PlayColumns: column " + std::to_string(c) +
                                  " cannot be played there");
    }
    game->Play(c);
  }
  return game;
}

std::vector<std::vector<int64_t>> JudgePositions(int count, int min_plies,
                                                 int max_plies, uint64_t seed,
                                                 ConnectFourSolver& solver) {
  if (count < 0 || min_plies < 0 || max_plies < min_plies ||
      max_plies >= kCells) {
    throw std::invalid_argument(
        "JudgePositions: count >= 0 and 0 <= min_plies <= max_plies < 42");
  }
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int64_t>> positions;
  while (static_cast<int>(positions.size()) < count) {
    ConnectFour game;
    game.Reset();
    std::vector<int64_t> columns;
    const int plies =
        std::uniform_int_distribution<int>(min_plies, max_plies)(rng);
    for (int i = 0; i < plies && !game.IsTerminal(); ++i) {
      std::vector<int64_t> legal;
      for (int64_t c = 0; c < kWidth; ++c) {
        if (game.IsLegal(c)) legal.push_back(c);
      }
      columns.push_back(legal[std::uniform_int_distribution<size_t>(
          0, legal.size() - 1)(rng)]);
      game.Play(columns.back());
    }
    if (game.IsTerminal()) continue;
    const auto keeps = ValueKeepingMoves(game, solver);
    int legal = 0, kept = 0;
    for (int c = 0; c < kWidth; ++c) {
      legal += game.IsLegal(c);
      kept += keeps[c];
    }
    if (kept == legal) continue;  // Every move as good: judges nothing.
    positions.push_back(std::move(columns));
  }
  return positions;
}

SolverOpponent::SolverOpponent(int book_depth)
    : book_depth_(book_depth), book_(std::max(1, book_depth), "solver-book") {}

int64_t SolverOpponent::Choose(const Game& game, std::mt19937_64& rng) {
  const auto* board = dynamic_cast<const ConnectFour*>(&game);
  if (board == nullptr) {
    throw std::invalid_argument("the solver opponent plays ConnectFour, not " +
                                game.Name());
  }
  if (board->Moves() < book_depth_) return book_.Choose(game, rng);
  const auto scores = solver_.ScoreMoves(*board);
  int best = kMinScore - 1;
  for (const auto& s : scores) {
    if (s) best = std::max(best, *s);
  }
  std::vector<int64_t> best_columns;
  for (int c = 0; c < kWidth; ++c) {
    if (scores[c] && *scores[c] == best) best_columns.push_back(c);
  }
  return best_columns[std::uniform_int_distribution<size_t>(
      0, best_columns.size() - 1)(rng)];
}

}  // namespace asyncrl
