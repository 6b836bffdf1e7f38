// Would an evicted pod's replacement fit somewhere else? The filters of kube-scheduler that can
// be judged from the node cache: not the node it leaves, not a marked node (the replacement must
// not land on another hot node), not cordoned, NoSchedule/NoExecute taints tolerated, nodeSelector
// matched, and requests within allocatable minus what is already requested. Pods chosen in the
// same cycle reserve their room, so two replacements are not both counted into the last gap.
#pragma once

#include <string>
#include <vector>

#include "kube/pod_object.h"

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
};

// True when `pod` tolerates every NoSchedule and NoExecute taint of `node`.
bool ToleratesAll(const PodInfo& pod, const std::vector<Taint>& taints);

class Placement {
 public:
  explicit Placement(std::vector<PlacementNode> nodes);

  // The node (name) where `pod`, leaving `from`, would fit, reserving its requests there; or ""
  // when it fits nowhere (nothing is reserved). Chooses the node with the most room left
  // (least allocated), as the scheduler's default scoring leans that way.
  std::string Reserve(const PodInfo& pod, const std::string& from);

 private:
  std::vector<PlacementNode> nodes_;
};

}  // namespace ds
