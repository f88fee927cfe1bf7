#include "asyncrl/misc/timers.h"

#include <cstdio>
#include <cstring>

namespace asyncrl {

TimerTree::TimerTree() { root_.name = "total"; }

TimerTree& TimerTree::Process() {
  static TimerTree* tree = new TimerTree();
  return *tree;
}

TimerTree::Node* TimerTree::Enter(const char* name) {
  for (auto& child : current_->children) {
    if (child->name == name || std::strcmp(child->name, name) == 0) {
      current_ = child.get();
      return current_;
    }
  }
  auto node = std::make_unique<Node>();
  node->name = name;
  node->parent = current_;
  current_->children.push_back(std::move(node));
  current_ = current_->children.back().get();
  return current_;
}

void TimerTree::Exit(Node* node, double seconds) {
  node->total += seconds;
  ++node->count;
  current_ = node->parent;
}

void TimerTree::Clear() {
  root_.children.clear();
  current_ = &root_;
}

namespace {

Json NodeJson(const TimerTree::Node& node, bool is_root) {
  Json::Object children;
  double child_total = 0;
  for (const auto& c : node.children) {
    children[c->name] = NodeJson(*c, false);
    child_total += c->total;
  }
  const double total = is_root ? child_total : node.total;
  Json::Object o;
  o["total"] = total;
  o["count"] = static_cast<double>(is_root ? 1 : node.count);
  o["self"] = total - child_total;
  o["children"] = std::move(children);
  return o;
}

void MergeInto(Json::Object& into, const Json& tree) {
  auto add = [&](const char* key) {
    const double prev = into.count(key) ? into[key].number() : 0.0;
    into[key] = prev + tree.at(key).number();
  };
  add("total");
  add("count");
  add("self");
  Json::Object children =
      into.count("children") ? into["children"].object() : Json::Object{};
  for (const auto& [name, child] : tree.at("children").object()) {
    Json::Object merged =
        children.count(name) ? children[name].object() : Json::Object{};
    MergeInto(merged, child);
    children[name] = std::move(merged);
  }
  into["children"] = std::move(children);
}

void FormatNode(std::string& out, const std::string& name, const Json& node,
                double root_total, int depth) {
  char line[256];
  const double total = node.at("total").number();
  std::snprintf(line, sizeof(line), "%-*s%-*s %6.1f%%  %10.2f s  %12.0f\n",
                depth * 2, "", 28 - depth * 2, name.c_str(),
                root_total > 0 ? 100.0 * total / root_total : 0.0, total,
                node.at("count").number());
  out += line;
  for (const auto& [child, value] : node.at("children").object()) {
    FormatNode(out, child, value, root_total, depth + 1);
  }
}

}  // namespace

Json TimerTree::ToJson() const { return NodeJson(root_, true); }

Json MergeTimerTrees(const std::vector<Json>& trees) {
  Json::Object merged;
  for (const auto& t : trees) MergeInto(merged, t);
  if (trees.empty()) return NodeJson(TimerTree::Node{}, true);
  return merged;
}

std::string FormatTimerSummary(const Json& tree) {
  std::string out;
  char header[128];
  std::snprintf(header, sizeof(header), "%-28s %7s  %12s  %12s\n", "timer",
                "share", "seconds", "count");
  out += header;
  FormatNode(out, "total", tree, tree.at("total").number(), 0);
  return out;
}

}  // namespace asyncrl
