// Which field an options struct's Validate() refuses after `change`, or
// "(accepted)": for tests of option validation.
#ifndef ASYNCRL_TESTS_AGENTS_OPTION_CHECK_H_
#define ASYNCRL_TESTS_AGENTS_OPTION_CHECK_H_

#include <string>

#include "asyncrl/misc/validate.h"

namespace asyncrl::testing {

template <typename Options, typename Change>
std::string RefusedField(Change change) {
  Options options;
  change(options);
  try {
    options.Validate();
  } catch (const InvalidOption& e) {
    return e.field();
  }
  return "(accepted)";
}

}  // namespace asyncrl::testing

#endif  // ASYNCRL_TESTS_AGENTS_OPTION_CHECK_H_
