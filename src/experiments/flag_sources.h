// Where train_a3c's options come from, merged in order of precedence: the
// command line, --config FILE, the resumed run's args.json, the --demo
// checkpoint; then each flag's default. Every source gives values as
// "--key=value" tokens, never text to parse. Part of the command line
// (run_flags.cc); not a public header.
#ifndef ASYNCRL_EXPERIMENTS_FLAG_SOURCES_H_
#define ASYNCRL_EXPERIMENTS_FLAG_SOURCES_H_

#include <boost/program_options.hpp>

#include "asyncrl/experiments/run_flags.h"

namespace asyncrl {

// Stores every source into `vm` for the flags `desc` declares; records the
// resumed run's folder and options in `f`. Throws FlagError naming the
// flag or file at fault.
void MergeSources(int argc, const char* const* argv,
                  const boost::program_options::options_description& desc,
                  boost::program_options::variables_map& vm, RunFlags* f);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_FLAG_SOURCES_H_
