#include "rebalance/eviction_ledger.h"

#include <algorithm>
#include <cmath>

#include "common/json_util.h"

namespace ds {

std::vector<LedgerEntry> TrimLedger(std::vector<LedgerEntry> entries, double now_wall) {
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [&](const LedgerEntry& e) {
                                 return now_wall - e.at_wall >= kLedgerSpanSeconds;
                               }),
                entries.end());
  std::stable_sort(entries.begin(), entries.end(), [](const LedgerEntry& a, const LedgerEntry& b) {
    return a.at_wall < b.at_wall;
  });
  if (entries.size() > kLedgerMaxEntries)
    entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(
                                                         entries.size() - kLedgerMaxEntries));
  return entries;
}

std::string EncodeLedger(const std::vector<LedgerEntry>& entries) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartArray();
  for (const LedgerEntry& e : entries) {
    w.StartObject();
    w.Key("t");
    w.Double(e.at_wall);
    w.Key("n");
    WriteString(w, e.node);
    w.Key("p");
    WriteString(w, e.pod);
    w.Key("u");
    WriteString(w, e.uid);
    w.Key("w");
    WriteString(w, e.workload);
    w.Key("s");
    WriteString(w, e.selector);
    w.Key("c");
    w.Double(std::isfinite(e.cpu) ? e.cpu : 0);
    w.Key("m");
    w.Double(std::isfinite(e.memory) ? e.memory : 0);
    w.Key("d");
    w.Bool(e.drain);
    w.EndObject();
  }
  w.EndArray();
  return buf.GetString();
}

StatusOr<std::vector<LedgerEntry>> DecodeLedger(const std::string& text) {
  std::vector<LedgerEntry> out;
  if (text.empty()) return out;
  rapidjson::Document d;
  // Full precision: a refused eviction's entry is taken back by its time (Remove), which must come
  // back as it was written (RapidJSON's default parse is off in the last bit for about a fifth of
  // wall times, and the entry then stayed, charging the limits for an eviction that never was).
  d.Parse<rapidjson::kParseFullPrecisionFlag>(text.c_str(), text.size());
  if (d.HasParseError()) return Status::InvalidArgument("eviction ledger: " + JsonParseError(d));
  if (!d.IsArray()) return Status::InvalidArgument("eviction ledger: not a JSON array");
  size_t i = 0;
  for (const rapidjson::Value& v : d.GetArray()) {
    const std::string at = "eviction ledger: entry " + std::to_string(i++) + ": ";
    if (!v.IsObject()) return Status::InvalidArgument(at + "not an object");
    LedgerEntry e;
    auto str = [&](const char* k, std::string* s) { return RequiredString(v, k, at, s); };
    auto num = [&](const char* k, double* x) { return RequiredNumber(v, k, at, x); };
    RETURN_NOT_OK(num("t", &e.at_wall));
    RETURN_NOT_OK(str("n", &e.node));
    RETURN_NOT_OK(str("p", &e.pod));
    RETURN_NOT_OK(str("u", &e.uid));
    RETURN_NOT_OK(str("w", &e.workload));
    RETURN_NOT_OK(str("s", &e.selector));
    RETURN_NOT_OK(num("c", &e.cpu));
    RETURN_NOT_OK(num("m", &e.memory));
    const rapidjson::Value* dr = JsonMember(v, "d");
    if (dr == nullptr || !dr->IsBool())
      return Status::InvalidArgument(at + "\"d\" missing or not a boolean");
    e.drain = dr->GetBool();
    if (e.pod.find('/') == std::string::npos || e.node.empty())
      return Status::InvalidArgument(at + "\"p\" is not namespace/name or \"n\" is empty");
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace ds
