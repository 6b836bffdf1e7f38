// Would an evicted pod's replacement fit somewhere else? kube-scheduler's filters, judged on the
// candidate node's whole labels, taints, allocatable and pods: not the node it leaves, not a
// marked node (the replacement must not land on another hot node), not cordoned
// (NodeUnschedulable), NoSchedule/NoExecute taints tolerated (TaintToleration), nodeSelector and
// required node affinity matched, matchFields too (NodeAffinity), every requested resource within
// allocatable minus what its pods request, the pod count among them (NodeResourcesFit), no host
// port taken (NodePorts). A pod with a constraint these do not cover (PodInfo::unjudged: inter-pod
// affinity, topology spread, a bound volume, another scheduler) fits nowhere: never a guess. Pods
// chosen in the same cycle reserve their room, so two replacements are not both counted into the
// last gap.
//
// Requests alone are what kube-scheduler judges, and a pod that uses far more than it requests
// (14 GiB requested, 28 GiB used) then fits by requests on nodes where it does not fit at all,
// and is evicted again by their kubelet. So where the node's real usage is known, the pod's real
// usage must fit too: the node's usage plus the pod's stays at or below the clear threshold of the
// rule being relieved (in percent of allocatable), and for memory below allocatable.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "kube/pod_object.h"
#include "rules/rule.h"

namespace ds {

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
  // Real usage (cores, bytes), e.g. from the rules' values; NaN: unknown, requests alone decide.
  double used_cpu = std::nan(""), used_memory = std::nan("");
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

 private:
  std::vector<PlacementNode> nodes_;
};

}  // namespace ds
