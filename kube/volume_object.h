// Where a PersistentVolumeClaim's volume can be used: the claim's bound PersistentVolume and its
// required node affinity, which kube-scheduler's VolumeBinding filter holds a pod to (a zonal
// disk is reachable from its zone only). Decoders of the API's wire forms; pure.
#pragma once

#include <string>
#include <vector>

#include "common/node_selector.h"
#include "common/status.h"

namespace ds {

struct ClaimPlace {
  std::string volume;  // the bound PersistentVolume (spec.volumeName); empty: not bound
  // Its spec.nodeAffinity.required terms (ORed; empty: usable from any node).
  std::vector<NodeSelectorTerm> node_affinity;
};

// A PersistentVolumeClaim: the volume it is bound to (status.phase Bound and spec.volumeName),
// or "" when it is not bound.
StatusOr<std::string> DecodeClaimVolume(std::string body);
// A PersistentVolume: its required node affinity terms, with its zone and region labels ANDed
// into each (VolumeZone). An unreadable term is an error (a guess could send the replacement
// where its volume cannot follow).
StatusOr<std::vector<NodeSelectorTerm>> DecodeVolumeNodeAffinity(std::string body);

}  // namespace ds
