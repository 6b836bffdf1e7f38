// libFuzzer target: PodList pages and single Pods (LIST answers), resource quantities, and the
// classification of eviction answers -- everything the rebalancer reads from the API server.
#include <string>

#include "common/quantity.h"
#include "kube/kube_api.h"
#include "kube/pod_object.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  (void)ds::DecodePodList(body);
  (void)ds::DecodePod(body);
  double v = 0;
  (void)ds::ParseQuantity(body, &v);
  (void)ds::EvictionResultFromResponse(429, body, "", "fuzz");
  (void)ds::EvictionResultFromResponse(500, body, "", "fuzz");
  return 0;
}
