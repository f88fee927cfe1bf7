#include "asyncrl/experiments/learner/segment_buffer.h"

#include <algorithm>
#include <boost/interprocess/sync/scoped_lock.hpp>
#include <cstring>
#include <new>

#include "asyncrl/misc/check.h"

namespace asyncrl {
namespace {

using Lock =
    boost::interprocess::scoped_lock<boost::interprocess::interprocess_mutex>;

// A record: this header, then obs [T, obs_size] floats, actions (T int64
// or [T, action_size] floats), rewards [T] floats, behaviour log-probs [T]
// floats, next [T] int64 (bootstrap links numbered within the record),
// bootstrap observations [nb, obs_size] floats and, when has_turn_passes,
// turn passes [T] bytes; each part padded to 8 bytes.
struct RecordHeader {
  int64_t steps;
  int64_t num_bootstrap;
  int64_t acted_updates;
  int64_t has_turn_passes;
};

size_t Padded(size_t bytes) { return (bytes + 7) / 8 * 8; }

// Writes parts one after another, each padded to 8 bytes.
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>* out) : out_(out) {}
  void Put(const void* data, size_t bytes) {
    const size_t at = out_->size();
    out_->resize(at + Padded(bytes), 0);
    if (bytes > 0) std::memcpy(out_->data() + at, data, bytes);
  }

 private:
  std::vector<uint8_t>* out_;
};

class Reader {
 public:
  explicit Reader(const uint8_t* data) : at_(data) {}
  const uint8_t* Take(size_t bytes) {
    const uint8_t* part = at_;
    at_ += Padded(bytes);
    return part;
  }

 private:
  const uint8_t* at_;
};

}  // namespace

size_t SegmentShape::RecordBytes(int64_t num_bootstrap,
                                 bool turn_passes) const {
  const auto t = static_cast<size_t>(steps);
  const auto obs = static_cast<size_t>(obs_size) * sizeof(float);
  const size_t action = action_size == 0
                            ? sizeof(int64_t)
                            : static_cast<size_t>(action_size) * sizeof(float);
  return sizeof(RecordHeader) + Padded(t * obs) + Padded(t * action) +
         2 * Padded(t * sizeof(float)) + t * sizeof(int64_t) +
         Padded(static_cast<size_t>(num_bootstrap) * obs) +
         (turn_passes ? Padded(t) : 0);
}

void EncodeSegment(const Rollout& rollout, int64_t k, const SegmentShape& shape,
                   int64_t acted_updates, std::vector<uint8_t>* out) {
  const int64_t t = shape.steps;
  const int64_t kk = rollout.batch;
  ASYNCRL_CHECK_EQ(rollout.steps, t);
  ASYNCRL_CHECK(k >= 0 && k < kk);
  const int64_t o = shape.obs_size;
  const int64_t d = shape.action_size;
  std::vector<float> obs(static_cast<size_t>(t * o));
  std::vector<int64_t> actions;
  std::vector<float> cont;
  std::vector<float> rewards(t);
  std::vector<float> log_probs(t);
  std::vector<int64_t> next(t);
  std::vector<float> bootstrap;
  std::vector<uint8_t> passes;
  const bool has_passes = !rollout.turn_passes.empty();
  if (d == 0) {
    actions.resize(t);
  } else {
    cont.resize(static_cast<size_t>(t * d));
  }
  if (has_passes) passes.assign(static_cast<size_t>(t), 0);
  int64_t num_bootstrap = 0;
  for (int64_t s = 0; s < t; ++s) {
    const int64_t i = s * kk + k;
    std::copy_n(rollout.obs.begin() + i * o, o, obs.begin() + s * o);
    if (d == 0) {
      actions[s] = rollout.actions[i];
    } else {
      std::copy_n(rollout.cont_actions.begin() + i * d, d,
                  cont.begin() + s * d);
    }
    rewards[s] = rollout.rewards[i];
    log_probs[s] = rollout.behaviour_log_probs[i];
    const int64_t link = rollout.next[i];
    if (link >= 0) {
      bootstrap.insert(bootstrap.end(),
                       rollout.bootstrap_obs.begin() + link * o,
                       rollout.bootstrap_obs.begin() + (link + 1) * o);
      next[s] = num_bootstrap++;
    } else {
      next[s] = link;
    }
    if (has_passes && static_cast<size_t>(i) < rollout.turn_passes.size()) {
      passes[s] = rollout.turn_passes[i];
    }
  }
  const RecordHeader header{t, num_bootstrap, acted_updates,
                            has_passes ? 1 : 0};
  const size_t start = out->size();
  Writer writer(out);
  writer.Put(&header, sizeof(header));
  writer.Put(obs.data(), obs.size() * sizeof(float));
  if (d == 0) {
    writer.Put(actions.data(), actions.size() * sizeof(int64_t));
  } else {
    writer.Put(cont.data(), cont.size() * sizeof(float));
  }
  writer.Put(rewards.data(), rewards.size() * sizeof(float));
  writer.Put(log_probs.data(), log_probs.size() * sizeof(float));
  writer.Put(next.data(), next.size() * sizeof(int64_t));
  writer.Put(bootstrap.data(), bootstrap.size() * sizeof(float));
  if (has_passes) writer.Put(passes.data(), passes.size());
  ASYNCRL_CHECK_EQ(out->size() - start,
                   shape.RecordBytes(num_bootstrap, has_passes));
}

int64_t DecodeBatch(const std::vector<const uint8_t*>& records,
                    const SegmentShape& shape, Rollout* batch) {
  const auto b = static_cast<int64_t>(records.size());
  const int64_t t = shape.steps;
  const int64_t o = shape.obs_size;
  const int64_t d = shape.action_size;
  batch->Clear();
  batch->batch = b;
  batch->steps = t;
  batch->initial_state.clear();
  const auto rows = static_cast<size_t>(t * b);
  batch->obs.resize(rows * o);
  batch->actions.resize(d == 0 ? rows : 0);
  batch->cont_actions.resize(d == 0 ? 0 : rows * d);
  batch->rewards.resize(rows);
  batch->behaviour_log_probs.resize(rows);
  batch->next.resize(rows);
  int64_t oldest = 0;
  for (int64_t c = 0; c < b; ++c) {
    Reader reader(records[c]);
    RecordHeader header;
    std::memcpy(&header, reader.Take(sizeof(header)), sizeof(header));
    ASYNCRL_CHECK_EQ(header.steps, t);
    oldest =
        c == 0 ? header.acted_updates : std::min(oldest, header.acted_updates);
    const auto* obs = reinterpret_cast<const float*>(
        reader.Take(static_cast<size_t>(t * o) * sizeof(float)));
    const uint8_t* actions =
        reader.Take(static_cast<size_t>(t) *
                    (d == 0 ? sizeof(int64_t) : d * sizeof(float)));
    const uint8_t* rewards = reader.Take(t * sizeof(float));
    const uint8_t* log_probs = reader.Take(t * sizeof(float));
    const uint8_t* next = reader.Take(t * sizeof(int64_t));
    const uint8_t* bootstrap = reader.Take(
        static_cast<size_t>(header.num_bootstrap * o) * sizeof(float));
    const uint8_t* passes = header.has_turn_passes != 0
                                ? reader.Take(static_cast<size_t>(t))
                                : nullptr;
    const int64_t base = batch->num_bootstrap;
    for (int64_t s = 0; s < t; ++s) {
      const int64_t i = s * b + c;
      std::memcpy(batch->obs.data() + i * o, obs + s * o, o * sizeof(float));
      if (d == 0) {
        std::memcpy(&batch->actions[i], actions + s * sizeof(int64_t),
                    sizeof(int64_t));
      } else {
        std::memcpy(batch->cont_actions.data() + i * d,
                    actions + s * d * sizeof(float), d * sizeof(float));
      }
      std::memcpy(&batch->rewards[i], rewards + s * sizeof(float),
                  sizeof(float));
      std::memcpy(&batch->behaviour_log_probs[i], log_probs + s * sizeof(float),
                  sizeof(float));
      int64_t link = 0;
      std::memcpy(&link, next + s * sizeof(int64_t), sizeof(int64_t));
      batch->next[i] = link >= 0 ? base + link : link;
      if (passes != nullptr && passes[s] != 0) {
        batch->turn_passes.resize(rows, 0);
        batch->turn_passes[i] = 1;
      }
    }
    const auto* bootstrap_obs = reinterpret_cast<const float*>(bootstrap);
    batch->bootstrap_obs.insert(batch->bootstrap_obs.end(), bootstrap_obs,
                                bootstrap_obs + header.num_bootstrap * o);
    batch->num_bootstrap += header.num_bootstrap;
  }
  return oldest;
}

size_t SegmentBuffer::BytesFor(size_t data_bytes, int64_t max_records) {
  return sizeof(SegmentBuffer) +
         static_cast<size_t>(max_records) * sizeof(Slot) + data_bytes;
}

SegmentBuffer* SegmentBuffer::Place(void* shared, size_t data_bytes,
                                    int64_t max_records) {
  ASYNCRL_CHECK_GT(max_records, 0);
  return new (shared) SegmentBuffer(data_bytes, max_records);
}

SegmentBuffer::SegmentBuffer(size_t data_bytes, int64_t max_records)
    : data_bytes_(data_bytes), max_records_(max_records) {
  Slot* slot = slots();
  for (int64_t i = 0; i < max_records; ++i) new (slot + i) Slot();
}

uint8_t* SegmentBuffer::data() {
  return reinterpret_cast<uint8_t*>(slots() + max_records_);
}

void SegmentBuffer::PopOldest() {
  const Slot& oldest = slots()[head_];
  held_bytes_.fetch_sub(oldest.bytes, std::memory_order_relaxed);
  head_ = (head_ + 1) % max_records_;
  count_.fetch_sub(1, std::memory_order_relaxed);
  dropped_.fetch_add(1, std::memory_order_relaxed);
}

bool SegmentBuffer::Put(const uint8_t* record, size_t bytes) {
  if (bytes > data_bytes_ || bytes == 0) return false;
  Lock lock(mutex_);
  Slot* slot = slots();
  uint64_t pos = write_pos_;
  // Records lie in the order they were written, around the ring: the ones
  // at and after the newest's end are the oldest. A record that does not
  // fit before the end starts again at 0, and the older ones it skips over
  // are dropped first (they are the oldest).
  if (pos + bytes > data_bytes_) {
    while (count_.load(std::memory_order_relaxed) > 0 &&
           slot[head_].offset >= pos) {
      PopOldest();
    }
    pos = 0;
  }
  while (count_.load(std::memory_order_relaxed) > 0 &&
         slot[head_].offset < pos + bytes &&
         pos < slot[head_].offset + slot[head_].bytes) {
    PopOldest();
  }
  if (count_.load(std::memory_order_relaxed) == max_records_) PopOldest();
  const int64_t count = count_.load(std::memory_order_relaxed);
  slot[(head_ + count) % max_records_] = {pos, bytes};
  std::memcpy(data() + pos, record, bytes);
  write_pos_ = pos + bytes;
  count_.store(count + 1, std::memory_order_relaxed);
  held_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  written_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool SegmentBuffer::Sample(int64_t n, int64_t minimum, std::mt19937_64& rng,
                           std::vector<uint8_t>* out,
                           std::vector<size_t>* starts) {
  ASYNCRL_CHECK_GT(minimum, 0);
  out->clear();
  starts->clear();
  Lock lock(mutex_);
  const int64_t count = count_.load(std::memory_order_relaxed);
  if (count < minimum) return false;
  std::uniform_int_distribution<int64_t> pick(0, count - 1);
  const Slot* slot = slots();
  for (int64_t j = 0; j < n; ++j) {
    const Slot& chosen = slot[(head_ + pick(rng)) % max_records_];
    starts->push_back(out->size());
    out->insert(out->end(), data() + chosen.offset,
                data() + chosen.offset + chosen.bytes);
  }
  return true;
}

}  // namespace asyncrl
