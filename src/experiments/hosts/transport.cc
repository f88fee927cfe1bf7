#include "asyncrl/experiments/hosts/transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <glog/logging.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <system_error>

#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

// The master address resolved for sockets of `socktype`; null when it does
// not resolve. Owns the list.
struct MasterAddress {
  addrinfo* found = nullptr;
  MasterAddress(const DistOptions& options, int socktype) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = socktype;
    const std::string port = std::to_string(options.Port());
    if (getaddrinfo(options.Host().c_str(), port.c_str(), &hints, &found) !=
        0) {
      found = nullptr;
    }
  }
  ~MasterAddress() {
    if (found != nullptr) freeaddrinfo(found);
  }
  MasterAddress(const MasterAddress&) = delete;
  MasterAddress& operator=(const MasterAddress&) = delete;
};

// Whether a TCP connection to `a` is accepted within `ms` (a black-holed
// address would otherwise block connect() for the kernel's ~2 minutes).
bool ConnectsWithin(const addrinfo* a, int ms) {
  const int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  bool up = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
  if (!up && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int error = 0;
    socklen_t len = sizeof(error);
    up = poll(&p, 1, ms) == 1 &&
         getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0;
  }
  close(fd);
  return up;
}

// Waits until something listens at the master address; throws when the
// timeout passes first.
void AwaitListener(const DistOptions& options) {
  const MasterAddress master(options, SOCK_STREAM);
  if (master.found == nullptr) {
    throw std::runtime_error(options.ResolveError());
  }
  const auto deadline = HostClock::now() + Millis(options.timeout);
  while (!ConnectsWithin(master.found, 1000)) {
    if (HostClock::now() >= deadline) {
      throw std::runtime_error(
          "nothing listens at " + options.master_addr + " after " +
          FormatValue(options.timeout) +
          " s: rank 0 has not started, or its --master-addr names "
          "another port");
    }
    usleep(10000);
  }
}

// This machine's address on the route to the master (a UDP "connect"
// sends nothing; it only picks the route); "" when there is none.
std::string LocalAddressTowards(const addrinfo* master) {
  std::string local;
  const int fd = socket(master->ai_family, SOCK_DGRAM, 0);
  if (fd >= 0 && connect(fd, master->ai_addr, master->ai_addrlen) == 0) {
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
  return local;
}

}  // namespace

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

std::vector<uint8_t> Bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

std::string Text(const std::vector<uint8_t>& b) {
  return std::string(b.begin(), b.end());
}

std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

void PostNote(c10d::Store& store, const std::string& key,
              const std::string& text) {
  store.set(key, Bytes(text));
  if (!store.check({key})) {
    throw std::runtime_error("the store lost the note " + key + " just set");
  }
}

c10::intrusive_ptr<c10d::TCPStore> ConnectStore(const DistOptions& options,
                                                bool server) {
  if (!server) AwaitListener(options);
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(options.Port());
  o.isServer = server;
  o.waitWorkers = false;  // Workers' lease clients connect too.
  o.timeout = Millis(options.timeout);
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(options.Host(), o);
  } catch (const std::exception& e) {
    if (server && std::string(e.what()).find("Address already in use") !=
                      std::string::npos) {
      throw RendezvousRefused(
          "--master-addr=" + options.master_addr +
          " is invalid; accepted: a port free on rank 0's machine (port " +
          std::to_string(options.Port()) +
          " is in use here: another run's rank 0, or another program)");
    }
    throw;
  }
  // LibTorch 1.13's client sets its socket's receive timeout only in wait()
  // and get(): until then a request to a store that never answers (blocked
  // by a connection that stopped mid-request) waits forever. An empty
  // wait() sets it, and a store that serves answers it at once; a silent
  // one makes it throw c10d's "Socket Timeout" after the timeout.
  try {
    store->wait({}, o.timeout);
  } catch (const std::exception&) {
    // Destroying rank 0's store would join its thread, held by the
    // blocking connection: left to the process's end, like every store
    // (~HostGroup).
    (void)store.release();
    throw;
  }
  return store;
}

bool StoreWentSilent(const std::string& what) {
  // c10d's words when a store request got no reply within the timeout (a
  // connection that failed says otherwise).
  return what.find("Socket Timeout") != std::string::npos;
}

bool MasterAccepts(const DistOptions& options, double seconds) {
  const MasterAddress master(options, SOCK_STREAM);
  return master.found != nullptr &&
         ConnectsWithin(master.found, static_cast<int>(seconds * 1000));
}

std::string SilentStoreMessage(const DistOptions& options, bool own) {
  const std::string blockers =
      "a connection that stopped in the middle of a request blocks it (a "
      "host cut off mid-request, or a program that is not one of this "
      "run's hosts: LibTorch 1.13's TCPStore serves one request at a time "
      "and authenticates no client; docs/hosts.md)";
  if (own) {
    return "this host's store at " + options.master_addr +
           " did not answer its own request within " +
           FormatValue(options.timeout) + " s: " + blockers;
  }
  return "rank 0's store at " + options.master_addr +
         " accepts connections but did not answer within " +
         FormatValue(options.timeout) + " s: rank 0 is stopped, or " + blockers;
}

namespace {

std::terminate_handler previous_terminate = nullptr;

[[noreturn]] void ParkOrTerminate() {
  if (const std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::system_error& error) {
      const std::error_code code = error.code();
      const bool reset = code == std::errc::connection_reset ||
                         code == std::errc::broken_pipe ||
                         code == std::errc::connection_aborted;
      if (reset && gettid() != getpid()) {
        Log(LogLevel::kWarning,
            std::string("dist: a c10d thread stopped on a lost connection (") +
                error.what() +
                "); it is parked, and this host stops as the lost host or "
                "store is noticed");
        while (true) pause();
      }
    } catch (...) {
    }
  }
  if (previous_terminate != nullptr) previous_terminate();
  std::abort();
}

}  // namespace

void InitLibraryHandlers(bool verbose) {
  static std::once_flag once;
  std::call_once(once, [verbose] {
    previous_terminate = std::set_terminate(ParkOrTerminate);
    if (google::IsGoogleLoggingInitialized()) return;
    FLAGS_logtostderr = true;
    FLAGS_minloglevel = verbose ? google::GLOG_INFO : google::GLOG_FATAL;
    google::InitGoogleLogging("asyncrl");
  });
}

std::shared_ptr<::gloo::transport::Device> GlooDevice(
    const DistOptions& options) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME")) {
    if (*ifname != '\0') {
      return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
    }
  }
  std::string local;
  {
    const MasterAddress master(options, SOCK_DGRAM);
    if (master.found == nullptr) {
      throw std::runtime_error(options.ResolveError());
    }
    local = LocalAddressTowards(master.found);
  }
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

}  // namespace asyncrl
