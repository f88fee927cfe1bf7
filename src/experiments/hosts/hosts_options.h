// Several hosts that train one model (--nnodes > 1): their options, which
// options may differ between hosts, the fingerprint a host's options are
// checked against rank 0's with, and this host's view of the trainer's
// options. The rest of the feature: transport.h (the store and Gloo),
// step_leases.h, host_coordinator.h and hosts_extension.h (how it plugs
// into the trainer).
#ifndef ASYNCRL_EXPERIMENTS_HOSTS_HOSTS_OPTIONS_H_
#define ASYNCRL_EXPERIMENTS_HOSTS_HOSTS_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "asyncrl/experiments/train_options.h"
#include "asyncrl/misc/flag_spec.h"

namespace asyncrl {

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
  // "" when Host() resolves here, else "cannot resolve the master address
  // HOST (getaddrinfo's reason)".
  std::string ResolveError() const;
  // With several hosts: throws InvalidOption naming master_addr when
  // ResolveError() is not "" (a lookup: run it once, before anything is
  // written).
  void CheckResolves() const;
  // With the trainer's options: every host's environments get seeds of
  // their own below kMaxSeed. Throws InvalidOption naming "seed".
  void ValidateWith(const TrainOptions& train) const;
  FlagSpecs Flags();
};

// This host's trainer options: its own seed (seed * nnodes + node_rank),
// and evaluation, periodic checkpoints and the successful score only on
// rank 0. `train` itself with one host.
TrainOptions ForThisHost(const TrainOptions& train, const DistOptions& dist);

// The options of train_a3c that may differ between hosts (their own
// folders, processes, profiling, ...): every other option recorded in
// TrainOptions::config must match rank 0's.
bool IsHostLocalOption(const std::string& key);

// "key\0value\0" for every option of `config` that must match, then the
// agent's shared sizes (`statistics`: the elements of each set of running
// statistics the hosts combine).
std::string Fingerprint(const std::map<std::string, std::string>& config,
                        int64_t num_params, int64_t num_optimizer,
                        const std::vector<int64_t>& statistics = {});

// The first option that differs between two fingerprints, as one line
// naming it and what is accepted; "" when they match.
std::string Difference(const std::string& here, const std::string& rank0);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_HOSTS_HOSTS_OPTIONS_H_
