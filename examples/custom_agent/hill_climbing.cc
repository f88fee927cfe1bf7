// A custom agent in a project of its own, built against an installed asyncrl
// (see CMakeLists.txt beside this file): a hill-climbing linear policy for
// discrete actions. Its shared state (the best weights and their return)
// lives in the trainer's shared memory, so every worker climbs from the best
// policy any worker found. main() hands it to asyncrl::RunTrainer, which
// gives this program train_a3c's whole command line, and a global-step hook
// (the reference's global_step_hooks) that anneals the noise with
// --anneal-noise:
//
//   hill_climbing --env CartPole-v0 --processes 2 --steps 200000
//       --eval-interval 2000 --successful-score 195 --outdir results
#include <asyncrl/agents/agent.h>
#include <asyncrl/experiments/run_trainer.h>
#include <asyncrl/misc/checkpoint.h>
#include <asyncrl/misc/validate.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

class HillClimbingAgent : public asyncrl::Agent {
 public:
  // A linear policy: weights [obs size, actions], then the best return.
  // `noise`: the standard deviation of each episode's weight perturbation.
  HillClimbingAgent(const asyncrl::Space& obs, const asyncrl::Space& act,
                    uint64_t seed, double noise)
      : noise_(noise),
        obs_size_(obs.FlatSize()),
        actions_(act.n),
        rng_(seed),
        own_(obs_size_ * actions_ + 1, 0.0f),
        candidate_(obs_size_ * actions_) {
    asyncrl::Require(std::isfinite(noise) && noise > 0, "noise", noise,
                     "a finite number > 0");
    if (!act.IsDiscrete() || obs.shape.size() != 1) {
      throw std::invalid_argument(
          "hill-climbing needs a flat observation and discrete actions; the "
          "environment has " +
          obs.ToString() + " and " + act.ToString());
    }
    own_.back() = -1e9f;  // No return recorded yet.
    shared_ = own_.data();
  }
  std::string Type() const override { return "hill-climbing"; }

  asyncrl::Action Act(asyncrl::FloatView obs) override {
    return Choose(obs, shared_);
  }
  asyncrl::Action ActAndTrain(asyncrl::FloatView obs, double reward) override {
    if (!in_episode_) {  // Perturb the best weights for this episode.
      std::normal_distribution<float> noise(0.0f, static_cast<float>(noise_));
      for (size_t i = 0; i < candidate_.size(); ++i) {
        candidate_[i] = shared_[i] + noise(rng_);
      }
      episode_return_ = 0;
      in_episode_ = true;
    }
    episode_return_ += reward;
    return Choose(obs, candidate_.data());
  }
  void StopEpisodeAndTrain(asyncrl::FloatView, double reward, bool) override {
    episode_return_ += reward;
    ++episodes_;
    if (episode_return_ >= best()) {  // No worse: share it (Hogwild).
      std::copy(candidate_.begin(), candidate_.end(), shared_);
      shared_[candidate_.size()] = static_cast<float>(episode_return_);
      ++improvements_;
    }
    in_episode_ = false;
  }
  void StopEpisode() override {}

  // Takes effect at the next episode's perturbation.
  void SetNoise(double noise) { noise_ = noise; }

  // Columns of scores.txt (after the evaluation's own), in this order.
  std::vector<asyncrl::Statistic> Statistics() const override {
    return {{"best_return", best()},
            {"improvements", static_cast<double>(improvements_)},
            {"episodes_seen", static_cast<double>(episodes_)},
            {"noise", noise_}};
  }

  asyncrl::SharedStateSizes SharedSizes() const override {
    return {static_cast<int64_t>(own_.size()), 0};
  }
  void BindShared(asyncrl::SharedBuffers buffers, bool initialize) override {
    if (initialize) std::copy(own_.begin(), own_.end(), buffers.params);
    shared_ = buffers.params;
  }
  void SaveTo(asyncrl::proto::Checkpoint* checkpoint) const override {
    asyncrl::AddFloatTensor(checkpoint->mutable_parameters(), "w",
                            {static_cast<int64_t>(own_.size())}, shared_);
  }
  void LoadFrom(const asyncrl::proto::Checkpoint& checkpoint) override {
    asyncrl::ReadFloatTensor(checkpoint.parameters(), "w",
                             {static_cast<int64_t>(own_.size())}, shared_);
  }

 private:
  double best() const { return shared_[candidate_.size()]; }
  asyncrl::Action Choose(asyncrl::FloatView obs, const float* w) const {
    int64_t best_action = 0;
    float best_score = 0;
    for (int64_t a = 0; a < actions_; ++a) {
      float score = 0;
      for (int64_t i = 0; i < obs_size_; ++i) {
        score += w[a * obs_size_ + i] * obs[i];
      }
      if (a == 0 || score > best_score) {
        best_action = a;
        best_score = score;
      }
    }
    return asyncrl::Action::Discrete(best_action);
  }

  double noise_;
  int64_t obs_size_;
  int64_t actions_;
  std::mt19937 rng_;
  std::vector<float> own_;  // Until bound to shared memory.
  float* shared_;
  std::vector<float> candidate_;
  double episode_return_ = 0;
  bool in_episode_ = false;
  int64_t episodes_ = 0;
  int64_t improvements_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  double noise = 0.5;   // --noise and --anneal-noise, this program's own
  bool anneal = false;  // flags.
  asyncrl::TrainerPlugins plugins;
  plugins.program = "hill_climbing";
  plugins.flags = {
      {"noise", "standard deviation of the weight perturbation", &noise},
      {"anneal-noise",
       "decay the noise linearly over --steps to 1% of --noise (a "
       "global-step hook)",
       &anneal}};
  // Called by every worker after every step with its agent.
  plugins.step_hooks = [&noise, &anneal](const asyncrl::RunFlags& flags) {
    std::vector<asyncrl::StepHook> hooks;
    if (!anneal) return hooks;
    const double steps = static_cast<double>(flags.train.steps);
    hooks.push_back([noise, steps](asyncrl::Env&, asyncrl::Agent& agent,
                                   int64_t t) {
      const double left = std::max(0.01, 1.0 - static_cast<double>(t) / steps);
      dynamic_cast<HillClimbingAgent&>(agent).SetNoise(noise * left);
    });
    return hooks;
  };
  plugins.make_agent = [&noise](const asyncrl::AgentContext& ctx) {
    return std::make_unique<HillClimbingAgent>(
        ctx.observation_space, ctx.action_space, ctx.seed, noise);
  };
  return asyncrl::RunTrainer(argc, argv, plugins);
}
