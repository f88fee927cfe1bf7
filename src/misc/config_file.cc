#include "asyncrl/misc/config_file.h"

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

}  // namespace asyncrl
