#include "asyncrl/misc/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/crc.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace asyncrl {
namespace {

constexpr char kMagic[8] = {'A', 'S', 'Y', 'N', 'C', 'R', 'L', '\0'};
constexpr size_t kHeaderBytes = 24;

uint32_t Crc32(const std::string& bytes) {
  boost::crc_32_type crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

void PutLe(char* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>(v >> (8 * i));
}

uint64_t GetLe(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return v;
}

[[noreturn]] void Fail(const std::string& path, const std::string& problem) {
  throw std::runtime_error("checkpoint " + path + ": " + problem);
}

std::string Errno() { return std::strerror(errno); }

void WriteAll(int fd, const char* data, size_t size, const std::string& tmp) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("writing " + tmp + " failed: " + Errno());
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

size_t DTypeSize(proto::DType dtype) {
  switch (dtype) {
    case proto::DTYPE_FLOAT32:
      return 4;
    case proto::DTYPE_FLOAT64:
    case proto::DTYPE_INT64:
      return 8;
    default:
      return 0;
  }
}

void ValidateTensor(const std::string& path, const char* group,
                    const proto::Tensor& t) {
  const std::string where = std::string(group) + " tensor '" + t.name() + "'";
  const size_t elem = DTypeSize(t.dtype());
  if (elem == 0) {
    Fail(path, where + " has unknown dtype " + std::to_string(t.dtype()));
  }
  uint64_t count = 1;
  for (int64_t d : t.shape()) {
    if (d < 0) {
      Fail(path, where + " has negative dimension " + std::to_string(d));
    }
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count)) {
      Fail(path, where + " has a shape whose element count overflows");
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(count, elem, &bytes) || bytes != t.data().size()) {
    Fail(path, where + " of shape " +
                   ShapeToString({t.shape().begin(), t.shape().end()}) +
                   " needs " + std::to_string(count) + " elements but holds " +
                   std::to_string(t.data().size()) + " bytes");
  }
}

}  // namespace

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return s + "]";
}

void SaveCheckpointFile(proto::Checkpoint& checkpoint,
                        const std::string& path) {
  checkpoint.set_format_version(kCheckpointFormatVersion);
  std::string payload;
  if (!checkpoint.SerializeToString(&payload)) {
    throw std::runtime_error("saving checkpoint " + path +
                             ": serialization failed");
  }
  // What is saved must load: a field protobuf serialises but refuses to
  // parse (a string that is not UTF-8) fails here, not at the next --resume.
  {
    proto::Checkpoint reread;
    if (!reread.ParseFromString(payload)) {
      throw std::runtime_error("saving checkpoint " + path +
                               ": protobuf cannot parse it back (a text "
                               "field that is not UTF-8?); nothing was "
                               "written");
    }
  }
  char header[kHeaderBytes] = {};
  std::memcpy(header, kMagic, sizeof(kMagic));
  PutLe(header + 8, payload.size(), 8);
  PutLe(header + 16, Crc32(payload), 4);

  const std::filesystem::path target(path);
  const std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : ".";
  std::string tmp =
      (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    throw std::runtime_error("saving checkpoint " + path +
                             ": cannot create a temporary file in " +
                             dir.string() + ": " + Errno());
  }
  try {
    // mkostemp creates 0600; checkpoints are ordinary, shareable files.
    if (fchmod(fd, 0644) != 0) {
      throw std::runtime_error("chmod of " + tmp + " failed: " + Errno());
    }
    WriteAll(fd, header, kHeaderBytes, tmp);
    WriteAll(fd, payload.data(), payload.size(), tmp);
    if (fsync(fd) != 0) {
      throw std::runtime_error("fsync of " + tmp + " failed: " + Errno());
    }
    if (close(fd) != 0) {
      throw std::runtime_error("closing " + tmp + " failed: " + Errno());
    }
  } catch (const std::runtime_error& e) {
    close(fd);
    unlink(tmp.c_str());
    throw std::runtime_error("saving checkpoint " + path + ": " + e.what());
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = Errno();
    unlink(tmp.c_str());
    throw std::runtime_error("saving checkpoint " + path +
                             ": rename failed: " + err);
  }
  const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
}

proto::Checkpoint LoadCheckpointFile(const std::string& path,
                                     uint64_t max_bytes) {
  // O_NONBLOCK: a FIFO in the checkpoint's place opens at once (and is
  // refused below) instead of waiting for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) Fail(path, "cannot open: " + Errno());
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    Fail(path, "not a regular file");
  }
  const auto file_size = static_cast<uint64_t>(st.st_size);
  if (file_size > max_bytes) {
    close(fd);
    Fail(path, "file is " + std::to_string(file_size) +
                   " bytes, over the limit of " + std::to_string(max_bytes));
  }
  if (file_size < kHeaderBytes) {
    close(fd);
    Fail(path, "truncated: " + std::to_string(file_size) +
                   " bytes, shorter than the " + std::to_string(kHeaderBytes) +
                   "-byte header");
  }
  std::string bytes(file_size, '\0');
  size_t got = 0;
  while (got < file_size) {
    const ssize_t n = read(fd, bytes.data() + got, file_size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  if (got != file_size)
    Fail(path, "read failed after " + std::to_string(got) + " bytes");
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    Fail(path, "not an asyncrl checkpoint (bad magic)");
  }
  const uint64_t length = GetLe(bytes.data() + 8, 8);
  if (length != file_size - kHeaderBytes) {
    Fail(path, "truncated or padded: header announces " +
                   std::to_string(length) + " payload bytes, file holds " +
                   std::to_string(file_size - kHeaderBytes));
  }
  const std::string payload = bytes.substr(kHeaderBytes);
  const auto crc = static_cast<uint32_t>(GetLe(bytes.data() + 16, 4));
  if (Crc32(payload) != crc) Fail(path, "corrupt: CRC-32 mismatch");
  return ParseCheckpointPayload(payload, path);
}

proto::Checkpoint ParseCheckpointPayload(const std::string& payload,
                                         const std::string& path) {
  proto::Checkpoint checkpoint;
  if (!checkpoint.ParseFromString(payload)) {
    Fail(path, "corrupt: payload is not a valid Checkpoint message");
  }
  if (checkpoint.format_version() != kCheckpointFormatVersion) {
    Fail(path, "format version " + std::to_string(checkpoint.format_version()) +
                   " is not supported; this build reads version " +
                   std::to_string(kCheckpointFormatVersion));
  }
  if (checkpoint.global_step() < 0 || checkpoint.episodes() < 0) {
    Fail(path, "negative global_step " +
                   std::to_string(checkpoint.global_step()) + " or episodes " +
                   std::to_string(checkpoint.episodes()));
  }
  for (const auto& t : checkpoint.parameters()) {
    ValidateTensor(path, "parameter", t);
  }
  for (const auto& t : checkpoint.optimizer_state()) {
    ValidateTensor(path, "optimizer", t);
  }
  return checkpoint;
}

void SaveCheckpointDir(proto::Checkpoint& checkpoint, const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path target = fs::path(dir).lexically_normal();
  const fs::path file = target / kCheckpointFileName;
  std::error_code ec;
  if (fs::is_directory(target, ec)) {
    // Replacing the checkpoint of an existing directory (best/): the file
    // itself is replaced atomically.
    SaveCheckpointFile(checkpoint, file.string());
    return;
  }
  // A new directory appears whole or not at all: written as a hidden
  // sibling, then renamed into place. A process killed in between leaves
  // only the hidden ".<name>.tmp.*" directory, never a checkpoint
  // directory without its file.
  const fs::path parent =
      target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) {
    throw std::runtime_error("saving checkpoint: cannot create directory " +
                             parent.string() + ": " + ec.message());
  }
  std::string tmp =
      (parent / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  if (mkdtemp(tmp.data()) == nullptr) {
    throw std::runtime_error(
        "saving checkpoint: cannot create a temporary "
        "directory in " +
        parent.string() + ": " + Errno());
  }
  try {
    chmod(tmp.c_str(), 0755);  // mkdtemp makes 0700.
    SaveCheckpointFile(checkpoint,
                       (fs::path(tmp) / kCheckpointFileName).string());
  } catch (const std::runtime_error& e) {
    fs::remove_all(tmp, ec);
    throw std::runtime_error(std::string(e.what()) + " (for " + dir + ")");
  }
  if (rename(tmp.c_str(), target.c_str()) != 0) {
    // Another process made the directory meanwhile: write into it.
    fs::remove_all(tmp, ec);
    SaveCheckpointFile(checkpoint, file.string());
    return;
  }
  const int dfd = open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
}

proto::Checkpoint LoadCheckpointDir(const std::string& dir,
                                    uint64_t max_bytes) {
  if (!std::filesystem::is_directory(dir)) {
    throw std::runtime_error("checkpoint " + dir + ": not a directory");
  }
  return LoadCheckpointFile(
      (std::filesystem::path(dir) / kCheckpointFileName).string(), max_bytes);
}

void AddFloatTensor(google::protobuf::RepeatedPtrField<proto::Tensor>* tensors,
                    const std::string& name, const std::vector<int64_t>& shape,
                    const float* data) {
  proto::Tensor* t = tensors->Add();
  t->set_name(name);
  int64_t count = 1;
  for (int64_t d : shape) {
    t->add_shape(d);
    count *= d;
  }
  t->set_dtype(proto::DTYPE_FLOAT32);
  t->set_data(reinterpret_cast<const char*>(data),
              static_cast<size_t>(count) * sizeof(float));
}

void ReadFloatTensor(
    const google::protobuf::RepeatedPtrField<proto::Tensor>& tensors,
    const std::string& name, const std::vector<int64_t>& expected_shape,
    float* out) {
  for (const auto& t : tensors) {
    if (t.name() != name) continue;
    const std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    if (t.dtype() != proto::DTYPE_FLOAT32 || shape != expected_shape) {
      throw std::runtime_error(
          "tensor '" + name + "' has shape " + ShapeToString(shape) +
          (t.dtype() != proto::DTYPE_FLOAT32 ? " and a dtype other than float32"
                                             : "") +
          "; expected float32 " + ShapeToString(expected_shape));
    }
    // An empty tensor's data() may be a null pointer, which memcpy must not
    // be given even with a size of 0.
    if (!t.data().empty()) std::memcpy(out, t.data().data(), t.data().size());
    return;
  }
  throw std::runtime_error("tensor '" + name + "' is missing");
}

}  // namespace asyncrl
