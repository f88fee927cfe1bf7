// Command-line flags declared next to the options struct they fill, with no
// parser in sight: an options struct lists its flags (name, help, the field
// each one fills) and experiments/run_flags.cc hands the list to
// Boost.Program_options. A flag's default is its field's value when the list
// is made, so a program sets its own defaults first.
#ifndef ASYNCRL_MISC_FLAG_SPEC_H_
#define ASYNCRL_MISC_FLAG_SPEC_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace asyncrl {

struct FlagSpec {
  std::string name;  // Without "--": "t-max".
  std::string help;
  // The field the flag fills; bool fields are switches (--profile).
  std::variant<int*, int64_t*, double*, std::string*, bool*> target;
  // What --help shows as the default instead of the field's value, for a
  // default that depends on the machine ("number of cores"): the help text
  // (and the flag reference made from it) is the same everywhere.
  std::string shown_default = {};
};

using FlagSpecs = std::vector<FlagSpec>;

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_FLAG_SPEC_H_
