#include "promql/range_query.h"

#include <rapidjson/document.h>

#include <cmath>
#include <string_view>

#include "common/json_util.h"

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

}  // namespace

StatusOr<RangeResult> DecodeRangeResponse(std::string body, int http_status,
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

RangeStepReader::RangeStepReader(const std::vector<RangeSeries>* series)
    : series_(series), cursor_(series->size(), 0) {
  views_.reserve(series->size());
  for (const RangeSeries& s : *series) views_.push_back(RangeSeriesViews(s));
}

bool RangeStepReader::Feed(double t, SampleSink* sink) {
  bool any = false;
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
