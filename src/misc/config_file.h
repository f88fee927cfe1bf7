// The `--config FILE` format: one `key = value` per line, `#` starts a
// comment, blank lines are ignored, keys are flag names without `--`.
#ifndef ASYNCRL_MISC_CONFIG_FILE_H_
#define ASYNCRL_MISC_CONFIG_FILE_H_

#include <string>
#include <utility>
#include <vector>

namespace asyncrl {

// Parses the text of a config file into (key, value) pairs in file order.
// Throws std::invalid_argument "line N: ..." for a line without '=', an
// empty key, a key with characters other than [a-z0-9-], or a NUL byte.
std::vector<std::pair<std::string, std::string>> ParseConfigText(
    const std::string& text);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_CONFIG_FILE_H_
