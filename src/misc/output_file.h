// Checks of a file the program is asked to write (--export).
#ifndef ASYNCRL_MISC_OUTPUT_FILE_H_
#define ASYNCRL_MISC_OUTPUT_FILE_H_

#include <string>

namespace asyncrl {

// Why `path` cannot be a file the program writes ("" if it can): an empty
// name, a folder that does not exist, or an existing path that is not a
// regular file (a device, FIFO, socket or directory; a symbolic link is
// followed to what it names).
std::string OutputFileProblem(const std::string& path);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_OUTPUT_FILE_H_
