// The reference decoder of /api/v1/query responses: a RapidJSON DOM over the whole body. It
// handles every result type, collects warnings and names what is wrong with a bad body. The
// fast vector scanner (fast_vector_decoder.h) must agree with it wherever it accepts a body;
// tests and the fuzz target check that. Callers normally go through DecodeQueryResponse
// (response_decoder.h), which tries the fast path first.
#pragma once

#include <string>

#include "common/status.h"
#include "promql/query_result.h"

namespace ds {

// Decodes a response body. `http_status` is the HTTP status it came with; `keep` (optional)
// limits which series labels are copied.
// - status "success": vector -> one sample per series; scalar -> one sample with no labels;
//   matrix (a range selector in an instant query) -> the newest point of each series (a series
//   without points is skipped). A "string" result is kInvalidArgument: it cannot be compared
//   with a threshold. Warnings are collected into the result.
// - status "error": kInvalidArgument for bad_data (the query itself is wrong), kUnavailable for
//   timeout/execution/internal/unavailable; the message carries errorType and error.
// - anything else (HTML from a proxy, truncated JSON, wrong types): kUnavailable naming the
//   problem and the HTTP status.
// Errors about the answer carry `http_status`. Takes the body by value and parses it in place,
// which avoids copying every string. Thread-safe (no shared state).
StatusOr<QueryResult> DecodeQueryResponseReference(std::string body, int http_status,
                                                   const LabelFilter* keep = nullptr);

}  // namespace ds
