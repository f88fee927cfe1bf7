// Self-play for two-player games (self_play.h) as a trainer extension. It
// is active when the run's environment is a game (envs/games/
// self_play_env.h): the snapshot pool and ratings live in the shared
// region, each training environment gets an opponent provider, evaluations
// play the fixed opponents (win/draw/loss columns per opponent and the
// ELO in scores.txt), the parent writes selfplay/* to TensorBoard, and
// pool and ratings go in checkpoints. With any other environment it does
// nothing.
#ifndef ASYNCRL_EXPERIMENTS_SELF_PLAY_SELF_PLAY_EXTENSION_H_
#define ASYNCRL_EXPERIMENTS_SELF_PLAY_SELF_PLAY_EXTENSION_H_

#include <memory>
#include <string>
#include <vector>

#include "asyncrl/experiments/extension.h"
#include "asyncrl/experiments/self_play/self_play.h"

namespace asyncrl {

// The share of the Connect Four judge's positions (ConnectFourJudgeSet)
// where `agent`'s move (Agent::Act, as in evaluation games) keeps the
// position's game-theoretic value.
double JudgeAgreement(Agent& agent);

class SelfPlayExtension : public TrainerExtension {
 public:
  explicit SelfPlayExtension(SelfPlayOptions options);

  std::string Name() const override { return "self-play"; }
  void AdjustOptions(TrainOptions* options) const override;
  void Configure(const TrainOptions& options, Env& probe) override;
  // --train-sides both needs an agent that can take turns (TurnTaking).
  void CheckAgent(const Agent& agent) const override;
  size_t SharedBytes(const SharedStateSizes& sizes) const override;
  void Place(void* shared, const RunInfo& run) override;
  void SaveTo(proto::Checkpoint* checkpoint) const override;
  void LoadFrom(const proto::Checkpoint& checkpoint) override;
  void Start(const RunInfo& run) override;
  std::vector<std::string> ScoreColumns() const override;
  std::optional<std::vector<double>> Evaluate(
      int64_t t, Agent& agent, Env& env, MetricsChannel* metrics,
      std::vector<std::string>* cells) override;
  std::unique_ptr<WorkerExtension> StartWorker(const WorkerInfo& w) override;
  void Report(EventWriter& events, bool periodic) override;
  // "elo 1234" (the learner's rating), as ML-Agents' console shows it.
  std::string Status() const override;

  // Whether the run's environment is a game (after Configure).
  bool active() const { return !opponents_.empty(); }

 private:
  SelfPlayOptions options_;
  int64_t seed_ = 0;
  int64_t eval_games_ = 0;
  std::vector<std::string> opponents_;  // Evaluation opponents.
  bool judge_ = false;  // ConnectFour: the judge's agreement column.
  SelfPlayBlock* block_ = nullptr;
  const ControlBlock* control_ = nullptr;
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_SELF_PLAY_SELF_PLAY_EXTENSION_H_
