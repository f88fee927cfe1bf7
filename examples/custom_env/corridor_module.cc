// corridor_envs: a Python module of your own that steps Corridor
// (corridor_env.cc) as asyncrl steps its own environments. After
// `import corridor_envs`, asyncrl.make_vec("Corridor", num_envs=8) is a
// Gymnasium vector environment of it and asyncrl.env_names() lists it.
#include <asyncrl/python/bindings.h>

#include "corridor.h"

PYBIND11_MODULE(corridor_envs, m) {
  m.doc() = "The Corridor environment, for asyncrl.make_vec";
  RegisterCorridor();
  asyncrl::python::DefineEnvironmentModule(m);
}
