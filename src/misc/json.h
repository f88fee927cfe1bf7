// A minimal JSON value with a writer and a strict reader, enough for the
// files asyncrl writes itself (timers-*.json, args.json).
#ifndef ASYNCRL_MISC_JSON_H_
#define ASYNCRL_MISC_JSON_H_

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace asyncrl {

class Json {
 public:
  using Object = std::map<std::string, Json>;
  using Array = std::vector<Json>;

  Json() = default;  // null
  Json(double number)
      : value_(number) {}  // NOLINT(google-explicit-constructor)
  Json(std::string text) : value_(std::move(text)) {}  // NOLINT
  Json(Object object) : value_(std::move(object)) {}   // NOLINT

  bool IsNumber() const { return std::holds_alternative<double>(value_); }
  bool IsString() const { return std::holds_alternative<std::string>(value_); }
  bool IsObject() const { return std::holds_alternative<Object>(value_); }
  // Throw std::runtime_error when the value has another type.
  double number() const;
  const std::string& string() const;
  const Object& object() const;
  // The member `key` of an object; throws if absent.
  const Json& at(const std::string& key) const;

  // Compact unless `indent` > 0. Numbers with 17 significant digits.
  std::string Dump(int indent = 0) const;

  // Parses a whole document (objects, arrays, strings, numbers, true, false,
  // null). Throws std::runtime_error with the byte offset of the problem.
  static Json Parse(const std::string& text);

 private:
  std::variant<std::monostate, double, std::string, Object, Array, bool> value_;
  void DumpTo(std::string& out, int indent, int depth) const;
  friend class JsonParser;
};

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_JSON_H_
