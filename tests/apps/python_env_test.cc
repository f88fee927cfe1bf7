// The Python package's vector environments (python/native.cc) against the
// C++ environments: for every registered environment, 3 copies seeded
// seed + i stepped with the same random (legal) actions give the same
// observations, rewards, terminations, truncations and final observations,
// bit for bit, with the same-step autoreset the package documents. The
// Python side is tests/python/replay_env.py through Debian's python3.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "../experiments/test_basics.h"
#include "asyncrl/envs/registry.h"
#include "test_paths.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace python_env_test {
namespace {

namespace fs = std::filesystem;
using testing::Exec;
using testing::ProcessRun;
using testing::TempDir;

constexpr int64_t kEnvs = 3;
constexpr int64_t kSteps = 400;
constexpr uint64_t kSeed = 11;
// Every environment's episodes cut at this length (on both sides), so the
// 400 steps cross episode ends, truncations included, in every game.
constexpr int64_t kLimit = 150;

void Append(std::vector<float>* out, const FloatView& v) {
  out->insert(out->end(), v.data, v.data + v.size);
}

class PythonEnvTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PythonEnvTest, TheSameSeedAndActionsGiveTheSameTrajectory) {
  if (std::string(ASYNCRL_PYTHON_PACKAGE).empty()) {
    GTEST_SKIP() << "this build has no Python module (sanitizer builds)";
  }
  const std::string& name = GetParam();
  std::vector<std::unique_ptr<Env>> envs;
  EnvOptions options;
  options.max_episode_steps = kLimit;
  for (int64_t i = 0; i < kEnvs; ++i) envs.push_back(MakeEnv(name, options));
  const Space obs_space = envs[0]->ObservationSpace();
  const Space act_space = envs[0]->ActionSpace();
  const int64_t size = obs_space.FlatSize();

  // The C++ trajectory, autoreset in the same step as the package does.
  std::vector<float> expected;
  std::vector<std::vector<float>> last(kEnvs);
  for (int64_t i = 0; i < kEnvs; ++i) {
    const FloatView o = envs[i]->Reset(kSeed + static_cast<uint64_t>(i));
    last[i].assign(o.data, o.data + size);
    Append(&expected, o);
  }
  std::mt19937_64 rng(3);
  std::vector<float> actions;
  int64_t episodes_ended = 0;
  for (int64_t t = 0; t < kSteps; ++t) {
    std::vector<float> obs, reward, term, trunc, final_obs;
    for (int64_t i = 0; i < kEnvs; ++i) {
      std::vector<float> values;
      const Action a = testing::RandomLegalAction(obs_space, act_space,
                                                  last[i].data(), rng, &values);
      actions.insert(actions.end(), values.begin(), values.end());
      const StepResult s = envs[i]->Step(a);
      reward.push_back(static_cast<float>(s.reward));
      term.push_back(s.terminated);
      trunc.push_back(s.truncated);
      FloatView next = s.observation;
      if (s.Done()) {
        ++episodes_ended;
        Append(&final_obs, s.observation);
        next = envs[i]->Reset();
      } else {
        final_obs.insert(final_obs.end(), size, 0.0f);
      }
      last[i].assign(next.data, next.data + size);
      Append(&obs, next);
    }
    for (const auto* part : {&obs, &reward, &term, &trunc, &final_obs}) {
      expected.insert(expected.end(), part->begin(), part->end());
    }
  }

  TempDir dir("python_env");
  const fs::path actions_file = dir.path() / "actions.f32";
  std::ofstream(actions_file, std::ios::binary)
      .write(reinterpret_cast<const char*>(actions.data()),
             static_cast<std::streamsize>(actions.size() * sizeof(float)));
  const fs::path out = dir.path() / "out.f32";
  const ProcessRun python = Exec(
      "PYTHONPATH=" + std::string(ASYNCRL_PYTHON_PACKAGE) + " " +
          ASYNCRL_PYTHON,
      std::string(ASYNCRL_SOURCE_DIR) + "/tests/python/replay_env.py '" + name +
          "' " + std::to_string(kEnvs) + " " + std::to_string(kSeed) + " " +
          std::to_string(kSteps) + " " + std::to_string(kLimit) + " " +
          actions_file.string() + " " + out.string());
  ASSERT_EQ(python.status, 0) << python.output;
  std::ifstream in(out, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), expected.size() * sizeof(float));
  std::vector<float> got(expected.size());
  std::memcpy(got.data(), bytes.data(), bytes.size());
  size_t first_difference = got.size();
  for (size_t k = 0; k < got.size(); ++k) {
    // Bit for bit (NaN never appears: both would be compared as bits).
    if (std::memcmp(&got[k], &expected[k], sizeof(float)) != 0) {
      first_difference = k;
      break;
    }
  }
  EXPECT_EQ(first_difference, got.size())
      << "first difference at float " << first_difference << ": "
      << got[first_difference] << " vs " << expected[first_difference];
  // The trajectory crossed episode ends: the autoreset was exercised.
  EXPECT_GE(episodes_ended, kEnvs * (kSteps / kLimit)) << name;
}

std::vector<std::string> Names() { return DefaultEnvRegistry().Names(); }

INSTANTIATE_TEST_SUITE_P(EveryEnvironment, PythonEnvTest,
                         ::testing::ValuesIn(Names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name;
                           for (char c : info.param)
                             name += std::isalnum(c) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace python_env_test
}  // namespace asyncrl
