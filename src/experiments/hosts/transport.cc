#include "asyncrl/experiments/hosts/transport.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "asyncrl/misc/logging.h"

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

// Waits until something listens at the master address (or the timeout
// passes).
void AwaitListener(const DistOptions& options) {
  const MasterAddress master(options, SOCK_STREAM);
  if (master.found == nullptr) return;  // TCPStore reports it.
  const addrinfo* a = master.found;
  const auto deadline = HostClock::now() + Millis(options.timeout);
  while (HostClock::now() < deadline) {
    const int fd = socket(a->ai_family, SOCK_STREAM, 0);
    if (fd < 0) break;
    const bool up = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    close(fd);
    if (up) break;
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
      throw std::runtime_error("cannot resolve the master address " +
                               options.Host());
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
