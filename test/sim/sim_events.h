// Events in the simulator, served as core/v1 and as events.k8s.io/v1, with kube-apiserver's
// semantics for what a client can see. As in the real server, both APIs are views of one stored
// object (the internal core.Event, kept here in its core/v1 form): an event created through one
// is listed by the other, converted as pkg/apis/events/v1/conversion.go does (regarding <->
// involvedObject, note <-> message, reportingController <-> reportingComponent, deprecated* <->
// source, firstTimestamp, lastTimestamp, count). core/v1 Events:
// create (name or generateName, the namespace checks of rest.BeforeCreate, the legacy validation
// of pkg/apis/core/validation/events.go that core/v1 requests get), get, delete, list with label
// and field selectors (the fields of pkg/registry/core/event/strategy.go ToSelectableFields),
// paging, and watch events. The real server keeps events for --event-ttl (1 h); here the store
// keeps the newest `max_events` instead and drops the oldest (a DELETED watch event, as a TTL
// expiry gives), so a long demo cannot grow without bound.
//
// Thread-safe. Shares the cluster-wide resourceVersion with the Node store (Store::NextRv). Lock
// order: EventStore::mu_ before Store's mutex. HTTP lives in sim_server_events.cc.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/label_selector.h"
#include "common/mutex.h"
#include "test/sim/sim_pods.h"
#include "test/sim/sim_store.h"

namespace sim {

// The API a request came through; it picks the validation (events.k8s.io/v1 creates and updates
// get the strict checks of ValidateEventCreate/Update in pkg/apis/core/validation/events.go), the
// form of the objects returned, and the resource's name in errors.
enum class EventApi { kCoreV1, kEventsV1 };

// The events.k8s.io/v1 form of a stored (core/v1-shaped) event, with the fields in the order Go
// serialises events/v1.Event: eventTime always (null when unset), deprecatedSource {} and the
// deprecated timestamps (null) always, the rest only when set.
std::string ToEventsV1(const std::string& core_json);

// The fields an Event can be selected by, as the API server names them.
const std::vector<std::string>& EventSelectableFields();

// One change to the stored events, for watches. `keys` are the event's fields and labels (the
// record pods use for selection; FieldSelector matches it).
struct EventChange {
  uint64_t rv = 0;
  std::string type;  // ADDED, MODIFIED (an events.k8s.io/v1 series patch), DELETED
  std::string json;
  PodKeys keys;
};

struct EventStoreOptions {
  size_t max_events = 10000;  // beyond this the oldest event is dropped
  size_t window = 20000;      // changes kept for watches; older resourceVersions get 410
};

class EventStore {
 public:
  EventStore(Store* cluster, EventStoreOptions options);

  // POST /api/v1/namespaces/NS/events. On success *out is the stored object (kind, apiVersion,
  // metadata.{name, namespace, uid, resourceVersion, creationTimestamp}, and the fields the real
  // server always serialises: source {}, reportingComponent "", reportingInstance "", and
  // firstTimestamp, lastTimestamp, eventTime as null when unset; timestamps in UTC). Errors, in
  // the API server's words: 400 (undecodable body or timestamp; metadata.namespace other than
  // NS), 422 Invalid (validation, see sim_events.cc), 409 AlreadyExists, 500 when the body sets
  // metadata.resourceVersion (as etcd3's store refuses it).
  // With api kEventsV1 (POST /apis/events.k8s.io/v1/namespaces/NS/events) the body is an
  // events.k8s.io/v1 Event, converted to the stored form, validated strictly as well (name a DNS
  // subdomain, eventTime required, type Normal or Warning, series.count >= 2 with
  // lastObservedTime, no deprecated* fields), and *out is in events.k8s.io/v1 form.
  ApiError Create(const std::string& ns, const std::string& body, std::string* out,
                  EventApi api = EventApi::kCoreV1);
  // 404 NotFound `events "NAME" not found` (`events.events.k8s.io ...` for kEventsV1).
  ApiError Get(const std::string& ns, const std::string& name, std::string* out,
               EventApi api = EventApi::kCoreV1) const;
  // PATCH /apis/events.k8s.io/v1/namespaces/NS/events/NAME with a merge or strategic merge
  // patch (the same for the maps an Event has): applied to the events.k8s.io/v1 form, then
  // ValidateEventUpdate's strict checks: the series, when changed, as on create, and every other
  // field but metadata immutable (`field is immutable`, by its internal name, as the real server
  // words it). A new resourceVersion and a MODIFIED watch event; *out in events.k8s.io/v1 form.
  // 404 when missing; 400 when the patch is not a JSON object.
  ApiError Patch(const std::string& ns, const std::string& name, const std::string& patch,
                 std::string* out);
  // Deletes at once (events have no finalizers); *out is the deleted object. 404 when missing.
  ApiError Delete(const std::string& ns, const std::string& name, std::string* out,
                  EventApi api = EventApi::kCoreV1);
  // A page of matching events (ns "": all namespaces) in etcd key order (namespace, name) after
  // `after` ("ns/name"); *next is the last key returned when more remain.
  std::vector<std::string> List(const std::string& ns, const ds::LabelSelector& labels,
                                const FieldSelector& fields, size_t limit, const std::string& after,
                                std::string* next, uint64_t* list_rv, size_t* remaining) const;
  // Deletes every event (DELETED for each); returns how many there were. For /sim/events.
  size_t Clear();

  // Changes with rv > from, waiting up to timeout_ms for one; *expired when `from` is older than
  // the window. Returns the cluster's current resourceVersion.
  uint64_t ChangesAfter(uint64_t from, int timeout_ms, std::vector<EventChange>* out,
                        bool* expired);
  void WakeAll();
  void Compact();  // forgets the changes kept for watches (every event watch gets 410)
  uint64_t compacted_rv() const;
  size_t size() const;
  uint64_t dropped() const;  // events dropped so far to stay within max_events
  size_t max_events() const { return options_.max_events; }

 private:
  struct Stored {
    std::string json;
    PodKeys keys;
    uint64_t rv = 0;  // of its creation; also its age order
  };

  void Record(const std::string& type, const std::string& json, const PodKeys& keys, uint64_t rv)
      REQUIRES(mu_);
  void EraseLocked(std::map<std::string, Stored>::iterator it) REQUIRES(mu_);

  Store* const cluster_;
  const EventStoreOptions options_;
  mutable ds::Mutex mu_;
  ds::CondVar cv_;
  std::map<std::string, Stored> events_ GUARDED_BY(mu_);    // "ns/name"
  std::map<uint64_t, std::string> by_age_ GUARDED_BY(mu_);  // creation rv -> key
  std::deque<EventChange> changes_ GUARDED_BY(mu_);
  uint64_t last_rv_ GUARDED_BY(mu_) = 0;  // newest change's rv
  uint64_t compacted_rv_ GUARDED_BY(mu_) = 0;
  uint64_t dropped_ GUARDED_BY(mu_) = 0;
  std::mt19937_64 rng_ GUARDED_BY(mu_);  // names and uids
};

}  // namespace sim
