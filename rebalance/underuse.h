// The mirror mode's decisions (rebalance.underused, rebalance_config.h): which nodes have stayed
// below every bound long enough to be marked underused, which lose that mark, and which may be
// drained. Pure: the caller supplies the loads, the labels' reading and the time.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "rebalance/rebalance_config.h"

namespace ds {

struct UnderuseNode {
  std::string name;
  double load[2] = {std::nan(""),
                    std::nan("")};  // cpu, memory percent of allocatable; NaN: unknown
  bool ours = false;                // carries our key with the underused value (in the node cache)
  bool taken = false;  // carries our key with another value: the hot mark, or an operator's
  // rebalance.nodeSelector selects it, it is schedulable and has no NoSchedule/NoExecute taint:
  // a node the autoscaler would not take away, or that nothing is scheduled onto, is left alone.
  bool eligible = true;
  // Marked, and its last drain found nothing left to move (DaemonSet pods, pods that must stay):
  // it keeps the mark while it idles, for the autoscaler, but no longer counts against maxNodes,
  // which limits the nodes being drained at once.
  bool drained = false;
  // A destination of balance (a relative rule's pool with a node over the mean plus the
  // threshold): balance goes first, so it is not marked, and its wait starts over (it may take
  // pods meanwhile). A node marked already keeps its mark: it is being emptied for the
  // autoscaler, and taking the mark off for every imbalance would make the two modes flap.
  bool balance_destination = false;
};

enum class UnderuseVerdict {
  kBelow,    // every configured bound holds
  kAbove,    // some resource is at or above its bound
  kUnknown,  // no value for a configured resource: it neither marks nor unmarks
};

UnderuseVerdict ClassifyUnderuse(const double load[2], const UnderusedConfig& cfg);

struct UnderusePlan {
  std::vector<std::string> mark;              // to mark now, lowest load first
  std::vector<std::string> unmark;            // above a bound again, or no longer eligible
  std::vector<std::string> drain;             // marked (observed in the cache) and still below
  std::vector<std::string> capped;            // qualified, but maxNodes are marked already
  std::map<std::string, double> below_since;  // every node below its bounds now -> since when
};

// Remembers since when each node has been below its bounds. A node above them, or of unknown
// load, starts again: marking a node for draining wants unbroken evidence. After a restart the
// marks on the nodes are the state that counts (a marked node is drained on); only the waiting
// time of unmarked nodes starts over.
class UnderuseTracker {
 public:
  UnderusePlan Step(const std::vector<UnderuseNode>& nodes, const UnderusedConfig& cfg,
                    double now_wall);

 private:
  std::map<std::string, double> since_;
};

}  // namespace ds
