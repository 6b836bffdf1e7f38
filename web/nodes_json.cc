#include "web/nodes_json.h"

#include <algorithm>
#include <set>

#include "common/rfc3339.h"
#include "web/json_values.h"

namespace ds {
namespace {

// The managed nodes carrying the mark, and the nodes outside the managed set that carry our label
// (in taint mode our taint; the original listed every node with the label): marked by hand, by
// another tool, or before the nodeSelector changed. Those are also put in `unmanaged`.
std::vector<const NodeInfo*> MarkedNodes(const ControllerView& view,
                                         std::set<const NodeInfo*>& unmanaged) {
  std::vector<const NodeInfo*> labelled;
  if (view.nodes != nullptr) {
    for (const auto& n : view.nodes->nodes) {
      if (view.mark.AnyLevelIsOn(n->labels, n->taints)) labelled.push_back(n.get());
    }
  }
  if (view.marked_nodes != nullptr) {
    for (const auto& n : view.marked_nodes->nodes) {
      const bool managed = view.nodes != nullptr && view.nodes->Find(n->name) != nullptr;
      if (!managed && view.mark.LevelOn(n->labels, n->taints).has_value())
        unmanaged.insert(n.get());
    }
    for (const NodeInfo* n : unmanaged) labelled.push_back(n);
    std::sort(labelled.begin(), labelled.end(),
              [](const NodeInfo* a, const NodeInfo* b) { return a->name < b->name; });
  }
  return labelled;
}

// Why a node is (or was last seen) hot: the rules that hold it.
void WriteHolds(JsonWriter& w, const CycleReport& cycle, const std::string& node) {
  w.Key("rules");
  w.StartArray();
  auto it = cycle.holds.find(node);
  if (it != cycle.holds.end()) {
    for (const auto& h : it->second) {
      w.StartObject();
      w.Key("rule");
      WriteString(w, h.rule);
      w.Key("value");
      WriteNumber(w, h.value);
      w.Key("unit");
      WriteString(w, ValueUnitName(h.unit));
      // For people: the value and threshold in the rule's unit (the numbers above stay raw).
      w.Key("shown");
      WriteString(
          w, FormatValue(h.value, h.unit) + " " + h.op + " " + FormatValue(h.threshold, h.unit));
      w.Key("operator");
      WriteString(w, h.op);
      w.Key("threshold");
      WriteNumber(w, h.threshold);
      w.Key("clearThreshold");
      WriteNumber(w, h.clear_threshold);
      if (h.relative) {  // relativeTo: mean: the thresholds above are this mean's
        w.Key("mean");
        WriteNumber(w, h.mean);
      }
      w.Key("since");
      WriteString(w, FormatRfc3339(h.since_wall));
      w.Key("stale");
      w.Bool(h.stale);
      w.EndObject();
    }
  }
  w.EndArray();
}

void WriteMarkedNode(JsonWriter& w, const ControllerView& view, const NodeInfo& n, bool unmanaged) {
  w.StartObject();
  w.Key("name");
  WriteString(w, n.name);
  if (unmanaged) {  // no rule of ours judges it: nothing holds it, nothing removes it
    w.Key("managed");
    w.Bool(false);
  }
  if (!view.mark.levels.empty()) {  // graded marks: the level the node is at
    w.Key("level");
    WriteString(w, view.mark.LevelName(view.mark.LevelOn(n.labels, n.taints).value_or(0)));
  }
  WriteHolds(w, view.last_cycle, n.name);
  w.EndObject();
}

}  // namespace

std::string RenderNodesJson(const ControllerView& view) {
  std::set<const NodeInfo*> unmanaged;
  const std::vector<const NodeInfo*> labelled = MarkedNodes(view, unmanaged);
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("type");
  WriteString(w, (view.mark.mode == Mark::Mode::kLabel ? "Label " : "Mark ") +
                     view.mark.ToString() + " Nodes");
  w.Key("num");
  w.Uint64(labelled.size());
  w.Key("node_names");
  w.StartArray();
  for (const auto* n : labelled) WriteString(w, n->name);
  w.EndArray();
  w.Key("nodes");
  w.StartArray();
  for (const auto* n : labelled) WriteMarkedNode(w, view, *n, unmanaged.count(n) > 0);
  w.EndArray();
  // Hot but unmarked: the herd cap allows no more marks (rules/herd_cap.h).
  w.Key("mark_limit");
  w.Uint64(view.last_cycle.mark_limit);
  w.Key("capped");
  w.StartArray();
  for (const auto& name : view.last_cycle.capped) {
    w.StartObject();
    w.Key("name");
    WriteString(w, name);
    WriteHolds(w, view.last_cycle, name);
    w.EndObject();
  }
  w.EndArray();
  w.Key("cycle");
  w.Uint64(view.last_cycle.cycle);
  if (view.last_cycle.started_wall > 0) {
    w.Key("evaluated_at");
    WriteString(w, FormatRfc3339(view.last_cycle.started_wall));
  }
  w.EndObject();
  return JsonBody(sb);
}

}  // namespace ds
