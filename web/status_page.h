// The HTTP endpoints as pure functions: a request and a view of the controller in, a response
// out. CivetWeb sits behind WebServer; nothing here touches sockets or clocks.
//   GET  /         the live web page (web/web_assets.h; with /ui/app.js and /ui/app.css),
//                  which polls /api/v1/state and, with rebalancing, /rebalance
//   GET  /api/v1/state  every managed node with its value per rule, state, mark and since
//                  when; rules and thresholds; the newest mark changes with reasons; leader,
//                  outage and reload state (RenderStateJson)
//   GET  /status   200 "ok" when ready (a standby says whose lease it waits for), else 503 and a
//                  one-line reason (readiness)
//   GET  /healthz  200 "ok" while the evaluation loop is ticking (liveness)
//   GET  /nodes    nodes carrying the mark as JSON (the original's fields plus why each is marked;
//                  with a label mark, also the unmanaged nodes carrying it: "managed": false)
//   GET  /metrics  Prometheus text format (written by prometheus-cpp's TextSerializer)
//   GET  /rebalance  the rebalancer: the marked nodes of the last cycle, recent evictions, effect
//   POST /webhook  Alertmanager webhook: triggers an evaluation at once (202)
#pragma once

#include <prometheus/metric_family.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/web_server.h"
#include "config/rule_reload.h"
#include "controller/reconciler.h"
#include "kube/node_cache.h"
#include "rules/mark.h"

namespace ds {

// What the endpoints show, gathered by the caller at request time.
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
};

// Routes one request. `trigger` is called for a valid webhook POST.
// With a `webhook_token`, POST /webhook needs "Authorization: Bearer <token>" (Alertmanager's
// http_config.authorization) and answers 401 otherwise.
// `alerted` (optional) receives the label sets of the webhook's firing alerts first: the
// rebalancer relieves the nodes they name at once (an alert reacts faster than `after`).
WebResponse HandleRequest(const WebRequest& req, const ControllerView& view,
                          const std::function<void()>& trigger,
                          const std::string& webhook_token = "",
                          const std::function<void(std::vector<Labels>)>& alerted = {});
// The label sets of the firing alerts of an Alertmanager webhook body (at most kMaxAlerts);
// empty for anything else. Pure.
std::vector<Labels> FiringAlerts(const std::string& body);

// Exposed for tests.
std::string RenderNodesJson(const ControllerView& view);
std::string RenderMetrics(const ControllerView& view);
std::string RenderRebalanceJson(const ControllerView& view);
// The web page's data, as JSON. Nodes are arrays, [name, mark, state, since, [values]] (see
// "nodeFields"): `mark` is the node's value under our label key ("" none; another value is
// someone else's), `state` the last cycle's verdict (hot, cold, unknown, capped, held; "new" for a
// node the cycle did not see), `since` epoch seconds since when its rules hold it (null: they
// do not), `values` one per rule in the order of "rules" (null: no value). About 53 bytes a node.
std::string RenderStateJson(const ControllerView& view);

}  // namespace ds
