// The whole train_a3c program as a library call: a user's `main` with its
// own agent (and, if it likes, its own environment) gets the same command
// line, config file, run folder, args.json, command.txt, status line,
// TensorBoard events, --resume/--load/--demo, signal handling and exit
// codes. train_a3c itself is `return asyncrl::RunTrainer(argc, argv);`.
//
//   int main(int argc, char** argv) {
//     asyncrl::TrainerPlugins plugins;
//     plugins.program = "my_trainer";
//     plugins.make_agent = [](const asyncrl::AgentContext& ctx) {
//       return std::make_unique<MyAgent>(ctx.observation_space,
//                                        ctx.action_space, ctx.seed);
//     };
//     return asyncrl::RunTrainer(argc, argv, plugins);
//   }
#ifndef ASYNCRL_EXPERIMENTS_RUN_TRAINER_H_
#define ASYNCRL_EXPERIMENTS_RUN_TRAINER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "asyncrl/agents/agent.h"
#include "asyncrl/envs/env.h"
#include "asyncrl/experiments/extension.h"
#include "asyncrl/experiments/hooks.h"
#include "asyncrl/experiments/run_flags.h"
#include "asyncrl/misc/space.h"

namespace asyncrl {

// What a program's make_env gets: which environment, for which worker, and
// the run's settings for training environments.
struct EnvContext {
  std::string env;              // --env.
  std::string env_kwargs;       // --env-kwargs (a JSON object, or "").
  int process_idx = 0;          // Worker index (0 for probes and --demo).
  bool test = false;            // An evaluation environment.
  double reward_scale = 1.0;    // --reward-scale-factor for training, else 1.
  int64_t max_episode_len = 0;  // --max-episode-len (0: the env's limit).
};

// What a program's make_agent gets. `flags` holds every parsed option
// (flags->agent is A3C's; flags->resolved every flag as text).
struct AgentContext {
  int process_idx = 0;  // Worker index; 0 for the parent's agent.
  Space observation_space;
  Space action_space;
  uint64_t seed = 0;  // This worker's seed, derived from --seed.
  const RunFlags* flags = nullptr;
};

struct TrainerPlugins {
  // Name in messages, --help and --version.
  std::string program = "train_a3c";
  // Empty: DefaultEnv (the registry's --env). Called in the parent (probe,
  // test=true) and in every worker; the trainer seeds what it returns.
  std::function<std::unique_ptr<Env>(const EnvContext&)> make_env;
  // Empty: MakeA3C (A3C with the network --arch). Called once in the parent
  // (process_idx 0) to lay out the shared state, then in every worker. An
  // agent that refuses its options or spaces throws std::invalid_argument
  // (an InvalidOption whose field is one of `flags` is reported as that
  // flag): exit status 2 before anything is written.
  std::function<std::unique_ptr<Agent>(const AgentContext&)> make_agent;
  // The program's own flags (misc/flag_spec.h): each fills the variable it
  // points to (which must outlive RunTrainer) before make_env/make_agent
  // run; its default is the variable's value. Shown in --help under the
  // program's name, recorded in args.json, restored by --resume.
  FlagSpecs flags;
  // The program's own trainer extensions (experiments/extension.h), built
  // from the parsed options once per run, after the built-in ones
  // (curriculum, self-play): their hooks are called, and their scores.txt
  // columns written, after those.
  std::function<Extensions(const RunFlags& flags)> extensions;
  // The reference's global_step_hooks: built from the parsed options once
  // per run, each called by every worker after every environment step as
  // hook(env, agent, global step), after the built-in ones (--lr-decay).
  std::function<std::vector<StepHook>(const RunFlags& flags)> step_hooks;
};

// The registry's environment `context.env` with the reward scale and time
// limit of the context applied.
std::unique_ptr<Env> DefaultEnv(const EnvContext& context);

// train_a3c's agent: A3C with flags->agent's options and the network
// flags->arch for the context's spaces.
std::unique_ptr<Agent> MakeA3C(const AgentContext& context);

// Parses argv, then trains (or with --demo evaluates) and returns the exit
// status: 0 done, 1 a worker failed (or another error), 2 invalid flags
// (one line on stderr, nothing created), 130/143 stopped by SIGINT/SIGTERM.
// Prints what train_a3c prints. Call it from main, once per process, before
// any tensor work (it configures LibTorch for fork).
int RunTrainer(int argc, const char* const* argv,
               const TrainerPlugins& plugins = {});

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_RUN_TRAINER_H_
