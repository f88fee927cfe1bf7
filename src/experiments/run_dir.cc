#include "asyncrl/experiments/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <utility>
#include <vector>

namespace asyncrl {

namespace fs = std::filesystem;

std::string ShellQuote(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789-_=./:,+") == std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string TryWriteFileAtomically(const fs::path& path,
                                   const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  std::string error;
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush())
      error = "cannot write " + tmp.string() + ": " + std::strerror(errno);
  }
  std::error_code ec;
  if (error.empty()) {
    fs::rename(tmp, path, ec);
    if (!ec) return "";
    error = "cannot rename " + tmp.string() + " to " + path.string() + ": " +
            ec.message();
  }
  fs::remove(tmp, ec);
  return error;
}

void WriteFileAtomically(const fs::path& path, const std::string& text) {
  const std::string error = TryWriteFileAtomically(path, text);
  if (!error.empty()) throw std::runtime_error(error);
}

RunFolderSnapshot::RunFolderSnapshot(fs::path dir, bool existed)
    : dir_(std::move(dir)), existed_(existed) {
  if (!existed_) return;
  constexpr std::uintmax_t kSaveUpTo = 16u << 20;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (!e.is_regular_file(ec)) continue;
    File f;
    f.size = e.file_size(ec);
    f.mtime = e.last_write_time(ec);
    if (f.size <= kSaveUpTo) {
      std::ifstream in(e.path(), std::ios::binary);
      f.content.assign(std::istreambuf_iterator<char>(in),
                       std::istreambuf_iterator<char>());
      f.saved = static_cast<bool>(in) || in.eof();
    }
    files_[e.path().filename().string()] = std::move(f);
  }
}

std::string RunFolderSnapshot::Restore() const {
  std::error_code ec;
  if (!existed_) {
    fs::remove_all(dir_, ec);
    return ec ? "cannot remove " + dir_.string() + ": " + ec.message() : "";
  }
  std::string problems;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (!e.is_regular_file(ec)) continue;
    const std::string name = e.path().filename().string();
    // The lock this run holds (released after Restore) stays as it is.
    if (name == fs::path(LockPath(dir_.string())).filename()) continue;
    const auto was = files_.find(name);
    std::string problem;
    if (was == files_.end()) {
      if (!fs::remove(e.path(), ec)) problem = ec.message();
    } else if (e.file_size(ec) != was->second.size ||
               e.last_write_time(ec) != was->second.mtime) {
      problem = was->second.saved
                    ? TryWriteFileAtomically(e.path(), was->second.content)
                    : "changed, and too large to have been kept";
    }
    if (!problem.empty()) {
      problems += (problems.empty() ? "" : "; ") + name + ": " + problem;
    }
  }
  // And the ones removed since (a run starting removes its workers' old
  // statistics).
  for (const auto& [name, was] : files_) {
    if (fs::exists(dir_ / name, ec)) continue;
    const std::string problem =
        was.saved ? TryWriteFileAtomically(dir_ / name, was.content)
                  : "removed, and too large to have been kept";
    if (!problem.empty()) {
      problems += (problems.empty() ? "" : "; ") + name + ": " + problem;
    }
  }
  return problems;
}

RunLock::RunLock(const fs::path& dir) {
  const std::string path = LockPath(dir.string());
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error("cannot open " + path + ": " +
                             std::strerror(errno));
  }
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char text[32] = {};
    const ssize_t n = pread(fd_, text, sizeof(text) - 1, 0);
    close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) {
      throw std::runtime_error("cannot lock " + path + ": " +
                               std::strerror(err));
    }
    std::string pid(text, n > 0 ? static_cast<size_t>(n) : 0);
    pid = pid.substr(0, pid.find_first_not_of("0123456789"));
    throw RunLocked(dir.string() + " is in use by another trainer (pid " +
                    (pid.empty() ? std::string("unknown") : pid) + " holds " +
                    path + ")");
  }
  // Whose it is, for the message above (best effort: the lock is the flock).
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd_, 0) == 0) {
    (void)!pwrite(fd_, pid.data(), pid.size(), 0);
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) close(fd_);
}

fs::path MakeRunDir(const std::string& outdir) {
  std::error_code ec;
  fs::create_directories(outdir, ec);
  if (ec) {
    throw std::invalid_argument(
        "--outdir=" + outdir +
        " is invalid; accepted: a directory that can be created and written (" +
        ec.message() + ")");
  }
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          now.time_since_epoch())
                          .count() %
                      1000000;
  std::tm tm{};
  localtime_r(&secs, &tm);
  char stamp[64];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
  char name[96];
  std::snprintf(name, sizeof(name), "%s.%06lld", stamp,
                static_cast<long long>(micros));
  // Bounded: each try either succeeds, fails for good, or found a name
  // another run took in the same microsecond.
  for (int i = 0; i < 1000; ++i) {
    fs::path dir = fs::path(outdir) /
                   (i == 0 ? std::string(name)
                           : std::string(name) + "-" + std::to_string(i));
    if (mkdir(dir.c_str(), 0755) == 0) return dir;
    if (errno != EEXIST) {
      throw std::invalid_argument(
          "--outdir=" + outdir +
          " is invalid; accepted: a writable directory (creating " +
          dir.string() + " failed: " + std::strerror(errno) + ")");
    }
  }
  throw std::invalid_argument("--outdir=" + outdir +
                              " is invalid; accepted: a directory in which "
                              "a new run folder can be created");
}

namespace {

constexpr char kCheckpointSuffix[] = "_checkpoint";

std::string In(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

}  // namespace

std::string ArgsPath(const std::string& dir) { return In(dir, "args.json"); }
std::string LockPath(const std::string& dir) { return In(dir, ".lock"); }
std::string CommandPath(const std::string& dir) {
  return In(dir, "command.txt");
}
std::string ScoresPath(const std::string& dir) { return In(dir, "scores.txt"); }
std::string ScoresSvgPath(const std::string& dir) {
  return In(dir, "scores.svg");
}
std::string BestDir(const std::string& dir) { return In(dir, "best"); }
std::string SuccessfulDir(const std::string& dir) {
  return In(dir, "successful");
}
std::string FinishDir(const std::string& dir, int64_t steps) {
  return In(dir, std::to_string(steps) + "_finish");
}
std::string ExceptDir(const std::string& dir, int64_t step) {
  return In(dir, std::to_string(step) + "_except");
}
std::string CheckpointDir(const std::string& dir, int64_t step) {
  return In(dir, std::to_string(step) + kCheckpointSuffix);
}
std::string TimersPath(const std::string& dir, int idx) {
  return In(dir, "timers-" + std::to_string(idx) + ".json");
}
std::string StatisticsPath(const std::string& dir, int idx) {
  return In(dir, "statistics-" + std::to_string(idx) + ".tsv");
}
std::string ProfilePath(const std::string& dir, const std::string& who,
                        int64_t pid) {
  return In(dir, "profile-" + who + "-" + std::to_string(pid) + ".prof");
}

void PruneCheckpoints(const std::string& dir, int keep) {
  const std::string suffix = kCheckpointSuffix;
  std::vector<std::pair<int64_t, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string digits = name.substr(0, name.size() - suffix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    found.emplace_back(std::stoll(digits), e.path());
  }
  std::sort(found.begin(), found.end());
  for (size_t i = 0; i + static_cast<size_t>(keep) < found.size(); ++i) {
    std::filesystem::remove_all(found[i].second, ec);
  }
}

}  // namespace asyncrl
