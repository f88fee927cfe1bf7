// Scalar metrics from workers to the parent through one pipe made before
// fork: workers send fixed-size records (atomic writes, never blocking: a
// full pipe drops the record and counts it in a counter every process
// shares), the parent drains them and is the only writer of the TensorBoard
// file.
#ifndef ASYNCRL_EXPERIMENTS_METRICS_H_
#define ASYNCRL_EXPERIMENTS_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace asyncrl {

struct MetricRecord {
  int64_t step = 0;
  double value = 0;
  double wall_time = 0;  // Seconds since the Unix epoch.
  char tag[40] = {};
};
static_assert(sizeof(MetricRecord) == 64, "records are written whole");

class MetricsChannel {
 public:
  // Throws std::runtime_error if the pipe cannot be made.
  MetricsChannel();
  ~MetricsChannel();
  MetricsChannel(const MetricsChannel&) = delete;
  MetricsChannel& operator=(const MetricsChannel&) = delete;

  // Any process: sends one record; false (and a drop counted) when the pipe
  // is full. Tags longer than 39 bytes are cut.
  bool Send(const char* tag, int64_t step, double value);
  // Parent: calls `fn` for every record waiting in the pipe.
  void Drain(const std::function<void(const MetricRecord&)>& fn);
  // Records dropped so far by every process that inherited the channel.
  int64_t dropped() const { return dropped_->load(); }

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::atomic<int64_t>* dropped_ = nullptr;  // In a shared mapping.
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_METRICS_H_
