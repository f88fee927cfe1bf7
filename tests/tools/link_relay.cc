// asyncrl_link_relay: an imperfect network link for the host tests and the
// network measurements, in user space, since the kernels the tests run on
// may lack netem.
//
//   asyncrl_link_relay IFACE_A IFACE_B DELAY_MS MAX_SECONDS
//
// Run inside a network namespace holding two interfaces (one end of a veth
// pair each, no addresses), it passes every Ethernet frame that arrives on
// one interface out of the other DELAY_MS milliseconds later, in order: the
// two namespaces on the far ends see one wire with that one-way latency.
// SIGUSR1 stalls the wire (every frame is dropped, as a link that stops
// answering without closing anything), SIGUSR2 restores it. It prints
// "relay: ready" once both interfaces are open, "relay: stalled" and
// "relay: restored" as the signals take effect, and exits 0 after
// MAX_SECONDS (a bound: the tests kill it sooner), 2 on bad arguments, 1 on
// a system error. Frames are read and written with their virtio-net header
// (PACKET_VNET_HDR), so segmentation-offloaded TCP passes whole.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "asyncrl_link_relay: %s: %s\n", what.c_str(),
               std::strerror(errno));
  std::exit(1);
}

// A raw socket on `name` that sees every frame arriving there (not those it
// sends) and writes frames out of it.
int OpenInterface(const char* name) {
  const unsigned index = if_nametoindex(name);
  if (index == 0) Fail(std::string("interface ") + name);
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        htons(ETH_P_ALL));
  if (fd < 0) Fail("socket(AF_PACKET)");
  const int one = 1;
  if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) != 0) {
    Fail("PACKET_VNET_HDR");
  }
  if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) !=
      0) {
    Fail("PACKET_IGNORE_OUTGOING");
  }
  sockaddr_ll at{};
  at.sll_family = AF_PACKET;
  at.sll_protocol = htons(ETH_P_ALL);
  at.sll_ifindex = static_cast<int>(index);
  if (bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0) {
    Fail(std::string("bind to ") + name);
  }
  packet_mreq promisc{};
  promisc.mr_ifindex = static_cast<int>(index);
  promisc.mr_type = PACKET_MR_PROMISC;
  if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &promisc,
                 sizeof(promisc)) != 0) {
    Fail(std::string("promiscuous mode on ") + name);
  }
  return fd;
}

struct Frame {
  Clock::time_point due;
  std::vector<char> bytes;  // virtio-net header, then the Ethernet frame.
};

bool ParseNonNegative(const char* text, long max, long* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < 0 || v > max) {
    return false;
  }
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  long delay_ms = 0, max_seconds = 0;
  if (argc != 5 || !ParseNonNegative(argv[3], 10000, &delay_ms) ||
      !ParseNonNegative(argv[4], 86400, &max_seconds)) {
    std::fprintf(stderr,
                 "usage: asyncrl_link_relay IFACE_A IFACE_B DELAY_MS "
                 "MAX_SECONDS (DELAY_MS 0..10000, MAX_SECONDS 0..86400)\n");
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGUSR2);
  if (sigprocmask(SIG_BLOCK, &signals, nullptr) != 0) Fail("sigprocmask");
  const int sfd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) Fail("signalfd");
  const int fds[2] = {OpenInterface(argv[1]), OpenInterface(argv[2])};
  std::printf("relay: ready\n");
  std::fflush(stdout);

  const auto delay = std::chrono::milliseconds(delay_ms);
  const Clock::time_point end =
      Clock::now() + std::chrono::seconds(max_seconds);
  std::deque<Frame> queued[2];  // queued[i]: frames to send out of fds[i].
  bool stalled = false;
  // The virtio-net header (struct virtio_net_hdr, 10 bytes; its header's
  // C++ does not compile) plus a 64 KiB offloaded segment and its headers.
  std::vector<char> buffer(10 + 65536 + 256);
  for (;;) {
    const Clock::time_point now = Clock::now();
    if (now >= end) return 0;
    // Send what is due, each direction in arrival order.
    for (int i = 0; i < 2; ++i) {
      while (!queued[i].empty() && queued[i].front().due <= now) {
        const Frame& f = queued[i].front();
        if (send(fds[i], f.bytes.data(), f.bytes.size(), 0) < 0 &&
            errno != EAGAIN && errno != ENOBUFS) {
          Fail(std::string("send on ") + argv[1 + i]);
        }
        queued[i].pop_front();
      }
    }
    Clock::time_point wake = end;
    for (const auto& q : queued) {
      if (!q.empty() && q.front().due < wake) wake = q.front().due;
    }
    const auto wait =
        std::chrono::ceil<std::chrono::milliseconds>(wake - Clock::now());
    pollfd polled[3] = {
        {fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}, {sfd, POLLIN, 0}};
    if (poll(polled, 3, static_cast<int>(std::max<int64_t>(wait.count(), 0))) <
            0 &&
        errno != EINTR) {
      Fail("poll");
    }
    if ((polled[2].revents & POLLIN) != 0) {
      signalfd_siginfo info{};
      while (read(sfd, &info, sizeof(info)) == sizeof(info)) {
        stalled = info.ssi_signo == SIGUSR1;
        if (stalled) {
          queued[0].clear();
          queued[1].clear();
        }
        std::printf("relay: %s\n", stalled ? "stalled" : "restored");
        std::fflush(stdout);
      }
    }
    for (int i = 0; i < 2; ++i) {
      if ((polled[i].revents & POLLIN) == 0) continue;
      // Drain what arrived on interface i; it leaves by the other one.
      for (;;) {
        const ssize_t n = recv(fds[i], buffer.data(), buffer.size(), 0);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
          Fail(std::string("recv on ") + argv[1 + i]);
        }
        if (stalled) continue;
        queued[1 - i].push_back(
            {Clock::now() + delay,
             std::vector<char>(buffer.begin(), buffer.begin() + n)});
      }
    }
  }
}
