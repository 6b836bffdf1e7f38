#include "web/state_json.h"

#include <string_view>

#include "common/labels.h"
#include "common/rfc3339.h"
#include "web/json_values.h"
#include "web/routes.h"

namespace ds {

const char* NodeStateName(NodeTable::State s) {
  switch (s) {
    case NodeTable::State::kHot:
      return "hot";
    case NodeTable::State::kCold:
      return "cold";
    case NodeTable::State::kCapped:
      return "capped";
    case NodeTable::State::kHeld:
      return "held";
    case NodeTable::State::kUnknown:
      break;
  }
  return "unknown";
}

namespace {

void WriteMark(JsonWriter& w, const Mark& mark) {
  w.Key("mark");
  WriteString(w, mark.ToString());
  // What each node's mark column (below) holds when the mark is ours: the label's value, or in
  // taint mode the taint's.
  w.Key("markValue");
  WriteString(w, mark.UsesLabel() ? mark.value : mark.taint.value);
  if (mark.levels.empty()) return;
  // Graded marks: every level's name and value, coolest first (the last is markValue).
  w.Key("markLevels");
  w.StartArray();
  for (size_t k = mark.LevelCount(); k-- > 0;) {
    const Mark m = mark.Below(k);
    w.StartObject();
    w.Key("name");
    WriteString(w, mark.LevelName(k));
    w.Key("value");
    WriteString(w, m.UsesLabel() ? m.value : m.taint.value);
    w.EndObject();
  }
  w.EndArray();
}

// The cycle, readiness, leadership, outage and reload: the page's header.
void WriteStatus(JsonWriter& w, const ControllerView& view) {
  const CycleReport& c = view.last_cycle;
  w.Key("version");
  WriteString(w, view.version);
  w.Key("cycle");
  w.Uint64(c.cycle);
  if (c.started_wall > 0) {
    w.Key("evaluatedAt");
    WriteString(w, FormatRfc3339(c.started_wall));
  }
  w.Key("intervalSeconds");
  WriteNumber(w, view.interval_seconds);
  const std::string why = NotReadyReason(view);
  w.Key("ready");
  w.Bool(why.empty());
  w.Key("notReady");
  WriteString(w, why);
  w.Key("leaderElection");
  w.Bool(view.leader_election);
  w.Key("leader");
  w.Bool(!view.leader_election || view.is_leader);
  w.Key("identity");
  WriteString(w, view.identity);
  w.Key("leaseHolder");
  WriteString(w, view.leader_holder);
  w.Key("standby");
  w.Bool(c.standby);
  w.Key("allQueriesFailed");
  w.Bool(c.all_queries_failed);
  w.Key("outageSeconds");
  WriteNumber(w, c.outage_seconds);
  w.Key("releasing");
  w.Bool(c.releasing);
  w.Key("reloadOk");
  w.Bool(view.reload.last_ok);
  w.Key("reloadError");
  WriteString(w, view.reload.last_error);
  w.Key("markLimit");
  w.Uint64(c.mark_limit);
  w.Key("hotNodes");
  w.Uint64(c.hot_nodes);
  w.Key("rebalance");
  w.Bool(view.rebalance.has_value());
}

void WriteRules(JsonWriter& w, const NodeTable* t, const CycleReport& c) {
  w.Key("rules");
  w.StartArray();
  for (size_t r = 0; t != nullptr && r < t->rules.size(); ++r) {
    const NodeTable::Column& col = t->rules[r];
    w.StartObject();
    w.Key("name");
    WriteString(w, col.rule);
    w.Key("operator");
    WriteString(w, col.op);
    w.Key("unit");
    WriteString(w, ValueUnitName(col.unit));
    w.Key("threshold");
    WriteValue(w, col.threshold);
    w.Key("clearThreshold");
    WriteValue(w, col.clear_threshold);
    if (col.relative) {  // the thresholds above are this mean's; null: too few values
      w.Key("mean");
      WriteValue(w, col.mean);
    }
    if (r < c.rules.size() && !c.rules[r].ok) {
      w.Key("error");
      WriteString(w, c.rules[r].error);
    }
    if (r < c.rules.size() && c.rules[r].WarmingUp()) {  // predict: history still coming in
      w.Key("warmingUp");
      WriteString(w, WarmingUp(c.rules[r]));
    }
    w.EndObject();
  }
  w.EndArray();
}

// Our key's value as the node carries it: ours, someone else's, or none (null); in taint mode the
// value of the taint with our key and effect.
const std::string* MarkValueOn(const Mark& mark, const NodeInfo& n) {
  if (mark.UsesLabel()) return FindLabel(n.labels, mark.key);
  const std::string* value = nullptr;
  for (const Taint& taint : n.taints)
    if (taint.key == mark.taint.key && taint.effect == mark.taint.effect) value = &taint.value;
  return value;
}

// One node's row; `k` is its row in the last cycle's table `t`, or npos when the cycle did not
// see it.
void WriteNodeRow(JsonWriter& w, const NodeInfo& n, const Mark& mark, const NodeTable* t,
                  size_t k) {
  const bool known = k != std::string::npos;
  w.StartArray();
  WriteString(w, n.name);
  const std::string* value = MarkValueOn(mark, n);
  WriteString(w, value == nullptr ? std::string_view() : std::string_view(*value));
  w.String(known ? NodeStateName(t->states[k]) : "new");
  if (known && t->since_wall[k] > 0)
    w.Int64(static_cast<int64_t>(t->since_wall[k]));
  else
    w.Null();
  w.StartArray();
  if (known)
    for (size_t r = 0; r < t->rules.size(); ++r) {
      if (t->Applies(k, r))
        WriteValue(w, t->Value(k, r));
      else
        w.String("n/a");  // another pool's rule: not missing data, which is null
    }
  w.EndArray();
  w.EndArray();
}

// The nodes, and how many of them carry the mark ("markedNodes").
void WriteNodes(JsonWriter& w, const ControllerView& view, const NodeTable* t) {
  // One array per node, not an object: at 10,000 nodes the keys would double the bytes. The
  // nodes are the cache's now (so a mark written a moment ago shows), with the values and
  // verdict of the last cycle (merged by name: both are sorted).
  w.Key("nodeFields");
  w.StartArray();
  for (const char* f : {"name", "mark", "state", "since"}) w.String(f);
  w.String("values");
  w.EndArray();
  w.Key("nodes");
  w.StartArray();
  size_t marked = 0;
  if (view.nodes != nullptr) {
    size_t k = 0;
    const size_t nt = t == nullptr ? 0 : t->names.size();
    for (const auto& n : view.nodes->nodes) {
      while (k < nt && t->names[k] < n->name) ++k;
      const bool known = k < nt && t->names[k] == n->name;
      WriteNodeRow(w, *n, view.mark, t, known ? k : std::string::npos);
      if (view.mark.AnyLevelIsOn(n->labels, n->taints)) ++marked;
    }
  }
  w.EndArray();
  w.Key("markedNodes");
  w.Uint64(marked);
}

void WriteChanges(JsonWriter& w, const CycleReport& c) {
  w.Key("changes");
  w.StartArray();
  if (c.recent_changes != nullptr) {
    // Newest first: what the page shows on top.
    for (auto it = c.recent_changes->rbegin(); it != c.recent_changes->rend(); ++it) {
      w.StartObject();
      w.Key("at");
      WriteString(w, FormatRfc3339(it->at_wall));
      w.Key("node");
      WriteString(w, it->node);
      w.Key("change");
      w.String(it->marked ? "marked" : "unmarked");
      w.Key("reason");
      WriteString(w, it->reason);
      if (!it->level.empty()) {
        w.Key("level");
        WriteString(w, it->level);
      }
      w.EndObject();
    }
  }
  w.EndArray();
}

}  // namespace

std::string RenderStateJson(const ControllerView& view) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  const NodeTable* t = view.last_cycle.table.get();
  w.StartObject();
  WriteMark(w, view.mark);
  WriteStatus(w, view);
  WriteRules(w, t, view.last_cycle);
  WriteNodes(w, view, t);
  WriteChanges(w, view.last_cycle);
  w.EndObject();
  return JsonBody(sb);
}

}  // namespace ds
