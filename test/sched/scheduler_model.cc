// The scheduler model: kube-scheduler's default profile reduced to the plugins that decide where a
// plain ReplicaSet pod lands (Kubernetes v1.30 sources named below).
//
// Filters (a node must pass all):
//   NodeUnschedulable  spec.unschedulable nodes are out unless the pod tolerates
//                      node.kubernetes.io/unschedulable:NoSchedule
//                      (framework/plugins/nodeunschedulable/node_unschedulable.go)
//   NodeName           spec.nodeName, if set, must be this node (nodename/node_name.go)
//   TaintToleration    every NoSchedule and NoExecute taint must be tolerated
//                      (tainttoleration/taint_toleration.go)
//   NodeAffinity       spec.nodeSelector matches and one requiredDuringScheduling term matches
//                      (nodeaffinity/node_affinity.go, component-helpers nodeaffinity)
//   NodeResourcesFit   sum of requests (as written) of bound pods + this pod <= allocatable, for
//                      cpu and memory, and pod count < allocatable pods (noderesources/fit.go)
//   PodTopologySpread  DoNotSchedule constraints only (podtopologyspread/filtering.go, common.go).
//                      Eligible domains: the topology values of the nodes that carry every
//                      constraint's key and pass its node inclusion policies (nodeAffinityPolicy
//                      Honor by default: nodeSelector and required node affinity; nodeTaintsPolicy
//                      Ignore by default, Honor: no untolerated NoSchedule/NoExecute taint).
//                      A domain counts the pods of the incoming pod's namespace, not terminating,
//                      whose labels the selector matches (an empty selector counts none). Global
//                      minimum: the least count over eligible domains, 0 when there are fewer of
//                      them than minDomains (default 1). A node fails when it lacks the key, or
//                      when count(its domain) + (1 if the pod matches the selector) - minimum >
//                      maxSkew. matchLabelKeys: the pod's values for those keys ANDed to the
//                      selector (a null selector stays null).
//   InterPodAffinity   required terms only (interpodaffinity/filtering.go, framework/types.go
//                      AffinityTerm.Matches). Every pod bound to a listed node counts, terminating
//                      ones included. In order, the first failure being the node's reason:
//                      podAffinity: the node must carry each term's topology key, and some pod
//                      matching all terms must run in the node's domain of each key; unless no
//                      pod anywhere matches all terms and the pod matches all its own terms.
//                      podAntiAffinity: no pod matching a term in the node's domain of that
//                      term's key (a node without the key passes). Existing pods' required
//                      anti-affinity: no pod whose term matches the incoming pod in the node's
//                      domain of that term's key. Namespaces: a term's `namespaces`, or its
//                      namespaceSelector against the namespace's labels; the simulator keeps no
//                      Namespace objects, so a namespace's labels are only the automatic
//                      kubernetes.io/metadata.name=<name> (a selector on other namespace labels
//                      selects nothing). match/mismatchLabelKeys: merged into the selector with
//                      the owning pod's labels, as the API server does at pod creation.
//   VolumeBinding      (volumebinding/volume_binding.go PreFilter, binder.go checkBoundClaims,
//                      component-helpers storage/volume CheckNodeAffinity) for the pod's
//                      persistentVolumeClaim volumes. PreFilter, claim by claim, fails the pod on
//                      every node with: `persistentvolumeclaim "X" not found` (none in the pod's
//                      namespace), `persistentvolumeclaim "X" bound to non-existent
//                      persistentvolume "V"` (phase Lost), `persistentvolumeclaim "X" is being
//                      deleted`; then, when a claim is not fully bound (spec.volumeName and the
//                      PV controller's pv.kubernetes.io/bind-completed annotation), with "pod has
//                      unbound immediate PersistentVolumeClaims": StorageClasses are not
//                      modelled, so every claim binds Immediate (WaitForFirstConsumer's binding
//                      at scheduling time is not modelled). The message is then "0/N nodes are
//                      available: <reason>." without per-node counts, as FitError words a
//                      PreFilter rejection. Filter, for bound claims in order, the first failure
//                      being the node's reason: a PersistentVolume that does not exist, or whose
//                      spec.nodeAffinity.required matches none of its nodeSelectorTerms against
//                      the node's labels. Not modelled: generic ephemeral volumes, matchFields,
//                      CSI migration, VolumeZone, VolumeRestrictions, NodeVolumeLimits.
//
// Scores (each 0..100 per node, then multiplied by the plugin's weight and summed):
//   TaintToleration    count = PreferNoSchedule taints not tolerated; normalised in reverse:
//                      100 - count*100/max(count) (100 everywhere when max is 0)
//                      (helper/normalize_score.go DefaultNormalizeScore, reverse=true)
//   NodeAffinity       sum of weights of matching preferred terms; normalised:
//                      sum*100/max(sum) (all 0 when max is 0)  (DefaultNormalizeScore)
//   NodeResourcesFit   LeastAllocated, cpu and memory weight 1 each:
//                      ((alloc - req) * 100 / alloc) averaged; req = NonZeroRequested of the node +
//                      this pod, where a container without a request counts 100m cpu / 200 MiB
//                      (noderesources/least_allocated.go, scheduler/util/pod_resources.go)
//   BalancedAllocation fractions f = req/alloc (capped at 1) of cpu and memory with requests as
//                      written; score = (1 - |f_cpu - f_mem| / 2) * 100; skipped (0) for a pod
//                      that requests nothing (noderesources/balanced_allocation.go)
// All integer arithmetic truncates as Go's int64 does.
//
// Weights of the default profile (pkg/scheduler/apis/config/v1/default_plugins.go,
// getDefaultPlugins MultiPoint): TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1,
// NodeResourcesBalancedAllocation 1, PodTopologySpread 2, InterPodAffinity 2, ImageLocality 1.
// Not modelled: the scores of PodTopologySpread and InterPodAffinity, ScheduleAnyway constraints,
// the system default spreading constraints for pods owned by ReplicaSets (ScheduleAnyway, so
// scoring only), preferred pod (anti-)affinity, ImageLocality, NodePorts, the volume plugins
// other than VolumeBinding, preemption, priority ordering. Ties: the first node in input order
// instead of a random pick. Reasons: the model reports every failing filter of a node, where the
// real framework stops at the first (so a node can count under several reasons in the message).
#include "test/sched/scheduler_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <utility>

#include "common/json_util.h"
#include "common/quantity.h"

namespace sim {
namespace {

constexpr int64_t kMaxScore = 100;
constexpr int64_t kWeightTaint = 3, kWeightAffinity = 2, kWeightFit = 1, kWeightBalanced = 1;
constexpr int64_t kWeightSpread = 2;  // PodTopologySpread, as ChooseNode's owner_pods scores it
constexpr int64_t kDefaultMilliCpu = 100;                // scheduler/util DefaultMilliCPURequest
constexpr int64_t kDefaultMemory = 200LL * 1024 * 1024;  // DefaultMemoryRequest

bool Tolerates(const Toleration& t, const std::string& key, const std::string& value,
               const std::string& effect) {
  if (!t.effect.empty() && t.effect != effect) return false;
  if (t.op == "Exists") return t.key.empty() || t.key == key;
  return t.key == key && t.value == value;  // Equal (the default)
}

bool Tolerated(const std::vector<Toleration>& ts, const Taint& taint) {
  for (const auto& t : ts)
    if (Tolerates(t, taint.key, taint.value, taint.effect)) return true;
  return false;
}

bool RequirementMatches(const NodeSelectorRequirement& r,
                        const std::map<std::string, std::string>& labels) {
  auto it = labels.find(r.key);
  bool has = it != labels.end();
  auto in = [&] {
    return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
  };
  if (r.op == "In") return in();
  if (r.op == "NotIn") return !in();
  if (r.op == "Exists") return has;
  if (r.op == "DoesNotExist") return !has;
  if (r.op == "Gt" || r.op == "Lt") {
    if (!has || r.values.size() != 1) return false;
    char* end = nullptr;
    long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (end == it->second.c_str() || *end != '\0') return false;
    long long bound = std::strtoll(r.values[0].c_str(), nullptr, 10);
    return r.op == "Gt" ? v > bound : v < bound;
  }
  return false;
}

bool TermMatches(const NodeSelectorTerm& term, const std::map<std::string, std::string>& labels) {
  if (term.empty()) return false;  // an empty term matches no objects
  for (const auto& r : term)
    if (!RequirementMatches(r, labels)) return false;
  return true;
}

// spec.nodeSelector and the required node affinity terms (NodeAffinity's filter; also
// PodTopologySpread's nodeAffinityPolicy Honor).
bool NodeAffinityMatches(const SchedPod& pod, const std::map<std::string, std::string>& labels) {
  for (const auto& [k, v] : pod.node_selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  if (pod.required.empty()) return true;
  for (const auto& term : pod.required)
    if (TermMatches(term, labels)) return true;
  return false;
}

// Some NoSchedule or NoExecute taint of `n` that `pod` does not tolerate.
bool HasUntoleratedTaint(const SchedPod& pod, const SchedNode& n) {
  for (const auto& t : n.taints)
    if ((t.effect == "NoSchedule" || t.effect == "NoExecute") && !Tolerated(pod.tolerations, t))
      return true;
  return false;
}

bool SelectorMatches(const LabelSelector& s, const std::map<std::string, std::string>& labels) {
  if (!s.set) return false;
  for (const auto& r : s.requirements)
    if (!RequirementMatches(r, labels)) return false;
  return true;
}

// `s` with the owner's values of `match_keys` (key In [value]) and `mismatch_keys` (key NotIn
// [value]) ANDed to it; keys the owner lacks are ignored, and a null selector stays null.
LabelSelector WithLabelKeys(LabelSelector s, const std::vector<std::string>& match_keys,
                            const std::vector<std::string>& mismatch_keys,
                            const std::map<std::string, std::string>& owner) {
  if (!s.set) return s;
  for (const auto& k : match_keys)
    if (auto it = owner.find(k); it != owner.end())
      s.requirements.push_back({k, "In", {it->second}});
  for (const auto& k : mismatch_keys)
    if (auto it = owner.find(k); it != owner.end())
      s.requirements.push_back({k, "NotIn", {it->second}});
  return s;
}

// An affinity term with its owner's namespace and label keys applied (framework.AffinityTerm).
struct ResolvedTerm {
  const PodAffinityTerm* term;
  std::string owner_ns;
  LabelSelector selector;

  bool Selects(const SchedPod& p) const {
    const PodAffinityTerm& t = *term;
    bool in_ns;
    if (t.namespaces.empty() && !t.namespace_selector.set) {
      in_ns = p.ns == owner_ns;
    } else {
      in_ns = std::find(t.namespaces.begin(), t.namespaces.end(), p.ns) != t.namespaces.end() ||
              SelectorMatches(t.namespace_selector, {{"kubernetes.io/metadata.name", p.ns}});
    }
    return in_ns && SelectorMatches(selector, p.labels);
  }
};

ResolvedTerm Resolve(const PodAffinityTerm& t, const SchedPod& owner) {
  return {&t, owner.ns,
          WithLabelKeys(t.selector, t.match_label_keys, t.mismatch_label_keys, owner.labels)};
}

bool SelectsAll(const std::vector<ResolvedTerm>& terms, const SchedPod& p) {
  if (terms.empty()) return false;
  for (const auto& t : terms)
    if (!t.Selects(p)) return false;
  return true;
}

// The bound pods of each node (`nodes[i]`'s at [i]).
using PodsByNode = std::vector<std::vector<const SchedPod*>>;

constexpr char kReasonAffinity[] = "node(s) didn't match pod affinity rules";
constexpr char kReasonAntiAffinity[] = "node(s) didn't match pod anti-affinity rules";
constexpr char kReasonExistingAntiAffinity[] =
    "node(s) didn't satisfy existing pods anti-affinity rules";
constexpr char kReasonVolumeNodeConflict[] = "node(s) had volume node affinity conflict";
constexpr char kReasonVolumeMissing[] =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
constexpr char kReasonSpread[] = "node(s) didn't match pod topology spread constraints";
constexpr char kReasonSpreadLabel[] =
    "node(s) didn't match pod topology spread constraints (missing required label)";

// InterPodAffinity's PreFilter: matching pods counted per (topology key, value).
class InterPodAffinity {
 public:
  InterPodAffinity(const std::vector<SchedNode>& nodes, const PodsByNode& pods,
                   const SchedPod& pod) {
    for (const auto& t : pod.pod_affinity) affinity_.push_back(Resolve(t, pod));
    for (const auto& t : pod.pod_anti_affinity) anti_.push_back(Resolve(t, pod));
    self_match_ = SelectsAll(affinity_, pod);
    for (size_t i = 0; i < nodes.size(); ++i) {
      const auto& labels = nodes[i].labels;
      auto count = [&](Counts* c, const std::string& key) {
        if (auto it = labels.find(key); it != labels.end()) ++(*c)[{key, it->second}];
      };
      for (const SchedPod* p : pods[i]) {
        if (SelectsAll(affinity_, *p))
          for (const auto& t : affinity_) count(&affinity_counts_, t.term->topology_key);
        for (const auto& t : anti_)
          if (t.Selects(*p)) count(&anti_counts_, t.term->topology_key);
        for (const auto& term : p->pod_anti_affinity)
          if (Resolve(term, *p).Selects(pod)) count(&existing_anti_counts_, term.topology_key);
      }
    }
  }

  // The reason `n` fails, or nullptr.
  const char* Reason(const SchedNode& n) const {
    bool pods_exist = true;
    for (const auto& t : affinity_) {
      auto it = n.labels.find(t.term->topology_key);
      if (it == n.labels.end()) return kReasonAffinity;
      if (Count(affinity_counts_, t.term->topology_key, it->second) <= 0) pods_exist = false;
    }
    // The first of a group of pods with affinity to one another may go anywhere.
    if (!pods_exist && !(affinity_counts_.empty() && self_match_)) return kReasonAffinity;
    for (const auto& t : anti_) {
      auto it = n.labels.find(t.term->topology_key);
      if (it != n.labels.end() && Count(anti_counts_, it->first, it->second) > 0)
        return kReasonAntiAffinity;
    }
    for (const auto& [k, v] : n.labels)
      if (Count(existing_anti_counts_, k, v) > 0) return kReasonExistingAntiAffinity;
    return nullptr;
  }

 private:
  using Counts = std::map<std::pair<std::string, std::string>, int64_t>;
  static int64_t Count(const Counts& c, const std::string& key, const std::string& value) {
    auto it = c.find({key, value});
    return it == c.end() ? 0 : it->second;
  }

  std::vector<ResolvedTerm> affinity_, anti_;
  bool self_match_ = false;      // the pod matches all its own affinity terms
  Counts affinity_counts_;       // pods matching all of affinity_, by the domain they run in
  Counts anti_counts_;           // pods matching a term of anti_, by that term's domain
  Counts existing_anti_counts_;  // pods with a term matching the pod, by that term's domain
};

// PodTopologySpread's PreFilter for the DoNotSchedule constraints: matching pods per domain.
class TopologySpread {
 public:
  TopologySpread(const std::vector<SchedNode>& nodes, const PodsByNode& pods, const SchedPod& pod)
      : pod_(pod), counts_(pod.spread.size()), min_(pod.spread.size(), 0) {
    for (const auto& c : pod.spread)
      selectors_.push_back(WithLabelKeys(c.selector, c.match_label_keys, {}, pod.labels));
    for (size_t i = 0; i < nodes.size(); ++i) {
      const SchedNode& n = nodes[i];
      if (!HasAllKeys(n)) continue;
      for (size_t c = 0; c < pod.spread.size(); ++c) {
        const SpreadConstraint& sc = pod.spread[c];
        if (sc.honor_node_affinity && !NodeAffinityMatches(pod, n.labels)) continue;
        if (sc.honor_node_taints && HasUntoleratedTaint(pod, n)) continue;
        int64_t matching = 0;
        // An empty selector counts no pod (countPodsMatchSelector), though the pod matches it.
        if (!(selectors_[c].set && selectors_[c].requirements.empty()))
          for (const SchedPod* p : pods[i])
            if (!p->terminating && p->ns == pod.ns && SelectorMatches(selectors_[c], p->labels))
              ++matching;
        counts_[c][n.labels.at(sc.topology_key)] += matching;
      }
    }
    for (size_t c = 0; c < pod.spread.size(); ++c) {
      if (counts_[c].size() < static_cast<size_t>(std::max(0, pod.spread[c].min_domains))) continue;
      min_[c] = std::numeric_limits<int32_t>::max();  // no eligible domain: nothing to exceed
      for (const auto& [value, count] : counts_[c]) min_[c] = std::min(min_[c], count);
    }
  }

  // The reason `n` fails, or nullptr.
  const char* Reason(const SchedNode& n) const {
    for (size_t c = 0; c < pod_.spread.size(); ++c) {
      const SpreadConstraint& sc = pod_.spread[c];
      auto it = n.labels.find(sc.topology_key);
      if (it == n.labels.end()) return kReasonSpreadLabel;
      auto count = counts_[c].find(it->second);
      const int64_t matching = count == counts_[c].end() ? 0 : count->second;
      const int64_t self = SelectorMatches(selectors_[c], pod_.labels) ? 1 : 0;
      if (matching + self - min_[c] > sc.max_skew) return kReasonSpread;
    }
    return nullptr;
  }

 private:
  bool HasAllKeys(const SchedNode& n) const {
    for (const auto& sc : pod_.spread)
      if (n.labels.count(sc.topology_key) == 0) return false;
    return true;
  }

  const SchedPod& pod_;
  std::vector<LabelSelector> selectors_;                // per constraint, label keys merged
  std::vector<std::map<std::string, int64_t>> counts_;  // per constraint: domain -> pods
  std::vector<int64_t> min_;                            // per constraint: global minimum
};

// VolumeBinding's PreFilter: the claims' volumes in the pod's order (null where a volume does
// not exist), or the reason the pod fits no node.
std::string VolumePreFilter(const SchedPod& pod, const SchedVolumes& cluster,
                            std::vector<const SchedVolume*>* volumes) {
  std::vector<const SchedClaim*> claims;
  for (const auto& name : pod.claims) {
    auto it = cluster.claims.find(pod.ns + "/" + name);
    if (it == cluster.claims.end()) return "persistentvolumeclaim \"" + name + "\" not found";
    const SchedClaim& c = it->second;
    if (c.lost)
      return "persistentvolumeclaim \"" + name + "\" bound to non-existent persistentvolume \"" +
             c.volume_name + "\"";
    if (c.deleting) return "persistentvolumeclaim \"" + name + "\" is being deleted";
    claims.push_back(&c);
  }
  for (const SchedClaim* c : claims)
    if (c->volume_name.empty() || !c->bind_completed)
      return "pod has unbound immediate PersistentVolumeClaims";
  for (const SchedClaim* c : claims) {
    auto it = cluster.volumes.find(c->volume_name);
    volumes->push_back(it == cluster.volumes.end() ? nullptr : &it->second);
  }
  return "";
}

// VolumeBinding's Filter for bound claims: the reason `n` fails, or nullptr.
const char* VolumeReason(const std::vector<const SchedVolume*>& volumes, const SchedNode& n) {
  for (const SchedVolume* v : volumes) {
    if (v == nullptr) return kReasonVolumeMissing;
    if (!v->has_required) continue;
    bool match = false;
    for (const auto& term : v->required) match = match || TermMatches(term, n.labels);
    if (!match) return kReasonVolumeNodeConflict;
  }
  return nullptr;
}

int64_t LeastRequested(int64_t requested, int64_t capacity) {
  if (capacity <= 0 || requested > capacity) return 0;
  return (capacity - requested) * kMaxScore / capacity;
}

// DefaultNormalizeScore.
void Normalize(std::vector<int64_t>* scores, bool reverse) {
  int64_t max = 0;
  for (int64_t s : *scores) max = std::max(max, s);
  for (int64_t& s : *scores) {
    if (max == 0) {
      s = reverse ? kMaxScore : s;
      continue;
    }
    s = kMaxScore * s / max;
    if (reverse) s = kMaxScore - s;
  }
}

// The filters and scores for `pod`; fills `res` (scores, unfit reasons, message) when it is not
// null. `pods` (the bound pods by node) and `cluster_volumes` are null for ChooseNode, which then
// skips the filters that need them. Returns the index of the chosen node, or -1.
int Choose(const std::vector<SchedNode>& nodes, const std::vector<NodeRequests>& requested,
           const PodsByNode* pods, const SchedVolumes* cluster_volumes, const SchedPod& pod,
           ScheduleResult* res, const std::vector<int32_t>* owner_pods = nullptr) {
  std::vector<const SchedVolume*> volumes;
  if (cluster_volumes != nullptr && !pod.claims.empty()) {
    const std::string reason = VolumePreFilter(pod, *cluster_volumes, &volumes);
    if (!reason.empty()) {
      if (res != nullptr) {
        res->why[reason] = static_cast<int>(nodes.size());
        res->message =
            "0/" + std::to_string(nodes.size()) + " nodes are available: " + reason + ".";
      }
      return -1;
    }
  }
  std::optional<TopologySpread> spread;
  std::optional<InterPodAffinity> inter_pod;
  if (pods != nullptr) {
    if (!pod.spread.empty()) spread.emplace(nodes, *pods, pod);
    inter_pod.emplace(nodes, *pods, pod);
  }
  std::vector<size_t> feasible;
  std::vector<std::string> why;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const SchedNode& n = nodes[i];
    const NodeRequests& u = requested[i];
    why.clear();
    if (!pod.node.empty() && pod.node != n.name)
      why.push_back("node(s) didn't match Pod's node name");
    if (n.unschedulable &&
        !Tolerated(pod.tolerations, Taint{"node.kubernetes.io/unschedulable", "", "NoSchedule"}))
      why.push_back("node(s) were unschedulable");
    for (const auto& t : n.taints) {
      if ((t.effect == "NoSchedule" || t.effect == "NoExecute") && !Tolerated(pod.tolerations, t)) {
        why.push_back("node(s) had untolerated taint {" + t.key + ": " + t.value + "}");
        break;
      }
    }
    if (!NodeAffinityMatches(pod, n.labels))
      why.push_back("node(s) didn't match Pod's node affinity/selector");
    if (u.pods + 1 > n.pods) why.push_back("Too many pods");
    if (pod.cpu_milli > 0 && u.cpu + pod.cpu_milli > n.cpu_milli) why.push_back("Insufficient cpu");
    if (pod.memory > 0 && u.memory + pod.memory > n.memory) why.push_back("Insufficient memory");
    if (spread)
      if (const char* r = spread->Reason(n)) why.push_back(r);
    if (inter_pod)
      if (const char* r = inter_pod->Reason(n)) why.push_back(r);
    if (const char* r = VolumeReason(volumes, n)) why.push_back(r);
    if (why.empty()) {
      feasible.push_back(i);
    } else if (res != nullptr) {
      for (const auto& w : why) ++res->why[w];
    }
  }
  if (feasible.empty()) {
    if (res == nullptr) return -1;
    res->message = "0/" + std::to_string(nodes.size()) + " nodes are available";
    std::string sep = ": ";
    for (const auto& [w, count] : res->why) {
      res->message += sep + std::to_string(count) + " " + w;
      sep = ", ";
    }
    res->message += ".";
    return -1;
  }

  std::vector<int64_t> taint(feasible.size()), affinity(feasible.size());
  const bool best_effort = pod.cpu_milli == 0 && pod.memory == 0;
  for (size_t i = 0; i < feasible.size(); ++i) {
    const SchedNode& n = nodes[feasible[i]];
    for (const auto& t : n.taints)
      if (t.effect == "PreferNoSchedule" && !Tolerated(pod.tolerations, t)) ++taint[i];
    for (const auto& p : pod.preferred)
      if (TermMatches(p.term, n.labels)) affinity[i] += p.weight;
  }
  Normalize(&taint, true);
  Normalize(&affinity, false);
  // PodTopologySpread's system default on the hostname (podtopologyspread/scoring.go): a node's
  // raw score is its count of the owner's pods x log(feasible nodes + 2) + maxSkew - 1, rounded;
  // normalised as MaxNodeScore x (max + min - score) / max, so fewer of the owner's pods score
  // higher.
  std::vector<int64_t> spread_score(feasible.size(), 0);
  if (owner_pods != nullptr) {
    const double weight = std::log(static_cast<double>(feasible.size()) + 2);
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (size_t i = 0; i < feasible.size(); ++i) {
      const int64_t cnt = (*owner_pods)[feasible[i]];
      spread_score[i] = static_cast<int64_t>(std::llround(static_cast<double>(cnt) * weight + 2));
      lo = std::min(lo, spread_score[i]);
      hi = std::max(hi, spread_score[i]);
    }
    for (int64_t& s : spread_score) s = hi == 0 ? kMaxScore : kMaxScore * (hi + lo - s) / hi;
  }
  int best = -1;
  int64_t best_total = 0;
  for (size_t i = 0; i < feasible.size(); ++i) {
    const SchedNode& n = nodes[feasible[i]];
    NodeRequests u = requested[feasible[i]];
    u.Add(pod);
    NodeScore s;
    s.taint = taint[i];
    s.affinity = affinity[i];
    s.fit =
        (LeastRequested(u.nonzero_cpu, n.cpu_milli) + LeastRequested(u.nonzero_memory, n.memory)) /
        2;
    if (!best_effort && n.cpu_milli > 0 && n.memory > 0) {
      double fc = std::min(1.0, static_cast<double>(u.cpu) / static_cast<double>(n.cpu_milli));
      double fm = std::min(1.0, static_cast<double>(u.memory) / static_cast<double>(n.memory));
      s.balanced = static_cast<int64_t>((1 - std::abs((fc - fm) / 2)) * kMaxScore);
    }
    s.total = s.taint * kWeightTaint + s.affinity * kWeightAffinity + s.fit * kWeightFit +
              s.balanced * kWeightBalanced + spread_score[i] * kWeightSpread;
    if (best < 0 || s.total > best_total) {
      best = static_cast<int>(feasible[i]);
      best_total = s.total;
    }
    if (res != nullptr) {
      s.node = n.name;
      res->scores.push_back(std::move(s));
    }
  }
  return best;
}

}  // namespace

void NodeRequests::Add(const SchedPod& p) {
  cpu += p.cpu_milli;
  memory += p.memory;
  nonzero_cpu += p.cpu_set ? p.cpu_milli : kDefaultMilliCpu;
  nonzero_memory += p.memory_set ? p.memory : kDefaultMemory;
  ++pods;
}

void NodeRequests::Remove(const SchedPod& p) {
  cpu -= p.cpu_milli;
  memory -= p.memory;
  nonzero_cpu -= p.cpu_set ? p.cpu_milli : kDefaultMilliCpu;
  nonzero_memory -= p.memory_set ? p.memory : kDefaultMemory;
  --pods;
}

ScheduleResult Schedule(const std::vector<SchedNode>& nodes, const std::vector<SchedPod>& bound,
                        const SchedPod& pod, const SchedVolumes& volumes) {
  // By name: pods bound to a node not in `nodes` count nowhere.
  std::map<std::string, NodeRequests> by_name;
  std::map<std::string, std::vector<const SchedPod*>> pods_by_name;
  for (const auto& p : bound)
    if (!p.node.empty()) {
      by_name[p.node].Add(p);
      pods_by_name[p.node].push_back(&p);
    }
  std::vector<NodeRequests> requested;
  requested.reserve(nodes.size());
  PodsByNode pods;
  pods.reserve(nodes.size());
  for (const auto& n : nodes) {
    requested.push_back(by_name[n.name]);
    pods.push_back(pods_by_name[n.name]);
  }
  ScheduleResult res;
  const int i = Choose(nodes, requested, &pods, &volumes, pod, &res);
  if (i >= 0) res.node = nodes[static_cast<size_t>(i)].name;
  return res;
}

int ChooseNode(const std::vector<SchedNode>& nodes, const std::vector<NodeRequests>& requested,
               const SchedPod& pod, const std::vector<int32_t>* owner_pods) {
  return Choose(nodes, requested, nullptr, nullptr, pod, nullptr, owner_pods);
}

namespace {

// A quantity (common/quantity.h) in whole milli-units (`milli`: cpu) or units, rounded up.
bool ReadQuantity(const std::string& s, bool milli, int64_t* out) {
  double units = 0;
  if (!ds::ParseQuantity(s, &units)) return false;
  *out = static_cast<int64_t>(std::ceil(milli ? units * 1000 - 1e-9 : units - 1e-9));
  return true;
}

std::map<std::string, std::string> StringMap(const rapidjson::Value* v) {
  std::map<std::string, std::string> out;
  if (v == nullptr || !v->IsObject()) return out;
  for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it)
    if (it->value.IsString()) out[it->name.GetString()] = it->value.GetString();
  return out;
}

std::vector<std::string> Strings(const rapidjson::Value* v) {
  std::vector<std::string> out;
  if (v == nullptr || !v->IsArray()) return out;
  for (const auto& s : v->GetArray())
    if (s.IsString()) out.push_back(s.GetString());
  return out;
}

int32_t Int(const rapidjson::Value& v, const char* name, int32_t def) {
  const rapidjson::Value* m = ds::JsonMember(v, name);
  return m != nullptr && m->IsInt() ? m->GetInt() : def;
}

// The matchExpressions of a node selector term or a label selector.
std::vector<NodeSelectorRequirement> ExpressionsFromJson(const rapidjson::Value& v) {
  std::vector<NodeSelectorRequirement> out;
  const rapidjson::Value* exprs = ds::JsonMember(v, "matchExpressions");
  if (exprs == nullptr || !exprs->IsArray()) return out;
  for (const auto& e : exprs->GetArray())
    out.push_back({ds::JsonString(e, "key"), ds::JsonString(e, "operator"),
                   Strings(ds::JsonMember(e, "values"))});
  return out;
}

NodeSelectorTerm TermFromJson(const rapidjson::Value& term) { return ExpressionsFromJson(term); }

// Absent or null: a null selector.
LabelSelector SelectorFromJson(const rapidjson::Value* v) {
  LabelSelector s;
  if (v == nullptr || !v->IsObject()) return s;
  s.set = true;
  for (const auto& [k, val] : StringMap(ds::JsonMember(*v, "matchLabels")))
    s.requirements.push_back({k, "In", {val}});
  for (auto& r : ExpressionsFromJson(*v)) s.requirements.push_back(std::move(r));
  return s;
}

// The required terms of spec.affinity.<kind> (podAffinity or podAntiAffinity).
std::vector<PodAffinityTerm> AffinityTermsFromJson(const rapidjson::Value* affinity,
                                                   const char* kind) {
  std::vector<PodAffinityTerm> out;
  const auto* a = affinity != nullptr ? ds::JsonMember(*affinity, kind) : nullptr;
  const auto* terms =
      a != nullptr ? ds::JsonMember(*a, "requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
  if (terms == nullptr || !terms->IsArray()) return out;
  for (const auto& t : terms->GetArray())
    out.push_back({SelectorFromJson(ds::JsonMember(t, "labelSelector")),
                   Strings(ds::JsonMember(t, "namespaces")),
                   SelectorFromJson(ds::JsonMember(t, "namespaceSelector")),
                   ds::JsonString(t, "topologyKey"), Strings(ds::JsonMember(t, "matchLabelKeys")),
                   Strings(ds::JsonMember(t, "mismatchLabelKeys"))});
  return out;
}

}  // namespace

SchedNode NodeFromJson(const rapidjson::Value& node) {
  SchedNode n;
  if (const auto* meta = ds::JsonMember(node, "metadata")) {
    n.name = ds::JsonString(*meta, "name");
    n.labels = StringMap(ds::JsonMember(*meta, "labels"));
  }
  if (const auto* spec = ds::JsonMember(node, "spec")) {
    if (const auto* u = ds::JsonMember(*spec, "unschedulable"); u && u->IsBool())
      n.unschedulable = u->GetBool();
    if (const auto* taints = ds::JsonMember(*spec, "taints"); taints && taints->IsArray())
      for (const auto& t : taints->GetArray())
        n.taints.push_back(
            {ds::JsonString(t, "key"), ds::JsonString(t, "value"), ds::JsonString(t, "effect")});
  }
  if (const auto* st = ds::JsonMember(node, "status"))
    if (const auto* alloc = ds::JsonMember(*st, "allocatable")) {
      ReadQuantity(ds::JsonString(*alloc, "cpu"), true, &n.cpu_milli);
      ReadQuantity(ds::JsonString(*alloc, "memory"), false, &n.memory);
      ReadQuantity(ds::JsonString(*alloc, "pods", "110"), false, &n.pods);
    }
  return n;
}

SchedPod PodFromJson(const rapidjson::Value& pod) {
  SchedPod p;
  if (const auto* meta = ds::JsonMember(pod, "metadata")) {
    p.ns = ds::JsonString(*meta, "namespace");
    p.labels = StringMap(ds::JsonMember(*meta, "labels"));
    const auto* deleted = ds::JsonMember(*meta, "deletionTimestamp");
    p.terminating = deleted != nullptr && !deleted->IsNull();
  }
  const auto* spec = ds::JsonMember(pod, "spec");
  if (spec == nullptr || !spec->IsObject()) return p;
  p.node = ds::JsonString(*spec, "nodeName");
  p.node_selector = StringMap(ds::JsonMember(*spec, "nodeSelector"));
  if (const auto* cs = ds::JsonMember(*spec, "containers"); cs && cs->IsArray())
    for (const auto& c : cs->GetArray()) {
      const auto* res = ds::JsonMember(c, "resources");
      const auto* req = res ? ds::JsonMember(*res, "requests") : nullptr;
      int64_t v = 0;
      if (req && ReadQuantity(ds::JsonString(*req, "cpu"), true, &v)) {
        p.cpu_milli += v;
        p.cpu_set = true;
      }
      if (req && ReadQuantity(ds::JsonString(*req, "memory"), false, &v)) {
        p.memory += v;
        p.memory_set = true;
      }
    }
  if (const auto* ts = ds::JsonMember(*spec, "tolerations"); ts && ts->IsArray())
    for (const auto& t : ts->GetArray())
      p.tolerations.push_back({ds::JsonString(t, "key"), ds::JsonString(t, "operator", "Equal"),
                               ds::JsonString(t, "value"), ds::JsonString(t, "effect")});
  if (const auto* cs = ds::JsonMember(*spec, "topologySpreadConstraints"); cs && cs->IsArray())
    for (const auto& c : cs->GetArray()) {
      if (ds::JsonString(c, "whenUnsatisfiable") != "DoNotSchedule") continue;
      SpreadConstraint sc;
      sc.max_skew = Int(c, "maxSkew", 1);
      sc.topology_key = ds::JsonString(c, "topologyKey");
      sc.selector = SelectorFromJson(ds::JsonMember(c, "labelSelector"));
      sc.match_label_keys = Strings(ds::JsonMember(c, "matchLabelKeys"));
      sc.min_domains = Int(c, "minDomains", 1);
      sc.honor_node_affinity = ds::JsonString(c, "nodeAffinityPolicy", "Honor") != "Ignore";
      sc.honor_node_taints = ds::JsonString(c, "nodeTaintsPolicy", "Ignore") == "Honor";
      p.spread.push_back(std::move(sc));
    }
  if (const auto* vs = ds::JsonMember(*spec, "volumes"); vs && vs->IsArray())
    for (const auto& v : vs->GetArray())
      if (const auto* c = ds::JsonMember(v, "persistentVolumeClaim"); c && c->IsObject())
        p.claims.push_back(ds::JsonString(*c, "claimName"));
  const auto* aff = ds::JsonMember(*spec, "affinity");
  p.pod_affinity = AffinityTermsFromJson(aff, "podAffinity");
  p.pod_anti_affinity = AffinityTermsFromJson(aff, "podAntiAffinity");
  const auto* na = aff ? ds::JsonMember(*aff, "nodeAffinity") : nullptr;
  if (na == nullptr) return p;
  if (const auto* req = ds::JsonMember(*na, "requiredDuringSchedulingIgnoredDuringExecution"))
    if (const auto* terms = ds::JsonMember(*req, "nodeSelectorTerms"); terms && terms->IsArray())
      for (const auto& t : terms->GetArray()) p.required.push_back(TermFromJson(t));
  if (const auto* pref = ds::JsonMember(*na, "preferredDuringSchedulingIgnoredDuringExecution");
      pref && pref->IsArray())
    for (const auto& t : pref->GetArray()) {
      const auto* w = ds::JsonMember(t, "weight");
      const auto* term = ds::JsonMember(t, "preference");
      if (w && w->IsInt() && term) p.preferred.push_back({w->GetInt(), TermFromJson(*term)});
    }
  return p;
}

void AddClaimFromJson(const rapidjson::Value& pvc, SchedVolumes* out) {
  const auto* meta = ds::JsonMember(pvc, "metadata");
  if (meta == nullptr || !meta->IsObject()) return;
  SchedClaim c;
  const auto* deleted = ds::JsonMember(*meta, "deletionTimestamp");
  c.deleting = deleted != nullptr && !deleted->IsNull();
  if (const auto* ann = ds::JsonMember(*meta, "annotations"); ann && ann->IsObject())
    c.bind_completed = ann->HasMember("pv.kubernetes.io/bind-completed");
  if (const auto* spec = ds::JsonMember(pvc, "spec"); spec && spec->IsObject())
    c.volume_name = ds::JsonString(*spec, "volumeName");
  if (const auto* st = ds::JsonMember(pvc, "status"); st && st->IsObject())
    c.lost = ds::JsonString(*st, "phase") == "Lost";
  out->claims[ds::JsonString(*meta, "namespace") + "/" + ds::JsonString(*meta, "name")] = c;
}

void AddVolumeFromJson(const rapidjson::Value& pv, SchedVolumes* out) {
  const auto* meta = ds::JsonMember(pv, "metadata");
  if (meta == nullptr || !meta->IsObject()) return;
  SchedVolume v;
  const auto* spec = ds::JsonMember(pv, "spec");
  const auto* na = spec != nullptr ? ds::JsonMember(*spec, "nodeAffinity") : nullptr;
  const auto* req = na != nullptr ? ds::JsonMember(*na, "required") : nullptr;
  if (req != nullptr && req->IsObject()) {
    v.has_required = true;
    if (const auto* terms = ds::JsonMember(*req, "nodeSelectorTerms"); terms && terms->IsArray())
      for (const auto& t : terms->GetArray()) v.required.push_back(TermFromJson(t));
  }
  out->volumes[ds::JsonString(*meta, "name")] = std::move(v);
}

}  // namespace sim
