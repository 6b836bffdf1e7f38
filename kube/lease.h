// The coordination.k8s.io/v1 Lease that leader election reads and writes, and its wire form.
// Pure functions of values and bytes.
#pragma once

#include <string>

#include "common/status.h"

namespace ds {

// The fields leader election uses (client-go's LeaderElectionRecord, stored in a Lease).
struct LeaseRecord {
  std::string holder_identity;  // "" when nobody holds it (released)
  int lease_duration_seconds = 0;
  std::string acquire_time;  // MicroTime: RFC 3339 with six fractional digits
  std::string renew_time;
  int lease_transitions = 0;
  std::string resource_version;  // of the Lease object: the precondition for an update
  // The whole Lease object (JSON) as the API server last returned it; "" for one not read yet. An
  // update sends it back with only the fields above changed, so that labels, annotations,
  // ownerReferences and spec fields newer than this code (strategy, preferredHolder) survive: a
  // PUT replaces the object, and the server keeps whatever it is sent.
  std::string object;

  // Same record, ignoring resource_version (what "the holder changed or renewed" compares).
  bool SameSpec(const LeaseRecord& o) const {
    return holder_identity == o.holder_identity &&
           lease_duration_seconds == o.lease_duration_seconds && acquire_time == o.acquire_time &&
           renew_time == o.renew_time && lease_transitions == o.lease_transitions;
  }
};

// Decodes a Lease object (GET/POST/PUT response); record.object keeps `body`. A Lease without
// spec decodes as an empty record (nobody holds it). Errors name the field.
StatusOr<LeaseRecord> DecodeLease(const std::string& body);

// The Lease object for a create (record.resource_version empty) or an update (with
// metadata.resourceVersion as precondition). With record.object set, that object with only
// spec.holderIdentity, leaseDurationSeconds, acquireTime, renewTime (absent when empty),
// leaseTransitions and metadata.resourceVersion changed; everything else is kept as read
// (metadata.name and namespace come from `ns` and `name` only where the object lacks them).
// Without it (or if it is not a JSON object), a new object with just these fields. A key the object
// holds twice is written once. DecodeLease(EncodeLease(..., r)) gives r back (SameSpec, the same
// resource_version).
std::string EncodeLease(const std::string& ns, const std::string& name, const LeaseRecord& record);

// The value of annotation `key` of a Lease object (LeaseRecord::object); "" when it has none or
// the object is not readable. And the object with that annotation set to `value` (everything else
// kept as read), for a WriteLease of a Lease used to keep a record (the eviction ledger).
std::string LeaseAnnotation(const std::string& object, const std::string& key);
std::string WithLeaseAnnotation(const std::string& object, const std::string& key,
                                const std::string& value);

// Wall-clock seconds as a MicroTime, e.g. "2026-11-22T10:04:05.123456Z".
std::string FormatMicroTime(double epoch_seconds);

}  // namespace ds
