#include "web/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <utility>
#include <vector>

namespace ds {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// One scrape's exposition: a fresh Registry whose counters, gauges and histograms are set from the
// view's values. The controller keeps its counts where its logic keeps them (ReconcilerCounters,
// the cache's stats, the rebalancer's figures, their histograms' bucket counts), so the registry
// holds nothing between scrapes.
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
  Family<Histogram>& Histograms(const char* name, const char* help) {
    return prometheus::BuildHistogram().Name(name).Help(help).Register(registry_);
  }

  // The text format of these families and `more`, ordered by name and, within a family, by
  // label values, so that the output does not depend on prometheus-cpp's hash order.
  std::string Text(std::vector<prometheus::MetricFamily> more) const {
    std::vector<prometheus::MetricFamily> all = registry_.Collect();
    for (auto& f : more) all.push_back(std::move(f));
    const auto by_name = [](const auto& a, const auto& b) { return a.name < b.name; };
    const auto by_labels = [](const auto& a, const auto& b) { return a.label < b.label; };
    std::sort(all.begin(), all.end(), by_name);
    for (auto& f : all) std::sort(f.metric.begin(), f.metric.end(), by_labels);
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

// A histogram of the scrape from counts the controller kept: `per_bucket[i]` observations at or
// below bounds[i] and above the bound before it, the last one above every bound (+Inf), and their
// sum. The text format makes the buckets cumulative and adds the +Inf bucket and _count.
// REQUIRES: per_bucket.size() == bounds.size() + 1.
template <size_t N>
void Put(Family<Histogram>& f, const std::array<double, N>& bounds,
         const std::array<uint64_t, N + 1>& per_bucket, double sum,
         const prometheus::Labels& labels = {}) {
  f.Add(labels, Histogram::BucketBoundaries(bounds.begin(), bounds.end()))
      .ObserveMultiple(std::vector<double>(per_bucket.begin(), per_bucket.end()), sum);
}

// Which build runs, and what the process holds.
void PutBuildAndProcess(Exposition& e, const ControllerView& v) {
  Put(e.Gauges("dynamic_scheduler_build_info",
               "Always 1; the labels say which build runs (the version, the git commit it was "
               "built from, also as revision, and the compiler)."),
      1,
      {{"version", v.version},
       {"commit", v.commit},
       {"revision", v.commit},
       {"compiler", v.compiler}});
  Put(e.Gauges("process_resident_memory_bytes", "Resident memory size in bytes."), v.rss_bytes);
}

// The evaluation cycle: how often and how long it runs, and what it found.
void PutCycle(Exposition& e, const ControllerView& v) {
  const CycleReport& c = v.last_cycle;
  Put(e.Counters("dynamic_scheduler_cycles_total", "Evaluation cycles run."), v.counters.cycles);
  Put(e.Gauges("dynamic_scheduler_last_cycle_duration_seconds",
               "Duration of the last evaluation cycle."),
      c.duration_seconds);
  Put(e.Gauges("dynamic_scheduler_cycle_cpu_seconds",
               "Process CPU time used during the last cycle."),
      c.cpu_seconds);
  Put(e.Gauges("dynamic_scheduler_last_cycle_number",
               "The number of the last completed cycle, which the last-cycle figures describe "
               "(dynamic_scheduler_cycles_total counts cycles as they start)."),
      static_cast<double>(c.cycle));
  auto& phases = e.Gauges("dynamic_scheduler_cycle_phase_seconds",
                          "Time of each phase of the last cycle (query: waiting on Prometheus; "
                          "decode summed over rules; decide: the cycle's judgement, verdicts to "
                          "changes; plan: the writes and their records).");
  const CyclePhases& p = c.phases;
  for (auto [name, val] : {std::pair<const char*, double>{"query", p.query},
                           {"decode", p.decode},
                           {"decide", p.decide},
                           {"plan", p.plan},
                           {"write", p.write}})
    Put(phases, val, {{"phase", name}});
  Put(e.Gauges("dynamic_scheduler_managed_nodes", "Nodes the controller manages."),
      c.managed_nodes);
  Put(e.Gauges("dynamic_scheduler_hot_nodes", "Nodes under pressure in the last cycle."),
      c.hot_nodes);
  Put(e.Gauges("dynamic_scheduler_mark_limit",
               "The most nodes that may carry the mark at once (maxMarkedFraction, maxMarked)."),
      c.mark_limit);
  Put(e.Gauges("dynamic_scheduler_capped_nodes",
               "Hot nodes left unmarked in the last cycle because the herd cap was reached."),
      c.capped.size());
  Put(e.Gauges("dynamic_scheduler_prometheus_outage_seconds",
               "Seconds every rule's query has been failing (0 while Prometheus answers)."),
      c.outage_seconds);
  Put(e.Gauges("dynamic_scheduler_releasing_marks",
               "1 while the marks are removed for an outage (onPrometheusDown: release)."),
      c.releasing ? 1 : 0);
}

// The rules: their queries in the last cycle, and reloads of the rule file.
void PutRules(Exposition& e, const ControllerView& v) {
  auto& query_errors =
      e.Counters("dynamic_scheduler_query_errors_total", "Rule queries that failed, by rule.");
  for (const auto& [rule, n] : v.counters.query_errors) Put(query_errors, n, {{"rule", rule}});
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
  auto& reloads =
      e.Counters("dynamic_scheduler_rule_reloads_total",
                 "Changes of the rule file: applied, or refused (the running rules were kept).");
  Put(reloads, v.reload.reloads, {{"result", "applied"}});
  Put(reloads, v.reload.refused, {{"result", "refused"}});
  Put(e.Gauges("dynamic_scheduler_rule_reload_last_success",
               "0 while the last change of the rule file is refused, else 1."),
      v.reload.last_ok ? 1 : 0);
}

// Writes to nodes: the mark's label or taint, and the Events about it.
void PutWrites(Exposition& e, const ControllerView& v) {
  const ReconcilerCounters& c = v.counters;
  auto& label_writes = e.Counters(
      "dynamic_scheduler_label_writes_total",
      "Label writes that succeeded, by operation (record: the held-by annotation alone); a "
      "write of the taint alone counts only in dynamic_scheduler_taint_writes_total.");
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
}

// The node cache: whether it is synced and fresh, and what it has read.
void PutCache(Exposition& e, const ControllerView& v) {
  const NodeCacheStats& s = v.cache_stats;
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
      s.initial_sync_seconds);
  Put(e.Counters("dynamic_scheduler_node_cache_lists_total", "Full node LISTs."), s.lists);
  Put(e.Counters("dynamic_scheduler_node_cache_expired_relists_total",
                 "LISTs forced by 410 Expired."),
      s.relists_expired);
  Put(e.Counters("dynamic_scheduler_node_cache_watch_restarts_total", "Watch streams that ended."),
      s.watch_restarts);
  Put(e.Counters("dynamic_scheduler_node_cache_events_total", "Watch events applied."), s.events);
}

void PutElection(Exposition& e, const ControllerView& v) {
  Put(e.Gauges(
          "dynamic_scheduler_leader",
          "1 when this replica may write labels (it holds the lease, or leader election is off)."),
      !v.leader_election || v.is_leader ? 1 : 0);
  Put(e.Counters("dynamic_scheduler_leader_terms_total", "Times this replica became the leader."),
      v.leader_terms);
}

// The count of each of `keys` in `counts`, 0 for those absent: every result is shown from the
// start, so a rate over it needs no series to appear first.
void PutEach(Family<Counter>& f, const std::map<std::string, uint64_t>& counts, const char* label,
             std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    auto it = counts.find(k);
    Put(f, it == counts.end() ? 0 : it->second, {{label, k}});
  }
}

// The rebalancer's choices: evictions, skips, the pods it keeps, underused nodes.
void PutEvictions(Exposition& e, const RebalanceCounters& rc, const RebalanceReport& r) {
  auto& evictions = e.Counters(
      "dynamic_scheduler_evictions_total",
      "Evictions the rebalancer asked for, by result (evicted, blocked_by_pdb, multiple_pdbs, "
      "gone, forbidden: a 403, refused: another 4xx, error: no answer, a 5xx or abandoned; "
      "dry_run: planned, not sent; evicting_in_background: a 429 that started the move, as "
      "KubeVirt's live migration).");
  PutEach(evictions, rc.evictions, "result",
          {"evicted", "blocked_by_pdb", "multiple_pdbs", "gone", "forbidden", "refused", "error",
           "dry_run", "evicting_in_background"});
  auto& skips = e.Counters(
      "dynamic_scheduler_eviction_skips_total",
      "Pods not evicted, and nodes not relieved, by reason (would_return: nothing keeps the "
      "pod's replacement off the node; constraint: a constraint the fit check does not judge; "
      "bounced_back: its workload is paused after a bounce-back; no_fit: no other node could "
      "take the pod; stands_out: balance leaves a pod whose share alone would make a node near "
      "the mean stand out; retry_wait: nothing could be evicted from the node at its last try; "
      "record_failed: the eviction could not be written into the node's record first; "
      "ledger_failed, ledger_unreadable: the eviction ledger could not be written or read; "
      "ledger_takeback_failed: a refused eviction stays in the ledger; in_motion: what is "
      "already leaving the node reaches its goal; in_flight: the pod was evicted and is still "
      "there; within_requests, "
      "kubelet_victim_stays: memory relief moves only the kubelet's next victims; node_removal, "
      "safe_to_evict_false, evicting_in_background, rollout, scale_down, disruptors_unread: "
      "another disruptor moves it; the others are the limits of rebalance.limits and windows).");
  for (const auto& [reason, n] : rc.skips) Put(skips, n, {{"reason", reason}});
  auto& kept = e.Counters("dynamic_scheduler_pods_kept_total",
                          "Pods on nodes being relieved that are never evicted, by reason.");
  for (const auto& [reason, n] : rc.kept) Put(kept, n, {{"reason", reason}});
  auto& underused =
      e.Gauges("dynamic_scheduler_underused_nodes",
               "Nodes of rebalance.underused in the last cycle, by state (marked: this cycle; "
               "draining: marked before and still below the bounds; drained: nothing left it may "
               "move; capped: would be marked but maxNodes are being drained).");
  std::map<std::string, size_t> states = {
      {"marked", 0}, {"draining", 0}, {"drained", 0}, {"capped", 0}};
  for (const UnderusedNodeReport& u : r.underused)
    if (states.count(u.state)) ++states[u.state];
  for (const auto& [state, n] : states) Put(underused, n, {{"state", state}});
  PutEach(
      e.Counters(
          "dynamic_scheduler_underused_marks_total",
          "Writes of the underused mark, by result (set, removed, failed; changed: the node was "
          "written since the cycle read it, nothing written)."),
      rc.underused_marks, "result", {"set", "removed", "failed", "changed"});
}

// What the rebalancing cost (pod LISTs, errors) and what it achieved (rebalance/effect.h).
void PutRebalanceEffect(Exposition& e, const RebalanceCounters& rc, const RebalanceReport& r) {
  const EffectFigures& f = r.figures;
  Put(e.Counters("dynamic_scheduler_rebalance_pod_lists_total",
                 "Pod LISTs (one node's, an evicted pod's by name, or one evicted workload's in "
                 "its namespace)."),
      r.pod_lists);
  auto& errors = e.Counters("dynamic_scheduler_rebalance_errors_total",
                            "Pod LISTs and pod usage queries that failed (one for the nodes to "
                            "relieve stops that cycle's relief), and events that could not be "
                            "written.");
  Put(errors, rc.list_errors, {{"stage", "list"}});
  Put(errors, rc.usage_errors, {{"stage", "usage"}});
  Put(errors, rc.event_errors, {{"stage", "event"}});
  Put(e.Counters("dynamic_scheduler_rebalance_events_suppressed_total",
                 "The rebalancer's Events held back by its EventLimiter (per object and per "
                 "cycle)."),
      rc.events_suppressed);
  Put(e.Counters("dynamic_scheduler_rebalance_bounce_backs_total",
                 "Replacements of an evicted pod's workload bound to the node it left within "
                 "effectWindow."),
      f.bounce_backs);
  Put(e.Counters("dynamic_scheduler_rebalance_replacements_total",
                 "Replacements of evicted pods seen running."),
      f.replacements);
  // The figures' numerators and denominators, as counters: increase() over any window gives the
  // figure for that window, and sums over the replicas survive a failover (each counts only while
  // it leads); the gauges below are since this process started.
  Put(e.Counters("dynamic_scheduler_rebalance_reference_hot_total",
                 "Node-cycles rebalance.referenceQuery called hot (the discovery rate's "
                 "denominator)."),
      f.reference_hot);
  Put(e.Counters("dynamic_scheduler_rebalance_reference_hot_marked_total",
                 "Of those, the node-cycles the node carried our mark (its numerator)."),
      f.reference_hot_marked);
  Put(e.Counters("dynamic_scheduler_rebalance_episodes_total",
                 "Hot episodes that qualified for relief (the eviction rate's denominator)."),
      f.episodes);
  Put(e.Counters("dynamic_scheduler_rebalance_episodes_evicted_total",
                 "Of those, the episodes where a pod was evicted (its numerator)."),
      f.episodes_evicted);
  Put(e.Counters("dynamic_scheduler_rebalance_episodes_judged_total",
                 "Episodes with evictions whose effectWindow ended (effectiveness's "
                 "denominator)."),
      f.episodes_judged);
  Put(e.Counters("dynamic_scheduler_rebalance_episodes_relieved_total",
                 "Of those, the episodes whose node fell below its clear threshold within it "
                 "(its numerator)."),
      f.episodes_relieved);
  Put(e.Gauges("dynamic_scheduler_rebalance_discovery_rate",
               "Of the node-cycles rebalance.referenceQuery called hot, the share that carried "
               "our mark (0 without the query)."),
      f.DiscoveryRate());
  Put(e.Gauges("dynamic_scheduler_rebalance_eviction_rate",
               "Of the hot episodes that qualified for relief, the share where a pod was evicted."),
      f.EvictionRate());
  Put(e.Gauges("dynamic_scheduler_rebalance_effectiveness",
               "Of the episodes with evictions whose effectWindow ended, the share whose node "
               "fell below its clear threshold within it."),
      f.Effectiveness());
  // How the relief went: how long it took, what it cost, and how long nodes stayed hot.
  Put(e.Histograms("dynamic_scheduler_rebalance_time_to_relief_seconds",
                   "Of the relieved episodes (..._episodes_relieved_total), the time from the "
                   "node's mark (from the cycle the episode qualified where the mark's time is "
                   "unknown) to the first cycle after its first eviction that found it at or below "
                   "its clear threshold."),
      kTimeToReliefBuckets, f.time_to_relief, f.time_to_relief_sum);
  Put(e.Counters("dynamic_scheduler_rebalance_episodes_relieved_evictions_total",
                 "Evictions in the relieved episodes (evictions per relieved episode's "
                 "numerator)."),
      f.relieved_evictions);
  Put(e.Gauges("dynamic_scheduler_rebalance_evictions_per_relieved_episode",
               "Evictions in the relieved episodes per relieved episode (0 before the first)."),
      f.EvictionsPerRelief());
  Put(e.Gauges("dynamic_scheduler_rebalance_bounce_back_ratio",
               "Of the replacements of evicted pods seen running, the share bound to the node "
               "their pod left within effectWindow (0 before the first replacement)."),
      f.BounceBackRatio());
  Put(e.Counters("dynamic_scheduler_rebalance_hot_node_seconds_total",
                 "Each cycle, the nodes carrying our mark that are not at or below their clear "
                 "threshold, times the time since the previous cycle (at most -s)."),
      f.hot_node_seconds);
}

// The rebalance step's CPU time (0 without a rebalance: section) and, with one, the rebalancer's
// families.
void PutRebalance(Exposition& e, const ControllerView& v) {
  Put(e.Gauges("dynamic_scheduler_last_rebalance_cpu_seconds",
               "CPU time of the last cycle's rebalance step, on the thread that ran it (0 "
               "without a rebalance: section)."),
      v.last_cycle.rebalance_cpu_seconds);
  Put(e.Counters("dynamic_scheduler_rebalance_cpu_seconds_total",
                 "CPU time of the rebalance step, on the thread that ran it, over every cycle."),
      v.last_cycle.rebalance_cpu_seconds_total);
  if (!v.rebalance) return;
  PutEvictions(e, v.rebalance_counters, *v.rebalance);
  PutRebalanceEffect(e, v.rebalance_counters, *v.rebalance);
}

// The web port's requests turned away by -web_auth=kubernetes (zeros without it).
void PutWebAccess(Exposition& e, const ControllerView& v) {
  auto& denied = e.Counters(
      "dynamic_scheduler_web_requests_denied_total",
      "Requests to the web port turned away by -web_auth=kubernetes, by reason: unauthenticated "
      "(401: no bearer token, or one the API server does not accept), forbidden (403: the "
      "SubjectAccessReview did not allow it), review_failed (503: the API server could not be "
      "asked), throttled (429: the client address asked for too many new reviews).");
  Put(denied, v.web_denied.unauthenticated, {{"reason", "unauthenticated"}});
  Put(denied, v.web_denied.forbidden, {{"reason", "forbidden"}});
  Put(denied, v.web_denied.review_failed, {{"reason", "review_failed"}});
  Put(denied, v.web_denied.throttled, {{"reason", "throttled"}});
}

// The listeners (common/web_server.h): what they hold, and what their bounds turned away.
void PutListeners(Exposition& e, const ControllerView& v) {
  auto& open = e.Gauges("dynamic_scheduler_web_connections",
                        "Open connections of a listener (web: -webaddr; probes: -probeaddr).");
  auto& accepted = e.Counters("dynamic_scheduler_web_connections_accepted_total",
                              "Connections a listener took in.");
  auto& away = e.Counters(
      "dynamic_scheduler_web_turned_away_total",
      "Connections and requests a listener's bounds turned away, by reason: connection_cap (over "
      "a client's -web_max_connections_per_client, or over -web_max_connections with every "
      "connection being answered: 503 and closed at once), evicted (the "
      "connection that waited longest for its request closed to make room under "
      "-web_max_connections), busy (the workers' queue, or the client's share of it, or the "
      "request bodies' budget full: 503), timeout (a head, body or answer too slow: closed), "
      "bad_request (a head that could not be parsed: 4xx/5xx and closed), tls (a failed "
      "handshake or record).");
  for (const auto& [name, s] : v.listeners) {
    Put(open, static_cast<double>(s.connections), {{"listener", name}});
    Put(accepted, static_cast<double>(s.accepted_total), {{"listener", name}});
    Put(away, static_cast<double>(s.refused_total),
        {{"listener", name}, {"reason", "connection_cap"}});
    Put(away, static_cast<double>(s.evicted_total), {{"listener", name}, {"reason", "evicted"}});
    Put(away, static_cast<double>(s.busy_total), {{"listener", name}, {"reason", "busy"}});
    Put(away, static_cast<double>(s.timed_out_total), {{"listener", name}, {"reason", "timeout"}});
    Put(away, static_cast<double>(s.bad_requests_total),
        {{"listener", name}, {"reason", "bad_request"}});
    Put(away, static_cast<double>(s.tls_failures_total), {{"listener", name}, {"reason", "tls"}});
  }
}

}  // namespace

std::string RenderMetrics(const ControllerView& v) {
  Exposition e;
  PutBuildAndProcess(e, v);
  PutCycle(e, v);
  PutRules(e, v);
  PutWrites(e, v);
  PutCache(e, v);
  PutElection(e, v);
  PutRebalance(e, v);
  PutWebAccess(e, v);
  PutListeners(e, v);
  return e.Text(v.durations);
}

}  // namespace ds
