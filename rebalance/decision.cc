#include "rebalance/decision.h"

#include <iterator>

namespace ds {

namespace {

using S = DecisionStage;
using V = PodVerdict;

struct Entry {
  const char* reason;
  DecisionStage stage;
  ReasonInfo info;
};

// Each sentence says what the cycle found; each `change` what its owner (or the operator) can do
// about it. Limits appear twice: checked for each pod before the plan (its namespace's, its
// workload's), and again at the eviction itself (the cycle's evictions may have used them up).
constexpr Entry kReasons[] = {
    {"daemonset",
     S::kEvictable,
     {V::kStays, "a DaemonSet's pod runs on every node: evicting it moves nothing", ""}},
    {"mirror",
     S::kEvictable,
     {V::kStays, "a static (mirror) pod belongs to its node's kubelet and cannot be evicted", ""}},
    {"no_controller",
     S::kEvictable,
     {V::kStays, "a pod without a controller would not come back after an eviction",
      "run it under a Deployment, StatefulSet or Job, or set rebalance.evictBarePods"}},
    {"local_storage",
     S::kEvictable,
     {V::kStays, "it has an emptyDir or hostPath volume, whose data an eviction would lose",
      "set rebalance.evictLocalStorage if that data may be lost"}},
    {"priority",
     S::kEvictable,
     {V::kStays, "its priority is at or above rebalance.priorityThreshold",
      "lower its priority class, or raise rebalance.priorityThreshold"}},
    {"terminating", S::kEvictable, {V::kWaits, "it is already terminating", ""}},
    {"not_running", S::kEvictable, {V::kWaits, "it is not running", ""}},
    {"too_young",
     S::kEvictable,
     {V::kWaits, "it is younger than rebalance.minPodAge and has not shown its steady usage",
      "wait until it is older than rebalance.minPodAge"}},
    {"opted_out",
     S::kEvictable,
     {V::kStays, "it is annotated dynamic-scheduler.io/evict: \"false\"",
      "remove the annotation dynamic-scheduler.io/evict"}},
    {"namespace",
     S::kEvictable,
     {V::kStays, "its namespace is excluded (rebalance.namespaces)",
      "change rebalance.namespaces"}},
    {"in_flight",
     S::kInMotion,
     {V::kWaits, "it was evicted already and is still leaving its node", ""}},
    {"constraint",
     S::kConstraints,
     {V::kStays,
      "where its replacement may run depends on a constraint the fit check does not judge "
      "(pod affinity, topology spread, a volume's zone, ...), and the rebalancer never guesses",
      "drop or relax that constraint"}},
    {"bounced_back",
     S::kBounceBack,
     {V::kWaits,
      "a replacement of its workload came back onto the node it left, so its workload is paused "
      "for rebalance.bounceBackPause",
      "add the steering term to its workload (see would_return)"}},
    {"would_return",
     S::kSteering,
     {V::kStays,
      "nothing keeps its replacement off the marked node (rebalance.requireSteering): it would be "
      "scheduled right back",
      "add the node-affinity term (status NotIn [presure]) or toleration the detail names to its "
      "pod template"}},
    {"no_fit",
     S::kSteering,
     {V::kStays, "no other node has room for it, so no steering term would let it move",
      "free room on other nodes, or lower its requests"}},
    {"window",
     S::kLimits,
     {V::kWaits, "evictions are allowed only within rebalance.windows",
      "wait for the next window"}},
    {"per_cycle", S::kLimits, {V::kWaits, "the cycle's evictions (perCycle) are used up", ""}},
    {"per_hour",
     S::kLimits,
     {V::kWaits, "the cluster's evictions of the last hour (perHour) are used up", ""}},
    {"per_node_per_hour",
     S::kLimits,
     {V::kWaits, "its node's evictions of the last hour (perNodePerHour) are used up", ""}},
    {"node_cooldown",
     S::kLimits,
     {V::kWaits, "its node had an eviction less than nodeCooldown ago", ""}},
    {"per_namespace_per_hour",
     S::kLimits,
     {V::kWaits, "its namespace's evictions of the last hour (perNamespacePerHour) are used up",
      ""}},
    {"per_workload",
     S::kLimits,
     {V::kWaits, "its workload has as many pods evicted and not yet replaced as perWorkload allows",
      "wait until the replacement of its workload's last evicted pod runs"}},
    {"node_removal",
     S::kDisruptors,
     {V::kWaits, "its node is being removed (cluster-autoscaler, Karpenter): it leaves anyway",
      ""}},
    {"safe_to_evict_false",
     S::kDisruptors,
     {V::kStays, "it is annotated cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\"",
      "remove that annotation"}},
    {"evicting_in_background",
     S::kDisruptors,
     {V::kWaits, "an eviction in the background (a live migration) is moving it already", ""}},
    {"rollout",
     S::kDisruptors,
     {V::kWaits, "its workload is rolling out: its pods are being replaced anyway", ""}},
    {"scale_down",
     S::kDisruptors,
     {V::kWaits, "its workload is scaling down or an autoscaler is about to scale it down", ""}},
    {"disruptors_unread",
     S::kDisruptors,
     {V::kWaits,
      "its workload or autoscalers could not be read: not knowing is no licence to evict", ""}},
    {"no_usage",
     S::kUsage,
     {V::kWaits, "the per-pod usage query has no value for it", "check rebalance.podUsage"}},
    {"within_requests",
     S::kKubeletOrder,
     {V::kStays,
      "the kubelet's next victim on the node uses no more memory than it requests: the kubelet "
      "would not evict it, so nothing moves in its place",
      "set rebalance.evictWithinRequests to move pods within their requests too"}},
    {"kubelet_victim_stays",
     S::kKubeletOrder,
     {V::kStays,
      "the kubelet would evict it next, and it cannot move (or it is the pod before it that "
      "cannot): moving another would not spare it",
      "let the kubelet's next victim move (a steering term, its PodDisruptionBudget, room "
      "elsewhere)"}},
    {"no_fit",
     S::kPlan,
     {V::kStays,
      "its replacement fits on none of the least loaded unmarked nodes (by requests, and by real "
      "usage below the rule's clear threshold)",
      "free room on other nodes, or lower its requests"}},
    {"over_floor",
     S::kPlan,
     {V::kNotNeeded, "moving it would take the node below rebalance.target", ""}},
    {"stands_out",
     S::kPlan,
     {V::kStays,
      "its share alone is over the balance rule's offset: the node it lands on would stand out in "
      "its turn",
      ""}},
    {"no_relief", S::kPlan, {V::kNotNeeded, "it uses nothing of the relieved resource", ""}},
    {"goal_reached",
     S::kPlan,
     {V::kNotNeeded, "the pods before it in the plan bring the node to its goal", ""}},
    {"no_room",
     S::kPlan,
     {V::kWaits, "the cycle's evictions went to pods before it (perCycle)", ""}},
    {"requested",
     S::kEviction,
     {V::kMoves,
      "the eviction was sent; its answer was not recorded before the controller restarted", ""}},
    {"evicted",
     S::kEviction,
     {V::kMoves, "evicted: its replacement is steered to a node with room", ""}},
    {"dry_run",
     S::kEviction,
     {V::kMoves, "it would be evicted (rebalance.dryRun: nothing is written)", ""}},
    {"evicting_in_background",
     S::kEviction,
     {V::kMoves, "the eviction started a move in the background (a live migration)", ""}},
    {"blocked_by_pdb",
     S::kEviction,
     {V::kWaits, "its PodDisruptionBudget allows no disruption now",
      "wait until the budget allows a disruption, or relax the PodDisruptionBudget"}},
    {"multiple_pdbs",
     S::kEviction,
     {V::kStays, "more than one PodDisruptionBudget selects it: the API server refuses to evict it",
      "make one PodDisruptionBudget select it"}},
    {"gone", S::kEviction, {V::kNotNeeded, "it was gone (or re-created) when evicted", ""}},
    {"forbidden",
     S::kEviction,
     {V::kWaits, "the controller may not evict pods (RBAC: create pods/eviction)",
      "grant the rebalance overlay's RBAC"}},
    {"refused", S::kEviction, {V::kWaits, "the API server refused the eviction", ""}},
    {"error",
     S::kEviction,
     {V::kMoves, "the eviction got no clear answer and may have gone through", ""}},
    {"stopped",
     S::kEviction,
     {V::kWaits,
      "the cycle stopped before its eviction (this replica stopped leading, or is stopping)", ""}},
    {"ledger_unreadable",
     S::kEviction,
     {V::kWaits, "the eviction ledger could not be read, so its limits would not hold", ""}},
    {"ledger_failed",
     S::kEviction,
     {V::kWaits, "writing the eviction ledger ahead of the eviction failed", ""}},
    {"record_failed",
     S::kEviction,
     {V::kWaits, "writing the node's record ahead of the eviction failed", ""}},
};

constexpr const char* kLimitNames[] = {"window",        "per_cycle",
                                       "per_hour",      "per_node_per_hour",
                                       "node_cooldown", "per_namespace_per_hour",
                                       "per_workload"};

}  // namespace

const char* StageName(DecisionStage s) {
  switch (s) {
    case S::kEvictable:
      return "evictable";
    case S::kInMotion:
      return "in_motion";
    case S::kConstraints:
      return "constraints";
    case S::kBounceBack:
      return "bounce_back";
    case S::kSteering:
      return "steering";
    case S::kLimits:
      return "limits";
    case S::kDisruptors:
      return "disruptors";
    case S::kUsage:
      return "usage";
    case S::kKubeletOrder:
      return "kubelet_order";
    case S::kPlan:
      return "plan";
    case S::kEviction:
      return "eviction";
  }
  return "eviction";
}

const char* PodVerdictName(PodVerdict v) {
  switch (v) {
    case V::kMoves:
      return "moves";
    case V::kWaits:
      return "waits";
    case V::kStays:
      return "stays";
    case V::kNotNeeded:
      return "not_needed";
    case V::kUnknown:
      return "unknown";
  }
  return "unknown";
}

ReasonInfo DescribeReason(const std::string& reason, DecisionStage stage) {
  for (const Entry& e : kReasons)
    if (e.stage == stage && reason == e.reason) return e.info;
  // A limit at the eviction says what it says before the plan.
  if (stage == S::kEviction)
    for (const char* limit : kLimitNames)
      if (reason == limit) return DescribeReason(reason, S::kLimits);
  return ReasonInfo{V::kUnknown, "a reason this version does not know", ""};
}

std::vector<std::pair<std::string, DecisionStage>> KnownReasons() {
  std::vector<std::pair<std::string, DecisionStage>> out;
  for (const Entry& e : kReasons) out.emplace_back(e.reason, e.stage);
  for (const char* limit : kLimitNames) out.emplace_back(limit, S::kEviction);
  return out;
}

}  // namespace ds
