// Running observation statistics: merged batch by batch from several
// workers they equal the statistics of every row at once; normalizing
// follows VecNormalize's formula; evaluation merges nothing; checkpoints
// round-trip and bad ones change nothing.
#include "asyncrl/agents/observation_normalizer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "shared_area.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace observation_normalizer_test {
namespace {

using testing::Area;

std::vector<float> RandomRows(int64_t rows, int64_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> out(static_cast<size_t>(rows * size));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < size; ++j) {
      // Element j: mean 3 j - 4, standard deviation 0.5 + j (and one
      // element far from 0, where a naive sum of squares loses digits).
      out[r * size + j] = static_cast<float>((j == 2 ? 1e4 : 3.0 * j - 4) +
                                             (0.5 + j) * normal(rng));
    }
  }
  return out;
}

void ExpectRelativelyNear(double got, double want, double tolerance,
                          const std::string& what) {
  EXPECT_LE(std::abs(got - want), tolerance * std::max(1.0, std::abs(want)))
      << what << ": got " << got << ", want " << want;
}

// VecNormalize's prior (count 1e-4, mean 0, variance 1), then every row of
// `all` (rows of `size`).
MomentStatistics PriorThenRows(const std::vector<float>& all, int64_t size) {
  MomentStatistics want;
  want.count = ObservationNormalizer::kInitialCount;
  want.mean.assign(size, 0.0);
  want.var.assign(size, 1.0);
  want.Merge(MomentStatistics::Of(
      all.data(), static_cast<int64_t>(all.size()) / size, size));
  return want;
}

// The count to 1e-12, means and variances to `tolerance`, relative.
void ExpectStatisticsNear(const MomentStatistics& got,
                          const MomentStatistics& want, double tolerance,
                          const std::string& what) {
  ExpectRelativelyNear(got.count, want.count, 1e-12, what + " count");
  ASSERT_EQ(got.mean.size(), want.mean.size());
  for (size_t j = 0; j < want.mean.size(); ++j) {
    ExpectRelativelyNear(got.mean[j], want.mean[j], tolerance,
                         what + " mean " + std::to_string(j));
    ExpectRelativelyNear(got.var[j], want.var[j], tolerance,
                         what + " variance " + std::to_string(j));
  }
}

TEST(ObservationNormalizerTest, WorkersMergingBatchesEqualAllRowsAtOnce) {
  constexpr int64_t kSize = 4;
  ObservationNormalizer first(kSize, kSize, 10.0);
  Area area(first.SharedBytes());
  first.Bind(area.memory, /*initialize=*/true);
  // Three workers on one area, batches of different sizes, interleaved.
  ObservationNormalizer second(kSize, kSize, 10.0);
  ObservationNormalizer third(kSize, kSize, 10.0);
  second.Bind(area.memory, /*initialize=*/false);
  third.Bind(area.memory, /*initialize=*/false);
  ObservationNormalizer* workers[] = {&first, &second, &third};
  std::vector<float> all;
  std::vector<float> out;
  for (int batch = 0; batch < 30; ++batch) {
    const int64_t rows = 1 + batch % 7;
    const std::vector<float> obs = RandomRows(rows, kSize, 100 + batch);
    out.resize(obs.size());
    workers[batch % 3]->MergeAndNormalize(obs.data(), rows, out.data());
    all.insert(all.end(), obs.begin(), obs.end());
  }
  const MomentStatistics got = third.Statistics();
  ExpectStatisticsNear(got, PriorThenRows(all, kSize), 1e-9, "");
  // The second element's statistics are not the prior's: rows were merged.
  EXPECT_GT(got.var[1], 1.5);
}

// Several hosts (hosts/host_coordinator.cc's rounds): each host's workers
// merge into its own area; at each round every host takes what it merged
// since the last round, every host merges all of them in rank order into
// the last round's set and sets it, keeping what was merged during the
// exchange. After a last round with nothing merged meanwhile, every host
// holds the same statistics, those of all rows at once.
TEST(ObservationNormalizerTest, HostsCombiningRoundsEqualAllRowsAtOnce) {
  constexpr int64_t kSize = 3;
  constexpr int kHosts = 3;
  std::vector<std::unique_ptr<Area>> areas;
  std::vector<std::unique_ptr<ObservationNormalizer>> parents, workers;
  for (int h = 0; h < kHosts; ++h) {
    parents.push_back(std::make_unique<ObservationNormalizer>(kSize, kSize, 5));
    areas.push_back(std::make_unique<Area>(parents[h]->SharedBytes()));
    parents[h]->Bind(areas[h]->memory, /*initialize=*/true);
    workers.push_back(std::make_unique<ObservationNormalizer>(kSize, kSize, 5));
    workers[h]->Bind(areas[h]->memory, /*initialize=*/false);
  }
  // Without hosts the since statistics are not kept.
  {
    const std::vector<float> obs = RandomRows(3, kSize, 499);
    std::vector<float> normalized(obs.size());
    ObservationNormalizer alone(kSize, kSize, 5);
    alone.MergeAndNormalize(obs.data(), 3, normalized.data());
    EXPECT_EQ(alone.TakeSinceRound().count, 0);
  }
  // The start: rank 0's statistics (here the prior) on every host.
  MomentStatistics combined = parents[0]->Statistics();
  for (auto& parent : parents) {
    parent->TrackSinceRounds();
    EXPECT_EQ(parent->TakeSinceRound().count, 0);
    parent->SetRound(combined);
  }
  std::vector<float> all, out;
  uint64_t seed = 500;
  const auto merge = [&](ObservationNormalizer& worker, int64_t rows) {
    const std::vector<float> obs = RandomRows(rows, kSize, seed++);
    out.resize(obs.size());
    worker.MergeAndNormalize(obs.data(), rows, out.data());
    all.insert(all.end(), obs.begin(), obs.end());
  };
  for (int round = 0; round < 4; ++round) {
    for (int h = 0; h < kHosts; ++h) {
      for (int b = 0; b <= (round + h) % 3; ++b) merge(*workers[h], 2 + b);
    }
    // What the all-gather hands every host: each host's since set, packed,
    // in rank order.
    std::vector<double> gathered;
    for (auto& parent : parents) {
      const std::vector<double> mine = parent->TakeSinceRound().Packed();
      gathered.insert(gathered.end(), mine.begin(), mine.end());
    }
    // Host 1's worker merges during the exchange (not in the last round).
    const bool last = round == 3;
    MomentStatistics during;
    if (!last) {
      const std::vector<float> obs = RandomRows(4, kSize, seed++);
      during = MomentStatistics::Of(obs.data(), 4, kSize);
      out.resize(obs.size());
      workers[1]->MergeAndNormalize(obs.data(), 4, out.data());
      all.insert(all.end(), obs.begin(), obs.end());
    }
    combined.MergeHosts(gathered, kHosts);
    for (auto& parent : parents) parent->SetRound(combined);
    if (!last) {
      // Host 0 holds the round's set; host 1 that with its batch since.
      const MomentStatistics zero = parents[0]->Statistics();
      EXPECT_EQ(zero.count, combined.count);
      EXPECT_EQ(zero.mean, combined.mean);
      MomentStatistics want = combined;
      want.Merge(during);
      ExpectStatisticsNear(parents[1]->Statistics(), want, 1e-12, "host 1");
    }
  }
  const MomentStatistics first = workers[0]->Statistics();
  ExpectStatisticsNear(first, PriorThenRows(all, kSize), 1e-9, "host 0");
  for (int h = 1; h < kHosts; ++h) {
    const MomentStatistics other = workers[h]->Statistics();
    EXPECT_EQ(other.count, first.count) << "host " << h;
    EXPECT_EQ(other.mean, first.mean) << "host " << h;
    EXPECT_EQ(other.var, first.var) << "host " << h;
  }

  // A set of the wrong size, or not finite, is refused and changes nothing.
  MomentStatistics wrong = combined;
  wrong.mean.pop_back();
  EXPECT_THROW(parents[2]->SetRound(wrong), std::invalid_argument);
  MomentStatistics nan = combined;
  nan.var[1] = std::nan("");
  EXPECT_THROW(parents[2]->SetRound(nan), std::invalid_argument);
  const MomentStatistics after = parents[2]->Statistics();
  EXPECT_EQ(after.count, first.count);
  EXPECT_EQ(after.mean, first.mean);
  EXPECT_EQ(after.var, first.var);
}

// A worker killed while it held the statistics' lock (the lock is the
// area's first 4 bytes) does not stop the hosts' rounds: the coordinator's
// calls give up waiting after a second and go on without it.
TEST(ObservationNormalizerTest, AHostRoundGoesOnPastALockADeadWorkerHolds) {
  ObservationNormalizer parent(2, 2, 5);
  Area area(parent.SharedBytes());
  parent.Bind(area.memory, /*initialize=*/true);
  parent.TrackSinceRounds();
  const std::vector<float> obs = RandomRows(6, 2, 77);
  std::vector<float> out(obs.size());
  parent.MergeAndNormalize(obs.data(), 6, out.data());
  reinterpret_cast<std::atomic<int32_t>*>(area.memory)->store(1);
  const MomentStatistics since = parent.TakeSinceRound();
  ExpectStatisticsNear(since, MomentStatistics::Of(obs.data(), 6, 2), 1e-12,
                       "since");
  MomentStatistics combined = PriorThenRows(obs, 2);
  parent.SetRound(combined);
  const MomentStatistics now = parent.Statistics();
  EXPECT_EQ(now.count, combined.count);
  EXPECT_EQ(now.mean, combined.mean);
  EXPECT_EQ(now.var, combined.var);
}

TEST(ObservationNormalizerTest, NormalizesClipsAndPassesAMaskThrough) {
  // 3 elements normalized, the last 2 (a legal-action mask) pass through.
  ObservationNormalizer normalizer(3, 5, 2.0);
  proto::RunningStatistics stats;
  stats.set_count(50);
  for (double m : {1.0, -2.0, 0.0}) stats.add_mean(m);
  for (double v : {4.0, 0.25, 1.0}) stats.add_var(v);
  normalizer.LoadFrom(stats);
  const std::vector<float> obs = {3.0f, -2.5f, 7.0f, 1.0f, 0.0f};
  std::vector<float> out(obs.size());
  normalizer.Normalize(obs.data(), 1, out.data());
  EXPECT_NEAR(out[0], 2.0 / std::sqrt(4.0 + 1e-8), 1e-6);
  EXPECT_NEAR(out[1], -0.5 / std::sqrt(0.25 + 1e-8), 1e-6);
  EXPECT_EQ(out[2], 2.0f);  // 7 standard deviations, clipped to 2.
  EXPECT_EQ(out[3], 1.0f);
  EXPECT_EQ(out[4], 0.0f);
}

TEST(ObservationNormalizerTest, EvaluationMergesNothing) {
  ObservationNormalizer normalizer(2, 2, 10.0);
  const std::vector<float> obs = RandomRows(5, 2, 7);
  std::vector<float> out(obs.size());
  normalizer.MergeAndNormalize(obs.data(), 5, out.data());
  const MomentStatistics before = normalizer.Statistics();
  normalizer.Normalize(obs.data(), 5, out.data());
  normalizer.NormalizeWithCopy(obs.data(), 5, out.data());
  const MomentStatistics after = normalizer.Statistics();
  EXPECT_EQ(after.count, before.count);
  EXPECT_EQ(after.mean, before.mean);
  EXPECT_EQ(after.var, before.var);
}

// One non-finite observation would make the statistics NaN for good (and
// every later checkpoint unloadable): its batch is normalized, not merged.
TEST(ObservationNormalizerTest, ANonFiniteBatchIsNotMerged) {
  ObservationNormalizer normalizer(2, 2, 10.0);
  const std::vector<float> good = RandomRows(4, 2, 5);
  std::vector<float> out(good.size());
  normalizer.MergeAndNormalize(good.data(), 4, out.data());
  const MomentStatistics before = normalizer.Statistics();
  std::vector<float> bad = RandomRows(3, 2, 6);
  bad[3] = std::numeric_limits<float>::infinity();
  out.resize(bad.size());
  normalizer.MergeAndNormalize(bad.data(), 3, out.data());
  EXPECT_EQ(normalizer.skipped_batches(), 1);
  const MomentStatistics after = normalizer.Statistics();
  EXPECT_EQ(after.count, before.count);
  EXPECT_EQ(after.mean, before.mean);
  EXPECT_EQ(after.var, before.var);
  EXPECT_TRUE(std::isfinite(out[0]));  // The finite elements normalized.
  EXPECT_EQ(out[3], 10.0f);            // +inf clipped.
}

TEST(ObservationNormalizerTest, CheckpointsRoundTripAndBadOnesChangeNothing) {
  ObservationNormalizer a(3, 3, 10.0);
  const std::vector<float> obs = RandomRows(9, 3, 11);
  std::vector<float> out(obs.size());
  a.MergeAndNormalize(obs.data(), 9, out.data());
  proto::RunningStatistics saved;
  a.SaveTo(&saved);
  ObservationNormalizer b(3, 3, 10.0);
  b.LoadFrom(saved);
  const MomentStatistics sa = a.Statistics();
  const MomentStatistics sb = b.Statistics();
  EXPECT_EQ(sb.count, sa.count);
  EXPECT_EQ(sb.mean, sa.mean);
  EXPECT_EQ(sb.var, sa.var);

  struct Bad {
    std::string what;
    void (*spoil)(proto::RunningStatistics*);
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"too few",
       [](proto::RunningStatistics* s) { s->mutable_mean()->RemoveLast(); },
       "2 means and 3 variances"},
      {"count 0", [](proto::RunningStatistics* s) { s->set_count(0); },
       "count 0"},
      {"negative variance",
       [](proto::RunningStatistics* s) { s->set_var(1, -1.0); }, "element 1"},
      {"NaN mean", [](proto::RunningStatistics* s) { s->set_mean(2, NAN); },
       "element 2"}};
  for (const Bad& c : bad) {
    SCOPED_TRACE(c.what);
    proto::RunningStatistics spoiled = saved;
    c.spoil(&spoiled);
    ObservationNormalizer target(3, 3, 10.0);
    const MomentStatistics fresh = target.Statistics();
    try {
      target.LoadFrom(spoiled);
      ADD_FAILURE() << "accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
          << e.what();
    }
    const MomentStatistics now = target.Statistics();
    EXPECT_EQ(now.count, fresh.count);
    EXPECT_EQ(now.mean, fresh.mean);
    EXPECT_EQ(now.var, fresh.var);
  }
}

}  // namespace
}  // namespace observation_normalizer_test
}  // namespace asyncrl
