// Validation of options structs, one message format everywhere:
//   "<field>=<value> is invalid; accepted: <what is accepted>"
// Every options struct's Validate() uses Require; the command line
// (experiments/run_flags.h) catches InvalidOption and names the flag that
// filled the field ("--t-max=0 is invalid; accepted: an integer >= 1"), so
// the rules are written once, next to the struct they belong to.
#ifndef ASYNCRL_MISC_VALIDATE_H_
#define ASYNCRL_MISC_VALIDATE_H_

#include <sstream>
#include <stdexcept>
#include <string>

namespace asyncrl {

// A field with a value out of its accepted range. what() is the full
// one-line message; the parts are kept for callers that rename the field.
class InvalidOption : public std::invalid_argument {
 public:
  InvalidOption(const std::string& field, const std::string& value,
                const std::string& accepted)
      : std::invalid_argument(field + "=" + value +
                              " is invalid; accepted: " + accepted),
        field_(field),
        value_(value),
        accepted_(accepted) {}
  const std::string& field() const { return field_; }
  const std::string& value() const { return value_; }
  const std::string& accepted() const { return accepted_; }

 private:
  std::string field_;
  std::string value_;
  std::string accepted_;
};

// A value as a user would write it: 0.99, 1e-05, inf, nan, 5, text as is.
template <typename T>
std::string FormatValue(const T& value) {
  std::ostringstream os;
  os << value;
  return os.str();
}
inline std::string FormatValue(bool value) { return value ? "true" : "false"; }

// Throws InvalidOption(field, FormatValue(value), accepted) unless `ok`.
template <typename T>
void Require(bool ok, const std::string& field, const T& value,
             const std::string& accepted) {
  if (!ok) throw InvalidOption(field, FormatValue(value), accepted);
}

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_VALIDATE_H_
