// libFuzzer target: Lease objects as the API server returns them (leader election decodes every
// GET/POST/PUT answer); whatever decodes must encode and decode again to the same record.
#include <cstdlib>
#include <string>

#include "kube/lease.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  auto rec = ds::DecodeLease(body);
  if (!rec.ok()) return 0;
  auto again = ds::DecodeLease(ds::EncodeLease("ns", "name", *rec));
  if (!again.ok() || !again->SameSpec(*rec) || again->resource_version != rec->resource_version)
    std::abort();
  return 0;
}
