#include "rebalance/evictable.h"

#include <algorithm>

namespace ds {

const char* KeepName(Keep k) {
  switch (k) {
    case Keep::kNone:
      return "evictable";
    case Keep::kDaemonSet:
      return "daemonset";
    case Keep::kMirror:
      return "mirror";
    case Keep::kBare:
      return "no_controller";
    case Keep::kLocalStorage:
      return "local_storage";
    case Keep::kCritical:
      return "priority";
    case Keep::kTerminating:
      return "terminating";
    case Keep::kNotRunning:
      return "not_running";
    case Keep::kTooYoung:
      return "too_young";
    case Keep::kOptedOut:
      return "opted_out";
    case Keep::kNamespace:
      return "namespace";
  }
  return "unknown";
}

Keep CheckEvictable(const PodInfo& pod, const EvictablePolicy& policy, double now_wall) {
  auto listed = [](const std::vector<std::string>& list, const std::string& ns) {
    return std::find(list.begin(), list.end(), ns) != list.end();
  };
  // Cheapest and most definite first; the order only decides which reason is reported.
  if (pod.terminating) return Keep::kTerminating;
  if (pod.phase != "Running") return Keep::kNotRunning;
  if (pod.owner_kind == "DaemonSet") return Keep::kDaemonSet;  // would come back on the node
  if (pod.mirror) return Keep::kMirror;                        // the API cannot delete it
  if (const std::string* v = FindLabel(pod.annotations, kEvictOptOutAnnotation);
      v != nullptr && *v == "false")
    return Keep::kOptedOut;
  if (!policy.include_namespaces.empty() && !listed(policy.include_namespaces, pod.ns))
    return Keep::kNamespace;
  if (listed(policy.exclude_namespaces, pod.ns)) return Keep::kNamespace;
  if (pod.priority >= policy.priority_threshold || pod.priority_class == "system-node-critical" ||
      pod.priority_class == "system-cluster-critical")
    return Keep::kCritical;
  if (pod.owner_kind.empty() && !policy.evict_bare_pods)
    return Keep::kBare;  // nobody re-creates it
  if (pod.local_storage && !policy.evict_local_storage) return Keep::kLocalStorage;  // data lost
  if (now_wall - pod.created_wall < policy.min_pod_age_seconds) return Keep::kTooYoung;
  return Keep::kNone;
}

}  // namespace ds
