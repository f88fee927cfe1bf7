// Where a worker's global step numbers come from with several hosts: the
// numbers 1..steps are handed out in leases from one counter in rank 0's
// store (TCPStore::add, atomic on rank 0). Each worker takes a lease (a
// multiple of its batch, about 50 ms of its steps, or 20 of the store's
// round trips when that is longer, at most 1 s) and claims from it
// locally, so every step number is taken exactly once by exactly one worker
// of one host, and the run ends at exactly `steps` however fast each host
// is.
#ifndef ASYNCRL_EXPERIMENTS_HOSTS_STEP_LEASES_H_
#define ASYNCRL_EXPERIMENTS_HOSTS_STEP_LEASES_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "asyncrl/experiments/hosts/hosts_options.h"

namespace asyncrl {

struct ControlBlock;

// The hosts' part of the run's shared region (hosts_extension.h).
struct HostsBlock {
  // 0: wait for the hosts; 1: train; 2: give up (the hosts did not form).
  std::atomic<int32_t> ready{0};
  // Steps this host's workers have taken.
  std::atomic<int64_t> taken{0};
};

// A worker's source of global step numbers: leases from the store's
// counter. Built in the worker (after fork: it opens its own connection).
class StepLeases {
 public:
  StepLeases(const DistOptions& options, int64_t steps);
  ~StepLeases();
  StepLeases(const StepLeases&) = delete;
  StepLeases& operator=(const StepLeases&) = delete;

  // Claims up to `want` consecutive step numbers; returns the first
  // (1-based) and sets `granted` (0 once all `steps` are handed out).
  // Fewer than `want` only at the very end. Leases are multiples of
  // `want`, so a claim never straddles two of them. Throws
  // std::runtime_error if the store cannot be reached.
  int64_t Claim(int64_t want, int64_t* granted);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Blocks a worker until its host has joined the others (true), or the run
// gave up or was stopped meanwhile (false).
bool WaitForHosts(const HostsBlock& block, const ControlBlock& control);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_HOSTS_STEP_LEASES_H_
