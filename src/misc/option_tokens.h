// Option values that come as text from somewhere other than argv (a
// --config file's lines, a resumed run's args.json, a checkpoint's recorded
// options), stored into Boost's variables_map as the command line would
// give them: each value one "--key=value" token, so that a value stays a
// value (a newline, '=' or leading dashes in it are part of it, never a new
// option).
#ifndef ASYNCRL_MISC_OPTION_TOKENS_H_
#define ASYNCRL_MISC_OPTION_TOKENS_H_

#include <boost/program_options.hpp>
#include <map>
#include <string>
#include <vector>

namespace asyncrl {

// Adds the tokens that give option `key` the value `value`: "--key=value";
// a switch (an option that takes no value, such as lr-decay) takes
// true/1/yes (its flag) or false/0/no (nothing). Throws
// std::invalid_argument for a switch with another value.
void AppendOptionTokens(const boost::program_options::options_description& desc,
                        const std::string& key, const std::string& value,
                        std::vector<std::string>* tokens);

// Stores `tokens` (from AppendOptionTokens) after what `vm` holds: a value
// given before wins. Names match exactly (no abbreviations). Linear in the
// number of tokens. Throws boost::program_options::error for an unknown
// option or a value its type does not take.
void StoreOptionTokens(const std::vector<std::string>& tokens,
                       const boost::program_options::options_description& desc,
                       boost::program_options::variables_map& vm);

// The options recorded in an args.json: one JSON object whose values are
// all strings. Throws std::runtime_error naming what is wrong.
std::map<std::string, std::string> ParseRecordedOptions(
    const std::string& json_text);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_OPTION_TOKENS_H_
