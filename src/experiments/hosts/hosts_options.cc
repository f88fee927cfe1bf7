#include "asyncrl/experiments/hosts/hosts_options.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <set>

#include "asyncrl/misc/seeding.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

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

}  // namespace

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

std::string DistOptions::ResolveError() const {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int error = getaddrinfo(Host().c_str(), std::to_string(Port()).c_str(),
                                &hints, &found);
  if (error == 0) {
    freeaddrinfo(found);
    return "";
  }
  return "cannot resolve the master address " + Host() + " (" +
         gai_strerror(error) + ")";
}

void DistOptions::CheckResolves() const {
  if (!Enabled()) return;
  const std::string why = ResolveError();
  Require(why.empty(), "master_addr", master_addr,
          "HOST:PORT whose host resolves here (" + why + ")");
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

void DistOptions::ValidateWith(const TrainOptions& train) const {
  // Every environment gets its own seed below kMaxSeed (misc/seeding.h);
  // each host derives its own (ForThisHost).
  const int64_t streams = int64_t{train.processes} * train.envs_per_process;
  Require(train.seed <= ((kMaxSeed - streams) / streams - nnodes + 1) / nnodes,
          "seed", train.seed,
          "(seed * nnodes + nnodes) * processes * envs_per_process < " +
              std::to_string(kMaxSeed));
}

TrainOptions ForThisHost(const TrainOptions& train, const DistOptions& dist) {
  TrainOptions out = train;
  if (!dist.Enabled()) return out;
  out.seed = train.seed * dist.nnodes + dist.node_rank;
  if (dist.node_rank != 0) {
    out.eval_interval = 0;
    out.checkpoint_interval = 0;
    out.successful_score.reset();
  }
  return out;
}

std::string Fingerprint(const std::map<std::string, std::string>& config,
                        int64_t num_params, int64_t num_optimizer,
                        const std::vector<int64_t>& statistics) {
  std::string out;
  for (const auto& [key, value] : config) {
    if (IsHostLocalOption(key)) continue;
    out += key + '\0' + value + '\0';
  }
  out += std::string("(parameters)") + '\0' + std::to_string(num_params) +
         '\0' + "(optimizer statistics)" + '\0' +
         std::to_string(num_optimizer) + '\0';
  // Only where there are some: hosts of a version before the statistics
  // were combined still meet a run without them.
  std::string sizes;
  for (const int64_t n : statistics) {
    sizes += (sizes.empty() ? "" : ",") + std::to_string(n);
  }
  if (!sizes.empty()) {
    out += std::string("(running statistics)") + '\0' + sizes + '\0';
  }
  return out;
}

std::string Difference(const std::string& here, const std::string& rank0) {
  const auto a = Unpack(here);
  const auto b = Unpack(rank0);
  std::set<std::string> keys;
  for (const auto& kv : a) keys.insert(kv.first);
  for (const auto& kv : b) keys.insert(kv.first);
  // The options first, then what follows from them ("(parameters)" ...):
  // a differing flag is named rather than the sizes it changes.
  std::vector<std::string> ordered;
  for (const auto& key : keys) {
    if (key[0] != '(') ordered.push_back(key);
  }
  for (const auto& key : keys) {
    if (key[0] == '(') ordered.push_back(key);
  }
  for (const auto& key : ordered) {
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

}  // namespace asyncrl
