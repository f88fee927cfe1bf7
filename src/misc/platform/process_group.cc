#include "asyncrl/misc/platform/process_group.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>

#include "asyncrl/misc/platform/futex.h"

namespace asyncrl {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxMessage = 4000;

[[noreturn]] void RunChild(int idx, pid_t parent, const sigset_t& old_mask,
                           int message_fd, const std::function<void(int)>& fn) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);  // The parent died before prctl.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_DFL);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  int code = 0;
  std::string message;
  try {
    fn(idx);
  } catch (const std::exception& e) {
    message = e.what();
    code = 1;
  } catch (...) {
    message = "unknown exception (not derived from std::exception)";
    code = 1;
  }
  if (!message.empty()) {
    if (message.size() > kMaxMessage) message.resize(kMaxMessage);
    // The pipe holds at least 4 KiB, so this never blocks.
    ssize_t ignored = write(message_fd, message.data(), message.size());
    (void)ignored;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[1024];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  return out;
}

}  // namespace

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return "signal " + std::to_string(signal);
  return std::string("SIG") + abbrev;
}

bool WorkerEnd::Failed() const {
  if (stalled) return true;
  if (signaled) return !killed_by_group;
  return exit_code != 0;
}

std::string WorkerEnd::Describe() const {
  std::string s = "worker " + std::to_string(process_idx) + " (pid " +
                  std::to_string(pid) + ")";
  if (stalled) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.1f",
                  static_cast<double>(stalled_for.count()) / 1000.0);
    s += std::string(" made no progress for ") + seconds +
         " s after the work was done and was killed by the trainer "
         "(SIGKILL)";
  } else if (signaled) {
    s += killed_by_group ? " was killed by the trainer ("
                         : " was killed by signal ";
    s += SignalName(signal);
    if (killed_by_group) s += ")";
  } else {
    s += " exited with status " + std::to_string(exit_code);
  }
  if (!message.empty()) s += ": " + message;
  return s;
}

ProgressWatch::ProgressWatch(int num_workers, Clock::time_point start)
    : counts_(num_workers, 0), changed_(num_workers, start) {}

void ProgressWatch::Observe(int i, int64_t count, Clock::time_point now) {
  if (count != counts_.at(i)) {
    counts_[i] = count;
    changed_[i] = now;
  }
}

ProgressWatch::Clock::duration ProgressWatch::Idle(
    int i, Clock::time_point now, Clock::time_point since) const {
  const Clock::time_point from = std::max(changed_.at(i), since);
  return now > from ? now - from : Clock::duration(0);
}

namespace {

// One counter per worker, each on a cache line of its own, in memory the
// workers share with the parent.
struct alignas(64) ProgressSlot {
  std::atomic<int64_t> count{0};
};
static_assert(std::atomic<int64_t>::is_always_lock_free,
              "progress counters are shared across processes");

// This process's slot, set in a worker right after fork.
ProgressSlot* g_progress_slot = nullptr;

// The parent's side of a running group: forks, reaps, watches progress,
// escalates a stop. RunProcessGroup is its phases in order.
class Supervisor {
 public:
  explicit Supervisor(const ProcessGroupOptions& options)
      : options_(options),
        n_(options.num_workers),
        alive_(n_, false),
        warned_(n_, false),
        message_fds_(n_, -1),
        watch_(n_, Clock::now()) {
    report_.workers.resize(n_);
    void* slots =
        mmap(nullptr, sizeof(ProgressSlot) * n_, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (slots == MAP_FAILED) {
      throw std::runtime_error(
          std::string("RunProcessGroup: cannot map the progress counters: ") +
          std::strerror(errno));
    }
    slots_ = static_cast<ProgressSlot*>(slots);
    std::uninitialized_default_construct_n(slots_, n_);
  }
  ~Supervisor() {
    // Left by an exception (a callback threw): no worker outlives the
    // group, and the caller's signal mask comes back.
    if (blocked_ && !finished_) {
      for (int i = 0; i < n_; ++i) {
        if (!alive_[i]) continue;
        kill(report_.workers[i].pid, SIGKILL);
        waitpid(report_.workers[i].pid, nullptr, 0);
      }
      pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
    }
    for (int fd : message_fds_) {
      if (fd >= 0) close(fd);
    }
    munmap(slots_, sizeof(ProgressSlot) * n_);
  }
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Blocks SIGCHLD, SIGINT and SIGTERM (taken with sigtimedwait).
  void BlockSignals() {
    sigemptyset(&watched_);
    sigaddset(&watched_, SIGCHLD);
    sigaddset(&watched_, SIGINT);
    sigaddset(&watched_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &watched_, &old_mask_);
    blocked_ = true;
  }

  void ForkAll(const std::function<void(int)>& fn) {
    const pid_t parent = getpid();
    std::fflush(stdout);
    std::fflush(stderr);
    for (int i = 0; i < n_; ++i) {
      int fds[2];
      if (pipe2(fds, O_CLOEXEC) != 0) {
        const std::string err = std::strerror(errno);
        AbandonStart(i);
        throw std::runtime_error("RunProcessGroup: pipe failed: " + err);
      }
      const pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        for (int j = 0; j < i; ++j) close(message_fds_[j]);
        g_progress_slot = &slots_[i];
        RunChild(i, parent, old_mask_, fds[1], fn);
      }
      close(fds[1]);
      if (pid < 0) {
        close(fds[0]);
        const std::string err = std::strerror(errno);
        AbandonStart(i);
        throw std::runtime_error("RunProcessGroup: fork of worker " +
                                 std::to_string(i) + " failed: " + err);
      }
      message_fds_[i] = fds[0];
      report_.workers[i].process_idx = i;
      report_.workers[i].pid = pid;
      alive_[i] = true;
      ++num_alive_;
    }
    if (options_.on_started) {
      std::vector<pid_t> pids;
      for (const auto& w : report_.workers) pids.push_back(w.pid);
      options_.on_started(pids);
    }
  }

  // Until every worker has ended: reap, watch, wait for the next event.
  void Supervise() {
    next_tick_ = Clock::now() + options_.tick_interval;
    while (true) {
      ReapEnded();
      if (num_alive_ == 0) break;
      // Raised from outside the group (the parent's other threads): the
      // same grace, then SIGKILL, for workers that cannot see it (blocked
      // in I/O).
      if (!stopping_ && options_.stop_flag != nullptr &&
          options_.stop_flag->load() != 0) {
        BeginStop();
      }
      const auto now = Clock::now();
      WatchProgress(now);
      if (stopping_ && now >= deadline_) {
        KillAlive();
        deadline_ = now + std::chrono::hours(1);  // SIGKILL needs no grace.
      }
      WaitForEvent(now);
      if (Clock::now() >= next_tick_) {
        if (options_.on_tick) options_.on_tick();
        if (!work_done_ && options_.work_done && options_.work_done()) {
          work_done_ = true;
          work_done_at_ = Clock::now();
        }
        next_tick_ = Clock::now() + options_.tick_interval;
      }
    }
  }

  GroupReport Finish() {
    finished_ = true;
    sigset_t restore = old_mask_;
    if (options_.keep_stop_signals_blocked) {
      sigaddset(&restore, SIGINT);
      sigaddset(&restore, SIGTERM);
    }
    pthread_sigmask(SIG_SETMASK, &restore, nullptr);
    return std::move(report_);
  }

 private:
  using Clock = std::chrono::steady_clock;

  void BeginStop() {
    if (stopping_) return;
    stopping_ = true;
    if (options_.stop_flag != nullptr) StoreAndWakeAll(*options_.stop_flag, 1);
    deadline_ = Clock::now() + options_.grace;
  }

  void KillAlive() {
    for (int i = 0; i < n_; ++i) {
      if (alive_[i] && kill(report_.workers[i].pid, SIGKILL) == 0) {
        report_.workers[i].killed_by_group = true;
      }
    }
  }

  // Forking worker i failed: stop and reap the ones already running.
  void AbandonStart(int i) {
    BeginStop();
    KillAlive();
    for (int j = 0; j < i; ++j) {
      waitpid(report_.workers[j].pid, nullptr, 0);
      alive_[j] = false;
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
    finished_ = true;  // Nothing left for the destructor to undo.
  }

  void ReapEnded() {
    for (int i = 0; i < n_; ++i) {
      if (!alive_[i]) continue;
      int status = 0;
      const pid_t r = waitpid(report_.workers[i].pid, &status, WNOHANG);
      if (r != report_.workers[i].pid) continue;
      WorkerEnd& w = report_.workers[i];
      alive_[i] = false;
      --num_alive_;
      if (WIFSIGNALED(status)) {
        w.signaled = true;
        w.signal = WTERMSIG(status);
        if (w.signal != SIGKILL) {
          w.killed_by_group = false;
          w.stalled = false;
        }
      } else {
        w.exit_code = WEXITSTATUS(status);
        w.killed_by_group = false;
        w.stalled = false;
      }
      w.message = ReadAll(message_fds_[i]);
      close(message_fds_[i]);
      message_fds_[i] = -1;
      if (w.Failed()) {
        if (report_.first_failure < 0) report_.first_failure = i;
        BeginStop();
      }
    }
  }

  // Names a worker that has gone quiet; once the work is done, kills one
  // that stays quiet for finish_timeout.
  void WatchProgress(Clock::time_point now) {
    for (int i = 0; i < n_; ++i) {
      if (!alive_[i]) continue;
      watch_.Observe(i, slots_[i].count.load(std::memory_order_relaxed), now);
      const auto idle = watch_.Idle(i, now);
      if (idle == Clock::duration(0)) warned_[i] = false;
      if (options_.stall_warning.count() > 0 && !warned_[i] &&
          watch_.Started(i) && idle >= options_.stall_warning) {
        warned_[i] = true;
        if (options_.on_stall) {
          options_.on_stall(
              i, report_.workers[i].pid,
              std::chrono::duration_cast<std::chrono::milliseconds>(idle));
        }
      }
      WorkerEnd& w = report_.workers[i];
      if (!work_done_ || stopping_ || w.stalled) continue;
      const auto quiet = watch_.Idle(i, now, work_done_at_);
      if (quiet >= options_.finish_timeout && kill(w.pid, SIGKILL) == 0) {
        w.killed_by_group = true;
        w.stalled = true;
        w.stalled_for = std::chrono::duration_cast<std::chrono::milliseconds>(
            watch_.Idle(i, now));
      }
    }
  }

  // Sleeps until the next tick, the stop deadline, a child's end or a stop
  // signal; a signal starts the stop (a second one kills at once).
  void WaitForEvent(Clock::time_point now) {
    auto wake = next_tick_;
    if (stopping_ && deadline_ < wake) wake = deadline_;
    const auto wait = std::max<Clock::duration>(wake - now, Clock::duration(0));
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
    timespec timeout{static_cast<time_t>(ns / 1000000000),
                     static_cast<long>(ns % 1000000000)};
    siginfo_t info;
    const int sig = sigtimedwait(&watched_, &info, &timeout);
    if (sig != SIGINT && sig != SIGTERM) return;
    if (report_.stop_signal != 0) {
      KillAlive();  // A second request: stop at once.
      return;
    }
    report_.stop_signal = sig;
    BeginStop();
    if (options_.on_stop_signal) options_.on_stop_signal(sig);
  }

  const ProcessGroupOptions& options_;
  const int n_;
  GroupReport report_;
  std::vector<bool> alive_;
  std::vector<bool> warned_;
  std::vector<int> message_fds_;
  int num_alive_ = 0;
  ProgressSlot* slots_ = nullptr;
  ProgressWatch watch_;
  sigset_t watched_;
  sigset_t old_mask_;
  bool stopping_ = false;
  Clock::time_point deadline_;
  Clock::time_point next_tick_;
  bool work_done_ = false;
  Clock::time_point work_done_at_;
  bool blocked_ = false;
  bool finished_ = false;
};

}  // namespace

void ReportWorkerProgress() {
  if (g_progress_slot == nullptr) return;
  auto& count = g_progress_slot->count;
  count.store(count.load(std::memory_order_relaxed) + 1,
              std::memory_order_relaxed);
}

GroupReport RunProcessGroup(const ProcessGroupOptions& options,
                            const std::function<void(int)>& fn) {
  if (options.num_workers <= 0) {
    throw std::invalid_argument(
        "RunProcessGroup: num_workers=" + std::to_string(options.num_workers) +
        " must be positive");
  }
  Supervisor supervisor(options);
  supervisor.BlockSignals();
  supervisor.ForkAll(fn);
  supervisor.Supervise();
  return supervisor.Finish();
}

void ReleaseStopSignals(const sigset_t& before) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  const timespec zero{0, 0};
  // Each call takes one pending signal; there are at most two kinds.
  for (int i = 0; i < 2 && sigtimedwait(&stop, nullptr, &zero) > 0; ++i) {
  }
  sigset_t unblock;
  sigemptyset(&unblock);
  for (int sig : {SIGINT, SIGTERM}) {
    if (sigismember(&before, sig) == 0) sigaddset(&unblock, sig);
  }
  pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
}

}  // namespace asyncrl
