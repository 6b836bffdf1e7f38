// A Node taint (spec.taints[]): shared by the Kubernetes client (kube/), which decodes it, and the
// pure decisions (rules/, rebalance/), which must not depend on the client.
#pragma once

#include <string>

namespace ds {

struct Taint {
  std::string key, value, effect;  // effect: NoSchedule, PreferNoSchedule, NoExecute
  // core/v1 Taint.timeAdded (RFC 3339), as read; empty when absent. The node lifecycle controller
  // sets it on its NoExecute taints (node.kubernetes.io/unreachable, ...). A taint edit replaces
  // the whole list, so every taint we keep must be written back with it unchanged: dropping it
  // changes another controller's taint (and the admission policy refuses the write).
  std::string time_added = {};
  bool operator==(const Taint&) const = default;  // every field, timeAdded too
  // The taint's identity as scheduling sees it: key, value and effect (not when it was added).
  bool SameAs(const Taint& o) const {
    return key == o.key && value == o.value && effect == o.effect;
  }
};

}  // namespace ds
