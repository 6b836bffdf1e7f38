// events.k8s.io/v1 Events: what `kubectl events`, `kubectl get events` and `kubectl describe`
// show. The controller posts one on a Node when it marks or unmarks it, and the rebalancer one
// on the pod and one on the node for every eviction, so the people who run the workload and the
// node see why without reading the controller's logs. Pure: the wire form only.
//
// The form is the one client-go's events library (k8s.io/client-go/tools/events) writes: an
// Event named "<object>.<hex nanoseconds>" in the object's namespace ("default" for a
// cluster-scoped one), regarding the object, with eventTime (MicroTime), action,
// reportingController and reportingInstance, which the API server requires of events.k8s.io/v1
// Events; repeats of one (regarding, reason, action) within a window are counted in the first
// Event's `series` by a PATCH rather than posted again.
#pragma once

#include <string>

namespace ds {

// The API server's limits (pkg/apis/core/validation/events.go).
inline constexpr size_t kEventNoteLimit = 1024;
inline constexpr size_t kEventFieldLimit = 128;  // action, reason, reportingInstance

struct EventInfo {
  // The object the event is about (`regarding`): "Pod" (namespaced), "Node" (cluster-scoped;
  // its events live in the "default" namespace, as the kubelet's do), or a pod's owner.
  std::string kind, name, object_namespace;
  // The object's apiVersion: "" is core/v1 (a Node, a Pod); an owner's, e.g. apps/v1.
  std::string api_version;
  std::string reason;   // UpperCamelCase, e.g. "RebalanceEviction"
  std::string message;  // `note`: for people; the API server keeps up to 1 KiB of it
  std::string type = "Normal";
  double at_wall = 0;  // epoch seconds: eventTime
  std::string uid;  // the object's metadata.uid ("" if unknown): `kubectl describe` matches on it
  // What was done to the object, machine-readable and required ("Mark", "Unmark", "Evict").
  std::string action;
  // An optional second object (`related`), e.g. the node a pod was evicted from ("" kind: none).
  std::string related_kind, related_name, related_namespace;
  // The Event's name; "" picks one as client-go's recorder does (EventName).
  std::string event_name;
  // For a series PATCH: how many times it happened in all (>= 2) and when it last did.
  int series_count = 0;
  double series_last_wall = 0;
};

// The namespace the event is created in: the object's, or "default" for a cluster-scoped one.
std::string EventNamespace(const EventInfo& e);
// A fresh name: "<object>.<hex nanoseconds of at_wall>" (client-go's util.GenerateEventName),
// made unique within this process (two events in one instant would otherwise collide: 409).
std::string EventName(const EventInfo& e);
// The events.k8s.io/v1 Event to POST, named e.event_name (or EventName(e)), from `controller`
// (reportingController: a qualified name) and `instance` (reportingInstance, this replica; cut to
// 128 characters). The note is cut to 1 KiB on a UTF-8 boundary.
std::string EncodeEvent(const EventInfo& e, const std::string& controller,
                        const std::string& instance);
// The strategic merge patch that updates an Event's series:
// {"series":{"count":N,"lastObservedTime":"<MicroTime>"}} (FormatMicroTime, kube/lease.h).
std::string EncodeEventSeriesPatch(int count, double last_observed_wall);

}  // namespace ds
