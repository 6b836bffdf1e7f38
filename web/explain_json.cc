#include "web/explain_json.h"

#include <algorithm>

#include "common/rfc3339.h"
#include "common/url_query.h"
#include "web/json_values.h"
#include "web/rebalance_json.h"
#include "web/state_json.h"

namespace ds {

namespace {

// Why the node's pods are (not) looked at, in one code and one sentence: from the cycle's verdict
// and, for a marked node, the rebalancer's report of it.
struct NodeVerdict {
  std::string code, because;
};

NodeVerdict ReliefVerdict(const RebalanceNodeReport& r) {
  if (r.qualification == "not_long_enough")
    return {"waiting", "marked, not yet for rebalance.after (or its rule's relieveAfter)"};
  if (r.qualification == "not_selected")
    return {"not_selected", "rebalance.nodeSelector does not select it: it is marked only"};
  if (r.qualification == "not_marked")
    return {"marking", "its mark is not in the node cache yet: relief waits until it is"};
  if (r.qualification == "nothing_to_relieve")
    return {"nothing_to_relieve",
            "no rule holding it measures a resource its pods use, or it cooled"};
  if (r.qualification == "in_motion")
    return {"in_motion", "the pods already leaving it bring it to its goal"};
  if (r.limit == "retry_wait")
    return {"retry_wait",
            "nothing could be evicted at the last try: tried again after rebalance.nodeCooldown"};
  if (r.limit == "ledger_unreadable")
    return {"ledger_unreadable", "the eviction ledger could not be read: nothing is evicted"};
  if (!r.limit.empty()) {
    const ReasonInfo info = DescribeReason(r.limit, DecisionStage::kLimits);
    if (info.verdict != PodVerdict::kUnknown) return {r.limit, info.because};
    const ReasonInfo other = DescribeReason(r.limit, DecisionStage::kKubeletOrder);
    if (other.verdict != PodVerdict::kUnknown) return {r.limit, other.because};
    const ReasonInfo disruptor = DescribeReason(r.limit, DecisionStage::kDisruptors);
    return {r.limit, disruptor.because};
  }
  if (r.picks > 0) return {"relieved", "relieved: the plan chose pods to move"};
  return {"no_pod_moves", "relieved, but none of its pods can move now (see pods)"};
}

NodeVerdict VerdictOf(const ControllerView& view, const NodeTable* table, size_t row,
                      const RebalanceNodeReport* relief) {
  if (table == nullptr) return {"no_cycle", "no cycle has judged the nodes yet"};
  if (row == table->names.size())
    return {"not_managed", "the controller does not manage it (the rules' nodeSelector)"};
  if (view.rebalance)  // the mirror mode (rebalance.underused): its pods move off it
    for (const UnderusedNodeReport& u : view.rebalance->underused)
      if (u.name == table->names[row])
        return {"underused_" + u.state,
                "rebalance.underused: it stayed below its bounds, and is " + u.state +
                    (u.limit.empty() ? "" : " (limited by " + u.limit + ")") +
                    ": its pods are moved off it to empty it"};
  const NodeTable::State state = table->states[row];
  if (state == NodeTable::State::kCold)
    return {"cold", "no rule holds it: the pods of a node that is not marked are not moved"};
  if (state == NodeTable::State::kUnknown)
    return {"unknown", "no evidence this cycle (no value from the rules): nothing changes"};
  if (state == NodeTable::State::kCapped)
    return {"capped", "hot, but the herd cap left it unmarked: its pods are not moved"};
  if (!view.rebalance)
    return {"marked", "marked; rebalancing is off (no rebalance: in rule.yaml): no pod moves"};
  if (relief == nullptr)
    return {"marking", "hot; its mark is being set: relief starts once the cache has seen it"};
  return ReliefVerdict(*relief);
}

void WriteRules(JsonWriter& w, const NodeTable& t, size_t row) {
  w.Key("rules");
  w.StartArray();
  for (size_t c = 0; c < t.rules.size(); ++c) {
    if (!t.Applies(row, c)) continue;
    const NodeTable::Column& col = t.rules[c];
    w.StartObject();
    w.Key("rule");
    WriteString(w, col.rule);
    w.Key("op");
    WriteString(w, col.op);
    w.Key("value");
    WriteValue(w, t.Value(row, c));
    w.Key("threshold");
    WriteValue(w, col.threshold);
    w.Key("clearThreshold");
    WriteValue(w, col.clear_threshold);
    w.Key("unit");
    WriteString(w, ValueUnitName(col.unit));
    w.EndObject();
  }
  w.EndArray();
}

// The checks of rebalance/decision.h in order: those before the deciding one passed, it
// decided, those after were not asked.
void WriteChecks(JsonWriter& w, const PodDecision& d, const ReasonInfo& info) {
  w.Key("checks");
  w.StartArray();
  const size_t at = static_cast<size_t>(d.stage);
  for (size_t s = 0; s < kDecisionStages; ++s) {
    w.StartObject();
    w.Key("check");
    w.String(StageName(static_cast<DecisionStage>(s)));
    w.Key("result");
    if (s < at) {
      w.String("passed");
    } else if (s == at) {
      w.String(info.verdict == PodVerdict::kMoves ? "done" : "stopped");
      w.Key("reason");
      WriteString(w, d.reason);
    } else {
      w.String("not_reached");
    }
    w.EndObject();
  }
  w.EndArray();
}

void WriteDecision(JsonWriter& w, const PodDecision& d, bool with_checks) {
  const ReasonInfo info = DescribeReason(d.reason, d.stage);
  w.StartObject();
  w.Key("pod");
  WriteString(w, d.pod);
  if (!d.workload.empty()) {
    w.Key("workload");
    WriteString(w, d.workload);
  }
  w.Key("verdict");
  w.String(PodVerdictName(info.verdict));
  w.Key("stage");
  w.String(StageName(d.stage));
  w.Key("reason");
  WriteString(w, d.reason);
  w.Key("because");
  w.String(info.because);
  if (*info.change != '\0') {
    w.Key("change");
    w.String(info.change);
  }
  if (!d.detail.empty()) {
    w.Key("detail");
    WriteString(w, d.detail);
  }
  if (!d.to.empty()) {
    w.Key("to");
    WriteString(w, d.to);
  }
  if (std::isfinite(d.usage)) {
    w.Key("usage");  // its share of the node's load, or its working set for a bytes rule
    w.Double(d.usage);
    w.Key("unit");
    w.String(ValueUnitName(d.unit));
  }
  if (d.order > 0) {
    w.Key("order");  // its place in the plan's order (the kubelet's for memory)
    w.Uint64(d.order);
  }
  if (with_checks) WriteChecks(w, d, info);
  w.EndObject();
}

// The pods in the order a reader wants them: what moves first, then the plan's order, then by
// the check that stopped them, then by name.
std::vector<const PodDecision*> Ordered(const NodeDecisions& nd) {
  std::vector<const PodDecision*> out;
  for (const PodDecision& d : nd.pods) out.push_back(&d);
  std::stable_sort(out.begin(), out.end(), [](const PodDecision* a, const PodDecision* b) {
    if (a->stage != b->stage) return a->stage > b->stage;  // the furthest along first
    if ((a->order > 0) != (b->order > 0)) return a->order > 0;
    if (a->order != b->order) return a->order < b->order;
    return a->pod < b->pod;
  });
  return out;
}

const NodeDecisions* DecisionsOf(const ControllerView& view, const std::string& node) {
  if (!view.rebalance || !view.rebalance->decisions) return nullptr;
  auto it = view.rebalance->decisions->find(node);
  return it == view.rebalance->decisions->end() ? nullptr : &it->second;
}

// The node's part of an answer: its rules, its verdict, its relief and (with `pods`) its pods.
void WriteNode(JsonWriter& w, const ControllerView& view, const std::string& node, bool pods) {
  const NodeTable* table = view.last_cycle.table.get();
  size_t row = 0;
  if (table != nullptr) {
    auto it = std::lower_bound(table->names.begin(), table->names.end(), node);
    row = static_cast<size_t>(it - table->names.begin());
    if (it == table->names.end() || *it != node) row = table->names.size();
  }
  const RebalanceNodeReport* relief = nullptr;
  if (view.rebalance)
    for (const RebalanceNodeReport& r : view.rebalance->nodes)
      if (r.name == node) relief = &r;
  const NodeVerdict v = VerdictOf(view, table, row, relief);
  w.StartObject();
  w.Key("node");
  WriteString(w, node);
  if (table != nullptr && row < table->names.size()) {
    w.Key("state");
    w.String(NodeStateName(table->states[row]));
    if (table->since_wall[row] > 0) {
      w.Key("holdsSince");
      WriteString(w, FormatRfc3339(table->since_wall[row]));
    }
    WriteRules(w, *table, row);
  }
  w.Key("verdict");
  WriteString(w, v.code);
  w.Key("because");
  WriteString(w, v.because);
  if (relief != nullptr) {
    w.Key("relief");
    WriteRebalanceNode(w, *relief);
  }
  const NodeDecisions* nd = DecisionsOf(view, node);
  if (pods && nd != nullptr) {
    w.Key("decided");
    WriteString(w, FormatRfc3339(nd->at_wall));
    w.Key("destinations");  // where replacements were looked for, least loaded first
    w.StartArray();
    for (const std::string& d : nd->destinations) WriteString(w, d);
    w.EndArray();
    w.Key("pods");
    w.StartArray();
    for (const PodDecision* d : Ordered(*nd)) WriteDecision(w, *d, false);
    w.EndArray();
  }
  w.EndObject();
}

// The pod's last eviction (kept across restarts), newest first; null: none.
const EvictionRecord* LastEviction(const ControllerView& view, const std::string& pod) {
  if (!view.rebalance) return nullptr;
  const auto& recent = view.rebalance->recent;
  for (auto it = recent.rbegin(); it != recent.rend(); ++it)
    if (it->pod == pod) return &*it;
  return nullptr;
}

void WritePod(JsonWriter& w, const ControllerView& view, const std::string& pod,
              const std::string& node_hint, const std::string& uid) {
  // Its decision in the last cycle that listed its node: the hinted node's first. With `uid`, not
  // another pod of the same name (a StatefulSet's pod re-created elsewhere).
  const PodDecision* found = nullptr;
  const NodeDecisions* on = nullptr;
  auto same = [&](const PodDecision& d) {
    return d.pod == pod && (uid.empty() || d.uid.empty() || d.uid == uid);
  };
  if (view.rebalance && view.rebalance->decisions) {
    if (const NodeDecisions* nd = DecisionsOf(view, node_hint))
      for (const PodDecision& d : nd->pods)
        if (same(d)) found = &d, on = nd;
    for (const auto& [name, nd] : *view.rebalance->decisions)
      for (const PodDecision& d : nd.pods)
        if (found == nullptr && same(d)) found = &d, on = &nd;
  }
  const EvictionRecord* evicted = LastEviction(view, pod);
  w.StartObject();
  w.Key("pod");
  WriteString(w, pod);
  std::string node = on != nullptr ? on->node : evicted != nullptr ? evicted->node : node_hint;
  if (found != nullptr) {
    w.Key("source");
    w.String("cycle");  // the last cycle that listed its node's pods
    w.Key("decided");
    WriteString(w, FormatRfc3339(on->at_wall));
    w.Key("decision");
    WriteDecision(w, *found, true);
  } else if (evicted != nullptr) {
    w.Key("source");
    w.String("eviction");  // its node is no longer relieved; its eviction is on record
  } else {
    w.Key("source");
    w.String(node.empty() ? "none" : "node");
    w.Key("because");
    w.String(node.empty()
                 ? "no decision about this pod is kept: the pods of a node are listed only while "
                   "it is relieved; name its node (node=) for the node's state"
                 : "its node's pods were not listed while it ran there: the node's state says "
                   "why");
  }
  if (evicted != nullptr) {
    w.Key("eviction");
    WriteEviction(w, *evicted);
    const ReasonInfo info = DescribeReason(evicted->result, DecisionStage::kEviction);
    w.Key("evictionBecause");
    w.String(info.because);
  }
  if (!node.empty()) {
    w.Key("nodeState");
    WriteNode(w, view, node, false);
  }
  w.EndObject();
}

ExplainAnswer Error(int status, const std::string& message) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("error");
  WriteString(w, message);
  w.EndObject();
  return ExplainAnswer{status, JsonBody(sb)};
}

// Kubernetes names (DNS labels and subdomains; the page and scripts send nothing else): anything
// else is refused, so no other byte reaches the answer.
bool IsName(const std::string& s) {
  return !s.empty() && s.size() <= 253 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_';
  });
}

}  // namespace

ExplainAnswer RenderExplain(const std::string& query, const ControllerView& view) {
  // A standby decides nothing: its records are none, or an old term's. The API server's service
  // proxy picks any ready endpoint, so the caller asks again (kubectl dynamic-scheduler does).
  if (view.leader_election && !view.is_leader)
    return Error(503,
                 "this replica is a standby (the leader is " +
                     (view.leader_holder.empty() ? std::string("unknown") : view.leader_holder) +
                     "); ask again to reach the leader");
  auto pod = QueryValue(query, "pod");
  auto node = QueryValue(query, "node");
  auto uid = QueryValue(query, "uid");
  if (!pod.ok()) return Error(400, pod.status().message());
  if (!node.ok()) return Error(400, node.status().message());
  if (!uid.ok()) return Error(400, uid.status().message());
  if (node->has_value() && !IsName(**node)) return Error(400, "node= must be a node's name");
  if (uid->has_value() && !IsName(**uid)) return Error(400, "uid= must be a pod's UID");
  if (!pod->has_value() && !node->has_value())
    return Error(400, "name a pod (pod=NAMESPACE/NAME) or a node (node=NAME)");
  if (pod->has_value()) {
    const std::string& p = **pod;
    const size_t slash = p.find('/');
    if (slash == std::string::npos || !IsName(p.substr(0, slash)) || !IsName(p.substr(slash + 1)))
      return Error(400, "pod= must be NAMESPACE/NAME");
  }
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  if (pod->has_value()) {
    WritePod(w, view, **pod, node->value_or(""), uid->value_or(""));
  } else {
    const std::string& n = **node;
    const NodeTable* t = view.last_cycle.table.get();
    const bool known = (view.nodes != nullptr && view.nodes->Find(n) != nullptr) ||
                       (t != nullptr && std::binary_search(t->names.begin(), t->names.end(), n));
    if (!known) return Error(404, "no node \"" + n + "\" in the controller's node cache");
    WriteNode(w, view, n, true);
  }
  return ExplainAnswer{200, JsonBody(sb)};
}

}  // namespace ds
