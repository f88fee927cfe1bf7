#include "asyncrl/misc/logging.h"

#include <unistd.h>

#include <stdexcept>

namespace asyncrl {
namespace {

LogLevel g_level = LogLevel::kInfo;
constexpr const char* kNames[] = {"debug", "info", "warning", "error"};

}  // namespace

void SetLogLevel(LogLevel level) { g_level = level; }

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= static_cast<int>(g_level);
}

void Log(LogLevel level, const std::string& message) {
  if (!LogEnabled(level)) return;
  const std::string line = std::string("[") + kNames[static_cast<int>(level)] +
                           "] " + message + "\n";
  ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

LogLevel ParseLogLevel(const std::string& name) {
  for (int i = 0; i < 4; ++i) {
    if (name == kNames[i]) return static_cast<LogLevel>(i);
  }
  throw std::invalid_argument("log level '" + name +
                              "' is invalid; accepted: debug, info, warning, "
                              "error");
}

}  // namespace asyncrl
