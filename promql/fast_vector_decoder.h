// A single-pass decoder for the common case of /api/v1/query answers: a successful "vector"
// result. At 10,000 series the generic DOM decoder spends most of its time building a tree the
// controller throws away; this one scans strings with memchr, converts only the numbers it keeps
// and copies only the labels matching needs.
//
// It accepts any valid JSON of that shape (members in any order, whitespace, escapes) and
// returns false for everything else (errors, warnings, other result types, malformed input),
// in which case the caller uses the DOM decoder, which is the reference and reports errors.
#pragma once

#include <functional>
#include <string_view>

#include "promql/query_result.h"

namespace ds {

// Called once per series with its kept labels (views valid only during the call), value and
// timestamp.
using SampleVisitor = std::function<void(const LabelViews& labels, double value, double timestamp)>;

// Streams the samples of a successful vector result to `visit` without copying them. Returns
// false (possibly after visiting some samples) when the body is not of that shape; the caller
// must then discard what it was given and use the reference decoder.
bool ScanVector(std::string_view body, const LabelFilter* keep, const SampleVisitor& visit);

// REQUIRES: out is empty. Returns true and fills *out (result_type "vector") on success.
bool FastDecodeVector(std::string_view body, const LabelFilter* keep, QueryResult* out);

}  // namespace ds
