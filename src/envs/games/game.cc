#include "asyncrl/envs/games/game.h"

#include <stdexcept>

#include "asyncrl/envs/games/connect_four.h"
#include "asyncrl/envs/games/tictactoe.h"
#include "asyncrl/misc/strings.h"

namespace asyncrl {

std::vector<uint8_t> Game::LegalMask() const {
  std::vector<uint8_t> mask(static_cast<size_t>(NumActions()));
  for (int64_t a = 0; a < NumActions(); ++a) mask[a] = IsLegal(a) ? 1 : 0;
  return mask;
}

std::vector<int64_t> Game::LegalActions() const {
  std::vector<int64_t> actions;
  for (int64_t a = 0; a < NumActions(); ++a) {
    if (IsLegal(a)) actions.push_back(a);
  }
  return actions;
}

int64_t Game::ObservationSize() const {
  int64_t size = 1;
  for (int64_t dim : ObservationShape()) size *= dim;
  return size;
}

std::string IllegalActionMessage(const Game& game, int64_t action,
                                 const std::string& reason) {
  std::string legal;
  for (int64_t a : game.LegalActions()) {
    if (!legal.empty()) legal += ", ";
    legal += std::to_string(a);
  }
  return game.Name() + ": action " + std::to_string(action) + " is illegal (" +
         reason + "); legal: " + (legal.empty() ? "none" : legal);
}

void GameRegistry::Register(const std::string& name, Factory factory) {
  if (!factories_.emplace(name, std::move(factory)).second) {
    throw std::invalid_argument(
        "game '" + name +
        "' is already registered; registered: " + JoinNames(Names()));
  }
}

bool GameRegistry::Contains(const std::string& name) const {
  return factories_.count(name) > 0;
}

std::vector<std::string> GameRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(factories_.size());
  for (const auto& [name, factory] : factories_) names.push_back(name);
  return names;
}

std::unique_ptr<Game> GameRegistry::Make(const std::string& name) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    throw std::invalid_argument("unknown game '" + name +
                                "'; registered: " + JoinNames(Names()));
  }
  return it->second();
}

namespace {

void RegisterBoardGames(GameRegistry& registry) {
  registry.Register("TicTacToe", [] { return std::make_unique<TicTacToe>(); });
  registry.Register("ConnectFour",
                    [] { return std::make_unique<ConnectFour>(); });
}

}  // namespace

GameRegistry& DefaultGameRegistry() {
  // Never destroyed: factories may be used from static destructors.
  static GameRegistry* registry = [] {
    auto* r = new GameRegistry();
    RegisterBoardGames(*r);
    return r;
  }();
  return *registry;
}

}  // namespace asyncrl
