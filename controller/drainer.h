// The mirror mode (rebalance.underused), HighNodeUtilization on real usage: nodes below every
// bound for long enough get our key with the underused value (rebalance/underuse.h), and once the
// node cache has seen that mark their pods are moved, in a cycle that relieves no hot node and
// within the same limits, so a cluster autoscaler can remove them. Its steps, in order: the plan
// from this cycle's nodes; each mark set or removed, with its log line and Event; the report of
// every node the plan names; the nodes to drain this cycle, within the limits (the others'
// reports say which limit); the drains, through the one evictor. Call from the cycle's thread.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/label_selector.h"
#include "common/log_throttle.h"
#include "controller/candidates.h"
#include "controller/cluster_reads.h"
#include "controller/evictor.h"
#include "controller/rebalance_tally.h"
#include "rebalance/underuse.h"
#include "rules/mark.h"

namespace ds {

class Drainer {
 public:
  // All pointers must outlive this.
  Drainer(const RebalanceConfig& cfg, const Mark& mark,
          const std::optional<LabelSelector>& selector, ClusterReads* reads, Candidates* candidates,
          Evictor* evictor, const Clock* clock, RebalanceTally* tally);

  // The marks, then (when `relieving` is false: hot nodes come first) the drains. `retry_at`:
  // nodes that gave nothing to evict last time, and until when they wait. Evictions (or dry-run
  // plans) per node go into `acted`, nodes that had room for one into `tried`.
  void Underuse(const std::vector<ReliefInput>& nodes, bool relieving, double now,
                const std::map<std::string, double>& retry_at, const ReliefWrites& io,
                std::map<std::string, size_t>* acted, std::set<std::string>* tried);

 private:
  struct UnderuseCycle;
  UnderuseCycle UnderuseInputs(const std::vector<ReliefInput>& nodes, double now);
  void WriteUnderusedMark(const UnderuseCycle& c, const std::string& node, bool set, double now,
                          const ReliefWrites& io);
  void ReportUnderused(UnderuseCycle* c);
  // A drain record (kLastDrainAnnotation) whose underused mark is gone (the hot mark replaced it,
  // or an operator's value) is removed once the node's cool-down is over: the mark's removal,
  // which takes it along, will not come.
  void ForgetDrains(const std::vector<ReliefInput>& nodes, double now, const ReliefWrites& io);
  std::vector<std::string> DrainOrder(UnderuseCycle* c, bool relieving, double now,
                                      const std::map<std::string, double>& retry_at);
  void Drain(const std::vector<ReliefInput>& nodes, UnderuseCycle* c,
             const std::vector<std::string>& order, double now, const ReliefWrites& io,
             std::map<std::string, size_t>* acted, std::set<std::string>* tried);

  // Constant after construction.
  const RebalanceConfig cfg_;
  const Mark mark_;
  const std::optional<LabelSelector> selector_;  // rebalance.nodeSelector; empty: every node
  ClusterReads* const reads_;
  Candidates* const candidates_;
  Evictor* const evictor_;
  const Clock* const clock_;
  RebalanceTally* const tally_;

  // The cycle's thread only.
  UnderuseTracker underuse_;
  std::set<std::string> drained_;  // underused nodes whose last drain found nothing to move
  LogThrottle throttle_{300};
};

}  // namespace ds
