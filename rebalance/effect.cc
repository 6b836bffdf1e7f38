#include "rebalance/effect.h"

#include <algorithm>

namespace ds {

void EffectTracker::OnCycle(double now, const std::vector<std::string>& reference_hot,
                            const std::set<std::string>& marked,
                            const std::set<std::string>& cooled) {
  for (const std::string& n : reference_hot) {
    ++figures_.reference_hot;
    figures_.reference_hot_marked += marked.count(n);
  }
  // The marked nodes still hot count for the time since the previous cycle, at most a cycle: a
  // webhook's early cycle counts for less, and a gap (this replica was a standby, or stopped)
  // for no more than a cycle, since nobody here watched it.
  double step = last_cycle_ < 0 ? cycle_ : now - last_cycle_;
  if (cycle_ > 0) step = std::min(step, cycle_);
  size_t hot = 0;
  for (const std::string& n : marked) hot += cooled.count(n) ? 0 : 1;
  if (step > 0) figures_.hot_node_seconds += static_cast<double>(hot) * step;
  last_cycle_ = std::max(last_cycle_, now);
  // Episodes whose window ended without the node clearing were not relieved.
  for (auto& [node, e] : episodes_)
    if (e.evicted && !e.judged && now - e.first_eviction > window_) Judge(&e, false, now);
  Expire(now);
}

void EffectTracker::OnQualified(const std::string& node, double now, double marked_since) {
  Episode e;
  e.start = marked_since > 0 && marked_since <= now ? marked_since : now;
  if (episodes_.emplace(node, e).second) ++figures_.episodes;
}

void EffectTracker::OnEviction(const std::string& node, const std::string& workload, double now,
                               const std::string& pod, const std::string& owner_api_version) {
  ++figures_.evictions;
  auto it = episodes_.find(node);
  if (it != episodes_.end()) {
    Episode& e = it->second;
    if (!e.evicted) {
      e.evicted = true;
      e.first_eviction = now;
      ++figures_.episodes_evicted;
    }
    ++e.evictions;
    if (e.relieved) ++figures_.relieved_evictions;  // it went hot again within the episode
  }
  recent_.push_back(Eviction{node, workload, pod, owner_api_version, now, false, "", -1});
}

void EffectTracker::OnPodBound(const std::string& workload, const std::string& node, double now) {
  Expire(now);
  // The oldest unreplaced eviction of this workload is the one this pod replaces.
  for (Eviction& e : recent_) {
    if (e.replaced || e.workload != workload) continue;
    e.replaced = true;
    e.replaced_on = node;
    ++figures_.replacements;
    if (e.node == node) ++figures_.bounce_backs;
    return;
  }
}

void EffectTracker::OnCleared(const std::string& node, double now) {
  for (Eviction& r : recent_)
    if (r.node == node && r.cleared_at < 0 && now - r.at <= window_) r.cleared_at = now;
  auto it = episodes_.find(node);
  if (it == episodes_.end()) return;
  Episode& e = it->second;
  if (e.evicted && !e.judged && now - e.first_eviction <= window_) Judge(&e, true, now);
}

void EffectTracker::OnUnmarked(const std::string& node) {
  auto it = episodes_.find(node);
  if (it == episodes_.end()) return;
  // Not judged yet means it did not clear in time (a cooling node reports OnCleared first).
  if (it->second.evicted && !it->second.judged) Judge(&it->second, false, 0);
  episodes_.erase(it);
}

void EffectTracker::Judge(Episode* e, bool relieved, double now) {
  e->judged = true;
  ++figures_.episodes_judged;
  if (!relieved) return;
  e->relieved = true;
  ++figures_.episodes_relieved;
  figures_.relieved_evictions += e->evictions;
  // `now` is the first cycle since the episode's first eviction that found the node at or below
  // its clear threshold: OnCleared comes each cycle it is, and an episode is judged once.
  const double seconds = std::max(0.0, now - e->start);
  const auto bound = std::lower_bound(kTimeToReliefBuckets.begin(), kTimeToReliefBuckets.end(),
                                      seconds);  // the first bound >= seconds: `le` holds it
  ++figures_.time_to_relief[static_cast<size_t>(bound - kTimeToReliefBuckets.begin())];
  figures_.time_to_relief_sum += seconds;
}

void EffectTracker::Expire(double now) {
  auto ended = [&](const Eviction& e) { return now - e.at > window_; };
  for (const Eviction& e : recent_)
    if (ended(e))
      outcomes_.push_back(EvictionOutcome{e.node, e.workload, e.pod, e.owner_api_version, e.at,
                                          e.cleared_at < 0 ? -1 : e.cleared_at - e.at,
                                          e.replaced_on});
  recent_.erase(std::remove_if(recent_.begin(), recent_.end(), ended), recent_.end());
  // Bounded where nobody takes them (the effect simulation): the newest are kept.
  if (outcomes_.size() > kMaxOutcomes)
    outcomes_.erase(outcomes_.begin(), outcomes_.end() - static_cast<std::ptrdiff_t>(kMaxOutcomes));
}

std::vector<EvictionOutcome> EffectTracker::TakeOutcomes() {
  std::vector<EvictionOutcome> out;
  out.swap(outcomes_);
  return out;
}

}  // namespace ds
