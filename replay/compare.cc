#include "replay/compare.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "common/json_util.h"
#include "replay/report_html.h"

namespace ds {
namespace {

using rapidjson::Value;

StatusOr<rapidjson::Document> Parse(const std::string& json, const std::string& what) {
  rapidjson::Document d;
  d.Parse(json.c_str(), json.size());
  if (d.HasParseError()) return Status::InvalidArgument(what + ": " + JsonParseError(d));
  if (!d.IsObject()) return Status::InvalidArgument(what + ": want an object");
  return d;
}

Value Number(const Value* v) {
  Value out;
  if (v && v->IsNumber()) out.SetDouble(v->GetDouble());
  return out;  // null
}

}  // namespace

StatusOr<std::string> AddCompare(const std::string& replay_json, const std::string& file,
                                 const std::string& other_json, const std::string& other_file) {
  ASSIGN_OR_RETURN(rapidjson::Document a, Parse(replay_json, file));
  ASSIGN_OR_RETURN(rapidjson::Document b, Parse(other_json, other_file));
  // Checks both documents' shape (and gives the per-node figures).
  ASSIGN_OR_RETURN(std::vector<NodeStats> sa, NodeStatsOf(replay_json));
  ASSIGN_OR_RETURN(std::vector<NodeStats> sb, NodeStatsOf(other_json));
  for (const char* key : {"from", "to", "step_seconds"}) {
    const Value* x = JsonMember(a, key);
    const Value* y = JsonMember(b, key);
    if (!x || !y || *x != *y)
      return Status::InvalidArgument(std::string("compare: the two replays differ in ") + key +
                                     ": they must replay the same history");
  }
  auto& alloc = a.GetAllocator();
  Value c(rapidjson::kObjectType);
  Value files(rapidjson::kArrayType);
  files.PushBack(Value(file.c_str(), alloc), alloc);
  files.PushBack(Value(other_file.c_str(), alloc), alloc);
  c.AddMember("files", files, alloc);

  size_t flaps[2] = {0, 0};
  for (const NodeStats& n : sa) flaps[0] += n.flaps;
  for (const NodeStats& n : sb) flaps[1] += n.flaps;
  Value totals(rapidjson::kObjectType);
  const Value* ta = JsonMember(a, "totals");
  const Value* tb = JsonMember(b, "totals");
  for (const char* key : {"marks", "marked_node_seconds", "max_marked_at_once",
                          "capped_node_seconds", "unmatched_series"}) {
    Value pair(rapidjson::kArrayType);
    pair.PushBack(Number(ta ? JsonMember(*ta, key) : nullptr), alloc);
    pair.PushBack(Number(tb ? JsonMember(*tb, key) : nullptr), alloc);
    totals.AddMember(Value(key, alloc), pair, alloc);
  }
  Value flap_pair(rapidjson::kArrayType);
  flap_pair.PushBack(Value(static_cast<uint64_t>(flaps[0])), alloc);
  flap_pair.PushBack(Value(static_cast<uint64_t>(flaps[1])), alloc);
  totals.AddMember("flaps", flap_pair, alloc);
  c.AddMember("totals", totals, alloc);

  // name -> (a's, b's) figures; a node one file never marks has zeros there.
  std::map<std::string, std::pair<const NodeStats*, const NodeStats*>> both;
  for (const NodeStats& n : sa) both[n.name].first = &n;
  for (const NodeStats& n : sb) both[n.name].second = &n;
  struct Diff {
    std::string name;
    size_t marks[2];
    double seconds[2];
  };
  std::vector<Diff> diffs;
  for (const auto& [name, p] : both) {
    Diff d{name,
           {p.first ? p.first->marks : 0, p.second ? p.second->marks : 0},
           {p.first ? p.first->marked_seconds : 0, p.second ? p.second->marked_seconds : 0}};
    if (d.marks[0] != d.marks[1] || d.seconds[0] != d.seconds[1]) diffs.push_back(d);
  }
  std::stable_sort(diffs.begin(), diffs.end(), [](const Diff& x, const Diff& y) {
    return std::fabs(x.seconds[1] - x.seconds[0]) > std::fabs(y.seconds[1] - y.seconds[0]);
  });
  Value nodes(rapidjson::kArrayType);
  for (const Diff& d : diffs) {
    Value n(rapidjson::kObjectType);
    n.AddMember("name", Value(d.name.c_str(), alloc), alloc);
    Value marks(rapidjson::kArrayType), seconds(rapidjson::kArrayType);
    for (int i = 0; i < 2; ++i) {
      marks.PushBack(Value(static_cast<uint64_t>(d.marks[i])), alloc);
      seconds.PushBack(Value(d.seconds[i]), alloc);
    }
    n.AddMember("marks", marks, alloc);
    n.AddMember("marked_seconds", seconds, alloc);
    nodes.PushBack(n, alloc);
  }
  c.AddMember("nodes", nodes, alloc);

  Value other(rapidjson::kObjectType);
  for (const char* key : {"from", "to", "step_seconds", "rules", "nodes", "totals"})
    if (const Value* v = JsonMember(b, key))
      other.AddMember(Value(key, alloc), Value(*v, alloc), alloc);
  c.AddMember("other", other, alloc);

  if (a.HasMember("compare")) a.RemoveMember("compare");
  a.AddMember("compare", c, alloc);
  return JsonToString(a);
}

}  // namespace ds
