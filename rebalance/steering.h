// Will an evicted pod's replacement stay off the node it leaves? The rebalancer evicts a pod only
// when it will: otherwise the replacement is scheduled by the same requests onto the same node,
// the node stays hot, and the next cycle evicts again (the loop peers' users keep reporting:
// kubernetes-sigs/descheduler #424, #994, #1695). The pod stands in for its template, which its
// replacement is made from. The scheduler keeps a replacement off our mark when
//   - its node affinity excludes the mark's value: every required term (ORed) fails on a node
//     with our key at that value, or the preferred terms that do outweigh all its other preferred
//     terms together (the NodeAffinity score then ranks the marked node below any node that
//     matches the same others), or
//   - the node carries our taint (mark: both) and the pod does not tolerate it (the
//     TaintToleration score ranks untainted nodes first).
// A required term that fails on the node for another reason (a label changed after scheduling)
// is not seen: the node cache keeps only our key of a marked node's labels. Pure.
#pragma once

#include <string>

#include "common/taint.h"
#include "kube/pod_object.h"

namespace ds {

enum class Steer {
  kNone,       // nothing keeps the replacement off the node: it would return
  kRequired,   // required node affinity excludes the mark
  kPreferred,  // a preferred node-affinity term excludes the mark
  kTaint,      // our taint, not tolerated
};

// "would_return", "required_affinity", "preferred_affinity", "taint".
const char* SteerName(Steer s);

// How `pod`'s replacement is kept off a node whose label `key` is `value` (empty: the node
// carries no label of ours, mark: taint) and that carries `taint` (null: no taint of ours on it).
Steer SteeredAway(const PodInfo& pod, const std::string& key, const std::string& value,
                  const Taint* taint);

// What to change in the pod's template so the next eviction can go ahead, for its Event: the
// affinity term to add against `value`, or (value empty) the toleration of `taint` to drop.
std::string SteeringAdvice(const std::string& key, const std::string& value, const Taint* taint);

}  // namespace ds
