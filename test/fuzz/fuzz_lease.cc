// libFuzzer target: Lease objects as the API server returns them (leader election decodes every
// GET/POST/PUT answer and sends that object back, changed, in its next PUT). Whatever decodes must
// encode and decode again to the same record; encoding that again must give the same bytes (the
// rest of the object does not drift from one renewal to the next); and the fields a renewal
// changes must decode as set, whatever else the object holds (duplicate keys included).
#include <cstdlib>
#include <string>

#include "kube/lease.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  auto rec = ds::DecodeLease(body);
  if (!rec.ok()) return 0;
  const std::string once = ds::EncodeLease("ns", "name", *rec);
  auto again = ds::DecodeLease(once);
  if (!again.ok() || !again->SameSpec(*rec) || again->resource_version != rec->resource_version)
    std::abort();
  if (ds::EncodeLease("ns", "name", *again) != once) std::abort();
  ds::LeaseRecord renewed = *rec;
  renewed.holder_identity = "me";
  renewed.lease_duration_seconds = 15;
  renewed.acquire_time.clear();
  renewed.renew_time = "2026-11-22T10:00:30.123456Z";
  renewed.lease_transitions = 7;
  auto back = ds::DecodeLease(ds::EncodeLease("ns", "name", renewed));
  if (!back.ok() || !back->SameSpec(renewed) || back->resource_version != renewed.resource_version)
    std::abort();
  return 0;
}
