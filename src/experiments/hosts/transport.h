// How hosts reach each other, all through LibTorch's c10d: rank 0's
// TCPStore (rendezvous, the global step counter, notes between hosts) and a
// Gloo process group (collectives over TCP). No transport of our own.
// Internal to the hosts feature.
#ifndef ASYNCRL_EXPERIMENTS_HOSTS_TRANSPORT_H_
#define ASYNCRL_EXPERIMENTS_HOSTS_TRANSPORT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

#include "asyncrl/experiments/hosts/hosts_options.h"

namespace asyncrl {

using HostClock = std::chrono::steady_clock;

// The store's keys: the global step counter (leases are taken from it),
// the note of the first host that saw a collective fail, and a counter a
// host bumps when it has news for the others.
constexpr char kStepKey[] = "asyncrl/step";
constexpr char kAbortKey[] = "asyncrl/abort";
constexpr char kNewsKey[] = "asyncrl/news";
// How often a host waiting for its next round looks for news.
constexpr std::chrono::milliseconds kNewsPoll{50};

std::chrono::milliseconds Millis(double seconds);
std::vector<uint8_t> Bytes(const std::string& s);
std::string Text(const std::vector<uint8_t>& b);
// c10d's messages carry a C++ backtrace after the first line.
std::string FirstLine(const std::string& text);
// Leaves a note (a host's reason to stop, a refusal) that is in the store
// when this returns. TCPStore's set sends without waiting for an answer,
// and its server serves ready clients in connection order: a host that
// learns of the note through a collective and asks for it at once could
// be served before the set is read. A request on the same connection that
// waits for its answer (check) is served after the set.
void PostNote(c10d::Store& store, const std::string& key,
              const std::string& text);

// A rendezvous the user's options prevent (the master's port taken on rank
// 0's machine, a rank another host already holds): exit 2, nothing trained.
class RendezvousRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Rank 0 serves the store (`server`; a port in use is RendezvousRefused);
// the others wait until it listens (TCPStore's own client retries a
// refused connection only once a second) and connect: nothing listening
// within the timeout is a std::runtime_error that says so, before c10d
// waits a second timeout. Every request of the store returned gets an
// answer within the timeout or throws (StoreWentSilent); a store that is
// silent already makes ConnectStore throw so. Otherwise throws what c10d
// throws.
c10::intrusive_ptr<c10d::TCPStore> ConnectStore(const DistOptions& options,
                                                bool server);

// Whether a c10d error says a store request got no reply in time: the
// store accepted the connection and stays silent. LibTorch 1.13's TCPStore
// serves every client from one thread and authenticates none, so one
// connection that sends part of a request blocks it for everybody
// (docs/hosts.md: Several hosts); a stopped rank 0 looks the same.
bool StoreWentSilent(const std::string& what);
// Whether something at the master address accepts a TCP connection within
// `seconds` (a silent store accepts; a host cut off or gone does not).
bool MasterAccepts(const DistOptions& options, double seconds);
// The message for StoreWentSilent: seen from rank 0 (`own`: its store did
// not answer its own request), or from another host whose connection to
// it is accepted.
std::string SilentStoreMessage(const DistOptions& options, bool own);

// Once per process, before any store or group exists (the hosts feature's
// Configure; the workers inherit it):
// - c10d logs through glog, which prints "Logging before
//   InitGoogleLogging()" and its own copy of every error asyncrl reports
//   anyway: glog is started writing to stderr, showing c10d's lines only
//   when `verbose` (--log-level debug); left alone if the program started
//   glog itself.
// - Every TCPStore client of LibTorch 1.13 runs a thread for watchKey
//   (unused here) that lets a socket error escape when rank 0's end of the
//   connection is reset (its process ended with a request of ours unread):
//   std::terminate would abort this host without a word to the run. Such a
//   thread is parked instead (stores are therefore never destroyed, see
//   ~HostGroup); the host learns of the lost store from its own next
//   request and stops as for any lost host. Any other uncaught exception
//   terminates as before.
void InitLibraryHandlers(bool verbose);

// The device Gloo binds: GLOO_SOCKET_IFNAME's interface (as PyTorch reads
// it), else this machine's address on the route to the master, so that
// the other hosts can connect back. Throws std::runtime_error when the
// master cannot be resolved or reached.
std::shared_ptr<::gloo::transport::Device> GlooDevice(
    const DistOptions& options);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_HOSTS_TRANSPORT_H_
