#include "rebalance/underuse.h"

#include <algorithm>

namespace ds {

UnderuseVerdict ClassifyUnderuse(const double load[2], const UnderusedConfig& cfg) {
  UnderuseVerdict v = UnderuseVerdict::kBelow;
  for (int k = 0; k < 2; ++k) {
    if (std::isnan(cfg.below[k])) continue;  // not a condition
    if (!std::isfinite(load[k])) {
      v = UnderuseVerdict::kUnknown;
    } else if (load[k] >= cfg.below[k]) {
      return UnderuseVerdict::kAbove;  // a known breach decides, whatever else is unknown
    }
  }
  return v;
}

UnderusePlan UnderuseTracker::Step(const std::vector<UnderuseNode>& nodes,
                                   const UnderusedConfig& cfg, double now_wall) {
  UnderusePlan plan;
  std::map<std::string, double> since;
  size_t marked = 0;
  struct Ready {
    const UnderuseNode* node;
    double load;  // the larger of its known shares: the emptiest node is drained first
  };
  std::vector<Ready> ready;
  for (const UnderuseNode& n : nodes) {
    const UnderuseVerdict v = ClassifyUnderuse(n.load, cfg);
    if (v == UnderuseVerdict::kBelow && !(n.balance_destination && !n.ours)) {
      auto it = since_.find(n.name);
      since.emplace(n.name, it != since_.end() ? it->second : now_wall);
      plan.below_since.emplace(n.name, since.at(n.name));
    }
    if (n.ours) {
      // Unknown keeps the mark (an outage of Prometheus must not undo it) but drains nothing.
      if (v == UnderuseVerdict::kAbove || !n.eligible) {
        plan.unmark.push_back(n.name);
        continue;
      }
      if (!n.drained) ++marked;
      if (v == UnderuseVerdict::kBelow) plan.drain.push_back(n.name);
      continue;
    }
    if (v != UnderuseVerdict::kBelow || n.taken || !n.eligible || n.balance_destination) continue;
    if (now_wall - since.at(n.name) < cfg.for_seconds) continue;
    double load = 0;
    for (double l : n.load)
      if (std::isfinite(l)) load = std::max(load, l);
    ready.push_back(Ready{&n, load});
  }
  since_ = std::move(since);
  std::sort(ready.begin(), ready.end(), [](const Ready& a, const Ready& b) {
    if (a.load != b.load) return a.load < b.load;
    return a.node->name < b.node->name;
  });
  for (const Ready& r : ready) {
    if (marked < cfg.max_nodes) {
      plan.mark.push_back(r.node->name);
      ++marked;
    } else {
      plan.capped.push_back(r.node->name);
    }
  }
  return plan;
}

}  // namespace ds
