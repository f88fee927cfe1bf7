#include "asyncrl/experiments/metrics.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>

#include "asyncrl/misc/tensorboard.h"

namespace asyncrl {

MetricsChannel::MetricsChannel() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::runtime_error(std::string("metrics pipe: ") +
                             std::strerror(errno));
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  // The drop counter lives in a page the workers share with the parent
  // (made before fork), so the parent can report the total.
  void* page = mmap(nullptr, sizeof(std::atomic<int64_t>),
                    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    const std::string error = std::strerror(errno);
    close(read_fd_);
    close(write_fd_);
    throw std::runtime_error("metrics drop counter: " + error);
  }
  dropped_ = new (page) std::atomic<int64_t>(0);
  // Room for ~16k records between two drains; the default 64 KiB is ~1k.
  fcntl(write_fd_, F_SETPIPE_SZ, 1 << 20);
}

MetricsChannel::~MetricsChannel() {
  close(read_fd_);
  close(write_fd_);
  munmap(dropped_, sizeof(std::atomic<int64_t>));
}

bool MetricsChannel::Send(const char* tag, int64_t step, double value) {
  MetricRecord r;
  r.step = step;
  r.value = value;
  r.wall_time = WallTimeSeconds();
  std::strncpy(r.tag, tag, sizeof(r.tag) - 1);
  const ssize_t n = write(write_fd_, &r, sizeof(r));
  if (n != static_cast<ssize_t>(sizeof(r))) {
    dropped_->fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void MetricsChannel::Drain(const std::function<void(const MetricRecord&)>& fn) {
  MetricRecord records[64];
  while (true) {
    const ssize_t n = read(read_fd_, records, sizeof(records));
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return;  // EAGAIN: empty.
    }
    // Writes of one record are atomic, so reads return whole records.
    for (ssize_t i = 0; i < n / static_cast<ssize_t>(sizeof(MetricRecord));
         ++i) {
      fn(records[i]);
    }
  }
}

bool EpisodeMeans::Averaged(const char* tag) {
  return std::strcmp(tag, "train/episode_return") == 0 ||
         std::strcmp(tag, "train/episode_length") == 0;
}

void EpisodeMeans::Add(const MetricRecord& record) {
  Sum& s = sums_[record.tag];
  s.sum += record.value;
  ++s.count;
  s.step = std::max(s.step, record.step);
  s.wall_time = std::max(s.wall_time, record.wall_time);
}

void EpisodeMeans::Flush(const std::function<void(const std::string&, int64_t,
                                                  double, double)>& write) {
  for (const auto& [tag, s] : sums_) {
    if (s.count > 0) {
      write(tag, s.step, s.sum / static_cast<double>(s.count), s.wall_time);
    }
  }
  sums_.clear();
}

}  // namespace asyncrl
