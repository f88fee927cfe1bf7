// Small string helpers for messages.
#ifndef ASYNCRL_MISC_STRINGS_H_
#define ASYNCRL_MISC_STRINGS_H_

#include <string>
#include <vector>

namespace asyncrl {

// "a, b, c" — how error messages list accepted names.
inline std::string JoinNames(const std::vector<std::string>& names) {
  std::string joined;
  for (const auto& name : names) {
    if (!joined.empty()) joined += ", ";
    joined += name;
  }
  return joined;
}

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_STRINGS_H_
