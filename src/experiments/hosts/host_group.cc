#include "asyncrl/experiments/hosts/host_group.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "asyncrl/misc/check.h"
#include "asyncrl/misc/validate.h"

namespace asyncrl {

void HostGroup::Connect() {
  store_ = ConnectStore(options_, rank() == 0);
  // Each rank checks in once: a second host with the same --node-rank is
  // refused before it joins Gloo (where it would take the first one's
  // place in the mesh and both would wait out the timeout).
  const std::string me = std::to_string(rank());
  if (store_->add("asyncrl/joined/" + me, 1) > 1) {
    throw RendezvousRefused(
        "--node-rank=" + me + " is invalid; accepted: a rank no other host " +
        "of this run has, in [0, " + std::to_string(size()) +
        ") (another host already joined as rank " + me +
        "; if that one died, restart every host)");
  }
  // A host whose workers are done enters each collective at once and waits
  // there for the others' next round: up to an interval more.
  auto gloo = c10d::ProcessGroupGloo::Options::create(
      Millis(options_.timeout + options_.sync_interval));
  gloo->devices.push_back(GlooDevice(options_));
  gloo->threads = 1;
  group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(
      c10::make_intrusive<c10d::PrefixStore>("asyncrl/gloo", store_), rank(),
      size(), gloo);
}

void HostGroup::Complete(const c10::intrusive_ptr<c10d::Work>& work) {
  const auto deadline =
      HostClock::now() + Millis(options_.timeout + options_.sync_interval);
  while (true) {
    try {
      // Blocks (no polling: the workers need the cores); throws when
      // 50 ms pass first, or rethrows the collective's own error.
      work->wait(std::chrono::milliseconds(50));
      if (work->isCompleted()) return;
    } catch (const c10::Error&) {
      // A timeout of this slice, or the collective failed; it may also
      // have completed just after the slice ran out: wait() without a
      // timeout then returns, or rethrows its own error.
      if (work->isCompleted()) {
        work->wait();
        return;
      }
    }
    if (HostClock::now() > deadline) {
      throw std::runtime_error("no answer within --dist-timeout=" +
                               FormatValue(options_.timeout) + " s");
    }
    if (store_->check({kAbortKey})) {
      throw std::runtime_error("another host gave up: " +
                               Text(store_->get(kAbortKey)));
    }
  }
}

void HostGroup::Wait(std::vector<at::Tensor>& tensors) {
  Complete(group_->allreduce(tensors));
}

template <typename T>
std::vector<T> HostGroup::GatherAll(const std::vector<T>& mine,
                                    at::ScalarType type) {
  const auto n = static_cast<int64_t>(mine.size());
  at::Tensor t = at::zeros({int64_t{size()} * n}, type);
  std::copy(mine.begin(), mine.end(), t.data_ptr<T>() + rank() * n);
  std::vector<at::Tensor> v{t};
  Wait(v);
  const T* p = t.data_ptr<T>();
  return std::vector<T>(p, p + t.numel());
}

std::vector<int64_t> HostGroup::Gather(const std::vector<int64_t>& mine,
                                       int fields) {
  ASYNCRL_CHECK_EQ(mine.size(), static_cast<size_t>(fields));
  return GatherAll(mine, at::kLong);
}

void HostGroup::Average(float* data, int64_t n, bool exact) {
  if (n == 0) return;
  at::Tensor copy = at::empty({n}, at::kFloat);
  std::memcpy(copy.data_ptr<float>(), data, n * sizeof(float));
  at::Tensor sum = copy.clone();
  std::vector<at::Tensor> v{sum};
  Wait(v);
  sum.div_(static_cast<float>(size()));
  const float* avg = sum.data_ptr<float>();
  if (exact) {
    std::memcpy(data, avg, n * sizeof(float));
    return;
  }
  const float* before = copy.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) data[i] += avg[i] - before[i];
}

std::vector<double> HostGroup::GatherDoubles(const std::vector<double>& mine) {
  return GatherAll(mine, at::kDouble);
}

void HostGroup::BroadcastRaw(void* data, int64_t n, at::ScalarType type) {
  if (n == 0) return;
  at::Tensor t = at::from_blob(data, {n}, type);
  std::vector<at::Tensor> v{t};
  Complete(group_->broadcast(v));
}

void HostGroup::Broadcast(float* data, int64_t n) {
  BroadcastRaw(data, n, at::kFloat);
}

void HostGroup::Broadcast(double* data, int64_t n) {
  BroadcastRaw(data, n, at::kDouble);
}

std::string HostGroup::Note(const std::string& key) {
  try {
    if (store_->check({key})) return Text(store_->get(key));
  } catch (const std::exception&) {
  }
  return "(its reason is in its own log)";
}

void HostGroup::Finish(double seconds, int expected) {
  try {
    store_->add("asyncrl/finished", 1);
    if (rank() != 0) return;
    const auto deadline = HostClock::now() + Millis(seconds);
    while (store_->add("asyncrl/finished", 0) < expected &&
           HostClock::now() < deadline) {
      usleep(1000);
    }
  } catch (const std::exception&) {
  }
}

std::string HostGroup::Missing(const std::string& what) {
  try {
    if (!store_->check({kAbortKey})) {
      PostNote(*store_, kAbortKey,
               "rank " + std::to_string(rank()) + ": " + what);
    }
    // Hosts waiting for their next round start it now, and learn of the
    // abort in its collective.
    store_->add(kNewsKey, 1);
    store_->add("asyncrl/alive/" + std::to_string(rank()), 1);
    const auto deadline =
        HostClock::now() + Millis(std::min(2.0, options_.timeout));
    std::string out;
    while (true) {
      out.clear();
      for (int r = 0; r < size(); ++r) {
        if (r == rank()) continue;
        if (store_->add("asyncrl/alive/" + std::to_string(r), 0) == 0) {
          out += (out.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      if (out.empty() || HostClock::now() > deadline) return out;
      usleep(5000);
    }
  } catch (const std::exception&) {
    // The store is out of reach: from another host, rank 0 (its host)
    // is missing; from rank 0 itself (its own address gone, as when its
    // link is cut), every other rank is.
    if (rank() != 0) return "0";
    std::string out;
    for (int r = 1; r < size(); ++r) {
      out += (out.empty() ? "" : ", ") + std::to_string(r);
    }
    return out;
  }
}

}  // namespace asyncrl
