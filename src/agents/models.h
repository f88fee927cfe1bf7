// Actor-critic networks and their registry (--arch). Each model maps a
// batch of observations to policy parameters and state values. One
// interface covers feed-forward and recurrent models: a feed-forward model
// is a recurrent one whose state has size 0, so an agent acts with Step()
// and recomputes a rollout with Unroll() without knowing which it has.
#ifndef ASYNCRL_AGENTS_MODELS_H_
#define ASYNCRL_AGENTS_MODELS_H_

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asyncrl/misc/flag_spec.h"
#include "asyncrl/misc/space.h"

namespace asyncrl {

enum class PolicyKind { kCategorical, kGaussian };

// One forward pass over a batch of B observations.
struct ModelOutput {
  torch::Tensor logits;   // [B, A]; categorical policies.
  torch::Tensor mean;     // [B, D]; Gaussian policies.
  torch::Tensor log_std;  // [B, D]; Gaussian policies.
  torch::Tensor value;    // [B].
};

// One step of acting for B sequences.
struct ModelStep {
  ModelOutput output;
  // [B, StateSize()]: the state after the step. Feed-forward models return
  // the state they were given (undefined when it was).
  torch::Tensor state;
};

// A rollout of T steps of B sequences to recompute with autograd
// (agents/rollout.h makes one from a Rollout).
struct UnrollInput {
  int64_t batch = 0;  // B.
  torch::Tensor obs;  // [T * B, observation size], step-major: row t * B + b.
  // [B, StateSize()]: the state before step 0; undefined stands for the
  // zero state (and is what feed-forward models get).
  torch::Tensor initial_state;
  // [T * B]: 1 where the row's sequence stops, because its episode ended
  // or it was cut (time limit, rollout end); the next row of that sequence
  // starts from the zero state.
  std::vector<uint8_t> sequence_end;
  torch::Tensor bootstrap_obs;  // [N, observation size]; N may be 0.
  // [N]: bootstrap observation j came after the step of row
  // bootstrap_row[j]; its value is computed from the state after that step.
  std::vector<int64_t> bootstrap_row;
};

// What Unroll() returns.
struct UnrollOutput {
  ModelOutput output;              // T * B rows, with autograd.
  torch::Tensor bootstrap_values;  // [N], outside the graph.
};

// A model made of two multilayer perceptrons, one for the policy and one
// for the value, over the observation or over a trunk they share, or over
// LSTM cells (Lstm below), as the agents' fast path (agents/dense_path.h)
// computes it without LibTorch.
// The tensors are the model's own parameters and buffers.
struct DenseDescription {
  struct Layer {
    torch::Tensor weight;  // [out, in].
    torch::Tensor bias;    // [out].
  };
  // A 2-D convolution (square kernel, stride and zero padding; no dilation,
  // one group), as torch::nn::Conv2d.
  struct Conv {
    torch::Tensor weight;  // [out channels, in channels, k, k].
    torch::Tensor bias;    // [out channels].
    int64_t stride = 1;
    int64_t padding = 0;
  };
  PolicyKind kind = PolicyKind::kCategorical;
  // The shared trunk (convolutional archs), empty `image` when there is
  // none: the observation's first C * H * W floats times `input_scale`,
  // seen as a [C, H, W] image, through `convs` then (flattened channel by
  // channel, as torch::nn::Flatten) `trunk`, ReLU after every layer; pi and
  // v read its output.
  std::vector<int64_t> image;  // [C, H, W].
  double input_scale = 1.0;
  std::vector<Conv> convs;
  std::vector<Layer> trunk;
  // Recurrent models (LstmActorCritic): LSTM cells between the trunk (or
  // the observation) and the heads, gate order i, f, g, o (as
  // torch::nn::LSTMCell). One cell: it reads the trunk's output, and pi
  // and v read its hidden output. Two: the policy's and the value's
  // branches, each cell reading its own `encoder` over the observation
  // (dense layers, ReLU after every one); pi reads the first's hidden
  // output, v the second's. The state of a sequence is each cell's h then
  // c, cell after cell (RecurrentActorCritic's).
  struct Lstm {
    torch::Tensor weight_ih;  // [4 H, input].
    torch::Tensor weight_hh;  // [4 H, H].
    torch::Tensor bias_ih;    // [4 H].
    torch::Tensor bias_hh;    // [4 H].
    std::vector<Layer> encoder;
  };
  std::vector<Lstm> lstm;
  std::vector<Layer> pi;  // Input to output; the last gives the policy's
                          // logits (or the Gaussian's unsquashed means).
  std::vector<Layer> v;   // Input to output; the last gives the value.
  bool tanh = false;      // pi's and v's hidden activation: tanh, else ReLU.
  // Gaussian policies (GaussianHead): log_std [D], center [D], half_range [D].
  torch::Tensor log_std;
  torch::Tensor center;
  torch::Tensor half_range;
};

class ScriptWriter;  // agents/policy_script.h

// What a model's Script() wrote into a TorchScript method: expressions over
// the method's variables (see ScriptWriter).
struct ScriptedOutput {
  std::string logits;   // [B, A]; categorical policies.
  std::string mean;     // [B, D]; Gaussian policies.
  std::string log_std;  // [B, D]; Gaussian policies.
  std::string value;    // [B].
  std::string state;    // [B, StateSize()]; recurrent models.
};

// Base of every actor-critic model. Not thread-safe.
class ActorCriticModel : public torch::nn::Module {
 public:
  virtual PolicyKind Kind() const = 0;
  // Floats of recurrent state per sequence; 0 for feed-forward models.
  virtual int64_t StateSize() const { return 0; }
  // `obs` is [B, observation size], float32; recurrent models start from
  // the zero (episode-start) state.
  virtual ModelOutput Forward(const torch::Tensor& obs) = 0;
  // Acting: one step of B sequences from `state` ([B, StateSize()]; may be
  // undefined when StateSize() is 0). Feed-forward models: Forward(obs).
  virtual ModelStep Step(const torch::Tensor& obs, const torch::Tensor& state);
  // Learning: the outputs of every row of a rollout, each sequence carried
  // from input.initial_state, and the values of its bootstrap observations.
  // Feed-forward models: one batched Forward over the rollout's and the
  // bootstrap rows together (the values of the latter detached).
  virtual UnrollOutput Unroll(const UnrollInput& input);
  // Models whose whole forward pass DenseDescription describes return it,
  // so agents can take the fast path; others (the default) return nothing.
  virtual std::optional<DenseDescription> Describe() const {
    return std::nullopt;
  }
  // Writes Forward() (recurrent models: Step()) as TorchScript for
  // ExportPolicy (agents/policy_script.h): registers the model's tensors on
  // the writer's module and writes the statements that compute the outputs
  // from the variables named `obs` ([B, observation size], float32) and,
  // for recurrent models, `state` ([B, StateSize()]). Models that cannot be
  // exported return nothing (the default): --export refuses them.
  virtual std::optional<ScriptedOutput> Script(
      ScriptWriter& /*writer*/, const std::string& /*obs*/,
      const std::string& /*state*/) const {
    return std::nullopt;
  }
};

// The Gaussian policy head shared by the Gaussian models: the mean squashed
// into the action bounds (center + half_range * tanh(raw)) and a
// state-independent log standard deviation (a parameter initialised to 0).
struct GaussianHead {
  torch::Tensor log_std;
  torch::Tensor center;
  torch::Tensor half_range;

  // Registers log_std (parameter, every value `log_std_init`), center and
  // half_range (buffers) on `module` for the bounds of `action_space`.
  void Register(torch::nn::Module& module, const Space& action_space,
                double log_std_init = 0.0);
  // Fills out->mean and out->log_std from the unsquashed means [B, D].
  void Apply(const torch::Tensor& raw, ModelOutput* out) const;
  // The same in TorchScript: `raw` is an expression of the unsquashed means.
  void Script(ScriptWriter& writer, const std::string& raw,
              ScriptedOutput* out) const;
};

// The reference's discrete-control network: separate policy and value MLPs
// (hidden sizes default 200, 200; ReLU, or tanh), softmax policy over n
// actions.
class FcSoftmaxActorCriticImpl : public ActorCriticModel {
 public:
  FcSoftmaxActorCriticImpl(int64_t obs_size, int64_t n_actions,
                           std::vector<int64_t> hidden = {200, 200},
                           bool tanh = false);
  PolicyKind Kind() const override { return PolicyKind::kCategorical; }
  ModelOutput Forward(const torch::Tensor& obs) override;
  std::optional<DenseDescription> Describe() const override;
  std::optional<ScriptedOutput> Script(ScriptWriter& writer,
                                       const std::string& obs,
                                       const std::string& state) const override;

 private:
  torch::nn::Sequential pi_{nullptr};
  torch::nn::Sequential v_{nullptr};
  bool tanh_;
};
TORCH_MODULE(FcSoftmaxActorCritic);

// A Gaussian policy for continuous control: policy and value MLPs (hidden
// 64, 64; tanh), mean squashed into the action bounds, state-independent
// log standard deviation (initialised to `log_std_init`, 0 by default).
class FcGaussianActorCriticImpl : public ActorCriticModel {
 public:
  FcGaussianActorCriticImpl(int64_t obs_size, const Space& action_space,
                            std::vector<int64_t> hidden = {64, 64},
                            bool tanh = true, double log_std_init = 0.0);
  PolicyKind Kind() const override { return PolicyKind::kGaussian; }
  ModelOutput Forward(const torch::Tensor& obs) override;
  std::optional<DenseDescription> Describe() const override;
  std::optional<ScriptedOutput> Script(ScriptWriter& writer,
                                       const std::string& obs,
                                       const std::string& state) const override;

 private:
  torch::nn::Sequential pi_{nullptr};
  torch::nn::Sequential v_{nullptr};
  GaussianHead head_;
  bool tanh_;
};
TORCH_MODULE(FcGaussianActorCritic);

// The shape of the networks that take one: the fully connected ones
// (fc-softmax, fc-gaussian: their hidden layers' widths and activation)
// and MinAtar's convolutional ones (minatar-conv, minatar-conv-lstm: the
// convolution's channels and the widths of the fully connected layers
// after it). "auto" is the arch's own: fc-softmax 200, 200 with ReLU;
// fc-gaussian 64, 64 with tanh; minatar-conv 16 channels and 128 (the
// MinAtar paper's). Other archs have a fixed shape and refuse anything but
// "auto".
struct NetworkOptions {
  std::string hidden_sizes = "auto";   // "auto" or widths, e.g. "64,64".
  std::string activation = "auto";     // auto, relu, tanh.
  std::string conv_channels = "auto";  // "auto" or 1 to kMaxConvChannels.
  // fc-gaussian's initial log standard deviation: "auto" (0) or a number
  // in [kMinLogStdInit, kMaxLogStdInit].
  std::string log_std_init = "auto";

  static constexpr int64_t kMaxConvChannels = 256;
  static constexpr double kMinLogStdInit = -5.0;
  static constexpr double kMaxLogStdInit = 2.0;

  FlagSpecs Flags();
  // Throws InvalidOption (misc/validate.h) naming the field.
  void Validate() const;
  // Throws InvalidOption for the first option that is not "auto" and whose
  // field (hidden_sizes, activation, conv_channels) is not in `taken`,
  // accepted "auto (<reason>)".
  void RequireAuto(const std::string& reason,
                   const std::vector<std::string>& taken = {}) const;
  // The widths, or `fallback` for "auto".
  std::vector<int64_t> Hidden(std::vector<int64_t> fallback) const;
  // Whether the hidden layers use tanh; `fallback` for "auto".
  bool Tanh(bool fallback) const;
  // The convolution's channels, or `fallback` for "auto".
  int64_t ConvChannels(int64_t fallback) const;
  // The initial log standard deviation, or `fallback` for "auto".
  double LogStdInit(double fallback) const;
};

// Name-to-factory registry of models; "auto" resolves with AutoArch.
class ModelRegistry {
 public:
  using Factory = std::function<std::shared_ptr<ActorCriticModel>(
      const Space& observation_space, const Space& action_space,
      const NetworkOptions& network)>;
  struct Entry {
    Factory factory;
    bool discrete_actions;  // Which action spaces it accepts.
    // The NetworkOptions fields the factory reads (hidden_sizes,
    // activation, conv_channels); the others are refused any but "auto".
    std::vector<std::string> shape;
  };

  void Register(const std::string& name, Entry entry);
  std::vector<std::string> Names() const;
  bool Contains(const std::string& name) const;
  // Throws std::invalid_argument listing the registered names when `name` is
  // unknown, or naming the action space it needs when it does not fit;
  // InvalidOption when `network` sets an option the arch does not read
  // (anything but "auto"), or a value it cannot build.
  std::shared_ptr<ActorCriticModel> Make(
      const std::string& name, const Space& observation_space,
      const Space& action_space, const NetworkOptions& network = {}) const;

 private:
  std::map<std::string, Entry> entries_;
};

// What "auto" picks: fc-gaussian for Box actions; for Discrete actions,
// minatar-conv for small [C, H, W] images, atari-conv for images of at least
// 20x20, fc-softmax otherwise.
std::string AutoArch(const Space& observation_space, const Space& action_space);

// Registers fc-softmax, fc-gaussian, minatar-conv, atari-conv and the LSTM
// variant of each (<name>-lstm).
void RegisterBuiltinModels(ModelRegistry& registry);
ModelRegistry& DefaultModelRegistry();

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_MODELS_H_
