// When may the rebalancer act on a node, and when must the mark stay although the node cooled?
// Mark before evict: never evict from a node unless our mark is on it and the node cache has
// observed it there (so the scheduler, which reads the same API, steers replacements away);
// and keep the mark while the node's evictions are in flight and for `holdAfterEviction` after
// the last one, so the replacements do not land right back on it. Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "rebalance/node_relief.h"
#include "rebalance/rebalance_config.h"

namespace ds {

struct RebalanceNode {
  bool observed_marked = false;    // the node cache shows our mark on the node
  double marked_since_wall = 0;    // from the ownership record: when our mark was set
  bool alerted = false;            // an Alertmanager webhook named the node this cycle
  bool selected = true;            // matches rebalance.nodeSelector
  size_t evictions_in_flight = 0;  // accepted, pod still terminating
  double last_eviction_wall = 0;   // 0: never
  // When the rules holding the mark have waited long enough (ReliefDueWall); 0: unknown,
  // marked_since_wall + rebalance.after.
  double due_wall = 0;
};

// One rule holding a node's mark: since when it holds (its ownership record) and its urgency
// (Rule::relieve_after_seconds; negative: rebalance.after).
struct HeldSince {
  double since_wall = 0;
  double relieve_after_seconds = -1;
  std::string_view rule = {};  // its name (HoldingRule::rule)
};

// When the node may first be relieved: the earliest, over the rules holding it, of when each
// began plus its own wait, so an urgent rule (a memory rule near the kubelet's threshold) need
// not wait out a patient one's. 0 when `held` is empty.
double ReliefDueWall(const std::vector<HeldSince>& held, const RebalanceConfig& cfg);

// The holding rules that may drive the relief at now_wall: each rule only once it has waited its
// own time, counted from its HeldSince. A rule with no HeldSince has not been recorded as holding
// yet (it began to hold this cycle: the ownership record read at the cycle's start predates it):
//  - with a relieveAfter of its own (HoldingRule::relieve_after_seconds >= 0), it begins to wait
//    now, so it is due only when that wait is 0;
//  - without one, its wait is rebalance.after, which Qualifies already counts for the node (from
//    the mark, or ReliefDueWall), so it is due once the node qualifies. Callers leave a rule's
//    HeldSince out on purpose where no since of its own exists: a graded mark's cooler-level
//    rules, which count from the hottest level's mark as `after` does.
// Without this, an urgent rule that qualifies the node would let a patient rule further over its
// threshold set the goal, and that rule's wait would be skipped. An alerted node (Qualifies: an
// alert does not wait) keeps every rule.
std::vector<HoldingRule> DueHoldingRules(const std::vector<HoldingRule>& holding,
                                         const std::vector<HeldSince>& held,
                                         const RebalanceConfig& cfg, double now_wall, bool alerted);

enum class Qualification { kYes, kNotMarked, kNotLongEnough, kNotSelected };

const char* QualificationName(Qualification q);

// May pods be evicted from this node now?
Qualification Qualifies(const RebalanceNode& n, const RebalanceConfig& cfg, double now_wall);

// Must our mark stay on this node now, whatever its load says?
bool HoldsMark(const RebalanceNode& n, const RebalanceConfig& cfg, double now_wall);

}  // namespace ds
