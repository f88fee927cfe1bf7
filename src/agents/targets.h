// Learning targets computed from a rollout (agents/rollout.h): pure
// functions of its rewards, its `next` links, the values V(x) of its rows
// and of its bootstrap observations, and (for the off-policy corrections)
// the log importance ratios log pi(a|x) - log mu(a|x) of the actions taken.
// Rows are step-major (row = step * K + k); every function walks each
// environment's rows backwards, accumulating in double.
//
// Each row i has a successor value V'_i: V of the same environment's next
// row (kContinue), 0 after a terminal row (kTerminal), or the value of the
// bootstrap observation the row links to (a time limit, the rollout's
// end). A sequence stops at a terminal or bootstrap link: nothing after it
// flows back into it. With d_i = r_i + gamma V'_i - V_i:
//   nstep      R_i = r_i + gamma R_next              (R_next = V'_i at a stop)
//   td-lambda  G_i = r_i + gamma ((1 - l) V'_i + l G_next)  (G_next = V'_i
//              at a stop); G_i - V_i is GAE(l)'s advantage sum (gamma l)^k d.
//   vtrace     (IMPALA) rho_i = min(rho_bar, ratio_i), c_i = l min(c_bar,
//              ratio_i); v_i = V_i + rho_i d_i + gamma c_i (v_next - V'_i)
//              (v_next - V'_i = 0 at a stop); policy advantage
//              rho_i (r_i + gamma v_next - V_i), v_next = V'_i at a stop.
//   upgo       (HandyRL) U_i = r_i + gamma max(V'_i, (1 - l) V'_i + l U_next)
//              (U_next = V'_i at a stop); policy advantage
//              min(rho_bar, ratio_i) (U_i - V_i).
// Two-player games whose both sides the agent plays (Rollout::turn_passes):
// where row i's successor is the other player's turn, V'_i and the next
// row's target are that player's, and every formula above takes -gamma in
// place of gamma for row i (negamax; upgo's max stays the successor
// player's, then negated).
#ifndef ASYNCRL_AGENTS_TARGETS_H_
#define ASYNCRL_AGENTS_TARGETS_H_

#include <string>
#include <vector>

#include "asyncrl/agents/rollout.h"
#include "asyncrl/misc/space.h"

namespace asyncrl {

// What multiplies log pi(a|x) in the policy loss.
enum class PolicyTarget { kNStep, kGae, kVtrace, kUpgo };
// What V(x) regresses to.
enum class ValueTarget { kNStep, kTdLambda, kVtrace };

// "nstep", "gae", "vtrace", "upgo"; and "nstep", "td-lambda", "vtrace".
const char* TargetName(PolicyTarget target);
const char* TargetName(ValueTarget target);
// Throw InvalidOption (misc/validate.h) naming `field`, the value and the
// accepted names.
PolicyTarget ParsePolicyTarget(const std::string& name,
                               const std::string& field);
ValueTarget ParseValueTarget(const std::string& name, const std::string& field);
// The value target that goes with a policy target when none is named:
// nstep -> nstep, gae and upgo -> td-lambda, vtrace -> vtrace.
ValueTarget PairedValueTarget(PolicyTarget target);
// Whether the target reads `lambda`, and whether it corrects for an
// off-policy rollout with the importance ratios.
bool UsesLambda(PolicyTarget target);
bool UsesLambda(ValueTarget target);
bool CorrectsOffPolicy(PolicyTarget target);

struct TargetParams {
  double gamma = 0.99;   // [0, 1].
  double lambda = 1.0;   // [0, 1].
  double rho_bar = 1.0;  // > 0: truncation of the ratios (vtrace, upgo).
  double c_bar = 1.0;    // > 0: truncation of the traces (vtrace).
};

// One rollout's inputs. `values` holds V(x_i) for every row,
// `bootstrap_values` rollout.num_bootstrap values, `log_ratios` either one
// log pi - log mu per row or nothing (size 0: on-policy, every ratio 1).
struct TargetInputs {
  const Rollout& rollout;
  FloatView values;
  FloatView bootstrap_values;
  FloatView log_ratios;
};

// The n-step return of every row (see above). Accumulated in double,
// returned as float; `values` are not needed.
std::vector<float> NStepReturns(const Rollout& rollout,
                                FloatView bootstrap_values, double gamma);
// TD(lambda) returns G_i; GAE's advantages are G_i - V_i.
std::vector<double> TdLambdaReturns(const TargetInputs& in, double gamma,
                                    double lambda);
struct VtraceResult {
  std::vector<double> values;      // v_i.
  std::vector<double> advantages;  // rho_i (r_i + gamma v_next - V_i).
};
VtraceResult Vtrace(const TargetInputs& in, const TargetParams& params);
// UPGO returns U_i.
std::vector<double> UpgoReturns(const TargetInputs& in, double gamma,
                                double lambda);

// What an update learns from.
struct Targets {
  std::vector<float> value_targets;  // Per row.
  std::vector<float> advantages;     // Per row, before any normalisation.
  double mean_ratio = 1.0;           // Mean importance ratio over the rows.
  // Rows whose ratio exceeds rho_bar (by more than float rounding).
  double clipped_fraction = 0.0;
};
Targets ComputeTargets(PolicyTarget policy, ValueTarget value,
                       const TargetInputs& in, const TargetParams& params);

// (a - mean) / (std + 1e-8) over the rows, population std, in place;
// fewer than 2 rows are left as they are (one row has no spread).
void NormalizeAdvantages(std::vector<float>* advantages);

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_TARGETS_H_
