// asyncrl._native: asyncrl's Python bindings (python/bindings.h) over the
// environments asyncrl ships, and a checkpoint's metadata
// (python/asyncrl/__init__.py is the public face; docs/python.md). The
// checkpoint reader is here, not in the bindings a user's module links:
// the generated protobuf code registers checkpoint.proto with the process's
// one libprotobuf, and a second copy of it in the same process aborts.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "asyncrl/misc/checkpoint.h"
#include "bindings.h"

namespace py = pybind11;

namespace asyncrl {
namespace {

// A checkpoint directory's metadata (no tensors).
py::dict ReadCheckpoint(const std::string& dir) {
  const proto::Checkpoint c = LoadCheckpointDir(dir);
  py::dict out;
  out["agent_type"] = c.agent_type();
  out["global_step"] = c.global_step();
  out["episodes"] = c.episodes();
  out["elapsed_seconds"] = c.elapsed_seconds();
  out["best_score"] =
      c.has_best_score() ? py::object(py::float_(c.best_score())) : py::none();
  out["env"] = py::bytes(c.metadata().env());
  out["build_revision"] = c.metadata().build_revision();
  out["created_unix_ms"] = c.metadata().created_unix_ms();
  py::dict config;
  for (const auto& [key, value] : c.metadata().config()) {
    config[py::str(key)] = py::bytes(value);
  }
  out["config"] = config;
  py::dict shapes;
  for (const auto& t : c.parameters()) {
    shapes[py::str(t.name())] =
        std::vector<int64_t>(t.shape().begin(), t.shape().end());
  }
  out["parameters"] = shapes;
  return out;
}

}  // namespace
}  // namespace asyncrl

PYBIND11_MODULE(_native, m) {
  m.doc() = "asyncrl's native environments and checkpoint reader";
  asyncrl::python::DefineNativeModule(m, /*module_local=*/false);
  m.def("read_checkpoint", &asyncrl::ReadCheckpoint, py::arg("dir"));
}
