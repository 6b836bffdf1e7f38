// Would an evicted pod's replacement fit somewhere else? kube-scheduler's filters, judged on the
// candidate node's whole labels, taints, allocatable and pods: not the node it leaves, not a
// marked node (the replacement must not land on another hot node), not cordoned
// (NodeUnschedulable), NoSchedule/NoExecute taints tolerated (TaintToleration), nodeSelector and
// required node affinity matched, matchFields too (NodeAffinity), every requested resource within
// allocatable minus what its pods request, the pod count among them (NodeResourcesFit), no host
// port taken (NodePorts), every bound volume's required node affinity (VolumeBinding: a zonal disk
// stays in its zone; claims whose volumes the caller did not read fit nowhere), required
// inter-pod affinity and anti-affinity, the pod's and those of
// the pods already there (InterPodAffinity), and DoNotSchedule topology spread
// (PodTopologySpread). A pod with a constraint these do not cover (PodInfo::unjudged: an unbound
// claim, a namespaceSelector, another scheduler) fits nowhere: never a guess. Pods chosen in the
// same cycle reserve their room, so two replacements are not both counted into the last gap.
//
// Inter-pod terms and spread count pods per topology domain. For kubernetes.io/hostname the
// domain is the node, whose pods are listed; for any other key (a zone) the caller lists the
// pods each term counts, with their nodes' value of the key (GroupLookup), and a term it could not
// list means no fit. Where the scheduler's answer needs what is not listed, the check takes the
// side that keeps the pod:
//   - spread: the scheduler lets a domain take the pod while its count, plus the pod, minus the
//     smallest count of any eligible domain stays within maxSkew. The smallest count needs every
//     domain of the cluster; it is never below 0, so count + 1 <= maxSkew is enough, and is
//     what is checked (on a cluster with an empty eligible node, the scheduler's own answer).
//   - affinity: the pods being evicted (this one and the cycle's other picks), terminating ones
//     and replacements only expected somewhere (ResidentPod::predicted) do not count as the pods
//     the replacement must join; for anti-affinity every pod counts,
//     the evicted one too; for a spread every pod but the evicted one (the scheduler skips a
//     terminating pod in a spread).
//   - the required anti-affinity of pods already placed: on the destination itself, from its own
//     pods; for a key other than the hostname (a pod on another node of the destination's zone
//     that keeps pods like this one out of the whole zone), from the guards the caller listed in
//     the pod's namespace (AddGuards); a guard whose node's domain is unknown keeps the pods its
//     term counts off every node with the key. A guard in another namespace whose term names this
//     pod's namespace (`namespaces`, or a namespaceSelector) is not seen: that would take every
//     pod of the cluster listed.
//
// Requests alone are what kube-scheduler judges, and a pod that uses far more than it requests
// (14 GiB requested, 28 GiB used) then fits by requests on nodes where it does not fit at all,
// and is evicted again by their kubelet. So where the node's real usage is known, the pod's real
// usage must fit too: the node's usage plus the pod's stays at or below the clear threshold of the
// rule being relieved (in percent of allocatable), and for memory below allocatable. Where a
// node's available memory bytes are known (a bytes-available rule, the kubelet's
// memory.available), the pod's working set must also leave at least that rule's clear threshold
// available there: a replacement must not push its new node toward the kubelet's eviction.
#pragma once

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kube/pod_object.h"
#include "rules/rule.h"

namespace ds {

// A pod bound to a node, as the inter-pod filters see it.
struct ResidentPod {
  std::string uid, ns;
  Labels labels;
  bool terminating = false;
  // A replacement expected there (reserved by this cycle's plan, or sent there by an eviction
  // since the node was listed): where it really lands is the scheduler's choice, so it keeps
  // pods away but is no company for a required affinity.
  bool predicted = false;
  std::vector<PodGroupTerm> anti_affinity;  // its required anti-affinity: the pods it keeps away
};
ResidentPod ResidentOf(const PodInfo& pod);

// A pod a group term counts (PodGroupTerm::Counts), with its node's value of the term's topology
// key ("": the node has no such label).
struct GroupMember {
  std::string uid;
  std::string domain;
  bool terminating = false;
};
// The members of each group term with a key other than the hostname, by PodGroupTerm::Id().
using GroupLookup = std::map<std::string, std::vector<GroupMember>>;

// A pod's required anti-affinity term with a topology key other than the hostname: the scheduler
// keeps every pod the term counts out of the guard's whole domain (its node's value of the key).
struct DomainGuard {
  PodGroupTerm term;
  std::string domain;
  bool known = true;  // false: its node could not be read, the domain is any
};

// True for the topology key whose domain is one node.
bool HostnameKey(const std::string& key);

// A node as a place where an evicted pod's replacement could run.
struct PlacementNode {
  std::string name;
  Labels labels;
  bool unschedulable = false;
  bool marked = false;  // carries our mark: replacements are steered away from it
  std::vector<Taint> taints;
  double allocatable_cpu = 0, allocatable_memory = 0;
  double requested_cpu = 0, requested_memory = 0;  // by the pods bound to it
  // Every other resource (NodeInfo::allocatable_other, "pods" among them; one not reported is 0,
  // as the scheduler takes it) and what its pods request of each ("pods": how many there are).
  std::vector<std::pair<std::string, double>> allocatable_other;
  std::vector<std::pair<std::string, double>> requested_other;
  std::vector<HostPort> host_ports;  // bound by its pods
  std::vector<ResidentPod> pods;     // bound to it (replacements sent its way among them)
  // Real usage (cores, bytes), e.g. from the rules' values; NaN: unknown, requests alone decide.
  double used_cpu = std::nan(""), used_memory = std::nan("");
  // Memory bytes available (a bytes-available rule's value on it) and the least that must stay
  // available (that rule's clear threshold); NaN: unknown, not judged.
  double available_memory = std::nan(""), available_floor = std::nan("");
  // Balance: the most the node's own pool lets it carry, in percent of allocatable cpu and
  // memory (a relative rule's mean plus its threshold offset; rebalance/pool_mean.h), so a
  // replacement never makes it stand out by the rule of its own pool; NaN: no such rule.
  double balance_ceiling[2] = {std::nan(""), std::nan("")};
};

// The real-usage test for one pod: `usage` (cores or bytes of `resource`) must keep a node's
// real usage at or below `ceiling_percent` of its allocatable (memory: also below allocatable).
// resource kNone or a NaN usage: no test.
struct UsageFit {
  Rule::Resource resource = Rule::Resource::kNone;
  double usage = std::nan("");
  double ceiling_percent = std::nan("");  // NaN: no ceiling but memory's allocatable
};

// True when `pod` tolerates every NoSchedule and NoExecute taint of `node`.
bool ToleratesAll(const PodInfo& pod, const std::vector<Taint>& taints);
// True when one of `pod`'s tolerations tolerates `taint` (any effect).
bool Tolerates(const PodInfo& pod, const Taint& taint);
// Would `pod`'s host ports collide with `used` (same port and protocol, an address in common)?
bool PortsCollide(const std::vector<HostPort>& pod, const std::vector<HostPort>& used);
// Adds `pod`'s requests beyond cpu and memory, and itself to the "pods" count, to `requested`.
void AddOtherRequests(const PodInfo& pod, std::vector<std::pair<std::string, double>>* requested);

class Placement {
 public:
  explicit Placement(std::vector<PlacementNode> nodes);

  // The node (name) where `pod`, leaving `from`, would fit, reserving its requests there; or ""
  // when it fits nowhere (nothing is reserved). Chooses the node with the most room left
  // (least allocated), as the scheduler's default scoring leans that way. With `fit`, a node whose
  // real usage is known must also fit the pod by real usage (see the top), which is then added
  // to the node's usage along with the requests.
  std::string Reserve(const PodInfo& pod, const std::string& from, const UsageFit& fit = {});
  // Would `pod` pass the scheduler's filters on any node but `from`, room included, real usage
  // not judged? Reserves nothing.
  bool FitsSomewhere(const PodInfo& pod, const std::string& from);
  // The members of group terms whose key is not the hostname, as the caller listed them (added
  // to those known; a term not among them fits nowhere).
  void AddGroups(GroupLookup groups);
  // From now on a pod fits only once the domain guards of its namespace were added (a caller
  // that never asks models no such pods).
  void RequireGuards() { guards_required_ = true; }
  // The domain guards of the pods of namespace `ns`.
  void AddGuards(const std::string& ns, std::vector<DomainGuard> guards);

 private:
  enum class Use { kAnti, kSpread, kAffinity };  // which pods a count takes (see the top)
  PlacementNode* Find(const PodInfo& pod, const std::string& from, const UsageFit& fit);
  bool InterPodFits(const PodInfo& pod, const PlacementNode& n) const;
  // How many pods `term` counts in `n`'s domain (it has the key), as `use` takes them; -1 when
  // they were not listed.
  int InDomain(const PodGroupTerm& term, const PlacementNode& n, Use use,
               const std::string& self) const;

  std::vector<PlacementNode> nodes_;
  GroupLookup groups_;
  std::vector<DomainGuard> guards_;
  std::set<std::string> guarded_;  // namespaces whose guards were added
  bool guards_required_ = false;
  std::set<std::string> leaving_;  // uids of the pods whose replacement was reserved a place
  // Replacements reserved a place: the node (index in nodes_) and the pod.
  std::vector<std::pair<size_t, ResidentPod>> placed_;
};

}  // namespace ds
