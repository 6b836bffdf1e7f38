#include "rebalance/placement.h"

#include <cmath>

namespace ds {

bool Tolerates(const PodInfo& pod, const Taint& t) {
  for (const Toleration& tol : pod.tolerations) {
    if (!tol.effect.empty() && tol.effect != t.effect) continue;
    if (tol.op == "Exists" ? tol.key.empty() || tol.key == t.key
                           : tol.key == t.key && tol.value == t.value)
      return true;
  }
  return false;
}

bool ToleratesAll(const PodInfo& pod, const std::vector<Taint>& taints) {
  for (const Taint& t : taints) {
    if (t.effect != "NoSchedule" && t.effect != "NoExecute") continue;  // PreferNoSchedule scores
    if (!Tolerates(pod, t)) return false;
  }
  return true;
}

bool PortsCollide(const std::vector<HostPort>& pod, const std::vector<HostPort>& used) {
  auto any = [](const std::string& ip) { return ip.empty() || ip == "0.0.0.0"; };
  for (const HostPort& a : pod)
    for (const HostPort& b : used)
      if (a.port == b.port && a.protocol == b.protocol && (any(a.ip) || any(b.ip) || a.ip == b.ip))
        return true;
  return false;
}

namespace {

double* Slot(std::vector<std::pair<std::string, double>>* list, const std::string& name) {
  for (auto& [n, v] : *list)
    if (n == name) return &v;
  list->emplace_back(name, 0);
  return &list->back().second;
}

double Find(const std::vector<std::pair<std::string, double>>& list, const std::string& name) {
  for (const auto& [n, v] : list)
    if (n == name) return v;
  return 0;
}

// NodeResourcesFit beyond cpu and memory: every other resource the pod requests, and one more pod.
bool FitsOther(const PodInfo& pod, const PlacementNode& n) {
  if (Find(n.requested_other, "pods") + 1 > Find(n.allocatable_other, "pods")) return false;
  for (const auto& [name, want] : pod.other_requests)
    if (Find(n.requested_other, name) + want > Find(n.allocatable_other, name)) return false;
  return true;
}

}  // namespace

void AddOtherRequests(const PodInfo& pod, std::vector<std::pair<std::string, double>>* requested) {
  *Slot(requested, "pods") += 1;
  for (const auto& [name, v] : pod.other_requests) *Slot(requested, name) += v;
}

Placement::Placement(std::vector<PlacementNode> nodes) : nodes_(std::move(nodes)) {}

namespace {

// The node's real usage slot for the resource, or null when the fit does not judge usage.
double* UsedSlot(PlacementNode& n, const UsageFit& fit) {
  if (!std::isfinite(fit.usage)) return nullptr;
  if (fit.resource == Rule::Resource::kCpu) return &n.used_cpu;
  if (fit.resource == Rule::Resource::kMemory) return &n.used_memory;
  return nullptr;
}

// True unless the pod's working set would leave less than the floor available on the node.
bool FitsByAvailable(const PlacementNode& n, const UsageFit& fit) {
  if (fit.resource != Rule::Resource::kMemory || !std::isfinite(fit.usage)) return true;
  if (!std::isfinite(n.available_memory) || !std::isfinite(n.available_floor)) return true;
  return n.available_memory - fit.usage >= n.available_floor;
}

// True unless the node's known real usage plus the pod's would go over the ceiling.
bool FitsByUsage(PlacementNode& n, const UsageFit& fit) {
  if (!FitsByAvailable(n, fit)) return false;
  const double* used = UsedSlot(n, fit);
  if (used == nullptr || !std::isfinite(*used)) return true;  // unknown: requests decide
  const bool memory = fit.resource == Rule::Resource::kMemory;
  const double allocatable = memory ? n.allocatable_memory : n.allocatable_cpu;
  if (!(allocatable > 0)) return false;  // nothing to run it on
  const double after = (*used + fit.usage) / allocatable * 100;
  if (memory && !(after < 100)) return false;  // past allocatable the kubelet evicts
  if (const double own = n.balance_ceiling[memory ? 1 : 0]; !std::isnan(own) && after > own)
    return false;  // it would stand out in its own pool
  // At its clear threshold a rule lets a node go: that much is still room.
  return std::isnan(fit.ceiling_percent) || after <= fit.ceiling_percent;
}

}  // namespace

namespace {

// VolumeBinding, bound volumes: each claim's volume's required node affinity holds on the node.
// Claims whose volumes were not read (volume_affinity short) fit nowhere.
bool VolumesReach(const PodInfo& pod, const PlacementNode& n) {
  if (pod.volume_affinity.size() != pod.claims.size()) return false;
  for (const auto& terms : pod.volume_affinity)
    if (!RequiredTermsMatch(terms, n.name, n.labels)) return false;
  return true;
}

}  // namespace

ResidentPod ResidentOf(const PodInfo& pod) {
  return ResidentPod{pod.uid, pod.ns, pod.labels, pod.terminating, false, pod.pod_anti_affinity};
}

bool HostnameKey(const std::string& key) { return key == "kubernetes.io/hostname"; }

void Placement::AddGuards(const std::string& ns, std::vector<DomainGuard> guards) {
  if (!guarded_.insert(ns).second) return;
  guards_.insert(guards_.end(), std::make_move_iterator(guards.begin()),
                 std::make_move_iterator(guards.end()));
}

void Placement::AddGroups(GroupLookup groups) {
  for (auto& [id, members] : groups) groups_[id] = std::move(members);
}

int Placement::InDomain(const PodGroupTerm& term, const PlacementNode& n, Use use,
                        const std::string& self) const {
  auto counted = [&](const std::string& uid, bool terminating, bool predicted) {
    if (use == Use::kAnti) return true;  // terminating, leaving, the pod itself: still there
    if (!uid.empty() && uid == self) return false;
    return use == Use::kSpread || (!terminating && !predicted && !leaving_.count(uid));
  };
  int count = 0;
  if (HostnameKey(term.topology_key)) {
    // The node is the domain (the kubelet sets the label to its own hostname).
    for (const ResidentPod& r : n.pods)
      count += counted(r.uid, r.terminating, r.predicted) && term.Counts(r.ns, r.labels);
    return count;
  }
  const std::string* domain = FindLabel(n.labels, term.topology_key);
  const auto members = groups_.find(term.Id());
  if (domain == nullptr || members == groups_.end()) return -1;
  for (const GroupMember& m : members->second)
    count += m.domain == *domain && counted(m.uid, m.terminating, false);
  // Replacements reserved a place this cycle are not among the listed pods yet (and are no
  // company: the scheduler may put them elsewhere).
  for (const auto& [i, r] : placed_) {
    if (use == Use::kAffinity) break;
    const std::string* there = FindLabel(nodes_[i].labels, term.topology_key);
    count += there != nullptr && *there == *domain && term.Counts(r.ns, r.labels);
  }
  return count;
}

bool Placement::InterPodFits(const PodInfo& pod, const PlacementNode& n) const {
  if (guards_required_ && !guarded_.count(pod.ns)) return false;
  // Pods elsewhere in the node's domain (a zone) that keep this one out of it.
  for (const DomainGuard& g : guards_) {
    const std::string* domain = FindLabel(n.labels, g.term.topology_key);
    if (domain != nullptr && (!g.known || g.domain == *domain) && g.term.Counts(pod.ns, pod.labels))
      return false;
  }
  // Replacements reserved this cycle whose zone-wide anti-affinity keeps this one out of the
  // node's domain (they are not among the listed guards).
  for (const auto& [i, r] : placed_)
    for (const PodGroupTerm& t : r.anti_affinity) {
      if (HostnameKey(t.topology_key)) continue;  // on its own node: among n.pods below
      const std::string* here = FindLabel(n.labels, t.topology_key);
      const std::string* there = FindLabel(nodes_[i].labels, t.topology_key);
      if (here != nullptr && there != nullptr && *here == *there && t.Counts(pod.ns, pod.labels))
        return false;
    }
  // The required anti-affinity of the pods already there (the node is in each of their domains
  // when it has the key).
  for (const ResidentPod& r : n.pods)
    for (const PodGroupTerm& t : r.anti_affinity)
      if (FindLabel(n.labels, t.topology_key) != nullptr && t.Counts(pod.ns, pod.labels))
        return false;
  for (const PodGroupTerm& t : pod.pod_anti_affinity) {
    if (FindLabel(n.labels, t.topology_key) == nullptr) continue;  // in no domain: none there
    if (InDomain(t, n, Use::kAnti, pod.uid) != 0) return false;
  }
  for (const PodGroupTerm& t : pod.pod_affinity)
    if (FindLabel(n.labels, t.topology_key) == nullptr ||
        InDomain(t, n, Use::kAffinity, pod.uid) <= 0)
      return false;
  for (const PodGroupTerm& t : pod.spread) {
    if (FindLabel(n.labels, t.topology_key) == nullptr) return false;
    const int count = InDomain(t, n, Use::kSpread, pod.uid);
    if (count < 0 || count + (t.Counts(pod.ns, pod.labels) ? 1 : 0) > t.max_skew) return false;
  }
  return true;
}

PlacementNode* Placement::Find(const PodInfo& pod, const std::string& from, const UsageFit& fit) {
  // The rebalancer leaves such pods out before (and names the reason); this keeps Placement right
  // for any caller.
  if (!pod.unjudged.empty()) return nullptr;
  PlacementNode* best = nullptr;
  double best_room = -1;
  for (PlacementNode& n : nodes_) {
    if (n.name == from || n.marked || n.unschedulable) continue;
    if (!ToleratesAll(pod, n.taints)) continue;
    bool selected = true;
    for (const auto& [k, v] : pod.node_selector) {
      const std::string* have = FindLabel(n.labels, k);
      if (have == nullptr || *have != v) selected = false;
    }
    if (!selected || !RequiredTermsMatch(pod.required_affinity, n.name, n.labels)) continue;
    if (!VolumesReach(pod, n)) continue;
    const double cpu_left = n.allocatable_cpu - n.requested_cpu;
    const double mem_left = n.allocatable_memory - n.requested_memory;
    if (pod.cpu_request > cpu_left || pod.memory_request > mem_left) continue;
    if (!FitsOther(pod, n) || PortsCollide(pod.host_ports, n.host_ports)) continue;
    if (!InterPodFits(pod, n) || !FitsByUsage(n, fit)) continue;
    // Least allocated after placing, averaged over the two resources (NodeResourcesFit's default).
    const double room =
        ((n.allocatable_cpu > 0 ? (cpu_left - pod.cpu_request) / n.allocatable_cpu : 0) +
         (n.allocatable_memory > 0 ? (mem_left - pod.memory_request) / n.allocatable_memory : 0)) /
        2;
    if (room > best_room) {
      best_room = room;
      best = &n;
    }
  }
  return best;
}

bool Placement::FitsSomewhere(const PodInfo& pod, const std::string& from) {
  return Find(pod, from, UsageFit{}) != nullptr;
}

std::string Placement::Reserve(const PodInfo& pod, const std::string& from, const UsageFit& fit) {
  PlacementNode* best = Find(pod, from, fit);
  if (best == nullptr) return "";
  best->requested_cpu += pod.cpu_request;
  best->requested_memory += pod.memory_request;
  AddOtherRequests(pod, &best->requested_other);
  best->host_ports.insert(best->host_ports.end(), pod.host_ports.begin(), pod.host_ports.end());
  if (double* used = UsedSlot(*best, fit); used != nullptr && std::isfinite(*used))
    *used += fit.usage;
  if (fit.resource == Rule::Resource::kMemory && std::isfinite(fit.usage))
    best->available_memory -= fit.usage;  // NaN stays NaN
  // The replacement is a new pod (no uid yet) with the pod's labels and terms.
  ResidentPod replacement = ResidentOf(pod);
  replacement.uid.clear();
  replacement.predicted = true;
  best->pods.push_back(replacement);
  placed_.emplace_back(static_cast<size_t>(best - nodes_.data()), std::move(replacement));
  if (!pod.uid.empty()) leaving_.insert(pod.uid);
  return best->name;
}

}  // namespace ds
