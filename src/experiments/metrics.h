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
#include <map>
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

// The per-episode scalars (train/episode_return, train/episode_length),
// written by the parent as one mean a second each instead of one record an
// episode: a task of short episodes (a game, MinAtar early on) ends ten
// thousand episodes a second, which was 8 MB a second of TensorBoard file
// and more records than the pipe holds. Each mean is written at the newest
// step among its episodes (SB3's and Sample Factory's summaries likewise
// average the episodes of an interval).
class EpisodeMeans {
 public:
  // Whether the parent averages `tag`'s records.
  static bool Averaged(const char* tag);
  // One averaged record.
  void Add(const MetricRecord& record);
  // Calls `write(tag, step, mean, wall_time)` for every tag with records
  // since the last Flush (in tag order), then forgets them.
  void Flush(const std::function<void(const std::string& tag, int64_t step,
                                      double mean, double wall_time)>& write);

 private:
  struct Sum {
    double sum = 0;
    int64_t count = 0;
    int64_t step = 0;
    double wall_time = 0;
  };
  std::map<std::string, Sum> sums_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_METRICS_H_
