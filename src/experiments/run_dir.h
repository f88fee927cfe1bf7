// Run folders: every training run writes into a new folder under the output
// directory, named by the time it started; files in it are replaced
// atomically (temporary file, then rename), so none is ever half-written.
// Every file and directory name of a run folder is built here, and only
// here (as LevelDB's db/filename.h does for a database).
#ifndef ASYNCRL_EXPERIMENTS_RUN_DIR_H_
#define ASYNCRL_EXPERIMENTS_RUN_DIR_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

namespace asyncrl {

// Creates `outdir` (and its parents) if needed, then a new folder in it named
// by the current local time (`20261130T031725.123456`, with `-1`, `-2`...
// if that name exists); never reuses an existing folder. Throws
// std::invalid_argument "--outdir=<outdir> is invalid; accepted: ..." when
// either cannot be created.
std::filesystem::path MakeRunDir(const std::string& outdir);

// Writes `text` to `path` through `<path>.tmp` and a rename: readers see
// the old or the new content, never a part. Throws std::runtime_error naming
// the file on a write error (the old file stays as it was).
void WriteFileAtomically(const std::filesystem::path& path,
                         const std::string& text);
// The same without throwing (destructors, best-effort files): "" when
// written, else what went wrong; the temporary file never stays.
std::string TryWriteFileAtomically(const std::filesystem::path& path,
                                   const std::string& text);

// `s` quoted for a POSIX shell when it needs quoting (command.txt).
std::string ShellQuote(const std::string& s);

// Holds <dir>/.lock with flock(2) for the life of a run, so that two
// trainers never write into one run folder (two --resume of one checkpoint
// at once interleaved their rows and checkpoints). The lock goes with the
// open file, which the workers inherit: it is held while any process of
// the run lives, and a crashed run leaves the file but no lock.
class RunLock {
 public:
  // Throws RunLocked when another process holds it, std::runtime_error when
  // the file cannot be opened.
  explicit RunLock(const std::filesystem::path& dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

// A run folder's top-level files as a run found them, so that a run refused
// before it trained (TrainResult::refused: the hosts' options differ) can
// leave the folder as it was: Restore() removes a folder that was new,
// else the files added since and rewrites the changed and removed ones (up
// to 16 MiB each; a larger one that changed is named in Restore's result).
class RunFolderSnapshot {
 public:
  // `existed`: false for a folder this run creates (Restore removes it).
  RunFolderSnapshot(std::filesystem::path dir, bool existed);
  // Returns "" or what could not be restored, as one line.
  std::string Restore() const;

 private:
  struct File {
    std::uintmax_t size = 0;
    std::filesystem::file_time_type mtime;
    bool saved = false;
    std::string content;
  };
  std::filesystem::path dir_;
  bool existed_;
  std::map<std::string, File> files_;
};

// What() names the folder and the pid of the trainer that holds it.
class RunLocked : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The names in a run folder `dir` (docs/training.md).
std::string ArgsPath(const std::string& dir);       // args.json
std::string CommandPath(const std::string& dir);    // command.txt
std::string LockPath(const std::string& dir);       // .lock
std::string ScoresPath(const std::string& dir);     // scores.txt
std::string ScoresSvgPath(const std::string& dir);  // scores.svg
std::string BestDir(const std::string& dir);        // best/
std::string SuccessfulDir(const std::string& dir);  // successful/
// <steps>_finish/: the agent when the step budget `steps` is spent.
std::string FinishDir(const std::string& dir, int64_t steps);
// <step>_except/: saved by the parent on a failure or a stop signal.
std::string ExceptDir(const std::string& dir, int64_t step);
// <step>_checkpoint/: periodic checkpoints.
std::string CheckpointDir(const std::string& dir, int64_t step);
// timers-<idx>.json and statistics-<idx>.tsv: worker idx's.
std::string TimersPath(const std::string& dir, int idx);
std::string StatisticsPath(const std::string& dir, int idx);
// profile-<who>-<pid>.prof: a CPU profile (who: a worker index or
// "parent").
std::string ProfilePath(const std::string& dir, const std::string& who,
                        int64_t pid);

// Removes all but the newest `keep` <t>_checkpoint/ directories of `dir`
// (by t). Callers serialise through the run's mutex.
void PruneCheckpoints(const std::string& dir, int keep);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_RUN_DIR_H_
