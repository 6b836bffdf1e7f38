#include "promql/reference_decoder.h"

#include <rapidjson/document.h>

#include <string_view>

#include "common/json_util.h"

namespace ds {
namespace {

Status Malformed(const std::string& why, int http_status) {
  return Status::Unavailable("malformed Prometheus response: " + why).set_http_status(http_status);
}

// Reads a [timestamp, "value"] pair.
bool ReadPoint(const rapidjson::Value& p, Sample* s) {
  if (!p.IsArray() || p.Size() != 2 || !p[0].IsNumber() || !p[1].IsString()) return false;
  s->timestamp = p[0].GetDouble();
  return ParsePromValue(std::string_view(p[1].GetString(), p[1].GetStringLength()), &s->value);
}

bool Kept(const LabelFilter* keep, const rapidjson::Value& name) {
  if (keep == nullptr) return true;
  std::string_view n(name.GetString(), name.GetStringLength());
  for (const auto& k : *keep)
    if (k == n) return true;
  return false;
}

bool ReadMetric(const rapidjson::Value& m, Labels* out, const LabelFilter* keep) {
  if (!m.IsObject()) return false;
  out->reserve(keep == nullptr ? m.MemberCount() : keep->size());
  for (auto it = m.MemberBegin(); it != m.MemberEnd(); ++it) {
    if (!it->value.IsString()) return false;
    if (!Kept(keep, it->name)) continue;
    out->emplace_back(std::string(it->name.GetString(), it->name.GetStringLength()),
                      std::string(it->value.GetString(), it->value.GetStringLength()));
  }
  return true;
}

}  // namespace

StatusOr<QueryResult> DecodeQueryResponseReference(std::string body, int http_status,
                                                   const LabelFilter* keep) {
  rapidjson::Document doc;
  doc.ParseInsitu(body.data());
  if (doc.HasParseError()) {
    return Malformed(JsonParseError(doc) + " (HTTP " + std::to_string(http_status) + ")",
                     http_status);
  }
  if (!doc.IsObject()) return Malformed("top level is not an object", http_status);
  std::string status = JsonString(doc, "status");
  QueryResult result;
  if (const auto* w = JsonMember(doc, "warnings"); w != nullptr && w->IsArray()) {
    for (const auto& x : w->GetArray())
      if (x.IsString()) result.warnings.emplace_back(x.GetString(), x.GetStringLength());
  }
  if (status == "error") {
    std::string type = JsonString(doc, "errorType", "unknown");
    std::string msg = "Prometheus " + type + " error: " + JsonString(doc, "error", "(no message)");
    Status st = type == "bad_data" ? Status::InvalidArgument(msg) : Status::Unavailable(msg);
    return st.set_http_status(http_status);
  }
  if (status != "success")
    return Malformed("\"status\" is \"" + status + "\", want success or error", http_status);
  const rapidjson::Value* data = JsonMember(doc, "data");
  if (data == nullptr || !data->IsObject()) return Malformed("no \"data\" object", http_status);
  result.result_type = JsonString(*data, "resultType");
  const rapidjson::Value* res = JsonMember(*data, "result");
  if (res == nullptr || !res->IsArray()) return Malformed("no \"data.result\" array", http_status);

  if (result.result_type == "scalar") {
    Sample s;
    if (!ReadPoint(*res, &s))
      return Malformed("scalar result is not [time, \"value\"]", http_status);
    result.samples.push_back(std::move(s));
    return result;
  }
  if (result.result_type == "string")
    return Status::InvalidArgument("query returns a string; a rule needs a number per node");
  bool matrix = result.result_type == "matrix";
  if (!matrix && result.result_type != "vector")
    return Malformed("unknown resultType \"" + result.result_type + "\"", http_status);

  result.samples.reserve(res->Size());
  size_t index = 0;
  for (const auto& series : res->GetArray()) {
    Sample s;
    const rapidjson::Value* metric = JsonMember(series, "metric");
    if (metric == nullptr || !ReadMetric(*metric, &s.metric, keep))
      return Malformed("result[" + std::to_string(index) + "].metric is not an object of strings",
                       http_status);
    if (matrix) {
      const rapidjson::Value* values = JsonMember(series, "values");
      if (values == nullptr || !values->IsArray())
        return Malformed("result[" + std::to_string(index) + "].values is not an array",
                         http_status);
      if (values->Empty()) {
        ++index;
        continue;
      }
      if (!ReadPoint((*values)[values->Size() - 1], &s))
        return Malformed("result[" + std::to_string(index) + "] has a bad point", http_status);
    } else {
      const rapidjson::Value* value = JsonMember(series, "value");
      if (value == nullptr || !ReadPoint(*value, &s))
        return Malformed("result[" + std::to_string(index) + "].value is not [time, \"value\"]",
                         http_status);
    }
    result.samples.push_back(std::move(s));
    ++index;
  }
  return result;
}

}  // namespace ds
