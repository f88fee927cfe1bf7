// Shared memory for the asynchronous trainer: one anonymous mapping made by
// the parent before fork, inherited by every worker. It holds a control block
// (lock-free counters, flags, an interprocess mutex), two flat float
// arrays (every model parameter in one buffer, optimizer statistics in
// another), the agent's other shared state (e.g. running observation
// statistics) and one area per trainer extension (experiments/extension.h).
#ifndef ASYNCRL_EXPERIMENTS_SHARED_REGION_H_
#define ASYNCRL_EXPERIMENTS_SHARED_REGION_H_

#include <atomic>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/sync/interprocess_mutex.hpp>
#include <chrono>
#include <cstdint>
#include <vector>

#include "asyncrl/agents/agent.h"

namespace asyncrl {

// Lives at the start of the mapping. Atomics are lock-free (checked at compile
// time), so they work across processes. Fields written by several workers on
// every step sit on cache lines of their own.
struct ControlBlock {
  alignas(64) std::atomic<int64_t> global_step{0};
  alignas(64) std::atomic<int64_t> episodes{0};
  alignas(64) std::atomic<int32_t> stop{0};  // Asked to stop.
  std::atomic<int32_t> training_done{0};     // successful_score hit.
  // Evaluation schedule: the last step at which an evaluation was due.
  std::atomic<int64_t> prev_eval_t{0};
  // The latest evaluation mean, for the status line.
  std::atomic<double> last_score{0.0};
  std::atomic<int32_t> has_last_score{0};
  // The global step this run started from (non-zero when resumed).
  // (Atomic: an extension's thread in the parent may set it while the
  // status line reads it.)
  std::atomic<int64_t> start_step{0};
  // Seconds of training before this process started (from a resumed
  // checkpoint) and when it started (steady clock, shared by all processes
  // of the run): ElapsedSeconds() is the run's training time so far.
  double elapsed_offset = 0;
  int64_t start_ns = 0;

  void MarkStart() {
    start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
                   .count();
  }
  double ElapsedSeconds() const {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    return elapsed_offset + static_cast<double>(now - start_ns) * 1e-9;
  }
  // Serialises writes to shared files (scores.txt rows, best/ and periodic
  // checkpoints) and the compare-and-update of the best score. Only workers
  // take it: the parent must never wait on it (a worker killed while holding
  // it would leave it locked), so it reads the best score lock-free.
  boost::interprocess::interprocess_mutex mutex;
  // Best evaluation mean so far: written under `mutex`, read by anyone.
  std::atomic<double> best_score{0.0};
  std::atomic<int32_t> has_best_score{0};
  // Agent updates and their policy lags (agents/agent.h).
  SharedCounters agent_counters;
};

static_assert(std::atomic<int64_t>::is_always_lock_free,
              "64-bit atomics must be lock-free to be shared across processes");
static_assert(std::atomic<double>::is_always_lock_free,
              "double atomics must be lock-free to be shared across processes");
static_assert(std::atomic<int32_t>::is_always_lock_free,
              "32-bit atomics must be lock-free to be shared across processes");

// Owns the mapping; every process that inherits it (fork) sees the same
// memory. The float arrays are 64-byte aligned and zero-initialised. Safe to
// use from any process that inherited it; the arrays are not synchronised
// (Hogwild).
class SharedRegion {
 public:
  // Throws std::runtime_error naming the size asked for if mapping fails.
  // `extension_bytes`: the size of each extension's area (0: none);
  // `agent_state_bytes`: the agent's other shared state
  // (SharedStateSizes::state_bytes).
  SharedRegion(int64_t num_params, int64_t num_optimizer_floats,
               const std::vector<size_t>& extension_bytes = {},
               size_t agent_state_bytes = 0);
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  ControlBlock& control() { return *control_; }
  float* params() { return params_; }
  float* optimizer_state() { return optimizer_state_; }
  // Extension i's area (64-byte aligned, zeroed), null if it asked for 0
  // bytes.
  void* extension(size_t i) { return extensions_.at(i); }
  // The agent's state area (64-byte aligned, zeroed), null if 0 bytes.
  void* agent_state() { return agent_state_; }

  // Bytes a region of these sizes maps (control block plus aligned arrays).
  static size_t BytesFor(int64_t num_params, int64_t num_optimizer_floats,
                         const std::vector<size_t>& extension_bytes = {},
                         size_t agent_state_bytes = 0);

 private:
  boost::interprocess::mapped_region region_;
  ControlBlock* control_ = nullptr;
  float* params_ = nullptr;
  float* optimizer_state_ = nullptr;
  std::vector<void*> extensions_;
  void* agent_state_ = nullptr;
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_SHARED_REGION_H_
