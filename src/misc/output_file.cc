#include "asyncrl/misc/output_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace asyncrl {
namespace {

namespace fs = std::filesystem;

// SIGINT, SIGTERM and SIGHUP held back for a scope (delivered when it ends).
class HoldSignals {
 public:
  HoldSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~HoldSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  HoldSignals(const HoldSignals&) = delete;
  HoldSignals& operator=(const HoldSignals&) = delete;

 private:
  sigset_t old_;
};

// The file `path` names after its symbolic links.
fs::path FollowLinks(const std::string& path) {
  std::error_code ec;
  fs::path target(path);
  for (int depth = 0; fs::is_symlink(fs::symlink_status(target, ec)); ++depth) {
    const fs::path next = fs::read_symlink(target, ec);
    if (ec || depth == 40) {
      throw std::runtime_error(
          "cannot write " + path + ": " +
          (ec ? ec.message() : "too many levels of symbolic links"));
    }
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  return target;
}

fs::path TemporaryBeside(const fs::path& target, const std::string& tag) {
  return target.parent_path() /
         (".asyncrl-" + tag + "." + std::to_string(getpid()) + ".tmp");
}

}  // namespace

std::string OutputFileProblem(const std::string& path) {
  if (path.empty()) return "an empty name";
  const fs::path file(path);
  if (!file.has_filename()) return path + " names a folder";
  const fs::path folder = file.has_parent_path() ? file.parent_path() : ".";
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return "the folder " + folder.string() + " does not exist";
  }
  const fs::file_status st = fs::status(file, ec);  // Follows links.
  if (!fs::exists(st) || fs::is_regular_file(st)) return "";
  const char* kind = fs::is_directory(st)        ? "a directory"
                     : fs::is_character_file(st) ? "a character device"
                     : fs::is_block_file(st)     ? "a block device"
                     : fs::is_fifo(st)           ? "a FIFO"
                     : fs::is_socket(st)         ? "a socket"
                                                 : "not a regular file";
  return path + " is " + kind + "; only a regular file is written";
}

std::string OutputFileWritable(const std::string& path) {
  std::string problem = OutputFileProblem(path);
  if (!problem.empty()) return problem;
  try {
    const fs::path probe = TemporaryBeside(FollowLinks(path), "probe");
    const int fd =
        open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) return std::strerror(errno);
    close(fd);
    unlink(probe.c_str());
  } catch (const std::runtime_error& e) {
    problem = e.what();
    const std::string prefix = "cannot write " + path + ": ";
    return problem.rfind(prefix, 0) == 0 ? problem.substr(prefix.size())
                                         : problem;
  }
  return "";
}

void WriteOutputFile(const std::string& path, const std::string& data,
                     const std::string& tag) {
  const fs::path target = FollowLinks(path);
  const fs::path temporary = TemporaryBeside(target, tag);
  const HoldSignals hold;
  std::string error;
  const int fd =
      open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    error = std::strerror(errno);
  } else {
    size_t done = 0;
    while (done < data.size() && error.empty()) {
      const ssize_t n = write(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) error = std::strerror(errno);
      if (n > 0) done += static_cast<size_t>(n);
    }
    if (error.empty() && fsync(fd) != 0) error = std::strerror(errno);
    if (close(fd) != 0 && error.empty()) error = std::strerror(errno);
    if (error.empty() && rename(temporary.c_str(), target.c_str()) != 0) {
      error = std::strerror(errno);
    }
    if (!error.empty()) unlink(temporary.c_str());
  }
  if (!error.empty()) {
    throw std::runtime_error("cannot write " + path + ": " + error);
  }
}

}  // namespace asyncrl
