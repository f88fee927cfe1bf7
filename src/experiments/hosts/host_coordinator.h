// The parent's side of several hosts: a thread that forms the group (rank
// 0's store, Gloo's full mesh), checks every host's options against rank
// 0's, broadcasts rank 0's state, then runs rounds until every host is done
// or one fails. Each round all-reduces the hosts' status, steps taken and
// episodes, and averages the shared parameters (and, if asked, the
// optimizer statistics) while the workers keep training: each host adds
// (average - its copy), so updates made during the all-reduce are kept. The
// last round, after every host's workers have stopped, writes the exact
// average: all hosts end with identical parameters. A successful
// evaluation on rank 0 ends every host; a host whose workers fail or that
// gets SIGINT/SIGTERM stops every host; a host that dies or stops answering
// makes the others stop within the timeout. The agent's running statistics
// (observation and return normalization) are combined at each round too:
// rank 0's to every host at the start, then every host's rows since the
// last round (agents/observation_normalizer.h); after the last round every
// host holds the statistics of all hosts' rows.
#ifndef ASYNCRL_EXPERIMENTS_HOSTS_HOST_COORDINATOR_H_
#define ASYNCRL_EXPERIMENTS_HOSTS_HOST_COORDINATOR_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "asyncrl/experiments/hosts/hosts_options.h"
#include "asyncrl/experiments/hosts/step_leases.h"

namespace asyncrl {

struct ControlBlock;
class ObservationNormalizer;

// Start it after the workers are forked (c10d starts threads; the trainer
// forks from a single-threaded parent). Its methods are the parent's; the
// callback runs on its thread.
class HostCoordinator {
 public:
  // How this host's own workers ended (the trainer tells it).
  enum class LocalEnd { kRunning, kDone, kFailed };

  // `params`/`optimizer_state` are the shared arrays; `config` the run's
  // options (TrainOptions::config), compared with rank 0's; `statistics`
  // the parent agent's shared running statistics (Agent::SharedStatistics),
  // combined at each round.
  HostCoordinator(const DistOptions& options, ControlBlock& control,
                  HostsBlock& block, float* params, int64_t num_params,
                  float* optimizer_state, int64_t num_optimizer,
                  std::map<std::string, std::string> config,
                  std::vector<ObservationNormalizer*> statistics = {});
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
  // FNV-1a of the parameters' bytes, then of the running statistics'
  // (count, means, variances), after the last round: equal on every host
  // after a finished run.
  uint64_t ParameterDigest() const { return digest_; }
  // Whether there are running statistics to combine.
  bool CombinesStatistics() const;

 private:
  struct Impl;
  struct RoundNews;
  void Run();
  // The phases, in order, after the hosts formed.
  void RunRounds();
  bool CheckOptions();  // False: a host was refused (GiveUp done).
  bool StoreSilent(const std::string& what) const;
  void ShareRankZeroState();
  LocalEnd AwaitRoundStart(RoundNews* news, std::string* why);
  bool ExchangeStatus(LocalEnd end, const std::string& why, bool* all_done);
  void AverageParameters(bool exact);
  bool CombineStatistics();
  void FinishRounds();
  void GiveUp(int code, const std::string& message);

  std::unique_ptr<Impl> impl_;
  std::function<void(int64_t)> on_averaged_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  LocalEnd local_end_ = LocalEnd::kRunning;
  std::string local_why_;
  bool formed_ = false;
  bool lost_host_ = false;     // A host stopped answering.
  int missing_ = 0;            // How many.
  bool store_silent_ = false;  // Rank 0's store stopped answering.
  int exit_code_ = 0;
  std::string message_;
  int64_t total_steps_ = 0;
  int64_t taken_at_round_ = 0;  // This host's taken steps at the last round.
  int64_t rounds_ = 0;
  uint64_t digest_ = 0;
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_HOSTS_HOST_COORDINATOR_H_
