#include "asyncrl/agents/targets.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "asyncrl/misc/check.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

constexpr const char* kPolicyNames = "nstep, gae, vtrace or upgo";
constexpr const char* kValueNames = "nstep, td-lambda or vtrace";

// Checks the shapes; `need_values`: V(x_i) of every row is read.
void CheckInputs(const TargetInputs& in, bool need_values) {
  const Rollout& rollout = in.rollout;
  const int64_t k = rollout.batch;
  const int64_t n = rollout.rows();
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(rollout.rewards.size()), n);
  ASYNCRL_CHECK_EQ(static_cast<int64_t>(rollout.next.size()), n);
  ASYNCRL_CHECK_EQ(in.bootstrap_values.size, rollout.num_bootstrap);
  if (need_values) ASYNCRL_CHECK_EQ(in.values.size, n);
  ASYNCRL_CHECK(in.log_ratios.size == 0 || in.log_ratios.size == n);
  // A complete rollout links every row of its last step somewhere.
  for (int64_t i = n - k; i < n; ++i) {
    ASYNCRL_CHECK_NE(rollout.next[i], Rollout::kContinue);
  }
}

// Walks every environment's rows backwards. For row i it calls
// target(i, successor, next_target, sign): successor is V'_i (0 for a
// continuing row when no values are given), next_target the target already
// computed for the environment's next row, or V'_i where the sequence
// stops, both from the point of view of the successor's player; sign is
// -1 where that is the other player (Rollout::turn_passes), else 1. The
// returned value is row i's target.
template <typename F>
std::vector<double> Backward(const TargetInputs& in, F target) {
  const Rollout& rollout = in.rollout;
  const int64_t k = rollout.batch;
  const int64_t n = rollout.rows();
  std::vector<double> out(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t next = rollout.next[i];
    double successor = 0.0;
    double next_target = 0.0;
    if (next == Rollout::kContinue) {
      successor = in.values.size > 0 ? in.values[i + k] : 0.0;
      next_target = out[i + k];
    } else {
      successor = next >= 0 ? in.bootstrap_values[next] : 0.0;
      next_target = successor;
    }
    out[i] = target(i, successor, next_target, rollout.SuccessorSign(i));
  }
  return out;
}

double Ratio(const TargetInputs& in, int64_t i) {
  return in.log_ratios.size > 0 ? std::exp(double{in.log_ratios[i]}) : 1.0;
}

std::vector<float> ToFloat(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace

const char* TargetName(PolicyTarget target) {
  switch (target) {
    case PolicyTarget::kNStep:
      return "nstep";
    case PolicyTarget::kGae:
      return "gae";
    case PolicyTarget::kVtrace:
      return "vtrace";
    case PolicyTarget::kUpgo:
      return "upgo";
  }
  return "?";
}

const char* TargetName(ValueTarget target) {
  switch (target) {
    case ValueTarget::kNStep:
      return "nstep";
    case ValueTarget::kTdLambda:
      return "td-lambda";
    case ValueTarget::kVtrace:
      return "vtrace";
  }
  return "?";
}

PolicyTarget ParsePolicyTarget(const std::string& name,
                               const std::string& field) {
  for (PolicyTarget t : {PolicyTarget::kNStep, PolicyTarget::kGae,
                         PolicyTarget::kVtrace, PolicyTarget::kUpgo}) {
    if (name == TargetName(t)) return t;
  }
  throw InvalidOption(field, name, kPolicyNames);
}

ValueTarget ParseValueTarget(const std::string& name,
                             const std::string& field) {
  for (ValueTarget t :
       {ValueTarget::kNStep, ValueTarget::kTdLambda, ValueTarget::kVtrace}) {
    if (name == TargetName(t)) return t;
  }
  throw InvalidOption(field, name, kValueNames);
}

ValueTarget PairedValueTarget(PolicyTarget target) {
  switch (target) {
    case PolicyTarget::kNStep:
      return ValueTarget::kNStep;
    case PolicyTarget::kVtrace:
      return ValueTarget::kVtrace;
    case PolicyTarget::kGae:
    case PolicyTarget::kUpgo:
      return ValueTarget::kTdLambda;
  }
  return ValueTarget::kNStep;
}

bool UsesLambda(PolicyTarget target) { return target != PolicyTarget::kNStep; }
bool UsesLambda(ValueTarget target) { return target != ValueTarget::kNStep; }
bool CorrectsOffPolicy(PolicyTarget target) {
  return target == PolicyTarget::kVtrace || target == PolicyTarget::kUpgo;
}

std::vector<float> NStepReturns(const Rollout& rollout,
                                FloatView bootstrap_values, double gamma) {
  const TargetInputs in{rollout, {}, bootstrap_values, {}};
  CheckInputs(in, /*need_values=*/false);
  return ToFloat(Backward(in, [&](int64_t i, double, double next, double s) {
    return rollout.rewards[i] + s * gamma * next;
  }));
}

std::vector<double> TdLambdaReturns(const TargetInputs& in, double gamma,
                                    double lambda) {
  CheckInputs(in, /*need_values=*/true);
  return Backward(in, [&](int64_t i, double successor, double next, double s) {
    return in.rollout.rewards[i] +
           s * gamma * ((1 - lambda) * successor + lambda * next);
  });
}

VtraceResult Vtrace(const TargetInputs& in, const TargetParams& p) {
  CheckInputs(in, /*need_values=*/true);
  VtraceResult result;
  result.values =
      Backward(in, [&](int64_t i, double successor, double next, double s) {
        const double ratio = Ratio(in, i);
        const double rho = std::min(p.rho_bar, ratio);
        const double c = p.lambda * std::min(p.c_bar, ratio);
        const double gamma = s * p.gamma;
        const double delta =
            in.rollout.rewards[i] + gamma * successor - in.values[i];
        return in.values[i] + rho * delta + gamma * c * (next - successor);
      });
  // The policy advantage reads v of the next row, or V' where the sequence
  // stops: the same walk with the values just computed.
  const int64_t k = in.rollout.batch;
  const int64_t n = in.rollout.rows();
  result.advantages.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t next = in.rollout.next[i];
    double v_next = 0.0;
    if (next == Rollout::kContinue) {
      v_next = result.values[i + k];
    } else if (next >= 0) {
      v_next = in.bootstrap_values[next];
    }
    const double rho = std::min(p.rho_bar, Ratio(in, i));
    const double gamma = in.rollout.SuccessorSign(i) * p.gamma;
    result.advantages[i] =
        rho * (in.rollout.rewards[i] + gamma * v_next - in.values[i]);
  }
  return result;
}

std::vector<double> UpgoReturns(const TargetInputs& in, double gamma,
                                double lambda) {
  CheckInputs(in, /*need_values=*/true);
  // The max is the successor's player's choice: taken in its point of
  // view, then negated for the other player's.
  return Backward(in, [&](int64_t i, double successor, double next, double s) {
    return in.rollout.rewards[i] +
           s * gamma *
               std::max(successor, (1 - lambda) * successor + lambda * next);
  });
}

Targets ComputeTargets(PolicyTarget policy, ValueTarget value,
                       const TargetInputs& in, const TargetParams& params) {
  CheckInputs(in, /*need_values=*/true);
  const int64_t n = in.rollout.rows();
  std::optional<VtraceResult> vtrace;
  std::optional<std::vector<double>> td_lambda;
  auto get_vtrace = [&]() -> const VtraceResult& {
    if (!vtrace) vtrace = Vtrace(in, params);
    return *vtrace;
  };
  auto get_td_lambda = [&]() -> const std::vector<double>& {
    if (!td_lambda)
      td_lambda = TdLambdaReturns(in, params.gamma, params.lambda);
    return *td_lambda;
  };
  Targets t;
  std::vector<float> nstep;
  if (value == ValueTarget::kNStep || policy == PolicyTarget::kNStep) {
    nstep = NStepReturns(in.rollout, in.bootstrap_values, params.gamma);
  }
  switch (value) {
    case ValueTarget::kNStep:
      t.value_targets = nstep;
      break;
    case ValueTarget::kTdLambda:
      t.value_targets = ToFloat(get_td_lambda());
      break;
    case ValueTarget::kVtrace:
      t.value_targets = ToFloat(get_vtrace().values);
      break;
  }
  const std::vector<double> upgo =
      policy == PolicyTarget::kUpgo
          ? UpgoReturns(in, params.gamma, params.lambda)
          : std::vector<double>();
  t.advantages.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = in.values[i];
    double a = 0.0;
    switch (policy) {
      case PolicyTarget::kNStep:
        a = double{nstep[i]} - v;
        break;
      case PolicyTarget::kGae:
        a = get_td_lambda()[i] - v;
        break;
      case PolicyTarget::kVtrace:
        a = get_vtrace().advantages[i];
        break;
      case PolicyTarget::kUpgo:
        a = std::min(params.rho_bar, Ratio(in, i)) * (upgo[i] - v);
        break;
    }
    t.advantages[i] = static_cast<float>(a);
  }
  if (in.log_ratios.size > 0 && n > 0) {
    double sum = 0.0;
    int64_t clipped = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double ratio = Ratio(in, i);
      sum += ratio;
      // Past the rounding of float log-probabilities: on-policy rows whose
      // ratio is 1 up to rounding are not counted.
      clipped += ratio > params.rho_bar * (1 + 1e-5) ? 1 : 0;
    }
    t.mean_ratio = sum / static_cast<double>(n);
    t.clipped_fraction = static_cast<double>(clipped) / static_cast<double>(n);
  }
  return t;
}

void NormalizeAdvantages(std::vector<float>* advantages) {
  const auto n = static_cast<int64_t>(advantages->size());
  if (n < 2) return;
  double mean = 0.0;
  for (float a : *advantages) mean += a;
  mean /= static_cast<double>(n);
  double var = 0.0;
  for (float a : *advantages) var += (a - mean) * (a - mean);
  const double std = std::sqrt(var / static_cast<double>(n));
  for (float& a : *advantages)
    a = static_cast<float>((a - mean) / (std + 1e-8));
}

}  // namespace asyncrl
