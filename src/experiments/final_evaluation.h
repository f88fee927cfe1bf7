// The agents a run leaves, measured without selection bias: when a run
// ends, its final agent (<steps>_finish/, or successful/ when it stopped at
// --successful-score) and best/ are each evaluated on the same fresh
// episodes (seeds no training or periodic evaluation used), with the
// greedy and the sampled action where the agent has both. The best
// evaluation of a run is the maximum of many noisy ones, and best/ is
// chosen on that same noise: these figures are what a user keeps
// (rl-baselines3-zoo reports its final agent with the deterministic action).
// Written to the run's final_eval.tsv and its TensorBoard events.
#ifndef ASYNCRL_EXPERIMENTS_FINAL_EVALUATION_H_
#define ASYNCRL_EXPERIMENTS_FINAL_EVALUATION_H_

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "asyncrl/agents/agent.h"
#include "asyncrl/envs/env.h"
#include "asyncrl/experiments/evaluator.h"

namespace asyncrl {

// A final evaluation's episodes end at --max-episode-len, else at this
// many steps where the environment has no limit of its own (Gymnasium's
// Atari environments: 108,000 frames at a frame skip of 4): a greedy
// policy may never end an episode of a game without one (MinAtar), and the
// run must end. A cut episode counts with its return so far.
constexpr int64_t kFinalEvalEpisodeCap = 27000;

// One agent of the run, with one way of acting, on the fresh episodes.
struct FinalEvaluation {
  std::string agent;       // "final" or "best".
  std::string checkpoint;  // Its folder in the run ("1000_finish", "best").
  int64_t step = 0;        // The global step it was saved at.
  // "deterministic" (the most probable action), "sampled", or "agent" (a
  // program's own agent, acting as its Act does).
  std::string action;
  EvalStats stats;
  // best/: the periodic evaluation mean that chose it.
  std::optional<double> chosen_score;
};

struct FinalEvaluationSetup {
  std::filesystem::path run;  // The run folder.
  int64_t steps = 0;          // The run's step budget (--steps).
  int64_t global_step = 0;    // Where it ended.
  int64_t episodes = 0;       // --final-eval-n-runs, >= 1.
  int64_t seed = 0;           // The run's --seed.
  int64_t max_episode_len = 0;
  std::function<std::unique_ptr<Agent>()> make_agent;  // Not yet loaded.
  std::function<std::unique_ptr<Env>()> make_env;      // An evaluation one.
  // Raised (a signal): the evaluation ends at once; the rows finished so
  // far are returned. May be null.
  const std::atomic<int32_t>* stop = nullptr;
};

// The seed of the final evaluation's first episode (episode i: + i, i <
// 2^20): in [2^31, 2^32), above every environment seed that training or
// the periodic evaluations use (all below 2^31), and within 32 bits.
uint64_t FinalEvalEnvSeed(int64_t seed);

// The run's final agent's folder: successful/ when the run stopped before
// its budget and one is there, else <steps>_finish/, else
// <global_step>_finish/ (a run its clock stopped, --train-seconds); ""
// when none is.
std::filesystem::path FinalAgentDir(const std::filesystem::path& run,
                                    int64_t steps, int64_t global_step);

// Evaluates the final agent and best/ (where each is there) on
// setup.episodes fresh episodes each, the same episodes for both; progress
// lines go to `log` (may be null).
std::vector<FinalEvaluation> EvaluateFinalAgents(
    const FinalEvaluationSetup& setup, std::ostream* log);

// final_eval.tsv: a header, then one row per evaluation (agent, checkpoint,
// step, action, episodes, mean, median, stdev, max, min, chosen_score).
std::string FinalEvaluationTable(const std::vector<FinalEvaluation>& rows);

// The summary lines a finished run prints.
std::vector<std::string> DescribeFinalEvaluations(
    const std::vector<FinalEvaluation>& rows);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_FINAL_EVALUATION_H_
