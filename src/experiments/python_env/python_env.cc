#include "asyncrl/experiments/python_env/python_env.h"

#include <pybind11/embed.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
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
  bool scalar = false;   // A Box of shape (): one value, given unwrapped.
};

// What the parent knows of an environment without Python: its spaces and
// parameters.
struct Description {
  PySpace obs;
  PySpace act;
  std::vector<EnvParameter> params;
  // A vector environment's num_envs (its spaces are the single_ ones); 0:
  // one environment.
  int64_t copies = 0;
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
    throw std::invalid_argument(
        what + " is missing; asyncrl needs the environment's " +
        (std::string(attr).rfind("single_", 0) == 0
             ? "single_observation_space and single_action_space (a vector "
               "environment: it has num_envs)"
             : "observation_space and action_space"));
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
      if (shape.empty()) {
        shape = {1};
        out.scalar = true;
      }
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

constexpr char kVectorApi[] =
    "a vector environment that resets an ended copy in the same step, with "
    "its last observation in info[\"final_obs\"] (Gymnasium's "
    "AutoresetMode.SAME_STEP; \"final_observation\" as in Gymnasium 0.29)";

// A vector environment's num_envs, checked, and its autoreset mode where it
// declares one (Gymnasium 1.1's metadata["autoreset_mode"]).
int64_t ReadCopies(py::handle env, const std::string& name) {
  int64_t copies = 0;
  try {
    copies = py::int_(env.attr("num_envs"));
  } catch (py::error_already_set& e) {
    throw std::invalid_argument(
        name + ": num_envs cannot be read: " + DescribeError(e, false));
  }
  if (copies < 1 || copies > 4096) {
    throw std::invalid_argument(name + ": num_envs is " +
                                std::to_string(copies) +
                                "; accepted: 1 to 4096 copies");
  }
  if (py::hasattr(env, "asyncrl_parameters")) {
    throw std::invalid_argument(
        name +
        ": asyncrl_parameters on a vector environment is not taken; "
        "accepted: parameters declared on a single environment, whose "
        "copies asyncrl makes (--envs-per-process)");
  }
  if (py::hasattr(env, "metadata") &&
      PyDict_Check(env.attr("metadata").ptr())) {
    py::dict metadata = env.attr("metadata");
    if (metadata.contains("autoreset_mode")) {
      py::object mode = metadata["autoreset_mode"];
      if (py::hasattr(mode, "value")) mode = mode.attr("value");
      const std::string shown = py::str(mode);
      std::string lower = shown;
      for (char& c : lower) c = static_cast<char>(std::tolower(c));
      if (lower.find("same") == std::string::npos) {
        throw std::invalid_argument(name + ": its autoreset_mode is " + shown +
                                    "; asyncrl takes " + kVectorApi);
      }
    }
  }
  return copies;
}

Description Describe(py::handle env, const std::string& name) {
  for (const char* method : {"reset", "step"}) {
    if (!py::hasattr(env, method)) {
      throw std::invalid_argument(name + ": the environment has no " + method +
                                  "() method; asyncrl takes " + kApi);
    }
  }
  Description d;
  const bool vector = py::hasattr(env, "num_envs") &&
                      py::hasattr(env, "single_observation_space");
  if (vector) d.copies = ReadCopies(env, name);
  d.obs = ReadSpace(
      env, vector ? "single_observation_space" : "observation_space", name);
  d.act = ReadSpace(env, vector ? "single_action_space" : "action_space", name);
  if (d.obs.space.IsDiscrete()) {
    d.obs.one_hot = true;
    d.obs.space = Space::Box({d.obs.space.n}, 0.0f, 1.0f);
  }
  if (!vector) d.params = ReadParameters(env, name);
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
      << s.scalar << '\n'
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
  out << d.copies << '\n' << d.params.size() << '\n';
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
  s.scalar = in.Int() != 0;
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
  d.copies = in.Int();
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

// Builds the Python environment `d` describes in this process (starting
// its interpreter), checked against `d` (the probe's description): a
// factory whose second object differs is a runtime_error.
py::object Build(const std::string& name, const std::string& kwargs,
                 const Description& d) {
  EnsureInterpreter();
  try {
    py::object env = CreateEnv(name, kwargs);
    const Description fresh = Describe(env, name);
    if (!SameSpace(fresh.obs.space, d.obs.space) ||
        !SameSpace(fresh.act.space, d.act.space) || fresh.copies != d.copies) {
      throw std::invalid_argument(
          name +
          ": the factory returned an environment with other spaces "
          "than the first one's (" +
          fresh.obs.space.ToString() + " and " + fresh.act.space.ToString() +
          (fresh.copies > 0 ? ", " + std::to_string(fresh.copies) + " copies"
                            : "") +
          ", was " + d.obs.space.ToString() + " and " + d.act.space.ToString() +
          (d.copies > 0 ? ", " + std::to_string(d.copies) + " copies" : "") +
          ")");
    }
    return env;
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
}

// numpy.asarray, or None where NumPy does not import (actions are then
// lists).
py::object NumpyAsarray() {
  try {
    return py::module_::import("numpy").attr("asarray");
  } catch (py::error_already_set&) {
    return py::object();
  }
}

// Runs `call` (a call into Python); an exception it raises becomes a
// runtime_error naming the environment and the call, its traceback on
// stderr.
template <typename F>
py::object CallPython(const std::string& name, const std::string& what,
                      F&& call) {
  try {
    return call();
  } catch (py::error_already_set& e) {
    throw std::runtime_error(name + ": " + what + " raised " +
                             DescribeError(e, true));
  }
}

// The observation of reset()'s result, Gymnasium's pair (`pair`: what it
// holds); anything else is a runtime_error.
py::object ResetObservation(const std::string& name, const py::object& result,
                            const char* pair) {
  if (!(PyTuple_Check(result.ptr()) || PyList_Check(result.ptr())) ||
      py::len(result) != 2) {
    throw std::runtime_error(name + ": reset() returned " +
                             Shorten(py::repr(result)) +
                             "; asyncrl takes Gymnasium's (" + pair + ")");
  }
  return result[py::int_(0)];
}

// step()'s result is Gymnasium's tuple of 5; gym 0.21's 4 (`old`: what
// they were) or anything else is a runtime_error saying what `api` is.
void CheckStepResult(const std::string& name, const py::object& result,
                     const char* old, const std::string& api) {
  if (PyTuple_Check(result.ptr()) && PyTuple_GET_SIZE(result.ptr()) == 5) {
    return;
  }
  const bool four =
      PyTuple_Check(result.ptr()) && PyTuple_GET_SIZE(result.ptr()) == 4;
  throw std::runtime_error(
      name + ": step() returned " +
      (four ? "4 values (gym 0.21's " + std::string(old) + ")"
            : Shorten(py::repr(result))) +
      "; asyncrl takes " + api);
}

bool IsTrue(const std::string& name, PyObject* value, const char* field) {
  const int t = PyObject_IsTrue(value);
  if (t < 0) {
    PyErr_Clear();
    throw std::runtime_error(name + ": step() returned a " + field +
                             " that has no truth value");
  }
  return t == 1;
}

// Where an observation came from, for messages: the call, a vector
// environment's copy (-1: none) and the step of the episode (0: a reset).
struct Where {
  const char* call;
  int64_t copy;
  int64_t step;
};

// Reads observations into float buffers, checked against the declared
// space's shape and dtype (a wrong one is a runtime_error naming the
// environment, the call and what came).
class ObservationReader {
 public:
  ObservationReader(std::string name, PySpace space)
      : name_(std::move(name)), space_(std::move(space)) {}

  int64_t Size() const { return space_.space.FlatSize(); }

  // Reads `obs` into out[0, Size()).
  void Read(py::handle obs, float* out, const Where& at) const {
    const int64_t size = space_.space.FlatSize();
    if (space_.one_hot) {
      const long long v = PyLong_AsLongLong(obs.ptr());
      if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        BadObservation(at, Shorten(py::repr(obs)));
      }
      const long long index = v - space_.start;
      if (index < 0 || index >= size) {
        BadObservation(at, std::to_string(v) + " (out of range)");
      }
      std::fill(out, out + size, 0.0f);
      out[index] = 1.0f;
      return;
    }
    if (PyObject_CheckBuffer(obs.ptr())) {
      ReadBuffer(obs, out, at);
    } else if (PyList_Check(obs.ptr()) || PyTuple_Check(obs.ptr())) {
      int64_t filled = 0;
      ReadSequence(obs.ptr(), 0, &filled, out, at);
      if (filled != size) {
        BadObservation(at, "of " + std::to_string(filled) + " values");
      }
    } else if (PyNumber_Check(obs.ptr()) && size == 1) {
      out[0] = static_cast<float>(PyFloat_AsDouble(obs.ptr()));
      if (PyErr_Occurred()) {
        PyErr_Clear();
        BadObservation(at, Shorten(py::repr(obs)));
      }
    } else {
      BadObservation(at, "of type " + std::string(Py_TYPE(obs.ptr())->tp_name));
    }
  }

 private:
  [[noreturn]] void BadObservation(const Where& at,
                                   const std::string& what) const {
    throw std::runtime_error(
        name_ + ": " + at.call +
        (at.copy >= 0 ? " for copy " + std::to_string(at.copy) : "") +
        (at.step > 0 ? " at step " + std::to_string(at.step) + " of an episode"
                     : std::string()) +
        " returned an observation " + what + "; " +
        (at.copy >= 0 ? "single_observation_space " : "observation_space ") +
        (space_.one_hot
             ? "is Discrete(" + std::to_string(space_.space.shape[0]) + ")"
             : "has shape " + ShapeToString(space_.space.shape) +
                   " and dtype " + space_.dtype));
  }

  // A nested list/tuple, checked against the space's shape level by level.
  void ReadSequence(PyObject* seq, size_t level, int64_t* filled, float* out,
                    const Where& at) const {
    const std::vector<int64_t>& shape = space_.space.shape;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (level >= shape.size() || n != shape[level]) {
      BadObservation(at, "whose dimension " + std::to_string(level) + " has " +
                             std::to_string(n) + " values");
    }
    PyObject** items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = items[i];
      if (PyList_Check(item) || PyTuple_Check(item)) {
        ReadSequence(item, level + 1, filled, out, at);
        continue;
      }
      if (level + 1 != shape.size()) {
        BadObservation(at,
                       "with a number at dimension " + std::to_string(level));
      }
      const double v = PyFloat_AsDouble(item);
      if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        BadObservation(at, "holding " + Shorten(py::repr(item)));
      }
      out[static_cast<size_t>((*filled)++)] = static_cast<float>(v);
    }
  }

  // An object with the buffer protocol (a NumPy array, array.array).
  void ReadBuffer(py::handle obs, float* out, const Where& at) const {
    Py_buffer view;
    if (PyObject_GetBuffer(obs.ptr(), &view, PyBUF_RECORDS_RO) != 0) {
      PyErr_Clear();
      BadObservation(at, "whose buffer cannot be read");
    }
    struct Release {
      Py_buffer* v;
      ~Release() { PyBuffer_Release(v); }
    } release{&view};
    std::vector<int64_t> shape(view.shape, view.shape + view.ndim);
    const std::vector<int64_t>& want = space_.space.shape;
    const bool scalar_ok = view.ndim == 0 && want == std::vector<int64_t>{1};
    if (shape != want && !scalar_ok) {
      BadObservation(at, "of shape " + ShapeToString(shape));
    }
    std::string format = view.format ? view.format : "B";
    if (!format.empty() &&
        (format[0] == '<' || format[0] == '=' || format[0] == '@' ||
         format[0] == '!' || format[0] == '>')) {
      format = format.substr(1);
    }
    const char f = format.size() == 1 ? format[0] : 'x';
    if (FormatKind(f) == '?' || FormatKind(f) != DtypeKind(space_.dtype)) {
      BadObservation(at, "of buffer format '" + format + "'");
    }
    const int64_t size = space_.space.FlatSize();
    const char* base = static_cast<const char*>(view.buf);
    std::vector<int64_t> index(want.size(), 0);
    for (int64_t k = 0; k < size; ++k) {
      const char* p = base;
      for (int d = 0; d < view.ndim; ++d) p += index[d] * view.strides[d];
      out[static_cast<size_t>(k)] = Element(p, f);
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
  PySpace space_;
};

class PythonEnv : public Env {
 public:
  PythonEnv(std::string name, std::string kwargs, const Description& d)
      : name_(std::move(name)),
        kwargs_(std::move(kwargs)),
        d_(d),
        reader_(name_, d_.obs) {
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
    return ReadObservation(ResetObservation(name_, result, "observation, info"),
                           "reset()");
  }

  FloatView ReadObservation(py::handle obs, const char* call) {
    reader_.Read(obs, obs_.data(), Where{call, -1, step_in_episode_});
    return FloatView{obs_.data(), reader_.Size()};
  }

  StepResult DoStep(const Action& action) override {
    ++step_in_episode_;
    py::object a = MakeAction(action);
    py::object result = Call("step()", [&] { return step_(a); });
    CheckStepResult(name_, result, "observation, reward, done, info", kApi);
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
    env_ = Build(name_, kwargs_, d_);
    reset_ = env_.attr("reset");
    step_ = env_.attr("step");
    if (!d_.act.space.IsDiscrete()) asarray_ = NumpyAsarray();
  }

  template <typename F>
  py::object Call(const std::string& what, F&& call) {
    return CallPython(name_, what, std::forward<F>(call));
  }

  bool Truth(PyObject* value, const char* field) {
    return IsTrue(name_, value, field);
  }

  py::object MakeAction(const Action& action) {
    if (d_.act.space.IsDiscrete()) {
      return py::int_(action.index + d_.act.start);
    }
    if (d_.act.scalar) {
      // Shape (): the value itself, a 0-d array with NumPy.
      py::float_ value(static_cast<double>(action.values[0]));
      if (!asarray_) return std::move(value);
      return Call("numpy.asarray(action)", [&] {
        return asarray_(value, py::arg("dtype") = d_.act.dtype);
      });
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

  std::string name_;
  std::string kwargs_;
  Description d_;
  std::vector<double> values_;  // The parameters' values (declared targets).
  std::vector<double> pushed_;  // The values last set on the Python object.
  py::object env_;
  py::object reset_;
  py::object step_;
  py::object asarray_;  // numpy.asarray where NumPy imports.
  ObservationReader reader_;
  std::vector<float> obs_;
  int64_t step_in_episode_ = 0;
};

// Item `i` of a Python sequence (a list, a tuple, a NumPy array's row).
py::object Item(py::handle seq, int64_t i) {
  PyObject* item = PySequence_GetItem(seq.ptr(), static_cast<Py_ssize_t>(i));
  if (item == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(item);
}

// A user's vector environment (num_envs, single_observation_space,
// single_action_space; Gymnasium's VectorEnv) taken whole: one Python
// object stepped once for all its copies. Each copy is a PythonVectorCopy;
// the training loop steps them together (EnvBatch). A copy used on its own
// (the evaluator, --demo) steps the whole object with its action given to
// every copy.
class PythonVectorBatch final : public EnvBatch {
 public:
  PythonVectorBatch(std::string name, std::string kwargs, const Description& d)
      : name_(std::move(name)),
        kwargs_(std::move(kwargs)),
        d_(d),
        reader_(name_, d_.obs),
        copies_(static_cast<size_t>(d_.copies)) {
    for (Copy& c : copies_) {
      c.obs.assign(static_cast<size_t>(reader_.Size()), 0.0f);
      c.start.assign(static_cast<size_t>(reader_.Size()), 0.0f);
    }
  }

  const std::string& name() const { return name_; }
  const Description& description() const { return d_; }
  int64_t Copies() const override { return d_.copies; }

  void ResetAll(const std::vector<uint64_t>& seeds) override {
    if (static_cast<int64_t>(seeds.size()) != d_.copies) {
      throw std::logic_error(name_ + ": ResetAll got " +
                             std::to_string(seeds.size()) + " seeds for " +
                             std::to_string(d_.copies) + " copies");
    }
    batched_ = true;
    if (!env_) Start();
    // One int when the seeds run on by one (the trainer's do): Gymnasium's
    // rule gives copy i seed + i, and its VectorEnv.reset takes only an int.
    bool consecutive = true;
    for (size_t i = 0; i < seeds.size(); ++i) {
      consecutive = consecutive && seeds[i] == seeds[0] + i;
    }
    if (consecutive) {
      Reset(py::int_(seeds[0]));
      return;
    }
    py::list list(seeds.size());
    for (size_t i = 0; i < seeds.size(); ++i) list[i] = py::int_(seeds[i]);
    Reset(list);
  }

  void StepAll(const std::vector<Action>& actions, int64_t active) override {
    batched_ = true;
    Step(actions, active);
  }

  FloatView ResetCopy(int64_t c, std::optional<uint64_t> seed) {
    if (!copies_[c].started) {
      if (batched_) {
        throw std::logic_error(
            name_ + ": copy " + std::to_string(c) +
            " of the vector environment was asked to reset in the middle of "
            "its episode (cut by the trainer or an extension); a vector "
            "environment ends its copies' episodes itself (give it its own "
            "time limit)");
      }
      if (!env_) Start();
      Reset(seed ? py::object(py::int_(*seed)) : py::object(py::none()));
    }
    Copy& copy = copies_[c];
    copy.started = false;
    copy.has_result = false;
    copy.step = 0;
    std::swap(copy.obs, copy.start);
    return FloatView{copy.obs.data(), reader_.Size()};
  }

  StepResult StepCopy(int64_t c, const Action& action) {
    if (!copies_[c].has_result) {
      if (batched_) {
        throw std::logic_error(name_ + ": copy " + std::to_string(c) +
                               " was stepped before the vector environment");
      }
      Step(std::vector<Action>(static_cast<size_t>(d_.copies), action),
           d_.copies);
    }
    Copy& copy = copies_[c];
    copy.has_result = false;
    StepResult r;
    r.observation = FloatView{copy.obs.data(), reader_.Size()};
    r.reward = copy.reward;
    r.terminated = copy.terminated;
    r.truncated = copy.truncated;
    return r;
  }

 private:
  struct Copy {
    std::vector<float> obs;    // What the copy's last Reset/Step returned.
    std::vector<float> start;  // The next episode's first observation.
    bool started = false;      // `start` holds one (reset, or autoreset).
    bool has_result = false;   // A step's outcome waits for the copy's Step.
    double reward = 0;
    bool terminated = false;
    bool truncated = false;
    int64_t step = 0;  // Steps in the copy's episode, for messages.
  };

  void Start() {
    env_ = Build(name_, kwargs_, d_);
    reset_ = env_.attr("reset");
    step_ = env_.attr("step");
    asarray_ = NumpyAsarray();
  }

  // The vector reset (seed: an int, a list of one per copy, or None): every
  // copy's next episode starts.
  void Reset(py::object seed) {
    py::object result = CallPython(
        name_, "reset()", [&] { return reset_(py::arg("seed") = seed); });
    py::object obs =
        Batched(ResetObservation(name_, result, "observations, infos"),
                "reset()", "observations");
    for (int64_t c = 0; c < d_.copies; ++c) {
      Copy& copy = copies_[c];
      reader_.Read(Item(obs, c), copy.start.data(), Where{"reset()", c, 0});
      copy.started = true;
      copy.has_result = false;
    }
  }

  // `value` when it holds one item per copy.
  py::object Batched(py::handle value, const char* call, const char* what) {
    const Py_ssize_t n =
        PySequence_Check(value.ptr()) ? PySequence_Size(value.ptr()) : -1;
    if (n < 0) PyErr_Clear();
    if (n != d_.copies) {
      throw std::runtime_error(
          name_ + ": " + call + " returned " + what + " " +
          (n < 0 ? "that are not a sequence (" + Shorten(py::repr(value)) + ")"
                 : "for " + std::to_string(n) + " copies") +
          "; num_envs is " + std::to_string(d_.copies));
    }
    return py::reinterpret_borrow<py::object>(value);
  }

  py::object MakeActions(const std::vector<Action>& actions, int64_t active) {
    const Space& space = d_.act.space;
    py::list list(static_cast<size_t>(d_.copies));
    for (int64_t c = 0; c < d_.copies; ++c) {
      const Action& a = actions[c < active ? c : 0];
      if (space.IsDiscrete()) {
        list[c] = py::int_(a.index + d_.act.start);
        continue;
      }
      if (d_.act.scalar) {  // Shape (): the batch is [num_envs].
        list[c] = py::float_(static_cast<double>(a.values[0]));
        continue;
      }
      py::list values(static_cast<size_t>(a.values.size));
      for (int64_t i = 0; i < a.values.size; ++i) {
        PyList_SET_ITEM(values.ptr(), i,
                        PyFloat_FromDouble(static_cast<double>(a.values[i])));
      }
      list[c] = values;
    }
    if (!asarray_) return std::move(list);
    py::object array = CallPython(name_, "numpy.asarray(actions)", [&] {
      return asarray_(list, py::arg("dtype") = d_.act.dtype);
    });
    if (!space.IsDiscrete() && !d_.act.scalar) {
      py::tuple shape(space.shape.size() + 1);
      shape[0] = py::int_(d_.copies);
      for (size_t i = 0; i < space.shape.size(); ++i) {
        shape[i + 1] = py::int_(space.shape[i]);
      }
      array = array.attr("reshape")(shape);
    }
    return array;
  }

  // info["final_obs"] (or Gymnasium 0.29's "final_observation") and its
  // mask, where the step ended a copy.
  std::pair<py::object, py::object> FinalObservations(py::handle infos) {
    if (!PyDict_Check(infos.ptr())) return {};
    py::dict dict = py::reinterpret_borrow<py::dict>(infos);
    for (const char* key : {"final_obs", "final_observation"}) {
      if (!dict.contains(key)) continue;
      const std::string mask = std::string("_") + key;
      const std::string shown = "infos[\"" + std::string(key) + "\"]";
      const std::string shown_mask = "infos[\"" + mask + "\"]";
      return {Batched(dict[key], "step()", shown.c_str()),
              dict.contains(mask.c_str())
                  ? Batched(dict[mask.c_str()], "step()", shown_mask.c_str())
                  : py::object()};
    }
    return {};
  }

  void Step(const std::vector<Action>& actions, int64_t active) {
    py::object a = MakeActions(actions, active);
    py::object result = CallPython(name_, "step()", [&] { return step_(a); });
    CheckStepResult(name_, result, "observations, rewards, dones, infos",
                    "Gymnasium's step(actions) -> (observations, rewards, "
                    "terminations, truncations, infos)");
    PyObject* t = result.ptr();
    py::object obs = Batched(PyTuple_GET_ITEM(t, 0), "step()", "observations");
    py::object rewards = Batched(PyTuple_GET_ITEM(t, 1), "step()", "rewards");
    py::object terms =
        Batched(PyTuple_GET_ITEM(t, 2), "step()", "terminations");
    py::object truncs =
        Batched(PyTuple_GET_ITEM(t, 3), "step()", "truncations");
    auto [finals, mask] = FinalObservations(PyTuple_GET_ITEM(t, 4));
    for (int64_t c = 0; c < d_.copies; ++c) {
      Copy& copy = copies_[c];
      ++copy.step;
      py::object reward = Item(rewards, c);
      copy.reward = PyFloat_AsDouble(reward.ptr());
      if (copy.reward == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        throw std::runtime_error(name_ + ": step() for copy " +
                                 std::to_string(c) + " returned a reward of " +
                                 Shorten(py::repr(reward)) + ", not a number");
      }
      copy.terminated = IsTrue(name_, Item(terms, c).ptr(), "termination");
      copy.truncated = IsTrue(name_, Item(truncs, c).ptr(), "truncation");
      copy.has_result = true;
      if (!copy.terminated && !copy.truncated) {
        reader_.Read(Item(obs, c), copy.obs.data(),
                     Where{"step()", c, copy.step});
        continue;
      }
      const bool has_final =
          finals && (!mask || IsTrue(name_, Item(mask, c).ptr(), "mask"));
      if (!has_final) {
        throw std::runtime_error(
            name_ + ": step() ended copy " + std::to_string(c) +
            "'s episode without its last observation in infos; asyncrl "
            "takes " +
            kVectorApi);
      }
      reader_.Read(Item(finals, c), copy.obs.data(),
                   Where{"step() (final_obs)", c, copy.step});
      reader_.Read(Item(obs, c), copy.start.data(), Where{"step()", c, 0});
      copy.started = true;
    }
  }

  std::string name_;
  std::string kwargs_;
  Description d_;
  ObservationReader reader_;
  std::vector<Copy> copies_;
  bool batched_ = false;  // Stepped as a batch: no copy steps on its own.
  py::object env_;
  py::object reset_;
  py::object step_;
  py::object asarray_;
};

// Copy `copy` of a PythonVectorBatch.
class PythonVectorCopy final : public Env {
 public:
  PythonVectorCopy(std::shared_ptr<PythonVectorBatch> batch, int64_t copy)
      : batch_(std::move(batch)), copy_(copy) {}

  std::string Name() const override { return batch_->name(); }
  const Space& ObservationSpace() const override {
    return batch_->description().obs.space;
  }
  const Space& ActionSpace() const override {
    return batch_->description().act.space;
  }
  EnvBatch* Batch(int64_t* copy) override {
    *copy = copy_;
    return batch_.get();
  }
  int64_t BatchCopies() const override { return batch_->Copies(); }

 protected:
  FloatView DoReset(std::optional<uint64_t> seed) override {
    return batch_->ResetCopy(copy_, seed);
  }
  StepResult DoStep(const Action& action) override {
    return batch_->StepCopy(copy_, action);
  }

 private:
  std::shared_ptr<PythonVectorBatch> batch_;
  int64_t copy_;
};

// The copies a process makes one after another share a vector environment
// until it has num_envs of them: a worker's first envs_per_process
// environments are its training batch (train_loop.cc checks that they are
// copies 0..n-1 of one), the next one its evaluation's (a batch of its own).
std::unique_ptr<Env> MakeVectorCopy(const std::string& name,
                                    const std::string& kwargs,
                                    const Description& d) {
  static pid_t pid = 0;
  static std::string key;
  static std::weak_ptr<PythonVectorBatch> open;
  static int64_t next = 0;
  std::shared_ptr<PythonVectorBatch> batch = open.lock();
  if (pid != getpid() || key != name + '\n' + kwargs || !batch ||
      next == d.copies) {
    pid = getpid();
    key = name + '\n' + kwargs;
    batch = std::make_shared<PythonVectorBatch>(name, kwargs, d);
    open = batch;
    next = 0;
  }
  return std::make_unique<PythonVectorCopy>(batch, next++);
}

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
        const Description& d = Probe(name, options.kwargs);
        if (d.copies > 0) return MakeVectorCopy(name, options.kwargs, d);
        return std::make_unique<PythonEnv>(name, options.kwargs, d);
      });
}

}  // namespace asyncrl
