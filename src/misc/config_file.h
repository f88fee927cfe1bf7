// The `--config FILE` format: one `key = value` per line, `#` starts a
// comment, blank lines are ignored, keys are flag names without `--`.
#ifndef ASYNCRL_MISC_CONFIG_FILE_H_
#define ASYNCRL_MISC_CONFIG_FILE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace asyncrl {

// The most a --config or --curriculum file may hold.
constexpr uint64_t kMaxInputFileBytes = 1 << 20;

// The contents of `path`, which must be a regular file of at most
// `max_bytes`: a directory, FIFO, device or socket is refused without
// reading from it (so it never blocks or reads without bound). Throws
// std::invalid_argument saying what `path` is instead ("a directory", "a
// FIFO", "5368709120 bytes, over the limit of 1048576", "missing").
std::string ReadSmallRegularFile(const std::string& path, uint64_t max_bytes);

// Parses the text of a config file into (key, value) pairs in file order.
// Throws std::invalid_argument "line N: ..." for a line without '=', an
// empty key, a key with characters other than [a-z0-9-], or a NUL byte.
std::vector<std::pair<std::string, std::string>> ParseConfigText(
    const std::string& text);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_CONFIG_FILE_H_
