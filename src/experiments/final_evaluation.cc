#include "asyncrl/experiments/final_evaluation.h"

#include <cstdio>
#include <system_error>

#include "asyncrl/agents/actor_critic.h"
#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/misc/checkpoint.h"

namespace asyncrl {

namespace fs = std::filesystem;

uint64_t FinalEvalEnvSeed(int64_t seed) {
  // In [2^31, 2^32): what a 32-bit generator (NumPy's RandomState) takes.
  constexpr uint64_t kHalf = uint64_t{1} << 31;
  return kHalf + static_cast<uint64_t>(seed) % (kHalf - (uint64_t{1} << 20));
}

fs::path FinalAgentDir(const fs::path& run, int64_t steps,
                       int64_t global_step) {
  std::error_code ec;
  const fs::path successful = SuccessfulDir(run.string());
  if (global_step < steps && fs::is_directory(successful, ec)) {
    return successful;
  }
  const fs::path finish = FinishDir(run.string(), steps);
  if (fs::is_directory(finish, ec)) return finish;
  // Stopped by its clock (--train-seconds): named by the step it reached.
  const fs::path early = FinishDir(run.string(), global_step);
  if (global_step < steps && fs::is_directory(early, ec)) return early;
  if (fs::is_directory(successful, ec)) return successful;
  return {};
}

namespace {

bool Stopped(const FinalEvaluationSetup& setup) {
  return setup.stop != nullptr &&
         setup.stop->load(std::memory_order_relaxed) != 0;
}

// One agent, each way it acts, on the same episodes; what a stop cut short
// is left out.
void Evaluate(const FinalEvaluationSetup& setup, const std::string& name,
              const fs::path& dir, std::optional<double> chosen_score,
              std::ostream* log, std::vector<FinalEvaluation>* out) {
  std::unique_ptr<Agent> agent = setup.make_agent();
  agent->Load(dir.string());
  const proto::Checkpoint checkpoint = LoadCheckpointDir(dir.string());
  auto* actor_critic = dynamic_cast<ActorCriticAgent*>(agent.get());
  std::vector<std::string> actions = {"agent"};
  if (actor_critic != nullptr) actions = {"deterministic", "sampled"};
  for (const std::string& action : actions) {
    if (actor_critic != nullptr) {
      actor_critic->SetActDeterministically(action == "deterministic");
    }
    if (log != nullptr) {
      *log << "final evaluation: " << name << " (" << dir.filename().string()
           << "), " << setup.episodes << " episodes of at most "
           << setup.max_episode_len << " steps, " << action << " actions"
           << std::endl;
    }
    std::unique_ptr<Env> env = setup.make_env();
    // Episode i starts from seed FinalEvalEnvSeed(seed) + i: the same
    // episodes for every agent and action, whatever an earlier episode
    // drew.
    std::vector<double> returns;
    for (int64_t i = 0; i < setup.episodes; ++i) {
      if (Stopped(setup)) return;
      env->Reset(FinalEvalEnvSeed(setup.seed) + static_cast<uint64_t>(i));
      const std::vector<double> one =
          RunEvaluation(*agent, *env, 0, 1, setup.max_episode_len, setup.stop);
      if (one.empty() || Stopped(setup)) return;
      returns.push_back(one[0]);
    }
    FinalEvaluation row;
    row.agent = name;
    row.checkpoint = dir.filename().string();
    row.step = checkpoint.global_step();
    row.action = action;
    row.chosen_score = chosen_score;
    row.stats = Summarize(returns);
    out->push_back(row);
  }
}

// Five significant digits: what a reader compares.
std::string Short(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.5g", v);
  return buf;
}

std::string Describe(const EvalStats& s) {
  return "mean " + Short(s.mean) + " (median " + Short(s.median) + ", stdev " +
         Short(s.stdev) + ", min " + Short(s.min) + ", max " + Short(s.max) +
         ")";
}

}  // namespace

std::vector<FinalEvaluation> EvaluateFinalAgents(
    const FinalEvaluationSetup& setup, std::ostream* log) {
  std::vector<FinalEvaluation> rows;
  const fs::path final_dir =
      FinalAgentDir(setup.run, setup.steps, setup.global_step);
  if (!final_dir.empty()) {
    Evaluate(setup, "final", final_dir, std::nullopt, log, &rows);
  }
  std::error_code ec;
  const fs::path best = BestDir(setup.run.string());
  if (fs::is_directory(best, ec)) {
    const proto::Checkpoint checkpoint = LoadCheckpointDir(best.string());
    Evaluate(setup, "best", best,
             checkpoint.has_best_score()
                 ? std::optional<double>(checkpoint.best_score())
                 : std::nullopt,
             log, &rows);
  }
  return rows;
}

std::string FinalEvaluationTable(const std::vector<FinalEvaluation>& rows) {
  std::string out =
      "agent\tcheckpoint\tstep\taction\tepisodes\tmean\tmedian\tstdev\tmax\t"
      "min\tchosen_score\n";
  for (const FinalEvaluation& r : rows) {
    out += r.agent + "\t" + r.checkpoint + "\t" + std::to_string(r.step) +
           "\t" + r.action + "\t" + std::to_string(r.stats.episodes) + "\t" +
           FormatCell(r.stats.mean) + "\t" + FormatCell(r.stats.median) + "\t" +
           FormatCell(r.stats.stdev) + "\t" + FormatCell(r.stats.max) + "\t" +
           FormatCell(r.stats.min) + "\t" +
           (r.chosen_score ? FormatCell(*r.chosen_score) : "") + "\n";
  }
  return out;
}

std::vector<std::string> DescribeFinalEvaluations(
    const std::vector<FinalEvaluation>& rows) {
  std::vector<std::string> lines;
  for (const FinalEvaluation& r : rows) {
    std::string who = r.agent == "final" ? "final agent" : "best/";
    who += " (" + r.checkpoint + ", step " + std::to_string(r.step);
    if (r.chosen_score) {
      who += ", chosen at an evaluation mean of " + Short(*r.chosen_score);
    }
    who += ")";
    lines.push_back(who + ", " + std::to_string(r.stats.episodes) +
                    " fresh episodes, " + r.action + ": " + Describe(r.stats));
  }
  return lines;
}

}  // namespace asyncrl
