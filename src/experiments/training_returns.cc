#include "asyncrl/experiments/training_returns.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <new>

#include "asyncrl/experiments/evaluator.h"
#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/misc/logging.h"

namespace asyncrl {

namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
constexpr char kColumn[] = "train_mean";

// A worker's side: measured episodes' returns into the ring, in the
// environment's units.
class TrainingReturnsWorker : public WorkerExtension {
 public:
  TrainingReturnsWorker(TrainingReturnsBlock& block, double reward_scale)
      : block_(block), reward_scale_(reward_scale) {}

  void EpisodeEnded(int64_t, int64_t, double episode_return,
                    bool measured) override {
    if (measured)
      block_.Record(EnvironmentUnits(episode_return, reward_scale_));
  }

 private:
  TrainingReturnsBlock& block_;
  double reward_scale_;
};

}  // namespace

TrainingReturnsBlock::TrainingReturnsBlock() {
  for (auto& r : returns) r.store(kNone, std::memory_order_relaxed);
}

void TrainingReturnsBlock::Record(double episode_return) {
  const int64_t w = window.load(std::memory_order_relaxed);
  // A non-finite return (an environment's own bug) would poison every mean
  // after it, and a checkpoint holding it could not be resumed.
  if (w <= 0 || !std::isfinite(episode_return)) return;
  const int64_t i = recorded.fetch_add(1, std::memory_order_relaxed);
  returns[i % w].store(episode_return, std::memory_order_release);
}

std::optional<double> TrainingReturnsBlock::Mean(int64_t* count) const {
  const int64_t w = window.load(std::memory_order_relaxed);
  double sum = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < w; ++i) {
    const double r = returns[i].load(std::memory_order_acquire);
    if (std::isnan(r)) continue;
    sum += r;
    ++n;
  }
  if (count != nullptr) *count = n;
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

std::vector<double> TrainingReturnsBlock::Newest(int64_t* total_out) const {
  const int64_t w = window.load(std::memory_order_relaxed);
  const int64_t total = recorded.load(std::memory_order_acquire);
  if (total_out != nullptr) *total_out = total;
  std::vector<double> out;
  if (w <= 0) return out;
  for (int64_t k = std::max<int64_t>(0, total - w); k < total; ++k) {
    const double r = returns[k % w].load(std::memory_order_acquire);
    if (!std::isnan(r)) out.push_back(r);
  }
  return out;
}

void TrainingReturnsBlock::Restore(int64_t recorded_total,
                                   const std::vector<double>& newest) {
  const int64_t w = window.load(std::memory_order_relaxed);
  for (auto& r : returns) r.store(kNone, std::memory_order_relaxed);
  const int64_t total =
      std::max<int64_t>(recorded_total, static_cast<int64_t>(newest.size()));
  recorded.store(total);
  if (w <= 0) return;
  // The newest min(w, size) returns, in the slots they had been recorded
  // in: the k-th of all is in slot k % w.
  const int64_t keep =
      std::min<int64_t>(w, static_cast<int64_t>(newest.size()));
  for (int64_t j = 0; j < keep; ++j) {
    const int64_t k = total - keep + j;
    returns[k % w].store(newest[newest.size() - static_cast<size_t>(keep) +
                                static_cast<size_t>(j)]);
  }
}

void TrainingReturnsExtension::Configure(const TrainOptions& options, Env&) {
  window_ = options.train_returns_window;
  reward_scale_ = options.reward_scale;
  column_ = window_ > 0;
  if (!options.resume.empty()) {
    // A resumed run keeps the columns its scores.txt has: none from before
    // the column existed, "nan" cells when resumed with a window of 0.
    std::ifstream in(ScoresPath(options.outdir));
    std::string header;
    if (in && std::getline(in, header)) {
      column_ =
          ("\t" + header + "\t").find(std::string("\t") + kColumn + "\t") !=
          std::string::npos;
    }
  }
}

size_t TrainingReturnsExtension::SharedBytes(const SharedStateSizes&) const {
  return window_ > 0 ? sizeof(TrainingReturnsBlock) : 0;
}

void TrainingReturnsExtension::Place(void* shared, const RunInfo& run) {
  control_ = run.control;
  if (window_ <= 0) return;
  block_ = new (shared) TrainingReturnsBlock();
  block_->window.store(window_);
}

void TrainingReturnsExtension::SaveTo(proto::Checkpoint* checkpoint) const {
  if (block_ == nullptr) return;
  auto* saved = checkpoint->mutable_training_returns();
  int64_t total = 0;
  for (double r : block_->Newest(&total)) saved->add_newest(r);
  saved->set_recorded(total);
}

void TrainingReturnsExtension::LoadFrom(const proto::Checkpoint& checkpoint) {
  if (block_ == nullptr || !checkpoint.has_training_returns()) return;
  // Only a report: a value that cannot be a return is left out with a
  // warning (the run folder is already open when checkpoints load, and the
  // agent's state is what the resume is for).
  const auto& saved = checkpoint.training_returns();
  std::vector<double> newest;
  int64_t dropped = 0;
  for (double r : saved.newest()) {
    if (std::isfinite(r)) {
      newest.push_back(r);
    } else {
      ++dropped;
    }
  }
  if (dropped > 0 || saved.recorded() < 0) {
    Log(LogLevel::kWarning, "training returns: the checkpoint's ring holds " +
                                std::to_string(dropped) +
                                " non-finite returns and recorded=" +
                                std::to_string(saved.recorded()) +
                                "; kept its finite returns only");
  }
  block_->Restore(std::max<int64_t>(0, saved.recorded()), newest);
}

std::vector<std::string> TrainingReturnsExtension::ScoreColumns() const {
  if (!column_) return {};
  return {kColumn};
}

void TrainingReturnsExtension::EvaluationBegins(
    int64_t, std::vector<std::string>* cells) {
  if (!column_) return;
  const std::optional<double> mean =
      block_ != nullptr ? block_->Mean() : std::nullopt;
  // "nan" before the first training episode ends, as numpy reads it.
  cells->push_back(FormatCell(mean ? *mean : kNone));
}

std::unique_ptr<WorkerExtension> TrainingReturnsExtension::StartWorker(
    const WorkerInfo&) {
  if (block_ == nullptr) return nullptr;
  return std::make_unique<TrainingReturnsWorker>(*block_, reward_scale_);
}

void TrainingReturnsExtension::Release() {
  block_ = nullptr;
  control_ = nullptr;
}

void TrainingReturnsExtension::Report(EventWriter& events, bool periodic) {
  if (block_ == nullptr || !periodic) return;
  const std::optional<double> mean = block_->Mean();
  if (!mean) return;
  events.WriteScalar("train/return_mean", control_->global_step.load(), *mean,
                     WallTimeSeconds());
}

std::string TrainingReturnsExtension::Status() const {
  if (block_ == nullptr) return "";
  const std::optional<double> mean = block_->Mean();
  if (!mean) return "";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "train R %.4g", *mean);
  return buf;
}

void TrainingReturnsExtension::Conclude(const GroupReport&, RunEnd* end) {
  if (block_ == nullptr) return;
  int64_t count = 0;
  const std::optional<double> mean = block_->Mean(&count);
  if (!mean) return;
  end->notes.push_back("training episodes: mean return of the last " +
                       std::to_string(count) + ": " + FormatCell(*mean) +
                       " (environment units; " +
                       std::to_string(block_->recorded.load()) + " recorded)");
}

}  // namespace asyncrl
