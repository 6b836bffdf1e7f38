// The slice of a Pod the rebalancer decides on, and of a Node it places pods on: plain values,
// so that every choice (rebalance/) is a function of them. The Kubernetes client fills these in;
// nothing here reads the API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/labels.h"

namespace ds {

struct Toleration {
  std::string key;           // empty with operator Exists: tolerates every taint
  std::string op = "Equal";  // Equal or Exists
  std::string value;
  std::string effect;  // empty: every effect
};

struct Taint {
  std::string key, value, effect;  // effect: NoSchedule, PreferNoSchedule, NoExecute
};

struct PodInfo {
  std::string ns, name, node;
  // The controller owner (ownerReferences[controller=true]); kind empty for a bare pod.
  std::string owner_kind, owner_name;
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  bool ready = false;
  bool terminating = false;  // metadata.deletionTimestamp is set
  int32_t priority = 0;
  std::string priority_class;
  bool mirror = false;         // a static pod's mirror (annotation kubernetes.io/config.mirror)
  bool local_storage = false;  // has an emptyDir or hostPath volume
  Labels annotations;          // only the ones the rebalancer reads (its opt-out)
  double created_wall = 0;     // epoch seconds
  double cpu_request = 0;      // cores
  double memory_request = 0;   // bytes
  Labels node_selector;        // spec.nodeSelector
  std::vector<Toleration> tolerations;

  // "namespace/name", for logs and maps.
  std::string Key() const { return ns + "/" + name; }
  // The workload the pod belongs to: "namespace/Kind/name", or "" for a bare pod.
  std::string Workload() const {
    return owner_kind.empty() ? "" : ns + "/" + owner_kind + "/" + owner_name;
  }
};

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

}  // namespace ds
