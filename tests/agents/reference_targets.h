// Reference targets for the tests, in double and written from the papers'
// closed forms where they exist, independently of agents/targets.cc's
// backward walk over rollout links: one environment's sequence of steps at
// a time, rows in time order.
//   n-step     R_s = sum_{t=s..e} g^(t-s) r_t + g^(e-s+1) V'_e
//   GAE        A_s = sum_{t=s..e} (g l)^(t-s) d_t, TD(lambda) G_s = A_s + V_s
//   V-trace    v_s = V_s + sum_{t=s..e} g^(t-s) (prod_{i=s..t-1} c_i) rho_t d_t
//              (Espeholt et al. 2018, eq. 1), policy advantage
//              rho_s (r_s + g v_{s+1} - V_s) with v_{e+1} = V'_e
//   UPGO       U_s = r_s + g max(V'_s, (1 - l) V'_s + l U_{s+1}), U_{e+1} =
//   V'_e
//              (HandyRL's definition; no closed form)
// where e is the last row of s's sequence (the first row at or after s
// whose sequence stops) and d_t = r_t + g V'_t - V_t.
#ifndef ASYNCRL_TESTS_AGENTS_REFERENCE_TARGETS_H_
#define ASYNCRL_TESTS_AGENTS_REFERENCE_TARGETS_H_

#include <algorithm>
#include <cmath>
#include <vector>

#include "asyncrl/agents/targets.h"

namespace asyncrl {
namespace testing {

// One environment's steps, in time order.
struct ReferenceSequence {
  std::vector<double> rewards;
  std::vector<double> values;      // V(x_t).
  std::vector<double> successors;  // V'_t: V(x_{t+1}), a bootstrap or 0.
  std::vector<bool> stops;         // The sequence stops after row t.
  std::vector<double> ratios;      // pi / mu per row; empty: all 1.
};

struct ReferenceResult {
  std::vector<double> value_targets;
  std::vector<double> advantages;
};

inline ReferenceResult ReferenceTargets(PolicyTarget policy, ValueTarget value,
                                        const ReferenceSequence& seq,
                                        const TargetParams& p) {
  const auto n = static_cast<int64_t>(seq.rewards.size());
  auto ratio = [&](int64_t t) {
    return seq.ratios.empty() ? 1.0 : seq.ratios[t];
  };
  auto last_of = [&](int64_t s) {
    int64_t e = s;
    while (!seq.stops[e]) ++e;
    return e;
  };
  auto delta = [&](int64_t t) {
    return seq.rewards[t] + p.gamma * seq.successors[t] - seq.values[t];
  };
  std::vector<double> nstep(n), gae(n), vs(n), upgo(n), vtrace_adv(n);
  for (int64_t s = 0; s < n; ++s) {
    const int64_t e = last_of(s);
    double r = 0;
    double a = 0;
    double v = seq.values[s];
    double trace = 1;  // prod c_i.
    for (int64_t t = s; t <= e; ++t) {
      const double discount = std::pow(p.gamma, static_cast<double>(t - s));
      r += discount * seq.rewards[t];
      a += std::pow(p.gamma * p.lambda, static_cast<double>(t - s)) * delta(t);
      v += discount * trace * std::min(p.rho_bar, ratio(t)) * delta(t);
      trace *= p.lambda * std::min(p.c_bar, ratio(t));
    }
    nstep[s] = r + std::pow(p.gamma, static_cast<double>(e - s + 1)) *
                       seq.successors[e];
    gae[s] = a;
    vs[s] = v;
  }
  for (int64_t s = n - 1; s >= 0; --s) {
    const double next_u = seq.stops[s] ? seq.successors[s] : upgo[s + 1];
    upgo[s] =
        seq.rewards[s] + p.gamma * std::max(seq.successors[s],
                                            (1 - p.lambda) * seq.successors[s] +
                                                p.lambda * next_u);
    const double next_v = seq.stops[s] ? seq.successors[s] : vs[s + 1];
    vtrace_adv[s] = std::min(p.rho_bar, ratio(s)) *
                    (seq.rewards[s] + p.gamma * next_v - seq.values[s]);
  }
  ReferenceResult out;
  for (int64_t s = 0; s < n; ++s) {
    switch (value) {
      case ValueTarget::kNStep:
        out.value_targets.push_back(nstep[s]);
        break;
      case ValueTarget::kTdLambda:
        out.value_targets.push_back(gae[s] + seq.values[s]);
        break;
      case ValueTarget::kVtrace:
        out.value_targets.push_back(vs[s]);
        break;
    }
    switch (policy) {
      case PolicyTarget::kNStep:
        out.advantages.push_back(nstep[s] - seq.values[s]);
        break;
      case PolicyTarget::kGae:
        out.advantages.push_back(gae[s]);
        break;
      case PolicyTarget::kVtrace:
        out.advantages.push_back(vtrace_adv[s]);
        break;
      case PolicyTarget::kUpgo:
        out.advantages.push_back(std::min(p.rho_bar, ratio(s)) *
                                 (upgo[s] - seq.values[s]));
        break;
    }
  }
  return out;
}

}  // namespace testing
}  // namespace asyncrl

#endif  // ASYNCRL_TESTS_AGENTS_REFERENCE_TARGETS_H_
