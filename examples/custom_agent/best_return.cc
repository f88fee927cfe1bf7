// A trainer extension in a project of its own, built against an installed
// asyncrl (see CMakeLists.txt beside this file): it keeps the best training
// episode return of the whole run in the run's shared memory, adds it and
// the number of episodes it measured as two columns of scores.txt, shows
// it on the status line and writes custom/best_train_return to TensorBoard.
// main() hands it to asyncrl::RunTrainer, with train_a3c's agent and whole
// command line:
//
//   best_return --env CartPole-v1 --processes 2 --steps 200000
#include <asyncrl/experiments/evaluator.h>
#include <asyncrl/experiments/extension.h>
#include <asyncrl/experiments/run_trainer.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace {

// What every process of the run shares.
struct BestReturnBlock {
  std::atomic<double> best{-1e300};
  std::atomic<int64_t> measured{0};
};

// A worker's part: one atomic max per measured episode.
class BestReturnWorker : public asyncrl::WorkerExtension {
 public:
  explicit BestReturnWorker(BestReturnBlock& block) : block_(block) {}
  void EpisodeEnded(int64_t, int64_t, double episode_return,
                    bool measured) override {
    if (!measured) return;
    block_.measured.fetch_add(1);
    double best = block_.best.load();
    while (episode_return > best &&
           !block_.best.compare_exchange_weak(best, episode_return)) {
    }
  }

 private:
  BestReturnBlock& block_;
};

class BestReturnExtension : public asyncrl::TrainerExtension {
 public:
  std::string Name() const override { return "best-return"; }
  size_t SharedBytes(const asyncrl::SharedStateSizes&) const override {
    return sizeof(BestReturnBlock);
  }
  void Place(void* shared, const asyncrl::RunInfo& run) override {
    block_ = new (shared) BestReturnBlock();
    control_ = run.control;
  }
  std::vector<std::string> ScoreColumns() const override {
    return {"best_train_return", "train_episodes_measured"};
  }
  void EvaluationBegins(int64_t, std::vector<std::string>* cells) override {
    cells->push_back(asyncrl::FormatCell(block_->best.load()));
    cells->push_back(std::to_string(block_->measured.load()));
  }
  std::unique_ptr<asyncrl::WorkerExtension> StartWorker(
      const asyncrl::WorkerInfo&) override {
    return std::make_unique<BestReturnWorker>(*block_);
  }
  void Report(asyncrl::EventWriter& events, bool periodic) override {
    if (!periodic || block_->measured.load() == 0) return;
    const double wall = std::chrono::duration<double>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    events.WriteScalar("custom/best_train_return", control_->global_step.load(),
                       block_->best.load(), wall);
  }
  std::string Status() const override {
    if (block_->measured.load() == 0) return "";
    char words[64];
    std::snprintf(words, sizeof(words), "best train return %.4g",
                  block_->best.load());
    return words;
  }

 private:
  BestReturnBlock* block_ = nullptr;
  const asyncrl::ControlBlock* control_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  asyncrl::TrainerPlugins plugins;
  plugins.program = "best_return";
  plugins.extensions = [](const asyncrl::RunFlags&) {
    return asyncrl::Extensions{std::make_shared<BestReturnExtension>()};
  };
  return asyncrl::RunTrainer(argc, argv, plugins);
}
