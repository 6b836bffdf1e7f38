// A Node taint (spec.taints[]): shared by the Kubernetes client (kube/), which decodes it, and the
// pure decisions (rules/, rebalance/), which must not depend on the client.
#pragma once

#include <string>

namespace ds {

struct Taint {
  std::string key, value, effect;  // effect: NoSchedule, PreferNoSchedule, NoExecute
  bool operator==(const Taint&) const = default;
};

}  // namespace ds
