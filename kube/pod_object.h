// The slice of a Kubernetes Pod the rebalancer decides on, and decoders for the API's wire forms
// (a Pod, a PodList page). Pure functions of bytes; only what the decisions need is kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/labels.h"
#include "common/status.h"
#include "common/taint.h"

namespace ds {

struct Toleration {
  std::string key;           // empty with operator Exists: tolerates every taint
  std::string op = "Equal";  // Equal or Exists
  std::string value;
  std::string effect;  // empty: every effect
};

struct PodInfo {
  std::string ns, name, node;
  std::string uid;  // metadata.uid: `kubectl describe` finds an object's events by it
  // The controller owner (ownerReferences[controller=true]); kind empty for a bare pod.
  std::string owner_kind, owner_name;
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  bool ready = false;
  bool terminating = false;  // metadata.deletionTimestamp is set
  int32_t priority = 0;
  std::string priority_class;
  bool mirror = false;         // a static pod's mirror (annotation kubernetes.io/config.mirror)
  bool local_storage = false;  // has an emptyDir or hostPath volume
  Labels labels;               // metadata.labels: a replacement of an evicted pod has the same
  Labels annotations;          // only the ones the rebalancer reads (its opt-out)
  double created_wall = 0;     // epoch seconds
  double cpu_request = 0;      // cores
  double memory_request = 0;   // bytes
  Labels node_selector;        // spec.nodeSelector
  std::vector<Toleration> tolerations;

  // "namespace/name", for logs and maps.
  std::string Key() const { return ns + "/" + name; }
  // Who it is across a re-creation under the same name (a StatefulSet's): its uid, else Key().
  std::string Id() const { return uid.empty() ? Key() : uid; }
  // The workload the pod belongs to: "namespace/Kind/name", or "" for a bare pod.
  std::string Workload() const {
    return owner_kind.empty() ? "" : ns + "/" + owner_kind + "/" + owner_name;
  }
};

struct PodListPage {
  std::vector<PodInfo> items;
  std::string resource_version;
  std::string continue_token;
};

// Decodes one Pod object (GET, or an item of a list). Errors name what was wrong.
StatusOr<PodInfo> DecodePod(std::string body);
// Decodes one PodList page (GET /api/v1/pods).
StatusOr<PodListPage> DecodePodList(std::string body);

}  // namespace ds
