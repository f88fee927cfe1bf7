#include "asyncrl/misc/option_tokens.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <stdexcept>

#include "asyncrl/misc/json.h"

namespace asyncrl {

namespace po = boost::program_options;

void AppendOptionTokens(const po::options_description& desc,
                        const std::string& key, const std::string& value,
                        std::vector<std::string>* tokens) {
  const po::option_description* option =
      desc.find_nothrow(key, /*approx=*/false);
  if (option != nullptr && option->semantic()->max_tokens() == 0) {
    if (value == "true" || value == "1" || value == "yes") {
      tokens->push_back("--" + key);
    } else if (value != "false" && value != "0" && value != "no") {
      throw std::invalid_argument(key + " = " + value +
                                  ": accepted: true or false");
    }
    return;
  }
  tokens->push_back("--" + key + "=" + value);
}

// Every token stands alone, so they are parsed a slice at a time: Boost's
// parser erases each token from the front of its list, quadratic in the
// list's length (a config file of 40,000 env-param lines took 5 s), linear
// in slices of a fixed size.
void StoreOptionTokens(const std::vector<std::string>& tokens,
                       const po::options_description& desc,
                       po::variables_map& vm) {
  constexpr size_t kSlice = 64;
  po::parsed_options all(&desc);
  for (size_t at = 0; at < tokens.size(); at += kSlice) {
    const auto first = tokens.begin() + static_cast<std::ptrdiff_t>(at);
    const auto last = tokens.begin() + static_cast<std::ptrdiff_t>(std::min(
                                           tokens.size(), at + kSlice));
    // Names match exactly, as in a config file: a recorded option that no
    // longer exists is refused, never taken for a flag it is a prefix of.
    po::parsed_options part =
        po::command_line_parser(std::vector<std::string>(first, last))
            .options(desc)
            .style(po::command_line_style::default_style &
                   ~po::command_line_style::allow_guessing)
            .run();
    all.options.insert(all.options.end(),
                       std::make_move_iterator(part.options.begin()),
                       std::make_move_iterator(part.options.end()));
  }
  po::store(all, vm);
}

std::map<std::string, std::string> ParseRecordedOptions(
    const std::string& json_text) {
  std::map<std::string, std::string> args;
  const Json json = Json::Parse(json_text);
  for (const auto& [key, value] : json.object()) {
    // A name holding '=' would reach the option parser as "--name=value"
    // and set the option named before its '=' to what follows: a file could
    // add an option's value that was never recorded (found by
    // fuzz/merge_fuzzer; its input is in fuzz/corpus/merge/).
    if (key.empty() || key.find('=') != std::string::npos) {
      throw std::runtime_error("the option name " + Json(key).Dump() +
                               " is not one; accepted: a name without '='");
    }
    args[key] = value.string();
  }
  return args;
}

}  // namespace asyncrl
