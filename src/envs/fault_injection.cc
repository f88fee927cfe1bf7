#include "asyncrl/envs/fault_injection.h"

#include <csignal>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace asyncrl {
namespace {

[[noreturn]] void Bad(const std::string& text, const std::string& why) {
  throw std::invalid_argument("ASYNCRL_INJECT_FAULT=" + text + " is invalid (" +
                              why +
                              "); accepted: worker=<int>,step=<int >= "
                              "1>,kind=<throw|abort|segv|kill|stop|nan>");
}

}  // namespace

FaultSpec ParseFaultSpec(const std::string& text) {
  FaultSpec spec;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) Bad(text, "'" + item + "' has no '='");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    try {
      if (key == "worker") {
        spec.worker = std::stoi(value);
      } else if (key == "step") {
        spec.step = std::stoll(value);
      } else if (key == "kind") {
        if (value == "throw") {
          spec.kind = FaultKind::kThrow;
        } else if (value == "abort") {
          spec.kind = FaultKind::kAbort;
        } else if (value == "segv") {
          spec.kind = FaultKind::kSegv;
        } else if (value == "kill") {
          spec.kind = FaultKind::kKill;
        } else if (value == "stop") {
          spec.kind = FaultKind::kStop;
        } else if (value == "nan") {
          spec.kind = FaultKind::kNan;
        } else {
          Bad(text, "unknown kind '" + value + "'");
        }
      } else {
        Bad(text, "unknown key '" + key + "'");
      }
    } catch (const std::logic_error& e) {
      if (dynamic_cast<const std::invalid_argument*>(&e) != nullptr &&
          std::string(e.what()).rfind("ASYNCRL_INJECT_FAULT", 0) == 0) {
        throw;
      }
      Bad(text, "'" + value + "' is not a number");
    }
  }
  if (spec.worker < 0 || spec.step < 1) Bad(text, "out of range");
  return spec;
}

std::optional<FaultSpec> FaultSpecFromEnvironment() {
  const char* text = std::getenv("ASYNCRL_INJECT_FAULT");
  if (text == nullptr || *text == '\0') return std::nullopt;
  return ParseFaultSpec(text);
}

FaultyEnv::FaultyEnv(std::unique_ptr<Env> inner, FaultSpec spec)
    : Wrapper(std::move(inner)), spec_(spec) {}

StepResult FaultyEnv::DoStep(const Action& action) {
  if (++steps_ == spec_.step) {
    switch (spec_.kind) {
      case FaultKind::kThrow:
        throw std::runtime_error("injected failure at step " +
                                 std::to_string(steps_));
      case FaultKind::kAbort:
        std::abort();
      case FaultKind::kSegv:
        std::signal(SIGSEGV, SIG_DFL);  // Sanitizers install their own.
        std::raise(SIGSEGV);
        break;
      case FaultKind::kKill:
        std::raise(SIGKILL);
        break;
      case FaultKind::kStop:
        std::raise(SIGSTOP);  // Until SIGCONT or SIGKILL.
        break;
      case FaultKind::kNan: {
        StepResult result = Wrapper::DoStep(action);
        result.reward = std::numeric_limits<double>::quiet_NaN();
        return result;
      }
    }
  }
  return Wrapper::DoStep(action);
}

}  // namespace asyncrl
