// The one entry point for decoding /api/v1/query responses. It tries the fast vector scanner
// (fast_vector_decoder.h) and falls back to the reference DOM decoder (reference_decoder.h)
// whenever the scanner declines, so callers (the HTTP client, benchmarks) never choose between
// them and a sink sees each sample once whichever path decoded it.
#pragma once

#include <string>

#include "common/sample.h"
#include "common/status.h"
#include "promql/query_result.h"

namespace ds {

// Decodes a response body that came with HTTP status `http_status`. `keep` (optional) limits
// which series labels are decoded.
//
// Success: as DecodeQueryResponseReference (vector -> one sample per series, scalar -> one
// sample without labels, matrix -> the newest point of each series; warnings collected).
// - Without a `sink`, the result's `samples` hold the samples (with timestamps).
// - With a `sink`, every sample goes to sink->AddAt (with its timestamp) exactly once after the
//   last sink->Reset() made by this call, the result's `samples` stay empty and `sample_count`
//   says how many were added. A plain vector is streamed straight from the body without
//   building Sample objects; should the scanner decline partway (e.g. "warnings" after "data"),
//   the sink is Reset and fed again from the reference decoder's samples.
// Errors (the sink then holds nothing from this body):
// - a 5xx answer whose body has no JSON "status" (a proxy's error page): kUnavailable
//   "Prometheus answered HTTP <n>";
// - Prometheus' own error JSON: kInvalidArgument for bad_data, kUnavailable otherwise;
// - a "string" result: kInvalidArgument;
// - anything malformed: kUnavailable naming the problem.
// Errors about the answer carry `http_status`. Takes the body by value: the fallback parses it
// in place. Thread-safe as far as the sink is (this function keeps no state).
StatusOr<QueryResult> DecodeQueryResponse(std::string body, int http_status,
                                          const LabelFilter* keep = nullptr,
                                          SampleSink* sink = nullptr);

}  // namespace ds
