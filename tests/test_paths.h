// Paths the tests use: the programs they start, the Python interpreter and
// package, the source tree. Defined in the build folder's test_paths.cc,
// which tests/CMakeLists.txt generates, so that no test file's compile
// command names a folder (ccache then hits from a clone in any folder).
#ifndef ASYNCRL_TESTS_TEST_PATHS_H_
#define ASYNCRL_TESTS_TEST_PATHS_H_

namespace asyncrl::testing::paths {
extern const char kPython[];
extern const char kPythonPackage[];  // "" when the build has no Python module.
extern const char kTrainA3cBin[];
extern const char kCustomAgentExampleBin[];
extern const char kCustomEnvExampleBin[];
extern const char kLinkRelayBin[];
extern const char kSourceDir[];
}  // namespace asyncrl::testing::paths

#define ASYNCRL_PYTHON ::asyncrl::testing::paths::kPython
#define ASYNCRL_PYTHON_PACKAGE ::asyncrl::testing::paths::kPythonPackage
#define TRAIN_A3C_BIN ::asyncrl::testing::paths::kTrainA3cBin
#define CUSTOM_AGENT_EXAMPLE_BIN \
  ::asyncrl::testing::paths::kCustomAgentExampleBin
#define CUSTOM_ENV_EXAMPLE_BIN ::asyncrl::testing::paths::kCustomEnvExampleBin
#define LINK_RELAY_BIN ::asyncrl::testing::paths::kLinkRelayBin
#define ASYNCRL_SOURCE_DIR ::asyncrl::testing::paths::kSourceDir

#endif  // ASYNCRL_TESTS_TEST_PATHS_H_
