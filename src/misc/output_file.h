// Files the program is asked to write (--export, --record): the checks made
// before any work, and the write itself.
#ifndef ASYNCRL_MISC_OUTPUT_FILE_H_
#define ASYNCRL_MISC_OUTPUT_FILE_H_

#include <string>

namespace asyncrl {

// Why `path` cannot be a file the program writes ("" if it can): an empty
// name, a folder that does not exist, or an existing path that is not a
// regular file (a device, FIFO, socket or directory; a symbolic link is
// followed to what it names).
std::string OutputFileProblem(const std::string& path);

// OutputFileProblem, and whether the folder takes a new file (a temporary
// one is made and removed): "" if `path` can be written.
std::string OutputFileWritable(const std::string& path);

// Writes `data` to `path` whole or not at all: into a temporary file beside
// it (".asyncrl-<tag>.<pid>.tmp"), synced, then renamed over it, with
// SIGINT, SIGTERM and SIGHUP held meanwhile. A symbolic link (or a chain of
// them) is followed: the file it names is written and the link stays.
// Throws std::runtime_error "cannot write PATH: WHY"; the temporary file is
// removed and an earlier file at `path` is left as it was.
void WriteOutputFile(const std::string& path, const std::string& data,
                     const std::string& tag);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_OUTPUT_FILE_H_
