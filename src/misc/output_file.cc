#include "asyncrl/misc/output_file.h"

#include <filesystem>
#include <system_error>

namespace asyncrl {

std::string OutputFileProblem(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) return "an empty name";
  const fs::path file(path);
  if (!file.has_filename()) return path + " names a folder";
  const fs::path folder = file.has_parent_path() ? file.parent_path() : ".";
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return "the folder " + folder.string() + " does not exist";
  }
  const fs::file_status st = fs::status(file, ec);  // Follows links.
  if (!fs::exists(st) || fs::is_regular_file(st)) return "";
  const char* kind = fs::is_directory(st)        ? "a directory"
                     : fs::is_character_file(st) ? "a character device"
                     : fs::is_block_file(st)     ? "a block device"
                     : fs::is_fifo(st)           ? "a FIFO"
                     : fs::is_socket(st)         ? "a socket"
                                                 : "not a regular file";
  return path + " is " + kind + "; only a regular file is written";
}

}  // namespace asyncrl
