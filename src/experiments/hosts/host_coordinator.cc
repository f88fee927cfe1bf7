#include "asyncrl/experiments/hosts/host_coordinator.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "asyncrl/agents/observation_normalizer.h"
#include "asyncrl/experiments/hosts/host_group.h"
#include "asyncrl/experiments/hosts/transport.h"
#include "asyncrl/experiments/shared_region.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/platform/futex.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {
namespace {

uint64_t Fnv1a(const void* data, size_t bytes, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

struct HostCoordinator::Impl {
  HostGroup net;
  ControlBlock& control;
  HostsBlock& block;
  float* params;
  int64_t num_params;
  float* optimizer;
  int64_t num_optimizer;
  std::map<std::string, std::string> config;
  std::vector<ObservationNormalizer*> statistics;
  // Per set of statistics: all hosts' rows up to the last round.
  std::vector<MomentStatistics> combined;
  int64_t others_episodes = 0;  // Other hosts' episodes already added.
  double sync_seconds = 0;      // Summed over the parameter syncs.
  int64_t syncs = 0;

  Impl(const DistOptions& o, ControlBlock& c, HostsBlock& b, float* p,
       int64_t np, float* opt, int64_t nopt,
       std::map<std::string, std::string> cfg,
       std::vector<ObservationNormalizer*> stats)
      : net(o),
        control(c),
        block(b),
        params(p),
        num_params(np),
        optimizer(opt),
        num_optimizer(nopt),
        config(std::move(cfg)),
        statistics(std::move(stats)) {}

  const DistOptions& options() const { return net.options(); }
  int rank() const { return net.rank(); }
  int size() const { return net.size(); }
};

HostCoordinator::HostCoordinator(const DistOptions& options,
                                 ControlBlock& control, HostsBlock& block,
                                 float* params, int64_t num_params,
                                 float* optimizer_state, int64_t num_optimizer,
                                 std::map<std::string, std::string> config,
                                 std::vector<ObservationNormalizer*> statistics)
    : impl_(std::make_unique<Impl>(options, control, block, params, num_params,
                                   optimizer_state, num_optimizer,
                                   std::move(config), std::move(statistics))) {}

bool HostCoordinator::CombinesStatistics() const {
  return !impl_->statistics.empty();
}

HostCoordinator::~HostCoordinator() {
  // Unwinding past a running coordinator (the parent threw): this host
  // stops and says so, instead of joining a thread that waits for news.
  LocalEnded(LocalEnd::kFailed,
             "rank " + std::to_string(impl_->rank()) + ": the trainer stopped");
  if (thread_.joinable()) thread_.join();
}

int64_t HostCoordinator::StepsNow() const {
  return total_steps_ + impl_->block.taken.load() - taken_at_round_;
}

void HostCoordinator::Start() {
  thread_ = std::thread([this] { Run(); });
}

void HostCoordinator::LocalEnded(LocalEnd end, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (local_end_ == LocalEnd::kFailed) return;  // The first reason stays.
    local_end_ = end;
    local_why_ = why;
  }
  wake_.notify_all();
}

void HostCoordinator::Join() {
  if (thread_.joinable()) thread_.join();
}

// This host stops: its workers leave (or never start) and the run ends
// with `code` and `message`.
void HostCoordinator::GiveUp(int code, const std::string& message) {
  exit_code_ = code;
  message_ = message;
  impl_->block.ready.store(2);
  StoreAndWakeAll(impl_->control.stop, 1);
}

void HostCoordinator::Run() {
  Impl& s = *impl_;
  const std::string me = "rank " + std::to_string(s.rank());

  // Rendezvous: the store (rank 0 serves it), then Gloo's full mesh.
  try {
    s.net.Connect();
  } catch (const RendezvousRefused& e) {
    GiveUp(2, me + ": " + e.what());
    return;
  } catch (const std::exception& e) {
    const std::string what = FirstLine(e.what());
    // A store that accepts and never answers is named as such, not as
    // hosts that did not come.
    GiveUp(1, me + ": the " + std::to_string(s.options().nnodes) +
                  " hosts did not meet at " + s.options().master_addr +
                  " within --dist-timeout=" + FormatValue(s.options().timeout) +
                  " s (" +
                  (StoreSilent(what)
                       ? SilentStoreMessage(s.options(), s.rank() == 0)
                       : what) +
                  ")");
    return;
  }
  RunRounds();
  // Rank 0 keeps its store up until the others are through with it: after
  // the last average, a stop or a refusal, every host; after a lost host,
  // the ones that answered (so that none of them blames rank 0).
  if (store_silent_) {
    // Nobody can count out in a store that does not answer.
  } else if (!lost_host_) {
    s.net.Finish(exit_code_ == 0 ? s.options().timeout : 5.0, s.size());
  } else {
    s.net.Finish(3.0, s.size() - missing_);
  }
}

// The news that starts a round early: this host's workers ended or its
// evaluation succeeded (it bumps kNewsKey), or another host's news (seen in
// the store within kNewsPoll), so that a stop or the end reaches every host
// at once, not an interval later.
struct HostCoordinator::RoundNews {
  int64_t seen = 0;
  bool told_training_done = false;
  LocalEnd told_end = LocalEnd::kRunning;
};

void HostCoordinator::RunRounds() {
  Impl& s = *impl_;
  try {
    if (!CheckOptions()) return;
    ShareRankZeroState();
    // Rounds until every host is done or one stops.
    RoundNews news;
    while (true) {
      std::string why;
      const LocalEnd end = AwaitRoundStart(&news, &why);
      bool all_done = false;
      if (!ExchangeStatus(end, why, &all_done)) return;
      AverageParameters(all_done);
      if (all_done) break;
    }
    FinishRounds();
  } catch (const std::exception& e) {
    const std::string what = FirstLine(e.what());
    lost_host_ = true;
    if (StoreSilent(what)) {
      // No host is to blame, and the store cannot carry the news.
      store_silent_ = true;
      s.net.Abandon();
      GiveUp(1, "rank " + std::to_string(s.rank()) + ": " +
                    SilentStoreMessage(s.options(), s.rank() == 0));
      return;
    }
    const std::string missing = s.net.Missing(what);
    missing_ = missing.empty() ? 1
                               : 1 + static_cast<int>(std::count(
                                         missing.begin(), missing.end(), ','));
    // Its threads may wait in a collective until Gloo's own timeout: the
    // group is left to the process's end instead of joined.
    s.net.Abandon();
    GiveUp(1,
           "rank " + std::to_string(s.rank()) + ": " +
               (missing.empty() ? std::string("a host") : "rank " + missing) +
               " stopped answering (" + what + ")");
  }
}

// A store request timed out (`what`) while rank 0's address still accepts
// connections (rank 0 asks its own store): the store is blocked, not a host
// gone; one cut off or gone does not accept (the lost-host path names it).
bool HostCoordinator::StoreSilent(const std::string& what) const {
  if (!StoreWentSilent(what)) return false;
  return impl_->rank() == 0 ||
         MasterAccepts(impl_->options(),
                       std::min(2.0, impl_->options().timeout));
}

// Every host's options against rank 0's, before any step.
bool HostCoordinator::CheckOptions() {
  Impl& s = *impl_;
  std::vector<int64_t> statistics;
  for (const ObservationNormalizer* n : s.statistics) {
    statistics.push_back(n->size());
  }
  const std::string mine =
      Fingerprint(s.config, s.num_params, s.num_optimizer, statistics);
  std::string refused;
  if (s.rank() == 0) {
    s.net.store().set("asyncrl/options", Bytes(mine));
  } else {
    refused = Difference(mine, Text(s.net.store().get("asyncrl/options")));
    if (!refused.empty()) {
      PostNote(s.net.store(), "asyncrl/refused/" + std::to_string(s.rank()),
               refused);
    }
  }
  const std::vector<int64_t> refusals =
      s.net.Gather({refused.empty() ? 0 : 1}, 1);
  for (int r = 0; r < s.size(); ++r) {
    if (refusals[r] == 0) continue;
    if (r == s.rank()) {
      GiveUp(2, "rank " + std::to_string(s.rank()) + ": " + refused);
    } else {
      GiveUp(2, "rank " + std::to_string(r) + " was refused: " +
                    s.net.Note("asyncrl/refused/" + std::to_string(r)));
    }
    return false;
  }
  return true;
}

// Rank 0's parameters, optimizer statistics and counters to every host;
// the step counter starts at rank 0's step (a resumed run's). Then the
// workers may train.
void HostCoordinator::ShareRankZeroState() {
  Impl& s = *impl_;
  ControlBlock& control = s.control;
  if (s.rank() == 0) {
    s.net.store().add(kStepKey, control.global_step.load());
  }
  s.net.Broadcast(s.params, s.num_params);
  s.net.Broadcast(s.optimizer, s.num_optimizer);
  // Rank 0's running statistics (a resumed run's) start every host's; no
  // worker has merged anything yet (nor kept a since set before this).
  for (ObservationNormalizer* n : s.statistics) {
    n->TrackSinceRounds();
    std::vector<double> packed = n->Statistics().Packed();
    s.net.Broadcast(packed.data(), static_cast<int64_t>(packed.size()));
    s.combined.push_back(MomentStatistics::Unpacked(packed.data(), n->size()));
    n->SetRound(s.combined.back());
  }
  // The update count too: Adam's step (agents/shared_rmsprop.h) goes on
  // from rank 0's on every host.
  at::Tensor counters = at::tensor(
      std::vector<int64_t>{control.global_step.load(), control.episodes.load(),
                           control.agent_counters.updates.load()},
      at::kLong);
  {
    std::vector<at::Tensor> v{counters};
    s.net.Complete(s.net.group().broadcast(v));
  }
  if (s.rank() != 0) {
    control.global_step.store(counters[0].item<int64_t>());
    control.start_step = counters[0].item<int64_t>();
    control.episodes.store(counters[1].item<int64_t>());
    s.others_episodes = counters[1].item<int64_t>();
    control.agent_counters.updates.store(counters[2].item<int64_t>());
  }
  total_steps_ = control.global_step.load();
  formed_ = true;
  s.block.ready.store(1);
  if (s.rank() == 0) {
    Log(LogLevel::kInfo,
        "dist: " + std::to_string(s.size()) + " hosts joined at " +
            s.options().master_addr + "; averaging parameters every " +
            FormatValue(s.options().sync_interval) + " s" +
            (s.statistics.empty() ? "" : " and combining running statistics"));
  }
}

// Waits for the next round: an interval, or news (RoundNews). Returns how
// this host's workers are, and `why` when they failed.
HostCoordinator::LocalEnd HostCoordinator::AwaitRoundStart(RoundNews* news,
                                                           std::string* why) {
  Impl& s = *impl_;
  const auto next_round = HostClock::now() + Millis(s.options().sync_interval);
  while (true) {
    LocalEnd end;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait_until(lock, std::min(next_round, HostClock::now() + kNewsPoll),
                       [this] { return local_end_ != LocalEnd::kRunning; });
      end = local_end_;
      *why = local_why_;
    }
    bool mine = false;
    if (end != news->told_end) {
      news->told_end = end;
      mine = true;
    }
    if (!news->told_training_done && s.control.training_done.load() != 0) {
      news->told_training_done = true;
      mine = true;
    }
    if (mine) {
      news->seen = s.net.store().add(kNewsKey, 1);
      return end;
    }
    if (end != LocalEnd::kRunning || HostClock::now() >= next_round) {
      return end;
    }
    const int64_t posted = s.net.store().add(kNewsKey, 0);
    if (posted > news->seen) {
      news->seen = posted;
      return end;
    }
  }
}

// The round's all-reduce of every host's status, steps taken, episodes and
// successful evaluation: the global step every host shows and checkpoints
// record is the steps all hosts took, as of this round. False when a host
// stopped (this run ends; the exit code and message are set).
bool HostCoordinator::ExchangeStatus(LocalEnd end, const std::string& why,
                                     bool* all_done) {
  Impl& s = *impl_;
  ControlBlock& control = s.control;
  enum Status : int64_t { kRunning = 0, kDone = 1, kStopped = 2 };
  constexpr int kFields = 4;
  const int64_t status = end == LocalEnd::kDone     ? kDone
                         : end == LocalEnd::kFailed ? kStopped
                                                    : kRunning;
  if (status == kStopped) {
    PostNote(s.net.store(), "asyncrl/why/" + std::to_string(s.rank()), why);
  }
  const int64_t local_episodes = control.episodes.load() - s.others_episodes;
  const int64_t taken_here = s.block.taken.load();
  const std::vector<int64_t> all =
      s.net.Gather({status, taken_here, local_episodes,
                    static_cast<int64_t>(control.training_done.load())},
                   kFields);
  ++rounds_;
  int64_t taken = 0, episodes = 0;
  bool done_training = false;
  int stopped = -1;
  *all_done = true;
  for (int r = 0; r < s.size(); ++r) {
    const int64_t* f = &all[r * kFields];
    if (f[0] == kStopped && stopped < 0) stopped = r;
    *all_done = *all_done && f[0] == kDone;
    taken += f[1];
    if (r != s.rank()) episodes += f[2];
    done_training = done_training || f[3] != 0;
  }
  control.episodes.fetch_add(episodes - s.others_episodes);
  s.others_episodes = episodes;
  total_steps_ = control.start_step.load() + taken;
  taken_at_round_ = taken_here;
  control.global_step.store(total_steps_);
  if (done_training) control.training_done.store(1);
  if (stopped < 0) return true;
  if (stopped == s.rank()) {
    exit_code_ = 1;
    message_ = why;
  } else {
    GiveUp(1, "rank " + std::to_string(stopped) + " stopped: " +
                  s.net.Note("asyncrl/why/" + std::to_string(stopped)));
  }
  return false;
}

// The average (exact after the last round), then the OnAveraged callback.
void HostCoordinator::AverageParameters(bool exact) {
  Impl& s = *impl_;
  const auto t0 = HostClock::now();
  s.net.Average(s.params, s.num_params, exact);
  if (s.options().sync_optimizer_state) {
    s.net.Average(s.optimizer, s.num_optimizer, exact);
  }
  const bool combined = CombineStatistics();
  s.sync_seconds +=
      std::chrono::duration<double>(HostClock::now() - t0).count();
  ++s.syncs;
  // A failed combination stops this host: no checkpoint of this round.
  if (!on_averaged_ || !combined) return;
  try {
    on_averaged_(total_steps_);
  } catch (const std::exception& e) {
    // This host fails (a checkpoint it could not write): it stops its
    // workers and tells the others at the next round.
    LocalEnded(LocalEnd::kFailed,
               "rank " + std::to_string(s.rank()) + ": " + e.what());
    StoreAndWakeAll(s.control.stop, 1);
  }
}

// Every host's statistics since the last round, merged in rank order into
// the last round's combined set on every host (so every host computes the
// same set), become the run's, with what this host merged meanwhile.
// False: a combined set was not finite; this host stops and says why (the
// next round's status carries it to the others). Every set is gathered
// all the same, so that the hosts' collectives stay in step even if hosts
// built differently disagree about one set.
bool HostCoordinator::CombineStatistics() {
  Impl& s = *impl_;
  std::string failure;
  for (size_t i = 0; i < s.statistics.size(); ++i) {
    ObservationNormalizer& n = *s.statistics[i];
    s.combined[i].MergeHosts(s.net.GatherDoubles(n.TakeSinceRound().Packed()),
                             s.size());
    if (!failure.empty()) continue;
    try {
      n.SetRound(s.combined[i]);
    } catch (const std::invalid_argument& e) {
      failure = e.what();
    }
  }
  if (failure.empty()) return true;
  LocalEnded(LocalEnd::kFailed,
             "rank " + std::to_string(s.rank()) + ": " + failure);
  StoreAndWakeAll(s.control.stop, 1);
  return false;
}

// After the last round: its failure, the digest, the averages' cost.
void HostCoordinator::FinishRounds() {
  Impl& s = *impl_;
  {
    // The last round's checkpoint may have failed after every host was
    // done: this host's run failed all the same.
    std::lock_guard<std::mutex> lock(mutex_);
    if (local_end_ == LocalEnd::kFailed) {
      exit_code_ = 1;
      message_ = local_why_;
    }
  }
  digest_ =
      Fnv1a(s.params, s.num_params * sizeof(float), 1469598103934665603ULL);
  for (ObservationNormalizer* n : s.statistics) {
    const std::vector<double> packed = n->Statistics().Packed();
    digest_ = Fnv1a(packed.data(), packed.size() * sizeof(double), digest_);
  }
  if (s.rank() == 0 || LogEnabled(LogLevel::kDebug)) {
    char line[160];
    std::snprintf(line, sizeof(line),
                  "dist: %lld parameter averages, %.2f ms each (%lld floats)",
                  static_cast<long long>(s.syncs),
                  s.syncs ? 1e3 * s.sync_seconds / s.syncs : 0.0,
                  static_cast<long long>(s.num_params));
    Log(LogLevel::kInfo, line);
  }
}

}  // namespace asyncrl
