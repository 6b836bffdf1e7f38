#include "rebalance/eviction_budget.h"

#include <algorithm>

namespace ds {

const char* LimitName(Limit l) {
  switch (l) {
    case Limit::kNone:
      return "none";
    case Limit::kWindow:
      return "window";
    case Limit::kCycle:
      return "per_cycle";
    case Limit::kHour:
      return "per_hour";
    case Limit::kNodeHour:
      return "per_node_per_hour";
    case Limit::kNodeCooldown:
      return "node_cooldown";
    case Limit::kNamespace:
      return "per_namespace_per_hour";
    case Limit::kWorkload:
      return "per_workload";
  }
  return "unknown";
}

bool InWindow(const std::vector<TimeWindow>& windows, int weekday, int minute) {
  if (windows.empty()) return true;
  for (const TimeWindow& w : windows) {
    const bool today = (w.days >> weekday) & 1;
    const bool yesterday = (w.days >> ((weekday + 6) % 7)) & 1;
    if (w.start_minute < w.end_minute) {
      if (today && minute >= w.start_minute && minute < w.end_minute) return true;
    } else {
      // Wraps past midnight: the evening part belongs to today's window, the morning part to
      // yesterday's.
      if (today && minute >= w.start_minute) return true;
      if (yesterday && minute < w.end_minute) return true;
    }
  }
  return false;
}

EvictionBudget::EvictionBudget(EvictionLimits limits) : limits_(std::move(limits)) {}

void EvictionBudget::StartCycle(double now_wall, int weekday, int minute_of_day) {
  now_ = now_wall;
  ++cycle_;
  in_window_ = InWindow(limits_.windows, weekday, minute_of_day);
  cycle_count_ = 0;
  Expire();
}

void EvictionBudget::Expire() {
  while (!last_hour_.empty() && now_ - last_hour_.front().at >= 3600) last_hour_.pop_front();
  for (auto it = node_last_.begin(); it != node_last_.end();)
    it = now_ - it->second.at >= limits_.node_cooldown_seconds ? node_last_.erase(it)
                                                               : std::next(it);
  for (auto it = unreplaced_.begin(); it != unreplaced_.end();) {
    auto& times = it->second;
    while (!times.empty() && now_ - times.front() >= limits_.unreplaced_expiry_seconds)
      times.pop_front();
    it = times.empty() ? unreplaced_.erase(it) : std::next(it);
  }
}

Limit EvictionBudget::Check(const PodInfo& pod) const {
  if (!in_window_) return Limit::kWindow;
  if (cycle_count_ >= limits_.per_cycle) return Limit::kCycle;
  if (last_hour_.size() >= limits_.per_hour) return Limit::kHour;
  size_t node_hour = 0, ns_hour = 0;
  for (const Eviction& e : last_hour_) {
    node_hour += e.node == pod.node;
    ns_hour += e.ns == pod.ns;
  }
  if (node_hour >= limits_.per_node_per_hour) return Limit::kNodeHour;
  // The cool-down starts with the next cycle: the pods one cycle picks for a node are one plan,
  // whose effect the next evictions wait for.
  // (An eviction "in the future", the wall clock stepped back since, is within its cool-down.)
  if (auto it = node_last_.find(pod.node); it != node_last_.end() && it->second.cycle != cycle_ &&
                                           now_ - it->second.at < limits_.node_cooldown_seconds)
    return Limit::kNodeCooldown;
  if (limits_.per_namespace_per_hour > 0 && ns_hour >= limits_.per_namespace_per_hour)
    return Limit::kNamespace;
  if (const std::string w = pod.Workload(); !w.empty()) {
    auto it = unreplaced_.find(w);
    if (it != unreplaced_.end() && it->second.size() >= limits_.per_workload_unreplaced)
      return Limit::kWorkload;
  }
  return Limit::kNone;
}

void EvictionBudget::Record(const PodInfo& pod) {
  ++cycle_count_;
  last_hour_.push_back(Eviction{now_, pod.node, pod.ns, pod.Workload()});
  node_last_[pod.node] = Last{now_, cycle_};
  if (const std::string w = pod.Workload(); !w.empty()) unreplaced_[w].push_back(now_);
}

void EvictionBudget::Restore(const std::vector<LedgerEntry>& ledger) {
  last_hour_.clear();
  node_last_.clear();
  unreplaced_.clear();
  for (const LedgerEntry& e : ledger) {
    last_hour_.push_back(Eviction{e.at_wall, e.node, e.ns(), e.workload});
    // Cycle 0 is none of this budget's cycles: the cool-down holds from the next one on.
    Last& last = node_last_[e.node];
    if (e.at_wall > last.at) last = Last{e.at_wall, 0};
    if (!e.workload.empty()) unreplaced_[e.workload].push_back(e.at_wall);
  }
  Expire();
}

void EvictionBudget::Replaced(const std::string& workload) {
  auto it = unreplaced_.find(workload);
  if (it == unreplaced_.end()) return;
  it->second.pop_front();
  if (it->second.empty()) unreplaced_.erase(it);
}

}  // namespace ds
