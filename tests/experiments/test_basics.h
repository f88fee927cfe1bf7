// Helpers shared by the tests that need no LibTorch: a temporary directory,
// file reading, a framed checkpoint, args.json's recorded options, a random
// legal action, and a program run through the shell. Files that include only
// this header compile without the precompiled LibTorch header
// (tests/CMakeLists.txt lists them); test_helpers.h adds the agent factories.
#ifndef ASYNCRL_TESTS_EXPERIMENTS_TEST_BASICS_H_
#define ASYNCRL_TESTS_EXPERIMENTS_TEST_BASICS_H_

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/crc.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "asyncrl/envs/env.h"
#include "asyncrl/misc/json.h"

namespace asyncrl::testing {

// A fresh directory removed at destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() /
              ("asyncrl_" + tag + "_" + std::to_string(getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// A whole file's bytes ("" when it cannot be read).
inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

// A well-framed checkpoint file (misc/checkpoint.h's header: magic, length,
// CRC-32) around an arbitrary payload.
inline std::string FrameCheckpoint(const std::string& payload) {
  std::string header(24, '\0');
  std::memcpy(header.data(), "ASYNCRL\0", 8);
  const uint64_t n = payload.size();
  for (int i = 0; i < 8; ++i) header[8 + i] = static_cast<char>(n >> (8 * i));
  boost::crc_32_type crc;
  crc.process_bytes(payload.data(), payload.size());
  const uint32_t c = crc.checksum();
  for (int i = 0; i < 4; ++i) header[16 + i] = static_cast<char>(c >> (8 * i));
  return header + payload;
}

inline std::vector<std::string> ReadLines(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The value a run folder's args.json records for option `key`, or
// "(not recorded)".
inline std::string RecordedOption(const std::filesystem::path& run,
                                  const std::string& key) {
  std::ifstream in(run / "args.json");
  std::stringstream text;
  text << in.rdbuf();
  const Json::Object args = Json::Parse(text.str()).object();
  const auto it = args.find(key);
  return it == args.end() ? "(not recorded)" : it->second.string();
}

inline std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);) parts.push_back(part);
  return parts;
}

// A uniformly random action of `act_space` that is legal after the
// observation `obs` (a two-player game's mask, Space::action_mask, is
// respected). The action's values are written to `*values` (Discrete: the
// index, as a float), which the returned Action points into.
inline Action RandomLegalAction(const Space& obs_space, const Space& act_space,
                                const float* obs, std::mt19937_64& rng,
                                std::vector<float>* values) {
  if (act_space.IsDiscrete()) {
    const int64_t size = obs_space.FlatSize();
    std::vector<int64_t> legal;
    for (int64_t a = 0; a < act_space.n; ++a) {
      if (obs_space.action_mask == 0 ||
          obs[size - obs_space.action_mask + a] != 0) {
        legal.push_back(a);
      }
    }
    const int64_t index = legal[rng() % legal.size()];
    values->assign(1, static_cast<float>(index));
    return Action::Discrete(index);
  }
  std::uniform_real_distribution<float> u(0, 1);
  values->resize(static_cast<size_t>(act_space.FlatSize()));
  for (size_t j = 0; j < values->size(); ++j) {
    (*values)[j] =
        act_space.low[j] + u(rng) * (act_space.high[j] - act_space.low[j]);
  }
  return Action::Continuous(values->data(), act_space.FlatSize());
}

// A program run through the shell (`command` may start with "env ..."),
// stdout and stderr together.
struct ProcessRun {
  int status = -1;
  std::string output;
  std::vector<std::string> Lines() const { return Split(output, '\n'); }
};

inline ProcessRun Exec(const std::string& binary, const std::string& args) {
  ProcessRun run;
  FILE* pipe = popen((binary + " " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) {
    run.output.append(buf.data(), n);
  }
  const int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

}  // namespace asyncrl::testing

#endif  // ASYNCRL_TESTS_EXPERIMENTS_TEST_BASICS_H_
