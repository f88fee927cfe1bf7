// Several hosts training one model (experiments/hosts/), each host a
// train_a3c process tree of its own on 127.0.0.1 with its own port: the run
// ends at exactly --steps with identical parameters everywhere, rank 0's
// checkpoints load back and resume, options that differ are refused, and a
// host that dies, fails or is stopped stops every host.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "../experiments/test_helpers.h"
#include "asyncrl/experiments/hosts/hosts_options.h"
#include "asyncrl/experiments/hosts/step_leases.h"
#include "asyncrl/experiments/hosts/transport.h"
#include "asyncrl/misc/checkpoint.h"
#include "spawned.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace hosts_test {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::Spawned;
using testing::TempDir;

// A port nobody listens on now (the kernel's choice for port 0).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::vector<std::string> HostArgs(const TempDir& dir, int nnodes, int rank,
                                  int port, const std::string& steps,
                                  std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {
      "--outdir",
      (dir.path() / ("rank" + std::to_string(rank))).string(),
      "--processes",
      "1",
      "--steps",
      steps,
      "--nnodes",
      std::to_string(nnodes),
      "--node-rank",
      std::to_string(rank),
      "--master-addr",
      "127.0.0.1:" + std::to_string(port),
      "--sync-interval",
      "0.05",
      "--dist-timeout",
      "30",
      "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::unique_ptr<Spawned>> StartHosts(
    const TempDir& dir, int nnodes, int port, const std::string& steps,
    const std::vector<std::string>& extra = {}) {
  std::vector<std::unique_ptr<Spawned>> hosts;
  for (int r = 0; r < nnodes; ++r) {
    hosts.push_back(std::make_unique<Spawned>(
        HostArgs(dir, nnodes, r, port, steps, extra), ""));
  }
  return hosts;
}

// "digest XXXXXXXXXXXXXXXX" from a host's last line.
std::string Digest(const Spawned& host) {
  const size_t at = host.output().find(" averages: digest ");
  if (at == std::string::npos) return "";
  return host.output().substr(at + 18, 16);
}

// The directory a failed host reported saving.
std::string SavedDir(const Spawned& host) {
  const std::string& out = host.output();
  const size_t at = out.find("train_a3c: saved ");
  if (at == std::string::npos) return "";
  return out.substr(at + 17, out.find('\n', at) - at - 17);
}

// A host that stopped because of another: it saved <t>_except/ and left no
// process behind.
void ExpectStoppedWithExcept(const Spawned& host) {
  EXPECT_NE(SavedDir(host).find("_except"), std::string::npos) << host.output();
  EXPECT_TRUE(host.GroupGone());
}

// Bounded: a killed parent's workers die by PR_SET_PDEATHSIG, asynchronously.
bool GoneWithin(const Spawned& host, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!host.GroupGone()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::vector<fs::path> Matching(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(e.path());
    }
  }
  return out;
}

class HostsTest : public ::testing::TestWithParam<int> {};

TEST_P(HostsTest, EndAtExactlyStepsWithTheSameParameters) {
  const int nnodes = GetParam();
  TempDir dir("hosts" + std::to_string(nnodes));
  // 30001: no multiple of the 16-row batches, so the last lease is cut.
  auto hosts = StartHosts(dir, nnodes, FreePort(), "30001",
                          {"--eval-interval", "10000", "--eval-n-runs", "2"});
  std::set<std::string> digests;
  for (int r = 0; r < nnodes; ++r) {
    ASSERT_EQ(hosts[r]->Finish(), 0) << hosts[r]->output();
    EXPECT_NE(hosts[r]->output().find("finished at step 30001 after "),
              std::string::npos)
        << hosts[r]->output();
    digests.insert(Digest(*hosts[r]));
  }
  EXPECT_EQ(digests.size(), 1u);
  EXPECT_EQ(digests.begin()->size(), 16u);
  // Rank 0 evaluates and saves the run's checkpoints; the others nothing.
  const fs::path run0 = hosts[0]->RunDir();
  const proto::Checkpoint finish = LoadCheckpointDir(run0 / "30001_finish");
  EXPECT_EQ(finish.global_step(), 30001);
  EXPECT_GT(finish.parameters_size(), 0);
  EXPECT_TRUE(fs::exists(run0 / "scores.txt"));
  for (int r = 1; r < nnodes; ++r) {
    const fs::path run = hosts[r]->RunDir();
    EXPECT_TRUE(Matching(run, "_finish").empty());
    EXPECT_FALSE(fs::exists(run / "scores.txt"));
  }
}

INSTANTIATE_TEST_SUITE_P(Hosts, HostsTest, ::testing::Values(2, 3));

TEST(HostsFailureTest, DifferentOptionsAreRefusedBeforeTraining) {
  TempDir dir("hosts_refused");
  const int port = FreePort();
  Spawned rank0(HostArgs(dir, 2, 0, port, "1000000000", {"--lr", "0.002"}), "");
  Spawned rank1(HostArgs(dir, 2, 1, port, "1000000000", {"--lr", "0.001"}), "");
  EXPECT_EQ(rank1.Finish(), 2) << rank1.output();
  EXPECT_EQ(rank0.Finish(), 2) << rank0.output();
  EXPECT_NE(rank1.output().find(
                "train_a3c: rank 1: --lr is '0.001' here and '0.002' on rank "
                "0; accepted: the same on every host"),
            std::string::npos)
      << rank1.output();
  EXPECT_NE(rank0.output().find("train_a3c: rank 1 was refused: --lr is"),
            std::string::npos)
      << rank0.output();
  EXPECT_TRUE(SavedDir(rank0).empty());
  EXPECT_TRUE(SavedDir(rank1).empty());
  // Refused before any step: neither host leaves a run folder (nor the
  // --outdir it created for it).
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(fs::exists(dir.path() / ("rank" + std::to_string(r))));
  }
  EXPECT_NE(rank1.output().find("; nothing was trained: "), std::string::npos);
}

TEST(HostsFailureTest, ADuplicateRankIsRefusedAndTheRunGoesOn) {
  TempDir dir("hosts_duplicate");
  const int port = FreePort();
  Spawned rank0(HostArgs(dir, 2, 0, port, "20000"), "");
  std::vector<std::string> twin = HostArgs(dir, 2, 1, port, "20000");
  std::vector<std::unique_ptr<Spawned>> ones;
  for (const char* outdir : {"a", "b"}) {
    twin[1] = (dir.path() / outdir).string();
    ones.push_back(std::make_unique<Spawned>(twin, ""));
  }
  EXPECT_EQ(rank0.Finish(), 0) << rank0.output();
  // Whichever rank 1 checked in second is refused; the other trains.
  const int codes[2] = {ones[0]->Finish(), ones[1]->Finish()};
  ASSERT_EQ(std::min(codes[0], codes[1]), 0) << ones[0]->output();
  ASSERT_EQ(std::max(codes[0], codes[1]), 2) << ones[1]->output();
  const int refused = codes[0] == 2 ? 0 : 1;
  EXPECT_NE(ones[refused]->output().find(
                "train_a3c: rank 1: --node-rank=1 is invalid; accepted: a "
                "rank no other host of this run has, in [0, 2) (another host "
                "already joined as rank 1;"),
            std::string::npos)
      << ones[refused]->output();
  EXPECT_FALSE(fs::exists(dir.path() / (refused == 0 ? "a" : "b")));
  EXPECT_EQ(Digest(rank0), Digest(*ones[1 - refused]));
  EXPECT_FALSE(Digest(rank0).empty());
}

TEST(HostsFailureTest, APortInUseOnRankZerosMachineIsRefused) {
  // Something else listens on the port (its own socket, held here).
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  TempDir dir("hosts_port_in_use");
  Spawned rank0(HostArgs(dir, 2, 0, port, "1000"), "");
  EXPECT_EQ(rank0.Finish(), 2) << rank0.output();
  // c10d logs the failed binds through glog: only at --log-level debug.
  EXPECT_EQ(rank0.output().find("[c10d]"), std::string::npos) << rank0.output();
  EXPECT_EQ(rank0.output().find("InitGoogleLogging"), std::string::npos)
      << rank0.output();
  Spawned verbose(HostArgs(dir, 2, 0, port, "1000", {"--log-level", "debug"}),
                  "");
  EXPECT_EQ(verbose.Finish(), 2) << verbose.output();
  EXPECT_NE(
      verbose.output().find("[c10d] The server socket has failed to bind"),
      std::string::npos)
      << verbose.output();
  close(fd);
  EXPECT_NE(
      rank0.output().find(
          "train_a3c: rank 0: --master-addr=127.0.0.1:" + std::to_string(port) +
          " is invalid; accepted: a port free on rank 0's machine"),
      std::string::npos)
      << rank0.output();
  EXPECT_FALSE(fs::exists(dir.path() / "rank0"));
}

TEST(HostsFailureTest, AnUnresolvableMasterIsRefusedBeforeAnythingIsWritten) {
  TempDir dir("hosts_unresolvable");
  std::vector<std::string> args = HostArgs(dir, 2, 1, FreePort(), "1000");
  const auto master = std::find(args.begin(), args.end(), "--master-addr");
  ASSERT_NE(master, args.end());
  // .invalid never resolves (RFC 6761).
  *(master + 1) = "asyncrl-test.invalid:29500";
  Spawned rank1(args, "");
  EXPECT_EQ(rank1.Finish(), 2) << rank1.output();
  EXPECT_NE(rank1.output().find(
                "train_a3c: --master-addr=asyncrl-test.invalid:29500 is "
                "invalid; accepted: HOST:PORT whose host resolves here "
                "(cannot resolve the master address asyncrl-test.invalid"),
            std::string::npos)
      << rank1.output();
  EXPECT_FALSE(fs::exists(dir.path() / "rank1"));
}

TEST(HostsFailureTest, ARankZeroThatNeverStartsIsNamedWithoutLibraryNoise) {
  TempDir dir("hosts_no_rank0");
  const int port = FreePort();
  std::vector<std::string> args = HostArgs(dir, 2, 1, port, "1000");
  const auto timeout = std::find(args.begin(), args.end(), "--dist-timeout");
  ASSERT_NE(timeout, args.end());
  *(timeout + 1) = "1";
  Spawned rank1(args, "");
  EXPECT_EQ(rank1.Finish(), 1) << rank1.output();
  EXPECT_NE(rank1.output().find(
                "(nothing listens at 127.0.0.1:" + std::to_string(port) +
                " after 1 s: rank 0 has not started, or its --master-addr "
                "names another port)"),
            std::string::npos)
      << rank1.output();
  // c10d's own log lines (glog) only at --log-level debug.
  EXPECT_EQ(rank1.output().find("InitGoogleLogging"), std::string::npos)
      << rank1.output();
  EXPECT_EQ(rank1.output().find("[c10d]"), std::string::npos) << rank1.output();
  EXPECT_TRUE(rank1.GroupGone());
}

TEST(HostsFailureTest, AConnectionThatBlocksTheStoreIsNamed) {
  TempDir dir("hosts_stray");
  const int port = FreePort();
  std::vector<std::string> args0 = HostArgs(dir, 2, 0, port, "1000000000");
  const auto timeout = std::find(args0.begin(), args0.end(), "--dist-timeout");
  ASSERT_NE(timeout, args0.end());
  *(timeout + 1) = "2";
  Spawned rank0(args0, "");
  // Once rank 0's store listens: a client that sends the first byte of a
  // request and nothing more, and stays connected.
  const int stray = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  bool connected = false;
  for (int attempt = 0; attempt < 6000 && !connected; ++attempt) {
    connected =
        connect(stray, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (!connected) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ASSERT_TRUE(connected);
  const char zero = 0;
  ASSERT_EQ(send(stray, &zero, 1, 0), 1);
  std::vector<std::string> args1 = args0;
  args1[1] = (dir.path() / "rank1").string();
  const auto rank = std::find(args1.begin(), args1.end(), "--node-rank");
  *(rank + 1) = "1";
  Spawned rank1(args1, "");
  EXPECT_EQ(rank0.Finish(), 1) << rank0.output();
  EXPECT_EQ(rank1.Finish(), 1) << rank1.output();
  close(stray);
  // Rank 0 names its store, not the other host.
  EXPECT_NE(rank0.output().find(
                "this host's store at 127.0.0.1:" + std::to_string(port) +
                " did not answer its own request within 2 s"),
            std::string::npos)
      << rank0.output();
  for (const Spawned* host : {&rank0, &rank1}) {
    EXPECT_TRUE(host->GroupGone());
    EXPECT_EQ(host->output().find("terminate called"), std::string::npos)
        << host->output();
  }
}

TEST(HostsFailureTest, AHostThatNeverComesIsReported) {
  TempDir dir("hosts_alone");
  std::vector<std::string> args = HostArgs(dir, 2, 0, FreePort(), "1000000000");
  const auto timeout = std::find(args.begin(), args.end(), "--dist-timeout");
  ASSERT_NE(timeout, args.end());
  *(timeout + 1) = "1";
  Spawned rank0(args, "");
  EXPECT_EQ(rank0.Finish(), 1) << rank0.output();
  EXPECT_NE(rank0.output().find("train_a3c: rank 0: the 2 hosts did not meet "
                                "at 127.0.0.1:"),
            std::string::npos)
      << rank0.output();
  EXPECT_TRUE(SavedDir(rank0).empty());
  EXPECT_TRUE(rank0.GroupGone());
}

TEST(HostsFailureTest, AKilledHostStopsTheOthersWithExcept) {
  TempDir dir("hosts_killed");
  const int port = FreePort();
  std::vector<std::unique_ptr<Spawned>> hosts;
  for (int r = 0; r < 3; ++r) {
    // Only rank 2 logs every episode (the others' pipes are read at the end).
    hosts.push_back(std::make_unique<Spawned>(
        HostArgs(dir, 3, r, port, "1000000000",
                 r == 2 ? std::vector<std::string>{"--log-level", "debug"}
                        : std::vector<std::string>{}),
        ""));
  }
  // Mid-run: the hosts met and rank 2's worker 0 finished episodes.
  ASSERT_TRUE(hosts[2]->WaitFor("[debug] outdir:")) << hosts[2]->output();
  kill(hosts[2]->pid(), SIGKILL);
  EXPECT_EQ(hosts[2]->Finish(), 128 + SIGKILL);
  EXPECT_TRUE(GoneWithin(*hosts[2], std::chrono::seconds(30)));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(hosts[r]->Finish(), 1) << hosts[r]->output();
    EXPECT_NE(hosts[r]->output().find("rank 2 stopped answering"),
              std::string::npos)
        << hosts[r]->output();
    const std::string saved = SavedDir(*hosts[r]);
    ASSERT_NE(saved.find("_except"), std::string::npos) << hosts[r]->output();
    EXPECT_GT(LoadCheckpointDir(saved).global_step(), 0);
    EXPECT_TRUE(hosts[r]->GroupGone());
  }
}

TEST(HostsFailureTest, AWorkerFailureOnOneHostStopsEveryHost) {
  TempDir dir("hosts_fault");
  const int port = FreePort();
  Spawned rank0(HostArgs(dir, 2, 0, port, "1000000000"), "");
  Spawned rank1(HostArgs(dir, 2, 1, port, "1000000000"),
                "worker=0,step=3000,kind=throw");
  EXPECT_EQ(rank1.Finish(), 1) << rank1.output();
  EXPECT_EQ(rank0.Finish(), 1) << rank0.output();
  const size_t said = rank1.output().find("train_a3c: rank 1: worker 0 (pid ");
  EXPECT_NE(said, std::string::npos) << rank1.output();
  // Said once: the lines after it are the other workers' ends.
  const size_t line = rank1.output().find("worker 0 (pid ", said);
  EXPECT_EQ(rank1.output().find("worker 0 (pid ", line + 1), std::string::npos)
      << rank1.output();
  EXPECT_NE(rank0.output().find("train_a3c: rank 1 stopped: rank 1: worker 0 "
                                "(pid "),
            std::string::npos)
      << rank0.output();
  EXPECT_NE(rank0.output().find("injected failure"), std::string::npos);
  for (const Spawned* host : {&rank0, &rank1}) {
    ExpectStoppedWithExcept(*host);
  }
}

TEST(HostsFailureTest, SigintOnOneHostStopsEveryHost) {
  TempDir dir("hosts_sigint");
  const int port = FreePort();
  Spawned rank0(
      HostArgs(dir, 2, 0, port, "1000000000", {"--log-level", "debug"}), "");
  Spawned rank1(HostArgs(dir, 2, 1, port, "1000000000"), "");
  ASSERT_TRUE(rank0.WaitFor("[debug] outdir:")) << rank0.output();
  kill(rank0.pid(), SIGINT);
  EXPECT_EQ(rank0.Finish(), 128 + SIGINT) << rank0.output();
  EXPECT_EQ(rank1.Finish(), 1) << rank1.output();
  EXPECT_NE(rank1.output().find(
                "train_a3c: rank 0 stopped: rank 0: stopped by SIGINT"),
            std::string::npos)
      << rank1.output();
  for (const Spawned* host : {&rank0, &rank1}) {
    ExpectStoppedWithExcept(*host);
  }
}

TEST(HostsTest, ResumeContinuesFromRankZerosCheckpoint) {
  TempDir dir("hosts_resume");
  auto first = StartHosts(dir, 2, FreePort(), "200000",
                          {"--checkpoint-interval", "80000"});
  for (auto& host : first) ASSERT_EQ(host->Finish(), 0) << host->output();
  // One checkpoint at the first average past 80000 and one past 160000 (at
  // the last average, 200000, if the run ended before another), named by
  // and holding the steps all hosts had taken then.
  std::vector<fs::path> checkpoints =
      Matching(first[0]->RunDir(), "_checkpoint");
  ASSERT_EQ(checkpoints.size(), 2u);
  std::sort(checkpoints.begin(), checkpoints.end(),
            [](const fs::path& a, const fs::path& b) {
              return std::stoll(a.filename().string()) <
                     std::stoll(b.filename().string());
            });
  const fs::path checkpoint = checkpoints[0];
  const proto::Checkpoint saved = LoadCheckpointDir(checkpoint);
  const int64_t named = std::stoll(checkpoint.filename().string());
  EXPECT_GE(named, 80000);
  EXPECT_LT(named, 160000);
  EXPECT_EQ(saved.global_step(), named);
  EXPECT_GE(std::stoll(checkpoints[1].filename().string()), 160000);

  // A resume the other host refuses (its --steps differ) leaves rank 0's
  // run folder as it was: command.txt and args.json not rewritten, no file
  // added.
  const fs::path run0 = first[0]->RunDir();
  // Its files but the lock (which holds the pid of its last trainer).
  const auto files = [&run0] {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::directory_iterator(run0)) {
      if (e.is_regular_file() && e.path().filename() != ".lock") {
        out[e.path().filename()] = ReadFile(e.path());
      }
    }
    return out;
  };
  const std::map<std::string, std::string> files_before = files();
  {
    const int port = FreePort();
    Spawned rank0(
        HostArgs(dir, 2, 0, port, "300000", {"--resume", checkpoint.string()}),
        "");
    Spawned rank1(HostArgs(dir, 2, 1, port, "300001"), "");
    EXPECT_EQ(rank0.Finish(), 2) << rank0.output();
    EXPECT_EQ(rank1.Finish(), 2) << rank1.output();
    EXPECT_NE(rank0.output().find("is as it was"), std::string::npos)
        << rank0.output();
  }
  const std::map<std::string, std::string> files_after = files();
  std::string names_before, names_after;
  for (const auto& [name, content] : files_before) names_before += name + " ";
  for (const auto& [name, content] : files_after) names_after += name + " ";
  EXPECT_EQ(names_after, names_before);
  for (const auto& [name, content] : files_before) {
    const auto now = files_after.find(name);
    EXPECT_TRUE(now != files_after.end() && now->second == content) << name;
  }

  // On to 300000 steps: rank 0 from its checkpoint, rank 1 from scratch (it
  // gets rank 0's state).
  const int port = FreePort();
  Spawned rank0(
      HostArgs(dir, 2, 0, port, "300000", {"--resume", checkpoint.string()}),
      "");
  Spawned rank1(
      HostArgs(dir, 2, 1, port, "300000", {"--checkpoint-interval", "80000"}),
      "");
  ASSERT_EQ(rank0.Finish(), 0) << rank0.output();
  ASSERT_EQ(rank1.Finish(), 0) << rank1.output();
  EXPECT_EQ(Digest(rank0), Digest(rank1));
  const proto::Checkpoint finish =
      LoadCheckpointDir(first[0]->RunDir() / "300000_finish");
  EXPECT_EQ(finish.global_step(), 300000);
  // Both hosts count on from the checkpoint's episodes.
  for (const Spawned* host : {&rank0, &rank1}) {
    const std::string& out = host->output();
    const size_t at = out.find("finished at step 300000 after ");
    ASSERT_NE(at, std::string::npos) << out;
    EXPECT_GT(std::stoll(out.substr(at + 29)), saved.episodes());
  }
}

// --normalize-observations and --normalize-rewards on two hosts: every
// host's rows are combined at each round, so rank 0's checkpoint counts
// all hosts' training steps and both hosts end with the same statistics
// (in the digest); a resumed rank 0's statistics start the other host's.
TEST(HostsTest, RunningStatisticsAreCombinedAcrossHosts) {
  TempDir dir("hosts_statistics");
  const std::vector<std::string> flags = {"--normalize-observations",
                                          "--normalize-rewards",
                                          "--eval-interval", "0"};
  const auto expect_counts = [](const fs::path& checkpoint, int64_t steps) {
    const proto::Checkpoint saved = LoadCheckpointDir(checkpoint);
    // Every training row of both hosts merged once: the leases hand out
    // exactly --steps step numbers, one row each (plus the prior's 1e-4).
    for (const proto::RunningStatistics* s :
         {&saved.observation_statistics(), &saved.reward_statistics()}) {
      EXPECT_NEAR(s->count(), static_cast<double>(steps), 1e-3) << checkpoint;
      // Moments of CartPole's rows, not the prior's (mean 0, variance 1)
      // nor values unpacked from the wrong place.
      for (int j = 0; j < s->mean_size(); ++j) {
        EXPECT_TRUE(std::isfinite(s->mean(j)) && std::abs(s->mean(j)) < 100)
            << checkpoint << " mean " << j << " " << s->mean(j);
        EXPECT_TRUE(s->var(j) > 0 && s->var(j) < 1000 && s->var(j) != 1.0)
            << checkpoint << " variance " << j << " " << s->var(j);
      }
    }
  };
  auto first = StartHosts(dir, 2, FreePort(), "20001", flags);
  for (auto& host : first) ASSERT_EQ(host->Finish(), 0) << host->output();
  EXPECT_EQ(Digest(*first[0]), Digest(*first[1]));
  EXPECT_NE(first[0]->output().find("parameters and running statistics"),
            std::string::npos)
      << first[0]->output();
  const fs::path finish = first[0]->RunDir() / "20001_finish";
  expect_counts(finish, 20001);

  const int port = FreePort();
  Spawned rank0(
      HostArgs(dir, 2, 0, port, "30000", {"--resume", finish.string()}), "");
  Spawned rank1(HostArgs(dir, 2, 1, port, "30000", flags), "");
  ASSERT_EQ(rank0.Finish(), 0) << rank0.output();
  ASSERT_EQ(rank1.Finish(), 0) << rank1.output();
  EXPECT_EQ(Digest(rank0), Digest(rank1));
  expect_counts(first[0]->RunDir() / "30000_finish", 30000);
}

// Two hosts in two network namespaces this test makes, joined by a veth
// pair (10.231.0.1 and .2, reachable only from inside them): root only.
class NamespaceHostsTest : public ::testing::Test {
 protected:
  static bool Ip(const std::string& args) {
    return std::system(("ip " + args + " >/dev/null 2>&1").c_str()) == 0;
  }

  void SetUp() override {
    const std::string id = std::to_string(getpid());
    ns_[0] = "asyncrl_a" + id;
    ns_[1] = "asyncrl_b" + id;
    link_[0] = "va" + id;
    link_[1] = "vb" + id;
    if (geteuid() != 0 || !Ip("netns add " + ns_[0])) {
      GTEST_SKIP() << "network namespaces are not allowed here (needs root "
                      "and `ip netns`): the namespace tests did not run";
    }
    made_ = true;
    ASSERT_TRUE(Ip("netns add " + ns_[1]));
    ASSERT_TRUE(Ip("link add " + link_[0] + " netns " + ns_[0] +
                   " type veth peer name " + link_[1] + " netns " + ns_[1]));
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(Ip("-n " + ns_[i] + " addr add 10.231.0." +
                     std::to_string(i + 1) + "/24 dev " + link_[i]));
      ASSERT_TRUE(Ip("-n " + ns_[i] + " link set " + link_[i] + " up"));
      ASSERT_TRUE(Ip("-n " + ns_[i] + " link set lo up"));
    }
  }

  void TearDown() override {
    if (!made_) return;
    Ip("netns del " + ns_[0]);
    Ip("netns del " + ns_[1]);
  }

  std::unique_ptr<Spawned> Host(const TempDir& dir, int rank,
                                const std::string& steps,
                                std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "--outdir",
        (dir.path() / ("rank" + std::to_string(rank))).string(),
        "--processes",
        "1",
        "--steps",
        steps,
        "--nnodes",
        "2",
        "--node-rank",
        std::to_string(rank),
        "--master-addr",
        master_,
        "--sync-interval",
        "0.05",
        "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<Spawned>(
        args, "", RLIM_INFINITY,
        std::vector<std::string>{"ip", "netns", "exec", ns_[rank]});
  }

  // Two hosts train 30001 steps: both end well with the same parameters and
  // rank 0 saves 30001_finish/. Returns rank 0's output.
  std::string TrainToTheEnd(const std::string& name) {
    TempDir dir(name);
    auto rank0 = Host(dir, 0, "30001", {"--dist-timeout", "30"});
    auto rank1 = Host(dir, 1, "30001", {"--dist-timeout", "30"});
    EXPECT_EQ(rank0->Finish(), 0) << rank0->output();
    EXPECT_EQ(rank1->Finish(), 0) << rank1->output();
    EXPECT_EQ(Digest(*rank0), Digest(*rank1));
    EXPECT_TRUE(fs::exists(rank0->RunDir() / "30001_finish"));
    return rank0->output();
  }

  // Two hosts train until `breaking` breaks their link mid-run: both stop
  // with _except/, exit 1 and name the other (rank 0 may name its own
  // store instead, which a request rank 1 was cut off in the middle of can
  // block).
  void BreakTheLinkMidRun(const std::string& name,
                          const std::function<void()>& breaking) {
    TempDir dir(name);
    auto rank0 = Host(dir, 0, "1000000000", {"--dist-timeout", "3"});
    auto rank1 = Host(dir, 1, "1000000000",
                      {"--dist-timeout", "3", "--log-level", "debug"});
    ASSERT_TRUE(rank1->WaitFor("[debug] outdir:")) << rank1->output();
    ASSERT_NO_FATAL_FAILURE(breaking());
    EXPECT_EQ(rank0->Finish(), 1) << rank0->output();
    EXPECT_EQ(rank1->Finish(), 1) << rank1->output();
    EXPECT_TRUE(
        rank0->output().find("train_a3c: rank 0: rank 1 stopped answering") !=
            std::string::npos ||
        rank0->output().find("train_a3c: rank 0: this host's store at " +
                             master_ + " did not answer its own request") !=
            std::string::npos)
        << rank0->output();
    EXPECT_NE(
        rank1->output().find("train_a3c: rank 1: rank 0 stopped answering"),
        std::string::npos)
        << rank1->output();
    for (const Spawned* host : {rank0.get(), rank1.get()}) {
      ExpectStoppedWithExcept(*host);
    }
  }

  std::string ns_[2];  // The hosts' namespaces, rank 0's first.
  std::string link_[2];
  std::string master_ = "10.231.0.1:29500";
  bool made_ = false;
};

TEST_F(NamespaceHostsTest, TrainBetweenTwoNamespaces) {
  const std::string output = TrainToTheEnd("hosts_netns");
  // Not loopback: the warning, once.
  const std::string warning = "is not a loopback address";
  const size_t at = output.find(warning);
  EXPECT_NE(at, std::string::npos) << output;
  EXPECT_EQ(output.find(warning, at + 1), std::string::npos);
}

TEST_F(NamespaceHostsTest, ACutLinkStopsBothHosts) {
  BreakTheLinkMidRun("hosts_netns_cut", [this] {
    ASSERT_TRUE(Ip("-n " + ns_[0] + " link set " + link_[0] + " down"));
  });
}

// Two hosts whose one link is imperfect: namespaces A (10.232.0.1) and B
// (.2) each hold one end of a veth pair whose other ends are in a third
// namespace, where asyncrl_link_relay carries every frame between them
// after a chosen delay, or drops them all while the test has it stalled;
// tc's token bucket (tbf) limits each host's sending rate. Root only.
class RelayedHostsTest : public NamespaceHostsTest {
 protected:
  void SetUp() override {}  // Each test calls Make with its link.

  // Builds the namespaces and starts the relay: `delay_ms` one way, each
  // host sending at most `rate` (tc's units, e.g. "100mbit"; "" for no
  // limit).
  void Make(int delay_ms, const std::string& rate) {
    const std::string id = std::to_string(getpid());
    ns_[0] = "asyncrl_ra" + id;
    ns_[1] = "asyncrl_rb" + id;
    relay_ns_ = "asyncrl_rr" + id;
    if (geteuid() != 0 || !Ip("netns add " + ns_[0])) {
      GTEST_SKIP() << "network namespaces are not allowed here (needs root "
                      "and `ip netns`): the namespace tests did not run";
    }
    made_ = true;
    ASSERT_TRUE(Ip("netns add " + ns_[1]));
    ASSERT_TRUE(Ip("netns add " + relay_ns_));
    ASSERT_TRUE(Ip("-n " + relay_ns_ + " link set lo up"));
    for (int i = 0; i < 2; ++i) {
      const std::string side = i == 0 ? "a" : "b";
      link_[i] = "h" + side + id;
      const std::string far = "r" + side + id;
      ASSERT_TRUE(Ip("link add " + link_[i] + " netns " + ns_[i] +
                     " type veth peer name " + far + " netns " + relay_ns_));
      ASSERT_TRUE(Ip("-n " + ns_[i] + " addr add 10.232.0." +
                     std::to_string(i + 1) + "/24 dev " + link_[i]));
      ASSERT_TRUE(Ip("-n " + ns_[i] + " link set " + link_[i] + " up"));
      ASSERT_TRUE(Ip("-n " + ns_[i] + " link set lo up"));
      ASSERT_TRUE(Ip("-n " + relay_ns_ + " link set " + far + " up"));
      if (!rate.empty() &&
          std::system(("ip netns exec " + ns_[i] + " tc qdisc add dev " +
                       link_[i] + " root tbf rate " + rate +
                       " burst 64kb latency 400ms >/dev/null 2>&1")
                          .c_str()) != 0) {
        GTEST_SKIP() << "tc's token bucket (tbf) is not available here "
                        "(iproute2's tc, the kernel's sch_tbf): the rate-"
                        "limited namespace test did not run";
      }
    }
    master_ = "10.232.0.1:29500";
    relay_ = std::make_unique<Spawned>(
        std::vector<std::string>{"ra" + id, "rb" + id, std::to_string(delay_ms),
                                 "600"},
        "", RLIM_INFINITY,
        std::vector<std::string>{"ip", "netns", "exec", relay_ns_},
        LINK_RELAY_BIN);
    ASSERT_TRUE(relay_->WaitFor("relay: ready")) << relay_->output();
  }

  void TearDown() override {
    if (relay_ != nullptr) {
      kill(relay_->pid(), SIGKILL);
      relay_->Finish();
    }
    if (!made_) return;
    Ip("netns del " + relay_ns_);
    NamespaceHostsTest::TearDown();
  }

  std::string relay_ns_;
  std::unique_ptr<Spawned> relay_;
};

// 2 hosts at 100 Mbit/s with 20 ms each way (40 ms round trips, against
// ~0.05 ms on loopback) train to the end and agree.
TEST_F(RelayedHostsTest, TrainOverASlowFarLink) {
  ASSERT_NO_FATAL_FAILURE(Make(20, "100mbit"));
  if (IsSkipped()) return;
  TrainToTheEnd("hosts_relay");
}

// A link that stops carrying anything, without a reset or a closed
// connection (a dead router, a pulled cable far away), for longer than
// --dist-timeout: both hosts stop with _except and name the rank that
// stopped answering.
TEST_F(RelayedHostsTest, AStalledLinkStopsBothHosts) {
  ASSERT_NO_FATAL_FAILURE(Make(1, ""));
  if (IsSkipped()) return;
  BreakTheLinkMidRun("hosts_relay_stall", [this] {
    ASSERT_EQ(kill(relay_->pid(), SIGUSR1), 0);
    ASSERT_TRUE(relay_->WaitFor("relay: stalled")) << relay_->output();
  });
}

// Options for a store of `nnodes` ranks on a free loopback port, each
// request answered within `timeout` seconds.
DistOptions LoopbackStore(int nnodes, double timeout) {
  DistOptions options;
  options.nnodes = nnodes;
  options.master_addr = "127.0.0.1:" + std::to_string(FreePort());
  options.timeout = timeout;
  return options;
}

// Leases from one counter: every number 1..steps exactly once, whatever
// the interleaving of the workers claiming them.
TEST(StepLeasesTest, EveryStepNumberIsTakenExactlyOnce) {
  const DistOptions options = LoopbackStore(2, 30);
  c10d::TCPStoreOptions server;
  server.port = static_cast<uint16_t>(options.Port());
  server.isServer = true;
  server.waitWorkers = false;
  c10d::TCPStore store("127.0.0.1", server);
  constexpr int64_t kSteps = 1001;
  StepLeases a(options, kSteps), b(options, kSteps);
  std::vector<int> taken(kSteps + 1, 0);
  bool a_done = false, b_done = false;
  int64_t partial = 0;
  for (int i = 0; !(a_done && b_done); ++i) {
    StepLeases& who = (i % 3 == 0) ? b : a;  // Uneven: a claims twice as often.
    bool& done = (i % 3 == 0) ? b_done : a_done;
    if (done) continue;
    int64_t granted = 0;
    const int64_t first = who.Claim(16, &granted);
    if (granted == 0) {
      done = true;
      continue;
    }
    if (granted < 16) ++partial;
    for (int64_t t = first; t < first + granted; ++t) {
      ASSERT_GE(t, 1);
      ASSERT_LE(t, kSteps);
      ++taken[t];
    }
  }
  for (int64_t t = 1; t <= kSteps; ++t) EXPECT_EQ(taken[t], 1) << t;
  EXPECT_EQ(partial, 1);  // Only the very last claim is short.
}

// A connection that sent one byte of a request and nothing more blocks
// LibTorch 1.13's store for everybody. A client connected after it (the
// store serves it only after the blocking one) gets an error within the
// timeout, however soon it asks: a host's coordinator and a worker's
// leases alike; before ConnectStore armed the receive timeout, their first
// request (an add) waited forever.
TEST(StoreClientTest, AStoreBlockedBeforeTheFirstRequestTimesOut) {
  const DistOptions options = LoopbackStore(2, 1);
  c10::intrusive_ptr<c10d::TCPStore> server = ConnectStore(options, true);
  const int stray = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(options.Port()));
  ASSERT_EQ(connect(stray, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
            0);
  const char zero = 0;
  ASSERT_EQ(send(stray, &zero, 1, 0), 1);
  try {
    ConnectStore(options, false);
    ADD_FAILURE() << "a client of a blocked store connected";
  } catch (const std::exception& e) {
    EXPECT_TRUE(StoreWentSilent(FirstLine(e.what()))) << e.what();
  }
  try {
    StepLeases leases(options, 100);
    ADD_FAILURE() << "a worker's leases connected to a blocked store";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "a request for steps failed: rank 0's store at " +
                  options.master_addr +
                  " accepts connections but did not answer within 1 s"),
              std::string::npos)
        << e.what();
  }
  // The stray gone, the store serves again (and stops when destroyed).
  close(stray);
  EXPECT_EQ(ConnectStore(options, false)->add("asyncrl/test", 1), 1);
}

// A host that stops leaves its reason in the store, then tells the others
// through a collective; they ask for the reason at once, each on its own
// connection. The store's server serves ready clients in connection order,
// and a plain set gets no answer: a reader connected earlier could be
// served first and find nothing (seen under the sanitizers: "rank 1
// stopped: (its reason is in its own log)"). A posted note is there for
// every client as soon as PostNote returns.
TEST(StoreClientTest, ANotePostedIsThereForEveryClient) {
  const DistOptions options = LoopbackStore(3, 10);
  c10::intrusive_ptr<c10d::TCPStore> server = ConnectStore(options, true);
  c10::intrusive_ptr<c10d::TCPStore> reader = ConnectStore(options, false);
  c10::intrusive_ptr<c10d::TCPStore> writer = ConnectStore(options, false);
  for (int i = 0; i < 200; ++i) {
    const std::string key = "asyncrl/why/" + std::to_string(i);
    const std::string why = "worker 0 stopped, try " + std::to_string(i);
    PostNote(*writer, key, why);
    ASSERT_TRUE(reader->check({key})) << "try " << i;
    EXPECT_EQ(Text(reader->get(key)), why);
  }
}

TEST(DistOptionsTest, AddressesAndHostLocalOptions) {
  DistOptions o;
  o.master_addr = "10.0.0.7:1234";
  EXPECT_EQ(o.Host(), "10.0.0.7");
  EXPECT_EQ(o.Port(), 1234);
  EXPECT_FALSE(o.Loopback());
  o.master_addr = "[::1]:29500";
  EXPECT_EQ(o.Host(), "::1");
  EXPECT_TRUE(o.Loopback());
  o.master_addr = "127.0.0.9:1";
  EXPECT_TRUE(o.Loopback());
  EXPECT_TRUE(IsHostLocalOption("processes"));
  EXPECT_TRUE(IsHostLocalOption("node-rank"));
  EXPECT_FALSE(IsHostLocalOption("lr"));
  EXPECT_FALSE(IsHostLocalOption("nnodes"));
}

// Hosts compare fingerprints: a differing flag is named before the sizes
// it changes; the running statistics' sizes are compared only where there
// are some (a run without them still meets a host of an earlier version).
TEST(DistOptionsTest, FingerprintsNameTheFlagBeforeTheSizes) {
  const std::map<std::string, std::string> plain = {
      {"env", "CartPole-v1"}, {"normalize-observations", "false"}};
  std::map<std::string, std::string> normalized = plain;
  normalized["normalize-observations"] = "true";
  const std::string without = Fingerprint(plain, 100, 100);
  EXPECT_EQ(without.find("(running statistics)"), std::string::npos);
  const std::string with = Fingerprint(normalized, 100, 100, {4, 1});
  const std::string why = Difference(with, without);
  EXPECT_EQ(why.rfind("--normalize-observations is 'true' here and 'false' "
                      "on rank 0; accepted: the same on every host",
                      0),
            0u)
      << why;
  EXPECT_EQ(Difference(with, with), "");
  const std::string sizes =
      Difference(Fingerprint(normalized, 100, 100, {4}), with);
  EXPECT_EQ(sizes.rfind("(running statistics) is '4' here and '4,1'", 0), 0u)
      << sizes;
}

}  // namespace
}  // namespace hosts_test
}  // namespace asyncrl
