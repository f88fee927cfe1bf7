#include "asyncrl/agents/models.h"

#include <algorithm>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "asyncrl/agents/conv_models.h"
#include "asyncrl/agents/policy_script.h"
#include "asyncrl/agents/recurrent_models.h"
#include "asyncrl/misc/strings.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

enum class Activation { kRelu, kTanh };

Activation ActivationOf(bool tanh) {
  return tanh ? Activation::kTanh : Activation::kRelu;
}

// The widest layer and the most layers --hidden-sizes accepts: at most 8
// layers of 4096x4096 (16.8M parameters each) a network, about 1 GiB of
// parameters and 2 more of optimizer statistics in the shared region, so
// that a typo cannot ask for more than a machine has.
constexpr int64_t kMaxHiddenWidth = 4096;
constexpr size_t kMaxHiddenLayers = 8;
const char* const kHiddenSizesAccepted =
    "auto, or 1 to 8 comma-separated widths from 1 to 4096, e.g. 64,64";
// --conv-channels: at most 256 channels (MinAtar's 8x8 maps: 16,384 inputs
// to the first fully connected layer per 128 of its width, 2M parameters).

// "32" -> 32; throws InvalidOption.
int64_t ParseConvChannels(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 3 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  const int64_t channels = digits ? std::stoll(text) : 0;
  if (channels < 1 || channels > NetworkOptions::kMaxConvChannels) {
    throw InvalidOption("conv_channels", text,
                        "auto, or a whole number from 1 to " +
                            std::to_string(NetworkOptions::kMaxConvChannels));
  }
  return channels;
}

// "-2" -> -2 within NetworkOptions' bounds; throws InvalidOption.
double ParseLogStdInit(const std::string& text) {
  size_t used = 0;
  double value = std::numeric_limits<double>::quiet_NaN();
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(value >= NetworkOptions::kMinLogStdInit &&
                               value <= NetworkOptions::kMaxLogStdInit)) {
    throw InvalidOption("log_std_init", text, "auto, or a number from -5 to 2");
  }
  return value;
}

// "64,64" -> {64, 64}; throws InvalidOption.
std::vector<int64_t> ParseHiddenSizes(const std::string& text) {
  auto refuse = [&] {
    return InvalidOption("hidden_sizes", text, kHiddenSizesAccepted);
  };
  std::vector<int64_t> widths;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    if (item.empty() || item.size() > 5 ||
        item.find_first_not_of("0123456789") != std::string::npos) {
      throw refuse();
    }
    const int64_t width = std::stoll(item);
    if (width < 1 || width > kMaxHiddenWidth) throw refuse();
    widths.push_back(width);
  }
  if (widths.empty() || widths.size() > kMaxHiddenLayers ||
      text.back() == ',') {
    throw refuse();
  }
  return widths;
}

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

// NetworkOptions fields as their flags: {"hidden_sizes", "activation"} ->
// "--hidden-sizes and --activation".
std::string ShapeFlags(const std::vector<std::string>& fields) {
  std::string flags;
  for (const std::string& field : fields) {
    std::string flag = field;
    std::replace(flag.begin(), flag.end(), '_', '-');
    flags += (flags.empty() ? "--" : " and --") + flag;
  }
  return flags;
}

// MinAtar's body shaped by --conv-channels and --hidden-sizes.
Trunk MinAtarTrunkOf(const Space& observation_space,
                     const NetworkOptions& network) {
  return MinAtarTrunk(observation_space, network.ConvChannels(16),
                      network.Hidden({128}));
}

template <typename Model>
std::shared_ptr<ActorCriticModel> Share(Model model) {
  return std::static_pointer_cast<ActorCriticModel>(model.ptr());
}

}  // namespace

FlagSpecs NetworkOptions::Flags() {
  return {
      {"hidden-sizes",
       "hidden layers of fc-softmax and fc-gaussian, each of the policy's "
       "and the value's network, or the fully connected layers after "
       "minatar-conv's convolution (and minatar-conv-lstm's): "
       "comma-separated widths (e.g. 64,64), or auto (fc-softmax 200,200; "
       "fc-gaussian 64,64; minatar-conv 128)",
       &hidden_sizes},
      {"activation",
       "hidden activation of fc-softmax and fc-gaussian: relu, tanh, or "
       "auto (fc-softmax relu; fc-gaussian tanh)",
       &activation},
      {"conv-channels",
       "channels of the 3x3 convolution of minatar-conv and "
       "minatar-conv-lstm, 1 to 256, or auto (16, the MinAtar paper's)",
       &conv_channels},
      {"log-std-init",
       "initial log standard deviation of fc-gaussian's actions (before "
       "the mean's squashing into the bounds), -5 to 2, or auto (0: "
       "standard deviation 1); rl-baselines3-zoo's MuJoCo PPO uses -2",
       &log_std_init},
  };
}

void NetworkOptions::Validate() const {
  if (hidden_sizes != "auto") ParseHiddenSizes(hidden_sizes);
  if (activation != "auto" && activation != "relu" && activation != "tanh") {
    throw InvalidOption("activation", activation, "auto, relu, tanh");
  }
  if (conv_channels != "auto") ParseConvChannels(conv_channels);
  if (log_std_init != "auto") ParseLogStdInit(log_std_init);
}

void NetworkOptions::RequireAuto(const std::string& reason,
                                 const std::vector<std::string>& taken) const {
  const std::pair<const char*, const std::string*> fields[] = {
      {"hidden_sizes", &hidden_sizes},
      {"activation", &activation},
      {"conv_channels", &conv_channels},
      {"log_std_init", &log_std_init}};
  for (const auto& [field, value] : fields) {
    if (*value == "auto" ||
        std::find(taken.begin(), taken.end(), field) != taken.end()) {
      continue;
    }
    throw InvalidOption(field, *value, "auto (" + reason + ")");
  }
}

std::vector<int64_t> NetworkOptions::Hidden(
    std::vector<int64_t> fallback) const {
  return hidden_sizes == "auto" ? fallback : ParseHiddenSizes(hidden_sizes);
}

bool NetworkOptions::Tanh(bool fallback) const {
  return activation == "auto" ? fallback : activation == "tanh";
}

double NetworkOptions::LogStdInit(double fallback) const {
  return log_std_init == "auto" ? fallback : ParseLogStdInit(log_std_init);
}

int64_t NetworkOptions::ConvChannels(int64_t fallback) const {
  return conv_channels == "auto" ? fallback : ParseConvChannels(conv_channels);
}

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
                                                   std::vector<int64_t> hidden,
                                                   bool tanh)
    : pi_(register_module(
          "pi", Mlp(obs_size, hidden, n_actions, ActivationOf(tanh)))),
      v_(register_module("v", Mlp(obs_size, hidden, 1, ActivationOf(tanh)))),
      tanh_(tanh) {}

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
  d.tanh = tanh_;
  return d;
}

void GaussianHead::Register(torch::nn::Module& module,
                            const Space& action_space, double log_std_init) {
  log_std = module.register_parameter(
      "log_std", torch::full({action_space.FlatSize()}, log_std_init));
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
    int64_t obs_size, const Space& action_space, std::vector<int64_t> hidden,
    bool tanh, double log_std_init)
    : pi_(register_module("pi", Mlp(obs_size, hidden, action_space.FlatSize(),
                                    ActivationOf(tanh)))),
      v_(register_module("v", Mlp(obs_size, hidden, 1, ActivationOf(tanh)))),
      tanh_(tanh) {
  head_.Register(*this, action_space, log_std_init);
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
  d.tanh = tanh_;
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
    const Space& action_space, const NetworkOptions& network) const {
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
  const std::vector<std::string>& shape = it->second.shape;
  std::string reason = "arch " + resolved;
  if (shape.empty()) {
    // Which archs take a shape, as registered.
    std::vector<std::string> shaped;
    for (const auto& [other, entry] : entries_) {
      if (!entry.shape.empty()) {
        shaped.push_back(other + " takes " + ShapeFlags(entry.shape));
      }
    }
    reason += " has a fixed shape; " + JoinNames(shaped);
  } else {
    reason += " takes only " + ShapeFlags(shape);
  }
  // The options the arch does not read first: a value refused there is
  // refused as "auto" only, not as a number it could not take anyway.
  network.RequireAuto(reason, shape);
  network.Validate();
  return it->second.factory(observation_space, action_space, network);
}

void RegisterBuiltinModels(ModelRegistry& registry) {
  registry.Register(
      "fc-softmax",
      {[](const Space& obs, const Space& act, const NetworkOptions& network) {
         return Share(FcSoftmaxActorCritic(ObsSize(obs), act.n,
                                           network.Hidden({200, 200}),
                                           network.Tanh(false)));
       },
       true,
       {"hidden_sizes", "activation"}});
  registry.Register(
      "fc-gaussian",
      {[](const Space& obs, const Space& act, const NetworkOptions& network) {
         return Share(FcGaussianActorCritic(
             ObsSize(obs), act, network.Hidden({64, 64}), network.Tanh(true),
             network.LogStdInit(0.0)));
       },
       false,
       {"hidden_sizes", "activation", "log_std_init"}});
  registry.Register(
      "minatar-conv",
      {[](const Space& obs, const Space& act, const NetworkOptions& network) {
         return Share(TrunkActorCritic(MinAtarTrunkOf(obs, network), act.n));
       },
       true,
       {"hidden_sizes", "conv_channels"}});
  registry.Register(
      "atari-conv",
      {[](const Space& obs, const Space& act, const NetworkOptions&) {
         return Share(TrunkActorCritic(AtariTrunk(obs), act.n));
       },
       true,
       {}});
  registry.Register(
      "board-conv",
      {[](const Space& obs, const Space& act, const NetworkOptions&) {
         return Share(TrunkActorCritic(BoardTrunk(obs), act.n));
       },
       true,
       {}});
  // LSTM variants: the conv trunks feed an LSTM of the trunk's width; the
  // fully connected ones are the reference's LSTMGaussian layout (per branch
  // Linear(obs, 200) -> ReLU -> LSTM(200, 128)) and its softmax twin.
  registry.Register(
      "minatar-conv-lstm",
      {[](const Space& obs, const Space& act, const NetworkOptions& network) {
         Trunk trunk = MinAtarTrunkOf(obs, network);
         const int64_t width = trunk.features;
         return Share(
             LstmActorCritic(std::vector<Trunk>{std::move(trunk)}, width, act));
       },
       true,
       {"hidden_sizes", "conv_channels"}});
  registry.Register(
      "atari-conv-lstm",
      {[](const Space& obs, const Space& act, const NetworkOptions&) {
         return Share(
             LstmActorCritic(std::vector<Trunk>{AtariTrunk(obs)}, 256, act));
       },
       true,
       {}});
  for (const bool discrete : {true, false}) {
    registry.Register(
        discrete ? "fc-softmax-lstm" : "fc-gaussian-lstm",
        {[](const Space& obs, const Space& act, const NetworkOptions&) {
           return Share(LstmActorCritic(
               std::vector<Trunk>{FcTrunk(obs, 200), FcTrunk(obs, 200)}, 128,
               act));
         },
         discrete,
         {}});
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
