#include "asyncrl/agents/models.h"

#include <stdexcept>

#include "asyncrl/agents/conv_models.h"
#include "asyncrl/agents/policy_script.h"
#include "asyncrl/agents/recurrent_models.h"
#include "asyncrl/misc/strings.h"

namespace asyncrl {
namespace {

enum class Activation { kRelu, kTanh };

torch::nn::Sequential Mlp(int64_t in, const std::vector<int64_t>& hidden,
                          int64_t out, Activation activation) {
  torch::nn::Sequential seq;
  int64_t width = in;
  for (int64_t h : hidden) {
    seq->push_back(torch::nn::Linear(width, h));
    if (activation == Activation::kRelu) {
      seq->push_back(torch::nn::ReLU());
    } else {
      seq->push_back(torch::nn::Tanh());
    }
    width = h;
  }
  seq->push_back(torch::nn::Linear(width, out));
  return seq;
}

// The Linear layers of an Mlp(), input to output.
std::vector<DenseDescription::Layer> DenseLayers(
    const torch::nn::Sequential& seq) {
  std::vector<DenseDescription::Layer> layers;
  for (const auto& child : seq->children()) {
    if (const auto* linear = child->as<torch::nn::LinearImpl>()) {
      layers.push_back({linear->weight, linear->bias});
    }
  }
  return layers;
}

int64_t ObsSize(const Space& observation_space) {
  if (observation_space.IsDiscrete()) {
    throw std::invalid_argument(
        "observation space " + observation_space.ToString() +
        " is not supported; accepted: Box observations");
  }
  return observation_space.FlatSize();
}

template <typename Model>
std::shared_ptr<ActorCriticModel> Share(Model model) {
  return std::static_pointer_cast<ActorCriticModel>(model.ptr());
}

}  // namespace

std::string AutoArch(const Space& observation_space,
                     const Space& action_space) {
  if (!action_space.IsDiscrete()) return "fc-gaussian";
  const auto& s = observation_space.shape;
  if (!observation_space.IsDiscrete() && s.size() == 3) {
    return s[1] >= 20 && s[2] >= 20 ? "atari-conv" : "minatar-conv";
  }
  return "fc-softmax";
}

ModelStep ActorCriticModel::Step(const torch::Tensor& obs,
                                 const torch::Tensor& state) {
  return {Forward(obs), state};
}

UnrollOutput ActorCriticModel::Unroll(const UnrollInput& input) {
  const int64_t n = input.obs.size(0);
  const int64_t b = input.bootstrap_obs.size(0);
  UnrollOutput result;
  if (b == 0) {
    result.output = Forward(input.obs);
    result.bootstrap_values = torch::zeros({0});
    return result;
  }
  // One pass over both: a single larger matrix product is cheaper than two.
  ModelOutput all = Forward(torch::cat({input.obs, input.bootstrap_obs}));
  auto rows = [n](const torch::Tensor& t) {
    return t.defined() ? t.slice(0, 0, n) : t;
  };
  result.output = {rows(all.logits), rows(all.mean), rows(all.log_std),
                   rows(all.value)};
  result.bootstrap_values = all.value.slice(0, n, n + b).detach();
  return result;
}

FcSoftmaxActorCriticImpl::FcSoftmaxActorCriticImpl(int64_t obs_size,
                                                   int64_t n_actions,
                                                   std::vector<int64_t> hidden)
    : pi_(register_module("pi",
                          Mlp(obs_size, hidden, n_actions, Activation::kRelu))),
      v_(register_module("v", Mlp(obs_size, hidden, 1, Activation::kRelu))) {}

ModelOutput FcSoftmaxActorCriticImpl::Forward(const torch::Tensor& obs) {
  ModelOutput out;
  out.logits = pi_->forward(obs);
  out.value = v_->forward(obs).squeeze(-1);
  return out;
}

std::optional<ScriptedOutput> FcSoftmaxActorCriticImpl::Script(
    ScriptWriter& writer, const std::string& obs,
    const std::string& /*state*/) const {
  ScriptedOutput out;
  out.logits = writer.Sequential(*pi_, obs, "pi");
  out.value = writer.Sequential(*v_, obs, "v") + ".squeeze(-1)";
  return out;
}

std::optional<DenseDescription> FcSoftmaxActorCriticImpl::Describe() const {
  DenseDescription d;
  d.kind = PolicyKind::kCategorical;
  d.pi = DenseLayers(pi_);
  d.v = DenseLayers(v_);
  d.tanh = false;
  return d;
}

void GaussianHead::Register(torch::nn::Module& module,
                            const Space& action_space) {
  log_std = module.register_parameter("log_std",
                                      torch::zeros({action_space.FlatSize()}));
  auto low = torch::tensor(action_space.low);
  auto high = torch::tensor(action_space.high);
  center = module.register_buffer("center", (high + low) / 2);
  half_range = module.register_buffer("half_range", (high - low) / 2);
}

void GaussianHead::Apply(const torch::Tensor& raw, ModelOutput* out) const {
  out->mean = center + half_range * torch::tanh(raw);
  out->log_std = log_std.expand_as(out->mean);
}

void GaussianHead::Script(ScriptWriter& writer, const std::string& raw,
                          ScriptedOutput* out) const {
  const std::string c = writer.Tensor(center, "center", false);
  const std::string r = writer.Tensor(half_range, "half_range", false);
  const std::string s = writer.Tensor(log_std, "log_std", true);
  out->mean =
      writer.Assign(c + " + " + r + " * torch.tanh(" + raw + ")", "mean");
  out->log_std = s + ".expand_as(" + out->mean + ")";
}

FcGaussianActorCriticImpl::FcGaussianActorCriticImpl(
    int64_t obs_size, const Space& action_space, std::vector<int64_t> hidden)
    : pi_(register_module("pi", Mlp(obs_size, hidden, action_space.FlatSize(),
                                    Activation::kTanh))),
      v_(register_module("v", Mlp(obs_size, hidden, 1, Activation::kTanh))) {
  head_.Register(*this, action_space);
}

ModelOutput FcGaussianActorCriticImpl::Forward(const torch::Tensor& obs) {
  ModelOutput out;
  head_.Apply(pi_->forward(obs), &out);
  out.value = v_->forward(obs).squeeze(-1);
  return out;
}

std::optional<ScriptedOutput> FcGaussianActorCriticImpl::Script(
    ScriptWriter& writer, const std::string& obs,
    const std::string& /*state*/) const {
  ScriptedOutput out;
  head_.Script(writer, writer.Sequential(*pi_, obs, "pi"), &out);
  out.value = writer.Sequential(*v_, obs, "v") + ".squeeze(-1)";
  return out;
}

std::optional<DenseDescription> FcGaussianActorCriticImpl::Describe() const {
  DenseDescription d;
  d.kind = PolicyKind::kGaussian;
  d.pi = DenseLayers(pi_);
  d.v = DenseLayers(v_);
  d.tanh = true;
  d.log_std = head_.log_std;
  d.center = head_.center;
  d.half_range = head_.half_range;
  return d;
}

void ModelRegistry::Register(const std::string& name, Entry entry) {
  if (!entries_.emplace(name, std::move(entry)).second) {
    throw std::logic_error("model '" + name + "' is already registered");
  }
}

std::vector<std::string> ModelRegistry::Names() const {
  std::vector<std::string> names{"auto"};
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

bool ModelRegistry::Contains(const std::string& name) const {
  return name == "auto" || entries_.count(name) > 0;
}

std::shared_ptr<ActorCriticModel> ModelRegistry::Make(
    const std::string& name, const Space& observation_space,
    const Space& action_space) const {
  std::string resolved = name;
  if (name == "auto") resolved = AutoArch(observation_space, action_space);
  auto it = entries_.find(resolved);
  if (it == entries_.end()) {
    throw std::invalid_argument("unknown arch '" + name +
                                "'; registered: " + JoinNames(Names()));
  }
  if (it->second.discrete_actions != action_space.IsDiscrete()) {
    throw std::invalid_argument(
        "arch '" + resolved + "' needs a " +
        (it->second.discrete_actions ? "Discrete" : "Box") +
        " action space; the environment's is " + action_space.ToString());
  }
  return it->second.factory(observation_space, action_space);
}

void RegisterBuiltinModels(ModelRegistry& registry) {
  registry.Register("fc-softmax",
                    {[](const Space& obs, const Space& act) {
                       return Share(FcSoftmaxActorCritic(ObsSize(obs), act.n));
                     },
                     true});
  registry.Register("fc-gaussian",
                    {[](const Space& obs, const Space& act) {
                       return Share(FcGaussianActorCritic(ObsSize(obs), act));
                     },
                     false});
  registry.Register("minatar-conv",
                    {[](const Space& obs, const Space& act) {
                       return Share(TrunkActorCritic(MinAtarTrunk(obs), act.n));
                     },
                     true});
  registry.Register("atari-conv",
                    {[](const Space& obs, const Space& act) {
                       return Share(TrunkActorCritic(AtariTrunk(obs), act.n));
                     },
                     true});
  registry.Register("board-conv",
                    {[](const Space& obs, const Space& act) {
                       return Share(TrunkActorCritic(BoardTrunk(obs), act.n));
                     },
                     true});
  // LSTM variants: the conv trunks feed an LSTM of the trunk's width; the
  // fully connected ones are the reference's LSTMGaussian layout (per branch
  // Linear(obs, 200) -> ReLU -> LSTM(200, 128)) and its softmax twin.
  registry.Register("minatar-conv-lstm",
                    {[](const Space& obs, const Space& act) {
                       return Share(LstmActorCritic(
                           std::vector<Trunk>{MinAtarTrunk(obs)}, 128, act));
                     },
                     true});
  registry.Register("atari-conv-lstm",
                    {[](const Space& obs, const Space& act) {
                       return Share(LstmActorCritic(
                           std::vector<Trunk>{AtariTrunk(obs)}, 256, act));
                     },
                     true});
  for (const bool discrete : {true, false}) {
    registry.Register(
        discrete ? "fc-softmax-lstm" : "fc-gaussian-lstm",
        {[](const Space& obs, const Space& act) {
           return Share(LstmActorCritic(
               std::vector<Trunk>{FcTrunk(obs, 200), FcTrunk(obs, 200)}, 128,
               act));
         },
         discrete});
  }
}

ModelRegistry& DefaultModelRegistry() {
  static ModelRegistry* registry = [] {
    auto* r = new ModelRegistry();
    RegisterBuiltinModels(*r);
    return r;
  }();
  return *registry;
}

}  // namespace asyncrl
