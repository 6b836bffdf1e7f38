#include "web/rebalance_json.h"

#include "common/rfc3339.h"
#include "web/json_values.h"

namespace ds {
namespace {}  // namespace

void WriteRebalanceNode(JsonWriter& w, const RebalanceNodeReport& n) {
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
    w.Key("unit");  // of load, goal and loadAfter: percent in use, or bytes available
    WriteString(w, ValueUnitName(n.unit));
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
  w.Key("wouldReturn");
  w.Uint64(n.would_return);
  w.Key("constraint");
  w.Uint64(n.constraint);
  w.Key("markHeld");
  w.Bool(n.held);
  if (!n.disrupted.empty()) {
    w.Key("otherDisruptors");  // pods left alone: someone else is moving them, by whom
    w.StartObject();
    for (const auto& [who, count] : n.disrupted) {
      w.Key(who.c_str());
      w.Uint64(count);
    }
    w.EndObject();
  }
  if (n.leaving_pods > 0) {
    // Already moving off the node, taken off `load` before the plan (in its unit); until when
    // ("" while one of the pods is still terminating: its settle time starts once it is gone).
    w.Key("leaving");
    w.StartObject();
    w.Key("pods");
    w.Uint64(n.leaving_pods);
    w.Key("usage");
    WriteNumber(w, n.leaving);
    w.Key("until");
    WriteString(w, n.leaving_until_wall > 0 ? FormatRfc3339(n.leaving_until_wall) : "");
    w.EndObject();
  }
  w.EndObject();
}

namespace {

void WriteUnderused(JsonWriter& w, const UnderusedNodeReport& u) {
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

void WriteFigures(JsonWriter& w, const EffectFigures& f) {
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
  w.Key("bounceBackRatio");
  WriteNumber(w, f.BounceBackRatio());
  w.Key("relievedEvictions");
  w.Uint64(f.relieved_evictions);
  w.Key("evictionsPerRelievedEpisode");
  WriteNumber(w, f.EvictionsPerRelief());
  w.Key("hotNodeSeconds");
  WriteNumber(w, f.hot_node_seconds);
  // The relieved episodes' time from the mark to the clear threshold: as /metrics' histogram,
  // each bound with the episodes at or under it (cumulative); `count` holds them all.
  w.Key("timeToRelief");
  w.StartObject();
  uint64_t count = 0;
  w.Key("buckets");
  w.StartArray();
  for (size_t i = 0; i < kTimeToReliefBuckets.size(); ++i) {
    count += f.time_to_relief[i];
    w.StartObject();
    w.Key("le");
    WriteNumber(w, kTimeToReliefBuckets[i]);
    w.Key("count");
    w.Uint64(count);
    w.EndObject();
  }
  w.EndArray();
  w.Key("count");
  w.Uint64(count + f.time_to_relief.back());
  w.Key("sumSeconds");
  WriteNumber(w, f.time_to_relief_sum);
  w.EndObject();
  w.EndObject();
}

// Each element of `items` as written by `write`, as an array under `key`.
template <typename Items, typename Write>
void WriteArray(JsonWriter& w, const char* key, const Items& items, Write write) {
  w.Key(key);
  w.StartArray();
  for (const auto& item : items) write(w, item);
  w.EndArray();
}

}  // namespace

void WriteEviction(JsonWriter& w, const EvictionRecord& e) {
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
  w.Key("unit");  // of usage, load and goal
  WriteString(w, ValueUnitName(e.unit));
  w.Key("at");
  WriteString(w, FormatRfc3339(e.at_wall));
  w.EndObject();
}

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
    WriteArray(w, "nodes", r.nodes, WriteRebalanceNode);
    WriteArray(w, "evictions", r.recent, WriteEviction);
    WriteArray(w, "underused", r.underused, WriteUnderused);
    WriteArray(w, "paused", r.paused, [](JsonWriter& w, const auto& p) {
      w.StartObject();
      w.Key("workload");
      WriteString(w, p.first);
      w.Key("until");
      WriteString(w, FormatRfc3339(p.second));
      w.EndObject();
    });
    w.Key("figures");
    WriteFigures(w, r.figures);
    w.Key("podLists");
    w.Uint64(r.pod_lists);
  }
  w.EndObject();
  return JsonBody(sb);
}

}  // namespace ds
