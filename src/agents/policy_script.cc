#include "asyncrl/agents/policy_script.h"

#include <cctype>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "asyncrl/agents/conv_models.h"
#include "asyncrl/agents/distributions.h"
#include "asyncrl/misc/output_file.h"

namespace asyncrl {
namespace {

std::string Sanitize(const std::string& hint) {
  std::string name;
  for (char c : hint) {
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
    name = "t_" + name;
  }
  return name;
}

// A double as TorchScript reads it back exactly.
std::string Literal(double x) {
  std::ostringstream out;
  out.precision(17);
  out << x;
  std::string s = out.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string Ints(const std::vector<int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(values[i]);
  }
  return s + "]";
}

std::vector<int64_t> Pair(const torch::ExpandingArray<2>& a) {
  return {(*a)[0], (*a)[1]};
}

}  // namespace

std::string ScriptWriter::Fresh(const std::string& hint,
                                const std::set<std::string>& taken) {
  const std::string base = Sanitize(hint);
  std::string name = base;
  for (int i = 1; taken.count(name) > 0; ++i) {
    name = base + "_" + std::to_string(i);
  }
  return name;
}

std::string ScriptWriter::Tensor(const torch::Tensor& t,
                                 const std::string& hint, bool parameter) {
  const std::string name = Fresh(hint, tensors_);
  tensors_.insert(name);
  const torch::Tensor copy = t.detach().clone().contiguous();
  if (parameter) {
    module_->register_parameter(name, copy, /*is_buffer=*/false);
  } else {
    module_->register_buffer(name, copy);
  }
  return "self." + name;
}

std::string ScriptWriter::Assign(const std::string& expression,
                                 const std::string& hint) {
  const std::string name = Fresh(hint, variables_);
  variables_.insert(name);
  body_ += "    " + name + " = " + expression + "\n";
  return name;
}

std::string ScriptWriter::Linear(const torch::nn::LinearImpl& linear,
                                 const std::string& input,
                                 const std::string& hint) {
  const std::string w = Tensor(linear.weight, hint + "_weight", true);
  if (!linear.options.bias()) {
    return Assign("torch.matmul(" + input + ", " + w + ".t())", hint);
  }
  const std::string b = Tensor(linear.bias, hint + "_bias", true);
  // aten::linear of a 2-D input is this addmm.
  return Assign("torch.addmm(" + b + ", " + input + ", " + w + ".t())", hint);
}

std::string ScriptWriter::Layer(const torch::nn::Module& layer,
                                const std::string& input,
                                const std::string& hint) {
  if (const auto* linear = layer.as<torch::nn::LinearImpl>()) {
    return Linear(*linear, input, hint);
  }
  if (const auto* conv = layer.as<torch::nn::Conv2dImpl>()) {
    const auto& o = conv->options;
    const auto* padding = c10::get_if<torch::ExpandingArray<2>>(&o.padding());
    if (padding == nullptr ||
        !c10::get_if<torch::enumtype::kZeros>(&o.padding_mode()) ||
        Pair(o.dilation()) != std::vector<int64_t>{1, 1} || o.groups() != 1 ||
        !o.bias()) {
      throw std::invalid_argument(
          "cannot write " + hint +
          " as TorchScript: a Conv2d with 'same'/'valid' or non-zero "
          "padding, dilation, groups or no bias (the writer knows numeric "
          "zero padding, dilation 1, one group)");
    }
    const std::string w = Tensor(conv->weight, hint + "_weight", true);
    const std::string b = Tensor(conv->bias, hint + "_bias", true);
    return Assign("torch.conv2d(" + input + ", " + w + ", " + b + ", " +
                      Ints(Pair(o.stride())) + ", " + Ints(Pair(*padding)) +
                      ", [1, 1], 1)",
                  hint);
  }
  if (layer.as<torch::nn::ReLUImpl>() != nullptr) {
    return Assign("torch.relu(" + input + ")", hint);
  }
  if (layer.as<torch::nn::TanhImpl>() != nullptr) {
    return Assign("torch.tanh(" + input + ")", hint);
  }
  if (const auto* flatten = layer.as<torch::nn::FlattenImpl>()) {
    return Assign("torch.flatten(" + input + ", " +
                      std::to_string(flatten->options.start_dim()) + ", " +
                      std::to_string(flatten->options.end_dim()) + ")",
                  hint);
  }
  if (const auto* view = layer.as<ImageViewImpl>()) {
    std::vector<int64_t> shape = {-1};
    shape.insert(shape.end(), view->chw().begin(), view->chw().end());
    return Assign(input + ".view(" + Ints(shape) + ")", hint);
  }
  if (const auto* columns = layer.as<ColumnsImpl>()) {
    return Assign(input + "[:, " + std::to_string(columns->begin()) + ":" +
                      std::to_string(columns->end()) + "]",
                  hint);
  }
  if (const auto* scale = layer.as<ScaleImpl>()) {
    return Assign(input + " * " + Literal(scale->factor()), hint);
  }
  std::string name = layer.name();
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0) {
    name.resize(name.size() - 4);
  }
  throw std::invalid_argument(
      "cannot write " + hint + " (" + name +
      ") as TorchScript; the writer knows Linear, "
      "Conv2d, ReLU, Tanh, Flatten, ImageView, Columns, Scale");
}

std::string ScriptWriter::Sequential(const torch::nn::SequentialImpl& seq,
                                     const std::string& input,
                                     const std::string& hint) {
  std::string x = input;
  for (const auto& child : seq.named_children()) {
    x = Layer(*child.value(), x, hint + "_" + child.key());
  }
  return x;
}

namespace {

// Writes what the agent does to an observation before its network sees it
// (the run's scaling, then its normalization) on the variable `x`; returns
// the variable the network reads.
std::string WriteObservationTransforms(ScriptWriter& w, ActorCriticAgent& agent,
                                       const ObservationScaling& scaling,
                                       std::string x) {
  const int64_t obs_size = agent.observation_space().FlatSize();
  if (!scaling.factor.empty()) {
    if (static_cast<int64_t>(scaling.factor.size()) != obs_size ||
        scaling.offset.size() != scaling.factor.size()) {
      throw std::invalid_argument(
          "ExportPolicy: the observation scaling has " +
          std::to_string(scaling.factor.size()) + " factors and " +
          std::to_string(scaling.offset.size()) + " offsets; accepted: " +
          std::to_string(obs_size) + " of each (the observation's size)");
    }
    const std::string f =
        w.Tensor(torch::tensor(scaling.factor, torch::kDouble),
                 "obs_scale_factor", false);
    const std::string o =
        w.Tensor(torch::tensor(scaling.offset, torch::kDouble),
                 "obs_scale_offset", false);
    // As ScaleObservations: in double, then rounded to float.
    x = w.Assign("(" + x + ".double() * " + f + " + " + o + ").float()", "x");
  }
  ObservationNormalizer* normalizer = agent.normalizer();
  if (normalizer == nullptr) return x;
  const MomentStatistics s = normalizer->Statistics();
  const int64_t n = normalizer->size();
  std::vector<double> inv(s.var.size());
  for (size_t j = 0; j < inv.size(); ++j) {
    inv[j] = ObservationNormalizer::InverseScaleOf(s.var[j]);
  }
  const std::string mean =
      w.Tensor(torch::tensor(s.mean, torch::kDouble), "obs_mean", false);
  const std::string scale =
      w.Tensor(torch::tensor(inv, torch::kDouble), "obs_inv_std", false);
  const std::string clip = Literal(normalizer->clip());
  // As ObservationNormalizer::Apply: in double, clipped, to float; the
  // elements past `n` (a legal-action mask) pass through.
  const std::string z = "((" + x + "[:, :" + std::to_string(n) +
                        "].double() - " + mean + ") * " + scale + ").clamp(-" +
                        clip + ", " + clip + ").float()";
  return w.Assign(n == obs_size ? z
                                : "torch.cat([" + z + ", " + x + "[:, " +
                                      std::to_string(n) + ":]], 1)",
                  "x");
}

// The source of forward(), act() and (recurrent models) initial_state()
// around the statements `w` holds, which computed `out` from `x`.
std::string WriteMethods(ScriptWriter& w, const Space& obs_space,
                         const ActorCriticModel& model,
                         const ScriptedOutput& out, const std::string& x) {
  const bool categorical = model.Kind() == PolicyKind::kCategorical;
  const bool recurrent = model.StateSize() > 0;
  std::vector<std::string> returned;
  if (categorical) {
    std::string logits = w.Assign(out.logits, "logits");
    if (obs_space.action_mask > 0) {
      // As MaskLogits: a zero in the observation's mask makes the action
      // illegal.
      logits = w.Assign(
          logits + ".masked_fill(" + x + "[:, " +
              std::to_string(obs_space.FlatSize() - obs_space.action_mask) +
              ":] == 0, " + Literal(kMaskedLogit) + ")",
          "logits");
    }
    returned = {logits};
  } else {
    returned = {w.Assign(out.mean, "mean"), w.Assign(out.log_std, "log_std")};
  }
  returned.push_back(w.Assign(out.value, "value"));
  if (recurrent) returned.push_back(w.Assign(out.state, "next_state"));
  std::string values;
  std::string types;
  for (const std::string& r : returned) {
    values += (values.empty() ? "" : ", ") + r;
    types += types.empty() ? "Tensor" : ", Tensor";
  }
  const std::string args =
      recurrent ? "obs: Tensor, state: Tensor" : "obs: Tensor";
  const std::string call = recurrent ? "obs, state" : "obs";
  const std::string action = categorical ? "torch.argmax(out[0], 1)" : "out[0]";
  std::string src = "def forward(self, " + args + ") -> Tuple[" + types +
                    "]:\n" + w.body() + "    return (" + values + ")\n";
  src += "def act(self, " + args + ") -> " +
         (recurrent ? "Tuple[Tensor, Tensor]" : "Tensor") + ":\n" +
         "    out = self.forward(" + call + ")\n" + "    return " +
         (recurrent ? "(" + action + ", out[" +
                          std::to_string(returned.size() - 1) + "])"
                    : action) +
         "\n";
  if (recurrent) {
    src +=
        "def initial_state(self, batch: int) -> Tensor:\n"
        "    return torch.zeros([batch, " +
        std::to_string(model.StateSize()) + "])\n";
  }
  return src;
}

}  // namespace

torch::jit::Module ExportPolicy(ActorCriticAgent& agent,
                                const ExportOptions& options) {
  ActorCriticModel& model = agent.model();
  const Space& obs_space = agent.observation_space();
  const Space& act_space = agent.action_space();
  const bool categorical = model.Kind() == PolicyKind::kCategorical;

  torch::jit::Module module("asyncrl_policy");
  ScriptWriter w(&module);
  const std::string x = WriteObservationTransforms(
      w, agent, options.scaling,
      w.Assign("obs.reshape([obs.size(0), self.observation_size]).float()",
               "x"));
  const std::optional<ScriptedOutput> out = model.Script(w, x, "state");
  if (!out) {
    throw std::invalid_argument(
        "this agent's model cannot be exported: it does not write itself as "
        "TorchScript (ActorCriticModel::Script)");
  }
  const std::string src = WriteMethods(w, obs_space, model, *out, x);
  module.register_attribute("observation_size", c10::IntType::get(),
                            obs_space.FlatSize());
  module.register_attribute("action_size", c10::IntType::get(),
                            categorical ? act_space.n : act_space.FlatSize());
  module.register_attribute("state_size", c10::IntType::get(),
                            model.StateSize());
  module.register_attribute("categorical", c10::BoolType::get(), categorical);
  for (const auto& [name, value] : options.info) {
    module.register_attribute(Sanitize(name), c10::StringType::get(), value);
  }
  module.define(src);
  module.eval();
  return module;
}

void SaveScriptModule(const torch::jit::Module& module,
                      const std::string& path) {
  const std::string problem = OutputFileProblem(path);
  if (!problem.empty()) {
    throw std::runtime_error("cannot write " + path + ": " + problem);
  }
  // In memory first: a failing disk then fails one write(), which is
  // reported, instead of LibTorch's writer throwing from its destructor.
  std::ostringstream bytes;
  try {
    module.save(bytes);
  } catch (const std::exception& e) {
    // LibTorch's messages carry a backtrace on the following lines.
    std::string what = e.what();
    throw std::runtime_error("cannot write " + path + ": " +
                             what.substr(0, what.find('\n')));
  }
  WriteOutputFile(path, bytes.str(), "export");
}

}  // namespace asyncrl
