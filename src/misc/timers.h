// Hierarchical wall-clock timers, one tree per process. A ScopedTimer adds
// its duration to the node named after it under the innermost running
// timer, so nesting in the code gives the tree (update/backward, ...).
// Costs two clock reads and a short child lookup per scope (bench/
// a3c_bench measures it), so they are always on.
#ifndef ASYNCRL_MISC_TIMERS_H_
#define ASYNCRL_MISC_TIMERS_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asyncrl/misc/json.h"

namespace asyncrl {

// Not thread-safe: one tree per process, used by its main thread.
class TimerTree {
 public:
  struct Node {
    const char* name = "";
    double total = 0;  // Seconds.
    int64_t count = 0;
    Node* parent = nullptr;
    std::vector<std::unique_ptr<Node>> children;
  };

  TimerTree();
  // The tree of this process.
  static TimerTree& Process();

  // `name` must outlive the tree (a string literal).
  Node* Enter(const char* name);
  void Exit(Node* node, double seconds);
  void Clear();
  void set_enabled(bool enabled) { enabled_ = enabled; }
  bool enabled() const { return enabled_; }
  const Node& root() const { return root_; }

  // {"total": s, "count": n, "self": s, "children": {name: {...}}} for the
  // root (whose total is the sum of its children).
  Json ToJson() const;

 private:
  Node root_;
  Node* current_ = &root_;
  bool enabled_ = true;
};

class ScopedTimer {
 public:
  explicit ScopedTimer(const char* name) {
    TimerTree& tree = TimerTree::Process();
    if (!tree.enabled()) return;
    node_ = tree.Enter(name);
    start_ = std::chrono::steady_clock::now();
  }
  ~ScopedTimer() {
    if (node_ == nullptr) return;
    TimerTree::Process().Exit(
        node_,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
            .count());
  }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  TimerTree::Node* node_ = nullptr;
  std::chrono::steady_clock::time_point start_;
};

// Sums timer trees in the JSON form of TimerTree::ToJson (node by node).
Json MergeTimerTrees(const std::vector<Json>& trees);

// Lines "name  share%  total s  count" for every node, indented by depth,
// shares relative to the root's total.
std::string FormatTimerSummary(const Json& tree);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_TIMERS_H_
