#include "rebalance/effect.h"

#include <algorithm>

namespace ds {

void EffectTracker::OnCycle(double now, const std::vector<std::string>& reference_hot,
                            const std::set<std::string>& marked) {
  for (const std::string& n : reference_hot) {
    ++figures_.reference_hot;
    figures_.reference_hot_marked += marked.count(n);
  }
  // Episodes whose window ended without the node clearing were not relieved.
  for (auto& [node, e] : episodes_)
    if (e.evicted && !e.judged && now - e.first_eviction > window_) Judge(&e, false);
  Expire(now);
}

void EffectTracker::OnQualified(const std::string& node, double /*now*/) {
  if (episodes_.emplace(node, Episode{}).second) ++figures_.episodes;
}

void EffectTracker::OnEviction(const std::string& node, const std::string& workload, double now) {
  ++figures_.evictions;
  auto it = episodes_.find(node);
  if (it != episodes_.end() && !it->second.evicted) {
    it->second.evicted = true;
    it->second.first_eviction = now;
    ++figures_.episodes_evicted;
  }
  recent_.push_back(Eviction{node, workload, now, false});
}

void EffectTracker::OnPodBound(const std::string& workload, const std::string& node, double now) {
  Expire(now);
  // The oldest unreplaced eviction of this workload is the one this pod replaces.
  for (Eviction& e : recent_) {
    if (e.replaced || e.workload != workload) continue;
    e.replaced = true;
    ++figures_.replacements;
    if (e.node == node) ++figures_.bounce_backs;
    return;
  }
}

void EffectTracker::OnCleared(const std::string& node, double now) {
  auto it = episodes_.find(node);
  if (it == episodes_.end()) return;
  Episode& e = it->second;
  if (e.evicted && !e.judged && now - e.first_eviction <= window_) Judge(&e, true);
}

void EffectTracker::OnUnmarked(const std::string& node) {
  auto it = episodes_.find(node);
  if (it == episodes_.end()) return;
  // Not judged yet means it did not clear in time (a cooling node reports OnCleared first).
  if (it->second.evicted && !it->second.judged) Judge(&it->second, false);
  episodes_.erase(it);
}

void EffectTracker::Judge(Episode* e, bool relieved) {
  e->judged = true;
  ++figures_.episodes_judged;
  figures_.episodes_relieved += relieved;
}

void EffectTracker::Expire(double now) {
  recent_.erase(std::remove_if(recent_.begin(), recent_.end(),
                               [&](const Eviction& e) { return now - e.at > window_; }),
                recent_.end());
}

}  // namespace ds
