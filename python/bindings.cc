// asyncrl's Python bindings (python/bindings.h): the native environments as
// batched vector environments with Gymnasium's semantics, and a checkpoint's
// metadata. asyncrl._native (python/native.cc) is made of them, and so is a
// module of a user's own that registers C++ environments
// (DefineEnvironmentModule). Links the environment and misc layers only: no
// LibTorch in the process.
#include "bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "asyncrl/envs/registry.h"

namespace py = pybind11;

namespace asyncrl {
namespace {

// A Space as Python sees it: plain attributes.
struct PySpace {
  std::string kind;  // "discrete" or "box".
  int64_t n = 0;
  std::vector<int64_t> shape;
  std::vector<float> low;
  std::vector<float> high;
  int64_t action_mask = 0;

  static PySpace Of(const Space& s) {
    PySpace p;
    p.kind = s.IsDiscrete() ? "discrete" : "box";
    p.n = s.IsDiscrete() ? s.n : 0;
    p.shape = s.IsDiscrete() ? std::vector<int64_t>{} : s.shape;
    p.low = s.low;
    p.high = s.high;
    p.action_mask = s.action_mask;
    return p;
  }
  std::string Repr() const {
    if (kind == "discrete") return "Discrete(" + std::to_string(n) + ")";
    std::string r = "Box(shape=(";
    for (size_t i = 0; i < shape.size(); ++i) {
      r += std::to_string(shape[i]) +
           (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
    }
    r += ")";
    if (action_mask > 0) {
      r += ", action_mask=" + std::to_string(action_mask);
    }
    return r + ")";
  }
};

// N environments of one name stepped together, autoreset in the same step
// (Gymnasium's AutoresetMode.SAME_STEP): an episode that ends in step() is
// reset at once; the returned observation is the new episode's first and
// the last one of the ended episode is in info["final_obs"] (rows where
// info["_final_obs"] is True; both keys only on a step where a copy ended,
// as Gymnasium's).
class VectorEnv {
 public:
  VectorEnv(const std::string& name, int64_t num_envs,
            int64_t max_episode_steps, double reward_scale) {
    if (num_envs < 1 || num_envs > 65536) {
      throw std::invalid_argument("num_envs=" + std::to_string(num_envs) +
                                  " is invalid; accepted: 1 to 65536");
    }
    EnvOptions options;
    options.max_episode_steps = max_episode_steps;
    options.reward_scale = reward_scale;
    options.Validate();
    for (int64_t i = 0; i < num_envs; ++i) {
      envs_.push_back(MakeEnv(name, options));
    }
    obs_space_ = envs_[0]->ObservationSpace();
    act_space_ = envs_[0]->ActionSpace();
    obs_size_ = obs_space_.FlatSize();
    action_size_ = act_space_.IsDiscrete() ? 1 : act_space_.FlatSize();
  }

  int64_t num_envs() const { return static_cast<int64_t>(envs_.size()); }
  std::string name() const { return envs_[0]->Name(); }
  PySpace observation_space() const { return PySpace::Of(obs_space_); }
  PySpace action_space() const { return PySpace::Of(act_space_); }

  // Observations [N, *shape], float32.
  py::array_t<float> NewObservations() const {
    std::vector<py::ssize_t> shape = {num_envs()};
    for (int64_t d : obs_space_.shape) shape.push_back(d);
    if (obs_space_.IsDiscrete()) shape.push_back(1);
    return py::array_t<float>(shape);
  }

  py::tuple Reset(std::optional<py::object> seed) {
    std::optional<uint64_t> base;
    if (seed && !seed->is_none()) {
      // The package's VectorEnv.reset checked it: an integer in
      // [0, 2**64 - num_envs], so that every copy's seed + i fits.
      base = seed->cast<uint64_t>();
    }
    py::array_t<float> obs = NewObservations();
    float* out = obs.mutable_data();
    {
      py::gil_scoped_release release;
      const std::lock_guard<std::mutex> lock(mutex_);
      for (int64_t i = 0; i < num_envs(); ++i) {
        const FloatView o = envs_[i]->Reset(
            base ? std::optional<uint64_t>(*base + static_cast<uint64_t>(i))
                 : std::nullopt);
        std::memcpy(out + i * obs_size_, o.data, obs_size_ * sizeof(float));
      }
      last_.assign(out, out + num_envs() * obs_size_);
    }
    started_ = true;
    return py::make_tuple(obs, py::dict());
  }

  py::tuple Step(const py::array& actions) {
    if (!started_) {
      throw std::logic_error("step() before reset(): call reset() first");
    }
    const int64_t n = num_envs();
    // Discrete: [N] integers; Box: [N, D] (or [N] when D is 1).
    // Copies of the actions: the caller's array may change while the
    // environments run without the GIL.
    std::vector<int64_t> indices;
    std::vector<float> values;
    const std::string accepted = " for " + name() + "'s " +
                                 PySpace::Of(act_space_).Repr() + " x " +
                                 std::to_string(n);
    if (act_space_.IsDiscrete()) {
      const char kind = actions.dtype().kind();
      if (actions.ndim() != 1 || actions.shape(0) != n ||
          (kind != 'i' && kind != 'u')) {
        throw std::invalid_argument(
            "actions of shape " + ShapeOf(actions) + " and dtype " +
            std::string(py::str(actions.dtype())) +
            " are invalid; accepted: integers of shape (" + std::to_string(n) +
            ",)" + accepted);
      }
      auto ints = actions.cast<
          py::array_t<int64_t, py::array::c_style | py::array::forcecast>>();
      indices.assign(ints.data(), ints.data() + n);
    } else {
      const bool flat = action_size_ == 1 && actions.ndim() == 1;
      if (!(flat ||
            (actions.ndim() == 2 && actions.shape(1) == action_size_)) ||
          actions.shape(0) != n) {
        throw std::invalid_argument(
            "actions of shape " + ShapeOf(actions) +
            " are invalid; accepted: floats of shape (" + std::to_string(n) +
            ", " + std::to_string(action_size_) + ")" + accepted);
      }
      const auto floats = actions.cast<
          py::array_t<float, py::array::c_style | py::array::forcecast>>();
      values.assign(floats.data(), floats.data() + n * action_size_);
    }
    const auto action_of = [&](int64_t i) {
      return act_space_.IsDiscrete()
                 ? Action::Discrete(indices[i])
                 : Action::Continuous(values.data() + i * action_size_,
                                      action_size_);
    };
    // The results' arrays, made while the GIL is held.
    py::array_t<float> obs = NewObservations();
    py::array_t<double> rewards(n);
    py::array_t<bool> terminated(n);
    py::array_t<bool> truncated(n);
    py::array_t<float> final_obs = NewObservations();
    py::array_t<bool> has_final(n);
    float* o = obs.mutable_data();
    double* r = rewards.mutable_data();
    bool* term = terminated.mutable_data();
    bool* trunc = truncated.mutable_data();
    float* fin = final_obs.mutable_data();
    bool* has = has_final.mutable_data();
    std::memset(fin, 0, static_cast<size_t>(n * obs_size_) * sizeof(float));
    {
      // One call at a time on these environments (they are not
      // thread-safe), which run without the GIL.
      py::gil_scoped_release release;
      const std::lock_guard<std::mutex> lock(mutex_);
      // Every action is checked before any environment steps: a refused
      // batch changes nothing.
      for (int64_t i = 0; i < n; ++i) {
        try {
          envs_[i]->ValidateAction(action_of(i));
        } catch (const std::invalid_argument& e) {
          throw std::invalid_argument("actions[" + std::to_string(i) +
                                      "]: " + e.what());
        }
        if (obs_space_.action_mask > 0 &&
            last_[i * obs_size_ + obs_size_ - obs_space_.action_mask +
                  indices[i]] == 0) {
          throw std::invalid_argument(
              "actions[" + std::to_string(i) + "]: " + envs_[i]->Name() +
              ": action " + std::to_string(indices[i]) +
              " is illegal in this position; accepted: an action whose "
              "entry of the observation's legal-action mask is 1");
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        const StepResult s = envs_[i]->Step(action_of(i));
        r[i] = s.reward;
        term[i] = s.terminated;
        trunc[i] = s.truncated;
        has[i] = s.Done();
        FloatView next = s.observation;
        if (s.Done()) {
          std::memcpy(fin + i * obs_size_, next.data,
                      obs_size_ * sizeof(float));
          next = envs_[i]->Reset();
        }
        std::memcpy(o + i * obs_size_, next.data, obs_size_ * sizeof(float));
      }
      // A game's legal-action mask is checked against them next step.
      if (obs_space_.action_mask > 0) {
        std::memcpy(last_.data(), o, last_.size() * sizeof(float));
      }
    }
    // As Gymnasium: the keys only on a step where a copy ended.
    py::dict info;
    if (std::any_of(has, has + n, [](bool b) { return b; })) {
      info["final_obs"] = final_obs;
      info["_final_obs"] = has_final;
    }
    return py::make_tuple(obs, rewards, terminated, truncated, info);
  }

  void SetParameter(const std::string& name, double value) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto& env : envs_) env->SetParameter(name, value);
  }
  double Parameter(const std::string& name) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return envs_[0]->Parameter(name);
  }
  py::list Parameters() const {
    py::list out;
    for (const EnvParameter& p : envs_[0]->Parameters()) {
      py::dict d;
      d["name"] = p.name;
      d["default"] = p.default_value;
      d["min"] = p.min;
      d["max"] = p.max;
      d["integer"] = p.integer;
      d["help"] = p.help;
      out.append(d);
    }
    return out;
  }

 private:
  static std::string ShapeOf(const py::array& a) {
    std::string s = "(";
    for (py::ssize_t i = 0; i < a.ndim(); ++i) {
      s += std::to_string(a.shape(i)) + (a.ndim() == 1 ? "," : "") +
           (i + 1 < a.ndim() ? ", " : "");
    }
    return s + ")";
  }

  std::vector<std::unique_ptr<Env>> envs_;
  Space obs_space_;
  Space act_space_;
  int64_t obs_size_ = 0;
  int64_t action_size_ = 0;
  bool started_ = false;
  std::vector<float> last_;   // The observations returned last ([N, size]).
  mutable std::mutex mutex_;  // Held by every call that touches envs_.
};

}  // namespace
}  // namespace asyncrl

namespace asyncrl::python {

void DefineNativeModule(py::module_& m, bool module_local) {
  using asyncrl::PySpace;
  using asyncrl::VectorEnv;
  py::class_<PySpace>(m, "Space", py::module_local(module_local))
      .def_readonly("kind", &PySpace::kind)
      .def_readonly("n", &PySpace::n)
      .def_property_readonly("shape",
                             [](const PySpace& s) {
                               py::tuple t(s.shape.size());
                               for (size_t i = 0; i < s.shape.size(); ++i)
                                 t[i] = s.shape[i];
                               return t;
                             })
      .def_readonly("low", &PySpace::low)
      .def_readonly("high", &PySpace::high)
      .def_readonly("action_mask", &PySpace::action_mask)
      .def("__repr__", &PySpace::Repr);
  py::class_<VectorEnv>(m, "VectorEnv", py::module_local(module_local))
      .def(py::init<const std::string&, int64_t, int64_t, double>(),
           py::arg("name"), py::arg("num_envs") = 1,
           py::arg("max_episode_steps") = 0, py::arg("reward_scale") = 1.0)
      .def("reset", &VectorEnv::Reset, py::arg("seed") = py::none())
      .def("step", &VectorEnv::Step, py::arg("actions"))
      .def("set_parameter", &VectorEnv::SetParameter, py::arg("name"),
           py::arg("value"))
      .def("parameter", &VectorEnv::Parameter, py::arg("name"))
      .def("parameters", &VectorEnv::Parameters)
      .def_property_readonly("num_envs", &VectorEnv::num_envs)
      .def_property_readonly("name", &VectorEnv::name)
      .def_property_readonly("single_observation_space",
                             &VectorEnv::observation_space)
      .def_property_readonly("single_action_space", &VectorEnv::action_space);
  m.def("env_names", [] { return asyncrl::DefaultEnvRegistry().Names(); });
  // pybind11 raises std::invalid_argument as ValueError, std::logic_error
  // (step before reset) and std::runtime_error as RuntimeError.
}

void DefineEnvironmentModule(py::module_& m) {
  DefineNativeModule(m, /*module_local=*/true);
  py::module_::import("asyncrl").attr("add_environments")(m);
}

}  // namespace asyncrl::python
