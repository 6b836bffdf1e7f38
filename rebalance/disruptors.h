// Other disruptors: whoever else is already moving a pod, or its node, or its workload. An
// eviction on top of a cluster-autoscaler or Karpenter drain, a rollout, an HPA's scale-down or a
// live migration adds disruption that nobody asked for, and what it would relieve is about to
// change anyway; so the rebalancer leaves such a pod alone this cycle and says why (a metric label,
// /rebalance). A pure check of values read before the decision starts: the pod, its node, its
// workload's status and its namespace's autoscalers (the reads stage fetches them; WorkloadToRead
// says which objects).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kube/node_object.h"
#include "kube/pod_object.h"
#include "kube/workload_object.h"

namespace ds {

// The cluster-autoscaler's taint on a node it is deleting (cluster-autoscaler/utils/taints/
// taints.go ToBeDeletedTaint; NoSchedule, its value the Unix time it was set). Matched by key, as
// the autoscaler's own HasTaint does.
inline constexpr const char* kClusterAutoscalerDeletingTaint = "ToBeDeletedByClusterAutoscaler";
// Karpenter's taint on a node its disruption or termination controller is taking away (karpenter
// pkg/apis/v1/taints.go DisruptedNoScheduleTaint). Matched by key and effect, as Karpenter's
// MatchTaint does.
inline constexpr const char* kKarpenterDisruptedTaint = "karpenter.sh/disrupted";
inline constexpr const char* kKarpenterDisruptedEffect = "NoSchedule";
// Karpenter before v1 (v0.3x): karpenter.sh/disruption=disrupting:NoSchedule on the node it takes.
inline constexpr const char* kKarpenterLegacyDisruptionTaint = "karpenter.sh/disruption";

enum class Disruptor {
  kNone,                  // nobody else is moving it: the rebalancer may
  kNodeRemoval,           // its node is being drained for removal (cluster-autoscaler, Karpenter)
  kSafeToEvictFalse,      // annotated cluster-autoscaler.kubernetes.io/safe-to-evict: "false"
  kEvictingInBackground,  // its eviction is already under way in the background (a VM migrating)
  kRollout,               // its workload's rollout is in progress
  kScaleDown,             // an HPA is scaling its workload down
};

// Is a cluster-autoscaler or Karpenter taking `node` away (its taint above)? Such a node is not
// relieved at all: its pods all go with its drain.
bool NodeBeingRemoved(const NodeInfo& node);

// "node_removal", "safe_to_evict_false", "evicting_in_background", "rollout", "scale_down"
// ("none" for kNone): the label value for /metrics.
const char* DisruptorName(Disruptor d);

// The first reason not to evict `pod` now because another actor is disrupting it, or kNone.
// `node` is the pod's node. `workload` is the pod's top workload as read this cycle (a
// ReplicaSet's Deployment, else the ReplicaSet; a StatefulSet; a DaemonSet) or nullptr when
// unknown (a bare pod, an owner of another kind, or a read that failed; the caller decides what an
// unknown workload means). `autoscalers` are the HPAs of the pod's namespace; one counts when its
// scaleTargetRef names the workload, the workload's own controller (a custom resource that owns a
// ReplicaSet, as an Argo Rollout does), or, with no workload read, the pod's owner. The order
// only decides which reason is reported: the node's first, then the pod's own, then its
// workload's.
Disruptor OtherDisruptor(const PodInfo& pod, const NodeInfo& node, const WorkloadStatus* workload,
                         const std::vector<Autoscaler>& autoscalers);

// One workload object to GET (KubeApi::GetWorkload).
struct WorkloadRef {
  std::string kind, name;  // in the pod's namespace
  bool operator==(const WorkloadRef&) const = default;
};

// The first workload object to read for `pod`: its controller owner when that is an apps/v1
// ReplicaSet, StatefulSet or DaemonSet; nullopt for a bare pod or an owner of another kind (a Job,
// a custom resource), whose status we do not judge.
std::optional<WorkloadRef> WorkloadToRead(const PodInfo& pod);

// After reading `read`: the object above it to read next, i.e. the apps/v1 Deployment that owns a
// ReplicaSet; nullopt when `read` is the top one to judge (a ReplicaSet of no Deployment, or one
// owned by another kind, stays the workload judged).
std::optional<WorkloadRef> OwnerToRead(const WorkloadStatus& read);

}  // namespace ds
