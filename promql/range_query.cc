#include "promql/range_query.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include "common/json_util.h"
#include "promql/decimal_fast_path.h"
#include "promql/json_scanner.h"

namespace ds {
namespace {

Status RangeMalformed(const std::string& why, int http_status) {
  return Status::Unavailable("malformed Prometheus range answer: " + why)
      .set_http_status(http_status);
}

bool Kept(const LabelFilter* keep, std::string_view name) {
  if (keep == nullptr) return true;
  for (const auto& k : *keep)
    if (k == name) return true;
  return false;
}

// A series' labels and points; false names nothing: the caller says which series was bad.
bool ReadSeries(const rapidjson::Value& s, const LabelFilter* keep, RangeSeries* out,
                std::string* why) {
  const rapidjson::Value* metric = JsonMember(s, "metric");
  if (metric == nullptr || !metric->IsObject()) {
    *why = "metric is not an object";
    return false;
  }
  for (auto it = metric->MemberBegin(); it != metric->MemberEnd(); ++it) {
    if (!it->value.IsString()) {
      *why = "metric has a label that is not a string";
      return false;
    }
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (!Kept(keep, name)) continue;
    out->metric.emplace_back(std::string(name),
                             std::string(it->value.GetString(), it->value.GetStringLength()));
  }
  const rapidjson::Value* values = JsonMember(s, "values");
  if (values == nullptr || !values->IsArray()) {
    *why = "values is not an array";
    return false;
  }
  out->times.reserve(values->Size());
  out->values.reserve(values->Size());
  for (const auto& p : values->GetArray()) {
    double v = 0;
    if (!p.IsArray() || p.Size() != 2 || !p[0].IsNumber() || !p[1].IsString() ||
        !ParsePromValue(std::string_view(p[1].GetString(), p[1].GetStringLength()), &v)) {
      *why = "a point is not [time, \"value\"]";
      return false;
    }
    const double t = p[0].GetDouble();
    if (!out->times.empty() && !(t > out->times.back())) {
      *why = "point times do not ascend";
      return false;
    }
    out->times.push_back(t);
    out->values.push_back(v);
  }
  return true;
}

// FastDecodeMatrix's scanner: a successful matrix straight into RangeSeries. Every member is
// looked up as the DOM path does (the first of duplicate members counts) and whatever that path
// would refuse or read otherwise is declined.
class MatrixParser : public JsonScanner {
 public:
  MatrixParser(std::string_view s, const LabelFilter* keep, RangeResult* out)
      : JsonScanner(s, keep), out_(out) {}

  bool Top() {
    return Answer("matrix", &out_->warnings, [this] { return Series(); });
  }

 private:
  bool Series() {
    RangeSeries series;
    bool have_metric = false, have_values = false;
    if (!Expect('{') || Peek('}')) return false;
    do {
      std::string_view key;
      if (!String(&key) || !Expect(':')) return false;
      if ((key == "metric" && have_metric) || (key == "values" && have_values)) {
        if (!Skip(0)) return false;
      } else if (key == "metric") {
        if (!Metric(&series.metric)) return false;
        have_metric = true;
      } else if (key == "values") {
        if (!Values(&series)) return false;
        have_values = true;
      } else if (!Skip(0)) {
        return false;
      }
    } while (Comma());
    if (!Expect('}') || !have_metric || !have_values) return false;
    out_->points += series.times.size();
    expected_points_ = std::max(expected_points_, series.times.size());
    out_->series.push_back(std::move(series));
    return true;
  }

  // Every label value must be a string, kept or not (as the DOM path checks).
  bool Metric(Labels* out) {
    if (!Expect('{')) return false;
    if (Peek('}')) return true;
    do {
      std::string_view name, value;
      if (!String(&name)) return false;
      const bool kept = Kept(name);
      // Copied: an escaped name lives in scratch_, which the value reuses.
      std::string kept_name;
      if (kept) kept_name = name;
      if (!Expect(':') || !String(&value)) return false;
      if (kept) out->emplace_back(std::move(kept_name), std::string(value));
    } while (Comma());
    return Expect('}');
  }

  // [[time, "value"], ...], times ascending. The arrays are sized for the longest series so far:
  // the series of one answer mostly have a point at every step.
  bool Values(RangeSeries* s) {
    if (!Expect('[')) return false;
    s->times.reserve(expected_points_);
    s->values.reserve(expected_points_);
    if (Peek(']')) return true;
    do {
      double t = 0, v = 0;
      if (!PlainPoint(&t, &v)) {
        std::string_view text;
        if (!Expect('[') || !Time(&t) || !Expect(',') || !String(&text) || !Expect(']'))
          return false;
        if (!FastDecimal(text.data(), text.data() + text.size(), &v) && !ParsePromValue(text, &v))
          return false;
      }
      if (!s->times.empty() && !(t > s->times.back())) return false;
      s->times.push_back(t);
      s->values.push_back(v);
    } while (Comma());
    return Expect(']');
  }

  // The point as Prometheus writes nearly every one, [1795303219.437,"42.5"] with no space and
  // plain decimals, read in one pass; false (nothing read) for any other form, which the general
  // path then reads: exactly the bytes and the values it would.
  [[gnu::always_inline]] bool PlainPoint(double* t, double* v) {
    const char* q = p_;
    if (q == end_ || *q != '[') return false;
    const char* time = ++q;
    if (!ReadFastDecimal(&q, end_, t)) return false;
    const char* digits = time + (*time == '-' ? 1 : 0);
    if (digits[0] == '0' && q - digits > 1 && digits[1] != '.') return false;  // JSON: "01"
    if (end_ - q < 2 || q[0] != ',' || q[1] != '"') return false;
    q += 2;
    if (!ReadFastDecimal(&q, end_, v)) return false;
    if (end_ - q < 2 || q[0] != '"' || q[1] != ']') return false;
    p_ = q + 2;
    return true;
  }

  // A point's time: a plain decimal (1795303219 or 1795303219.437, as Prometheus and
  // VictoriaMetrics write them), which the DOM converts exactly as ReadFastDecimal does. Other
  // forms (exponents, more than 19 digits, where the DOM rounds less carefully) are declined.
  bool Time(double* out) {
    Ws();
    const char* q = p_;
    if (!ReadFastDecimal(&q, end_, out)) return false;
    const char* digits = p_ + (*p_ == '-' ? 1 : 0);
    if (digits[0] == '0' && q - digits > 1 && digits[1] != '.') return false;  // JSON: "01"
    if (q < end_ && IsJsonNumberChar(*q)) return false;                        // "1.5e3", "1.2.3"
    p_ = q;
    return true;
  }

  RangeResult* const out_;
  size_t expected_points_ = 0;
};

}  // namespace

bool FastDecodeMatrix(std::string_view body, const LabelFilter* keep, RangeResult* out) {
  MatrixParser parser(body, keep, out);
  if (parser.Top()) return true;
  *out = RangeResult{};
  return false;
}

StatusOr<RangeResult> DecodeRangeResponse(std::string body, int http_status,
                                          const LabelFilter* keep) {
  if (RangeResult fast; FastDecodeMatrix(body, keep, &fast)) return fast;
  // Anything else (errors, other result types, malformed answers): the DOM, which names it.
  return DecodeRangeResponseReference(std::move(body), http_status, keep);
}

StatusOr<RangeResult> DecodeRangeResponseReference(std::string body, int http_status,
                                                   const LabelFilter* keep) {
  if (http_status >= 500 && body.find("\"status\"") == std::string::npos)
    return Status::Unavailable("Prometheus answered HTTP " + std::to_string(http_status))
        .set_http_status(http_status);
  rapidjson::Document doc;
  doc.ParseInsitu(body.data());
  if (doc.HasParseError())
    return RangeMalformed(JsonParseError(doc) + " (HTTP " + std::to_string(http_status) + ")",
                          http_status);
  if (!doc.IsObject()) return RangeMalformed("top level is not an object", http_status);
  RangeResult result;
  if (const auto* w = JsonMember(doc, "warnings"); w != nullptr && w->IsArray())
    for (const auto& x : w->GetArray())
      if (x.IsString()) result.warnings.emplace_back(x.GetString(), x.GetStringLength());
  const std::string status = JsonString(doc, "status");
  if (status == "error") {
    const std::string type = JsonString(doc, "errorType", "unknown");
    const std::string msg =
        "Prometheus " + type + " error: " + JsonString(doc, "error", "(no message)");
    Status st = type == "bad_data" ? Status::InvalidArgument(msg) : Status::Unavailable(msg);
    return st.set_http_status(http_status);
  }
  if (status != "success")
    return RangeMalformed("\"status\" is \"" + status + "\", want success or error", http_status);
  const rapidjson::Value* data = JsonMember(doc, "data");
  if (data == nullptr || !data->IsObject())
    return RangeMalformed("no \"data\" object", http_status);
  const std::string type = JsonString(*data, "resultType");
  if (type != "matrix")
    return RangeMalformed("resultType is \"" + type + "\", a range query gives \"matrix\"",
                          http_status);
  const rapidjson::Value* res = JsonMember(*data, "result");
  if (res == nullptr || !res->IsArray())
    return RangeMalformed("no \"data.result\" array", http_status);
  result.series.reserve(res->Size());
  size_t index = 0;
  for (const auto& s : res->GetArray()) {
    RangeSeries series;
    std::string why;
    if (!ReadSeries(s, keep, &series, &why))
      return RangeMalformed("result[" + std::to_string(index) + "]: " + why, http_status);
    result.points += series.times.size();
    result.series.push_back(std::move(series));
    ++index;
  }
  return result;
}

double StepGridAtOrAfter(double t, double step) {
  const int64_t every = std::llround(step * 1000);
  const int64_t at = std::llround(t * 1000);
  const int64_t up = at / every + (at % every > 0 ? 1 : 0);  // a ceiling for either sign
  return static_cast<double>(up * every) / 1000;
}

bool WholeMilliseconds(double step) {
  return std::fabs(step * 1000 - std::round(step * 1000)) <= 1e-6 * step * 1000;
}

std::vector<RangeChunk> PlanRangeChunks(double from, double to, double step, size_t max_steps) {
  std::vector<RangeChunk> chunks;
  if (!(to >= from) || !(step > 0) || max_steps == 0) return chunks;
  // Steps are counted, not accumulated, so that float error does not drift the grid.
  const size_t total = static_cast<size_t>(std::floor((to - from) / step + 1e-9)) + 1;
  for (size_t first = 0; first < total; first += max_steps) {
    const size_t n = std::min(max_steps, total - first);
    chunks.push_back(RangeChunk{from + static_cast<double>(first) * step,
                                from + static_cast<double>(first + n - 1) * step, n});
  }
  return chunks;
}

LabelViews RangeSeriesViews(const RangeSeries& series) {
  LabelViews v;
  v.reserve(series.metric.size());
  for (const auto& [k, val] : series.metric) v.emplace_back(k, val);
  return v;
}

RangeStepReader::RangeStepReader(const std::vector<RangeSeries>* series) : series_(series) {
  views_.reserve(series->size());
  for (const RangeSeries& s : *series) views_.push_back(RangeSeriesViews(s));
  if (!LayOutBySteps()) cursor_.assign(series->size(), 0);
}

bool RangeStepReader::LayOutBySteps() {
  const std::vector<RangeSeries>& series = *series_;
  const size_t n = series.size();
  size_t points = 0;
  const RangeSeries* longest = nullptr;
  for (const RangeSeries& s : series) {
    points += s.times.size();
    if (longest == nullptr || s.times.size() > longest->times.size()) longest = &s;
  }
  if (points == 0) return false;
  // The rows: the longest series' times. Each row must be the only one within the tolerance of
  // a step fed, and the grid must not hold much more than the points.
  const std::vector<double>& rows = longest->times;
  const size_t m = rows.size();
  for (size_t r = 1; r < m; ++r)
    if (!(rows[r] - rows[r - 1] > 2 * kRangeStepTolerance)) return false;
  if (m * n > 2 * points) return false;
  // Where each series' points fall among the rows. Nearly always every series has a point at
  // every row: then no presence is kept.
  const bool full = points == m * n;
  if (full) {
    for (const RangeSeries& s : series)
      if (!std::equal(s.times.begin(), s.times.end(), rows.begin())) return false;
  } else {
    present_.assign(m * n, 0);
    for (size_t s = 0; s < n; ++s) {
      const std::vector<double>& times = series[s].times;
      size_t r = 0;
      for (double t : times) {
        while (r < m && rows[r] < t) ++r;
        if (r == m || rows[r] != t) {  // a time that is not a row
          present_ = {};
          return false;
        }
        present_[r * n + s] = 1;
      }
    }
  }
  values_.assign(m * n, 0);
  // A few series at a time, row by row: each row's cells of those series are written together
  // while each series' values are read in order.
  constexpr size_t kBlock = 16;
  for (size_t s0 = 0; s0 < n; s0 += kBlock) {
    const size_t s1 = std::min(n, s0 + kBlock);
    const double* next[kBlock];
    for (size_t s = s0; s < s1; ++s) next[s - s0] = series[s].values.data();
    for (size_t r = 0; r < m; ++r) {
      double* row = &values_[r * n];
      for (size_t s = s0; s < s1; ++s)
        if (full || present_[r * n + s]) row[s] = *next[s - s0]++;
    }
  }
  rows_ = rows;
  return true;
}

bool RangeStepReader::Feed(double t, SampleSink* sink) {
  bool any = false;
  if (!rows_.empty()) {
    while (row_ < rows_.size() && rows_[row_] < t - kRangeStepTolerance) ++row_;
    if (row_ == rows_.size() || rows_[row_] > t + kRangeStepTolerance) return false;
    // Every point of a row has the row's time exactly (LayOutBySteps compared them).
    const double time = rows_[row_];
    const size_t n = views_.size();
    const double* row = &values_[row_ * n];
    if (present_.empty()) {
      for (size_t s = 0; s < n; ++s) sink->AddAt(views_[s], row[s], time);
      return n > 0;
    }
    const uint8_t* present = &present_[row_ * n];
    for (size_t s = 0; s < n; ++s) {
      if (present[s] == 0) continue;
      sink->AddAt(views_[s], row[s], time);
      any = true;
    }
    return any;
  }
  for (size_t s = 0; s < series_->size(); ++s) {
    const RangeSeries& rs = (*series_)[s];
    size_t& c = cursor_[s];
    while (c < rs.times.size() && rs.times[c] < t - kRangeStepTolerance) ++c;
    if (c == rs.times.size() || rs.times[c] > t + kRangeStepTolerance) continue;
    sink->AddAt(views_[s], rs.values[c], rs.times[c]);
    any = true;
  }
  return any;
}

}  // namespace ds
