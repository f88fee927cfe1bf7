// CHECK-style macros for internal invariants. A failed check throws
// std::logic_error whose message names the file, line, expression and both
// operands, so a worker's failure report says exactly what went wrong.
#ifndef ASYNCRL_MISC_CHECK_H_
#define ASYNCRL_MISC_CHECK_H_

#include <sstream>
#include <stdexcept>
#include <string>

namespace asyncrl::internal {

template <typename A, typename B>
[[noreturn]] void CheckOpFailed(const char* file, int line, const char* expr,
                                const A& a, const B& b) {
  std::ostringstream os;
  os << file << ":" << line << ": check failed: " << expr << " (" << a << " vs "
     << b << ")";
  throw std::logic_error(os.str());
}

[[noreturn]] inline void CheckFailed(const char* file, int line,
                                     const char* expr) {
  throw std::logic_error(std::string(file) + ":" + std::to_string(line) +
                         ": check failed: " + expr);
}

}  // namespace asyncrl::internal

#define ASYNCRL_CHECK(cond)                                        \
  do {                                                             \
    if (!(cond)) {                                                 \
      ::asyncrl::internal::CheckFailed(__FILE__, __LINE__, #cond); \
    }                                                              \
  } while (false)

#define ASYNCRL_CHECK_OP(a, b, op)                                        \
  do {                                                                    \
    const auto& asyncrl_a_ = (a);                                         \
    const auto& asyncrl_b_ = (b);                                         \
    if (!(asyncrl_a_ op asyncrl_b_)) {                                    \
      ::asyncrl::internal::CheckOpFailed(                                 \
          __FILE__, __LINE__, #a " " #op " " #b, asyncrl_a_, asyncrl_b_); \
    }                                                                     \
  } while (false)

#define ASYNCRL_CHECK_EQ(a, b) ASYNCRL_CHECK_OP(a, b, ==)
#define ASYNCRL_CHECK_NE(a, b) ASYNCRL_CHECK_OP(a, b, !=)
#define ASYNCRL_CHECK_LT(a, b) ASYNCRL_CHECK_OP(a, b, <)
#define ASYNCRL_CHECK_LE(a, b) ASYNCRL_CHECK_OP(a, b, <=)
#define ASYNCRL_CHECK_GT(a, b) ASYNCRL_CHECK_OP(a, b, >)
#define ASYNCRL_CHECK_GE(a, b) ASYNCRL_CHECK_OP(a, b, >=)

#endif  // ASYNCRL_MISC_CHECK_H_
