// Deliberate failures for testing a trainer end to end: an environment
// wrapper that throws, aborts or crashes at a given step, and the spec
// train_a3c reads from the ASYNCRL_INJECT_FAULT environment variable
// ("worker=1,step=500,kind=throw"; kinds: throw, abort, segv, kill, stop).
#ifndef ASYNCRL_ENVS_FAULT_INJECTION_H_
#define ASYNCRL_ENVS_FAULT_INJECTION_H_

#include <memory>
#include <optional>
#include <string>

#include "asyncrl/envs/wrappers.h"

namespace asyncrl {

enum class FaultKind { kThrow, kAbort, kSegv, kKill, kStop, kNan };

struct FaultSpec {
  int worker = 0;    // Which process_idx's training environment fails.
  int64_t step = 1;  // At its step-th step (1-based), counted per env.
  FaultKind kind = FaultKind::kThrow;
};

// Parses "worker=W,step=S,kind=K". Throws std::invalid_argument naming the
// bad field and what is accepted.
FaultSpec ParseFaultSpec(const std::string& text);

// The spec in ASYNCRL_INJECT_FAULT, if set.
std::optional<FaultSpec> FaultSpecFromEnvironment();

// Forwards to `inner` and fails at step `spec.step`: throws
// std::runtime_error("injected failure at step N"), calls abort(), raises
// SIGSEGV, SIGKILL or SIGSTOP (the worker neither steps nor exits), or
// (kNan) returns the step with a NaN reward, as a broken environment might.
class FaultyEnv : public Wrapper {
 public:
  FaultyEnv(std::unique_ptr<Env> inner, FaultSpec spec);

 protected:
  StepResult DoStep(const Action& action) override;

 private:
  FaultSpec spec_;
  int64_t steps_ = 0;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_FAULT_INJECTION_H_
