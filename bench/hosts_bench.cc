// What one parameter average between two hosts costs (issue 15): a Gloo
// all-reduce (c10d ProcessGroupGloo, TCP on 127.0.0.1) of N floats between
// this process (rank 0) and a forked peer (rank 1), plus the host's own
// passes over its parameters (copy out, divide, write back
// average - copy), as HostCoordinator does every --sync-interval.
// Counters: floats per second. The peer runs exactly the iterations asked
// (fixed below), so both sides agree on how many all-reduces there are.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "asyncrl/agents/torch_setup.h"
#include "bench_main.h"

namespace {

c10::intrusive_ptr<c10d::ProcessGroupGloo> Join(int rank, int port,
                                                const std::string& prefix) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.isServer = rank == 0;
  o.waitWorkers = false;
  o.timeout = std::chrono::seconds(60);
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", o);
  auto options =
      c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(60));
  options->devices.push_back(
      c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  options->threads = 1;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(
      c10::make_intrusive<c10d::PrefixStore>(prefix, store), rank, 2, options);
}

// One average of `params` (the host's shared parameters) over 2 hosts.
void Average(c10d::ProcessGroupGloo& group, std::vector<float>& params) {
  const int64_t n = static_cast<int64_t>(params.size());
  at::Tensor copy = at::empty({n}, at::kFloat);
  std::memcpy(copy.data_ptr<float>(), params.data(), n * sizeof(float));
  at::Tensor sum = copy.clone();
  std::vector<at::Tensor> v{sum};
  group.allreduce(v)->wait();
  sum.div_(2.0f);
  const float* avg = sum.data_ptr<float>();
  const float* before = copy.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) params[i] += avg[i] - before[i];
}

int Iterations(int64_t floats) {
  return floats <= 100000 ? 200 : floats <= 1000000 ? 50 : 10;
}

void BM_HostAverage(benchmark::State& state) {
  const int64_t floats = state.range(0);
  asyncrl::ConfigureTorchForFork();  // No thread pool at fork time.
  static int port = 29900 + static_cast<int>(getpid() % 50) * 20;
  ++port;
  const std::string prefix = "bench" + std::to_string(floats);
  const pid_t peer = fork();
  if (peer == 0) {
    auto group = Join(1, port, prefix);
    std::vector<float> params(floats, 1.0f);
    for (int i = 0; i < Iterations(floats); ++i) Average(*group, params);
    _exit(0);
  }
  auto group = Join(0, port, prefix);
  std::vector<float> params(floats, 3.0f);
  for (auto _ : state) Average(*group, params);
  int status = 0;
  waitpid(peer, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    state.SkipWithError("the peer failed");
  }
  state.counters["floats_per_s"] =
      benchmark::Counter(static_cast<double>(floats) * state.iterations(),
                         benchmark::Counter::kIsRate);
}

// 83,003 floats: the default CartPole network (fc-softmax 256x2). Each
// size runs exactly Iterations(size) times, the count the peer expects.
const bool kRegistered = [] {
  for (int64_t floats :
       {int64_t{10000}, int64_t{83003}, int64_t{1000000}, int64_t{10000000}}) {
    benchmark::RegisterBenchmark("BM_HostAverage", BM_HostAverage)
        ->Arg(floats)
        ->Iterations(Iterations(floats))
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace

ASYNCRL_BENCHMARK_MAIN();
