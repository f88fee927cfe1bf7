#include "asyncrl/experiments/run_summary.h"

#include <gperftools/profiler.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "asyncrl/experiments/run_dir.h"
#include "asyncrl/misc/json.h"
#include "asyncrl/misc/timers.h"

namespace asyncrl {

namespace fs = std::filesystem;

ProfileScope::ProfileScope(bool enabled, const fs::path& dir,
                           const std::string& who) {
  if (!enabled) return;
  const std::string path = ProfilePath(dir.string(), who, getpid());
  active_ = ProfilerStart(path.c_str()) != 0;
  if (!active_) {
    throw std::runtime_error("--profile: cannot start a profile at " + path);
  }
}

ProfileScope::~ProfileScope() {
  if (active_) ProfilerStop();
}

TimerFileScope::TimerFileScope(const fs::path& dir, int idx)
    : path_(TimersPath(dir.string(), idx)) {
  TimerTree::Process().Clear();
}

TimerFileScope::~TimerFileScope() {
  // Best effort: the summary does without a file that cannot be written.
  TryWriteFileAtomically(path_, TimerTree::Process().ToJson().Dump(2) + "\n");
}

// The summary of every worker's timers-<i>.json, or "" if none is readable.
std::string TimerSummary(const fs::path& dir, int processes) {
  std::vector<Json> trees;
  for (int i = 0; i < processes; ++i) {
    std::ifstream in(TimersPath(dir.string(), i));
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    try {
      trees.push_back(Json::Parse(text.str()));
    } catch (const std::runtime_error&) {
      // A worker killed while writing leaves no (or a partial) file.
    }
  }
  if (trees.empty()) return "";
  return "time per timer, summed over " + std::to_string(trees.size()) +
         " workers:\n" + FormatTimerSummary(MergeTimerTrees(trees));
}

// Writes a worker's agent statistics (Agent::Statistics) at the end of its
// loop to <dir>/statistics-<idx>.tsv, "name<TAB>value" lines in the agent's
// order, for the summary below.
void WriteStatistics(const fs::path& dir, int idx, const Agent& agent) {
  std::ostringstream out;
  out.precision(17);
  for (const auto& s : agent.Statistics()) {
    out << s.name << "\t" << s.value << "\n";
  }
  // Best effort: the summary does without a file that cannot be written.
  TryWriteFileAtomically(StatisticsPath(dir.string(), idx), out.str());
}

// Each statistic over the workers' statistics-<i>.tsv: the mean, and the
// maximum for names ending in "_max"; "" if none is readable.
std::string StatisticsSummary(const fs::path& dir, int processes) {
  std::vector<std::string> names;
  std::map<std::string, std::vector<double>> values;
  int files = 0;
  for (int i = 0; i < processes; ++i) {
    std::ifstream in(StatisticsPath(dir.string(), i));
    if (!in) continue;  // A worker that failed writes none.
    // "name<TAB>value" lines; strtod reads nan and inf too.
    std::string line;
    while (std::getline(in, line)) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos) continue;
      const std::string name = line.substr(0, tab);
      const double value = std::strtod(line.c_str() + tab + 1, nullptr);
      if (values.count(name) == 0) names.push_back(name);
      values[name].push_back(value);
    }
    ++files;
  }
  if (files == 0) return "";
  std::string out = "agent statistics over the last 100 updates, mean of " +
                    std::to_string(files) +
                    (files == 1 ? " worker" : " workers") +
                    " (max for *_max):\n";
  for (const auto& name : names) {
    const std::vector<double>& v = values[name];
    const bool is_max =
        name.size() > 4 && name.compare(name.size() - 4, 4, "_max") == 0;
    double x = is_max ? v[0] : 0.0;
    for (double value : v) x = is_max ? std::max(x, value) : x + value;
    if (!is_max) x /= static_cast<double>(v.size());
    char line[128];
    std::snprintf(line, sizeof(line), "  %-26s %12.6g\n", name.c_str(), x);
    out += line;
  }
  return out;
}

}  // namespace asyncrl
