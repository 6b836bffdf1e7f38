// Decoding of Prometheus HTTP API instant-query responses (/api/v1/query), kept apart from the
// client so it can be tested and fuzzed on bytes alone.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/sample.h"
#include "common/status.h"

namespace ds {

struct QueryResult {
  std::string result_type;  // "vector", "scalar" or "matrix"
  std::vector<Sample> samples;
  std::vector<std::string> warnings;
  // Filled by the HTTP client, for the cycle-cost breakdown.
  double fetch_seconds = 0;   // waiting on Prometheus (request sent -> body received)
  double decode_seconds = 0;
  size_t body_bytes = 0;
  size_t sample_count = 0;  // set when samples were streamed to a SampleSink instead
};

// Series labels to keep while decoding; nullptr keeps all. Node matching needs only a few of a
// series' labels, and at 10,000 series copying the rest is most of the decoding cost.
using LabelFilter = std::vector<std::string>;

// Parses a Prometheus sample value string ("1.5", "NaN", "+Inf", "-Inf", "1e-300").
// Returns false when s is not a number.
bool ParsePromValue(std::string_view s, double* out);

// Decodes a response body. `http_status` is the HTTP status it came with.
// - status "success": vector -> one sample per series; scalar -> one sample with no labels;
//   matrix (a range selector in an instant query) -> the newest point of each series.
//   A "string" result is an error: it cannot be compared with a threshold.
// - status "error": kInvalidArgument for bad_data (the query itself is wrong), kUnavailable for
//   timeout/execution/internal/unavailable; the message carries errorType and error.
// - anything else (HTML from a proxy, truncated JSON, wrong types): kUnavailable naming the
//   problem and the HTTP status.
// Takes the body by value and parses it in place, which avoids copying every string.
StatusOr<QueryResult> DecodeQueryResponse(std::string body, int http_status,
                                          const LabelFilter* keep = nullptr);

// The general decoder (RapidJSON DOM) that DecodeQueryResponse falls back to whenever its fast
// path for vectors declines. Exposed so tests can check that both agree.
StatusOr<QueryResult> DecodeQueryResponseReference(std::string body, int http_status,
                                                   const LabelFilter* keep = nullptr);

}  // namespace ds
