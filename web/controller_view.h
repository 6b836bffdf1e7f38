// What the HTTP endpoints show: a copy of the controller's state, gathered by the caller
// (Controller::View) once per request. The handlers under web/ read only this copy, never the
// controller, so they stay pure functions (request and view in, response out) and a test can
// build a view by hand.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/rule_reload.h"
#include "controller/reconciler.h"
#include "kube/node_cache.h"
#include "rules/mark.h"
#include "web/access_policy.h"
#include "web/value_history.h"

namespace ds {

// A predict rule still fetching its history: "3 of 8 days"; "" otherwise. For /status, the
// state JSON and the page, which all say it the same way.
inline std::string WarmingUp(const RuleReport& r) {
  if (!r.WarmingUp()) return "";
  return std::to_string(r.predict_days_held) + " of " + std::to_string(r.predict_days) + " days";
}

struct ControllerView {
  bool cache_synced = false;
  std::string cache_error;
  NodeCacheStats cache_stats;
  bool cache_stale = false;                   // NodeCache::Stale with the configured bound: 503
  double cache_seconds_since_progress = -1;   // since the last successful LIST or watch event
  std::shared_ptr<const NodeSnapshot> nodes;  // may be null before the first sync
  // Nodes carrying our label, managed or not (Options::marked_cache); null when not watched.
  std::shared_ptr<const NodeSnapshot> marked_nodes;
  CycleReport last_cycle;
  ReconcilerCounters counters;
  double seconds_since_cycle = -1;     // -1: no cycle yet
  double seconds_since_progress = -1;  // since the loop last moved on (Reconciler::LastProgress)
  double interval_seconds = 10;
  Mark mark;
  std::string version, commit;  // app/version.h
  std::string compiler;         // app/version.h: Compiler()
  // The duration histograms (DurationMetrics::Collect), shown by /metrics as they are.
  std::vector<prometheus::MetricFamily> durations;
  double rss_bytes = 0;  // resident memory of the process, 0 if unknown
  // Leader election (all false/empty when it is off: a single replica always acts).
  bool leader_election = false;
  bool is_leader = false;
  std::string identity;       // this replica
  std::string leader_holder;  // the lease's holder as last read
  uint64_t leader_terms = 0;  // times this replica became leader
  // The rebalancer (both empty when rebalance: is absent).
  std::optional<RebalanceReport> rebalance;
  RebalanceCounters rebalance_counters;
  RuleReloadView reload;  // rule.yaml reloads (config/rule_reload.h)
  // The page's history (GET /api/v1/history): the controller's own, which outlives every view and
  // locks for itself, so it is pointed to rather than copied. Null: none kept (404).
  const ValueHistory* history = nullptr;
  // Requests -web_auth=kubernetes turned away (all zero without it).
  WebAccessCounters web_denied;
  // The listeners and what they hold and turned away: "web" (-webaddr) and, with -probeaddr,
  // "probes".
  std::vector<std::pair<std::string, WebServerStats>> listeners;
};

}  // namespace ds
