// What each process of a run leaves in the run folder besides checkpoints
// and scores (the CPU profile, timers-<i>.json, statistics-<i>.tsv), and
// the end-of-run summary the parent prints from them.
#ifndef ASYNCRL_EXPERIMENTS_RUN_SUMMARY_H_
#define ASYNCRL_EXPERIMENTS_RUN_SUMMARY_H_

#include <filesystem>
#include <string>

#include "asyncrl/agents/agent.h"

namespace asyncrl {

// Profiles this process with gperftools for the scope's lifetime when
// `enabled`, into profile-<who>-<pid>.prof of `dir`; throws
// std::runtime_error when the profile cannot start.
class ProfileScope {
 public:
  ProfileScope(bool enabled, const std::filesystem::path& dir,
               const std::string& who);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  bool active_ = false;
};

// Clears this process's timer tree, and writes it to timers-<idx>.json of
// `dir` when the scope ends, also when it ends by an exception.
class TimerFileScope {
 public:
  TimerFileScope(const std::filesystem::path& dir, int idx);
  ~TimerFileScope();
  TimerFileScope(const TimerFileScope&) = delete;
  TimerFileScope& operator=(const TimerFileScope&) = delete;

 private:
  std::filesystem::path path_;
};

// The summary of every worker's timers-<i>.json, or "" if none is readable.
std::string TimerSummary(const std::filesystem::path& dir, int processes);

// Writes a worker's agent statistics (Agent::Statistics) at the end of its
// loop to statistics-<idx>.tsv of `dir`, "name<TAB>value" lines in the
// agent's order.
void WriteStatistics(const std::filesystem::path& dir, int idx,
                     const Agent& agent);

// Each statistic over the workers' statistics-<i>.tsv: the mean, and the
// maximum for names ending in "_max"; "" if none is readable.
std::string StatisticsSummary(const std::filesystem::path& dir, int processes);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_RUN_SUMMARY_H_
