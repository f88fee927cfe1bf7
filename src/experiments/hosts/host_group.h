// The hosts' connections once they meet: rank 0's store and the Gloo
// process group (transport.h), with the collectives HostCoordinator uses.
// Every wait gives up when another host posts that it gave up, or when
// --dist-timeout passes. Used by the coordinator's thread only.
#ifndef ASYNCRL_EXPERIMENTS_HOSTS_HOST_GROUP_H_
#define ASYNCRL_EXPERIMENTS_HOSTS_HOST_GROUP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "asyncrl/experiments/hosts/transport.h"

namespace asyncrl {

class HostGroup {
 public:
  explicit HostGroup(const DistOptions& options) : options_(options) {}
  // The store is left to the process's end, never destroyed: its
  // destructor joins c10d's threads, and one parked after a reset
  // connection (InitLibraryHandlers), or rank 0's daemon blocked on a
  // client that sent half a request, would never be joined.
  ~HostGroup() { (void)store_.release(); }
  HostGroup(const HostGroup&) = delete;
  HostGroup& operator=(const HostGroup&) = delete;

  // Rendezvous: the store (rank 0 serves it), then Gloo's full mesh.
  // Throws RendezvousRefused for a rank another host already holds (and
  // ConnectStore's errors), else what c10d throws.
  void Connect();

  const DistOptions& options() const { return options_; }
  int rank() const { return options_.node_rank; }
  int size() const { return options_.nnodes; }
  c10d::TCPStore& store() { return *store_; }
  c10d::ProcessGroupGloo& group() { return *group_; }

  // Waits for a collective: until it completes (rethrowing its error),
  // the timeout passes, or another host posts that it gave up (a host only
  // its ring neighbours see die would otherwise keep the rest waiting for
  // the whole timeout). A host that waits for the others' next round may
  // wait a whole interval before the timeout starts to count.
  void Complete(const c10::intrusive_ptr<c10d::Work>& work);
  // One int64 per rank and field: every rank's values, in rank order.
  std::vector<int64_t> Gather(const std::vector<int64_t>& mine, int fields);
  // Every rank's `mine` (the same length on every rank), in rank order,
  // exactly (an all-reduce of zeros but each rank's own slot).
  std::vector<double> GatherDoubles(const std::vector<double>& mine);
  // Averages `n` floats at `data` over the hosts: exactly when `exact`
  // (nobody writes them), else adding (average - copy) so that concurrent
  // updates made meanwhile stay.
  void Average(float* data, int64_t n, bool exact);
  // Rank 0's `n` floats (doubles) at `data` to every host.
  void Broadcast(float* data, int64_t n);
  void Broadcast(double* data, int64_t n);
  // A note another rank left in the store (it may be gone by now).
  std::string Note(const std::string& key);
  // Every rank counts itself out at its end; rank 0, whose process serves
  // the store and whose exit closes its sockets, waits up to `seconds` for
  // `expected` ranks (itself included) to count out first.
  void Finish(double seconds, int expected);
  // After a collective failed: tells the others (kAbortKey), counts this
  // host in as alive and gives the others up to 2 s (or the timeout, if
  // shorter) to do the same; those that do not are missing (their ranks,
  // comma-separated). The store itself gone means rank 0, its host, is
  // (seen from rank 0: all the others). "" if all answered.
  std::string Missing(const std::string& what);
  // After a lost host: Gloo's threads may wait in a collective until its
  // own timeout, so the group is left to the process's end instead of
  // joined.
  void Abandon() { (void)group_.release(); }

 private:
  void Wait(std::vector<at::Tensor>& tensors);
  // Gather's and GatherDoubles' one body: `mine` in this rank's slot of
  // zeros, all-reduced.
  template <typename T>
  std::vector<T> GatherAll(const std::vector<T>& mine, at::ScalarType type);
  // Both Broadcasts' body.
  void BroadcastRaw(void* data, int64_t n, at::ScalarType type);

  DistOptions options_;
  c10::intrusive_ptr<c10d::TCPStore> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_HOSTS_HOST_GROUP_H_
