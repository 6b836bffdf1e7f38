// Why each pod of a relieved node moved or stayed, as the cycle decided it: the rebalancer records
// one PodDecision per pod it looked at, named by the same reason its counters use
// (dynamic_scheduler_rebalance_skips_total, _kept_pods_total, _evictions_total), and /explain
// (web/explain_json.h) and `kubectl dynamic-scheduler explain` read those records back. Nothing
// here decides: the cycle's checks do, in the order of DecisionStage, and this only says, for each
// reason, which check it is, whether it is for good or for now, and what would change it. Pure.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common/value_format.h"

namespace ds {

// The checks a pod of a relieved node goes through, in the order the cycle makes them
// (controller/candidates.cc Filter, then controller/rebalancer.cc RelieveHot and EvictPicks): a
// pod stopped at one stage passed every stage before it and was not asked the ones after.
enum class DecisionStage {
  kEvictable,     // rebalance/evictable.h: DaemonSet, mirror, no controller, priority, age, ...
  kInMotion,      // evicted already and still leaving
  kConstraints,   // a constraint the fit check does not judge decides where it may run
  kBounceBack,    // its workload's replacement came back here: paused
  kSteering,      // nothing keeps its replacement off the marked node (rebalance.requireSteering)
  kLimits,        // a limit of its namespace or workload
  kDisruptors,    // someone else moves it: a rollout, a scale-down, the node's removal, ...
  kUsage,         // its usage of the relieved resource is unknown
  kKubeletOrder,  // memory: only the kubelet's next victims move
  kPlan,          // the plan: the goal, the floor, room on another node, the cycle's room
  kEviction,      // the eviction itself: the budget, the write-ahead, the API server's answer
};
inline constexpr size_t kDecisionStages = 11;

// "evictable", "in_motion", ...: the stage's name in /explain's checks.
const char* StageName(DecisionStage s);

// What a reason means for the pod.
enum class PodVerdict {
  kMoves,      // evicted, being moved, or (dry-run) would be
  kWaits,      // not now: a limit, a pause, something already moving; it may go in a later cycle
  kStays,      // not while it stays as it is (its kind, its constraints, no steering term, ...)
  kNotNeeded,  // not needed this cycle: the pods before it reach the goal, or the cycle's room
  kUnknown,    // a reason this build does not know (a record from a newer version)
};
const char* PodVerdictName(PodVerdict v);

struct ReasonInfo {
  PodVerdict verdict = PodVerdict::kUnknown;
  const char* because = "";  // one sentence, for people
  const char* change = "";   // what would change it ("" when nothing a user can do)
};

// The meaning of `reason` (a Keep name, a skip reason, a limit's or disruptor's name, an
// eviction's result) where `stage` decided it: one name can mean two things (a limit before the
// plan or at the eviction; "evicting_in_background" is another controller's move among the
// disruptors, and ours as an eviction's result). An unknown pair gets kUnknown and says so.
ReasonInfo DescribeReason(const std::string& reason, DecisionStage stage);

// Every (reason, stage) DescribeReason knows, for the tests that hold it to the cycle.
std::vector<std::pair<std::string, DecisionStage>> KnownReasons();

// One pod of a relieved node, as the cycle decided it.
struct PodDecision {
  DecisionStage stage = DecisionStage::kEviction;  // the check that decided
  std::string pod;                                 // namespace/name
  std::string uid;
  std::string workload;  // namespace/Kind/name, "" for a bare pod
  std::string reason;    // DescribeReason's key
  std::string to;        // a pick's destination (where its replacement fits)
  std::string detail;    // what the check said beyond the reason (a constraint, a steering advice)
  double usage = std::nan("");  // its measured usage of the relieved resource, in `unit`
  size_t order = 0;             // position in the plan's order (kubelet's or by usage), 0: none
  ValueUnit unit = ValueUnit::kPercent;
};

// A relieved node's decisions of the last cycle that looked at its pods.
struct NodeDecisions {
  std::string node, rule;
  double at_wall = 0;
  double load = 0, goal = 0;  // the rule's value and goal, in its own terms
  ValueUnit unit = ValueUnit::kPercent;
  std::vector<std::string> destinations;  // where replacements were looked for, least loaded first
  std::vector<PodDecision> pods;          // every pod of the node the cycle listed
};

}  // namespace ds
