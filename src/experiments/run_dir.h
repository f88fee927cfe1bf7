// Run folders: every training run writes into a new folder under the output
// directory, named by the time it started; files in it are replaced
// atomically (temporary file, then rename), so none is ever half-written.
#ifndef ASYNCRL_EXPERIMENTS_RUN_DIR_H_
#define ASYNCRL_EXPERIMENTS_RUN_DIR_H_

#include <filesystem>
#include <string>

namespace asyncrl {

// Creates `outdir` (and its parents) if needed, then a new folder in it named
// by the current local time (`20261130T031725.123456`, with `-1`, `-2`...
// if that name exists); never reuses an existing folder. Throws
// std::invalid_argument "--outdir=<outdir> is invalid; accepted: ..." when
// either cannot be created.
std::filesystem::path MakeRunDir(const std::string& outdir);

// Writes `text` to `path` through `<path>.tmp` and a rename: readers see
// the old or the new content, never a part. Throws std::runtime_error naming
// the file on a write error (the old file stays as it was).
void WriteFileAtomically(const std::filesystem::path& path,
                         const std::string& text);

// `s` quoted for a POSIX shell when it needs quoting (command.txt).
std::string ShellQuote(const std::string& s);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_RUN_DIR_H_
