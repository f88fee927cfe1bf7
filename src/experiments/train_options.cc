#include "asyncrl/experiments/train_options.h"

#include <cmath>
#include <stdexcept>

namespace asyncrl {
namespace {

void Require(bool ok, const std::string& field, const std::string& value,
             const std::string& accepted) {
  if (!ok) {
    throw std::invalid_argument(field + "=" + value +
                                " is invalid; accepted: " + accepted);
  }
}

}  // namespace

void TrainOptions::Validate() const {
  Require(processes >= 1, "processes", std::to_string(processes),
          "an integer >= 1");
  Require(steps >= 1, "steps", std::to_string(steps), "an integer >= 1");
  Require(envs_per_process >= 1, "envs_per_process",
          std::to_string(envs_per_process), "an integer >= 1");
  Require(seed >= 0, "seed", std::to_string(seed), "an integer >= 0");
  Require(max_episode_len >= 0, "max_episode_len",
          std::to_string(max_episode_len),
          "0 (the environment's limit) or a positive integer");
  Require(eval_interval >= 0, "eval_interval", std::to_string(eval_interval),
          "0 (no evaluation) or a positive integer");
  Require(eval_n_steps >= 0, "eval_n_steps", std::to_string(eval_n_steps),
          "a non-negative integer");
  Require(eval_n_episodes >= 0, "eval_n_episodes",
          std::to_string(eval_n_episodes), "a non-negative integer");
  if (eval_interval > 0) {
    Require(
        (eval_n_steps > 0) != (eval_n_episodes > 0),
        "eval_n_steps/eval_n_episodes",
        std::to_string(eval_n_steps) + "/" + std::to_string(eval_n_episodes),
        "exactly one of them > 0");
  }
  if (successful_score) {
    Require(!std::isnan(*successful_score), "successful_score", "nan",
            "a number");
    Require(eval_interval > 0, "successful_score",
            std::to_string(*successful_score),
            "only with evaluation on (eval_interval > 0)");
  }
  Require(checkpoint_interval >= 0, "checkpoint_interval",
          std::to_string(checkpoint_interval),
          "0 (no periodic checkpoints) or a positive integer");
  Require(keep_checkpoints >= 1, "keep_checkpoints",
          std::to_string(keep_checkpoints), "an integer >= 1");
  Require(!outdir.empty(), "outdir", "\"\"", "a directory path");
  Require(step_offset >= 0 && step_offset < steps, "step_offset",
          std::to_string(step_offset), "an integer in [0, steps)");
  Require(load.empty() || resume.empty(), "load", load,
          "not together with resume (resume continues a run, load starts a "
          "new one from its agent)");
  Require(resume.empty() || step_offset == 0, "step_offset",
          std::to_string(step_offset),
          "0 with resume (it continues at the checkpoint's step)");
}

}  // namespace asyncrl
