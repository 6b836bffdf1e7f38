#include "rebalance/qualify.h"

namespace ds {

const char* QualificationName(Qualification q) {
  switch (q) {
    case Qualification::kYes:
      return "qualifies";
    case Qualification::kNotMarked:
      return "not_marked";
    case Qualification::kNotLongEnough:
      return "not_long_enough";
    case Qualification::kNotSelected:
      return "not_selected";
  }
  return "unknown";
}

Qualification Qualifies(const RebalanceNode& n, const RebalanceConfig& cfg, double now_wall) {
  if (!n.selected) return Qualification::kNotSelected;
  // Only a mark the cache has seen on the node counts: one still in flight could be lost, and
  // then the replacement would be scheduled without it.
  if (!n.observed_marked) return Qualification::kNotMarked;
  if (n.alerted) return Qualification::kYes;  // an alert reacts faster than the periodic check
  if (n.due_wall > 0 ? now_wall < n.due_wall : now_wall - n.marked_since_wall < cfg.after_seconds)
    return Qualification::kNotLongEnough;
  return Qualification::kYes;
}

double ReliefDueWall(const std::vector<HeldSince>& held, const RebalanceConfig& cfg) {
  double due = 0;
  for (const HeldSince& h : held) {
    const double wait = h.relieve_after_seconds >= 0 ? h.relieve_after_seconds : cfg.after_seconds;
    if (due == 0 || h.since_wall + wait < due) due = h.since_wall + wait;
  }
  return due;
}

std::vector<HoldingRule> DueHoldingRules(const std::vector<HoldingRule>& holding,
                                         const std::vector<HeldSince>& held,
                                         const RebalanceConfig& cfg, double now_wall,
                                         bool alerted) {
  if (alerted) return holding;
  std::vector<HoldingRule> due;
  for (const HoldingRule& h : holding) {
    bool has_wait = false, waited = false;
    for (const HeldSince& s : held) {
      if (s.rule != h.rule) continue;
      has_wait = true;
      const double wait =
          s.relieve_after_seconds >= 0 ? s.relieve_after_seconds : cfg.after_seconds;
      waited |= now_wall >= s.since_wall + wait;
    }
    // Not recorded yet: a wait of its own starts now (due at once only when it is 0); without
    // one, the node's `after`, already counted by Qualifies, is the rule's.
    if (!has_wait) waited = h.relieve_after_seconds <= 0;
    if (waited) due.push_back(h);
  }
  return due;
}

bool HoldsMark(const RebalanceNode& n, const RebalanceConfig& cfg, double now_wall) {
  if (n.evictions_in_flight > 0) return true;
  return n.last_eviction_wall > 0 &&
         now_wall - n.last_eviction_wall < cfg.hold_after_eviction_seconds;
}

}  // namespace ds
