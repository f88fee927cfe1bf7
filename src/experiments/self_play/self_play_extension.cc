#include "asyncrl/experiments/self_play/self_play_extension.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <new>
#include <random>

#include "asyncrl/envs/games/connect_four_solver.h"
#include "asyncrl/experiments/evaluator.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

constexpr size_t kAlign = 64;
size_t BlockBytes() {
  return (sizeof(SelfPlayBlock) + kAlign - 1) / kAlign * kAlign;
}

// Each training environment's opponents, for the worker's lifetime.
class SelfPlayWorker : public WorkerExtension {
 public:
  std::vector<std::unique_ptr<SelfPlayProvider>> providers;
};

}  // namespace

SelfPlayExtension::SelfPlayExtension(SelfPlayOptions options)
    : options_(std::move(options)) {}

void SelfPlayExtension::AdjustOptions(TrainOptions*) const {
  options_.Validate();
}

void SelfPlayExtension::Configure(const TrainOptions& options, Env& probe) {
  seed_ = options.seed;
  eval_games_ = options.eval_n_episodes;
  SelfPlayEnv* game = FindSelfPlayEnv(probe);
  if (game == nullptr) return;
  opponents_ = options_.EvalOpponents(game->game().Name());
  judge_ = game->game().Name() == "ConnectFour";
  if (options.eval_interval > 0 && options.eval_n_steps > 0) {
    throw InvalidOption("eval_n_steps", std::to_string(options.eval_n_steps),
                        "0 for a two-player game (evaluations play "
                        "eval_n_episodes games per opponent)");
  }
}

void SelfPlayExtension::CheckAgent(const Agent& agent) const {
  if (!active() || !options_.TrainsBothSides()) return;
  const auto* turns = dynamic_cast<const TurnTaking*>(&agent);
  const std::string why = turns == nullptr
                              ? "agent type '" + agent.Type() +
                                    "' cannot learn both sides of a game"
                              : turns->TurnTakingRefusal();
  if (!why.empty()) {
    throw InvalidOption("train_sides", options_.train_sides,
                        "learner (both: " + why + ")");
  }
}

size_t SelfPlayExtension::SharedBytes(const SharedStateSizes& sizes) const {
  if (!active()) return 0;
  return BlockBytes() + static_cast<size_t>(sizes.params) *
                            static_cast<size_t>(options_.snapshot_window) *
                            sizeof(float);
}

void SelfPlayExtension::Place(void* shared, const RunInfo& run) {
  control_ = run.control;
  if (!active()) return;
  block_ = new (shared) SelfPlayBlock();
  block_->pool =
      reinterpret_cast<float*>(static_cast<char*>(shared) + BlockBytes());
  block_->params = run.sizes.params;
  block_->window = options_.snapshot_window;
  block_->elo.store(options_.initial_elo);
  block_->interval = options_.snapshot_interval;
  block_->enabled.store(1);
}

void SelfPlayExtension::SaveTo(proto::Checkpoint* checkpoint) const {
  if (!active()) return;
  SnapshotPool(*block_).SaveTo(checkpoint);
}

void SelfPlayExtension::LoadFrom(const proto::Checkpoint& checkpoint) {
  if (!active()) return;
  SnapshotPool(*block_).LoadFrom(checkpoint);
}

void SelfPlayExtension::Start(const RunInfo& run) {
  if (!active() || block_->taken.load() != 0) return;
  // The pool starts with the initial (or loaded) parameters; the next
  // snapshot is due at the next multiple of the interval.
  const int64_t start = run.control->start_step.load();
  SnapshotPool(*block_).Take(run.params, start, block_->elo.load());
  block_->next_step.store((start / block_->interval + 1) * block_->interval);
}

double JudgeAgreement(Agent& agent) {
  AgentOpponent judged("judged", &agent, /*sample=*/false);
  std::mt19937_64 unused(0);
  int kept = 0;
  const auto& set = ConnectFourJudgeSet();
  for (const JudgedPosition& p : set) {
    std::vector<int64_t> columns;
    for (const char* c = p.columns; *c != '\0'; ++c)
      columns.push_back(*c - '0');
    const auto board = PlayColumns(columns);
    const int64_t move = judged.Choose(*board, unused);
    kept += (p.keeps >> move) & 1;
  }
  return static_cast<double>(kept) / static_cast<double>(set.size());
}

std::string SelfPlayExtension::Status() const {
  if (!active() || block_ == nullptr) return "";
  char words[32];
  std::snprintf(words, sizeof(words), "elo %.0f", block_->elo.load());
  return words;
}

std::vector<std::string> SelfPlayExtension::ScoreColumns() const {
  std::vector<std::string> names;
  if (!active()) return names;
  for (const std::string& opponent : opponents_) {
    for (const char* what : {"win_", "draw_", "loss_"}) {
      names.push_back(what + opponent);
    }
  }
  names.push_back("total");
  if (judge_) names.push_back("judge");
  names.push_back("elo");
  return names;
}

// The learner's results against each fixed opponent, and their total (wins
// and half the draws over every game); the row's statistics are those of
// the last opponent, or of every game with --eval-score total.
std::optional<std::vector<double>> SelfPlayExtension::Evaluate(
    int64_t t, Agent& agent, Env& env, MetricsChannel* metrics,
    std::vector<std::string>* cells) {
  SelfPlayEnv* game = FindSelfPlayEnv(env);
  if (!active() || game == nullptr) return std::nullopt;
  const std::vector<OpponentRecord> records = PlayAgainstOpponents(
      agent, *game, opponents_, eval_games_, &control_->stop);
  std::vector<double> every;
  for (const OpponentRecord& r : records) {
    every.insert(every.end(), r.results.begin(), r.results.end());
    cells->push_back(FormatCell(r.WinRate()));
    cells->push_back(FormatCell(r.DrawRate()));
    cells->push_back(FormatCell(r.LossRate()));
    if (metrics != nullptr) {
      metrics->Send(("eval/win_" + r.opponent).c_str(), t, r.WinRate());
      metrics->Send(("eval/draw_" + r.opponent).c_str(), t, r.DrawRate());
      metrics->Send(("eval/loss_" + r.opponent).c_str(), t, r.LossRate());
    }
  }
  double points = 0;  // A win 1, a draw 1/2.
  for (double result : every) points += (result + 1.0) / 2.0;
  const double total =
      every.empty() ? 0.0 : points / static_cast<double>(every.size());
  cells->push_back(FormatCell(total));
  if (metrics != nullptr) metrics->Send("eval/total", t, total);
  if (judge_) {
    const double agreement = JudgeAgreement(agent);
    cells->push_back(FormatCell(agreement));
    if (metrics != nullptr) metrics->Send("eval/judge", t, agreement);
  }
  cells->push_back(FormatCell(block_->elo.load()));
  if (options_.eval_score == "total") return every;
  return records.back().results;
}

std::unique_ptr<WorkerExtension> SelfPlayExtension::StartWorker(
    const WorkerInfo& w) {
  if (!active()) return nullptr;
  auto worker = std::make_unique<SelfPlayWorker>();
  const LearnerSide side = ParseLearnerSide(options_.learner_side);
  for (size_t j = 0; j < w.envs->size(); ++j) {
    SelfPlayEnv* game = FindSelfPlayEnv(*(*w.envs)[j]);
    if (game == nullptr) continue;
    std::seed_seq seq{static_cast<uint64_t>(seed_),
                      static_cast<uint64_t>(w.process_idx),
                      static_cast<uint64_t>(j), uint64_t{0x5E1F}};
    std::array<uint64_t, 1> seed{};
    seq.generate(seed.begin(), seed.end());
    worker->providers.push_back(std::make_unique<SelfPlayProvider>(
        options_, *block_, w.make_agent, w.params, w.control->global_step,
        seed[0]));
    game->SetLearnerSide(side);
    game->SetOpponentProvider(worker->providers.back().get());
  }
  return worker;
}

// selfplay/elo, /snapshots (in the pool), /rated_games.
void SelfPlayExtension::Report(EventWriter& events, bool periodic) {
  if (!active() || !periodic) return;
  const int64_t step = control_->global_step.load();
  const double wall = WallTimeSeconds();
  events.WriteScalar("selfplay/elo", step, block_->elo.load(), wall);
  events.WriteScalar("selfplay/snapshots", step,
                     static_cast<double>(std::min<int64_t>(block_->taken.load(),
                                                           block_->window)),
                     wall);
  events.WriteScalar("selfplay/rated_games", step,
                     static_cast<double>(block_->rated_games.load()), wall);
}

}  // namespace asyncrl
