// Leveled log lines on stderr, each written with one write() so lines from
// different processes never interleave mid-line.
#ifndef ASYNCRL_MISC_LOGGING_H_
#define ASYNCRL_MISC_LOGGING_H_

#include <string>

namespace asyncrl {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Process-wide; set before fork so workers inherit it.
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
// "[debug] message\n" on stderr when `level` is enabled.
void Log(LogLevel level, const std::string& message);

// "debug", "info", "warning", "error"; throws std::invalid_argument listing
// them for anything else.
LogLevel ParseLogLevel(const std::string& name);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_LOGGING_H_
