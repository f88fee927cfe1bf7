// The learner beside the workers (experiments/learner/): segments encoded
// and decoded without loss, the ring that keeps the newest ones within its
// bytes (across processes too), and the learner's update from a decoded
// batch equal to the update of a worker that learns from the same rollout
// itself with --fresh-params.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "asyncrl/agents/a3c.h"
#include "asyncrl/agents/torch_setup.h"
#include "asyncrl/experiments/learner/segment_buffer.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace learner_test {
namespace {

// A rollout of K = 3 environments and T = 4 steps, 2-float observations,
// discrete actions: environment 0's episode ends at step 1 (terminal),
// environment 1's at step 2 (a time limit: bootstrapped), environment 2's
// goes on (bootstrapped at the rollout's end); every value distinct.
Rollout MakeRollout(bool turn_passes) {
  Rollout r;
  r.batch = 3;
  r.steps = 4;
  for (int64_t i = 0; i < 12; ++i) {
    r.obs.push_back(static_cast<float>(i));
    r.obs.push_back(static_cast<float>(i) + 0.5f);
    r.actions.push_back(i % 3);
    r.rewards.push_back(static_cast<float>(i) * 0.25f);
    r.behaviour_log_probs.push_back(-0.1f * static_cast<float>(i + 1));
    r.next.push_back(Rollout::kContinue);
  }
  const float end1[] = {100.0f, 101.0f};
  const float end2[] = {200.0f, 201.0f};
  r.next[1 * 3 + 0] = Rollout::kTerminal;
  r.next[2 * 3 + 1] = r.AddBootstrap(end1, 2);
  r.next[3 * 3 + 0] = Rollout::kTerminal;
  r.next[3 * 3 + 1] = r.AddBootstrap(end2, 2);
  const float last[] = {300.0f, 301.0f};
  r.next[3 * 3 + 2] = r.AddBootstrap(last, 2);
  if (turn_passes) r.turn_passes = {0, 1, 0, 1, 0, 0, 0, 0, 1};  // Shorter.
  return r;
}

SegmentShape Shape() { return {4, 2, 0}; }

// Row i's successor as a value: "T" (terminal), "C" (the next row) or the
// bootstrap observation.
std::vector<float> Successor(const Rollout& r, int64_t i) {
  if (r.next[i] == Rollout::kTerminal) return {-1e9f};
  if (r.next[i] == Rollout::kContinue) return {1e9f};
  return {r.bootstrap_obs.begin() + r.next[i] * 2,
          r.bootstrap_obs.begin() + r.next[i] * 2 + 2};
}

TEST(SegmentTest, ColumnsDecodeIntoTheRolloutTheyCameFrom) {
  for (bool passes : {false, true}) {
    const Rollout original = MakeRollout(passes);
    const SegmentShape shape = Shape();
    // Columns 2 and 0, in that order: batch columns 0 and 1.
    std::vector<uint8_t> bytes;
    std::vector<size_t> starts;
    for (int64_t k : {2, 0}) {
      starts.push_back(bytes.size());
      EncodeSegment(original, k, shape, /*acted_updates=*/10 + k, &bytes);
      EXPECT_EQ(bytes.size() - starts.back(),
                shape.RecordBytes(k == 2 ? 1 : 0, passes));
    }
    std::vector<const uint8_t*> records;
    for (size_t s : starts) records.push_back(bytes.data() + s);
    Rollout batch;
    EXPECT_EQ(DecodeBatch(records, shape, &batch), 10);  // The oldest.
    ASSERT_EQ(batch.batch, 2);
    ASSERT_EQ(batch.steps, 4);
    EXPECT_EQ(batch.num_bootstrap, 1);
    for (int64_t s = 0; s < 4; ++s) {
      for (int64_t c = 0; c < 2; ++c) {
        const int64_t k = c == 0 ? 2 : 0;
        const int64_t i = s * 3 + k;  // In the original.
        const int64_t j = s * 2 + c;  // In the batch.
        EXPECT_EQ(batch.obs[j * 2], original.obs[i * 2]);
        EXPECT_EQ(batch.obs[j * 2 + 1], original.obs[i * 2 + 1]);
        EXPECT_EQ(batch.actions[j], original.actions[i]);
        EXPECT_EQ(batch.rewards[j], original.rewards[i]);
        EXPECT_EQ(batch.behaviour_log_probs[j],
                  original.behaviour_log_probs[i]);
        EXPECT_EQ(Successor(batch, j), Successor(original, i)) << s << " " << k;
        EXPECT_EQ(batch.SuccessorSign(j), original.SuccessorSign(i));
      }
    }
    EXPECT_EQ(batch.turn_passes.empty(), !passes);
  }
}

TEST(SegmentTest, ContinuousActionsAndTwoBootstrapsKeepTheirOrder) {
  Rollout r = MakeRollout(false);
  r.actions.clear();
  for (int64_t i = 0; i < 12 * 2; ++i) {
    r.cont_actions.push_back(0.01f * static_cast<float>(i));
  }
  const SegmentShape shape{4, 2, 2};
  std::vector<uint8_t> bytes;
  EncodeSegment(r, 1, shape, 0, &bytes);
  EXPECT_EQ(bytes.size(), shape.RecordBytes(2, false));
  Rollout batch;
  DecodeBatch({bytes.data()}, shape, &batch);
  ASSERT_EQ(batch.num_bootstrap, 2);
  for (int64_t s = 0; s < 4; ++s) {
    EXPECT_EQ(batch.cont_actions[s * 2], r.cont_actions[(s * 3 + 1) * 2]);
    EXPECT_EQ(batch.cont_actions[s * 2 + 1],
              r.cont_actions[(s * 3 + 1) * 2 + 1]);
    EXPECT_EQ(Successor(batch, s), Successor(r, s * 3 + 1)) << s;
  }
}

// A record of `bytes` bytes whose every byte says `marker`, which also
// opens it (as a little-endian int64).
std::vector<uint8_t> Marked(int64_t marker, size_t bytes) {
  std::vector<uint8_t> record(bytes, static_cast<uint8_t>(marker * 31 + 7));
  std::memcpy(record.data(), &marker, sizeof(marker));
  return record;
}

// Every record the ring holds (sampled many times over), checked intact;
// returns their markers.
std::set<int64_t> Held(SegmentBuffer& ring) {
  std::mt19937_64 rng(3);
  std::vector<uint8_t> out;
  std::vector<size_t> starts;
  std::set<int64_t> markers;
  if (ring.size() == 0) return markers;
  EXPECT_TRUE(ring.Sample(ring.size() * 60, 1, rng, &out, &starts));
  for (size_t i = 0; i < starts.size(); ++i) {
    const size_t end = i + 1 < starts.size() ? starts[i + 1] : out.size();
    int64_t marker = 0;
    std::memcpy(&marker, out.data() + starts[i], sizeof(marker));
    for (size_t b = starts[i] + sizeof(marker); b < end; ++b) {
      EXPECT_EQ(out[b], static_cast<uint8_t>(marker * 31 + 7)) << marker;
    }
    markers.insert(marker);
  }
  return markers;
}

class SegmentBufferTest : public ::testing::Test {
 protected:
  SegmentBuffer& Make(size_t data_bytes, int64_t max_records) {
    memory_.assign(SegmentBuffer::BytesFor(data_bytes, max_records) + 64, 0);
    auto address = reinterpret_cast<uintptr_t>(memory_.data());
    void* aligned = reinterpret_cast<void*>((address + 63) / 64 * 64);
    return *SegmentBuffer::Place(aligned, data_bytes, max_records);
  }
  std::vector<uint8_t> memory_;
};

TEST_F(SegmentBufferTest, KeepsTheNewestRecordsThatFitItsBytes) {
  SegmentBuffer& ring = Make(1000, 100);
  for (int64_t m = 0; m < 5; ++m) {
    const auto record = Marked(m, 300);
    ASSERT_TRUE(ring.Put(record.data(), record.size()));
  }
  // 3 x 300 fit in 1000: records 2, 3 and 4. Record 3 did not fit after
  // 2 (900 + 300 > 1000): it starts again at 0, dropping 0; record 4 then
  // drops 1.
  EXPECT_EQ(Held(ring), (std::set<int64_t>{2, 3, 4}));
  EXPECT_EQ(ring.size(), 3);
  EXPECT_EQ(ring.written(), 5);
  EXPECT_EQ(ring.dropped(), 2);
  EXPECT_EQ(ring.bytes_held(), 900u);
}

TEST_F(SegmentBufferTest, RecordsOfEverySizeStayIntactAndNewestFirst) {
  SegmentBuffer& ring = Make(4096, 40);
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<size_t> size(8, 900);
  for (int64_t m = 0; m < 400; ++m) {
    const auto record = Marked(m, size(rng));
    ASSERT_TRUE(ring.Put(record.data(), record.size()));
    ASSERT_LE(ring.bytes_held(), ring.capacity());
    if (m % 37 != 0) continue;
    // The held records are the newest ones, with no gap.
    const std::set<int64_t> held = Held(ring);
    ASSERT_EQ(static_cast<int64_t>(held.size()), ring.size());
    ASSERT_EQ(*held.rbegin(), m);
    EXPECT_EQ(*held.begin(), m - ring.size() + 1);
  }
  EXPECT_EQ(ring.written() - ring.dropped(), ring.size());
}

TEST_F(SegmentBufferTest, TheRecordCountIsBoundedToo) {
  SegmentBuffer& ring = Make(4096, 3);
  for (int64_t m = 0; m < 6; ++m) {
    const auto record = Marked(m, 16);
    ASSERT_TRUE(ring.Put(record.data(), record.size()));
  }
  EXPECT_EQ(Held(ring), (std::set<int64_t>{3, 4, 5}));
}

TEST_F(SegmentBufferTest, RefusesARecordLargerThanItselfAndWaitsForTheMinimum) {
  SegmentBuffer& ring = Make(256, 10);
  const auto big = Marked(1, 257);
  EXPECT_FALSE(ring.Put(big.data(), big.size()));
  EXPECT_EQ(ring.size(), 0);
  const auto small = Marked(2, 64);
  ASSERT_TRUE(ring.Put(small.data(), small.size()));
  std::mt19937_64 rng(1);
  std::vector<uint8_t> out;
  std::vector<size_t> starts;
  EXPECT_FALSE(ring.Sample(4, 2, rng, &out, &starts));
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(ring.Put(small.data(), small.size()));
  EXPECT_TRUE(ring.Sample(4, 2, rng, &out, &starts));
  EXPECT_EQ(starts.size(), 4u);
  EXPECT_EQ(out.size(), 4u * 64);
}

TEST_F(SegmentBufferTest, AChildProcessesRecordsReachTheParent) {
  const size_t bytes = SegmentBuffer::BytesFor(4096, 16);
  void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  SegmentBuffer& ring = *SegmentBuffer::Place(shared, 4096, 16);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int64_t m = 0; m < 3; ++m) {
      const auto record = Marked(m, 100);
      if (!ring.Put(record.data(), record.size())) _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(Held(ring), (std::set<int64_t>{0, 1, 2}));
  munmap(shared, bytes);
}

// Two environments, 4 steps: environment 0's episode ends at step 1
// (terminal), environment 1's at step 2 (a time limit).
struct Episode {
  std::vector<std::vector<float>> obs;  // 5 steps' [2, 4] observations.
  Episode() {
    torch::manual_seed(11);
    for (int s = 0; s < 5; ++s) {
      auto t = torch::randn({8}).contiguous();
      obs.emplace_back(t.data_ptr<float>(), t.data_ptr<float>() + 8);
    }
  }
  // Acts the 4 steps; `before_last` runs before the last outcome (which
  // ends the rollout).
  template <typename F>
  void Play(A3C& agent, F before_last) const {
    const std::vector<std::vector<double>> rewards = {
        {0.5, -1.0}, {2.0, 0.25}, {0.0, 1.0}, {-0.5, 0.75}};
    const std::vector<std::vector<uint8_t>> terminal = {
        {0, 0}, {1, 0}, {0, 0}, {0, 0}};
    const std::vector<std::vector<uint8_t>> ended = {
        {0, 0}, {1, 0}, {0, 1}, {0, 0}};
    for (int s = 0; s < 4; ++s) {
      agent.BatchActAndTrain({obs[s].data(), 8}, 2);
      if (s == 3) before_last();
      agent.BatchObserveAndTrain({obs[s + 1].data(), 8}, rewards[s],
                                 terminal[s], ended[s], false);
    }
  }
};

A3C MakeAgent(bool fresh_params, double lag_tolerance = 0) {
  torch::manual_seed(7);
  A3COptions options;
  options.lag_tolerance = lag_tolerance;
  options.t_max = 4;
  options.beta = 0.05;
  options.max_grad_norm = 0;
  options.policy_target = "vtrace";
  options.lambda = 0.9;
  options.fresh_params = fresh_params;
  return A3C(FcSoftmaxActorCritic(4, 3, std::vector<int64_t>{16}).ptr(),
             Space::Box({4}, -10.0f, 10.0f), Space::Discrete(3), options);
}

struct Shared {
  explicit Shared(const Agent& agent)
      : params(agent.SharedSizes().params), ms(agent.SharedSizes().optimizer) {}
  std::vector<float> params;
  std::vector<float> ms;
  SharedCounters counters;
  SharedBuffers buffers() { return {params.data(), ms.data(), &counters}; }
  // As another process's updates would.
  void Move() {
    for (size_t i = 0; i < params.size(); ++i) {
      params[i] += 0.3f * std::sin(static_cast<float>(i));
    }
  }
};

TEST(LearnerUpdateTest, LearningFromDecodedSegmentsEqualsLearningInPlace) {
  ConfigureTorchForFork();
  const Episode episode;
  // The reference: a worker that learns from its rollout itself, at the
  // shared parameters as they are when it learns (--fresh-params).
  A3C reference = MakeAgent(/*fresh_params=*/true);
  Shared reference_shared(reference);
  reference.BindShared(reference_shared.buffers(), true);
  episode.Play(reference, [&] { reference_shared.Move(); });
  ASSERT_EQ(reference.num_updates(), 1);

  // A worker that sends its rollout, and the learner.
  A3C actor = MakeAgent(false);
  Shared shared(actor);
  actor.BindShared(shared.buffers(), true);
  const SegmentShape shape{4, 4, 0};
  std::vector<uint8_t> bytes;
  std::vector<size_t> starts;
  int sent = 0;
  actor.SendRolloutsTo([&](const Rollout& rollout, int64_t acted_updates) {
    ++sent;
    EXPECT_EQ(rollout.steps, 4);  // Through both episode ends.
    EXPECT_EQ(acted_updates, 0);
    for (int64_t k = 0; k < rollout.batch; ++k) {
      starts.push_back(bytes.size());
      EncodeSegment(rollout, k, shape, acted_updates, &bytes);
    }
  });
  episode.Play(actor, [&] { shared.Move(); });
  ASSERT_EQ(sent, 1);
  EXPECT_EQ(actor.num_updates(), 0);
  // The worker took the moved parameters for its next rollout.
  EXPECT_EQ(actor.local().params_data()[1], shared.params[1]);

  A3C learner = MakeAgent(false);
  learner.BindShared(shared.buffers(), false);
  Rollout batch;
  std::vector<const uint8_t*> records;
  for (size_t s : starts) records.push_back(bytes.data() + s);
  DecodeBatch(records, shape, &batch);
  const std::vector<float> before = shared.params;
  learner.LearnFrom(&batch, 0);
  EXPECT_EQ(learner.num_updates(), 1);
  EXPECT_EQ(shared.counters.updates.load(), 1);
  EXPECT_NE(shared.params, before);
  // Corrected for the parameters that moved since the actions were taken.
  ASSERT_EQ(learner.last_update().log_ratios.size(), 8u);
  double max_log_ratio = 0;
  for (float r : learner.last_update().log_ratios) {
    max_log_ratio = std::max(max_log_ratio, std::abs(double{r}));
  }
  EXPECT_GT(max_log_ratio, 0.01);
  // The same update as the reference's, to float rounding.
  const torch::Tensor expected = reference.local().grads();
  const torch::Tensor got = learner.local().grads();
  ASSERT_EQ(expected.numel(), got.numel());
  EXPECT_TRUE(torch::allclose(got, expected, 1e-5, 1e-6))
      << (got - expected).abs().max().item<float>();
  const auto& returns = learner.last_update().returns;
  const auto& expected_returns = reference.last_update().returns;
  ASSERT_EQ(returns.size(), expected_returns.size());
  for (size_t i = 0; i < returns.size(); ++i) {
    EXPECT_NEAR(returns[i], expected_returns[i], 1e-5) << i;
  }
  // The batch is the caller's again, as it was.
  EXPECT_EQ(batch.rows(), 8);
  EXPECT_EQ(batch.batch, 2);

  // The rows' age is the update's policy lag, the learner's statistic and
  // the run's (the status line's), and never scales the step: two learners
  // at the same shared state, one given rows 25 updates old (past
  // --lag-tolerance 8), step alike.
  std::vector<std::vector<float>> stepped;
  for (const int64_t acted : {30, 5}) {
    Shared copy(learner);
    copy.params = shared.params;
    copy.ms = shared.ms;
    copy.counters.updates.store(30);
    A3C again = MakeAgent(false, /*lag_tolerance=*/8);
    again.BindShared(copy.buffers(), false);
    again.LearnFrom(&batch, acted);
    EXPECT_EQ(again.last_update().policy_lag, 30 - acted);
    EXPECT_EQ(copy.counters.policy_lag_sum.load(), 30 - acted);
    for (const Statistic& s : again.Statistics()) {
      if (s.name == "policy_lag") {
        EXPECT_EQ(s.value, 30 - acted);
      }
    }
    stepped.push_back(copy.params);
  }
  EXPECT_EQ(stepped[0], stepped[1]);
}

TEST(LearnerUpdateTest, ANonFiniteRewardStopsTheLearnerBeforeAnyStep) {
  ConfigureTorchForFork();
  A3C learner = MakeAgent(false);
  Shared shared(learner);
  learner.BindShared(shared.buffers(), true);
  Rollout batch = MakeRollout(false);
  batch.obs.clear();
  for (int64_t i = 0; i < 12 * 4; ++i) batch.obs.push_back(0.1f * i);
  batch.bootstrap_obs.assign(3 * 4, 0.5f);
  batch.rewards[4] = std::nanf("");
  const std::vector<float> before = shared.params;
  try {
    learner.LearnFrom(&batch, 0);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(
        std::string(e.what()).find("1 of the rollout's 12 rewards is NaN"),
        std::string::npos)
        << e.what();
  }
  EXPECT_EQ(shared.params, before);
  EXPECT_EQ(shared.counters.updates.load(), 0);
  EXPECT_TRUE(std::isnan(batch.rewards[4]));  // Left to the caller.
}

}  // namespace
}  // namespace learner_test
}  // namespace asyncrl
