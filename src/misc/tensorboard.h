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
// file_version record on creation. Records are kept in memory until Flush()
// (and the destructor), which appends them with checked writes: if the
// file cannot take them all (a full disk, a file-size limit), it is cut back
// to its last whole record, so it never ends inside one, and the records
// not written are counted (lost(), first_error()). One writer per file: the
// trainer's parent process.
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
  // Appends to <dir>/<file> (an events file a writer made before: a run's
  // last records after its trainer's writer closed it).
  EventWriter(const std::string& dir, const std::string& file);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void WriteScalar(const std::string& tag, int64_t step, double value,
                   double wall_time);
  // Appends the records written since the last Flush; returns false if the
  // file could not take them all: those that fit whole stay, the others are
  // counted lost (a flush holds however many records the run produced since
  // the last one, so what is kept must not depend on that).
  bool Flush();
  const std::string& path() const { return path_; }
  // Records that could not be written so far, and why the first could not
  // ("No space left on device", ...; empty if none).
  int64_t lost() const { return lost_; }
  const std::string& first_error() const { return first_error_; }

 private:
  void WriteEvent(const tensorboard::Event& event);

  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;     // Bytes of whole records in the file.
  std::string pending_;  // Records not yet written.
  // Where each of pending_'s records ends in it.
  std::vector<size_t> pending_ends_;
  int64_t lost_ = 0;
  std::string first_error_;
};

// Reads every record of an event file, checking both CRCs of each. Throws
// std::runtime_error naming the record and the problem.
std::vector<tensorboard::Event> ReadEventFile(const std::string& path);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_TENSORBOARD_H_
