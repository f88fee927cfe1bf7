// Several hosts that train one model (--nnodes > 1), as a trainer
// extension. Each host runs the ordinary trainer (a parent, its forked
// Hogwild workers and their shared region); this extension adds:
//  - this host's options (ForThisHost): its own seed; evaluation, best/,
//    successful/, periodic checkpoints and <steps>_finish/ on rank 0 only
//    (curricula are each host's own);
//  - the workers' step numbers from leases of one counter in rank 0's store
//    (step_leases.h), after the hosts have formed;
//  - the parent's HostCoordinator (host_coordinator.h): rendezvous, options
//    checked against rank 0's (exit 2, one line naming the option), rank
//    0's state broadcast, parameter averages every --sync-interval, stops
//    and failures propagated to every host; rank 0's periodic checkpoints
//    at the averages;
//  - the end: every host's result and <t>_except/ named by the hosts'
//    steps, messages naming the rank, the parameters' digest as a note.
#ifndef ASYNCRL_EXPERIMENTS_HOSTS_HOSTS_EXTENSION_H_
#define ASYNCRL_EXPERIMENTS_HOSTS_HOSTS_EXTENSION_H_

#include <memory>
#include <string>

#include "asyncrl/experiments/extension.h"
#include "asyncrl/experiments/hosts/host_coordinator.h"
#include "asyncrl/experiments/hosts/hosts_options.h"

namespace asyncrl {

class HostsExtension : public TrainerExtension {
 public:
  // `options.Enabled()` must hold.
  explicit HostsExtension(DistOptions options);

  std::string Name() const override { return "hosts"; }
  void AdjustOptions(TrainOptions* options) const override;
  void Configure(const TrainOptions& options, Env& probe) override;
  size_t SharedBytes(const SharedStateSizes& sizes) const override;
  void Place(void* shared, const RunInfo& run) override;
  void Start(const RunInfo& run) override;
  std::unique_ptr<WorkerExtension> StartWorker(const WorkerInfo& w) override;
  void WorkersStarted() override;
  void WorkersEnded(const GroupReport& report) override;
  void Conclude(const GroupReport& report, RunEnd* end) override;
  void Release() override;

 private:
  std::string Rank() const;  // "rank R".

  DistOptions options_;
  int64_t steps_ = 0;
  HostsBlock* block_ = nullptr;
  ControlBlock* control_ = nullptr;
  std::function<void(const std::string&)> save_;
  std::string outdir_;
  std::unique_ptr<HostCoordinator> coordinator_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_HOSTS_HOSTS_EXTENSION_H_
