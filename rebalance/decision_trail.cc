#include "rebalance/decision_trail.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "common/json_util.h"

namespace ds {

std::string EncodeTrail(const std::deque<EvictionRecord>& trail) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartArray();
  auto num = [&](const char* k, double v) {
    w.Key(k);
    w.Double(std::isfinite(v) ? v : 0);
  };
  auto str = [&](const char* k, const std::string& v) {
    w.Key(k);
    WriteString(w, v);
  };
  for (const EvictionRecord& r : trail) {
    w.StartObject();
    num("t", r.at_wall);
    str("p", r.pod);
    str("n", r.node);
    str("o", r.to);
    str("r", r.rule);
    str("x", r.result);
    num("u", r.usage);
    num("l", r.load);
    num("g", r.goal);
    str("k", ValueUnitName(r.unit));
    w.EndObject();
  }
  w.EndArray();
  return buf.GetString();
}

StatusOr<std::deque<EvictionRecord>> DecodeTrail(const std::string& text) {
  std::deque<EvictionRecord> out;
  if (text.empty()) return out;
  rapidjson::Document d;
  // Full precision: an eviction is matched by its time, which must come back as it was written
  // (RapidJSON's default parse is off in the last bit for about a fifth of wall times).
  d.Parse<rapidjson::kParseFullPrecisionFlag>(text.c_str(), text.size());
  if (d.HasParseError()) return Status::InvalidArgument("decision trail: " + JsonParseError(d));
  if (!d.IsArray()) return Status::InvalidArgument("decision trail: not a JSON array");
  size_t i = 0;
  for (const rapidjson::Value& v : d.GetArray()) {
    const std::string at = "decision trail: record " + std::to_string(i++) + ": ";
    if (!v.IsObject()) return Status::InvalidArgument(at + "not an object");
    auto str = [&](const char* k, std::string* s) { return RequiredString(v, k, at, s); };
    auto num = [&](const char* k, double* x) { return RequiredNumber(v, k, at, x); };
    EvictionRecord r;
    std::string unit;
    RETURN_NOT_OK(num("t", &r.at_wall));
    RETURN_NOT_OK(str("p", &r.pod));
    RETURN_NOT_OK(str("n", &r.node));
    RETURN_NOT_OK(str("o", &r.to));
    RETURN_NOT_OK(str("r", &r.rule));
    RETURN_NOT_OK(str("x", &r.result));
    RETURN_NOT_OK(num("u", &r.usage));
    RETURN_NOT_OK(num("l", &r.load));
    RETURN_NOT_OK(num("g", &r.goal));
    RETURN_NOT_OK(str("k", &unit));
    if (!ParseValueUnit(unit, &r.unit))
      return Status::InvalidArgument(at + "\"k\" is not a unit: \"" + unit + "\"");
    if (r.pod.find('/') == std::string::npos || r.node.empty())
      return Status::InvalidArgument(at + "\"p\" is not namespace/name or \"n\" is empty");
    out.push_back(std::move(r));
  }
  return out;
}

std::deque<EvictionRecord> MergeTrail(const std::deque<EvictionRecord>& a,
                                      const std::deque<EvictionRecord>& b, size_t keep) {
  std::map<std::pair<double, std::string>, EvictionRecord> by_key;  // (time, pod): oldest first
  for (const auto* trail : {&a, &b})
    for (const EvictionRecord& r : *trail) {
      auto [it, added] = by_key.emplace(std::make_pair(r.at_wall, r.pod), r);
      if (!added && it->second.result == kRequestedResult) it->second = r;
    }
  std::deque<EvictionRecord> out;
  for (auto& [key, r] : by_key) out.push_back(std::move(r));
  while (out.size() > keep) out.pop_front();
  return out;
}

}  // namespace ds
