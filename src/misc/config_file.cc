#include "asyncrl/misc/config_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace asyncrl {
namespace {

std::string Trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ParseConfigText(
    const std::string& text) {
  std::vector<std::pair<std::string, std::string>> entries;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::string where = "line " + std::to_string(line_no) + ": ";
    if (line.find('\0') != std::string::npos) {
      throw std::invalid_argument(where + "contains a NUL byte");
    }
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    line = Trim(line);
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      throw std::invalid_argument(where + "'" + line +
                                  "' is not 'key = value'");
    }
    const std::string key = Trim(line.substr(0, eq));
    const std::string value = Trim(line.substr(eq + 1));
    if (key.empty() ||
        key.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") !=
            std::string::npos) {
      throw std::invalid_argument(where + "key '" + key +
                                  "' is invalid; accepted: a flag name "
                                  "without -- (lowercase letters, digits, -)");
    }
    entries.emplace_back(key, value);
  }
  return entries;
}

std::string ReadSmallRegularFile(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once (reading a
  // regular file ignores the flag).
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    throw std::invalid_argument(errno == ENOENT
                                    ? std::string("missing")
                                    : std::string("cannot be opened: ") +
                                          std::strerror(errno));
  }
  struct stat st {};
  std::string what;
  if (fstat(fd, &st) != 0) {
    what = std::string("cannot be examined: ") + std::strerror(errno);
  } else if (S_ISDIR(st.st_mode)) {
    what = "a directory";
  } else if (S_ISFIFO(st.st_mode)) {
    what = "a FIFO";
  } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    what = "a device";
  } else if (S_ISSOCK(st.st_mode)) {
    what = "a socket";
  } else if (!S_ISREG(st.st_mode)) {
    what = "not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    what = std::to_string(st.st_size) + " bytes, over the limit of " +
           std::to_string(max_bytes);
  }
  if (!what.empty()) {
    close(fd);
    throw std::invalid_argument(what);
  }
  std::string text;
  char buf[65536];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string error = std::strerror(errno);
      close(fd);
      throw std::invalid_argument("cannot be read: " + error);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) {  // It grew since fstat.
      close(fd);
      throw std::invalid_argument("over the limit of " +
                                  std::to_string(max_bytes) + " bytes");
    }
  }
  close(fd);
  return text;
}

}  // namespace asyncrl
