// libFuzzer target: merging recorded options as --resume and --config do.
// The input is read twice: as a resumed run's args.json and as a config
// file; each value goes through AppendOptionTokens / StoreOptionTokens into
// a variables_map of options of every kind the trainer has (text, integer,
// number, switch, repeated). Either the merge is refused with an exception
// the trainer turns into a one-line error, or every text value comes back
// byte for byte (a newline, '=' or "--" in a value never becomes an
// option); never a crash, a leak or a value that changed on the way.
#include <boost/program_options.hpp>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "asyncrl/misc/config_file.h"
#include "asyncrl/misc/option_tokens.h"

namespace po = boost::program_options;

namespace {

po::options_description Options() {
  po::options_description desc;
  desc.add_options()("env", po::value<std::string>())(
      "curriculum", po::value<std::string>())("steps", po::value<int64_t>())(
      "lr", po::value<double>())("lr-decay", po::bool_switch())(
      "env-param", po::value<std::vector<std::string>>()->composing());
  return desc;
}

// Stores `pairs` (later ones win, as a config file's) and checks that each
// text value of a known option arrived unchanged.
void Merge(const std::vector<std::pair<std::string, std::string>>& pairs) {
  static const po::options_description desc = Options();
  std::vector<std::string> tokens;
  std::map<std::string, std::string> last;
  std::vector<std::string> params;
  for (const auto& [key, value] : pairs) {
    asyncrl::AppendOptionTokens(desc, key, value, &tokens);
    if (key == "env-param") params.push_back(value);
    last[key] = value;
  }
  po::variables_map vm;
  asyncrl::StoreOptionTokens(tokens, desc, vm);
  for (const char* key : {"env", "curriculum"}) {
    const auto it = last.find(key);
    if (it == last.end()) continue;
    // The first value given wins in Boost's store for a single option; a
    // second occurrence is refused before this point.
    if (vm[key].as<std::string>() != it->second) std::abort();
  }
  if (!params.empty() &&
      vm["env-param"].as<std::vector<std::string>>() != params) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto recorded = asyncrl::ParseRecordedOptions(text);
    Merge({recorded.begin(), recorded.end()});
  } catch (const po::error&) {
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  try {
    Merge(asyncrl::ParseConfigText(text));
  } catch (const po::error&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
