// Evaluation for the asynchronous trainer. RunEvaluation plays evaluation
// episodes with Agent::Act; AsyncEvaluator keeps the shared schedule (one
// interval per check, so it catches up), appends whole rows to scores.txt
// and saves best/ and successful/ under the shared lock.
#ifndef ASYNCRL_EXPERIMENTS_EVALUATOR_H_
#define ASYNCRL_EXPERIMENTS_EVALUATOR_H_

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "asyncrl/agents/agent.h"
#include "asyncrl/envs/env.h"
#include "asyncrl/experiments/extension.h"
#include "asyncrl/experiments/metrics.h"
#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/experiments/train_options.h"

namespace asyncrl {

struct EvalStats {
  int64_t episodes = 0;
  double mean = 0, median = 0, stdev = 0, max = 0, min = 0;
};

// Mean, median, sample standard deviation (0 with fewer than 2 scores), max
// and min. Throws std::invalid_argument on an empty list.
EvalStats Summarize(const std::vector<double>& scores);

// Plays evaluation episodes of at most `max_episode_len` steps (0 = the
// environment's limit). Exactly one of n_steps / n_episodes is > 0. In step
// mode an unfinished last episode is dropped unless no episode finished.
// Returns each episode's return. With `stop` (the run's stop flag), returns
// as soon as it is raised, with the episodes finished so far (possibly
// none): a stop request never waits for a long evaluation.
std::vector<double> RunEvaluation(Agent& agent, Env& env, int64_t n_steps,
                                  int64_t n_episodes, int64_t max_episode_len,
                                  const std::atomic<int32_t>* stop = nullptr);

// "steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin" followed by the
// agent's statistic names.
std::string ScoresHeader(const std::vector<std::string>& statistic_names);

// A number as scores.txt writes it ("%.10g").
std::string FormatCell(double v);

// One per worker process; the schedule and files are shared through the
// control block. Workers call MaybeEvaluate at every episode end.
class AsyncEvaluator {
 public:
  // `metrics` (may be null) receives eval/mean, eval/median, eval/stdev,
  // eval/max and eval/min for every evaluation.
  // The elapsed column is control.ElapsedSeconds(): the run's training
  // time, continued across resumes. `extensions` add their columns after
  // the agent's statistics and may play the evaluation themselves
  // (TrainerExtension::EvaluationBegins, Evaluate).
  AsyncEvaluator(const TrainOptions& options, ControlBlock& control,
                 MetricsChannel* metrics = nullptr,
                 const Extensions& extensions = {});

  // Writes scores.txt's header unless the file exists (a resumed run
  // appends; an incomplete last row, which only a run killed mid-write can
  // leave, is removed with a warning). Call once, in the parent, before
  // fork. Rows are appended whole or not at all.
  static void WriteHeader(const std::string& outdir,
                          const std::vector<std::string>& statistic_names);

  // Throws std::invalid_argument when outdir's scores.txt begins with a
  // whole header line other than the one these columns make (a resume
  // whose options change the columns: its rows would not fit the header),
  // naming the columns added and removed. Writes nothing.
  static void CheckHeader(const std::string& outdir,
                          const std::vector<std::string>& statistic_names);

  // If global step `t` is at least one interval past the schedule, claims
  // that interval, evaluates `agent` on `env` and records the result.
  // Returns the statistics when this call evaluated.
  std::optional<EvalStats> MaybeEvaluate(int64_t t, Agent& agent, Env& env);

 private:
  // Appends the row (the extensions' `cells` after the agent's
  // statistics), then saves best/ and successful/ when this mean earns them.
  void Record(int64_t t, const EvalStats& stats, const Agent& agent,
              const std::vector<std::string>& cells);

  const TrainOptions& options_;
  ControlBlock& control_;
  MetricsChannel* metrics_;
  Extensions extensions_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_EVALUATOR_H_
