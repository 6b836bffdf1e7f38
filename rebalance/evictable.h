// Which pods may never be evicted, whatever the load: descheduler's default evictor's rules plus
// our opt-out annotation and namespace lists. One verdict per pod, with the reason named, so that
// /metrics and the logs can say why a hot node was not relieved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kube/pod_object.h"

namespace ds {

struct EvictablePolicy {
  bool evict_bare_pods = false;      // pods without a controller owner
  bool evict_local_storage = false;  // pods with emptyDir or hostPath volumes
  // Pods at or above this priority are left alone; system-cluster-critical's value by default.
  int32_t priority_threshold = 2000000000;
  double min_pod_age_seconds = 300;             // a young pod has not shown its steady usage yet
  std::vector<std::string> include_namespaces;  // empty: every namespace...
  std::vector<std::string> exclude_namespaces;  // ...but these
};

// A pod annotated `dynamic-scheduler.io/evict: "false"` is never evicted.
inline constexpr const char* kEvictOptOutAnnotation = "dynamic-scheduler.io/evict";

enum class Keep {
  kNone,  // evictable
  kDaemonSet,
  kMirror,
  kBare,
  kLocalStorage,
  kCritical,
  kTerminating,
  kNotRunning,
  kTooYoung,
  kOptedOut,
  kNamespace,
};

// "daemonset", "mirror", ...: the label value for /metrics.
const char* KeepName(Keep k);

// Why `pod` must be kept, or kNone. Pure.
Keep CheckEvictable(const PodInfo& pod, const EvictablePolicy& policy, double now_wall);

}  // namespace ds
