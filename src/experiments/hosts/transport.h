// How hosts reach each other, all through LibTorch's c10d: rank 0's
// TCPStore (rendezvous, the global step counter, notes between hosts) and a
// Gloo process group (collectives over TCP). No transport of our own.
// Internal to the hosts feature.
#ifndef ASYNCRL_EXPERIMENTS_HOSTS_TRANSPORT_H_
#define ASYNCRL_EXPERIMENTS_HOSTS_TRANSPORT_H_

#include <chrono>
#include <cstdint>
#include <memory>
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

// Rank 0 serves the store (`server`); the others wait until it listens
// (TCPStore's own client retries a refused connection only once a second)
// and connect. Throws what c10d throws.
c10::intrusive_ptr<c10d::TCPStore> ConnectStore(const DistOptions& options,
                                                bool server);

// The device Gloo binds: GLOO_SOCKET_IFNAME's interface (as PyTorch reads
// it), else this machine's address on the route to the master, so that
// the other hosts can connect back. Throws std::runtime_error when the
// master cannot be resolved or reached.
std::shared_ptr<::gloo::transport::Device> GlooDevice(
    const DistOptions& options);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_HOSTS_TRANSPORT_H_
