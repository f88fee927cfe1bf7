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

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
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

// Kernels before 4.20 lack PACKET_IGNORE_OUTGOING: the frames this relay
// sends come back on the sending socket and are skipped by their type.
bool g_skip_outgoing_by_type = false;

// A raw socket on `name` that sees every frame arriving there (not those it
// sends) and writes frames out of it, with buffers of a few MiB so that a
// relay kept off the CPU for a while does not drop frames.
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
    if (errno != ENOPROTOOPT) Fail("PACKET_IGNORE_OUTGOING");
    g_skip_outgoing_by_type = true;
  }
  const int bytes = 4 << 20;
  for (const int option : {SO_RCVBUFFORCE, SO_SNDBUFFORCE}) {
    if (setsockopt(fd, SOL_SOCKET, option, &bytes, sizeof(bytes)) != 0) {
      Fail("socket buffers");
    }
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
        // A frame the interface refuses is dropped, as a wire drops it; an
        // interface that is gone ends the relay.
        if (send(fds[i], f.bytes.data(), f.bytes.size(), 0) < 0 &&
            (errno == ENETDOWN || errno == ENXIO || errno == ENODEV ||
             errno == EBADF)) {
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
    for (int i = 0; i < 2; ++i) {
      if ((polled[i].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) {
        int error = 0;
        socklen_t size = sizeof(error);
        getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &error, &size);
        errno = error;
        Fail(std::string("interface ") + argv[1 + i]);
      }
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
      // What arrived on interface i leaves by the other one; at most 64
      // frames a turn, so that the other direction and what is due are
      // served in between.
      for (int frames = 0; frames < 64; ++frames) {
        sockaddr_ll from{};
        socklen_t from_size = sizeof(from);
        // MSG_TRUNC: the frame's whole length, to drop one the buffer
        // could not hold rather than pass it cut.
        const ssize_t n =
            recvfrom(fds[i], buffer.data(), buffer.size(), MSG_TRUNC,
                     reinterpret_cast<sockaddr*>(&from), &from_size);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
          Fail(std::string("recv on ") + argv[1 + i]);
        }
        if (stalled || static_cast<size_t>(n) > buffer.size()) continue;
        if (g_skip_outgoing_by_type && from.sll_pkttype == PACKET_OUTGOING) {
          continue;
        }
        queued[1 - i].push_back(
            {Clock::now() + delay,
             std::vector<char>(buffer.begin(), buffer.begin() + n)});
      }
    }
  }
}
