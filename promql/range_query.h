// Range queries (/api/v1/query_range): a rule's history at a fixed step, for `replay`
// (replay/replay_engine.h). Prometheus refuses a range query whose series would hold more than
// 11,000 points, so a long window is asked for in chunks (PlanRangeChunks), each one request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
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
// A plain successful matrix is read by FastDecodeMatrix; anything it declines goes to a RapidJSON
// DOM, which names what was wrong.
StatusOr<RangeResult> DecodeRangeResponse(std::string body, int http_status,
                                          const LabelFilter* keep = nullptr);

// The common case of a range answer, scanned in one pass straight into each series' arrays (no
// DOM: a 30-day replay decodes 3.5 GB of JSON, and the DOM was a third of its CPU and most of its
// memory). Takes any valid JSON of a successful matrix (members in any order, whitespace, escapes
// other than \u, "warnings") whose times are plain decimals (as Prometheus and VictoriaMetrics
// write them) and declines everything else, including errors and malformed input: declining is
// always allowed, and DecodeRangeResponse then uses the DOM. Whenever it accepts a body it gives
// what the DOM would, bit for bit (test/promql/range_query_test.cc, fuzz_prom_decoder.cc).
// Returns false and leaves *out empty when it declines. REQUIRES: *out is empty.
bool FastDecodeMatrix(std::string_view body, const LabelFilter* keep, RangeResult* out);

// DecodeRangeResponse without FastDecodeMatrix: the RapidJSON DOM alone (the reference the fast
// path is held to in tests and fuzzing).
StatusOr<RangeResult> DecodeRangeResponseReference(std::string body, int http_status,
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

// The first multiple of `step` at or after `t` (Unix seconds, counted in whole milliseconds):
// where a range query's steps go. Long-term stores answer a range query on the multiples of its
// step whatever start was asked (VictoriaMetrics' response cache, Thanos' and Mimir's query
// frontends), and a reader that takes only the points it asked for would find none off them
// (every step an outage). REQUIRES: step a whole number of milliseconds > 0, |t| < 2^53 ms.
double StepGridAtOrAfter(double t, double step);

// A step between milliseconds (Prometheus is sent steps in milliseconds; steps off them drift
// from the points): false. `step` > 0.
bool WholeMilliseconds(double step);

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
//
// A step reads one point of every series: from per-series arrays that is one cache miss per
// series every few steps, which was a sixth of a 1,000-node replay's CPU. So when the series'
// times are all among one grid of times (a range answer's steps: every series has a point at
// each step, or at some), the constructor lays the points out step by step (one row of every
// series' point per time) and a step reads one row. Otherwise (times that are not on one grid,
// times closer than twice the tolerance, or series so sparse that the grid would hold more than
// twice the points) it reads the series' arrays with a cursor each. Both feed the same points.
class RangeStepReader {
 public:
  explicit RangeStepReader(const std::vector<RangeSeries>* series);
  // Feeds `sink` every series' point at Unix time t (within kRangeStepTolerance) with its
  // timestamp. Returns whether any series had a point there.
  bool Feed(double t, SampleSink* sink);
  // Whether the points were laid out by step (for tests).
  bool by_step() const { return !rows_.empty(); }

 private:
  // Lays the points out by step; false (and nothing laid out) when the series do not fit a grid.
  bool LayOutBySteps();

  const std::vector<RangeSeries>* series_;
  std::vector<LabelViews> views_;
  std::vector<size_t> cursor_;  // per series, without the layout by step
  // The layout by step: the rows' times (ascending; every point of a row has its time exactly),
  // and per row every series' value, and whether it has a point there (empty: every series has
  // a point at every row).
  std::vector<double> rows_;
  std::vector<double> values_;    // rows_.size() x series, row by row
  std::vector<uint8_t> present_;  // the same shape, or empty
  size_t row_ = 0;
};

}  // namespace ds
