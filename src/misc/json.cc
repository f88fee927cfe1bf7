#include "asyncrl/misc/json.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace asyncrl {

double Json::number() const {
  if (!IsNumber()) throw std::runtime_error("JSON value is not a number");
  return std::get<double>(value_);
}

const std::string& Json::string() const {
  if (!IsString()) throw std::runtime_error("JSON value is not a string");
  return std::get<std::string>(value_);
}

const Json::Object& Json::object() const {
  if (!IsObject()) throw std::runtime_error("JSON value is not an object");
  return std::get<Object>(value_);
}

const Json& Json::at(const std::string& key) const {
  const Object& o = object();
  auto it = o.find(key);
  if (it == o.end())
    throw std::runtime_error("JSON object has no '" + key + "'");
  return it->second;
}

namespace {

void DumpString(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

void Json::DumpTo(std::string& out, int indent, int depth) const {
  const auto newline = [&](int d) {
    if (indent > 0)
      out += '\n' + std::string(static_cast<size_t>(indent * d), ' ');
  };
  if (std::holds_alternative<std::monostate>(value_)) {
    out += "null";
  } else if (const auto* b = std::get_if<bool>(&value_)) {
    out += *b ? "true" : "false";
  } else if (const auto* d = std::get_if<double>(&value_)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.17g", *d);
    out += buf;
  } else if (const auto* s = std::get_if<std::string>(&value_)) {
    DumpString(out, *s);
  } else if (const auto* a = std::get_if<Array>(&value_)) {
    out += '[';
    for (size_t i = 0; i < a->size(); ++i) {
      if (i) out += ',';
      newline(depth + 1);
      (*a)[i].DumpTo(out, indent, depth + 1);
    }
    if (!a->empty()) newline(depth);
    out += ']';
  } else {
    const Object& o = std::get<Object>(value_);
    out += '{';
    bool first = true;
    for (const auto& [key, value] : o) {
      if (!first) out += ',';
      first = false;
      newline(depth + 1);
      DumpString(out, key);
      out += indent > 0 ? ": " : ":";
      value.DumpTo(out, indent, depth + 1);
    }
    if (!o.empty()) newline(depth);
    out += '}';
  }
}

std::string Json::Dump(int indent) const {
  std::string out;
  DumpTo(out, indent, 0);
  return out;
}

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}

  Json ParseDocument() {
    Json v = ParseValue(0);
    SkipSpace();
    if (pos_ != s_.size()) Fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw std::runtime_error("invalid JSON at byte " + std::to_string(pos_) +
                             ": " + what);
  }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' ||
                                s_[pos_] == '\t' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void Expect(char c) {
    if (!Consume(c)) Fail(std::string("expected '") + c + "'");
  }
  bool Literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) == 0) {
      pos_ += w.size();
      return true;
    }
    return false;
  }

  std::string ParseString() {
    Expect('"');
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) Fail("unterminated escape");
        const char e = s_[pos_++];
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'u': {
            if (pos_ + 4 > s_.size()) Fail("short \\u escape");
            const long code =
                std::strtol(s_.substr(pos_, 4).c_str(), nullptr, 16);
            pos_ += 4;
            if (code >= 0x80) Fail("non-ASCII \\u escapes are not supported");
            out += static_cast<char>(code);
            break;
          }
          default:
            out += e;
        }
      } else {
        out += c;
      }
    }
    if (pos_ >= s_.size()) Fail("unterminated string");
    ++pos_;
    return out;
  }

  Json ParseValue(int depth) {
    if (depth > 64) Fail("nesting deeper than 64");
    SkipSpace();
    if (pos_ >= s_.size()) Fail("unexpected end");
    const char c = s_[pos_];
    Json v;
    if (c == '{') {
      ++pos_;
      Json::Object o;
      if (!Consume('}')) {
        do {
          SkipSpace();
          std::string key = ParseString();
          Expect(':');
          o[key] = ParseValue(depth + 1);
        } while (Consume(','));
        Expect('}');
      }
      v.value_ = std::move(o);
    } else if (c == '[') {
      ++pos_;
      Json::Array a;
      if (!Consume(']')) {
        do {
          a.push_back(ParseValue(depth + 1));
        } while (Consume(','));
        Expect(']');
      }
      v.value_ = std::move(a);
    } else if (c == '"') {
      v.value_ = ParseString();
    } else if (Literal("true")) {
      v.value_ = true;
    } else if (Literal("false")) {
      v.value_ = false;
    } else if (Literal("null")) {
    } else {
      const char* begin = s_.c_str() + pos_;
      char* end = nullptr;
      const double d = std::strtod(begin, &end);
      if (end == begin) Fail("unexpected character");
      pos_ += static_cast<size_t>(end - begin);
      v.value_ = d;
    }
    return v;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

Json Json::Parse(const std::string& text) {
  return JsonParser(text).ParseDocument();
}

}  // namespace asyncrl
