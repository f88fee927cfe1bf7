// Command-line flags of train_a3c (the reference example's flags and
// defaults), parsed with Boost.Program_options into plain option structs.
#ifndef ASYNCRL_APPS_A3C_FLAGS_H_
#define ASYNCRL_APPS_A3C_FLAGS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agents/a3c.h"
#include "experiments/train_options.h"

namespace asyncrl {

struct A3CFlags {
  TrainOptions train;
  A3COptions agent;
  std::string env = "CartPole-v1";
  std::string arch = "auto";
  std::string outdir = "results";
  double reward_scale_factor = 0.01;
  bool lr_decay = false;
  bool demo = false;
  bool quiet = false;
  // --resume: the checkpoint directory and the run folder it belongs to.
  std::string resume;
  std::string resume_run;
  // Options the command line changed relative to the resumed run's
  // args.json: "lr: 0.0007 -> 0.0005".
  std::vector<std::string> resume_changes;
  std::map<std::string, std::string> resume_saved;  // The run's args.json.
  std::string log_level = "info";
  bool help = false;
  bool version = false;
  std::string help_text;
  // Every resolved option as text, for args.json and checkpoints.
  std::map<std::string, std::string> resolved;
};

// Thrown for any invalid flag; what() is the one-line message
// "--flag=value is invalid; accepted: ..." (exit status 2).
class FlagError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses and validates argv (and --config FILE). Checks everything that can
// be checked without side effects: ranges, conflicts, environment and arch
// names, the --load directory. Creates nothing.
A3CFlags ParseA3CFlags(int argc, const char* const* argv);

}  // namespace asyncrl

#endif  // ASYNCRL_APPS_A3C_FLAGS_H_
