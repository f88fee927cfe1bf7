#include "asyncrl/experiments/hosts/step_leases.h"

#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "asyncrl/experiments/hosts/transport.h"
#include "asyncrl/experiments/shared_region.h"

namespace asyncrl {
namespace {

// A lease lasts about this long at the worker's pace, or as long as this
// many of the store's round trips when that is longer (a far or busy rank 0:
// the worker waits for each request, so at 40 ms a round trip 50 ms leases
// left it idle almost half the time), but no longer than a second (the
// hosts' last leases end the run).
constexpr double kLeaseSeconds = 0.05;
constexpr double kRoundTripsPerLease = 20;
constexpr double kMaxLeaseSeconds = 1.0;

// What a worker reports when the store did not grant it steps.
std::runtime_error RequestFailed(const DistOptions& options,
                                 const std::exception& e) {
  const std::string what = FirstLine(e.what());
  return std::runtime_error(
      "a request for steps failed: " +
      (StoreWentSilent(what) && MasterAccepts(options, 1.0)
           ? SilentStoreMessage(options, /*own=*/false)
           : what));
}

}  // namespace

struct StepLeases::Impl {
  DistOptions options;
  c10::intrusive_ptr<c10d::TCPStore> store;
  int64_t steps = 0;
  int64_t next = 0;  // Numbers next+1 .. end are this worker's.
  int64_t end = 0;
  bool exhausted = false;
  int64_t multiple = 4;              // Lease size in claims of `want`.
  HostClock::time_point granted_at;  // When the current lease came.
  double round_trip = 0;             // The store's, smoothed, in seconds.
};

StepLeases::StepLeases(const DistOptions& options, int64_t steps)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  try {
    impl_->store = ConnectStore(options, /*server=*/false);
  } catch (const std::exception& e) {
    throw RequestFailed(options, e);
  }
  impl_->steps = steps;
}

// The store client is left to the process's end (see ~HostGroup).
StepLeases::~StepLeases() { (void)impl_->store.release(); }

int64_t StepLeases::Claim(int64_t want, int64_t* granted) {
  Impl& s = *impl_;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (s.next < s.end) {
      *granted = std::min(want, s.end - s.next);
      const int64_t first = s.next + 1;
      s.next += *granted;
      return first;
    }
    if (s.exhausted) break;
    // About the target's worth of this worker's steps (the time it used
    // the lease, not the request's): double while a lease lasts under half
    // of that, halve while it lasts over twice.
    const auto now = HostClock::now();
    if (s.end > 0) {
      const double used =
          std::chrono::duration<double>(now - s.granted_at).count();
      const double target = std::clamp(kRoundTripsPerLease * s.round_trip,
                                       kLeaseSeconds, kMaxLeaseSeconds);
      if (used < target / 2)
        s.multiple = std::min<int64_t>(s.multiple * 2, 1 << 16);
      if (used > target * 2) s.multiple = std::max<int64_t>(s.multiple / 2, 1);
    }
    const int64_t size = s.multiple * want;
    int64_t after = 0;
    try {
      after = s.store->add(kStepKey, size);
    } catch (const std::exception& e) {
      throw RequestFailed(s.options, e);
    }
    s.granted_at = HostClock::now();
    const double took =
        std::chrono::duration<double>(s.granted_at - now).count();
    s.round_trip = s.round_trip == 0 ? took : 0.7 * s.round_trip + 0.3 * took;
    const int64_t begin = after - size;
    if (begin >= s.steps) {
      s.exhausted = true;
      break;
    }
    s.next = begin;
    s.end = std::min(after, s.steps);
  }
  *granted = 0;
  return 0;
}

bool WaitForHosts(const HostsBlock& block, const ControlBlock& control) {
  // Only at a worker's start, while the hosts rendezvous.
  while (true) {
    const int32_t ready = block.ready.load();
    if (ready == 1) return true;
    if (ready == 2 || control.stop.load() != 0) return false;
    usleep(2000);
  }
}

}  // namespace asyncrl
