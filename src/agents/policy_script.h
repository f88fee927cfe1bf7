// A trained policy as a TorchScript module (train_a3c --export): loads with
// torch.jit.load in Python and torch::jit::load in C++ without asyncrl.
//
// LibTorch's C++ modules cannot be traced or scripted, so each model writes
// its own forward pass as TorchScript source (ActorCriticModel::Script,
// through a ScriptWriter that knows the layers the built-in models are made
// of) and ExportPolicy wraps it with what the agent does around the
// network: the observation scaling and normalization the run used, and the
// legal-action mask of a game. The module's methods (B rows; `obs` is
// [B, observation size] or any [B, ...] of that many floats, the
// environment's raw observations):
//   categorical:  forward(obs) -> (logits [B, A], value [B])
//                 act(obs) -> the most probable action [B] (int64)
//   Gaussian:     forward(obs) -> (mean [B, D], log_std [B, D], value [B])
//                 act(obs) -> the mean [B, D] (inside the action bounds)
// Recurrent models take and return the state as well:
//   forward(obs, state) -> (..., value, next state [B, S])
//   act(obs, state) -> (action, next state)
//   initial_state(batch) -> zeros [batch, S] (an episode's start)
// Illegal actions of a masked game get the logit -1e30 (probability 0).
// Attributes: observation_size, action_size (A or D), state_size (0 for
// feed-forward models), categorical, and the strings the caller gives
// (ExportOptions::info: arch, env, the checkpoint, asyncrl's version).
#ifndef ASYNCRL_AGENTS_POLICY_SCRIPT_H_
#define ASYNCRL_AGENTS_POLICY_SCRIPT_H_

#include <torch/script.h>
#include <torch/torch.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "asyncrl/agents/actor_critic.h"
#include "asyncrl/agents/models.h"

namespace asyncrl {

// Writes the body of one TorchScript method: registers tensors on the
// module and appends statements. Every name it returns is an expression
// the following statements can use.
class ScriptWriter {
 public:
  explicit ScriptWriter(torch::jit::Module* module) : module_(module) {}

  // Registers a copy of `t` (detached, contiguous) as a parameter or a
  // buffer named after `hint` (dots become underscores; a number is added
  // to a name already taken); returns "self.<name>".
  std::string Tensor(const torch::Tensor& t, const std::string& hint,
                     bool parameter);
  // Appends `<new variable> = expression`; returns the variable.
  std::string Assign(const std::string& expression, const std::string& hint);
  // The layers of `seq` applied to `input`, in order: Linear, Conv2d
  // (numeric zero padding, dilation 1, one group), ReLU, Tanh, Flatten,
  // ImageView, Columns, Scale (agents/conv_models.h). Throws
  // std::invalid_argument naming any other layer. Returns the output's
  // variable.
  std::string Sequential(const torch::nn::SequentialImpl& seq,
                         const std::string& input, const std::string& hint);
  std::string Linear(const torch::nn::LinearImpl& linear,
                     const std::string& input, const std::string& hint);

  const std::string& body() const { return body_; }

 private:
  std::string Layer(const torch::nn::Module& layer, const std::string& input,
                    const std::string& hint);
  std::string Fresh(const std::string& hint,
                    const std::set<std::string>& taken);

  torch::jit::Module* module_;
  std::string body_;
  std::set<std::string> tensors_;
  std::set<std::string> variables_;
};

// The environment-side observation scaling of --scale-observations
// (envs/wrappers.h ScaleObservations): x * factor + offset, in double.
struct ObservationScaling {
  std::vector<double> factor;
  std::vector<double> offset;
};

struct ExportOptions {
  // Empty factor: the run did not scale.
  ObservationScaling scaling;
  // String attributes of the module (names: letters, digits, underscores).
  std::map<std::string, std::string> info;
};

// The agent's policy as it acts now (its local parameters, its frozen
// observation statistics). Throws std::invalid_argument when the model
// cannot write itself (ActorCriticModel::Script returns nothing) or uses a
// layer the writer does not know.
torch::jit::Module ExportPolicy(ActorCriticAgent& agent,
                                const ExportOptions& options);

// Saves `module` to `path`: serialized in memory first, then written to a
// temporary file in the same folder (a short name, whatever the length of
// `path`'s) that is renamed over it, with SIGINT, SIGTERM and SIGHUP held
// back until the file is complete or removed. An existing file is replaced
// whole or left as it was; a symbolic link is followed (the file it names
// is replaced, the link stays). Throws std::runtime_error "cannot write
// PATH: why" for a target misc/output_file.h's OutputFileProblem refuses
// and when it cannot be written (a full disk, EFBIG); no temporary file
// stays.
void SaveScriptModule(const torch::jit::Module& module,
                      const std::string& path);

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_POLICY_SCRIPT_H_
