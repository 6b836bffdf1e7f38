#include "web/status_page.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include "common/json_util.h"
#include "common/rfc3339.h"
#include "web/web_assets.h"

namespace ds {
namespace {

WebResponse Text(int status, std::string body) {
  WebResponse r;
  r.status = status;
  r.body = std::move(body) + "\n";
  return r;
}

void WriteNumber(JsonWriter& w, double v) {
  // JSON has no NaN/Inf; write them as strings the way Prometheus does.
  if (std::isnan(v))
    w.String("NaN");
  else if (std::isinf(v))
    w.String(v > 0 ? "+Inf" : "-Inf");
  else
    w.Double(v);
}

// A reason not to be ready, or "" when ready.
std::string NotReadyReason(const ControllerView& v) {
  if (!v.cache_synced)
    return "node cache not synced" + (v.cache_error.empty() ? std::string() : ": " + v.cache_error);
  // A cache that stopped hearing from the API server decides on a frozen view of the nodes.
  if (v.cache_stale)
    return "node cache stale: no successful list or watch event for " +
           std::to_string(static_cast<long>(v.cache_seconds_since_progress)) + " s" +
           (v.cache_error.empty() ? std::string() : ": " + v.cache_error);
  if (v.seconds_since_cycle < 0) return "no evaluation cycle has run yet";
  if (v.last_cycle.standby) return "";  // a standby queries nothing; its cache is what it serves
  // Readiness wants fresh decisions, so it looks at whole cycles; liveness (/healthz) only asks
  // whether the loop still moves.
  if (v.seconds_since_cycle > 3 * v.interval_seconds + 60)
    return "evaluation loop stalled: last cycle ended " +
           std::to_string(static_cast<long>(v.seconds_since_cycle)) + " s ago";
  if (v.last_cycle.all_queries_failed) {
    std::string err = v.last_cycle.rules.empty() ? "" : v.last_cycle.rules.front().error;
    return std::string("every rule's query failed in the last cycle (Prometheus unreachable?)") +
           (v.last_cycle.releasing ? ", releasing the marks (onPrometheusDown: release)" : "") +
           ": " + err;
  }
  return "";
}

}  // namespace

std::string RenderRebalanceJson(const ControllerView& view) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("enabled");
  w.Bool(view.rebalance.has_value());
  if (view.rebalance) {
    const RebalanceReport& r = *view.rebalance;
    w.Key("dryRun");
    w.Bool(r.dry_run);
    w.Key("nodes");
    w.StartArray();
    for (const RebalanceNodeReport& n : r.nodes) {
      w.StartObject();
      w.Key("name");
      WriteString(w, n.name);
      w.Key("qualification");
      WriteString(w, n.qualification);
      if (!n.rule.empty()) {
        w.Key("rule");
        WriteString(w, n.rule);
        w.Key("load");
        WriteNumber(w, n.load);
        w.Key("goal");
        WriteNumber(w, n.goal);
        w.Key("loadAfter");
        WriteNumber(w, n.load_after);
      }
      if (!n.limit.empty()) {
        w.Key("limitedBy");
        WriteString(w, n.limit);
      }
      w.Key("candidates");
      w.Uint64(n.candidates);
      w.Key("picks");
      w.Uint64(n.picks);
      w.Key("noFit");
      w.Uint64(n.no_fit);
      w.Key("markHeld");
      w.Bool(n.held);
      w.EndObject();
    }
    w.EndArray();
    w.Key("evictions");
    w.StartArray();
    for (const EvictionRecord& e : r.recent) {
      w.StartObject();
      w.Key("pod");
      WriteString(w, e.pod);
      w.Key("node");
      WriteString(w, e.node);
      w.Key("result");
      WriteString(w, e.result);
      w.Key("to");
      WriteString(w, e.to);
      w.Key("rule");
      WriteString(w, e.rule);
      w.Key("usage");
      WriteNumber(w, e.usage);
      w.Key("load");
      WriteNumber(w, e.load);
      w.Key("goal");
      WriteNumber(w, e.goal);
      w.Key("at");
      WriteString(w, FormatRfc3339(e.at_wall));
      w.EndObject();
    }
    w.EndArray();
    w.Key("underused");
    w.StartArray();
    for (const UnderusedNodeReport& u : r.underused) {
      w.StartObject();
      w.Key("name");
      WriteString(w, u.name);
      w.Key("state");
      WriteString(w, u.state);
      w.Key("cpu");
      WriteNumber(w, u.load[0]);
      w.Key("memory");
      WriteNumber(w, u.load[1]);
      if (u.below_since_wall > 0) {
        w.Key("belowSince");
        WriteString(w, FormatRfc3339(u.below_since_wall));
      }
      if (!u.limit.empty()) {
        w.Key("limitedBy");
        WriteString(w, u.limit);
      }
      w.Key("picks");
      w.Uint64(u.picks);
      w.EndObject();
    }
    w.EndArray();
    const EffectFigures& f = r.figures;
    w.Key("figures");
    w.StartObject();
    w.Key("episodes");
    w.Uint64(f.episodes);
    w.Key("episodesEvicted");
    w.Uint64(f.episodes_evicted);
    w.Key("episodesJudged");
    w.Uint64(f.episodes_judged);
    w.Key("episodesRelieved");
    w.Uint64(f.episodes_relieved);
    w.Key("evictions");
    w.Uint64(f.evictions);
    w.Key("replacements");
    w.Uint64(f.replacements);
    w.Key("bounceBacks");
    w.Uint64(f.bounce_backs);
    w.Key("discoveryRate");
    WriteNumber(w, f.DiscoveryRate());
    w.Key("evictionRate");
    WriteNumber(w, f.EvictionRate());
    w.Key("effectiveness");
    WriteNumber(w, f.Effectiveness());
    w.EndObject();
    w.Key("podLists");
    w.Uint64(r.pod_lists);
  }
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize()) + "\n";
}

namespace {

const char* StateName(NodeTable::State s) {
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

// null for NaN and infinities: the page shows "no value" for them.
void WriteValue(JsonWriter& w, double v) {
  if (std::isfinite(v))
    w.Double(v);
  else
    w.Null();
}

}  // namespace

std::string RenderStateJson(const ControllerView& view) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  const CycleReport& c = view.last_cycle;
  w.StartObject();
  w.Key("mark");
  WriteString(w, view.mark.ToString());
  // What each node's mark column (below) holds when the mark is ours: the label's value, or in
  // taint mode the taint's.
  w.Key("markValue");
  WriteString(w, view.mark.UsesLabel() ? view.mark.value : view.mark.taint.value);
  if (!view.mark.levels.empty()) {
    // Graded marks: every level's name and value, coolest first (the last is markValue).
    w.Key("markLevels");
    w.StartArray();
    for (size_t k = view.mark.LevelCount(); k-- > 0;) {
      const Mark m = view.mark.Below(k);
      w.StartObject();
      w.Key("name");
      WriteString(w, view.mark.LevelName(k));
      w.Key("value");
      WriteString(w, m.UsesLabel() ? m.value : m.taint.value);
      w.EndObject();
    }
    w.EndArray();
  }
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
  const NodeTable* t = c.table.get();
  w.Key("rules");
  w.StartArray();
  if (t != nullptr) {
    for (size_t r = 0; r < t->rules.size(); ++r) {
      const NodeTable::Column& col = t->rules[r];
      w.StartObject();
      w.Key("name");
      WriteString(w, col.rule);
      w.Key("operator");
      WriteString(w, col.op);
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
      w.EndObject();
    }
  }
  w.EndArray();
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
      w.StartArray();
      WriteString(w, n->name);
      // Our key's value as the node carries it: ours, someone else's, or none (""); in taint
      // mode the value of the taint with our key and effect.
      const std::string* value = nullptr;
      if (view.mark.UsesLabel()) {
        value = FindLabel(n->labels, view.mark.key);
      } else {
        for (const Taint& taint : n->taints)
          if (taint.key == view.mark.taint.key && taint.effect == view.mark.taint.effect)
            value = &taint.value;
      }
      WriteString(w, value == nullptr ? std::string_view() : std::string_view(*value));
      if (view.mark.AnyLevelIsOn(n->labels, n->taints)) ++marked;
      w.String(known ? StateName(t->states[k]) : "new");
      if (known && t->since_wall[k] > 0)
        w.Int64(static_cast<int64_t>(t->since_wall[k]));
      else
        w.Null();
      w.StartArray();
      if (known)
        for (size_t r = 0; r < t->rules.size(); ++r) WriteValue(w, t->Value(k, r));
      w.EndArray();
      w.EndArray();
    }
  }
  w.EndArray();
  w.Key("markedNodes");
  w.Uint64(marked);
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
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize()) + "\n";
}

std::string RenderNodesJson(const ControllerView& view) {
  std::vector<const NodeInfo*> labelled;
  if (view.nodes != nullptr) {
    for (const auto& n : view.nodes->nodes) {
      if (view.mark.AnyLevelIsOn(n->labels, n->taints)) labelled.push_back(n.get());
    }
  }
  // And the nodes outside the managed set that carry our label (the original listed every node
  // with it): marked by hand, by another tool, or before the nodeSelector changed.
  std::set<const NodeInfo*> unmanaged;
  if (view.marked_nodes != nullptr) {
    for (const auto& n : view.marked_nodes->nodes) {
      const bool managed = view.nodes != nullptr && view.nodes->Find(n->name) != nullptr;
      if (!managed && view.mark.LevelOn(n->labels, {}).has_value()) unmanaged.insert(n.get());
    }
    for (const NodeInfo* n : unmanaged) labelled.push_back(n);
    std::sort(labelled.begin(), labelled.end(),
              [](const NodeInfo* a, const NodeInfo* b) { return a->name < b->name; });
  }
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
  // Why a node is (or was last seen) hot: the rules that hold it.
  auto write_rules = [&](const std::string& node) {
    w.Key("rules");
    w.StartArray();
    auto it = view.last_cycle.holds.find(node);
    if (it != view.last_cycle.holds.end()) {
      for (const auto& h : it->second) {
        w.StartObject();
        w.Key("rule");
        WriteString(w, h.rule);
        w.Key("value");
        WriteNumber(w, h.value);
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
  };
  w.Key("nodes");
  w.StartArray();
  for (const auto* n : labelled) {
    w.StartObject();
    w.Key("name");
    WriteString(w, n->name);
    if (unmanaged.count(n)) {  // no rule of ours judges it: nothing holds it, nothing removes it
      w.Key("managed");
      w.Bool(false);
    }
    if (!view.mark.levels.empty()) {  // graded marks: the level the node is at
      w.Key("level");
      WriteString(w, view.mark.LevelName(view.mark.LevelOn(n->labels, n->taints).value_or(0)));
    }
    write_rules(n->name);
    w.EndObject();
  }
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
    write_rules(name);
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
  return std::string(sb.GetString(), sb.GetSize()) + "\n";
}

namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;

// One scrape's exposition: a fresh Registry whose counters and gauges are set from the view's
// values. The controller keeps its counts where its logic keeps them (ReconcilerCounters, the
// cache's stats, the rebalancer's figures), so the registry holds nothing between scrapes.
// A HELP text must hold no newline or backslash: prometheus-cpp 1.0.1 writes HELP unescaped (it
// does escape label values).
class Exposition {
 public:
  Family<Gauge>& Gauges(const char* name, const char* help) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(registry_);
  }
  Family<Counter>& Counters(const char* name, const char* help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(registry_);
  }

  // The text format of these families and `more`, ordered by name and, within a family, by
  // label values, so that the output does not depend on prometheus-cpp's hash order.
  std::string Text(std::vector<prometheus::MetricFamily> more) const {
    std::vector<prometheus::MetricFamily> all = registry_.Collect();
    for (auto& f : more) all.push_back(std::move(f));
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    for (auto& f : all)
      std::sort(f.metric.begin(), f.metric.end(),
                [](const auto& a, const auto& b) { return a.label < b.label; });
    return prometheus::TextSerializer().Serialize(all);
  }

 private:
  prometheus::Registry registry_;
};

void Put(Family<Gauge>& f, double v, const prometheus::Labels& labels = {}) {
  f.Add(labels).Set(v);
}
// A counter of the scrape starts at 0: the controller's count is its one increment.
void Put(Family<Counter>& f, double v, const prometheus::Labels& labels = {}) {
  f.Add(labels).Increment(v);
}

}  // namespace

std::string RenderMetrics(const ControllerView& v) {
  Exposition e;
  const auto& c = v.counters;
  Put(e.Gauges("dynamic_scheduler_build_info",
               "Always 1; the labels say which build runs (the version, the git commit it was "
               "built from, also as revision, and the compiler)."),
      1,
      {{"version", v.version},
       {"commit", v.commit},
       {"revision", v.commit},
       {"compiler", v.compiler}});
  Put(e.Counters("dynamic_scheduler_cycles_total", "Evaluation cycles run."), c.cycles);
  Put(e.Gauges("dynamic_scheduler_last_cycle_duration_seconds",
               "Duration of the last evaluation cycle."),
      v.last_cycle.duration_seconds);
  Put(e.Gauges("dynamic_scheduler_cycle_cpu_seconds",
               "Process CPU time used during the last cycle."),
      v.last_cycle.cpu_seconds);
  Put(e.Gauges("dynamic_scheduler_last_cycle_number",
               "The number of the last completed cycle, which the last-cycle figures describe "
               "(dynamic_scheduler_cycles_total counts cycles as they start)."),
      static_cast<double>(v.last_cycle.cycle));
  Put(e.Gauges("dynamic_scheduler_last_rebalance_cpu_seconds",
               "CPU time of the last cycle's rebalance step, on the thread that ran it (0 "
               "without a rebalance: section)."),
      v.last_cycle.rebalance_cpu_seconds);
  Put(e.Counters("dynamic_scheduler_rebalance_cpu_seconds_total",
                 "CPU time of the rebalance step, on the thread that ran it, over every cycle."),
      v.last_cycle.rebalance_cpu_seconds_total);
  auto& phases = e.Gauges("dynamic_scheduler_cycle_phase_seconds",
                          "Time of each phase of the last cycle (query: waiting on Prometheus; "
                          "decode summed over rules).");
  const CyclePhases& p = v.last_cycle.phases;
  for (auto [name, val] : {std::pair<const char*, double>{"query", p.query},
                           {"decode", p.decode},
                           {"decide", p.decide},
                           {"plan", p.plan},
                           {"write", p.write}})
    Put(phases, val, {{"phase", name}});
  auto& label_writes = e.Counters(
      "dynamic_scheduler_label_writes_total",
      "Label writes that succeeded, by operation (record: the held-by annotation alone).");
  Put(label_writes, c.label_sets, {{"op", "set"}});
  Put(label_writes, c.label_removals, {{"op", "remove"}});
  Put(label_writes, c.record_writes, {{"op", "record"}});
  Put(e.Counters("dynamic_scheduler_label_removals_changed_total",
                 "Label removals not written because the node's label or record changed since "
                 "the cycle read it (someone else's value is never removed)."),
      c.removals_changed);
  auto& taint_writes =
      e.Counters("dynamic_scheduler_taint_writes_total",
                 "Taint mode: writes that set or removed our taint, and taint edits refused with "
                 "409 because the node changed after it was read (read again and edited afresh).");
  Put(taint_writes, c.taint_sets, {{"op", "set"}});
  Put(taint_writes, c.taint_removals, {{"op", "remove"}});
  Put(taint_writes, c.taint_conflicts, {{"op", "conflict"}});
  auto& reloads =
      e.Counters("dynamic_scheduler_rule_reloads_total",
                 "Changes of the rule file: applied, or refused (the running rules were kept).");
  Put(reloads, v.reload.reloads, {{"result", "applied"}});
  Put(reloads, v.reload.refused, {{"result", "refused"}});
  Put(e.Gauges("dynamic_scheduler_rule_reload_last_success",
               "0 while the last change of the rule file is refused, else 1."),
      v.reload.last_ok ? 1 : 0);
  auto& mark_events =
      e.Counters("dynamic_scheduler_mark_events_total",
                 "Events on nodes whose mark was set or removed: posted, suppressed by the Event "
                 "rate limit, or failed.");
  Put(mark_events, c.events_posted, {{"result", "posted"}});
  Put(mark_events, c.events_suppressed, {{"result", "suppressed"}});
  Put(mark_events, c.event_errors, {{"result", "failed"}});
  Put(e.Counters("dynamic_scheduler_label_write_errors_total",
                 "Label writes that failed for good."),
      c.write_errors);
  Put(e.Gauges("dynamic_scheduler_label_changes_held_back",
               "Label changes of the last cycle left out because their node's last write was "
               "refused (each such node waits out its own backoff)."),
      v.last_cycle.held_back);
  Put(e.Counters("dynamic_scheduler_label_write_retries_total", "Label writes retried."),
      c.write_retries);
  auto& query_errors =
      e.Counters("dynamic_scheduler_query_errors_total", "Rule queries that failed, by rule.");
  for (const auto& [rule, n] : c.query_errors) Put(query_errors, n, {{"rule", rule}});
  auto& query_seconds = e.Gauges("dynamic_scheduler_rule_query_duration_seconds",
                                 "Query time of each rule in the last cycle.");
  auto& unmatched = e.Gauges("dynamic_scheduler_rule_unmatched_series",
                             "Series of the last cycle that named no known node.");
  auto& stale = e.Gauges(
      "dynamic_scheduler_rule_stale_values",
      "Node values of the last cycle older than the rule's maxAge, counted as missing data.");
  for (const auto& r : v.last_cycle.rules) {
    Put(query_seconds, r.query_seconds, {{"rule", r.name}});
    Put(unmatched, r.unmatched, {{"rule", r.name}});
    Put(stale, r.too_old, {{"rule", r.name}});
  }
  // Only with relative rules, so a configuration without them shows no empty family.
  bool relative = false;
  for (const auto& r : v.last_cycle.rules) relative = relative || r.relative;
  if (relative) {
    auto& mean = e.Gauges("dynamic_scheduler_rule_mean",
                          "relativeTo: mean rules: the mean of the managed nodes' values in the "
                          "last cycle (absent while fewer than minNodes nodes have one).");
    for (const auto& r : v.last_cycle.rules)
      if (r.relative && r.mean_known) Put(mean, r.mean, {{"rule", r.name}});
  }
  Put(e.Gauges("dynamic_scheduler_managed_nodes", "Nodes the controller manages."),
      v.last_cycle.managed_nodes);
  Put(e.Gauges("dynamic_scheduler_hot_nodes", "Nodes under pressure in the last cycle."),
      v.last_cycle.hot_nodes);
  Put(e.Gauges("dynamic_scheduler_mark_limit",
               "The most nodes that may carry the mark at once (maxMarkedFraction, maxMarked)."),
      v.last_cycle.mark_limit);
  Put(e.Gauges("dynamic_scheduler_prometheus_outage_seconds",
               "Seconds every rule's query has been failing (0 while Prometheus answers)."),
      v.last_cycle.outage_seconds);
  Put(e.Gauges("dynamic_scheduler_releasing_marks",
               "1 while the marks are removed for an outage (onPrometheusDown: release)."),
      v.last_cycle.releasing ? 1 : 0);
  Put(e.Gauges("dynamic_scheduler_capped_nodes",
               "Hot nodes left unmarked in the last cycle because the herd cap was reached."),
      v.last_cycle.capped.size());
  Put(e.Gauges("dynamic_scheduler_node_cache_synced",
               "1 once the node cache has listed the cluster."),
      v.cache_synced ? 1 : 0);
  Put(e.Gauges("dynamic_scheduler_node_cache_seconds_since_progress",
               "Seconds since the node cache's last successful LIST, watch event or BOOKMARK (-1: "
               "none yet); /status calls the cache stale above 300 s (or twice "
               "-watch_idle_timeout)."),
      v.cache_seconds_since_progress);
  Put(e.Gauges("dynamic_scheduler_node_cache_initial_sync_seconds",
               "Time from start to the first complete LIST."),
      v.cache_stats.initial_sync_seconds);
  Put(e.Gauges(
          "dynamic_scheduler_leader",
          "1 when this replica may write labels (it holds the lease, or leader election is off)."),
      !v.leader_election || v.is_leader ? 1 : 0);
  Put(e.Counters("dynamic_scheduler_leader_terms_total", "Times this replica became the leader."),
      v.leader_terms);
  Put(e.Gauges("process_resident_memory_bytes", "Resident memory size in bytes."), v.rss_bytes);
  Put(e.Counters("dynamic_scheduler_node_cache_lists_total", "Full node LISTs."),
      v.cache_stats.lists);
  Put(e.Counters("dynamic_scheduler_node_cache_expired_relists_total",
                 "LISTs forced by 410 Expired."),
      v.cache_stats.relists_expired);
  Put(e.Counters("dynamic_scheduler_node_cache_watch_restarts_total", "Watch streams that ended."),
      v.cache_stats.watch_restarts);
  Put(e.Counters("dynamic_scheduler_node_cache_events_total", "Watch events applied."),
      v.cache_stats.events);
  if (v.rebalance) {
    const RebalanceCounters& rc = v.rebalance_counters;
    const EffectFigures& f = v.rebalance->figures;
    auto& evictions = e.Counters(
        "dynamic_scheduler_evictions_total",
        "Evictions the rebalancer asked for, by result (evicted, blocked_by_pdb, multiple_pdbs, "
        "gone, error; dry_run: planned, not sent).");
    for (const char* r :
         {"evicted", "blocked_by_pdb", "multiple_pdbs", "gone", "error", "dry_run"}) {
      auto it = rc.evictions.find(r);
      Put(evictions, it == rc.evictions.end() ? 0 : it->second, {{"result", r}});
    }
    auto& skips = e.Counters(
        "dynamic_scheduler_eviction_skips_total",
        "Pods chosen for eviction but not evicted, and nodes not relieved, by reason (no_fit: "
        "no other node could take the pod; the others are the limits of rebalance.limits and "
        "windows; retry_wait: nothing could be evicted from the node at its last try).");
    for (const auto& [reason, n] : rc.skips) Put(skips, n, {{"reason", reason}});
    auto& underused =
        e.Gauges("dynamic_scheduler_underused_nodes",
                 "Nodes of rebalance.underused in the last cycle, by state (marked: this cycle; "
                 "draining: marked before and still below the bounds; drained: nothing left it may "
                 "move; capped: would be marked but maxNodes are being drained).");
    std::map<std::string, size_t> states = {
        {"marked", 0}, {"draining", 0}, {"drained", 0}, {"capped", 0}};
    for (const UnderusedNodeReport& u : v.rebalance->underused)
      if (states.count(u.state)) ++states[u.state];
    for (const auto& [state, n] : states) Put(underused, n, {{"state", state}});
    auto& underused_marks =
        e.Counters("dynamic_scheduler_underused_marks_total",
                   "Writes of the underused mark, by result (set, removed, failed).");
    for (const char* r : {"set", "removed", "failed"}) {
      auto it = rc.underused_marks.find(r);
      Put(underused_marks, it == rc.underused_marks.end() ? 0 : it->second, {{"result", r}});
    }
    auto& kept = e.Counters("dynamic_scheduler_pods_kept_total",
                            "Pods on nodes being relieved that are never evicted, by reason.");
    for (const auto& [reason, n] : rc.kept) Put(kept, n, {{"reason", reason}});
    Put(e.Counters("dynamic_scheduler_rebalance_pod_lists_total",
                   "Pod LISTs (one node's, an evicted pod's by name, or one evicted workload's in "
                   "its namespace)."),
        v.rebalance->pod_lists);
    auto& errors =
        e.Counters("dynamic_scheduler_rebalance_errors_total",
                   "Pod LISTs and pod usage queries that failed (one for the nodes to relieve "
                   "stops that cycle's relief), and events that could not be written.");
    Put(errors, rc.list_errors, {{"stage", "list"}});
    Put(errors, rc.usage_errors, {{"stage", "usage"}});
    Put(errors, rc.event_errors, {{"stage", "event"}});
    Put(e.Counters("dynamic_scheduler_rebalance_bounce_backs_total",
                   "Replacements of an evicted pod's workload bound to the node it left within "
                   "effectWindow."),
        f.bounce_backs);
    Put(e.Counters("dynamic_scheduler_rebalance_replacements_total",
                   "Replacements of evicted pods seen running."),
        f.replacements);
    Put(e.Gauges("dynamic_scheduler_rebalance_discovery_rate",
                 "Of the node-cycles rebalance.referenceQuery called hot, the share that carried "
                 "our mark (0 without the query)."),
        f.DiscoveryRate());
    Put(e.Gauges(
            "dynamic_scheduler_rebalance_eviction_rate",
            "Of the hot episodes that qualified for relief, the share where a pod was evicted."),
        f.EvictionRate());
    Put(e.Gauges("dynamic_scheduler_rebalance_effectiveness",
                 "Of the episodes with evictions whose effectWindow ended, the share whose node "
                 "fell below its clear threshold within it."),
        f.Effectiveness());
  }
  return e.Text(v.durations);
}

// Compares without an early exit, so the time taken does not tell how much of a guess was right.
bool SameSecret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

std::vector<Labels> FiringAlerts(const std::string& body) {
  std::vector<Labels> out;
  rapidjson::Document d;
  d.Parse<rapidjson::kParseIterativeFlag>(body.c_str(), body.size());
  if (d.HasParseError() || !d.IsObject()) return out;
  const auto* alerts = JsonMember(d, "alerts");
  if (alerts == nullptr || !alerts->IsArray()) return out;
  for (const auto& a : alerts->GetArray()) {
    if (out.size() == kMaxAlerts) break;
    if (!a.IsObject()) continue;
    const auto* status = JsonMember(a, "status");
    if (status != nullptr && (!status->IsString() || std::string(status->GetString()) != "firing"))
      continue;  // resolved: nothing to relieve
    const auto* labels = JsonMember(a, "labels");
    if (labels == nullptr || !labels->IsObject()) continue;
    Labels l;
    for (const auto& m : labels->GetObject())
      if (m.value.IsString())
        l.emplace_back(std::string(m.name.GetString(), m.name.GetStringLength()),
                       std::string(m.value.GetString(), m.value.GetStringLength()));
    out.push_back(std::move(l));
  }
  return out;
}

WebResponse HandleRequest(const WebRequest& req, const ControllerView& view,
                          const std::function<void()>& trigger, const std::string& webhook_token,
                          const std::function<void(std::vector<Labels>)>& alerted) {
  if (req.content_length > kMaxRequestBody) return Text(413, "request body too large");
  if (req.path == "/webhook") {
    if (req.method != "POST") {
      WebResponse r = Text(405, "method not allowed; use POST");
      r.headers.push_back("Allow: POST");
      return r;
    }
    if (!webhook_token.empty() && !SameSecret(req.authorization, "Bearer " + webhook_token)) {
      WebResponse r = Text(401, "unauthorized: the webhook needs its bearer token");
      r.headers.push_back("WWW-Authenticate: Bearer");
      return r;
    }
    if (alerted) alerted(FiringAlerts(req.body));
    trigger();
    return Text(202, "evaluation triggered");
  }
  static const char* kGetPaths[] = {"/status",    "/healthz",    "/nodes",
                                    "/metrics",   "/rebalance",  "/",
                                    "/ui/app.js", "/ui/app.css", "/api/v1/state"};
  bool known = false;
  for (const char* p : kGetPaths) known = known || req.path == p;
  if (!known)
    return Text(404,
                "not found; endpoints: / /api/v1/state /status /healthz /nodes /metrics /rebalance "
                "/webhook");
  if (req.method != "GET" && req.method != "HEAD") {
    WebResponse r = Text(405, "method not allowed; use GET");
    r.headers.push_back("Allow: GET, HEAD");
    return r;
  }
  if (req.path == "/status") {
    std::string why = NotReadyReason(view);
    if (!why.empty()) return Text(503, why);
    // Still ready: the running rules keep working. But whoever looks should learn that the
    // file they changed is not what runs.
    const std::string note =
        view.reload.last_ok
            ? ""
            : "; rule file change refused (the running rules are kept): " + view.reload.last_error;
    if (view.leader_election && !view.is_leader)
      return Text(
          200, "ok: standby, the lease is held by " +
                   (view.leader_holder.empty() ? std::string("nobody yet") : view.leader_holder) +
                   note);
    return Text(200, "ok" + note);
  }
  if (req.path == "/healthz") {
    // Judged on the loop's progress, not on whole cycles: a long write phase (hundreds of
    // changes against a slow API server) is alive and must not be killed mid-write.
    if (view.seconds_since_progress > 3 * view.interval_seconds + 60)
      return Text(503, "evaluation loop stalled: no progress for " +
                           std::to_string(static_cast<long>(view.seconds_since_progress)) + " s");
    return Text(200, "ok");
  }
  WebResponse r;
  if (const WebAsset* a = FindWebAsset(req.path)) {
    r.content_type = a->content_type;
    r.body = a->body;
    // The page runs only its own script and talks only to this server: a node name that got
    // past the page's escaping still could not load or send anything.
    r.headers.push_back(
        "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; "
        "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'");
    r.headers.push_back("X-Content-Type-Options: nosniff");
    return r;
  }
  if (req.path == "/api/v1/state") {
    r.content_type = "application/json";
    r.body = RenderStateJson(view);
    r.headers.push_back("Cache-Control: no-store");
    return r;
  }
  if (req.path == "/nodes") {
    r.content_type = "application/json";
    r.body = RenderNodesJson(view);
  } else if (req.path == "/rebalance") {
    r.content_type = "application/json";
    r.body = RenderRebalanceJson(view);
  } else {
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = RenderMetrics(view);
  }
  return r;
}

}  // namespace ds
