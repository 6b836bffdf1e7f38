#include "app/once.h"

#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <sstream>

#include "app/controller.h"
#include "app/options.h"
#include "common/json_util.h"
#include "common/log_fields.h"
#include "common/rfc3339.h"
#include "kube/node_cache.h"
#include "web/json_values.h"
#include "web/rebalance_json.h"

namespace ds {
namespace {

// The rules' values a removal was judged by: each rule with a value on the node, against its
// clear threshold (the cycle's table holds both).
std::vector<OnceRuleValue> ClearedValues(const NodeTable& t, const std::string& node) {
  std::vector<OnceRuleValue> out;
  auto it = std::lower_bound(t.names.begin(), t.names.end(), node);
  if (it == t.names.end() || *it != node) return out;
  const auto i = static_cast<size_t>(it - t.names.begin());
  for (size_t r = 0; r < t.rules.size(); ++r) {
    const double v = t.Value(i, r);
    if (!t.Applies(i, r) || std::isnan(v)) continue;
    const NodeTable::Column& c = t.rules[r];
    out.push_back(OnceRuleValue{c.rule, c.op == ">" ? "<=" : ">=", v, c.clear_threshold, c.unit});
  }
  return out;
}

std::string Describe(const std::vector<OnceRuleValue>& rules) {
  std::string s;
  for (const OnceRuleValue& v : rules) {
    if (!s.empty()) s += ", ";
    s += v.rule + " " + FormatValue(v.value, v.unit) + " " + v.op + " " +
         FormatValue(v.threshold, v.unit);
  }
  return s;
}

}  // namespace

OnceSummary SummarizeCycle(const CycleReport& report, bool dry_run) {
  OnceSummary s;
  s.dry_run = dry_run;
  s.nodes = report.managed_nodes;
  s.hot = report.hot_nodes;
  s.writes_ok = report.writes_ok;
  s.writes_failed = report.writes_failed;
  s.deferred = report.deferred;
  for (const MarkChange& p : report.planned) {
    OnceChange c{p.node, p.marked, p.level, p.reason, {}, false};
    if (report.recent_changes != nullptr)
      c.written = std::any_of(
          report.recent_changes->begin(), report.recent_changes->end(),
          [&](const MarkChange& w) { return w.node == p.node && w.marked == p.marked; });
    if (p.marked) {
      if (auto it = report.holds.find(p.node); it != report.holds.end())
        for (const HoldReport& h : it->second)
          c.rules.push_back(OnceRuleValue{h.rule, h.op, h.value, h.threshold, h.unit});
    } else if (report.table != nullptr) {
      c.rules = ClearedValues(*report.table, p.node);
    }
    s.changes.push_back(std::move(c));
  }
  // A rule's error once: graded levels share their rule's answer, and so its error.
  for (const RuleReport& r : report.rules)
    if (!r.ok) {
      std::string e = "Prometheus: rule " + r.name + ": " + r.error;
      if (std::find(s.errors.begin(), s.errors.end(), e) == s.errors.end())
        s.errors.push_back(std::move(e));
    }
  if (report.skipped) s.errors.push_back("the API server: the node list was not read");
  s.exit_code = !s.errors.empty()     ? kOnceFailed
                : s.writes_failed > 0 ? kOnceWriteFailed
                                      : kOnceDone;
  return s;
}

std::string LeaderRunning(const LeaseRecord& lease, double now_wall) {
  double renewed = 0;
  if (lease.holder_identity.empty() || !ParseRfc3339(lease.renew_time, &renewed)) return "";
  const double left = renewed + lease.lease_duration_seconds - now_wall;
  if (!(left > 0)) return "";  // expired: its holder is gone (or stuck), as an elector sees it
  std::ostringstream why;
  why << "a controller holds the leader lease (" << lease.holder_identity << ", renewed "
      << std::lround(now_wall - renewed) << " s ago): a pass beside it would be a second writer of "
      << "the same marks; stop the controller's Deployment first";
  return why.str();
}

void AddRelief(const Rebalancer& rebalancer, double started, OnceSummary* s) {
  const RebalanceReport report = rebalancer.Report();
  bool failed = false;
  for (const EvictionRecord& e : report.recent) {
    if (e.at_wall < started) continue;
    s->evictions.push_back(e);
    // A definite refusal (RBAC, a bad request) or an error: the eviction did not happen.
    failed = failed || e.result == "error" || e.result == "forbidden" || e.result == "refused";
  }
  // Reads that failed leave a hot node unrelieved without an eviction to show for it.
  const RebalanceCounters c = rebalancer.Counters();
  if (!report.problem.empty()) s->errors.push_back("the rebalancer: " + report.problem);
  if (c.list_errors > 0 || c.usage_errors > 0)
    s->errors.push_back("the rebalancer: " + std::to_string(c.list_errors) + " pod list(s) and " +
                        std::to_string(c.usage_errors) +
                        " usage quer(ies) failed; nodes that needed them were not relieved");
  if (failed && report.problem.empty())
    s->errors.push_back("the rebalancer: an eviction failed (see evictions)");
  // The marks are judged and written: a failed relief is retried by the next run, as a write.
  if ((failed || !report.problem.empty() || c.list_errors > 0 || c.usage_errors > 0) &&
      s->exit_code == kOnceDone)
    s->exit_code = kOnceWriteFailed;
}

OnceSummary RunOnce(const Options& o, KubeApi* kube, PrometheusClient* prom, const Clock* clock) {
  const Stopwatch wall;
  auto fail = [&](std::string error) {
    OnceSummary s;
    s.dry_run = o.reconciler.writes.dry_run;
    s.errors.push_back(std::move(error));
    s.exit_code = kOnceFailed;
    s.seconds = wall.Seconds();
    return s;
  };
  if (o.leader_elect)
    LOG(INFO) << "-once: no leader election (-leader_elect is ignored); concurrencyPolicy: Forbid "
                 "on the CronJob keeps two passes from running at once";
  // Never beside the loop: a Deployment with -leader_elect renews its lease (the same name and
  // namespace as -leader_elect_* say) every few seconds. One without leader election is not seen.
  const LeaderElectionOptions& le = o.leader_election;
  if (auto lease = kube->GetLease(le.lease_namespace, le.lease_name, o.api_timeout_seconds);
      lease.ok()) {
    if (std::string running = LeaderRunning(*lease, clock->WallSeconds()); !running.empty())
      return fail("the lease " + le.lease_namespace + "/" + le.lease_name + ": " + running);
  } else if (lease.status().code() != StatusCode::kNotFound) {
    LOG(WARNING) << "-once: could not read the leader lease to check that no controller runs "
                    "beside this pass; going on"
                 << Fields("lease", le.lease_namespace + "/" + le.lease_name, "err",
                           lease.status());
  }
  // The production cache options (Options::cache: the managed nodes, trimmed), read once.
  NodeCache cache(kube, clock, o.cache);
  if (Status st = cache.ListOnce(); !st.ok())
    return fail("the API server: listing the nodes: " + st.ToString());
  std::unique_ptr<Rebalancer> rebalancer = MakeRebalancer(o, kube, prom, clock);
  Reconciler reconciler(o.rules, o.reconciler, &cache, prom, kube, clock, nullptr,
                        rebalancer.get());
  std::atomic<bool> stop{false};
  const size_t primed =
      PrimeSteps(o.rules.rules, clock->WallSeconds(), o.reconciler.interval_seconds).size();
  // Nothing is written unless the history was read: a pass that cannot judge `for` must not
  // judge at all (its cycle would start every `for` afresh and remove nothing, but also mark
  // nothing a rule with `for` holds).
  if (Status st = reconciler.PrimeFromHistory(&stop); !st.ok())
    return fail("Prometheus: " + st.message());
  const double started = clock->WallSeconds();
  reconciler.RunCycle(&stop);
  OnceSummary s = SummarizeCycle(reconciler.LastReport(), o.reconciler.writes.dry_run);
  s.primed_steps = primed;
  if (rebalancer != nullptr) AddRelief(*rebalancer, started, &s);
  s.seconds = wall.Seconds();
  return s;
}

std::string FormatOnceText(const OnceSummary& s) {
  std::ostringstream os;
  size_t marked = 0, unmarked = 0;
  for (const OnceChange& c : s.changes) {
    const std::string verb = c.mark ? "mark" : "unmark";
    std::string what = c.node + (c.level.empty() ? "" : " (level " + c.level + ")");
    const std::string why = c.rules.empty() ? c.reason : Describe(c.rules);
    if (s.dry_run) {
      os << "would " << verb << " " << what << " (" << why << ")\n";
    } else if (c.written) {
      ++(c.mark ? marked : unmarked);
      os << verb << "ed " << what << " (" << why << ")\n";
    } else {
      os << "did not " << verb << " " << what << " (" << why
         << "): the write failed or waits for the write limits (see the log)\n";
    }
  }
  for (const EvictionRecord& e : s.evictions)
    os << "eviction of " << e.pod << " from " << e.node << " (rule " << e.rule << "): " << e.result
       << "\n";
  for (const std::string& e : s.errors) os << "error: " << e << "\n";
  os << "once: " << s.nodes << " nodes judged, " << s.hot << " hot; ";
  if (s.dry_run)
    os << s.changes.size() << " changes planned, none written (dry run)";
  else
    os << marked << " marked, " << unmarked << " unmarked, " << s.writes_failed << " failed, "
       << s.deferred << " deferred";
  if (!s.evictions.empty()) os << "; " << s.evictions.size() << " evictions";
  os << "; " << std::lround(s.seconds * 1000) << " ms; exit " << s.exit_code << "\n";
  return os.str();
}

std::string FormatOnceJson(const OnceSummary& s) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("exit_code");
  w.Int(s.exit_code);
  w.Key("dry_run");
  w.Bool(s.dry_run);
  w.Key("seconds");
  w.Double(s.seconds);
  w.Key("nodes");
  w.Uint64(s.nodes);
  w.Key("hot");
  w.Uint64(s.hot);
  w.Key("primed_steps");
  w.Uint64(s.primed_steps);
  w.Key("writes");
  w.StartObject();
  w.Key("ok");
  w.Uint64(s.writes_ok);
  w.Key("failed");
  w.Uint64(s.writes_failed);
  w.Key("deferred");
  w.Uint64(s.deferred);
  w.EndObject();
  w.Key("changes");
  w.StartArray();
  for (const OnceChange& c : s.changes) {
    w.StartObject();
    w.Key("node");
    WriteString(w, c.node);
    w.Key("action");
    w.String(c.mark ? "mark" : "unmark");
    w.Key("level");
    WriteString(w, c.level);
    w.Key("written");
    w.Bool(c.written);
    w.Key("reason");
    WriteString(w, c.reason);
    w.Key("rules");
    w.StartArray();
    for (const OnceRuleValue& v : c.rules) {
      w.StartObject();
      w.Key("rule");
      WriteString(w, v.rule);
      w.Key("value");
      WriteNumber(w, v.value);
      w.Key("op");
      WriteString(w, v.op);
      w.Key("threshold");
      WriteNumber(w, v.threshold);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("evictions");
  w.StartArray();
  for (const EvictionRecord& e : s.evictions) WriteEviction(w, e);
  w.EndArray();
  w.Key("errors");
  w.StartArray();
  for (const std::string& e : s.errors) WriteString(w, e);
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

int RunOnceCommand(const Options& options, std::ostream& out, std::ostream& err) {
  RealClock clock;
  CurlTransport kube_transport(options.rest.tls, options.rest.proxy_url);
  HttpKubeApi kube(&kube_transport, options.rest, &clock, options.api_timeout_seconds,
                   options.user_agent);
  std::unique_ptr<HttpTransport> prom_transport = MakePromTransport(options);
  HttpPrometheusClient prom(prom_transport.get(), options.prometheus_url,
                            options.query_timeout_seconds, options.prometheus_auth);
  LOG(INFO) << "-once: " << DescribeStartup(options);
  const OnceSummary s = RunOnce(options, &kube, &prom, &clock);
  out << (options.once_json ? FormatOnceJson(s) : FormatOnceText(s));
  out.flush();
  for (const std::string& e : s.errors) err << "dynamic-scheduler -once: " << e << "\n";
  return s.exit_code;
}

}  // namespace ds
