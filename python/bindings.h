// asyncrl's Python bindings, for a Python module of your own that trains
// or steps C++ environments your library registers (docs/own-environment.md,
// "A C++ environment from Python"):
//
//   #include <asyncrl/python/bindings.h>
//   PYBIND11_MODULE(my_envs, m) {
//     RegisterMyEnvironments();  // asyncrl::DefaultEnvRegistry().Register(...)
//     asyncrl::python::DefineEnvironmentModule(m);
//   }
//
// and then, in Python, `import my_envs` makes asyncrl.make_vec("MyEnv") and
// asyncrl.env_names() find them. Link the CMake target asyncrl::python into
// a pybind11 module (pybind11_add_module).
#ifndef ASYNCRL_PYTHON_BINDINGS_H_
#define ASYNCRL_PYTHON_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace asyncrl::python {

// Defines in `m` VectorEnv (the registered environments stepped as a
// batch), Space and env_names(), as asyncrl._native has them.
// `module_local`: the classes are the module's own (a
// module beside asyncrl._native, which defines them globally).
void DefineNativeModule(pybind11::module_& m, bool module_local);

// For a module of your own: DefineNativeModule(m, true), then
// asyncrl.add_environments(m), which imports the asyncrl package: its
// make_vec() and env_names() find the environments registered in this
// module (the ones registered before this call and after).
void DefineEnvironmentModule(pybind11::module_& m);

}  // namespace asyncrl::python

#endif  // ASYNCRL_PYTHON_BINDINGS_H_
