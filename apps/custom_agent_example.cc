// How to plug your own agent into asyncrl: a hill-climbing linear policy for
// CartPole written only against the public headers. Its shared state (the
// best weights and their return) lives in the trainer's shared memory, so
// every worker climbs from the best policy any worker found.
//
//   custom_agent_example OUTDIR [PROCESSES]
#include <iostream>
#include <random>

#include "agents/agent.h"
#include "envs/registry.h"
#include "experiments/train_agent_async.h"
#include "misc/checkpoint.h"

namespace {

using namespace asyncrl;  // NOLINT(google-build-using-namespace): example.

constexpr int kObs = 4;  // CartPole: 4 weights, then the best return.

class HillClimbingAgent : public Agent {
 public:
  explicit HillClimbingAgent(uint64_t seed) : rng_(seed) {}
  std::string Type() const override { return "hill-climbing"; }

  Action Act(FloatView obs) override { return Choose(obs, shared_); }
  Action ActAndTrain(FloatView obs, double reward) override {
    if (!in_episode_) {  // Perturb the best weights for this episode.
      std::normal_distribution<float> noise(0.0f, 0.5f);
      for (int i = 0; i < kObs; ++i) candidate_[i] = shared_[i] + noise(rng_);
      episode_return_ = 0;
      in_episode_ = true;
    }
    episode_return_ += reward;
    return Choose(obs, candidate_);
  }
  void StopEpisodeAndTrain(FloatView, double reward, bool) override {
    episode_return_ += reward;
    if (episode_return_ >= shared_[kObs]) {  // No worse: share it (Hogwild).
      for (int i = 0; i < kObs; ++i) shared_[i] = candidate_[i];
      shared_[kObs] = static_cast<float>(episode_return_);
    }
    in_episode_ = false;
  }
  void StopEpisode() override {}
  std::vector<Statistic> Statistics() const override {
    return {{"best_return", shared_[kObs]}};
  }

  SharedStateSizes SharedSizes() const override { return {kObs + 1, 0}; }
  void BindShared(SharedBuffers buffers, bool initialize) override {
    if (initialize) std::copy(shared_, shared_ + kObs + 1, buffers.params);
    shared_ = buffers.params;
  }
  void SaveTo(proto::Checkpoint* checkpoint) const override {
    AddFloatTensor(checkpoint->mutable_parameters(), "w", {kObs + 1}, shared_);
  }
  void LoadFrom(const proto::Checkpoint& checkpoint) override {
    ReadFloatTensor(checkpoint.parameters(), "w", {kObs + 1}, shared_);
  }

 private:
  static Action Choose(FloatView obs, const float* w) {
    float dot = 0;
    for (int i = 0; i < kObs; ++i) dot += w[i] * obs[i];
    return Action::Discrete(dot > 0 ? 1 : 0);
  }

  std::mt19937 rng_;
  float own_[kObs + 1] = {0, 0, 0, 0, -1};
  float* shared_ = own_;
  float candidate_[kObs] = {};
  double episode_return_ = 0;
  bool in_episode_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: custom_agent_example OUTDIR [PROCESSES]\n";
    return 2;
  }
  TrainOptions options;
  options.outdir = argv[1];
  options.processes = argc > 2 ? std::atoi(argv[2]) : 2;
  options.steps = 200000;
  options.eval_interval = 2000;
  options.eval_n_episodes = 10;
  options.successful_score = 195;
  options.env_name = "CartPole-v0";
  const TrainResult result = TrainAgentAsync(
      options, [](int, bool) { return MakeEnv("CartPole-v0"); },
      [](int idx) { return std::make_unique<HillClimbingAgent>(idx + 1); });
  if (result.exit_code != 0) {
    std::cerr << result.message << "\n";
    return result.exit_code;
  }
  std::cout << "trained for " << result.global_step << " steps\n";
  return 0;
}
