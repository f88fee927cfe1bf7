// Soak test (label "soak", run on demand: ctest --test-dir build -L soak):
// 16 workers on this machine's cores for 2,000,000 steps. Checks that the
// step counter ends exactly at --steps, that the episode counter equals the
// sum of the episodes each worker finished (their "episode_end" timer
// counts), that nothing deadlocks (the run ends), and that resident memory
// stays flat after warm-up. Prints the figures it measured.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "../apps/spawned.h"
#include "../experiments/test_basics.h"
#include "asyncrl/misc/checkpoint.h"
#include "asyncrl/misc/json.h"

namespace asyncrl {
namespace {

namespace fs = std::filesystem;

// Resident set size of `pid` in KiB (0 if it is gone).
int64_t RssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return 0;
}

TEST(SoakTest, SixteenWorkersTwoMillionSteps) {
  constexpr int kWorkers = 16;
  constexpr int64_t kSteps = 2000000;
  testing::TempDir dir("soak");
  testing::Spawned run(
      {"--outdir", dir.str(), "--processes", std::to_string(kWorkers),
       "--steps", std::to_string(kSteps), "--eval-interval", "200000",
       "--eval-n-runs", "5", "--quiet"},
      "");
  // Sample the workers' memory every 250 ms (a measurement, not a sync
  // point): on a fast machine the run takes about 10 s.
  std::atomic<bool> done{false};
  std::vector<std::pair<double, int64_t>> samples;  // (seconds, total KiB)
  std::thread sampler([&] {
    const auto start = std::chrono::steady_clock::now();
    while (!done) {
      int64_t total = 0;
      const auto workers = run.Workers();
      for (pid_t p : workers) total += RssKib(p);
      if (workers.size() == static_cast<size_t>(kWorkers)) {
        samples.emplace_back(std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - start)
                                 .count(),
                             total);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });
  const int status = run.Finish();
  done = true;
  sampler.join();
  ASSERT_EQ(status, 0) << run.output();

  const fs::path rundir = run.RunDir();
  const proto::Checkpoint finish = LoadCheckpointDir(
      (rundir / (std::to_string(kSteps) + "_finish")).string());
  EXPECT_EQ(finish.global_step(), kSteps);

  // "finished at step S after E episodes"
  const std::string& out = run.output();
  const size_t at = out.find("finished at step ");
  ASSERT_NE(at, std::string::npos) << out;
  std::istringstream words(out.substr(at));
  std::string w;
  int64_t final_step = 0, episodes = 0;
  words >> w >> w >> w >> final_step >> w >> episodes;
  EXPECT_EQ(final_step, kSteps);
  int64_t summed = 0;
  for (int i = 0; i < kWorkers; ++i) {
    std::ifstream in(rundir / ("timers-" + std::to_string(i) + ".json"));
    std::stringstream text;
    text << in.rdbuf();
    const Json tree = Json::Parse(text.str());
    summed += static_cast<int64_t>(
        tree.at("children").at("episode_end").at("count").number());
  }
  EXPECT_EQ(summed, episodes);

  ASSERT_GE(samples.size(), 6u) << "the run was too short to judge memory";
  const int64_t warm = samples[samples.size() / 4].second;
  int64_t peak_after = 0;
  for (size_t i = samples.size() / 4; i < samples.size(); ++i) {
    peak_after = std::max(peak_after, samples[i].second);
  }
  std::printf(
      "soak: %d workers, %lld steps, %lld episodes, %.0f s; RSS of all "
      "workers: first %lld KiB, after warm-up %lld KiB, peak after warm-up "
      "%lld KiB (%+.1f%%)\n",
      kWorkers, static_cast<long long>(kSteps),
      static_cast<long long>(episodes), samples.back().first,
      static_cast<long long>(samples.front().second),
      static_cast<long long>(warm), static_cast<long long>(peak_after),
      100.0 * (peak_after - warm) / warm);
  EXPECT_LT(peak_after, warm * 11 / 10)
      << "memory grew by over 10% after warm-up";
}

}  // namespace
}  // namespace asyncrl
