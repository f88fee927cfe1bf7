#include "asyncrl/experiments/flag_sources.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/config_file.h"
#include "asyncrl/misc/option_tokens.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace po = boost::program_options;
namespace {

// Options that describe this invocation, not the run: never taken from, or
// compared with, a resumed run's args.json.
const std::set<std::string> kPerInvocation = {
    "resume", "load",    "demo",        "export",       "record",
    "config", "help",    "version",     "outdir",       "log-level",
    "quiet",  "profile", "step-offset", "train-seconds"};

std::map<std::string, std::string> ReadArgsJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw FlagError("--resume: " + path +
                    " is missing; accepted: a checkpoint "
                    "inside a run folder made by train_a3c");
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    return ParseRecordedOptions(text.str());
  } catch (const std::runtime_error& e) {
    throw FlagError("--resume: " + path + " is unreadable: " + e.what());
  }
}

// Stores `tokens` after what `vm` holds: a value given before wins.

// --config FILE: its 'key = value' lines, after the command line.
void StoreConfigFile(po::variables_map& vm,
                     const po::options_description& desc) {
  const std::string path = vm["config"].as<std::string>();
  std::string text;
  try {
    text = ReadSmallRegularFile(path, kMaxInputFileBytes);
  } catch (const std::invalid_argument& e) {
    throw FlagError("--config=" + path +
                    " is invalid; accepted: a readable regular file of "
                    "'key = value' lines, at most " +
                    std::to_string(kMaxInputFileBytes) + " bytes (it is " +
                    e.what() + ")");
  }
  std::vector<std::string> tokens;
  try {
    for (const auto& [key, value] : ParseConfigText(text)) {
      if (key == "config") {
        throw std::invalid_argument("'config' cannot be set in a config file");
      }
      std::string v = value;
      // A file a config names (its curriculum) is looked up beside the
      // config first, so that a preset works from any folder; then as
      // given, from the current folder.
      if (key == "curriculum" && !v.empty() &&
          std::filesystem::path(v).is_relative()) {
        const std::filesystem::path beside =
            std::filesystem::path(path).parent_path() / v;
        std::error_code ec;
        if (std::filesystem::is_regular_file(beside, ec)) v = beside.string();
      }
      AppendOptionTokens(desc, key, v, &tokens);
    }
  } catch (const std::invalid_argument& e) {
    throw FlagError("--config=" + path + " is invalid: " + e.what());
  }
  StoreOptionTokens(tokens, desc, vm);
}

// --resume: every option the command line and the config file did not give,
// from the resumed run's args.json.
void StoreResumedOptions(po::variables_map& vm,
                         const po::options_description& desc, RunFlags* f) {
  if (vm.count("step-offset") && !vm["step-offset"].defaulted()) {
    throw FlagError(
        "--step-offset=" + FormatValue(vm["step-offset"].as<int64_t>()) +
        " is invalid; accepted: not together with --resume (it continues "
        "at the checkpoint's step)");
  }
  const std::filesystem::path ckpt(vm["resume"].as<std::string>());
  if (!std::filesystem::is_regular_file(ckpt / kCheckpointFileName)) {
    throw FlagError("--resume=" + ckpt.string() +
                    " is invalid; accepted: a checkpoint directory holding " +
                    kCheckpointFileName);
  }
  if (vm.count("load")) {
    throw FlagError("--load=" + vm["load"].as<std::string>() +
                    " is invalid; accepted: not together with --resume");
  }
  const std::filesystem::path run =
      std::filesystem::absolute(ckpt).lexically_normal().parent_path();
  const auto saved = ReadArgsJson(ArgsPath(run.string()));
  const bool eval_given = vm.count("eval-n-runs") || vm.count("eval-n-steps");
  std::vector<std::string> tokens;
  for (const auto& [key, value] : saved) {
    if (kPerInvocation.count(key)) continue;
    if (eval_given && (key == "eval-n-runs" || key == "eval-n-steps")) continue;
    if (vm.count(key) && !vm[key].defaulted()) {
      f->resume_changes.push_back(key);  // Compared once values are known.
      continue;
    }
    try {
      AppendOptionTokens(desc, key, value, &tokens);
    } catch (const std::invalid_argument& e) {
      throw FlagError("--resume: " + ArgsPath(run.string()) +
                      " is unreadable: " + e.what());
    }
  }
  // Runs from before --train-sides trained the learner's side: resumed,
  // they go on so.
  if (saved.count("train-sides") == 0 &&
      (vm.count("train-sides") == 0 || vm["train-sides"].defaulted())) {
    AppendOptionTokens(desc, "train-sides", "learner", &tokens);
  }
  // Runs from before the warm-up and the lag scaling stepped without them:
  // resumed, they go on so.
  for (const char* key : {"lr-warmup-updates", "lag-tolerance"}) {
    if (saved.count(key) == 0 && (vm.count(key) == 0 || vm[key].defaulted())) {
      AppendOptionTokens(desc, key, "0", &tokens);
    }
  }
  StoreOptionTokens(tokens, desc, vm);
  f->resume_run = run.string();
  f->resume_saved = saved;
}

// --demo (or --export) --load DIR: the environment, network and episode limit
// of the checkpoint's run unless given. A checkpoint that cannot be read is
// left for --load's own check to report.
void StoreDemoOptions(po::variables_map& vm,
                      const po::options_description& desc) {
  proto::Checkpoint checkpoint;
  try {
    checkpoint = LoadCheckpointDir(vm["load"].as<std::string>());
  } catch (const std::exception&) {
    return;
  }
  std::vector<std::string> tokens;
  for (const char* key :
       {"env", "arch", "hidden-sizes", "activation", "conv-channels",
        "max-episode-len", "scale-observations", "normalize-observations",
        "normalize-observations-clip", "algorithm", "optimizer"}) {
    const auto it = checkpoint.metadata().config().find(key);
    if (it == checkpoint.metadata().config().end()) continue;
    if (vm.count(key) && !vm[key].defaulted()) continue;
    try {
      AppendOptionTokens(desc, key, it->second, &tokens);
    } catch (const std::invalid_argument&) {
      return;  // As an unreadable checkpoint.
    }
  }
  StoreOptionTokens(tokens, desc, vm);
}

}  // namespace

void MergeSources(int argc, const char* const* argv,
                  const po::options_description& desc, po::variables_map& vm,
                  RunFlags* f) {
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("config")) StoreConfigFile(vm, desc);
    if (vm.count("resume")) StoreResumedOptions(vm, desc, f);
    if (((vm.count("demo") && vm["demo"].as<bool>()) || vm.count("export")) &&
        vm.count("load")) {
      StoreDemoOptions(vm, desc);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw FlagError(e.what());
  }
}

}  // namespace asyncrl
