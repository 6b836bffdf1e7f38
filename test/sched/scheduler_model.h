// A model of kube-scheduler's default profile, shared by the Kubernetes API simulator (test/sim)
// and the effect simulation (bench/effect): which node a new pod would be bound to, given the
// nodes and the pods already bound. Pure functions of values: no clock, no randomness, no I/O.
// Formulas and sources: scheduler_model.cc. The namespace is the API simulator's, where the model
// was born.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sim {

struct Toleration {
  std::string key, op = "Equal", value, effect;  // op: Equal or Exists; effect "" = all effects
};

struct Taint {
  std::string key, value, effect;  // NoSchedule, PreferNoSchedule, NoExecute
};

// One requirement of a NodeSelectorTerm (matchExpressions; matchFields is not modelled).
struct NodeSelectorRequirement {
  std::string key, op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
};
using NodeSelectorTerm = std::vector<NodeSelectorRequirement>;  // ANDed

struct PreferredTerm {
  int32_t weight = 0;
  NodeSelectorTerm term;
};

// A metav1.LabelSelector: matchLabels (as In [value]) and matchExpressions, ANDed. A null
// selector (`set` false) selects nothing; a set one without requirements selects everything.
struct LabelSelector {
  bool set = false;
  std::vector<NodeSelectorRequirement> requirements;  // In, NotIn, Exists, DoesNotExist
};

// One requiredDuringSchedulingIgnoredDuringExecution term of podAffinity or podAntiAffinity.
// The pods it selects: in `namespaces` or in a namespace whose labels `namespace_selector`
// matches (no namespaces and a null selector: the owning pod's namespace), and matched by
// `selector` merged with the owner's labels named in match_label_keys (key In [value]) and
// mismatch_label_keys (key NotIn [value]), keys the owner lacks being ignored.
struct PodAffinityTerm {
  LabelSelector selector;
  std::vector<std::string> namespaces;
  LabelSelector namespace_selector;
  std::string topology_key;
  std::vector<std::string> match_label_keys, mismatch_label_keys;
};

// One topologySpreadConstraint with whenUnsatisfiable: DoNotSchedule (ScheduleAnyway ones are
// scoring only, not modelled, and PodFromJson drops them).
struct SpreadConstraint {
  int32_t max_skew = 1;
  std::string topology_key;
  LabelSelector selector;  // merged with the owner's labels named in match_label_keys
  std::vector<std::string> match_label_keys;
  int32_t min_domains = 1;          // absent: 1
  bool honor_node_affinity = true;  // nodeAffinityPolicy (absent: Honor)
  bool honor_node_taints = false;   // nodeTaintsPolicy (absent: Ignore)
};

// A PersistentVolumeClaim as VolumeBinding reads it.
struct SchedClaim {
  std::string volume_name;      // spec.volumeName
  bool bind_completed = false;  // annotation pv.kubernetes.io/bind-completed (the PV controller's)
  bool deleting = false;        // metadata.deletionTimestamp set
  bool lost = false;            // status.phase Lost (its PersistentVolume is gone)
};

// A PersistentVolume as VolumeBinding reads it: spec.nodeAffinity.required.
struct SchedVolume {
  bool has_required = false;               // required set (with no terms it matches no node)
  std::vector<NodeSelectorTerm> required;  // nodeSelectorTerms, ORed
};

// The cluster's claims and volumes, for the VolumeBinding filter.
struct SchedVolumes {
  std::map<std::string, SchedClaim> claims;    // "namespace/name"
  std::map<std::string, SchedVolume> volumes;  // by name
};

// What scheduling needs of a pod. Requests are the sums over its containers.
struct SchedPod {
  std::string ns;  // metadata.namespace
  std::map<std::string, std::string> labels;
  bool terminating = false;  // metadata.deletionTimestamp set
  std::string node;          // spec.nodeName ("" = not bound)
  int64_t cpu_milli = 0;     // requests as written (0 when absent)
  int64_t memory = 0;        // bytes
  bool cpu_set = false;      // some container requests cpu (else NonZero default applies)
  bool memory_set = false;   // likewise memory
  std::map<std::string, std::string> node_selector;
  std::vector<NodeSelectorTerm> required;  // ORed (requiredDuringScheduling...); empty: none
  std::vector<PreferredTerm> preferred;
  std::vector<Toleration> tolerations;
  std::vector<PodAffinityTerm> pod_affinity;       // required; all must hold
  std::vector<PodAffinityTerm> pod_anti_affinity;  // required; all must hold
  std::vector<SpreadConstraint> spread;            // DoNotSchedule constraints
  std::vector<std::string> claims;  // spec.volumes[].persistentVolumeClaim.claimName, in order
};

struct SchedNode {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  bool unschedulable = false;
  int64_t cpu_milli = 0;  // status.allocatable
  int64_t memory = 0;
  int64_t pods = 110;
};

// Per feasible node: each plugin's normalised score (0-100) and the weighted total.
struct NodeScore {
  std::string node;
  int64_t taint = 0, affinity = 0, fit = 0, balanced = 0, total = 0;
};

struct ScheduleResult {
  std::string node;                // "" when no node fits
  std::vector<NodeScore> scores;   // feasible nodes, in input order
  std::map<std::string, int> why;  // unfit reason -> node count, as in FailedScheduling
  std::string message;             // "0/3 nodes are available: ..." when node is ""
};

// Chooses a node for `pod` among `nodes`, given `bound` (pods already on nodes, terminating ones
// included: their resources are still held, and InterPodAffinity counts them; PodTopologySpread
// does not) and the cluster's claims and volumes (VolumeBinding; a pod without claims needs
// none). Ties go to the first node in `nodes` order (the real scheduler picks one of the best at
// random).
ScheduleResult Schedule(const std::vector<SchedNode>& nodes, const std::vector<SchedPod>& bound,
                        const SchedPod& pod, const SchedVolumes& volumes = SchedVolumes{});

// What the pods bound to one node request, summed: Schedule's view of a node's pods. A caller
// that places many pods (the effect simulation) keeps one per node and updates it as pods come
// and go, instead of handing every bound pod to each call.
struct NodeRequests {
  int64_t cpu = 0, memory = 0;                  // requests as written
  int64_t nonzero_cpu = 0, nonzero_memory = 0;  // with the NonZero defaults for absent requests
  int64_t pods = 0;
  void Add(const SchedPod& p);
  void Remove(const SchedPod& p);
};

// Schedule's decision alone, from the per-node sums (`requested[i]` belongs to `nodes[i]`): the
// index of the chosen node, or -1 when none fits. Same filters, scores and ties as Schedule,
// except InterPodAffinity and PodTopologySpread, which need the pods themselves: the sums carry
// no labels, and VolumeBinding, which needs the claims. REQUIRES: requested.size() ==
// nodes.size(); neither `pod` nor any pod counted in `requested` has a pod_affinity,
// pod_anti_affinity or spread entry; `pod` has no claims.
// `owner_pods` (optional; `owner_pods[i]` belongs to `nodes[i]`): the pods of `pod`'s owner (its
// ReplicaSet or StatefulSet) already on each node, for PodTopologySpread's system-default
// constraint on kubernetes.io/hostname (maxSkew 3, ScheduleAnyway; kube-scheduler applies it to a
// pod without constraints of its own that a ReplicaSet, StatefulSet, Service or
// ReplicationController selects), scored with the plugin's weight 2. Null: not scored (a Job's
// pod, or a caller that does not model it). The zone constraint is left out: the nodes carry no
// zone label, and the plugin then scores by hostname alone.
int ChooseNode(const std::vector<SchedNode>& nodes, const std::vector<NodeRequests>& requested,
               const SchedPod& pod, const std::vector<int32_t>* owner_pods = nullptr);

// Readers for the JSON objects (Node, Pod). Missing fields give defaults. PodFromJson keeps the
// label selectors as written; the match/mismatchLabelKeys merge happens when they are used.
SchedNode NodeFromJson(const rapidjson::Value& node);
SchedPod PodFromJson(const rapidjson::Value& pod);
// Adds a PersistentVolumeClaim (under "namespace/name") or a PersistentVolume (under its name).
void AddClaimFromJson(const rapidjson::Value& pvc, SchedVolumes* out);
void AddVolumeFromJson(const rapidjson::Value& pv, SchedVolumes* out);

}  // namespace sim
