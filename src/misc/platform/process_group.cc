#include "asyncrl/misc/platform/process_group.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
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
  if (signaled) return !killed_by_group;
  return exit_code != 0;
}

std::string WorkerEnd::Describe() const {
  std::string s = "worker " + std::to_string(process_idx) + " (pid " +
                  std::to_string(pid) + ")";
  if (signaled) {
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

GroupReport RunProcessGroup(const ProcessGroupOptions& options,
                            const std::function<void(int)>& fn) {
  if (options.num_workers <= 0) {
    throw std::invalid_argument(
        "RunProcessGroup: num_workers=" + std::to_string(options.num_workers) +
        " must be positive");
  }
  const int n = options.num_workers;
  sigset_t watched;
  sigset_t old_mask;
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, SIGINT);
  sigaddset(&watched, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &watched, &old_mask);

  GroupReport report;
  report.workers.resize(n);
  std::vector<int> message_fds(n, -1);
  std::vector<bool> alive(n, false);
  const pid_t parent = getpid();
  std::fflush(stdout);
  std::fflush(stderr);

  bool stopping = false;
  Clock::time_point deadline;
  auto begin_stop = [&] {
    if (stopping) return;
    stopping = true;
    if (options.stop_flag != nullptr) StoreAndWakeAll(*options.stop_flag, 1);
    deadline = Clock::now() + options.grace;
  };
  auto kill_alive = [&] {
    for (int i = 0; i < n; ++i) {
      if (alive[i] && kill(report.workers[i].pid, SIGKILL) == 0) {
        report.workers[i].killed_by_group = true;
      }
    }
  };

  int num_alive = 0;
  for (int i = 0; i < n; ++i) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      begin_stop();
      kill_alive();
      throw std::runtime_error(std::string("RunProcessGroup: pipe failed: ") +
                               std::strerror(errno));
    }
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      for (int j = 0; j < i; ++j) close(message_fds[j]);
      RunChild(i, parent, old_mask, fds[1], fn);
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      const std::string err = std::strerror(errno);
      begin_stop();
      kill_alive();
      for (int j = 0; j < i; ++j) waitpid(report.workers[j].pid, nullptr, 0);
      pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
      throw std::runtime_error("RunProcessGroup: fork of worker " +
                               std::to_string(i) + " failed: " + err);
    }
    message_fds[i] = fds[0];
    report.workers[i].process_idx = i;
    report.workers[i].pid = pid;
    alive[i] = true;
    ++num_alive;
  }

  if (options.on_started) {
    std::vector<pid_t> pids;
    for (const auto& w : report.workers) pids.push_back(w.pid);
    options.on_started(pids);
  }
  Clock::time_point next_tick = Clock::now() + options.tick_interval;
  while (num_alive > 0) {
    for (int i = 0; i < n; ++i) {
      if (!alive[i]) continue;
      int status = 0;
      const pid_t r = waitpid(report.workers[i].pid, &status, WNOHANG);
      if (r != report.workers[i].pid) continue;
      WorkerEnd& w = report.workers[i];
      alive[i] = false;
      --num_alive;
      if (WIFSIGNALED(status)) {
        w.signaled = true;
        w.signal = WTERMSIG(status);
        if (w.signal != SIGKILL) w.killed_by_group = false;
      } else {
        w.exit_code = WEXITSTATUS(status);
        w.killed_by_group = false;
      }
      w.message = ReadAll(message_fds[i]);
      close(message_fds[i]);
      message_fds[i] = -1;
      if (w.Failed()) {
        if (report.first_failure < 0) report.first_failure = i;
        begin_stop();
      }
    }
    if (num_alive == 0) break;
    // Raised from outside the group (the parent's other threads): the same
    // grace, then SIGKILL, for workers that cannot see it (blocked in I/O).
    if (!stopping && options.stop_flag != nullptr &&
        options.stop_flag->load() != 0) {
      begin_stop();
    }
    const auto now = Clock::now();
    if (stopping && now >= deadline) {
      kill_alive();
      deadline = now + std::chrono::hours(1);  // SIGKILL needs no grace.
    }
    auto wake = next_tick;
    if (stopping && deadline < wake) wake = deadline;
    const auto wait = std::max<Clock::duration>(wake - now, Clock::duration(0));
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
    timespec timeout{static_cast<time_t>(ns / 1000000000),
                     static_cast<long>(ns % 1000000000)};
    siginfo_t info;
    const int sig = sigtimedwait(&watched, &info, &timeout);
    if (sig == SIGINT || sig == SIGTERM) {
      if (report.stop_signal != 0) {
        kill_alive();  // A second request: stop at once.
      } else {
        report.stop_signal = sig;
        begin_stop();
        if (options.on_stop_signal) options.on_stop_signal(sig);
      }
    }
    if (Clock::now() >= next_tick) {
      if (options.on_tick) options.on_tick();
      next_tick = Clock::now() + options.tick_interval;
    }
  }
  sigset_t restore = old_mask;
  if (options.keep_stop_signals_blocked) {
    sigaddset(&restore, SIGINT);
    sigaddset(&restore, SIGTERM);
  }
  pthread_sigmask(SIG_SETMASK, &restore, nullptr);
  return report;
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
