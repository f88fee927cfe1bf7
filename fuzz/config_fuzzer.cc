// libFuzzer target: the --config file parser on arbitrary text. It must
// either return key/value pairs whose keys are flag names or throw
// std::invalid_argument; never crash or leak.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "asyncrl/misc/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& [key, value] : asyncrl::ParseConfigText(text)) {
      if (key.empty() ||
          key.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") !=
              std::string::npos) {
        std::abort();  // The parser let an invalid key through.
      }
      if (value.find('\n') != std::string::npos) std::abort();
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
