// core/v1 Events: what `kubectl describe pod` and `kubectl get events` show. The rebalancer posts
// one on the pod and one on the node for every eviction, so the people who run the workload and
// the node see why it moved without reading the controller's logs. Pure: the wire form only.
#pragma once

#include <string>

namespace ds {

struct EventInfo {
  // The object the event is about: "Pod" (namespaced) or "Node" (cluster-scoped; its events live
  // in the "default" namespace, as the kubelet's do).
  std::string kind, name, object_namespace;
  std::string reason;   // UpperCamelCase, e.g. "RebalanceEviction"
  std::string message;  // for people; the API server keeps up to 1 KiB of it
  std::string type = "Normal";
  double at_wall = 0;  // epoch seconds
  std::string uid;  // the object's metadata.uid ("" if unknown): `kubectl describe` matches on it
};

// The namespace the event is created in: the object's, or "default" for a cluster-scoped one.
std::string EventNamespace(const EventInfo& e);
// The Event object to POST: named like client-go's recorder names them ("<object>.<hex ns>"),
// from `component` (source and reporting controller) and `instance` (this replica).
std::string EncodeEvent(const EventInfo& e, const std::string& component,
                        const std::string& instance);

}  // namespace ds
