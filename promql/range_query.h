// Range queries (/api/v1/query_range): a rule's history at a fixed step, for `replay`
// (replay/replay_engine.h). Prometheus refuses a range query whose series would hold more than
// 11,000 points, so a long window is asked for in chunks (PlanRangeChunks), each one request.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/labels.h"
#include "common/sample.h"
#include "common/status.h"
#include "promql/query_result.h"

namespace ds {

// Prometheus' own limit on points per series in one range query ("exceeded maximum resolution
// of 11,000 points per timeseries").
inline constexpr size_t kMaxPointsPerSeries = 11000;

// One series of a matrix: its (kept) labels and its points, oldest first. A series has no point
// at a step where it had no sample within Prometheus' lookback (5 minutes by default).
struct RangeSeries {
  Labels metric;
  std::vector<double> times;   // Unix seconds, ascending
  std::vector<double> values;  // same length; may be NaN or +/-Inf
};

struct RangeResult {
  std::vector<RangeSeries> series;
  std::vector<std::string> warnings;
  size_t points = 0;  // over every series
  // Filled by the HTTP client, for where replay's time goes.
  double fetch_seconds = 0, decode_seconds = 0;
  size_t body_bytes = 0;
};

// Decodes a query_range answer that came with HTTP status `http_status`. `keep` (optional) limits
// which series labels are decoded. Success: resultType "matrix", every series with its points.
// Errors, as DecodeQueryResponse's (promql/response_decoder.h): a 5xx page without JSON status:
// kUnavailable; Prometheus' error JSON: kInvalidArgument for bad_data (e.g. too many points), else
// kUnavailable; any other result type, a point that is not [time, "value"] or times that go
// backwards: kUnavailable naming where. Takes the body by value: it is parsed in place.
StatusOr<RangeResult> DecodeRangeResponse(std::string body, int http_status,
                                          const LabelFilter* keep = nullptr);

// A window [start, end] of one range request; its steps are start, start + step, ... <= end.
struct RangeChunk {
  double start = 0, end = 0;
  size_t steps = 0;
};

// Splits the steps from, from + step, ... <= to into consecutive chunks of at most
// `max_steps` steps each (Prometheus counts a window's points as (end - start) / step + 1), so
// that no step is asked for twice or skipped. Empty when to < from.
// REQUIRES: step > 0, max_steps >= 1.
std::vector<RangeChunk> PlanRangeChunks(double from, double to, double step,
                                        size_t max_steps = kMaxPointsPerSeries);

// Range answers carry step times with milliseconds; a point belongs to the step it equals
// within this many seconds.
inline constexpr double kRangeStepTolerance = 1e-3;

// The views of a series' labels, for SampleSink (made once per answer, not per step).
LabelViews RangeSeriesViews(const RangeSeries& series);

// Reads a range answer one step at a time, as if each step were an instant query at that time:
// the replay's cycles (replay/replay_engine.h) and a one-pass run's history
// (Reconciler::PrimeFromHistory) both go through it, so they match points to steps alike.
// `series` must outlive the reader. Steps must be fed in ascending order (each series' cursor
// only moves forward).
class RangeStepReader {
 public:
  explicit RangeStepReader(const std::vector<RangeSeries>* series);
  // Feeds `sink` every series' point at Unix time t (within kRangeStepTolerance) with its
  // timestamp. Returns whether any series had a point there.
  bool Feed(double t, SampleSink* sink);

 private:
  const std::vector<RangeSeries>* series_;
  std::vector<LabelViews> views_;
  std::vector<size_t> cursor_;
};

}  // namespace ds
