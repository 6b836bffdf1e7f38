#include "replay/replay_json.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/rfc3339.h"

namespace ds {
namespace {

// Whole seconds as integers (the contract's N), anything else as a double.
void WriteSeconds(JsonWriter& w, double s) {
  if (std::isfinite(s) && s == std::floor(s) && std::fabs(s) < 9e15)
    w.Int64(static_cast<int64_t>(s));
  else if (std::isfinite(s))
    w.Double(s);
  else
    w.Null();
}

void WriteTime(JsonWriter& w, double t) {
  if (std::isnan(t))
    w.Null();
  else
    WriteString(w, FormatRfc3339(t));
}

void WriteMark(JsonWriter& w, const ReplayMark& m) {
  w.StartObject();
  w.Key("start");
  WriteTime(w, m.start);
  w.Key("end");
  WriteTime(w, m.end);
  w.Key("rules");
  w.StartArray();
  for (const auto& r : m.rules) WriteString(w, r);
  w.EndArray();
  w.Key("start_unix");
  WriteSeconds(w, m.start);
  w.Key("end_unix");
  WriteSeconds(w, m.end);
  w.Key("level");
  w.Uint64(m.below_hottest);
  w.Key("relieved_at");  // the first step at or below the clear threshold; null: not within it
  WriteTime(w, m.relieved_at);
  w.Key("relieved_after_seconds");
  WriteSeconds(w, std::isnan(m.relieved_at) ? m.relieved_at : m.relieved_at - m.start);
  w.EndObject();
}

}  // namespace

std::string ReplayJson(const ReplayResult& r, const std::function<void(JsonWriter&)>& workloads,
                       const std::function<void(JsonWriter&)>& rebalance) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("from");
  WriteTime(w, r.from);
  w.Key("to");
  WriteTime(w, r.to);
  w.Key("step_seconds");
  WriteSeconds(w, r.step_seconds);
  w.Key("rules");
  w.StartArray();
  for (const auto& name : r.rules) WriteString(w, name);
  w.EndArray();
  w.Key("nodes");
  w.StartObject();
  for (const ReplayNodeResult& n : r.nodes) {
    WriteString(w, n.name);
    w.StartObject();
    w.Key("marks");
    w.StartArray();
    for (const ReplayMark& m : n.marks) WriteMark(w, m);
    w.EndArray();
    w.Key("marked_seconds");
    WriteSeconds(w, n.marked_seconds);
    w.Key("capped_seconds");
    WriteSeconds(w, n.capped_seconds);
    w.Key("cap_hits");
    w.Uint64(n.cap_hits);
    w.Key("hot_marked_seconds");
    WriteSeconds(w, n.hot_marked_seconds);
    w.EndObject();
  }
  w.EndObject();
  w.Key("totals");
  w.StartObject();
  w.Key("marks");
  w.Uint64(r.totals.marks);
  w.Key("marked_node_seconds");
  WriteSeconds(w, r.totals.marked_node_seconds);
  w.Key("max_marked_at_once");
  w.Uint64(r.totals.max_marked_at_once);
  w.Key("capped_node_seconds");
  WriteSeconds(w, r.totals.capped_node_seconds);
  w.Key("unmatched_series");
  w.Uint64(r.totals.unmatched_series);
  w.Key("outage_steps");
  w.Uint64(r.totals.outage_steps);
  w.Key("steps");
  w.Uint64(r.timeline.times.size());
  w.Key("hot_marked_node_seconds");
  WriteSeconds(w, r.totals.hot_marked_node_seconds);
  w.Key("relieved_marks");
  w.Uint64(r.totals.relieved_marks);
  w.Key("time_to_relief_median_seconds");  // null without a relieved mark
  WriteSeconds(w, r.totals.time_to_relief_median);
  w.Key("time_to_relief_p90_seconds");
  WriteSeconds(w, r.totals.time_to_relief_p90);
  w.EndObject();
  w.Key("workloads");
  if (workloads) {
    workloads(w);
  } else {
    w.StartArray();
    w.EndArray();
  }
  if (rebalance) {
    w.Key("rebalance");
    rebalance(w);
  }
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

std::string ReplaySummary(const ReplayResult& r) {
  std::ostringstream o;
  o << "replay " << FormatRfc3339(r.from) << " .. " << FormatRfc3339(r.to) << ", step "
    << r.step_seconds << " s, " << r.timeline.times.size() << " steps, " << r.nodes.size()
    << " nodes, " << r.rules.size() << " rules\n";
  o << "  marks: " << r.totals.marks
    << ", marked node-hours: " << std::round(r.totals.marked_node_seconds / 36) / 100
    << ", most marked at once: " << r.totals.max_marked_at_once
    << ", node-hours left unmarked by the herd cap: "
    << std::round(r.totals.capped_node_seconds / 36) / 100 << "\n";
  o << "  hot marked node-hours (marked, not at or below the clear threshold): "
    << std::round(r.totals.hot_marked_node_seconds / 36) / 100 << ", time to relief (mark to "
    << "clear threshold) of " << r.totals.relieved_marks << " marks: ";
  if (r.totals.relieved_marks > 0)
    o << "median " << std::round(r.totals.time_to_relief_median / 6) / 10
      << " min, 90th percentile " << std::round(r.totals.time_to_relief_p90 / 6) / 10 << " min\n";
  else
    o << "none\n";
  if (r.totals.unmatched_series > 0)
    o << "  " << r.totals.unmatched_series
      << " series named no node (check the rules' nodeLabel and the node list)\n";
  if (r.totals.outage_steps > 0)
    o << "  " << r.totals.outage_steps
      << " steps without any sample were replayed as Prometheus being down\n";
  std::vector<const ReplayNodeResult*> by_time;
  for (const auto& n : r.nodes)
    if (!n.marks.empty()) by_time.push_back(&n);
  std::stable_sort(by_time.begin(), by_time.end(), [](const auto* a, const auto* b) {
    return a->marked_seconds > b->marked_seconds;
  });
  for (size_t i = 0; i < by_time.size() && i < 10; ++i)
    o << "  " << by_time[i]->name << ": " << by_time[i]->marks.size() << " marks, "
      << std::round(by_time[i]->marked_seconds / 36) / 100 << " h marked\n";
  o << "The rebalancer and the scheduler are not replayed; writes are taken as done at once.\n";
  return o.str();
}

}  // namespace ds
