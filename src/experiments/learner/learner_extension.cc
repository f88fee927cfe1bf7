#include "asyncrl/experiments/learner/learner_extension.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <thread>
#include <utility>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/targets.h"
#include "asyncrl/experiments/evaluator.h"
#include "asyncrl/misc/check.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/platform/process_group.h"
#include "asyncrl/misc/timers.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Bytes of the LearnerBlock, rounded to keep the buffer 64-byte aligned.
constexpr size_t kBlockBytes = (sizeof(LearnerBlock) + 63) / 64 * 64;

std::string Mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", bytes / kMiB);
  return buf;
}

// --reuse R as Reverb's samples-per-insert limiter, in rows: once the
// buffer holds the minimum, d = R (rows written - rows at the minimum) -
// rows trained on stays within [-margin, margin]; a worker waits before
// writing while d > margin (the learner is behind), the learner before
// sampling while d < -margin (it is ahead). The margin is a worker's
// rollout times R plus a batch, so that one side's step never blocks the
// other. Waits poll every millisecond and end when the run's work is done.
class ReuseLimit {
 public:
  ReuseLimit(const WorkerInfo& w, const LearnerOptions& learner,
             const SegmentShape& shape, const SegmentBuffer* buffer)
      : ReuseLimit(*w.options, *w.control, learner, shape, buffer) {}
  ReuseLimit(const TrainOptions& options, const ControlBlock& control,
             const LearnerOptions& learner, const SegmentShape& shape,
             const SegmentBuffer* buffer)
      : control_(&control),
        options_(&options),
        buffer_(buffer),
        reuse_(learner.reuse),
        start_rows_(
            static_cast<double>(learner.minimum_segments * shape.steps)),
        margin_(learner.reuse * static_cast<double>(options.envs_per_process *
                                                    shape.steps) +
                static_cast<double>(learner.batch_size * shape.steps)) {}

  // A worker, before writing `rows`.
  void BeforeWrite() const {
    Wait([this] { return Debt() > margin_; });
  }
  // The learner, before sampling a batch.
  void BeforeSample() const {
    Wait([this] { return Debt() < -margin_; });
  }

 private:
  // What the learner owes: rows it should have trained on, less those it
  // has.
  double Debt() const {
    const auto written = static_cast<double>(buffer_->rows_written.load());
    if (written < start_rows_) return 0;
    return reuse_ * (written - start_rows_) -
           static_cast<double>(buffer_->rows_trained.load());
  }
  template <typename F>
  void Wait(F blocked) const {
    if (reuse_ <= 0) return;
    while (blocked() && !Done()) {
      ReportWorkerProgress();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  bool Done() const {
    return control_->stop.load() != 0 || control_->training_done.load() != 0 ||
           control_->global_step.load() >= options_->steps;
  }

  const ControlBlock* control_;
  const TrainOptions* options_;
  const SegmentBuffer* buffer_;
  double reuse_;
  double start_rows_;
  double margin_;
};

// A worker that acts: its agent's rollouts go to the buffer, one record a
// column.
class ActorPart : public WorkerExtension {
 public:
  ActorPart(ActorCriticAgent* agent, SegmentBuffer* buffer,
            const SegmentShape& shape, const LearnerBlock* block,
            const ReuseLimit& limit) {
    agent->SetUpdateStatisticsSource([block](std::vector<Statistic>* stats) {
      const auto n = std::min<size_t>(stats->size(), block->count.load());
      for (size_t i = 0; i < n; ++i) {
        (*stats)[i].value = block->statistics[i].load();
      }
    });
    auto scratch = std::make_shared<std::vector<uint8_t>>();
    agent->SendRolloutsTo([buffer, shape, scratch, limit](
                              const Rollout& rollout, int64_t acted_updates) {
      {
        ScopedTimer wait("wait");
        limit.BeforeWrite();
      }
      ScopedTimer timer("buffer");
      for (int64_t k = 0; k < rollout.batch; ++k) {
        scratch->clear();
        EncodeSegment(rollout, k, shape, acted_updates, scratch.get());
        // Configure made the buffer hold the largest record.
        if (!buffer->Put(scratch->data(), scratch->size())) {
          throw std::logic_error("learner: a segment of " +
                                 std::to_string(scratch->size()) +
                                 " bytes does not fit the buffer");
        }
      }
      buffer->rows_written.fetch_add(rollout.rows(), std::memory_order_relaxed);
    });
  }
};

// The learner: batches from the buffer, one optimizer step each, until the
// run's work is done.
class LearnerPart : public WorkerExtension {
 public:
  LearnerPart(const WorkerInfo& w, const LearnerOptions& options,
              const SegmentShape& shape, SegmentBuffer* buffer,
              LearnerBlock* block, const ReuseLimit& limit)
      : info_(w),
        limit_(limit),
        options_(options),
        shape_(shape),
        buffer_(buffer),
        block_(block),
        agent_(dynamic_cast<ActorCriticAgent*>(w.agent)),
        rng_(static_cast<uint64_t>(w.options->seed) * 7919 + 17) {
    ASYNCRL_CHECK(agent_ != nullptr);
  }

  bool TakesOver() const override { return true; }

  void Run() override {
    Rollout batch;
    std::vector<uint8_t> bytes;
    std::vector<size_t> starts;
    std::vector<const uint8_t*> records;
    while (!Done()) {
      ReportWorkerProgress();
      {
        ScopedTimer wait("wait");
        limit_.BeforeSample();
      }
      bool sampled = false;
      {
        ScopedTimer timer("sample");
        sampled =
            buffer_->Sample(options_.batch_size, options_.minimum_segments,
                            rng_, &bytes, &starts);
      }
      if (!sampled) {
        // Only before the first update: the workers fill the buffer.
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      records.clear();
      for (size_t start : starts) records.push_back(bytes.data() + start);
      const int64_t oldest = DecodeBatch(records, shape_, &batch);
      agent_->LearnFrom(&batch, oldest);
      Record(batch.rows());
      CallHooks();
    }
  }

 private:
  bool Done() const {
    const ControlBlock& control = *info_.control;
    return control.stop.load() != 0 || control.training_done.load() != 0 ||
           control.global_step.load() >= info_.options->steps;
  }

  // The update's figures, and the learner's statistics for the workers
  // to report (its policy lag: the batches' age, LearnFrom).
  void Record(int64_t rows) {
    buffer_->rows_trained.fetch_add(rows, std::memory_order_relaxed);
    buffer_->learner_updates.fetch_add(1, std::memory_order_relaxed);
    std::vector<Statistic> stats = agent_->Statistics();
    // After average_value and average_entropy: the update statistics.
    const size_t first = 2;
    const size_t n =
        std::min<size_t>(stats.size() - first, LearnerBlock::kMaxStatistics);
    for (size_t i = 0; i < n; ++i) {
      const Statistic& s = stats[first + i];
      block_->statistics[i].store(s.value, std::memory_order_relaxed);
    }
    block_->count.store(static_cast<int32_t>(n));
  }

  // The run's schedules (--lr-decay, --beta-decay) follow the global step
  // here as in every worker.
  void CallHooks() {
    if (info_.hooks == nullptr || info_.hooks->empty()) return;
    const int64_t t = info_.control->global_step.load();
    for (const auto& hook : *info_.hooks)
      hook(*info_.envs->front(), *agent_, t);
  }

  WorkerInfo info_;
  ReuseLimit limit_;
  LearnerOptions options_;
  SegmentShape shape_;
  SegmentBuffer* buffer_;
  LearnerBlock* block_;
  ActorCriticAgent* agent_;
  std::mt19937_64 rng_;
};

}  // namespace

void LearnerOptions::Validate() const {
  Require(maximum_segments >= 1, "maximum_segments", maximum_segments,
          "an integer >= 1");
  Require(std::isfinite(buffer_mib) && buffer_mib > 0, "buffer_mib", buffer_mib,
          "a number > 0");
  Require(minimum_segments >= 1 && minimum_segments <= maximum_segments,
          "minimum_segments", minimum_segments,
          "an integer in [1, maximum_segments=" +
              std::to_string(maximum_segments) + "]");
  Require(batch_size >= 1, "batch_size", batch_size, "an integer >= 1");
  Require(std::isfinite(reuse) && reuse >= 0, "reuse", reuse,
          "0 (no limit) or a finite number > 0");
}

FlagSpecs LearnerOptions::Flags() {
  return {
      {"learner",
       "train as HandyRL and IMPALA do: the last of --processes learns, the "
       "others act with the parameters they last took and write their "
       "rollouts to a buffer in shared memory, each environment's --t-max "
       "steps one segment; the learner samples batches of them and steps "
       "the optimizer (--algorithm a3c with --policy-target vtrace or upgo, "
       "feed-forward archs; docs/learner.md)",
       &enabled},
      {"maximum-segments",
       "with --learner: the buffer keeps the newest this many segments "
       "(HandyRL's maximum_episodes), the oldest dropped first",
       &maximum_segments},
      {"buffer-mib",
       "with --learner: the most shared memory the buffer takes, MiB; fewer "
       "segments are kept when they do not fit",
       &buffer_mib},
      {"minimum-segments",
       "with --learner: segments the buffer holds before the first update",
       &minimum_segments},
      {"batch-size",
       "with --learner: segments per update, drawn at random from the buffer",
       &batch_size},
      {"reuse",
       "with --learner: train on each step the workers write this many times "
       "on average; the workers wait when the learner falls behind, the "
       "learner when it runs ahead (0: no limit, each at its own pace)",
       &reuse}};
}

LearnerExtension::LearnerExtension(const LearnerOptions& options, int64_t t_max)
    : options_(options) {
  options_.Validate();
  shape_.steps = t_max;
}

size_t LearnerExtension::DataBytes() const {
  // No more than maximum_segments of the largest records take.
  const double most = static_cast<double>(options_.maximum_segments) *
                      static_cast<double>(shape_.MaxRecordBytes());
  return static_cast<size_t>(std::min(options_.buffer_mib * kMiB, most)) / 64 *
         64;
}

int64_t LearnerExtension::MaxRecords() const {
  // Every record is at least a segment without bootstrap observations.
  return std::min<int64_t>(
      options_.maximum_segments,
      static_cast<int64_t>(DataBytes() / shape_.RecordBytes(0, false)) + 1);
}

void LearnerExtension::Configure(const TrainOptions& options, Env& probe) {
  processes_ = options.processes;
  Require(options.processes >= 2, "processes", options.processes,
          "an integer >= 2 with learner=true (the last process learns, the "
          "others act)");
  shape_.obs_size = probe.ObservationSpace().FlatSize();
  const Space& action = probe.ActionSpace();
  shape_.action_size = action.IsDiscrete() ? 0 : action.FlatSize();
  const std::string segment =
      "segments of t_max=" + std::to_string(shape_.steps) + " steps of " +
      std::to_string(shape_.obs_size) + "-float observations";
  Require(options_.buffer_mib * kMiB >=
              static_cast<double>(shape_.MaxRecordBytes()),
          "buffer_mib", options_.buffer_mib,
          "at least " + Mib(static_cast<double>(shape_.MaxRecordBytes())) +
              " (the largest of the " + segment + ")");
  const size_t typical = shape_.RecordBytes(1, false);
  const auto holds = static_cast<int64_t>(options_.buffer_mib * kMiB / typical);
  Require(options_.minimum_segments <= holds, "minimum_segments",
          options_.minimum_segments,
          "at most " + std::to_string(holds) + " (the " + segment +
              " that buffer_mib=" + FormatValue(options_.buffer_mib) +
              " holds)");
}

void LearnerExtension::CheckAgent(const Agent& agent) const {
  const auto* a3c = dynamic_cast<const A3C*>(&agent);
  if (a3c == nullptr) {
    throw InvalidOption("learner", "true",
                        "false with agent type '" + agent.Type() +
                            "' (the learner trains A3C's loss: --algorithm "
                            "a3c)");
  }
  if (a3c->model().StateSize() > 0) {
    throw InvalidOption("learner", "true",
                        "false with a recurrent arch (its segments would need "
                        "the state before them, and burn-in steps: not "
                        "implemented); a feed-forward arch");
  }
  const PolicyTarget target = a3c->options().PolicyTargetKind();
  if (!CorrectsOffPolicy(target)) {
    throw InvalidOption(
        "policy_target", TargetName(target),
        "vtrace or upgo with learner=true (the segments were acted with "
        "older parameters than the learner's; these targets correct for it)");
  }
}

size_t LearnerExtension::SharedBytes(const SharedStateSizes&) const {
  return kBlockBytes + SegmentBuffer::BytesFor(DataBytes(), MaxRecords());
}

void LearnerExtension::Place(void* shared, const RunInfo& run) {
  control_ = run.control;
  block_ = new (shared) LearnerBlock();
  for (auto& s : block_->statistics) s.store(0.0);
  block_->count.store(0);
  buffer_ = SegmentBuffer::Place(static_cast<uint8_t*>(shared) + kBlockBytes,
                                 DataBytes(), MaxRecords());
  reported_at_ = std::chrono::steady_clock::now();
}

double LearnerExtension::Reuse() const {
  if (buffer_ == nullptr) return 0;
  const int64_t written = buffer_->rows_written.load();
  if (written == 0) return 0;
  return static_cast<double>(buffer_->rows_trained.load()) /
         static_cast<double>(written);
}

std::vector<std::string> LearnerExtension::ScoreColumns() const {
  return {"learner_updates", "reuse", "buffer_segments"};
}

void LearnerExtension::EvaluationBegins(int64_t,
                                        std::vector<std::string>* cells) {
  cells->push_back(std::to_string(buffer_->learner_updates.load()));
  cells->push_back(FormatCell(Reuse()));
  cells->push_back(std::to_string(buffer_->size()));
}

std::unique_ptr<WorkerExtension> LearnerExtension::StartWorker(
    const WorkerInfo& w) {
  const ReuseLimit limit(w, options_, shape_, buffer_);
  if (w.process_idx == processes_ - 1) {
    return std::make_unique<LearnerPart>(w, options_, shape_, buffer_, block_,
                                         limit);
  }
  auto* agent = dynamic_cast<ActorCriticAgent*>(w.agent);
  ASYNCRL_CHECK(agent != nullptr);
  return std::make_unique<ActorPart>(agent, buffer_, shape_, block_, limit);
}

void LearnerExtension::Report(EventWriter& events, bool periodic) {
  if (buffer_ == nullptr || !periodic) return;
  const int64_t step = control_->global_step.load();
  const double wall = WallTimeSeconds();
  const int64_t updates = buffer_->learner_updates.load();
  const auto now = std::chrono::steady_clock::now();
  const double seconds =
      std::chrono::duration<double>(now - reported_at_).count();
  if (seconds > 0) {
    events.WriteScalar(
        "learner/updates_per_s", step,
        static_cast<double>(updates - reported_updates_) / seconds, wall);
  }
  reported_updates_ = updates;
  reported_at_ = now;
  events.WriteScalar("learner/updates", step, static_cast<double>(updates),
                     wall);
  events.WriteScalar("learner/reuse", step, Reuse(), wall);
  events.WriteScalar("learner/buffer_segments", step,
                     static_cast<double>(buffer_->size()), wall);
}

std::string LearnerExtension::Status() const {
  if (buffer_ == nullptr) return "";
  char buf[96];
  std::snprintf(buf, sizeof(buf), "learner %lld upd, reuse %.2f",
                static_cast<long long>(buffer_->learner_updates.load()),
                Reuse());
  return buf;
}

void LearnerExtension::Conclude(const GroupReport&, RunEnd* end) {
  if (buffer_ == nullptr) return;
  const int64_t updates = buffer_->learner_updates.load();
  char reuse[32];
  std::snprintf(reuse, sizeof(reuse), "%.2f", Reuse());
  const double seconds = std::max(
      1e-9,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_)
          .count());
  char rates[96];
  std::snprintf(rates, sizeof(rates),
                "; the learner %.0f rows/s, the workers %.0f/s",
                static_cast<double>(buffer_->rows_trained.load()) / seconds,
                static_cast<double>(buffer_->rows_written.load()) / seconds);
  end->notes.push_back(
      "learner: " + std::to_string(updates) + " updates of " +
      std::to_string(options_.batch_size) + " segments of " +
      std::to_string(shape_.steps) + " steps; each step written trained on " +
      reuse + " times on average" + rates + "; buffer " +
      std::to_string(buffer_->size()) + " segments (" +
      Mib(static_cast<double>(buffer_->bytes_held())) + " of " +
      Mib(static_cast<double>(buffer_->capacity())) + " MiB), " +
      std::to_string(buffer_->written()) + " written, " +
      std::to_string(buffer_->dropped()) + " dropped");
}

void LearnerExtension::WorkersStarted() {
  started_ = std::chrono::steady_clock::now();
}

void LearnerExtension::Release() {
  buffer_ = nullptr;
  block_ = nullptr;
  control_ = nullptr;
}

}  // namespace asyncrl
