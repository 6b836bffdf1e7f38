// libFuzzer target: Prometheus query responses. The fast path and the reference decoder must
// never crash, and whenever the fast path accepts a body the reference must accept it too,
// with the same samples.
#include <cmath>
#include <string>

#include "promql/fast_vector_decoder.h"
#include "promql/query_result.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  ds::LabelFilter keep = {"node", "instance", "ip", "nodename"};
  ds::QueryResult fast;
  bool ok = ds::FastDecodeVector(body, &keep, &fast);
  auto ref = ds::DecodeQueryResponseReference(body, 200, &keep);
  if (ok) {
    if (!ref.ok() || ref->samples.size() != fast.samples.size()) __builtin_trap();
    for (size_t i = 0; i < fast.samples.size(); ++i) {
      if (fast.samples[i].metric != ref->samples[i].metric) __builtin_trap();
      double a = fast.samples[i].value, b = ref->samples[i].value;
      if (!(a == b || (std::isnan(a) && std::isnan(b)))) __builtin_trap();
    }
  }
  (void)ds::DecodeQueryResponse(body, 200, nullptr);
  (void)ds::DecodeQueryResponse(body, 503, &keep);
  return 0;
}
