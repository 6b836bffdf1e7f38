#include "rebalance/disruptors.h"

#include <algorithm>

namespace ds {
namespace {

bool IsApps(const std::string& api_version) { return api_version.rfind("apps/", 0) == 0; }

}  // namespace

bool NodeBeingRemoved(const NodeInfo& node) {
  return std::any_of(node.taints.begin(), node.taints.end(), [](const Taint& t) {
    return t.key == kClusterAutoscalerDeletingTaint ||
           (t.key == kKarpenterDisruptedTaint && t.effect == kKarpenterDisruptedEffect) ||
           (t.key == kKarpenterLegacyDisruptionTaint && t.value == "disrupting");
  });
}

const char* DisruptorName(Disruptor d) {
  switch (d) {
    case Disruptor::kNone:
      return "none";
    case Disruptor::kNodeRemoval:
      return "node_removal";
    case Disruptor::kSafeToEvictFalse:
      return "safe_to_evict_false";
    case Disruptor::kEvictingInBackground:
      return "evicting_in_background";
    case Disruptor::kRollout:
      return "rollout";
    case Disruptor::kScaleDown:
      return "scale_down";
  }
  return "unknown";
}

Disruptor OtherDisruptor(const PodInfo& pod, const NodeInfo& node, const WorkloadStatus* workload,
                         const std::vector<Autoscaler>& autoscalers) {
  // The node goes with all its pods: the autoscaler drains it itself, and a replacement we steer
  // elsewhere would only race its drain.
  if (NodeBeingRemoved(node)) return Disruptor::kNodeRemoval;
  // The cluster-autoscaler's own opt-out (exactly "false", as its drain code compares): whoever
  // wrote it meant "do not disrupt this pod", not "do not scale down for it" only.
  if (const std::string* v = FindLabel(pod.annotations, kSafeToEvictAnnotation);
      v != nullptr && *v == "false")
    return Disruptor::kSafeToEvictFalse;
  if (FindLabel(pod.annotations, kEvictionInProgressAnnotation) != nullptr)
    return Disruptor::kEvictingInBackground;
  // A rollout replaces the pods anyway, and while it runs the workload is short of updated
  // replicas: one more eviction deepens the dip its PodDisruptionBudget may not see. (Replicas
  // that are only not available -- one crash-looping -- are the budget's business.)
  if (workload != nullptr && workload->ReplacingPods()) return Disruptor::kRollout;
  // An HPA that wants fewer replicas is about to delete some of them: the replacement of an
  // evicted one may be among those, and the node may cool by itself.
  auto scaled = [&](const Autoscaler& a) {
    if (!a.ScalingDown()) return false;
    if (workload == nullptr)
      return !pod.owner_kind.empty() && a.Targets(pod.owner_kind, pod.owner_name);
    return a.Targets(workload->kind, workload->name) ||
           (!workload->owner_kind.empty() && a.Targets(workload->owner_kind, workload->owner_name));
  };
  if (std::any_of(autoscalers.begin(), autoscalers.end(), scaled)) return Disruptor::kScaleDown;
  return Disruptor::kNone;
}

std::optional<WorkloadRef> WorkloadToRead(const PodInfo& pod) {
  if (!IsApps(pod.owner_api_version)) return std::nullopt;
  if (pod.owner_kind == "ReplicaSet" || pod.owner_kind == "StatefulSet" ||
      pod.owner_kind == "DaemonSet")
    return WorkloadRef{pod.owner_kind, pod.owner_name};
  return std::nullopt;
}

std::optional<WorkloadRef> OwnerToRead(const WorkloadStatus& read) {
  if (read.kind == "ReplicaSet" && read.owner_kind == "Deployment" &&
      IsApps(read.owner_api_version))
    return WorkloadRef{read.owner_kind, read.owner_name};
  return std::nullopt;
}

}  // namespace ds
