// Hosts that train one model (--nnodes > 1) through LibTorch's c10d: a
// TCPStore on rank 0 (rendezvous, and the run's global step counter) and a
// Gloo process group (collectives over TCP). No transport of our own.
//
// Each host runs the ordinary trainer: a parent, its forked Hogwild workers
// and their shared region. On top of that:
//  - Steps: the global step numbers 1..steps are handed out in leases from
//    one counter in the store (TCPStore::add, atomic on rank 0). Each worker
//    takes a lease (a multiple of its batch, about 50 ms of its steps) and
//    claims from it locally, so every step number is taken exactly once by
//    exactly one worker of one host, and the run ends at exactly `steps`
//    however fast each host is.
//  - Parameters: every `sync_interval` seconds each host's parent averages
//    the hosts' shared parameters (and, if asked, the optimizer statistics)
//    with an all-reduce while its workers keep training: each host adds
//    (average - its copy) to its parameters, so updates its workers made
//    during the all-reduce are kept. The last sync, after every host's
//    workers have stopped, writes the exact average: all hosts end with
//    identical parameters.
//  - Counters and stops: the same round all-reduces each host's status,
//    steps taken and episodes; a successful evaluation on rank 0 ends every
//    host; a host whose workers fail or that gets SIGINT/SIGTERM stops every
//    host; a host that dies or stops answering makes the others stop within
//    `timeout` seconds. Every host then saves <t>_except/ from its own
//    parameters and exits non-zero with one line naming the rank.
//  - Before training: rank 0's parameters, optimizer statistics and counters
//    (a resumed checkpoint's, too) are broadcast to every host, and a host
//    whose options differ from rank 0's is refused (exit 2, one line naming
//    the option) before any step is taken.
//  - Evaluation, best/, successful/, periodic checkpoints and
//    <steps>_finish/ are rank 0's; curricula are each host's own.
#ifndef ASYNCRL_EXPERIMENTS_DISTRIBUTED_H_
#define ASYNCRL_EXPERIMENTS_DISTRIBUTED_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "asyncrl/misc/flag_spec.h"

namespace asyncrl {

struct ControlBlock;

struct DistOptions {
  int nnodes = 1;     // Hosts (torchrun's --nnodes), [1, 1024].
  int node_rank = 0;  // This host, [0, nnodes) (torchrun's --node-rank).
  // Where rank 0's TCPStore listens (torchrun's --master-addr and
  // --master-port in one): HOST:PORT. Rank 0 binds it; a host other than a
  // loopback address makes the run warn that its traffic is unauthenticated.
  std::string master_addr = "127.0.0.1:29500";
  // Seconds between parameter averages, > 0.
  double sync_interval = 1.0;
  // Seconds a host waits for the others (rendezvous, a collective) before
  // it declares the missing ones dead, > 0.
  double timeout = 60.0;
  // Average the optimizer statistics too (RMSprop's mean squares).
  bool sync_optimizer_state = false;

  bool Enabled() const { return nnodes > 1; }
  std::string Host() const;  // Of master_addr.
  int Port() const;          // Of master_addr.
  // Whether Host() is 127.0.0.0/8, ::1 or localhost.
  bool Loopback() const;
  // Throws InvalidOption naming the field.
  void Validate() const;
  FlagSpecs Flags();
};

// The options of train_a3c that may differ between hosts (their own
// folders, processes, profiling, ...): every other option recorded in
// TrainOptions::config must match rank 0's.
bool IsHostLocalOption(const std::string& key);

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

// Lives in the shared region (ControlBlock::dist).
struct DistBlock {
  // 0: wait for the hosts; 1: train; 2: give up (the hosts did not form).
  std::atomic<int32_t> ready{0};
  // Steps this host's workers have taken.
  std::atomic<int64_t> taken{0};
};

// Blocks a worker until its host has joined the others (true), or the run
// gave up or was stopped meanwhile (false).
bool WaitForHosts(ControlBlock& control);

// The parent's side: a thread that forms the group, checks options,
// broadcasts rank 0's state, then syncs every interval until every host is
// done or one fails. Start it after the workers are forked (c10d starts
// threads; the trainer forks from a single-threaded parent).
class HostCoordinator {
 public:
  // How this host's own workers ended (TrainAgentAsync tells it).
  enum class LocalEnd { kRunning, kDone, kFailed };

  // `params`/`optimizer_state` are the shared arrays; `config` the run's
  // options (TrainOptions::config), compared with rank 0's.
  HostCoordinator(const DistOptions& options, ControlBlock& control,
                  float* params, int64_t num_params, float* optimizer_state,
                  int64_t num_optimizer,
                  std::map<std::string, std::string> config);
  ~HostCoordinator();
  HostCoordinator(const HostCoordinator&) = delete;
  HostCoordinator& operator=(const HostCoordinator&) = delete;

  // Called on the coordinator's thread after every average, with the steps
  // all hosts took so far (rank 0 saves its periodic checkpoints there: its
  // own workers see only some step numbers). Set before Start().
  void OnAveraged(std::function<void(int64_t total_steps)> fn) {
    on_averaged_ = std::move(fn);
  }
  void Start();
  // This host's workers have all ended (kDone) or the host stops
  // (kFailed: `why` says why: a worker failure, a signal).
  void LocalEnded(LocalEnd end, const std::string& why);
  // Waits for the thread.
  void Join();

  // After Join().
  bool Formed() const { return formed_; }
  // 0: every host finished; 1: a host failed, died or stopped (message
  // names it); 2: a host's options differ from rank 0's.
  int ExitCode() const { return exit_code_; }
  const std::string& Message() const { return message_; }
  // A host stopped answering (this one's own workers may have failed
  // because of it: the store they lease steps from was on it).
  bool LostHost() const { return lost_host_; }
  // Steps all hosts took, from the last round (== steps after a full run).
  int64_t TotalSteps() const { return total_steps_; }
  // TotalSteps() plus the steps this host took since (what a checkpoint
  // saved after a failure records: the others' since are unknown).
  int64_t StepsNow() const;
  int64_t Rounds() const { return rounds_; }
  // FNV-1a of the parameters' bytes after the last round: equal on every
  // host after a finished run.
  uint64_t ParameterDigest() const { return digest_; }

 private:
  struct Impl;
  void Run();
  void RunRounds();  // After the hosts formed.
  void GiveUp(int code, const std::string& message);
  std::unique_ptr<Impl> impl_;
  std::function<void(int64_t)> on_averaged_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  LocalEnd local_end_ = LocalEnd::kRunning;
  std::string local_why_;
  bool formed_ = false;
  bool lost_host_ = false;  // A host stopped answering.
  int missing_ = 0;         // How many.
  int exit_code_ = 0;
  std::string message_;
  int64_t total_steps_ = 0;
  int64_t taken_at_round_ = 0;  // This host's taken steps at the last round.
  int64_t rounds_ = 0;
  uint64_t digest_ = 0;
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_DISTRIBUTED_H_
