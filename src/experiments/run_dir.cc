#include "asyncrl/experiments/run_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>

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

void WriteFileAtomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) {
      const std::string error = std::strerror(errno);
      out.close();
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw std::runtime_error("cannot write " + tmp.string() + ": " + error);
    }
  }
  fs::rename(tmp, path);
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

}  // namespace asyncrl
