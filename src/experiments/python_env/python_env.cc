#include "asyncrl/experiments/python_env/python_env.h"

#include <pybind11/embed.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "asyncrl/envs/env.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/json.h"
#include "asyncrl/misc/platform/process_group.h"

namespace py = pybind11;

namespace asyncrl {
namespace {

constexpr char kPrefix[] = "python:";
constexpr char kPattern[] = "python:MODULE:FACTORY";
constexpr char kApi[] =
    "Gymnasium's API: reset(seed=None, options=None) -> (observation, info), "
    "step(action) -> (observation, reward, terminated, truncated, info)";

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::string Shorten(std::string text, size_t max = 120) {
  text = OneLine(std::move(text));
  if (text.size() > max) text = text.substr(0, max - 3) + "...";
  return text;
}

// MODULE and FACTORY (a dotted attribute path) of "python:MODULE:FACTORY".
struct Target {
  std::string module;
  std::string attr;
};

Target ParseTarget(const std::string& name) {
  const std::string rest = name.substr(std::strlen(kPrefix));
  const size_t colon = rest.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size() ||
      rest.find(':', colon + 1) != std::string::npos) {
    throw std::invalid_argument(
        "'" + name + "' is not " + kPattern +
        " (a module on PYTHONPATH or in the current folder, and a callable in "
        "it that returns an environment, e.g. python:my_envs:Corridor)");
  }
  return Target{rest.substr(0, colon), rest.substr(colon + 1)};
}

// This process's interpreter, started at the first use. Python's own
// signal handlers stay off: the trainer handles SIGINT and SIGTERM.
void EnsureInterpreter() {
  if (Py_IsInitialized()) return;
  py::initialize_interpreter(/*init_signal_handlers=*/false, 0, nullptr,
                             /*add_program_dir_to_path=*/false);
  // The current folder first on sys.path, as `python -m` has it.
  py::module_::import("sys").attr("path").attr("insert")(
      0, std::filesystem::current_path().string());
}

// "TypeError: message" of the Python exception `e` (one line), after its
// traceback has been written to stderr (the worker's log) when `traceback`.
std::string DescribeError(py::error_already_set& e, bool traceback) {
  std::string type = "exception";
  std::string message;
  try {
    type = py::str(e.type().attr("__name__"));
    message = py::str(e.value());
    if (traceback) {
      py::object lines =
          py::module_::import("traceback")
              .attr("format_exception")(e.type(), e.value(), e.trace());
      const std::string text = py::str(py::str("").attr("join")(lines));
      std::fprintf(stderr, "%s", text.c_str());
      std::fflush(stderr);
    }
  } catch (const std::exception&) {
    // The description is best effort; the type and message stay.
  }
  return message.empty() ? type : type + ": " + OneLine(message);
}

// The kind of a dtype's name or of a buffer's format character: 'f' float,
// 'i' signed integer, 'u' unsigned integer, 'b' bool, '?' anything else.
char DtypeKind(const std::string& dtype) {
  if (dtype.rfind("float", 0) == 0) return 'f';
  if (dtype.rfind("uint", 0) == 0) return 'u';
  if (dtype.rfind("int", 0) == 0) return 'i';
  if (dtype == "bool") return 'b';
  return '?';
}

char FormatKind(char format) {
  switch (format) {
    case 'f':
    case 'd':
    case 'e':
      return 'f';
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
      return 'i';
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
      return 'u';
    case '?':
      return 'b';
    default:
      return '?';
  }
}

// A Python space read into asyncrl's: a Box, or a Discrete (an observation
// one is a one-hot Box).
struct PySpace {
  Space space;
  std::string dtype = "float32";
  int64_t start = 0;     // Discrete's first value.
  bool one_hot = false;  // A Discrete observation space.
};

// What the parent knows of an environment without Python: its spaces and
// parameters.
struct Description {
  PySpace obs;
  PySpace act;
  std::vector<EnvParameter> params;
};

// The flat values of `value` (a number, a nested sequence, or anything
// with tolist(), e.g. a NumPy array), expected `size` of them (a single
// number is repeated).
std::vector<float> FlatFloats(py::handle value, size_t size,
                              const std::string& what) {
  py::object v = py::reinterpret_borrow<py::object>(value);
  if (py::hasattr(v, "tolist")) v = v.attr("tolist")();
  std::vector<float> out;
  // Depth-first, in order.
  std::function<void(py::handle)> walk = [&](py::handle h) {
    if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
      for (py::handle item : h) walk(item);
    } else {
      out.push_back(static_cast<float>(
          py::float_(py::reinterpret_borrow<py::object>(h))));
    }
  };
  walk(v);
  if (out.size() == 1 && size > 1) out.assign(size, out[0]);
  if (out.size() != size) {
    throw std::invalid_argument(what + " has " + std::to_string(out.size()) +
                                " values for " + std::to_string(size) +
                                " elements");
  }
  return out;
}

PySpace ReadSpace(py::handle env, const char* attr, const std::string& name) {
  const std::string what = name + ": " + attr;
  if (!py::hasattr(env, attr)) {
    throw std::invalid_argument(what +
                                " is missing; asyncrl needs the environment's "
                                "observation_space and action_space");
  }
  py::object space = env.attr(attr);
  const std::string type = py::str(py::type::handle_of(space).attr("__name__"));
  const std::string shown = Shorten(py::repr(space));
  const bool has_shape = py::hasattr(space, "shape");
  const int64_t rank = has_shape && !space.attr("shape").is_none()
                           ? static_cast<int64_t>(py::len(space.attr("shape")))
                           : 0;
  PySpace out;
  if (py::hasattr(space, "dtype") && !space.attr("dtype").is_none()) {
    out.dtype = py::str(space.attr("dtype"));
  }
  try {
    if (has_shape && py::hasattr(space, "low") && py::hasattr(space, "high")) {
      std::vector<int64_t> shape;
      for (py::handle d : space.attr("shape")) {
        shape.push_back(py::int_(py::reinterpret_borrow<py::object>(d)));
      }
      if (shape.empty()) shape = {1};
      int64_t size = 1;
      for (int64_t d : shape) {
        if (d <= 0)
          throw std::invalid_argument("a dimension is " + std::to_string(d));
        size *= d;
      }
      const std::vector<float> low =
          FlatFloats(space.attr("low"), static_cast<size_t>(size), "low");
      const std::vector<float> high =
          FlatFloats(space.attr("high"), static_cast<size_t>(size), "high");
      for (size_t i = 0; i < low.size(); ++i) {
        if (!(low[i] <= high[i])) {
          throw std::invalid_argument("low[" + std::to_string(i) +
                                      "] is not <= high[" + std::to_string(i) +
                                      "]");
        }
      }
      out.space = Space::Box(shape, low, high);
      if (DtypeKind(out.dtype) == '?') {
        throw std::invalid_argument("its dtype is " + out.dtype);
      }
      return out;
    }
    if (py::hasattr(space, "n") && rank == 0) {
      out.space = Space::Discrete(py::int_(space.attr("n")));
      if (out.space.n < 1) throw std::invalid_argument("n < 1");
      if (py::hasattr(space, "start"))
        out.start = py::int_(space.attr("start"));
      out.dtype = "int64";
      return out;
    }
  } catch (py::error_already_set& e) {
    throw std::invalid_argument(what + " " + shown +
                                " cannot be read: " + DescribeError(e, false));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(what + " " + shown +
                                " cannot be read: " + e.what());
  }
  throw std::invalid_argument(
      what + " is " + shown + " (" + type +
      "); asyncrl trains Box (shape, low, high) and Discrete (n) spaces, as "
      "Gymnasium's (not MultiDiscrete, MultiBinary, Tuple, Dict or Text)");
}

std::vector<EnvParameter> ReadParameters(py::handle env,
                                         const std::string& name) {
  std::vector<EnvParameter> params;
  if (!py::hasattr(env, "asyncrl_parameters")) return params;
  const std::string what = name + ": asyncrl_parameters";
  try {
    py::object declared = env.attr("asyncrl_parameters");
    if (!PyDict_Check(declared.ptr())) {
      throw std::invalid_argument("is not a dict");
    }
    for (auto item : py::reinterpret_borrow<py::dict>(declared)) {
      EnvParameter p;
      p.name = py::str(item.first);
      py::dict spec = py::reinterpret_borrow<py::dict>(item.second);
      if (!spec.contains("min") || !spec.contains("max")) {
        throw std::invalid_argument("'" + p.name +
                                    "' needs \"min\" and \"max\"");
      }
      p.min = py::float_(spec["min"]);
      p.max = py::float_(spec["max"]);
      if (spec.contains("help")) p.help = py::str(spec["help"]);
      if (spec.contains("integer")) p.integer = py::bool_(spec["integer"]);
      if (!py::hasattr(env, p.name.c_str())) {
        throw std::invalid_argument("'" + p.name +
                                    "' is not an attribute of the environment "
                                    "(its value is the default)");
      }
      p.default_value = py::float_(env.attr(p.name.c_str()));
      if (!(p.min <= p.default_value && p.default_value <= p.max)) {
        throw std::invalid_argument("'" + p.name + "' is " +
                                    std::to_string(p.default_value) +
                                    ", outside its [min, max]");
      }
      params.push_back(p);
    }
  } catch (py::error_already_set& e) {
    throw std::invalid_argument(what +
                                " cannot be read: " + DescribeError(e, false));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(what + ": " + e.what() +
                                " (declare {\"NAME\": {\"min\": A, \"max\": "
                                "B, \"help\": \"...\"}})");
  }
  return params;
}

Description Describe(py::handle env, const std::string& name) {
  for (const char* method : {"reset", "step"}) {
    if (!py::hasattr(env, method)) {
      throw std::invalid_argument(name + ": the environment has no " + method +
                                  "() method; asyncrl takes " + kApi);
    }
  }
  Description d;
  d.obs = ReadSpace(env, "observation_space", name);
  d.act = ReadSpace(env, "action_space", name);
  if (d.obs.space.IsDiscrete()) {
    d.obs.one_hot = true;
    d.obs.space = Space::Box({d.obs.space.n}, 0.0f, 1.0f);
  }
  d.params = ReadParameters(env, name);
  return d;
}

// Imports MODULE, calls FACTORY(**kwargs). Errors are std::invalid_argument
// naming the step that failed.
py::object CreateEnv(const std::string& name, const std::string& kwargs) {
  const Target target = ParseTarget(name);
  py::object factory;
  try {
    factory = py::module_::import(target.module.c_str());
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_ModuleNotFoundError) &&
        py::str(e.value().attr("name")).cast<std::string>() == target.module) {
      throw std::invalid_argument(
          name + ": no module named '" + target.module +
          "' (looked in the current folder, PYTHONPATH and Python's own "
          "paths)");
    }
    throw std::invalid_argument(name + ": importing " + target.module +
                                " raised " + DescribeError(e, true));
  }
  std::string path = target.module;
  std::stringstream parts(target.attr);
  for (std::string part; std::getline(parts, part, '.');) {
    if (!py::hasattr(factory, part.c_str())) {
      throw std::invalid_argument(name + ": " + path + " has no attribute '" +
                                  part + "'");
    }
    factory = factory.attr(part.c_str());
    path += "." + part;
  }
  if (!PyCallable_Check(factory.ptr())) {
    throw std::invalid_argument(name + ": " + path +
                                " is not callable (a class or a function "
                                "that returns an environment)");
  }
  py::object env;
  try {
    if (kwargs.empty()) {
      env = factory();
    } else {
      py::object args =
          py::module_::import("json").attr("loads")(py::str(kwargs));
      if (!PyDict_Check(args.ptr())) {
        throw std::invalid_argument(name +
                                    ": --env-kwargs is not a JSON object");
      }
      env = factory(**py::reinterpret_borrow<py::dict>(args));
    }
  } catch (py::error_already_set& e) {
    throw std::invalid_argument(name + ": " + target.attr + "(" + kwargs +
                                ") raised " + DescribeError(e, true));
  }
  if (env.is_none()) {
    throw std::invalid_argument(name + ": " + target.attr +
                                "() returned None, not an environment");
  }
  return env;
}

// The description as text lines, and back (the probe's child writes it to
// the parent). Floats print with 9 significant digits: exact for float.
void PutSpace(std::ostringstream& out, const PySpace& s) {
  out << (s.space.IsDiscrete() ? 0 : 1) << '\n'
      << s.space.n << '\n'
      << s.start << '\n'
      << s.one_hot << '\n'
      << s.dtype << '\n'
      << s.space.shape.size() << '\n';
  for (int64_t d : s.space.shape) out << d << '\n';
  char buf[32];
  for (const std::vector<float>* v : {&s.space.low, &s.space.high}) {
    for (float x : *v) {
      std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(x));
      out << buf << '\n';
    }
  }
}

std::string Serialize(const Description& d) {
  std::ostringstream out;
  PutSpace(out, d.obs);
  PutSpace(out, d.act);
  out << d.params.size() << '\n';
  char buf[32];
  for (const EnvParameter& p : d.params) {
    out << OneLine(p.name) << '\n'
        << OneLine(p.help) << '\n'
        << p.integer << '\n';
    for (double x : {p.min, p.max, p.default_value}) {
      std::snprintf(buf, sizeof(buf), "%.17g", x);
      out << buf << '\n';
    }
  }
  return out.str();
}

class Lines {
 public:
  explicit Lines(const std::string& text) : in_(text) {}
  std::string Next() {
    std::string line;
    if (!std::getline(in_, line)) {
      throw std::runtime_error("the probe's description ended early");
    }
    return line;
  }
  int64_t Int() { return std::stoll(Next()); }
  double Double() { return std::strtod(Next().c_str(), nullptr); }

 private:
  std::istringstream in_;
};

PySpace GetSpace(Lines& in) {
  PySpace s;
  const bool box = in.Int() == 1;
  const int64_t n = in.Int();
  s.start = in.Int();
  s.one_hot = in.Int() != 0;
  s.dtype = in.Next();
  std::vector<int64_t> shape(static_cast<size_t>(in.Int()));
  int64_t size = 1;
  for (int64_t& d : shape) size *= (d = in.Int());
  if (!box) {
    s.space = Space::Discrete(n);
    return s;
  }
  std::vector<float> low(static_cast<size_t>(size));
  std::vector<float> high(static_cast<size_t>(size));
  for (float& x : low) x = static_cast<float>(in.Double());
  for (float& x : high) x = static_cast<float>(in.Double());
  s.space = Space::Box(shape, low, high);
  return s;
}

Description Deserialize(const std::string& text) {
  Lines in(text);
  Description d;
  d.obs = GetSpace(in);
  d.act = GetSpace(in);
  const int64_t n = in.Int();
  for (int64_t i = 0; i < n; ++i) {
    EnvParameter p;
    p.name = in.Next();
    p.help = in.Next();
    p.integer = in.Int() != 0;
    p.min = in.Double();
    p.max = in.Double();
    p.default_value = in.Double();
    d.params.push_back(p);
  }
  return d;
}

// Builds one copy in a child process (this one must not start Python: it
// forks the workers later) and returns what it read. Cached per name and
// kwargs, so the workers (forked after) inherit it.
const Description& Probe(const std::string& name, const std::string& kwargs) {
  static std::map<std::string, Description> cache;
  const std::string key = name + '\n' + kwargs;
  const auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  if (Py_IsInitialized()) {
    // This process already runs Python (a worker, --demo, or a program
    // that embeds it): read the spaces here.
    py::object env = CreateEnv(name, kwargs);
    return cache.emplace(key, Describe(env, name)).first->second;
  }
  int fds[2];
  if (pipe(fds) != 0) {
    throw std::runtime_error(name + ": pipe failed: " + std::strerror(errno));
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    const std::string err = std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error(name + ": fork failed: " + err);
  }
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    int code = 0;
    try {
      EnsureInterpreter();
      py::object env = CreateEnv(name, kwargs);
      out = "D" + Serialize(Describe(env, name));
    } catch (py::error_already_set& e) {
      out = "E" + name + ": " + DescribeError(e, true);
      code = 1;
    } catch (const std::exception& e) {
      out = "E" + OneLine(e.what());
      code = 1;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t w = write(fds[1], out.data() + done, out.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    _exit(code);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t r = read(fds[0], buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    text.append(buf, static_cast<size_t>(r));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    throw std::invalid_argument(name + ": building the environment killed " +
                                "its process (" + SignalName(WTERMSIG(status)) +
                                ")");
  }
  if (text.empty() || text[0] != 'D') {
    throw std::invalid_argument(text.empty() ? name +
                                                   ": building the "
                                                   "environment exited "
                                                   "without a description"
                                             : text.substr(1));
  }
  return cache.emplace(key, Deserialize(text.substr(1))).first->second;
}

bool SameSpace(const Space& a, const Space& b) {
  return a.kind == b.kind && a.n == b.n && a.shape == b.shape &&
         a.low == b.low && a.high == b.high;
}

class PythonEnv : public Env {
 public:
  PythonEnv(std::string name, std::string kwargs, const Description& d)
      : name_(std::move(name)), kwargs_(std::move(kwargs)), d_(d) {
    values_.reserve(d_.params.size());
    for (const EnvParameter& p : d_.params) values_.push_back(p.default_value);
    pushed_ = values_;
    for (size_t i = 0; i < d_.params.size(); ++i) {
      const EnvParameter& p = d_.params[i];
      DeclareParameter(p.name, p.min, p.max, p.help, &values_[i], p.integer);
    }
    obs_.resize(static_cast<size_t>(d_.obs.space.FlatSize()));
  }

  std::string Name() const override { return name_; }
  const Space& ObservationSpace() const override { return d_.obs.space; }
  const Space& ActionSpace() const override { return d_.act.space; }

 protected:
  FloatView DoReset(std::optional<uint64_t> seed) override {
    if (!env_) Start();
    for (size_t i = 0; i < values_.size(); ++i) {
      if (values_[i] == pushed_[i]) continue;
      Call("setting parameter " + d_.params[i].name, [&] {
        py::object v = d_.params[i].integer
                           ? py::object(py::int_(std::llround(values_[i])))
                           : py::object(py::float_(values_[i]));
        py::setattr(env_, d_.params[i].name.c_str(), v);
        return py::none();
      });
      pushed_[i] = values_[i];
    }
    step_in_episode_ = 0;
    py::object result = Call("reset()", [&] {
      return seed ? reset_(py::arg("seed") = *seed) : reset_();
    });
    if (!(PyTuple_Check(result.ptr()) || PyList_Check(result.ptr())) ||
        py::len(result) != 2) {
      throw std::runtime_error(name_ + ": reset() returned " +
                               Shorten(py::repr(result)) +
                               "; asyncrl takes Gymnasium's (observation, "
                               "info)");
    }
    return ReadObservation(result[py::int_(0)], "reset()");
  }

  StepResult DoStep(const Action& action) override {
    ++step_in_episode_;
    py::object a = MakeAction(action);
    py::object result = Call("step()", [&] { return step_(a); });
    if (!PyTuple_Check(result.ptr()) || PyTuple_GET_SIZE(result.ptr()) != 5) {
      const bool four =
          PyTuple_Check(result.ptr()) && PyTuple_GET_SIZE(result.ptr()) == 4;
      throw std::runtime_error(
          name_ + ": step() returned " +
          (four ? std::string("4 values (gym 0.21's observation, reward, "
                              "done, info)")
                : Shorten(py::repr(result))) +
          "; asyncrl takes " + kApi);
    }
    PyObject* t = result.ptr();
    StepResult r;
    r.observation = ReadObservation(PyTuple_GET_ITEM(t, 0), "step()");
    r.reward = PyFloat_AsDouble(PyTuple_GET_ITEM(t, 1));
    if (r.reward == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      throw std::runtime_error(
          name_ + ": step() at step " + std::to_string(step_in_episode_) +
          " of an episode returned a reward of " +
          Shorten(py::repr(PyTuple_GET_ITEM(t, 1))) + ", not a number");
    }
    r.terminated = Truth(PyTuple_GET_ITEM(t, 2), "terminated");
    r.truncated = Truth(PyTuple_GET_ITEM(t, 3), "truncated");
    return r;
  }

 private:
  // Builds the Python environment in this process, checked against the
  // probe's description.
  void Start() {
    EnsureInterpreter();
    try {
      env_ = CreateEnv(name_, kwargs_);
      const Description fresh = Describe(env_, name_);
      if (!SameSpace(fresh.obs.space, d_.obs.space) ||
          !SameSpace(fresh.act.space, d_.act.space)) {
        throw std::invalid_argument(
            name_ +
            ": the factory returned an environment with other spaces "
            "than the first one's (" +
            fresh.obs.space.ToString() + " and " + fresh.act.space.ToString() +
            ", was " + d_.obs.space.ToString() + " and " +
            d_.act.space.ToString() + ")");
      }
      reset_ = env_.attr("reset");
      step_ = env_.attr("step");
      if (!d_.act.space.IsDiscrete()) {
        try {
          asarray_ = py::module_::import("numpy").attr("asarray");
        } catch (py::error_already_set&) {
          // No NumPy: Box actions are lists of floats.
        }
      }
    } catch (const std::invalid_argument& e) {
      env_ = py::object();
      throw std::runtime_error(e.what());
    }
  }

  // Runs `call` (a call into Python); an exception it raises becomes a
  // runtime_error naming the environment and the call, its traceback on
  // stderr.
  template <typename F>
  py::object Call(const std::string& what, F&& call) {
    try {
      return call();
    } catch (py::error_already_set& e) {
      throw std::runtime_error(name_ + ": " + what + " raised " +
                               DescribeError(e, true));
    }
  }

  bool Truth(PyObject* value, const char* field) {
    const int t = PyObject_IsTrue(value);
    if (t < 0) {
      PyErr_Clear();
      throw std::runtime_error(name_ + ": step() returned a " + field +
                               " that has no truth value");
    }
    return t == 1;
  }

  py::object MakeAction(const Action& action) {
    if (d_.act.space.IsDiscrete()) {
      return py::int_(action.index + d_.act.start);
    }
    py::list values(static_cast<size_t>(action.values.size));
    for (int64_t i = 0; i < action.values.size; ++i) {
      PyList_SET_ITEM(
          values.ptr(), i,
          PyFloat_FromDouble(static_cast<double>(action.values[i])));
    }
    if (!asarray_) return std::move(values);
    py::object array = Call("numpy.asarray(action)", [&] {
      return asarray_(values, py::arg("dtype") = d_.act.dtype);
    });
    if (d_.act.space.shape.size() > 1) {
      py::tuple shape(d_.act.space.shape.size());
      for (size_t i = 0; i < d_.act.space.shape.size(); ++i) {
        shape[i] = py::int_(d_.act.space.shape[i]);
      }
      array = array.attr("reshape")(shape);
    }
    return array;
  }

  [[noreturn]] void BadObservation(const char* call, const std::string& what) {
    throw std::runtime_error(
        name_ + ": " + call +
        (step_in_episode_ > 0
             ? " at step " + std::to_string(step_in_episode_) + " of an episode"
             : std::string()) +
        " returned an observation " + what + "; observation_space " +
        (d_.obs.one_hot
             ? "is Discrete(" + std::to_string(d_.obs.space.shape[0]) + ")"
             : "has shape " + ShapeToString(d_.obs.space.shape) +
                   " and dtype " + d_.obs.dtype));
  }

  FloatView ReadObservation(py::handle obs, const char* call) {
    const int64_t size = d_.obs.space.FlatSize();
    if (d_.obs.one_hot) {
      const long long v = PyLong_AsLongLong(obs.ptr());
      if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        BadObservation(call, Shorten(py::repr(obs)));
      }
      const long long index = v - d_.obs.start;
      if (index < 0 || index >= size) {
        BadObservation(call, std::to_string(v) + " (out of range)");
      }
      std::fill(obs_.begin(), obs_.end(), 0.0f);
      obs_[static_cast<size_t>(index)] = 1.0f;
      return FloatView{obs_.data(), size};
    }
    if (PyObject_CheckBuffer(obs.ptr())) {
      ReadBuffer(obs, call);
    } else if (PyList_Check(obs.ptr()) || PyTuple_Check(obs.ptr())) {
      int64_t filled = 0;
      ReadSequence(obs.ptr(), 0, &filled, call);
      if (filled != size) {
        BadObservation(call, "of " + std::to_string(filled) + " values");
      }
    } else if (PyNumber_Check(obs.ptr()) && size == 1) {
      obs_[0] = static_cast<float>(PyFloat_AsDouble(obs.ptr()));
      if (PyErr_Occurred()) {
        PyErr_Clear();
        BadObservation(call, Shorten(py::repr(obs)));
      }
    } else {
      BadObservation(call,
                     "of type " + std::string(Py_TYPE(obs.ptr())->tp_name));
    }
    return FloatView{obs_.data(), size};
  }

  // A nested list/tuple, checked against the space's shape level by level.
  void ReadSequence(PyObject* seq, size_t level, int64_t* filled,
                    const char* call) {
    const std::vector<int64_t>& shape = d_.obs.space.shape;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (level >= shape.size() || n != shape[level]) {
      BadObservation(call, "whose dimension " + std::to_string(level) +
                               " has " + std::to_string(n) + " values");
    }
    PyObject** items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = items[i];
      if (PyList_Check(item) || PyTuple_Check(item)) {
        ReadSequence(item, level + 1, filled, call);
        continue;
      }
      if (level + 1 != shape.size()) {
        BadObservation(call,
                       "with a number at dimension " + std::to_string(level));
      }
      const double v = PyFloat_AsDouble(item);
      if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        BadObservation(call, "holding " + Shorten(py::repr(item)));
      }
      obs_[static_cast<size_t>((*filled)++)] = static_cast<float>(v);
    }
  }

  // An object with the buffer protocol (a NumPy array, array.array).
  void ReadBuffer(py::handle obs, const char* call) {
    Py_buffer view;
    if (PyObject_GetBuffer(obs.ptr(), &view, PyBUF_RECORDS_RO) != 0) {
      PyErr_Clear();
      BadObservation(call, "whose buffer cannot be read");
    }
    struct Release {
      Py_buffer* v;
      ~Release() { PyBuffer_Release(v); }
    } release{&view};
    std::vector<int64_t> shape(view.shape, view.shape + view.ndim);
    const std::vector<int64_t>& want = d_.obs.space.shape;
    const bool scalar_ok = view.ndim == 0 && want == std::vector<int64_t>{1};
    if (shape != want && !scalar_ok) {
      BadObservation(call, "of shape " + ShapeToString(shape));
    }
    std::string format = view.format ? view.format : "B";
    if (!format.empty() &&
        (format[0] == '<' || format[0] == '=' || format[0] == '@' ||
         format[0] == '!' || format[0] == '>')) {
      format = format.substr(1);
    }
    const char f = format.size() == 1 ? format[0] : 'x';
    if (FormatKind(f) == '?' || FormatKind(f) != DtypeKind(d_.obs.dtype)) {
      BadObservation(call, "of buffer format '" + format + "'");
    }
    const int64_t size = d_.obs.space.FlatSize();
    const char* base = static_cast<const char*>(view.buf);
    std::vector<int64_t> index(want.size(), 0);
    for (int64_t k = 0; k < size; ++k) {
      const char* p = base;
      for (int d = 0; d < view.ndim; ++d) p += index[d] * view.strides[d];
      obs_[static_cast<size_t>(k)] = Element(p, f);
      for (int d = view.ndim - 1; d >= 0; --d) {
        if (++index[d] < view.shape[d]) break;
        index[d] = 0;
      }
    }
  }

  static float Element(const char* p, char f) {
    auto get = [p](auto zero) {
      decltype(zero) v;
      std::memcpy(&v, p, sizeof(v));
      return static_cast<float>(v);
    };
    switch (f) {
      case 'f':
        return get(0.0f);
      case 'd':
        return get(0.0);
      case 'b':
        return get(static_cast<signed char>(0));
      case 'B':
      case '?':
        return get(static_cast<unsigned char>(0));
      case 'h':
        return get(static_cast<int16_t>(0));
      case 'H':
        return get(static_cast<uint16_t>(0));
      case 'i':
        return get(static_cast<int32_t>(0));
      case 'I':
        return get(static_cast<uint32_t>(0));
      case 'l':
      case 'q':
        return get(static_cast<int64_t>(0));
      case 'L':
      case 'Q':
        return get(static_cast<uint64_t>(0));
      default:
        return 0.0f;  // 'e' (half): refused above by its size; unreachable.
    }
  }

  std::string name_;
  std::string kwargs_;
  Description d_;
  std::vector<double> values_;  // The parameters' values (declared targets).
  std::vector<double> pushed_;  // The values last set on the Python object.
  py::object env_;
  py::object reset_;
  py::object step_;
  py::object asarray_;  // numpy.asarray where NumPy imports.
  std::vector<float> obs_;
  int64_t step_in_episode_ = 0;
};

}  // namespace

void RegisterPythonEnvironments(EnvRegistry& registry) {
  if (registry.MatchesPrefix(std::string(kPrefix) + "m:f")) return;
  registry.RegisterPrefix(
      kPrefix, kPattern,
      [](const std::string& name,
         const EnvOptions& options) -> std::unique_ptr<Env> {
        ParseTarget(name);
        if (!options.kwargs.empty()) {
          Json args;
          try {
            args = Json::Parse(options.kwargs);
          } catch (const std::exception& e) {
            throw std::invalid_argument(name + ": --env-kwargs " +
                                        options.kwargs +
                                        " is not JSON: " + e.what());
          }
          if (!args.IsObject()) {
            throw std::invalid_argument(
                name + ": --env-kwargs " + options.kwargs +
                " is not a JSON object ({\"NAME\": value, ...})");
          }
        }
        return std::make_unique<PythonEnv>(name, options.kwargs,
                                           Probe(name, options.kwargs));
      });
}

}  // namespace asyncrl
