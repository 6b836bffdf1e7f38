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
// Not modelled: PodTopologySpread (including the system default spreading constraints for pods
// owned by ReplicaSets), InterPodAffinity, ImageLocality, NodePorts, volumes, preemption,
// priority ordering. Ties: the first node in input order instead of a random pick.
#include "test/sched/scheduler_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "common/json_util.h"
#include "common/quantity.h"

namespace sim {
namespace {

constexpr int64_t kMaxScore = 100;
constexpr int64_t kWeightTaint = 3, kWeightAffinity = 2, kWeightFit = 1, kWeightBalanced = 1;
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
// null. Returns the index of the chosen node, or -1.
int Choose(const std::vector<SchedNode>& nodes, const std::vector<NodeRequests>& requested,
           const SchedPod& pod, ScheduleResult* res) {
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
    bool selector_ok = true;
    for (const auto& [k, v] : pod.node_selector) {
      auto it = n.labels.find(k);
      if (it == n.labels.end() || it->second != v) selector_ok = false;
    }
    bool required_ok = pod.required.empty();
    for (const auto& term : pod.required) required_ok = required_ok || TermMatches(term, n.labels);
    if (!selector_ok || !required_ok)
      why.push_back("node(s) didn't match Pod's node affinity/selector");
    if (u.pods + 1 > n.pods) why.push_back("Too many pods");
    if (pod.cpu_milli > 0 && u.cpu + pod.cpu_milli > n.cpu_milli) why.push_back("Insufficient cpu");
    if (pod.memory > 0 && u.memory + pod.memory > n.memory) why.push_back("Insufficient memory");
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
              s.balanced * kWeightBalanced;
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
                        const SchedPod& pod) {
  // By name: pods bound to a node not in `nodes` count nowhere.
  std::map<std::string, NodeRequests> by_name;
  for (const auto& p : bound)
    if (!p.node.empty()) by_name[p.node].Add(p);
  std::vector<NodeRequests> requested;
  requested.reserve(nodes.size());
  for (const auto& n : nodes) requested.push_back(by_name[n.name]);
  ScheduleResult res;
  const int i = Choose(nodes, requested, pod, &res);
  if (i >= 0) res.node = nodes[static_cast<size_t>(i)].name;
  return res;
}

int ChooseNode(const std::vector<SchedNode>& nodes, const std::vector<NodeRequests>& requested,
               const SchedPod& pod) {
  return Choose(nodes, requested, pod, nullptr);
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

NodeSelectorTerm TermFromJson(const rapidjson::Value& term) {
  NodeSelectorTerm out;
  const rapidjson::Value* exprs = ds::JsonMember(term, "matchExpressions");
  if (exprs == nullptr || !exprs->IsArray()) return out;
  for (const auto& e : exprs->GetArray()) {
    NodeSelectorRequirement r{ds::JsonString(e, "key"), ds::JsonString(e, "operator"), {}};
    if (const auto* vals = ds::JsonMember(e, "values"); vals && vals->IsArray())
      for (const auto& v : vals->GetArray())
        if (v.IsString()) r.values.push_back(v.GetString());
    out.push_back(std::move(r));
  }
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
  const auto* aff = ds::JsonMember(*spec, "affinity");
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

}  // namespace sim
