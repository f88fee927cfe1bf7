// TensorBoard event files without TensorFlow: TFRecord framing (length,
// masked CRC-32C of the length, data, masked CRC-32C of the data) around
// Event messages with scalar summaries.
#ifndef ASYNCRL_MISC_TENSORBOARD_H_
#define ASYNCRL_MISC_TENSORBOARD_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "asyncrl/proto/tensorboard.pb.h"

namespace asyncrl {

// CRC-32C (Castagnoli) of `n` bytes.
uint32_t Crc32c(const void* data, size_t n);
// TFRecord's masking: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t MaskCrc(uint32_t crc);

// Appends events to <dir>/events.out.tfevents.<unix time>.<host>. Writes the
// file_version record on creation; flushes after each Write. One writer per
// file: the trainer's parent process.
// Now, as TensorBoard's events record wall time: seconds since the epoch.
inline double WallTimeSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class EventWriter {
 public:
  // Throws std::runtime_error naming the path when it cannot be created.
  explicit EventWriter(const std::string& dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void WriteScalar(const std::string& tag, int64_t step, double value,
                   double wall_time);
  void Flush();
  const std::string& path() const { return path_; }

 private:
  void WriteEvent(const tensorboard::Event& event);

  std::string path_;
  std::FILE* file_ = nullptr;
};

// Reads every record of an event file, checking both CRCs of each. Throws
// std::runtime_error naming the record and the problem.
std::vector<tensorboard::Event> ReadEventFile(const std::string& path);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_TENSORBOARD_H_
