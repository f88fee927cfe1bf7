#include "asyncrl/experiments/distributed.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/misc/futex.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kStepKey[] = "asyncrl/step";
// Set by the first host that sees a collective fail.
constexpr char kAbortKey[] = "asyncrl/abort";
// Bumped by a host with news for the others (HostCoordinator::RunRounds).
constexpr char kNewsKey[] = "asyncrl/news";
constexpr std::chrono::milliseconds kNewsPoll{50};
// A lease lasts about this long at the worker's pace.
constexpr double kLeaseSeconds = 0.05;

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

std::vector<uint8_t> Bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}
std::string Text(const std::vector<uint8_t>& b) {
  return std::string(b.begin(), b.end());
}

// Waits until something listens at the master address (or `timeout`
// passes): TCPStore's own client retries a refused connection only once a
// second, which a host started just before rank 0 would pay at every run.
void AwaitListener(const DistOptions& options) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options.Port());
  if (getaddrinfo(options.Host().c_str(), port.c_str(), &hints, &found) != 0 ||
      found == nullptr) {
    return;  // TCPStore reports it.
  }
  const auto deadline = Clock::now() + Millis(options.timeout);
  while (Clock::now() < deadline) {
    const int fd = socket(found->ai_family, SOCK_STREAM, 0);
    if (fd < 0) break;
    const bool up = connect(fd, found->ai_addr, found->ai_addrlen) == 0;
    close(fd);
    if (up) break;
    usleep(10000);
  }
  freeaddrinfo(found);
}

c10::intrusive_ptr<c10d::TCPStore> ConnectStore(const DistOptions& options,
                                                bool server) {
  if (!server) AwaitListener(options);
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(options.Port());
  o.isServer = server;
  o.waitWorkers = false;  // Workers' lease clients connect too.
  o.timeout = Millis(options.timeout);
  return c10::make_intrusive<c10d::TCPStore>(options.Host(), o);
}

// The address of this machine's interface that reaches `host` (a UDP
// "connect" sends nothing; it only picks the route): Gloo binds it, so
// that the other hosts can connect back. GLOO_SOCKET_IFNAME, as PyTorch
// reads it, names an interface instead.
std::shared_ptr<::gloo::transport::Device> GlooDevice(
    const DistOptions& options) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME")) {
    if (*ifname != '\0') {
      return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
    }
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options.Port());
  if (getaddrinfo(options.Host().c_str(), port.c_str(), &hints, &found) != 0 ||
      found == nullptr) {
    throw std::runtime_error("cannot resolve the master address " +
                             options.Host());
  }
  std::string local;
  const int fd = socket(found->ai_family, SOCK_DGRAM, 0);
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    char text[INET6_ADDRSTRLEN] = {};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      const void* where =
          addr.ss_family == AF_INET
              ? static_cast<const void*>(
                    &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr)
              : static_cast<const void*>(
                    &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr);
      if (inet_ntop(addr.ss_family, where, text, sizeof(text)) != nullptr) {
        local = text;
      }
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  if (local.empty()) {
    throw std::runtime_error("no route from this machine to the master " +
                             options.Host());
  }
  in_addr v4{};
  const bool loopback =
      local == "::1" || (inet_pton(AF_INET, local.c_str(), &v4) == 1 &&
                         (ntohl(v4.s_addr) >> 24) == 127);
  if (loopback && !options.Loopback()) {
    // Debian's /etc/hosts maps the machine's own name to 127.0.1.1.
    Log(LogLevel::kWarning,
        "dist: --master-addr=" + options.master_addr + " resolves to " + local +
            " here, a loopback address the other machines cannot "
            "reach: give rank 0's network address, or name the interface "
            "with GLOO_SOCKET_IFNAME");
  }
  return c10d::ProcessGroupGloo::createDeviceForHostname(local);
}

// c10d's messages carry a C++ backtrace after the first line.
std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

uint64_t Fnv1a(const void* data, size_t bytes, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

// "key\0value\0" for every option that must match.
std::string Fingerprint(const std::map<std::string, std::string>& config,
                        int64_t num_params, int64_t num_optimizer) {
  std::string out;
  for (const auto& [key, value] : config) {
    if (IsHostLocalOption(key)) continue;
    out += key + '\0' + value + '\0';
  }
  out += std::string("(parameters)") + '\0' + std::to_string(num_params) +
         '\0' + "(optimizer statistics)" + '\0' +
         std::to_string(num_optimizer) + '\0';
  return out;
}

std::map<std::string, std::string> Unpack(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t k = text.find('\0', at);
    if (k == std::string::npos) break;
    const size_t v = text.find('\0', k + 1);
    if (v == std::string::npos) break;
    out[text.substr(at, k - at)] = text.substr(k + 1, v - k - 1);
    at = v + 1;
  }
  return out;
}

// The first option that differs, as one line; "" when they match.
std::string Difference(const std::string& here, const std::string& rank0) {
  const auto a = Unpack(here);
  const auto b = Unpack(rank0);
  std::set<std::string> keys;
  for (const auto& kv : a) keys.insert(kv.first);
  for (const auto& kv : b) keys.insert(kv.first);
  for (const auto& key : keys) {
    const auto ia = a.find(key);
    const auto ib = b.find(key);
    const std::string va = ia == a.end() ? "(unset)" : ia->second;
    const std::string vb = ib == b.end() ? "(unset)" : ib->second;
    if (va == vb) continue;
    const std::string name = key[0] == '(' ? key : "--" + key;
    return name + " is '" + va + "' here and '" + vb +
           "' on rank 0; accepted: the same on every host (only " +
           "--processes, --envs-per-process, --node-rank, --master-addr, " +
           "--outdir, --resume, --load, --profile, --quiet, --log-level " +
           "may differ)";
  }
  return "";
}

}  // namespace

// ---------------------------------------------------------------- options

std::string DistOptions::Host() const {
  const size_t colon = master_addr.rfind(':');
  std::string host =
      colon == std::string::npos ? master_addr : master_addr.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

int DistOptions::Port() const {
  const size_t colon = master_addr.rfind(':');
  if (colon == std::string::npos) return -1;
  const std::string port = master_addr.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  return std::stoi(port);
}

bool DistOptions::Loopback() const {
  const std::string host = Host();
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) == 1) {
    return (ntohl(a.s_addr) >> 24) == 127;
  }
  return false;
}

void DistOptions::Validate() const {
  Require(nnodes >= 1 && nnodes <= 1024, "nnodes", nnodes,
          "an integer in [1, 1024]");
  Require(node_rank >= 0 && node_rank < nnodes, "node_rank", node_rank,
          "an integer in [0, nnodes=" + std::to_string(nnodes) + ")");
  const int port = Port();
  Require(!Host().empty() && port >= 1 && port <= 65535, "master_addr",
          master_addr, "HOST:PORT with a port in [1, 65535]");
  Require(sync_interval > 0 && sync_interval <= 3600, "sync_interval",
          sync_interval, "seconds in (0, 3600]");
  Require(timeout > 0 && timeout <= 86400, "dist_timeout", timeout,
          "seconds in (0, 86400]");
}

FlagSpecs DistOptions::Flags() {
  return {
      {"nnodes", "hosts that train this model together (c10d/Gloo)", &nnodes},
      {"node-rank",
       "this host's rank in [0, nnodes); rank 0 evaluates and "
       "saves the run's checkpoints",
       &node_rank},
      {"master-addr",
       "HOST:PORT of rank 0's rendezvous store (unauthenticated, "
       "unencrypted: keep it on a trusted network)",
       &master_addr},
      {"sync-interval", "seconds between averaging the hosts' parameters",
       &sync_interval},
      {"dist-timeout",
       "seconds a host waits for the others before it declares them dead",
       &timeout},
      {"sync-optimizer-state",
       "average the optimizer statistics too, not only the parameters",
       &sync_optimizer_state}};
}

bool IsHostLocalOption(const std::string& key) {
  static const std::set<std::string> kLocal = {
      "processes", "envs-per-process", "node-rank", "master-addr",
      "outdir",    "resume",           "load",      "profile",
      "quiet",     "log-level",        "config"};
  return kLocal.count(key) != 0;
}

// ---------------------------------------------------------------- leases

struct StepLeases::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
  int64_t steps = 0;
  int64_t next = 0;  // Numbers next+1 .. end are this worker's.
  int64_t end = 0;
  bool exhausted = false;
  int64_t multiple = 4;  // Lease size in claims of `want`.
  Clock::time_point leased_at;
};

StepLeases::StepLeases(const DistOptions& options, int64_t steps)
    : impl_(std::make_unique<Impl>()) {
  impl_->store = ConnectStore(options, /*server=*/false);
  impl_->steps = steps;
}

StepLeases::~StepLeases() = default;

int64_t StepLeases::Claim(int64_t want, int64_t* granted) {
  Impl& s = *impl_;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (s.next < s.end) {
      *granted = std::min(want, s.end - s.next);
      const int64_t first = s.next + 1;
      s.next += *granted;
      return first;
    }
    if (s.exhausted) break;
    // About kLeaseSeconds of this worker's steps: double while a lease
    // lasts under half of that, halve while it lasts over twice.
    const auto now = Clock::now();
    if (s.end > 0) {
      const double lasted =
          std::chrono::duration<double>(now - s.leased_at).count();
      if (lasted < kLeaseSeconds / 2)
        s.multiple = std::min<int64_t>(s.multiple * 2, 1 << 16);
      if (lasted > kLeaseSeconds * 2)
        s.multiple = std::max<int64_t>(s.multiple / 2, 1);
    }
    s.leased_at = now;
    const int64_t size = s.multiple * want;
    const int64_t after = s.store->add(kStepKey, size);
    const int64_t begin = after - size;
    if (begin >= s.steps) {
      s.exhausted = true;
      break;
    }
    s.next = begin;
    s.end = std::min(after, s.steps);
  }
  *granted = 0;
  return 0;
}

bool WaitForHosts(ControlBlock& control) {
  // Only at a worker's start, while the hosts rendezvous.
  while (true) {
    const int32_t ready = control.dist.ready.load();
    if (ready == 1) return true;
    if (ready == 2 || control.stop.load() != 0) return false;
    usleep(2000);
  }
}

// ---------------------------------------------------------------- coordinator

struct HostCoordinator::Impl {
  DistOptions options;
  ControlBlock& control;
  float* params;
  int64_t num_params;
  float* optimizer;
  int64_t num_optimizer;
  std::map<std::string, std::string> config;
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  int64_t others_episodes = 0;  // Other hosts' episodes already added.
  double sync_seconds = 0;      // Summed over the parameter syncs.
  int64_t syncs = 0;

  Impl(const DistOptions& o, ControlBlock& c, float* p, int64_t np, float* opt,
       int64_t nopt, std::map<std::string, std::string> cfg)
      : options(o),
        control(c),
        params(p),
        num_params(np),
        optimizer(opt),
        num_optimizer(nopt),
        config(std::move(cfg)) {}

  int rank() const { return options.node_rank; }
  int size() const { return options.nnodes; }

  // Waits for a collective: until it completes (rethrowing its error),
  // `timeout` passes, or another host posts that it gave up (a host only
  // its ring neighbours see die would otherwise keep the rest waiting for
  // the whole timeout).
  // A host that waits for the others' next round may wait a whole
  // interval before the timeout starts to count.
  void Complete(const c10::intrusive_ptr<c10d::Work>& work) {
    const auto deadline =
        Clock::now() + Millis(options.timeout + options.sync_interval);
    while (true) {
      try {
        // Blocks (no polling: the workers need the cores); throws when
        // 50 ms pass first, or rethrows the collective's own error.
        work->wait(std::chrono::milliseconds(50));
        if (work->isCompleted()) return;
      } catch (const c10::Error&) {
        // A timeout of this slice, or the collective failed; it may also
        // have completed just after the slice ran out: wait() without a
        // timeout then returns, or rethrows its own error.
        if (work->isCompleted()) {
          work->wait();
          return;
        }
      }
      if (Clock::now() > deadline) {
        throw std::runtime_error("no answer within --dist-timeout=" +
                                 FormatValue(options.timeout) + " s");
      }
      if (store->check({kAbortKey})) {
        throw std::runtime_error("another host gave up: " +
                                 Text(store->get(kAbortKey)));
      }
    }
  }

  void Wait(std::vector<at::Tensor>& tensors) {
    Complete(group->allreduce(tensors));
  }

  // Sums one int64 per rank: every rank's value, in rank order.
  std::vector<int64_t> Gather(const std::vector<int64_t>& mine, int fields) {
    at::Tensor t = at::zeros({int64_t{size()} * fields}, at::kLong);
    for (int f = 0; f < fields; ++f) t[rank() * fields + f] = mine[f];
    std::vector<at::Tensor> v{t};
    Wait(v);
    const int64_t* p = t.data_ptr<int64_t>();
    return std::vector<int64_t>(p, p + t.numel());
  }

  // Averages `n` floats at `data` over the hosts: exactly when `exact`
  // (nobody writes them), else adding (average - copy) so that concurrent
  // updates made meanwhile stay.
  void Average(float* data, int64_t n, bool exact) {
    if (n == 0) return;
    at::Tensor copy = at::empty({n}, at::kFloat);
    std::memcpy(copy.data_ptr<float>(), data, n * sizeof(float));
    at::Tensor sum = copy.clone();
    std::vector<at::Tensor> v{sum};
    Wait(v);
    sum.div_(static_cast<float>(size()));
    const float* avg = sum.data_ptr<float>();
    if (exact) {
      std::memcpy(data, avg, n * sizeof(float));
      return;
    }
    const float* before = copy.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) data[i] += avg[i] - before[i];
  }

  void Broadcast(float* data, int64_t n) {
    if (n == 0) return;
    at::Tensor t = at::from_blob(data, {n}, at::kFloat);
    std::vector<at::Tensor> v{t};
    Complete(group->broadcast(v));
  }

  // A note another rank left in the store (it may be gone by now).
  std::string Note(const std::string& key) {
    try {
      if (store->check({key})) return Text(store->get(key));
    } catch (const std::exception&) {
    }
    return "(its reason is in its own log)";
  }

  // Every rank counts itself out at its end; rank 0, whose process serves
  // the store and whose exit closes its sockets, waits up to `seconds` for
  // `expected` ranks (itself included) to count out first.
  void Finish(double seconds, int expected) {
    try {
      store->add("asyncrl/finished", 1);
      if (rank() != 0) return;
      const auto deadline = Clock::now() + Millis(seconds);
      while (store->add("asyncrl/finished", 0) < expected &&
             Clock::now() < deadline) {
        usleep(1000);
      }
    } catch (const std::exception&) {
    }
  }

  // After a collective failed: tells the others (kAbortKey), counts this
  // host in as alive and gives the others up to 2 s (or the timeout, if
  // shorter) to do the same; those that do not are missing. The store
  // itself gone means rank 0, its host, is (seen from rank 0: all the
  // others). "" if all answered.
  std::string Missing(const std::string& what) {
    try {
      if (!store->check({kAbortKey})) {
        store->set(kAbortKey,
                   Bytes("rank " + std::to_string(rank()) + ": " + what));
      }
      // Hosts waiting for their next round start it now, and learn of the
      // abort in its collective.
      store->add(kNewsKey, 1);
      store->add("asyncrl/alive/" + std::to_string(rank()), 1);
      const auto deadline =
          Clock::now() + Millis(std::min(2.0, options.timeout));
      std::string out;
      while (true) {
        out.clear();
        for (int r = 0; r < size(); ++r) {
          if (r == rank()) continue;
          if (store->add("asyncrl/alive/" + std::to_string(r), 0) == 0) {
            out += (out.empty() ? "" : ", ") + std::to_string(r);
          }
        }
        if (out.empty() || Clock::now() > deadline) return out;
        usleep(5000);
      }
    } catch (const std::exception&) {
      // The store is out of reach: from another host, rank 0 (its host)
      // is missing; from rank 0 itself (its own address gone, as when its
      // link is cut), every other rank is.
      if (rank() != 0) return "0";
      std::string out;
      for (int r = 1; r < size(); ++r) {
        out += (out.empty() ? "" : ", ") + std::to_string(r);
      }
      return out;
    }
  }
};

HostCoordinator::HostCoordinator(const DistOptions& options,
                                 ControlBlock& control, float* params,
                                 int64_t num_params, float* optimizer_state,
                                 int64_t num_optimizer,
                                 std::map<std::string, std::string> config)
    : impl_(std::make_unique<Impl>(options, control, params, num_params,
                                   optimizer_state, num_optimizer,
                                   std::move(config))) {}

HostCoordinator::~HostCoordinator() {
  // Unwinding past a running coordinator (the parent threw): this host
  // stops and says so, instead of joining a thread that waits for news.
  LocalEnded(LocalEnd::kFailed,
             "rank " + std::to_string(impl_->rank()) + ": the trainer stopped");
  if (thread_.joinable()) thread_.join();
}

int64_t HostCoordinator::StepsNow() const {
  return total_steps_ + impl_->control.dist.taken.load() - taken_at_round_;
}

void HostCoordinator::Start() {
  thread_ = std::thread([this] { Run(); });
}

void HostCoordinator::LocalEnded(LocalEnd end, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (local_end_ == LocalEnd::kFailed) return;  // The first reason stays.
    local_end_ = end;
    local_why_ = why;
  }
  wake_.notify_all();
}

void HostCoordinator::Join() {
  if (thread_.joinable()) thread_.join();
}

// This host stops: its workers leave (or never start) and the run ends
// with `code` and `message`.
void HostCoordinator::GiveUp(int code, const std::string& message) {
  exit_code_ = code;
  message_ = message;
  impl_->control.dist.ready.store(2);
  StoreAndWakeAll(impl_->control.stop, 1);
}

void HostCoordinator::Run() {
  Impl& s = *impl_;
  ControlBlock& control = s.control;
  const std::string me = "rank " + std::to_string(s.rank());

  // 1. Rendezvous: the store (rank 0 serves it), then Gloo's full mesh.
  try {
    s.store = ConnectStore(s.options, s.rank() == 0);
    // A host whose workers are done enters each collective at once and
    // waits there for the others' next round: up to an interval more.
    auto gloo = c10d::ProcessGroupGloo::Options::create(
        Millis(s.options.timeout + s.options.sync_interval));
    gloo->devices.push_back(GlooDevice(s.options));
    gloo->threads = 1;
    s.group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("asyncrl/gloo", s.store),
        s.rank(), s.size(), gloo);
  } catch (const std::exception& e) {
    const std::string what = FirstLine(e.what());
    GiveUp(1, me + ": the " + std::to_string(s.options.nnodes) +
                  " hosts did not meet at " + s.options.master_addr +
                  " within --dist-timeout=" + FormatValue(s.options.timeout) +
                  " s (" + what + ")");
    return;
  }
  RunRounds();
  // Rank 0 keeps its store up until the others are through with it: after
  // the last average, a stop or a refusal, every host; after a lost host,
  // the ones that answered (so that none of them blames rank 0).
  if (!lost_host_) {
    s.Finish(exit_code_ == 0 ? s.options.timeout : 5.0, s.size());
  } else {
    s.Finish(3.0, s.size() - missing_);
  }
}

void HostCoordinator::RunRounds() {
  Impl& s = *impl_;
  ControlBlock& control = s.control;
  const std::string me = "rank " + std::to_string(s.rank());
  int64_t round = 0;
  try {
    // 2. Options: every host's against rank 0's, before any step.
    const std::string mine =
        Fingerprint(s.config, s.num_params, s.num_optimizer);
    std::string refused;
    if (s.rank() == 0) {
      s.store->set("asyncrl/options", Bytes(mine));
    } else {
      refused = Difference(mine, Text(s.store->get("asyncrl/options")));
      if (!refused.empty()) {
        s.store->set("asyncrl/refused/" + std::to_string(s.rank()),
                     Bytes(refused));
      }
    }
    const std::vector<int64_t> refusals =
        s.Gather({refused.empty() ? 0 : 1}, 1);
    for (int r = 0; r < s.size(); ++r) {
      if (refusals[r] == 0) continue;
      if (r == s.rank()) {
        GiveUp(2, me + ": " + refused);
      } else {
        GiveUp(2, "rank " + std::to_string(r) + " was refused: " +
                      s.Note("asyncrl/refused/" + std::to_string(r)));
      }
      return;
    }

    // 3. Rank 0's state to every host; the step counter starts at rank 0's
    // step (a resumed run's).
    if (s.rank() == 0) {
      s.store->add(kStepKey, control.global_step.load());
    }
    s.Broadcast(s.params, s.num_params);
    s.Broadcast(s.optimizer, s.num_optimizer);
    at::Tensor counters =
        at::tensor(std::vector<int64_t>{control.global_step.load(),
                                        control.episodes.load()},
                   at::kLong);
    {
      std::vector<at::Tensor> v{counters};
      s.Complete(s.group->broadcast(v));
    }
    if (s.rank() != 0) {
      control.global_step.store(counters[0].item<int64_t>());
      control.start_step = counters[0].item<int64_t>();
      control.episodes.store(counters[1].item<int64_t>());
      s.others_episodes = counters[1].item<int64_t>();
    }
    total_steps_ = control.global_step.load();
    formed_ = true;
    control.dist.ready.store(1);
    if (s.rank() == 0) {
      Log(LogLevel::kInfo, "dist: " + std::to_string(s.size()) +
                               " hosts joined at " + s.options.master_addr +
                               "; averaging parameters every " +
                               FormatValue(s.options.sync_interval) + " s");
    }

    // 4. Rounds until every host is done or one stops.
    enum Status : int64_t { kRunning = 0, kDone = 1, kStopped = 2 };
    constexpr int kFields = 4;
    // A round starts every interval, or sooner on news: this host's
    // workers ended or its evaluation succeeded (it bumps kNewsKey), or
    // another host's news (seen in the store within 50 ms), so that a stop
    // or the end reaches every host at once, not an interval later.
    int64_t seen_news = 0;
    bool told_training_done = false;
    LocalEnd told_end = LocalEnd::kRunning;
    while (true) {
      const auto next_round = Clock::now() + Millis(s.options.sync_interval);
      LocalEnd end;
      std::string why;
      while (true) {
        {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait_until(lock, std::min(next_round, Clock::now() + kNewsPoll),
                           [this] { return local_end_ != LocalEnd::kRunning; });
          end = local_end_;
          why = local_why_;
        }
        bool news = false;
        if (end != told_end) {
          told_end = end;
          news = true;
        }
        if (!told_training_done && control.training_done.load() != 0) {
          told_training_done = true;
          news = true;
        }
        if (news) {
          seen_news = s.store->add(kNewsKey, 1);
          break;
        }
        if (end != LocalEnd::kRunning || Clock::now() >= next_round) break;
        const int64_t posted = s.store->add(kNewsKey, 0);
        if (posted > seen_news) {
          seen_news = posted;
          break;
        }
      }
      ++round;
      const int64_t status = end == LocalEnd::kDone     ? kDone
                             : end == LocalEnd::kFailed ? kStopped
                                                        : kRunning;
      if (status == kStopped) {
        s.store->set("asyncrl/why/" + std::to_string(s.rank()), Bytes(why));
      }
      const int64_t local_episodes =
          control.episodes.load() - s.others_episodes;
      const int64_t taken_here = control.dist.taken.load();
      const std::vector<int64_t> all =
          s.Gather({status, taken_here, local_episodes,
                    static_cast<int64_t>(control.training_done.load())},
                   kFields);
      rounds_ = round;
      int64_t taken = 0, episodes = 0;
      bool all_done = true, done_training = false;
      int stopped = -1;
      for (int r = 0; r < s.size(); ++r) {
        const int64_t* f = &all[r * kFields];
        if (f[0] == kStopped && stopped < 0) stopped = r;
        all_done = all_done && f[0] == kDone;
        taken += f[1];
        if (r != s.rank()) episodes += f[2];
        done_training = done_training || f[3] != 0;
      }
      control.episodes.fetch_add(episodes - s.others_episodes);
      s.others_episodes = episodes;
      // The global step every host shows and checkpoints record: the
      // steps all hosts took, as of this round.
      total_steps_ = control.start_step.load() + taken;
      taken_at_round_ = taken_here;
      control.global_step.store(total_steps_);
      if (done_training) control.training_done.store(1);
      if (stopped >= 0) {
        if (stopped == s.rank()) {
          exit_code_ = 1;
          message_ = why;
        } else {
          GiveUp(1, "rank " + std::to_string(stopped) + " stopped: " +
                        s.Note("asyncrl/why/" + std::to_string(stopped)));
        }
        return;
      }
      const auto t0 = Clock::now();
      s.Average(s.params, s.num_params, all_done);
      if (s.options.sync_optimizer_state) {
        s.Average(s.optimizer, s.num_optimizer, all_done);
      }
      s.sync_seconds +=
          std::chrono::duration<double>(Clock::now() - t0).count();
      ++s.syncs;
      if (on_averaged_) {
        try {
          on_averaged_(total_steps_);
        } catch (const std::exception& e) {
          // This host fails (a checkpoint it could not write): it stops
          // its workers and tells the others at the next round.
          LocalEnded(LocalEnd::kFailed, me + ": " + e.what());
          StoreAndWakeAll(control.stop, 1);
        }
      }
      if (all_done) break;
    }
    {
      // The last round's checkpoint may have failed after every host was
      // done: this host's run failed all the same.
      std::lock_guard<std::mutex> lock(mutex_);
      if (local_end_ == LocalEnd::kFailed) {
        exit_code_ = 1;
        message_ = local_why_;
      }
    }
    digest_ =
        Fnv1a(s.params, s.num_params * sizeof(float), 1469598103934665603ULL);
    if (s.rank() == 0 || LogEnabled(LogLevel::kDebug)) {
      char line[160];
      std::snprintf(line, sizeof(line),
                    "dist: %lld parameter averages, %.2f ms each (%lld floats)",
                    static_cast<long long>(s.syncs),
                    s.syncs ? 1e3 * s.sync_seconds / s.syncs : 0.0,
                    static_cast<long long>(s.num_params));
      Log(LogLevel::kInfo, line);
    }
  } catch (const std::exception& e) {
    const std::string what = FirstLine(e.what());
    lost_host_ = true;
    const std::string missing = s.Missing(what);
    missing_ = missing.empty() ? 1
                               : 1 + static_cast<int>(std::count(
                                         missing.begin(), missing.end(), ','));
    // Its threads may wait in a collective until Gloo's own timeout: the
    // group is left to the process's end instead of joined.
    (void)s.group.release();
    GiveUp(1,
           me + ": " +
               (missing.empty() ? std::string("a host") : "rank " + missing) +
               " stopped answering (" + what + ")");
  }
}

}  // namespace asyncrl
