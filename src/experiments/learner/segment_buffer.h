// The learner's buffer (HandyRL's episode buffer, in shared memory): the
// workers write the segments they acted, the learner samples batches of
// them. A segment is one environment's column of a worker's rollout: T
// consecutive steps (--t-max, HandyRL's forward_steps), which may run
// through episode ends (agents/rollout.h's `next` links say where), with
// the behaviour policy's log-probabilities, so the learner can correct for
// the parameters having moved since (V-trace, UPGO).
//
// Segments are records of bytes in a ring bounded in bytes: a new record
// drops the oldest ones it needs the room of, so the buffer always holds
// the most recent data. Encoding and decoding are plain functions of a
// Rollout; the ring is a struct placed in the trainer's shared region.
#ifndef ASYNCRL_EXPERIMENTS_LEARNER_SEGMENT_BUFFER_H_
#define ASYNCRL_EXPERIMENTS_LEARNER_SEGMENT_BUFFER_H_

#include <atomic>
#include <boost/interprocess/sync/interprocess_mutex.hpp>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "asyncrl/agents/rollout.h"

namespace asyncrl {

// What every segment of a run holds per row.
struct SegmentShape {
  int64_t steps = 0;        // T, rows of each segment (>= 1).
  int64_t obs_size = 0;     // Floats per observation (>= 1).
  int64_t action_size = 0;  // Floats per continuous action; 0: discrete.

  // Bytes of a record with `num_bootstrap` bootstrap observations, with or
  // without turn passes (two-player games whose both sides learn).
  size_t RecordBytes(int64_t num_bootstrap, bool turn_passes) const;
  // The largest record: every row bootstraps, turn passes kept.
  size_t MaxRecordBytes() const { return RecordBytes(steps, true); }
};

// Appends column `k` of `rollout` (rollout.steps == shape.steps) to `out`
// as one record; `acted_updates` is the update count of the parameters
// that acted it (the learner's policy lag counts from it).
void EncodeSegment(const Rollout& rollout, int64_t k, const SegmentShape& shape,
                   int64_t acted_updates, std::vector<uint8_t>* out);

// Builds `batch` from `records` (each one EncodeSegment wrote with
// `shape`): record b becomes column b (batch->batch = records.size(),
// batch->steps = shape.steps), bootstrap links renumbered. Returns the
// smallest acted_updates of the records.
int64_t DecodeBatch(const std::vector<const uint8_t*>& records,
                    const SegmentShape& shape, Rollout* batch);

// The ring. Placed in zeroed shared memory by Place() before fork; every
// process then calls Put / Sample / the counters through the same address.
// A mutex (an interprocess one) guards the records; copies are made under
// it, so a reader never sees a record being overwritten. A process killed
// while holding it blocks the others until the trainer stops the run
// (every process is stopped when one fails).
class SegmentBuffer {
 public:
  // Shared bytes for a ring of `data_bytes` of records, at most
  // `max_records` of them.
  static size_t BytesFor(size_t data_bytes, int64_t max_records);
  // Constructs the ring in `shared` (BytesFor(...) zeroed bytes, 64-byte
  // aligned).
  static SegmentBuffer* Place(void* shared, size_t data_bytes,
                              int64_t max_records);

  // Copies a record in, dropping the oldest records that occupy its room
  // (or the oldest one when `max_records` are held). Returns false, and
  // keeps nothing, when the record is larger than the whole ring.
  bool Put(const uint8_t* record, size_t bytes);
  // Copies `n` records drawn uniformly with replacement into `out` (their
  // starts in `starts`), once at least `minimum` (>= 1) records are held;
  // returns false, copying nothing, before that.
  bool Sample(int64_t n, int64_t minimum, std::mt19937_64& rng,
              std::vector<uint8_t>* out, std::vector<size_t>* starts);

  int64_t size() const { return count_.load(std::memory_order_relaxed); }
  size_t bytes_held() const {
    return held_bytes_.load(std::memory_order_relaxed);
  }
  size_t capacity() const { return data_bytes_; }
  // Records ever put, and ever dropped to make room.
  int64_t written() const { return written_.load(std::memory_order_relaxed); }
  int64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

  // The learner's progress, for the reports: its updates, the rows it
  // trained on (each sampled row counts each time), and the rows the
  // workers wrote.
  std::atomic<int64_t> learner_updates{0};
  std::atomic<int64_t> rows_trained{0};
  std::atomic<int64_t> rows_written{0};

 private:
  struct Slot {
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  SegmentBuffer(size_t data_bytes, int64_t max_records);
  Slot* slots() { return reinterpret_cast<Slot*>(this + 1); }
  uint8_t* data();
  // Drops the oldest record (mutex held).
  void PopOldest();

  boost::interprocess::interprocess_mutex mutex_;
  size_t data_bytes_;
  int64_t max_records_;
  int64_t head_ = 0;        // Slot of the oldest record.
  uint64_t write_pos_ = 0;  // Where the newest record ends.
  std::atomic<int64_t> count_{0};
  std::atomic<size_t> held_bytes_{0};
  std::atomic<int64_t> written_{0};
  std::atomic<int64_t> dropped_{0};
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_LEARNER_SEGMENT_BUFFER_H_
