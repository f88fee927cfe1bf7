// Runs train_a3c as a user would, in its own session and process group,
// for the tests that need to signal it or watch it while it runs.
#ifndef ASYNCRL_TESTS_APPS_SPAWNED_H_
#define ASYNCRL_TESTS_APPS_SPAWNED_H_

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../test_paths.h"

namespace asyncrl::testing {

// train_a3c started in a new session (its own process group) with its
// stdout and stderr on one pipe.
class Spawned {
 public:
  // `prefix`: a command that runs train_a3c (`ip netns exec NS`), looked up
  // in PATH. `program`: another program to run the same way.
  Spawned(const std::vector<std::string>& args, const std::string& fault,
          rlim_t file_size_limit = RLIM_INFINITY,
          const std::vector<std::string>& prefix = {},
          const char* program = TRAIN_A3C_BIN) {
    int fds[2];
    if (pipe(fds) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      setsid();
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      close(fds[1]);
      if (!fault.empty()) setenv("ASYNCRL_INJECT_FAULT", fault.c_str(), 1);
      if (file_size_limit != RLIM_INFINITY) {
        // As a shell's ulimit -f leaves it: the program itself must turn
        // SIGXFSZ into EFBIG.
        signal(SIGXFSZ, SIG_DFL);
        rlimit limit{file_size_limit, file_size_limit};
        setrlimit(RLIMIT_FSIZE, &limit);
      }
      std::vector<char*> argv;
      for (const auto& a : prefix) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(const_cast<char*>(program));
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    fd_ = fds[0];
  }
  Spawned(const Spawned&) = delete;
  Spawned& operator=(const Spawned&) = delete;

  // A run the test did not finish (an assertion failed first) is killed,
  // with its whole process group, and reaped: no test leaves one behind.
  ~Spawned() {
    if (!reaped_ && pid_ > 0) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }

  // Reads output until `needle` appears (or EOF); true when it appeared.
  bool WaitFor(const std::string& needle) {
    while (output_.find(needle) == std::string::npos) {
      if (!ReadSome()) return false;
    }
    return true;
  }

  // Reads to EOF and reaps the trainer; returns its exit status (128 + signal
  // when it was killed).
  int Finish() {
    while (ReadSome()) {
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // True when no process of the run's group is alive.
  bool GroupGone() const { return kill(-pid_, 0) == -1 && errno == ESRCH; }

  std::vector<pid_t> Workers() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/task/" +
                     std::to_string(pid_) + "/children");
    std::vector<pid_t> pids;
    for (pid_t p; in >> p;) pids.push_back(p);
    return pids;
  }

  pid_t pid() const { return pid_; }
  const std::string& output() const { return output_; }

  // The directory named by "results in DIR".
  std::filesystem::path RunDir() const {
    const size_t at = output_.find("results in ");
    if (at == std::string::npos) return {};
    const size_t end = output_.find_first_of(" \n", at + 11);
    return output_.substr(at + 11, end - at - 11);
  }

 private:
  bool ReadSome() {
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) return true;
    if (n <= 0) return false;
    output_.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  int fd_ = -1;
  std::string output_;
};

}  // namespace asyncrl::testing

#endif  // ASYNCRL_TESTS_APPS_SPAWNED_H_
