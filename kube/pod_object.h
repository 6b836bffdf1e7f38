// The slice of a Kubernetes Pod the rebalancer decides on, and decoders for the API's wire forms
// (a Pod, a PodList page). Pure functions of bytes; only what the decisions need is kept.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/label_selector.h"
#include "common/labels.h"
#include "common/node_selector.h"
#include "common/status.h"
#include "common/taint.h"

namespace ds {

struct Toleration {
  std::string key;           // empty with operator Exists: tolerates every taint
  std::string op = "Equal";  // Equal or Exists
  std::string value;
  std::string effect;  // empty: every effect
};

// A container port bound on the node (containers[].ports[].hostPort): two pods that bind the same
// port, protocol and address (an empty one is every address) cannot share a node.
struct HostPort {
  int32_t port = 0;
  std::string protocol = "TCP";
  std::string ip;  // "" or 0.0.0.0: every address
  bool operator==(const HostPort&) const = default;
};

// A group of pods counted in a topology: a required inter-pod affinity or anti-affinity term, or
// a topology spread constraint that is DoNotSchedule. The pods are those `selector` matches in
// `namespaces`, counted per value of the node label `topology_key` (a domain: one node for
// kubernetes.io/hostname, a zone for topology.kubernetes.io/zone).
struct PodGroupTerm {
  LabelSelector selector;  // matchLabels and matchExpressions, and matchLabelKeys merged in
  bool none = false;       // a null labelSelector: the term counts no pod
  // A term that could not be read (an unknown operator, a namespaceSelector by labels): it counts
  // every pod, so as another pod's anti-affinity it keeps every pod away (never a guess).
  bool all = false;
  std::vector<std::string> namespaces;  // empty: every namespace
  std::string topology_key;
  int32_t max_skew = 0;  // a spread constraint's maxSkew

  // Does the term count a pod of namespace `ns` with `labels`? (Inline: the pure decisions of
  // rebalance/ read it without the client's library.)
  bool Counts(const std::string& ns, const Labels& labels) const {
    if (all) return true;
    if (none) return false;
    if (!namespaces.empty() &&
        std::find(namespaces.begin(), namespaces.end(), ns) == namespaces.end())
      return false;
    return selector.Matches(labels);
  }
  // One string per distinct group (namespaces, selector, topology key), for maps.
  std::string Id() const {
    std::string id = all ? "all" : none ? "none" : selector.text();
    id += "|" + topology_key + "|";
    for (const std::string& n : namespaces) id += n + ",";
    return id;
  }
};

// Pod annotations the rebalancer reads; PodInfo::annotations keeps these and our own opt-out
// (rebalance/evictable.h kEvictOptOutAnnotation), no other.
// The cluster-autoscaler's (cluster-autoscaler/utils/drain/drain.go PodSafeToEvictKey): "false"
// says the pod must not be disrupted (the autoscaler keeps its node for it).
inline constexpr const char* kSafeToEvictAnnotation =
    "cluster-autoscaler.kubernetes.io/safe-to-evict";
// Set (any value) on a pod whose eviction is being carried out in the background, e.g. by
// KubeVirt's virt-controller on a virt-launcher pod while its VM live-migrates away; descheduler's
// EvictionsInBackground counts such a pod as an eviction in flight
// (pkg/descheduler/evictions/evictions.go EvictionInProgressAnnotationKey).
inline constexpr const char* kEvictionInProgressAnnotation =
    "descheduler.alpha.kubernetes.io/eviction-in-progress";

struct PodInfo {
  std::string ns, name, node;
  std::string uid;  // metadata.uid: `kubectl describe` finds an object's events by it
  // The controller owner (ownerReferences[controller=true]); kind empty for a bare pod.
  std::string owner_kind, owner_name, owner_api_version;
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  bool ready = false;
  bool terminating = false;  // metadata.deletionTimestamp is set
  int32_t priority = 0;
  std::string priority_class;
  bool mirror = false;         // a static pod's mirror (annotation kubernetes.io/config.mirror)
  bool local_storage = false;  // has an emptyDir or hostPath volume
  Labels labels;               // metadata.labels: a replacement of an evicted pod has the same
  Labels annotations;          // only the ones the rebalancer reads (see kSafeToEvictAnnotation)
  double created_wall = 0;     // epoch seconds
  double cpu_request = 0;      // cores
  double memory_request = 0;   // bytes, as the scheduler counts it: spec.overhead included
  double memory_overhead = 0;  // bytes: spec.overhead's memory (its RuntimeClass's), in the above
  Labels node_selector;        // spec.nodeSelector
  std::vector<Toleration> tolerations;
  // spec.affinity.nodeAffinity: the required terms (ORed; empty: none) and the preferred ones.
  std::vector<NodeSelectorTerm> required_affinity;
  std::vector<PreferredSchedulingTerm> preferred_affinity;
  std::vector<HostPort> host_ports;
  // Required podAffinity and podAntiAffinity terms (every one must hold), and the topology spread
  // constraints that are DoNotSchedule (ScheduleAnyway only scores).
  std::vector<PodGroupTerm> pod_affinity, pod_anti_affinity, spread;
  // Its persistentVolumeClaim volumes' claims; and, read by the rebalancer (ClaimPlace), each
  // one's bound volume's required node affinity, in the same order (each must hold: VolumeBinding).
  std::vector<std::string> claims;
  std::vector<std::vector<NodeSelectorTerm>> volume_affinity;
  // Effective requests of every other resource (pods aside): ephemeral-storage, hugepages-*,
  // extended resources such as nvidia.com/gpu; summed like cpu's.
  std::vector<std::pair<std::string, double>> other_requests;
  // Constraints the rebalancer's fit check does not judge, each named (e.g. "podAntiAffinity
  // (namespaceSelector)", "persistentVolumeClaim data (not bound)"): where the replacement may run
  // then depends on more than the destinations' labels, taints, allocatable and pods, so such a
  // pod is never evicted (placement.h).
  std::vector<std::string> unjudged;

  // The memory request the kubelet ranks evictions by under memory pressure
  // (rebalance/kubelet_order.h; GetResourceRequestQuantity in kubernetes pkg/api/v1/resource/
  // helpers.go): the overhead counts only on top of a request that is not zero, so a BestEffort
  // pod has none there, whatever its RuntimeClass adds, and exceeds it with any usage.
  double KubeletMemoryRequest() const {
    return memory_request - memory_overhead > 0 ? memory_request : 0;
  }
  // "namespace/name", for logs and maps.
  std::string Key() const { return ns + "/" + name; }
  // Who it is across a re-creation under the same name (a StatefulSet's): its uid, else Key().
  std::string Id() const { return uid.empty() ? Key() : uid; }
  // The workload the pod belongs to: "namespace/Kind/name", or "" for a bare pod.
  std::string Workload() const {
    return owner_kind.empty() ? "" : ns + "/" + owner_kind + "/" + owner_name;
  }
};

struct PodListPage {
  std::vector<PodInfo> items;
  std::string resource_version;
  std::string continue_token;
};

// Decodes one Pod object (GET, or an item of a list). Errors name what was wrong.
StatusOr<PodInfo> DecodePod(std::string body);
// Decodes one PodList page (GET /api/v1/pods).
StatusOr<PodListPage> DecodePodList(std::string body);

}  // namespace ds
