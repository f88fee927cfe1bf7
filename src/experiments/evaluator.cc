#include "asyncrl/experiments/evaluator.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/interprocess/sync/scoped_lock.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/experiments/snapshot.h"
#include "asyncrl/misc/logging.h"
#include "asyncrl/misc/platform/process_group.h"
#include "asyncrl/misc/timers.h"

namespace asyncrl {
namespace {

// Appends `line` whole or not at all: written on an O_APPEND descriptor
// (callers hold the run's lock, so no other row is appended meanwhile);
// after a short or failed write the file is truncated back to its length
// before, and the error is the system's own (ENOSPC, EFBIG, ...).
void AppendLine(const std::string& path, const std::string& line) {
  const int fd =
      open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error("cannot open " + path + ": " +
                             std::strerror(errno));
  }
  const off_t before = lseek(fd, 0, SEEK_END);
  size_t done = 0;
  int err = 0;
  while (done < line.size()) {
    const ssize_t n = write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (err != 0 && before >= 0 && ftruncate(fd, before) != 0) {
    err = errno;  // The half row stays: say why it could not go.
  }
  close(fd);
  if (err != 0) {
    throw std::runtime_error("writing " + path +
                             " failed: " + std::strerror(err));
  }
}

// Removes an incomplete last row (a run killed mid-write before rows were
// written whole), so that the next row starts on a line of its own.
void RepairLastLine(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  if (text.empty() || text.back() == '\n') return;
  const size_t keep =
      text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  std::error_code ec;
  std::filesystem::resize_file(path, keep, ec);
  if (ec) {
    throw std::runtime_error("cannot remove the incomplete last row of " +
                             path + ": " + ec.message());
  }
  Log(LogLevel::kWarning, path + ": removed an incomplete last row (" +
                              std::to_string(text.size() - keep) +
                              " bytes) that an earlier run left");
}

}  // namespace

std::string FormatCell(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

EvalStats Summarize(const std::vector<double>& scores) {
  if (scores.empty()) throw std::invalid_argument("Summarize: no scores");
  EvalStats s;
  s.episodes = static_cast<int64_t>(scores.size());
  std::vector<double> sorted = scores;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  s.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  s.min = sorted.front();
  s.max = sorted.back();
  if (n >= 2) {
    double ss = 0;
    for (double x : sorted) ss += (x - s.mean) * (x - s.mean);
    s.stdev = std::sqrt(ss / (n - 1));
  }
  return s;
}

std::vector<double> RunEvaluation(Agent& agent, Env& env, int64_t n_steps,
                                  int64_t n_episodes, int64_t max_episode_len,
                                  const std::atomic<int32_t>* stop) {
  auto stopped = [stop] {
    return stop != nullptr && stop->load(std::memory_order_relaxed) != 0;
  };
  if ((n_steps > 0) == (n_episodes > 0)) {
    throw std::invalid_argument(
        "RunEvaluation: n_steps=" + std::to_string(n_steps) + ", n_episodes=" +
        std::to_string(n_episodes) + "; accepted: exactly one of them > 0");
  }
  std::vector<double> returns;
  int64_t total_steps = 0;
  while (true) {
    FloatView obs = env.Reset();
    double episode_return = 0;
    int64_t len = 0;
    bool finished = false;
    while (true) {
      if (stopped()) {
        agent.StopEpisode();
        return returns;
      }
      StepResult r = env.Step(agent.Act(obs));
      ReportWorkerProgress();
      episode_return += r.reward;
      ++len;
      ++total_steps;
      obs = r.observation;
      if (r.Done() || (max_episode_len > 0 && len >= max_episode_len)) {
        finished = true;
        break;
      }
      if (n_steps > 0 && total_steps >= n_steps) break;
    }
    agent.StopEpisode();
    // In step mode an unfinished last episode counts only if it is the only
    // one.
    if (finished || returns.empty()) returns.push_back(episode_return);
    if (n_episodes > 0 && static_cast<int64_t>(returns.size()) >= n_episodes) {
      break;
    }
    if (n_steps > 0 && total_steps >= n_steps) break;
  }
  return returns;
}

std::string ScoresHeader(const std::vector<std::string>& statistic_names) {
  std::string header =
      "steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin";
  for (const auto& name : statistic_names) header += "\t" + name;
  return header + "\n";
}

AsyncEvaluator::AsyncEvaluator(const TrainOptions& options,
                               ControlBlock& control, MetricsChannel* metrics,
                               const Extensions& extensions)
    : options_(options),
      control_(control),
      metrics_(metrics),
      extensions_(extensions) {}

void AsyncEvaluator::CheckHeader(
    const std::string& outdir,
    const std::vector<std::string>& statistic_names) {
  const std::string path = ScoresPath(outdir);
  std::ifstream in(path, std::ios::binary);
  std::string line;
  // No file, or a header cut before its end (rewritten by WriteHeader).
  if (!in || !std::getline(in, line) || in.eof()) return;
  const std::string header = ScoresHeader(statistic_names);
  if (line + "\n" == header) return;
  auto split = [](const std::string& text) {
    std::vector<std::string> cells;
    std::stringstream ss(text);
    for (std::string cell; std::getline(ss, cell, '\t');) {
      cells.push_back(cell);
    }
    return cells;
  };
  const std::vector<std::string> had = split(line);
  const std::vector<std::string> would =
      split(header.substr(0, header.size() - 1));
  auto missing = [](const std::vector<std::string>& from,
                    const std::vector<std::string>& in_this) {
    std::string names;
    for (const auto& c : from) {
      if (std::find(in_this.begin(), in_this.end(), c) == in_this.end()) {
        names += (names.empty() ? "" : ",") + c;
      }
    }
    return names.empty() ? std::string("none") : names;
  };
  throw std::invalid_argument(
      path + " has " + std::to_string(had.size()) +
      " columns and this run would append rows of " +
      std::to_string(would.size()) + " (added: " + missing(would, had) +
      "; removed: " + missing(had, would) +
      (missing(would, had) == "none" && missing(had, would) == "none"
           ? "; reordered"
           : "") +
      "); accepted: a resume whose options make the same columns (the same "
      "evaluation opponents, curriculum lessons and agent statistics), or "
      "its checkpoint loaded into a new run");
}

void AsyncEvaluator::WriteHeader(
    const std::string& outdir,
    const std::vector<std::string>& statistic_names) {
  CheckHeader(outdir, statistic_names);
  const std::string path = ScoresPath(outdir);
  if (std::filesystem::exists(path)) {
    RepairLastLine(path);
    // Even the header may have been cut (or never written whole).
    if (std::filesystem::file_size(path) > 0) return;
  }
  AppendLine(path, ScoresHeader(statistic_names));
}

std::optional<EvalStats> AsyncEvaluator::MaybeEvaluate(int64_t t, Agent& agent,
                                                       Env& env) {
  if (options_.eval_interval <= 0) return std::nullopt;
  int64_t prev = control_.prev_eval_t.load();
  while (true) {
    // t - prev, not prev + interval: near INT64_MAX the sum overflows and
    // every step was due (both are >= 0, so the difference cannot).
    if (t - prev < options_.eval_interval) return std::nullopt;
    if (control_.prev_eval_t.compare_exchange_weak(
            prev, prev + options_.eval_interval)) {
      break;
    }
  }
  ScopedTimer timer("evaluation");
  // Each extension's cells, in the order of the extensions: what it
  // records of the moment the evaluation begins, then of the evaluation.
  std::vector<std::vector<std::string>> cells(extensions_.size());
  for (size_t i = 0; i < extensions_.size(); ++i) {
    extensions_[i]->EvaluationBegins(t, &cells[i]);
  }
  std::optional<std::vector<double>> returns;
  for (size_t i = 0; i < extensions_.size() && !returns; ++i) {
    returns = extensions_[i]->Evaluate(t, agent, env, metrics_, &cells[i]);
  }
  if (!returns) {
    returns = RunEvaluation(agent, env, options_.eval_n_steps,
                            options_.eval_n_episodes, options_.max_episode_len,
                            &control_.stop);
  }
  // Stopped mid-evaluation (ours or an extension's): no row from a partial
  // evaluation (the worker sees the stop flag next and ends).
  if (control_.stop.load(std::memory_order_relaxed) != 0) return std::nullopt;
  const EvalStats stats = Summarize(*returns);
  std::vector<std::string> row_cells;
  for (auto& c : cells) row_cells.insert(row_cells.end(), c.begin(), c.end());
  Record(t, stats, agent, row_cells);
  if (metrics_ != nullptr) {
    metrics_->Send("eval/mean", t, stats.mean);
    metrics_->Send("eval/median", t, stats.median);
    metrics_->Send("eval/stdev", t, stats.stdev);
    metrics_->Send("eval/max", t, stats.max);
    metrics_->Send("eval/min", t, stats.min);
  }
  return stats;
}

void AsyncEvaluator::Record(int64_t t, const EvalStats& stats,
                            const Agent& agent,
                            const std::vector<std::string>& cells) {
  const double elapsed = control_.ElapsedSeconds();
  boost::interprocess::scoped_lock<boost::interprocess::interprocess_mutex>
      lock(control_.mutex);
  std::string row = std::to_string(t) + "\t" +
                    std::to_string(control_.episodes.load()) + "\t" +
                    FormatCell(elapsed) + "\t" + FormatCell(stats.mean) + "\t" +
                    FormatCell(stats.median) + "\t" + FormatCell(stats.stdev) +
                    "\t" + FormatCell(stats.max) + "\t" + FormatCell(stats.min);
  for (const auto& s : agent.Statistics()) row += "\t" + FormatCell(s.value);
  for (const std::string& cell : cells) row += "\t" + cell;
  AppendLine(ScoresPath(options_.outdir), row + "\n");
  control_.last_score.store(stats.mean);
  control_.has_last_score.store(1);
  if (control_.has_best_score.load() == 0 ||
      stats.mean > control_.best_score.load()) {
    if (control_.has_best_score.load() != 0) {
      Log(LogLevel::kInfo, "The best score is updated " +
                               FormatCell(control_.best_score.load()) + " -> " +
                               FormatCell(stats.mean));
    }
    control_.best_score.store(stats.mean);
    control_.has_best_score.store(1);
    if (options_.save_best_so_far_agent) {
      // The parameters evaluated: the shared ones moved on meanwhile.
      SaveSnapshot(agent, control_, options_, extensions_,
                   BestDir(options_.outdir), -1, /*acting=*/true);
    }
  }
  if (options_.successful_score && stats.mean >= *options_.successful_score) {
    int32_t expected = 0;
    if (control_.training_done.compare_exchange_strong(expected, 1)) {
      SaveSnapshot(agent, control_, options_, extensions_,
                   SuccessfulDir(options_.outdir), -1, /*acting=*/true);
    }
  }
}

}  // namespace asyncrl
