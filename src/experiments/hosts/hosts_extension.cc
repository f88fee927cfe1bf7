#include "asyncrl/experiments/hosts/hosts_extension.h"

#include <signal.h>

#include <cstdio>
#include <new>
#include <stdexcept>

#include "asyncrl/experiments/hosts/transport.h"
#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/misc/logging.h"

namespace asyncrl {
namespace {

// Leases that count the steps this host took (the coordinator sums every
// host's into the global step at each round).
class CountedLeases : public StepSource {
 public:
  CountedLeases(const DistOptions& options, int64_t steps, HostsBlock& block)
      : leases_(options, steps), block_(block) {}
  int64_t Claim(int64_t want, int64_t* granted) override {
    const int64_t first = leases_.Claim(want, granted);
    if (*granted > 0) block_.taken.fetch_add(*granted);
    return first;
  }

 private:
  StepLeases leases_;
  HostsBlock& block_;
};

// A worker waits for the hosts to form, then takes leases.
class HostsWorker : public WorkerExtension {
 public:
  HostsWorker(const DistOptions& options, int64_t steps, HostsBlock& block,
              const ControlBlock& control)
      : options_(options), steps_(steps), block_(block), control_(control) {}

  bool Ready() override {
    if (!WaitForHosts(block_, control_)) return false;
    leases_ = std::make_unique<CountedLeases>(options_, steps_, block_);
    return true;
  }
  StepSource* Steps() override { return leases_.get(); }

 private:
  const DistOptions& options_;
  int64_t steps_;
  HostsBlock& block_;
  const ControlBlock& control_;
  std::unique_ptr<CountedLeases> leases_;
};

}  // namespace

HostsExtension::HostsExtension(DistOptions options)
    : options_(std::move(options)) {
  if (!options_.Enabled()) {
    throw std::invalid_argument(
        "HostsExtension: nnodes=" + std::to_string(options_.nnodes) +
        " (accepted: more than 1 host)");
  }
}

void HostsExtension::AdjustOptions(TrainOptions* options) const {
  options_.Validate();
  options_.ValidateWith(*options);
  options_.CheckResolves();
  *options = ForThisHost(*options, options_);
  if (!options_.Loopback()) {
    Log(LogLevel::kWarning,
        "dist: --master-addr=" + options_.master_addr +
            " is not a loopback address: the hosts' traffic (store and "
            "Gloo) is unauthenticated and unencrypted; keep it inside a "
            "trusted network");
  } else if (options_.node_rank == 0) {
    Log(LogLevel::kWarning,
        "dist: rank 0's store listens on port " +
            std::to_string(options_.Port()) +
            " of every interface, not only loopback (LibTorch 1.13's "
            "TCPStore cannot bind one address), unauthenticated: keep the "
            "port closed to untrusted networks");
  }
}

void HostsExtension::Configure(const TrainOptions& options, Env&) {
  steps_ = options.steps;
  outdir_ = options.outdir;
  // A host that dies leaves sockets whose next write raises SIGPIPE in the
  // others (Gloo and the store do not all write with MSG_NOSIGNAL), which
  // would kill them silently, without <t>_except/: the write fails with
  // EPIPE instead and is reported. The workers inherit it.
  signal(SIGPIPE, SIG_IGN);
  InitLibraryHandlers(LogEnabled(LogLevel::kDebug));
}

size_t HostsExtension::SharedBytes(const SharedStateSizes&) const {
  return sizeof(HostsBlock);
}

void HostsExtension::Place(void* shared, const RunInfo& run) {
  block_ = new (shared) HostsBlock();
  control_ = run.control;
}

// Formed, checked and synced by the coordinator's thread, started once the
// workers are forked.
void HostsExtension::Start(const RunInfo& run) {
  coordinator_ = std::make_unique<HostCoordinator>(
      options_, *run.control, *block_, run.params, run.sizes.params,
      run.optimizer_state, run.sizes.optimizer, run.options->config,
      run.statistics);
  save_ = run.save;
  if (options_.node_rank != 0 || run.options->checkpoint_interval <= 0) {
    return;
  }
  // Rank 0's periodic checkpoints: at the first average after each multiple
  // of the interval, named by the global step then (its workers see only
  // some step numbers; the hosts' steps are counted at the averages).
  const int64_t interval = run.options->checkpoint_interval;
  const int keep = run.options->keep_checkpoints;
  auto last =
      std::make_shared<int64_t>(run.control->start_step.load() / interval);
  coordinator_->OnAveraged([this, interval, keep, last](int64_t total) {
    if (total / interval <= *last) return;
    *last = total / interval;
    save_(CheckpointDir(outdir_, total));
    PruneCheckpoints(outdir_, keep);
  });
}

std::unique_ptr<WorkerExtension> HostsExtension::StartWorker(
    const WorkerInfo&) {
  return std::make_unique<HostsWorker>(options_, steps_, *block_, *control_);
}

void HostsExtension::WorkersStarted() { coordinator_->Start(); }

// Every host finishes together: the last average waits for the others.
void HostsExtension::WorkersEnded(const GroupReport& report) {
  std::string why;
  if (report.first_failure >= 0) {
    why = report.workers[report.first_failure].Describe();
  } else if (report.stop_signal != 0) {
    why = "stopped by " + SignalName(report.stop_signal);
  }
  coordinator_->LocalEnded(report.Ok() ? HostCoordinator::LocalEnd::kDone
                                       : HostCoordinator::LocalEnd::kFailed,
                           Rank() + ": " + why);
  coordinator_->Join();
}

void HostsExtension::Conclude(const GroupReport& report, RunEnd* end) {
  HostCoordinator& c = *coordinator_;
  if (c.LostHost()) {
    end->exit_code = 1;
    end->message = c.Message();
    end->save_except = true;
  } else if (report.Ok() && c.ExitCode() == 0) {
    // Rank 0 saves what the hosts' last average is.
    if (options_.node_rank == 0 && c.TotalSteps() == steps_) {
      save_(FinishDir(outdir_, steps_));
    }
    char digest[17];
    std::snprintf(digest, sizeof(digest), "%016llx",
                  static_cast<unsigned long long>(c.ParameterDigest()));
    end->notes.push_back(
        Rank() + " of " + std::to_string(options_.nnodes) +
        (c.CombinesStatistics() ? ": parameters and running statistics"
                                : ": parameters") +
        " after the last of " + std::to_string(c.Rounds()) +
        " averages: digest " + digest + " (the same on every host)");
    return;
  } else if (report.Ok()) {
    end->exit_code = c.ExitCode();
    end->message = c.Message();
    // Refused, or the hosts never met: nothing was trained. A refusal
    // (exit 2: options that differ, a rank or port taken) leaves the run
    // folder as it was.
    end->save_except = c.Formed() && end->exit_code != 2;
    end->refused = end->exit_code == 2;
  } else {
    end->message = Rank() + ": " + end->message;
  }
  if (end->save_except && c.Formed()) {
    // The hosts' steps at the last average plus this host's since.
    end->step = c.StepsNow();
  }
}

// A coordinator still running (the trainer threw) stops this host and says
// so (~HostCoordinator) before the region it reads is unmapped.
void HostsExtension::Release() {
  coordinator_.reset();
  save_ = nullptr;
  block_ = nullptr;
  control_ = nullptr;
}

std::string HostsExtension::Rank() const {
  return "rank " + std::to_string(options_.node_rank);
}

}  // namespace asyncrl
