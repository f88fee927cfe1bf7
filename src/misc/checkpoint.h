// Reading and writing checkpoint files. A file is a 24-byte header (magic
// "ASYNCRL\0", payload length, CRC-32 of the payload, reserved) followed by a
// serialized asyncrl.proto.Checkpoint. Saving is atomic: a temporary file in
// the target directory is written, fsynced and renamed, so a crash never
// leaves a truncated file under the final name. Loading rejects truncated,
// corrupt, wrong-version, inconsistent or over-large files with a message
// naming the file and the first problem.
#ifndef ASYNCRL_MISC_CHECKPOINT_H_
#define ASYNCRL_MISC_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "asyncrl/proto/checkpoint.pb.h"

namespace asyncrl {

constexpr uint32_t kCheckpointFormatVersion = 1;
constexpr const char* kCheckpointFileName = "checkpoint.pb";
// Default cap on a checkpoint file's size (a guard against hostile files).
constexpr uint64_t kDefaultMaxCheckpointBytes = uint64_t{4} << 30;

// Writes `checkpoint` to `path` atomically (temp file, fsync, rename, fsync
// of the directory). Sets format_version. Throws std::runtime_error naming
// the path and the system error; an existing file at `path` is then left as
// it was.
void SaveCheckpointFile(proto::Checkpoint& checkpoint, const std::string& path);

// Reads and validates a checkpoint file. Throws std::runtime_error
// "checkpoint <path>: <first problem>".
proto::Checkpoint LoadCheckpointFile(
    const std::string& path, uint64_t max_bytes = kDefaultMaxCheckpointBytes);

// Parses and validates a checkpoint payload (the bytes after the header);
// errors name `path`. LoadCheckpointFile calls it after the CRC check.
proto::Checkpoint ParseCheckpointPayload(const std::string& payload,
                                         const std::string& path);

// A checkpoint directory (best/, 1000_finish/, ...) holds kCheckpointFileName.
// Creates `dir` (and parents) if needed; a new directory appears only with
// its complete file (written as a hidden sibling ".<name>.tmp.*", then
// renamed), an existing one gets the file replaced atomically.
void SaveCheckpointDir(proto::Checkpoint& checkpoint, const std::string& dir);
proto::Checkpoint LoadCheckpointDir(
    const std::string& dir, uint64_t max_bytes = kDefaultMaxCheckpointBytes);

// Appends a float32 tensor to `tensors`.
void AddFloatTensor(google::protobuf::RepeatedPtrField<proto::Tensor>* tensors,
                    const std::string& name, const std::vector<int64_t>& shape,
                    const float* data);

// Copies the float32 tensor `name` into `out`, which must hold
// product(expected_shape) floats. Throws std::runtime_error if it is missing
// or its dtype or shape differ, naming both shapes.
void ReadFloatTensor(
    const google::protobuf::RepeatedPtrField<proto::Tensor>& tensors,
    const std::string& name, const std::vector<int64_t>& expected_shape,
    float* out);

// "[200, 4]".
std::string ShapeToString(const std::vector<int64_t>& shape);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_CHECKPOINT_H_
