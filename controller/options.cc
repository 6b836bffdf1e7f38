#include "controller/options.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/time_zone.h"
#include "common/web_server.h"
#include "controller/version.h"
#include "promql/prometheus_client.h"

DEFINE_string(prom, "",
              "Prometheus (or PromQL-compatible) base URL, e.g. http://prometheus:9090. "
              "Required unless rule.yaml sets prometheus.url; the flag wins when both are given.");
DEFINE_string(prom_token_file, "",
              "File holding a bearer token for Prometheus (re-read on start only).");
DEFINE_double(query_timeout, 5,
              "Seconds each PromQL query may take (rule.yaml prometheus.timeout if set and "
              "this flag is not).");
DEFINE_string(kubeconfig, "",
              "Path to a kubeconfig. Default: $KUBECONFIG, then ~/.kube/config, then the "
              "in-cluster service account.");
DEFINE_string(context, "", "kubeconfig context to use instead of current-context.");
DEFINE_string(r, "rule.yaml",
              "Rule file (legacy PromJob/Rulename format or the current format; see README).");
DEFINE_double(s, 10,
              "Evaluation interval in seconds (rule.yaml interval if set and this flag is not).");
DEFINE_string(webaddr, ":9000",
              "Address for /status, /healthz, /nodes, /metrics and /webhook, e.g. :9000 or "
              "127.0.0.1:9000.");
DEFINE_bool(dry_run, false, "Decide and log label changes but never write them.");
DEFINE_double(watch_idle_timeout, 150,
              "Seconds a node watch may go without receiving anything (API servers send a "
              "BOOKMARK about every minute) before it is re-opened; 0 = never.");
DEFINE_double(resync, 600, "Seconds between full re-lists of the nodes (0 = never).");
DEFINE_double(write_qps, 100, "Maximum label writes per second to the API server.");
DEFINE_double(write_burst, 100, "Burst of label writes allowed above write_qps.");
DEFINE_bool(check_config, false,
            "Load and validate the rule file (and flags), print a summary, and exit: 0 if valid, "
            "2 if not. -prom is not required.");
DEFINE_bool(cleanup, false,
            "Remove every mark and ownership record this controller put on nodes (keeping "
            "foreign values under its key), print what was done, and exit: 0 if all went well, "
            "1 if a node could not be cleaned or changed meanwhile. Uses the same connection flags "
            "and rule file; -dry_run only prints. Stop "
            "the controller first. -prom is not required.");
DEFINE_int32(write_concurrency, 4, "Label writes in flight at once (all within -write_qps).");
DEFINE_bool(leader_elect, false,
            "Run for leadership on a coordination.k8s.io/v1 Lease; only the leader evaluates and "
            "writes labels. Needed for more than one replica.");
DEFINE_string(leader_elect_namespace, "",
              "Namespace of the lease. Default: $POD_NAMESPACE, then the kubeconfig "
              "context's or the service account's namespace, then \"default\".");
DEFINE_string(leader_elect_name, "dynamic-scheduler", "Name of the lease.");
DEFINE_string(leader_elect_identity, "",
              "This replica's name in the lease. Default: hostname_random.");
DEFINE_double(leader_elect_lease_duration, 15,
              "Seconds a standby waits, after the lease was last renewed, before "
              "it takes over.");
DEFINE_double(leader_elect_renew_deadline, 10,
              "Seconds the leader may go without a successful renewal before it "
              "stops writing. Must be less than the lease duration.");
DEFINE_double(leader_elect_retry_period, 2,
              "Seconds between attempts to acquire or renew the lease.");
DEFINE_string(webhook_token_file, "",
              "File holding a bearer token that POST /webhook must carry "
              "(Alertmanager: http_config.authorization.credentials_file). Default: none needed.");
DEFINE_double(webhook_min_interval, 2,
              "Seconds a webhook-triggered cycle waits at least after the previous cycle started, "
              "so repeated calls cannot drive back-to-back cycles (a new leadership term is "
              "evaluated at once).");
DEFINE_uint64(max_writes_per_cycle, 0,
              "Cap on label changes per cycle, the rest waits (0 = no cap).");

namespace ds {
namespace {

bool IsDefault(const char* name) { return gflags::GetCommandLineFlagInfoOrDie(name).is_default; }

StatusOr<std::string> ReadTokenFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("-" + flag + ": cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = ss.str();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  return token;
}

const char* Format(const RuleConfig& rules) { return rules.legacy ? "legacy" : "current"; }
std::string Managed(const RuleConfig& rules) {
  return rules.node_selector.empty() ? "all" : rules.node_selector;
}

}  // namespace

StatusOr<Options> ParseOptions(int* argc, char*** argv, const GetEnv& getenv) {
  gflags::SetVersionString(VersionString());
  gflags::SetUsageMessage(
      "makes kube-scheduler aware of real node load: labels nodes that PromQL rules find busy.\n"
      "usage: dynamic-scheduler -prom http://prometheus:9090 -kubeconfig ~/.kube/config -r "
      "rule.yaml -s 10 "
      "-webaddr :9000");
  gflags::ParseCommandLineFlags(argc, argv, true);
  if (*argc > 1)
    return Status::InvalidArgument(std::string("unexpected argument \"") + (*argv)[1] + "\"");
  Options o;
  o.rule_file = FLAGS_r;
  ASSIGN_OR_RETURN(o.rules, LoadRuleConfigFile(FLAGS_r));
  if (o.rules.rebalance.enabled) {
    // The eviction windows' zone must exist in this machine's (or image's) tz database now, not
    // at the first window check.
    auto tz = TimeZone::Load(o.rules.rebalance.time_zone);
    if (!tz.ok()) return tz.status().Prepend(FLAGS_r + ": rebalance.timeZone");
  }
  o.check_only = FLAGS_check_config;
  o.cleanup = FLAGS_cleanup;
  if (o.check_only && o.cleanup)
    return Status::InvalidArgument("-check_config and -cleanup exclude each other");

  // Prometheus: the flag wins over rule.yaml's prometheus section.
  o.prometheus_url = !FLAGS_prom.empty() ? FLAGS_prom : o.rules.prometheus_url;
  if (o.prometheus_url.empty() && (o.check_only || o.cleanup)) o.prometheus_url = "http://unset";
  if (o.prometheus_url.empty())
    return Status::InvalidArgument("-prom is required (or set prometheus.url in " + FLAGS_r + ")");
  auto url = NormalizePrometheusUrl(o.prometheus_url);
  if (!url.ok())
    return url.status().Prepend(FLAGS_prom.empty() ? FLAGS_r + ": prometheus.url" : "-prom");
  o.prometheus_url = *url;
  o.query_timeout_seconds = FLAGS_query_timeout;
  if (IsDefault("query_timeout") && o.rules.query_timeout_seconds > 0)
    o.query_timeout_seconds = o.rules.query_timeout_seconds;
  if (!(o.query_timeout_seconds > 0)) return Status::InvalidArgument("-query_timeout must be > 0");

  // The evaluation loop and the write limits.
  double interval = FLAGS_s;
  if (IsDefault("s") && o.rules.interval_seconds > 0) interval = o.rules.interval_seconds;
  if (!(interval > 0) || !std::isfinite(interval))
    return Status::InvalidArgument("-s must be a number of seconds > 0, got " +
                                   std::to_string(FLAGS_s));
  if (!(FLAGS_write_qps > 0)) return Status::InvalidArgument("-write_qps must be > 0");
  if (!(FLAGS_write_burst >= 1)) return Status::InvalidArgument("-write_burst must be >= 1");
  if (FLAGS_write_concurrency < 1 || FLAGS_write_concurrency > 64)
    return Status::InvalidArgument("-write_concurrency must be 1-64");
  ReconcilerOptions& r = o.reconciler;
  r.mark = o.rules.mark;
  r.interval_seconds = interval;
  r.grace_seconds =
      o.rules.missing_data_grace_seconds > 0 ? o.rules.missing_data_grace_seconds : 3 * interval;
  r.writes.dry_run = FLAGS_dry_run;
  // -dry_run writes nothing, and so evicts nothing: a mark left from an earlier run must not
  // start evictions while the operator only watches.
  if (FLAGS_dry_run) o.rules.rebalance.dry_run = true;
  r.writes.max_per_cycle = FLAGS_max_writes_per_cycle;
  r.writes.qps = FLAGS_write_qps;
  r.writes.burst = FLAGS_write_burst;
  r.writes.concurrency = FLAGS_write_concurrency;

  // The node cache.
  if (!(FLAGS_resync >= 0)) return Status::InvalidArgument("-resync must be >= 0");
  if (!(FLAGS_watch_idle_timeout >= 0))
    return Status::InvalidArgument("-watch_idle_timeout must be >= 0");
  o.watch_idle_timeout_seconds = FLAGS_watch_idle_timeout;
  o.cache_stale_after_seconds = std::max(300.0, 2 * FLAGS_watch_idle_timeout);
  o.cache.label_selector = o.rules.node_selector;
  o.cache.resync_seconds = FLAGS_resync;
  // The selector runs on the server, so the cache only needs our own key.
  o.cache.keep_label_keys = {o.rules.mark.key};

  o.web_addr = FLAGS_webaddr;
  if (!(FLAGS_webhook_min_interval >= 0) || !std::isfinite(FLAGS_webhook_min_interval))
    return Status::InvalidArgument("-webhook_min_interval must be a number of seconds >= 0");
  r.min_trigger_spacing_seconds = FLAGS_webhook_min_interval;
  if (!FLAGS_webhook_token_file.empty()) {
    ASSIGN_OR_RETURN(o.webhook_token,
                     ReadTokenFile("webhook_token_file", FLAGS_webhook_token_file));
    if (o.webhook_token.empty())
      return Status::InvalidArgument("-webhook_token_file: " + FLAGS_webhook_token_file +
                                     " is empty");
  }
  if (auto ports = ToListeningPorts(o.web_addr); !ports.ok()) return ports.status();

  o.leader_elect = FLAGS_leader_elect;
  LeaderElectionOptions& le = o.leader_election;
  le.lease_namespace = FLAGS_leader_elect_namespace;
  le.lease_name = FLAGS_leader_elect_name;
  le.identity =
      FLAGS_leader_elect_identity.empty() ? DefaultIdentity() : FLAGS_leader_elect_identity;
  le.lease_duration_seconds = FLAGS_leader_elect_lease_duration;
  le.renew_deadline_seconds = FLAGS_leader_elect_renew_deadline;
  le.retry_period_seconds = FLAGS_leader_elect_retry_period;

  if (o.leader_elect) {
    // The namespace may come from the cluster (below); check everything else first.
    LeaderElectionOptions check = le;
    if (check.lease_namespace.empty()) check.lease_namespace = "default";
    if (std::string why = ValidateLeaderElection(check); !why.empty())
      return Status::InvalidArgument(why);
  }
  if (o.check_only) return o;

  if (!FLAGS_prom_token_file.empty()) {
    ASSIGN_OR_RETURN(o.prometheus_token, ReadTokenFile("prom_token_file", FLAGS_prom_token_file));
  }
  ASSIGN_OR_RETURN(o.rest, ResolveRestConfig(FLAGS_kubeconfig, FLAGS_context));
  if (le.lease_namespace.empty()) {
    const char* pod_ns = getenv("POD_NAMESPACE");
    le.lease_namespace = pod_ns != nullptr && *pod_ns != '\0' ? pod_ns
                         : !o.rest.namespace_name.empty()     ? o.rest.namespace_name
                                                              : "default";
  }
  if (o.leader_elect) {  // the namespace as resolved (POD_NAMESPACE may hold anything)
    if (std::string why = ValidateLeaderElection(le); !why.empty())
      return Status::InvalidArgument(why);
  }
  o.user_agent = std::string("dynamic-scheduler/") + Version() + "+" + GitCommit() + " (" +
                 (o.leader_elect ? le.identity : "single") + ")";
  return o;
}

namespace {

std::string DescribeRebalance(const RuleConfig& c) {
  const RebalanceConfig& r = c.rebalance;
  std::ostringstream os;
  os << "rebalance: " << (r.dry_run ? "DRY RUN (plans, never evicts)" : "evicts")
     << " from nodes marked for " << r.after_seconds << " s, by the rules";
  for (const auto& rule : c.rules)
    if (rule.resource != Rule::Resource::kNone)
      os << " " << rule.name << " (" << (rule.resource == Rule::Resource::kCpu ? "cpu" : "memory")
         << ")";
  os << "; at most " << r.limits.per_cycle << " per cycle, " << r.limits.per_hour << " per hour";
  if (r.underused.enabled) {
    const UnderusedConfig& u = r.underused;
    os << "; drains nodes below";
    if (!std::isnan(u.below[0])) os << " cpu " << u.below[0] << " %";
    if (!std::isnan(u.below[0]) && !std::isnan(u.below[1])) os << " and";
    if (!std::isnan(u.below[1])) os << " memory " << u.below[1] << " %";
    os << " for " << u.for_seconds << " s (marked " << c.mark.key << "=" << u.value << ", "
       << u.max_nodes << " at once)";
  }
  return os.str();
}

}  // namespace

std::string DescribeConfig(const Options& o) {
  std::ostringstream os;
  os << o.rule_file << ": OK: " << o.rules.rules.size() << " rules (" << Format(o.rules)
     << " format), label " << o.rules.mark.ToString() << ", managed nodes: " << Managed(o.rules)
     << "\n";
  for (const std::string& w : o.rules.warnings) os << "  warning: " << w << "\n";
  for (const auto& r : o.rules.rules)
    os << "  " << r.name << ": " << (r.op == Comparison::kGreater ? ">" : "<") << " " << r.threshold
       << " (clears at " << r.clear_threshold << ", for " << r.for_seconds << " s): " << r.query
       << "\n";
  if (o.rules.rebalance.enabled) os << "  " << DescribeRebalance(o.rules) << "\n";
  return os.str();
}

std::string DescribeStartup(const Options& o) {
  std::ostringstream os;
  os << "prometheus: " << o.prometheus_url << "; rules from " << o.rule_file << " ("
     << o.rules.rules.size() << " rules, " << Format(o.rules) << " format); interval "
     << o.reconciler.interval_seconds << " s; label " << o.reconciler.mark.ToString()
     << "; managed nodes: " << Managed(o.rules) << (o.reconciler.writes.dry_run ? "; DRY RUN" : "");
  if (o.rules.rebalance.enabled) os << "; " << DescribeRebalance(o.rules);
  return os.str();
}

}  // namespace ds
