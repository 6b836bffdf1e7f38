// libFuzzer target: Prometheus query responses, instant and range. The fast paths and the
// reference decoders must never crash, and whenever a fast path accepts a body its reference
// must accept it too, with the same samples (a range answer's: the same series, times and
// values, bit for bit). The entry point must give a sink the same samples it returns without
// one.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "promql/fast_vector_decoder.h"
#include "promql/query_result.h"
#include "promql/range_query.h"
#include "promql/reference_decoder.h"
#include "promql/response_decoder.h"

namespace {

bool SameValue(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Keeps what it is given, forgetting it on Reset (the SampleSink contract).
class CollectingSink : public ds::SampleSink {
 public:
  void Reset() override { samples.clear(); }
  void Add(const ds::LabelViews& labels, double value) override {
    ds::Labels copy;
    for (const auto& [k, v] : labels) copy.emplace_back(std::string(k), std::string(v));
    samples.push_back(ds::Sample{std::move(copy), value, 0});
  }
  std::vector<ds::Sample> samples;
};

}  // namespace

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
      if (!SameValue(fast.samples[i].value, ref->samples[i].value)) __builtin_trap();
    }
  }

  auto plain = ds::DecodeQueryResponse(body, 200, &keep);
  CollectingSink sink;
  auto streamed = ds::DecodeQueryResponse(body, 200, &keep, &sink);
  if (plain.ok() != streamed.ok()) __builtin_trap();
  if (plain.ok()) {
    if (!streamed->samples.empty() || streamed->sample_count != plain->samples.size() ||
        sink.samples.size() != plain->samples.size())
      __builtin_trap();
    for (size_t i = 0; i < sink.samples.size(); ++i) {
      if (sink.samples[i].metric != plain->samples[i].metric) __builtin_trap();
      if (!SameValue(sink.samples[i].value, plain->samples[i].value)) __builtin_trap();
    }
  } else if (!sink.samples.empty()) {
    __builtin_trap();  // a failed decode must not leave samples in the sink
  }

  (void)ds::DecodeQueryResponse(body, 200, nullptr);
  (void)ds::DecodeQueryResponse(body, 503, &keep);

  ds::RangeResult matrix;
  if (ds::FastDecodeMatrix(body, &keep, &matrix)) {
    auto mref = ds::DecodeRangeResponseReference(body, 200, &keep);
    if (!mref.ok() || mref->series.size() != matrix.series.size() ||
        mref->points != matrix.points || mref->warnings != matrix.warnings)
      __builtin_trap();
    for (size_t i = 0; i < matrix.series.size(); ++i) {
      const ds::RangeSeries &a = matrix.series[i], &b = mref->series[i];
      if (a.metric != b.metric || a.times.size() != b.times.size() ||
          a.values.size() != b.values.size())
        __builtin_trap();
      for (size_t j = 0; j < a.times.size(); ++j)
        if (std::memcmp(&a.times[j], &b.times[j], sizeof(double)) != 0 ||
            std::memcmp(&a.values[j], &b.values[j], sizeof(double)) != 0)
          __builtin_trap();
    }
  } else if (!matrix.series.empty() || !matrix.warnings.empty() || matrix.points != 0) {
    __builtin_trap();  // a declined body leaves nothing behind
  }
  (void)ds::DecodeRangeResponse(body, 200, &keep);
  (void)ds::DecodeRangeResponse(body, 503, nullptr);
  return 0;
}
