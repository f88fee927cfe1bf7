// A group of forked worker processes watched by the parent. If one fails
// (non-zero exit or a signal) or the parent gets SIGINT/SIGTERM, the parent
// raises a shared stop flag, gives the others a grace period to finish, then
// kills them; it returns a report of how every worker ended. Workers report
// progress (ReportWorkerProgress); one that makes none for long is named,
// and once the group's work is done one that makes none for a while is
// killed and counts as failed (a stopped or hung process would otherwise
// hold the run for ever).
#ifndef ASYNCRL_MISC_PLATFORM_PROCESS_GROUP_H_
#define ASYNCRL_MISC_PLATFORM_PROCESS_GROUP_H_

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace asyncrl {

// How one worker ended.
struct WorkerEnd {
  int process_idx = 0;
  pid_t pid = 0;
  bool signaled = false;         // Ended by a signal (else exited).
  int exit_code = 0;             // When exited.
  int signal = 0;                // When signaled.
  bool killed_by_group = false;  // SIGKILLed by the parent after the grace.
  // Killed because it made no progress for `stalled_for` after the work
  // was done (ProcessGroupOptions::work_done): a failure.
  bool stalled = false;
  std::chrono::milliseconds stalled_for{0};
  std::string message;  // What the worker's function threw, if any.

  // A failure is a non-zero exit, a signal the group did not send, or a
  // stall after the work was done.
  bool Failed() const;
  // "worker 3 (pid 1234) was killed by signal SIGSEGV" and the like.
  std::string Describe() const;
};

struct GroupReport {
  std::vector<WorkerEnd> workers;  // Indexed by process_idx.
  int stop_signal = 0;             // SIGINT/SIGTERM received by the parent.
  int first_failure = -1;          // process_idx of the first failed worker.
  bool Ok() const { return first_failure < 0 && stop_signal == 0; }
};

struct ProcessGroupOptions {
  int num_workers = 1;
  // Raised (set to 1) when the group stops; workers poll it. May be null.
  // Must live in memory shared with the workers. Raised by someone else
  // (another thread of the parent), it stops the group the same way: the
  // workers get `grace` to return, then SIGKILL.
  std::atomic<int32_t>* stop_flag = nullptr;
  // How long workers get to stop by themselves before SIGKILL.
  std::chrono::milliseconds grace{3000};
  // Called in the parent when the first SIGINT/SIGTERM arrives.
  std::function<void(int signal)> on_stop_signal;
  // Called in the parent once every worker is forked, with their pids.
  std::function<void(const std::vector<pid_t>& pids)> on_started;
  // Called in the parent about every `tick_interval` while workers run.
  std::function<void()> on_tick;
  std::chrono::milliseconds tick_interval{1000};
  // Whether the workers' work is done (e.g. the step budget is spent),
  // asked every tick; null: never. From the first true on, a worker that
  // makes no progress (ReportWorkerProgress) for `finish_timeout` is
  // killed and reported as stalled: a failure, which stops the others as
  // any failure does. Until then the others go on (a worker may still
  // evaluate or save). Not while the group is already stopping.
  std::function<bool()> work_done;
  std::chrono::milliseconds finish_timeout{60000};
  // A worker that has made progress and then makes none for this long is
  // passed to on_stall, once until it makes progress again (0: never).
  std::chrono::milliseconds stall_warning{0};
  std::function<void(int process_idx, pid_t pid,
                     std::chrono::milliseconds idle)>
      on_stall;
  // On return, keep SIGINT and SIGTERM blocked in the parent (their other
  // state restored), so that a late signal (a second Ctrl-C just as the
  // workers end) cannot kill the parent while it saves what the stop needs.
  // The caller then calls ReleaseStopSignals().
  bool keep_stop_signals_blocked = false;
};

// Forks `num_workers` processes running fn(process_idx) and waits for all.
// In a worker, an exception from fn is sent to the parent as the worker's
// message and the worker exits with status 1; returning exits with 0. Workers
// ignore SIGINT (the parent coordinates the stop), die with the parent
// (PR_SET_PDEATHSIG) and end with _exit, so they run no atexit handlers.
// A second SIGINT/SIGTERM during the grace period kills the workers at once.
// Must be called from a single-threaded parent.
GroupReport RunProcessGroup(const ProcessGroupOptions& options,
                            const std::function<void(int)>& fn);

// In a worker of RunProcessGroup: one unit of progress (a step, an
// evaluation step) that the parent watches; a relaxed store to the
// worker's own cache line. Does nothing outside a worker.
void ReportWorkerProgress();

// How long each worker has gone without progress, from the counts the
// parent reads. Pure bookkeeping over given times (testable without
// processes).
class ProgressWatch {
 public:
  using Clock = std::chrono::steady_clock;
  ProgressWatch(int num_workers, Clock::time_point start);
  // Records worker i's count at `now`.
  void Observe(int i, int64_t count, Clock::time_point now);
  // Whether worker i has made any progress yet.
  bool Started(int i) const { return counts_.at(i) > 0; }
  // Time since worker i's count last changed (since `start` if never),
  // but not before `since`.
  Clock::duration Idle(
      int i, Clock::time_point now,
      Clock::time_point since = Clock::time_point::min()) const;

 private:
  std::vector<int64_t> counts_;
  std::vector<Clock::time_point> changed_;
};

// After RunProcessGroup with keep_stop_signals_blocked: discards SIGINT and
// SIGTERM that arrived since (the stop they ask for is already done) and
// unblocks them unless they were blocked before, as recorded in `before`
// (the mask when RunProcessGroup was called).
void ReleaseStopSignals(const sigset_t& before);

// "SIGSEGV" for SIGSEGV, "signal 77" for an unknown number.
std::string SignalName(int signal);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_PLATFORM_PROCESS_GROUP_H_
