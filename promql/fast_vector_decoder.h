// A single-pass scanner for the common case of /api/v1/query answers: a successful "vector"
// result. At 10,000 series the reference DOM decoder spends most of its time building a tree the
// controller throws away; this one scans strings with memchr, converts only the numbers it keeps
// and copies only the labels matching needs.
//
// It accepts any valid JSON of that shape (members in any order, whitespace, escapes) and
// declines everything else (errors, warnings, other result types, \u escapes, malformed input).
// Declining is always allowed: DecodeQueryResponse (response_decoder.h) then falls back to the
// reference decoder (reference_decoder.h), which reports errors. Whenever it accepts a body it
// must produce what the reference would (test/promql/query_result_test.cc, fuzz_prom_decoder.cc).
// Depends only on the result types; thread-safe (no shared state).
#pragma once

#include <functional>
#include <string_view>

#include "promql/query_result.h"

namespace ds {

// Called once per series with its kept labels (views valid only during the call), value and
// timestamp.
using SampleVisitor = std::function<void(const LabelViews& labels, double value, double timestamp)>;

// Streams the samples of a successful vector result to `visit` without building Sample objects.
// Returns false (possibly after visiting some samples) when the body is not of that shape; the
// caller must then discard what it was given and use the reference decoder.
bool ScanVector(std::string_view body, const LabelFilter* keep, const SampleVisitor& visit);

// ScanVector collecting into *out (result_type "vector", one Sample per series with its
// timestamp). Returns false and leaves *out empty when the scanner declines.
// REQUIRES: *out is empty.
bool FastDecodeVector(std::string_view body, const LabelFilter* keep, QueryResult* out);

}  // namespace ds
