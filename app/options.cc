#include "app/options.h"

#include <gflags/gflags.h>
#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "app/version.h"
#include "common/clock.h"
#include "common/file_secret.h"
#include "common/json_log_sink.h"
#include "common/rfc3339.h"
#include "common/time_zone.h"
#include "common/web_server.h"
#include "promql/prometheus_client.h"
#include "replay/replay_window.h"

DEFINE_string(prom, "",
              "Prometheus (or PromQL-compatible) base URL, e.g. http://prometheus:9090. "
              "Required unless rule.yaml sets prometheus.url; the flag wins when both are given.");
DEFINE_string(prom_token_file, "",
              "File holding a bearer token for Prometheus, sent as \"Authorization: Bearer\"; "
              "re-read when it changes (tokens rotate). Excludes -prom_basic_auth_user.");
DEFINE_string(
    prom_basic_auth_user, "",
    "User name for HTTP basic auth to Prometheus (needs -prom_basic_auth_password_file).");
DEFINE_string(prom_basic_auth_password_file, "",
              "File holding the basic auth password; re-read when it changes.");
DEFINE_string(prom_header, "",
              "Extra header for every Prometheus request, \"Name: value\" (e.g. "
              "\"X-Scope-OrgID: team-a\" for Mimir, Cortex or Loki-style tenants). Repeat the flag "
              "for more than one header. The values are never logged.");
DEFINE_string(prom_ca_file, "",
              "PEM bundle of the CA(s) that signed Prometheus' certificate (https://). Default: "
              "the system's CAs.");
DEFINE_string(prom_cert_file, "",
              "Client certificate (PEM) for Prometheus' TLS client authentication; needs "
              "-prom_key_file.");
DEFINE_string(prom_key_file, "", "Private key (PEM, unencrypted) of -prom_cert_file.");
DEFINE_bool(prom_insecure_skip_verify, false,
            "Do not verify Prometheus' TLS certificate (testing only: anyone on the path can "
            "read the credentials). Excludes -prom_ca_file.");
DEFINE_double(query_timeout, 5,
              "Seconds each PromQL query may take (rule.yaml prometheus.timeout if set and "
              "this flag is not).");
DEFINE_string(kubeconfig, "",
              "Path to a kubeconfig. Default: $KUBECONFIG, then ~/.kube/config, then the "
              "in-cluster service account.");
DEFINE_string(context, "", "kubeconfig context to use instead of current-context.");
DEFINE_string(
    r, "rule.yaml",
    "Rule file (legacy PromJob/Rulename format or the current format; see docs/reference.md).");
DEFINE_double(s, 10,
              "Evaluation interval in seconds (rule.yaml interval if set and this flag is not).");
DEFINE_string(webaddr, ":9000",
              "Address for /status, /healthz, /nodes, /metrics and /webhook, e.g. :9000 or "
              "127.0.0.1:9000.");
DEFINE_string(probeaddr, "",
              "Address of a listener that serves only /healthz and /status, for the kubelet's "
              "probes (e.g. :9001): its workers no client of -webaddr can occupy. Default: none "
              "(the probes use -webaddr).");
DEFINE_string(web_auth, "none",
              "none: anyone who reaches -webaddr may read it. kubernetes: every request but the "
              "page's own files needs a bearer token the API server accepts (TokenReview) and a "
              "SubjectAccessReview: get on the URL /metrics, or get (create for POST) on the "
              "services/proxy of -web_auth_service; see docs/operating.md.");
DEFINE_string(web_auth_service, "dynamic-scheduler",
              "With -web_auth=kubernetes: the Service in front of -webaddr, NAME or "
              "NAMESPACE/NAME (default namespace: the controller's, as for the lease). A caller "
              "needs get (create for POST) on its services/proxy subresource, the permission the "
              "API server's service proxy checks; /metrics needs get on the URL /metrics.");
DEFINE_string(web_tls_cert_file, "",
              "PEM certificate (chain) for serving -webaddr over TLS; needs -web_tls_key_file. "
              "Re-read when it changes.");
DEFINE_string(web_tls_key_file, "", "PEM private key of -web_tls_cert_file.");
DEFINE_int32(web_max_connections, 2048,
             "Open connections -webaddr holds in total; beyond, the one that has waited longest "
             "for its request is closed to make room, or, if all are being answered, the new one "
             "is answered 503 at once.");
DEFINE_int32(web_max_connections_per_client, 64,
             "Open connections -webaddr accepts from one client address; the excess is answered "
             "503 at once.");
DEFINE_double(web_header_timeout, 3,
              "Seconds a client has to send a request's head (and again its body) on -webaddr.");
DEFINE_double(web_idle_timeout, 30, "Seconds a kept-alive connection to -webaddr may idle.");
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
DEFINE_string(
    from, "now-7d",
    "replay: start of the window: RFC 3339, Unix seconds, \"now\" or \"now-<duration>\"; "
    "rounded up to a multiple of -step (long-term stores answer range queries on those).");
DEFINE_string(to, "now", "replay: end of the window, as -from.");
DEFINE_string(step, "",
              "replay: time between the cycles replayed, a duration (60s, 1m, 500ms) or seconds "
              "(default: the evaluation interval, -s or rule.yaml's interval).");
DEFINE_string(out, "", "replay: directory to write replay.json into (created if missing).");
DEFINE_string(nodes_file, "",
              "replay: the nodes as `kubectl get nodes -o json` saved them, for a run without "
              "the cluster (default: list them through the kubeconfig).");
DEFINE_string(pods_file, "",
              "replay: the pods as `kubectl get pods -A -o json` saved them (say, at the window's "
              "start), for right-sizing and the rebalancer's estimate (default: list them now "
              "through the kubeconfig; evicted pods are gone from that list).");
DEFINE_string(compare, "",
              "replay: a second rule file, replayed on the same history and shown side by side.");
DEFINE_bool(cleanup, false,
            "Remove every mark and ownership record this controller put on nodes (keeping "
            "foreign values under its key), print what was done, and exit: 0 if all went well, "
            "1 if a node could not be cleaned or changed meanwhile. Uses the same connection flags "
            "and rule file; -dry_run only prints. Stop "
            "the controller first. -prom is not required.");
DEFINE_bool(once, false,
            "One pass, then exit: list the nodes, judge every rule once (`for` on Prometheus' "
            "history over the `for` window, hysteresis and adoption from the marks and records on "
            "the nodes), write the changes within the write limits, relieve with rebalance:, print "
            "a summary (-o). Exit 0: done; 1: a write or a relief failed; 2: the API server or "
            "Prometheus failed (no mark removed) or the options are wrong. No web port and no "
            "leader election (-leader_elect is ignored): run it from a CronJob with "
            "concurrencyPolicy: Forbid. With -dry_run prints what it would do and writes nothing.");
DEFINE_string(o, "text", "-once: the summary's format, text (for people) or json (for scripts).");
DEFINE_int32(write_concurrency, 4, "Label writes in flight at once (all within -write_qps).");
DEFINE_bool(leader_elect, false,
            "Run for leadership on a coordination.k8s.io/v1 Lease; only the leader evaluates and "
            "writes labels. Needed for more than one replica. Ignored with -once (no election: "
            "a CronJob's concurrencyPolicy: Forbid keeps passes from overlapping).");
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
DEFINE_string(log_format, "text",
              "text: glog's lines; json: one JSON object a line on stderr, with the keys of "
              "Kubernetes components' JSON logs (ts, caller, msg, v, err) and each structured "
              "field (node, rule, term, ...) as a key of its own. -v still sets the verbosity.");
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

// gflags keeps only the last value of a repeated flag, and a header value may contain commas, so
// the repeatable -prom_header is collected from argv before gflags parses it.
std::vector<std::string> RepeatedFlag(int argc, char** argv, std::string_view name) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") break;
    if (a.rfind("--", 0) == 0) {
      a.remove_prefix(2);
    } else if (a.rfind('-', 0) == 0) {
      a.remove_prefix(1);
    } else {
      continue;
    }
    if (a == name && i + 1 < argc) {
      out.emplace_back(argv[++i]);
    } else if (a.size() > name.size() && a.substr(0, name.size()) == name &&
               a[name.size()] == '=') {
      out.emplace_back(a.substr(name.size() + 1));
    }
  }
  return out;
}

std::string HeaderName(const std::string& line) { return line.substr(0, line.find(':')); }

// "<rule file>: prometheus.<field>", how messages name a field of rule.yaml's prometheus section.
std::string RuleFileField(const std::string& rule_file, const std::string& field) {
  return rule_file + ": prometheus." + field;
}

// rule.yaml's prometheus credentials, headers and TLS files, with their paths resolved against
// the rule file's folder. `names` receives the field of each file (token, password, ca, cert,
// key).
HttpAuthConfig RuleFileAuth(const RuleConfig& rules, const std::string& rule_file,
                            std::string (&names)[5]) {
  const std::string dir = rule_file.find('/') == std::string::npos
                              ? std::string()
                              : rule_file.substr(0, rule_file.rfind('/') + 1);
  auto resolve = [&dir](const std::string& p) { return p.empty() || p[0] == '/' ? p : dir + p; };
  HttpAuthConfig a = rules.prometheus_auth;
  a.bearer_token_file = resolve(a.bearer_token_file);
  a.basic_auth_password_file = resolve(a.basic_auth_password_file);
  a.ca_file = resolve(a.ca_file);
  a.cert_file = resolve(a.cert_file);
  a.key_file = resolve(a.key_file);
  names[0] = RuleFileField(rule_file, "bearerTokenFile");
  names[1] = RuleFileField(rule_file, "basicAuth.passwordFile");
  names[2] = RuleFileField(rule_file, "tls.caFile");
  names[3] = RuleFileField(rule_file, "tls.certFile");
  names[4] = RuleFileField(rule_file, "tls.keyFile");
  return a;
}

// Credentials: any credential flag replaces the rule file's credentials as a whole.
Status ApplyCredentialFlags(HttpAuthConfig* a, std::string (&names)[5]) {
  const bool basic_flags =
      !FLAGS_prom_basic_auth_user.empty() || !FLAGS_prom_basic_auth_password_file.empty();
  if (!FLAGS_prom_token_file.empty() && basic_flags)
    return Status::InvalidArgument(
        "-prom_token_file and -prom_basic_auth_user/-prom_basic_auth_password_file exclude each "
        "other: give one kind of credentials");
  if (basic_flags &&
      (FLAGS_prom_basic_auth_user.empty() || FLAGS_prom_basic_auth_password_file.empty()))
    return Status::InvalidArgument(
        "-prom_basic_auth_user and -prom_basic_auth_password_file go together");
  if (FLAGS_prom_basic_auth_user.find(':') != std::string::npos)
    return Status::InvalidArgument("-prom_basic_auth_user must not contain ':'");
  if (!FLAGS_prom_token_file.empty() || basic_flags) {
    a->bearer_token_file = FLAGS_prom_token_file;
    a->basic_auth_user = FLAGS_prom_basic_auth_user;
    a->basic_auth_password_file = FLAGS_prom_basic_auth_password_file;
    names[0] = "-prom_token_file";
    names[1] = "-prom_basic_auth_password_file";
  }
  return Status::OK();
}

// Headers: a flag replaces the rule file's header of the same name.
Status ApplyHeaderFlags(const std::vector<std::string>& header_flags, HttpAuthConfig* a) {
  for (const std::string& h : header_flags) {
    auto line = CheckHeaderLine(h);
    if (!line.ok()) return line.status().Prepend("-prom_header");
    const std::string name = HeaderName(*line);
    std::erase_if(a->headers, [&name](const std::string& old) {
      return strcasecmp(HeaderName(old).c_str(), name.c_str()) == 0;
    });
    a->headers.push_back(std::move(*line));
  }
  return Status::OK();
}

// TLS: each file flag replaces the rule file's; -prom_insecure_skip_verify only adds.
Status ApplyTlsFlags(const std::string& rule_file, HttpAuthConfig* a, std::string (&names)[5]) {
  if (!FLAGS_prom_ca_file.empty()) {
    a->ca_file = FLAGS_prom_ca_file;
    names[2] = "-prom_ca_file";
  }
  if (FLAGS_prom_cert_file.empty() != FLAGS_prom_key_file.empty())
    return Status::InvalidArgument("-prom_cert_file and -prom_key_file go together");
  if (!FLAGS_prom_cert_file.empty()) {
    a->cert_file = FLAGS_prom_cert_file;
    a->key_file = FLAGS_prom_key_file;
    names[3] = "-prom_cert_file";
    names[4] = "-prom_key_file";
  }
  if (FLAGS_prom_insecure_skip_verify) a->insecure_skip_verify = true;
  if (a->insecure_skip_verify && !a->ca_file.empty())
    return Status::InvalidArgument(
        (FLAGS_prom_insecure_skip_verify ? std::string("-prom_insecure_skip_verify")
                                         : RuleFileField(rule_file, "tls.insecureSkipVerify")) +
        " with " + names[2] + ": a CA that is not checked is a mistake; drop one");
  return Status::OK();
}

// The -prom_* flags over rule.yaml's prometheus section (whose paths are relative to the rule
// file's folder). `names` receives, for each file, the flag or field it came from, for messages:
// token, password, ca, cert, key.
StatusOr<HttpAuthConfig> PrometheusAuth(const RuleConfig& rules, const std::string& rule_file,
                                        const std::vector<std::string>& header_flags,
                                        std::string (&names)[5]) {
  HttpAuthConfig a = RuleFileAuth(rules, rule_file, names);
  RETURN_NOT_OK(ApplyCredentialFlags(&a, names));
  RETURN_NOT_OK(ApplyHeaderFlags(header_flags, &a));
  RETURN_NOT_OK(ApplyTlsFlags(rule_file, &a, names));
  return a;
}

const char* Format(const RuleConfig& rules) { return rules.legacy ? "legacy" : "current"; }
std::string Managed(const RuleConfig& rules) {
  return rules.node_selector.empty() ? "all" : rules.node_selector;
}

}  // namespace

Status CheckTimeZones(const RuleConfig& rules, const std::string& source) {
  if (rules.rebalance.enabled) {  // the eviction windows' zone
    auto tz = TimeZone::Load(rules.rebalance.time_zone);
    if (!tz.ok()) return tz.status().Prepend(source + ": rebalance.timeZone");
  }
  for (const Rule& r : rules.rules) {  // a predict rule's days start in its zone
    if (!r.predict.enabled) continue;
    auto tz = TimeZone::Load(r.predict.time_zone);
    if (!tz.ok())
      return tz.status().Prepend(source + ": rule \"" + r.name + "\": predict.timeZone");
  }
  return Status::OK();
}

Status CheckReplayableRules(const RuleConfig& rules, const std::string& file) {
  for (const Rule& rule : rules.rules)
    if (rule.predict.enabled)
      return Status::InvalidArgument(file + ": rule \"" + rule.name +
                                     "\": replay cannot replay predict: rules (their history is "
                                     "of finished days, not of the window)");
  return Status::OK();
}

namespace {

// Parses argv with gflags (which removes what it parsed). Returns the -prom_header values.
StatusOr<std::vector<std::string>> ParseFlags(int* argc, char*** argv) {
  gflags::SetVersionString(VersionString());
  gflags::SetUsageMessage(
      "makes kube-scheduler aware of real node load: labels nodes that PromQL rules find busy.\n"
      "usage: dynamic-scheduler -prom http://prometheus:9090 -kubeconfig ~/.kube/config -r "
      "rule.yaml -s 10 "
      "-webaddr :9000");
  std::vector<std::string> header_flags = RepeatedFlag(*argc, *argv, "prom_header");
  gflags::ParseCommandLineFlags(argc, argv, true);
  // Set another way than on the command line (--flagfile, --fromenv): one header.
  if (header_flags.empty() && !FLAGS_prom_header.empty()) header_flags.push_back(FLAGS_prom_header);
  if (*argc > 1)
    return Status::InvalidArgument(std::string("unexpected argument \"") + (*argv)[1] + "\"");
  return header_flags;
}

// The rule file (-r), and what to do with it: run, -check_config or -cleanup.
Status LoadRules(Options* o) {
  o->rule_file = FLAGS_r;
  ASSIGN_OR_RETURN(o->rules, LoadRuleConfigFile(FLAGS_r));
  RETURN_NOT_OK(CheckTimeZones(o->rules, FLAGS_r));
  o->check_only = FLAGS_check_config;
  o->cleanup = FLAGS_cleanup;
  if (o->check_only && o->cleanup)
    return Status::InvalidArgument("-check_config and -cleanup exclude each other");
  return Status::OK();
}

// -once and its summary's format. (-check_config with -once checks, as the manifests' tests run
// a CronJob's arguments with it.)
Status ConfigureOnce(Options* o) {
  o->once = FLAGS_once;
  if (FLAGS_o == "json") {
    o->once_json = true;
  } else if (FLAGS_o != "text") {
    return Status::InvalidArgument("-o \"" + FLAGS_o + "\": expected text or json");
  }
  if (!o->once && !IsDefault("o")) return Status::InvalidArgument("-o is for -once only");
  if (o->once && o->cleanup)
    return Status::InvalidArgument("-once and -cleanup exclude each other");
  if (o->once && o->replay.on)
    return Status::InvalidArgument("replay and -once exclude each other");
  return Status::OK();
}

// Prometheus: the flag wins over rule.yaml's prometheus section. `auth_names` receives where each
// credential file came from (PrometheusAuth).
Status ConfigurePrometheus(const std::vector<std::string>& header_flags, Options* o,
                           std::string (&auth_names)[5]) {
  o->prometheus_url = !FLAGS_prom.empty() ? FLAGS_prom : o->rules.prometheus_url;
  if (o->prometheus_url.empty() && (o->check_only || o->cleanup))
    o->prometheus_url = "http://unset";
  if (o->prometheus_url.empty())
    return Status::InvalidArgument("-prom is required (or set prometheus.url in " + FLAGS_r + ")");
  auto url = NormalizePrometheusUrl(o->prometheus_url);
  if (!url.ok())
    return url.status().Prepend(FLAGS_prom.empty() ? FLAGS_r + ": prometheus.url" : "-prom");
  o->prometheus_url = *url;
  ASSIGN_OR_RETURN(o->prometheus_auth, PrometheusAuth(o->rules, FLAGS_r, header_flags, auth_names));
  const bool url_given = !FLAGS_prom.empty() || !o->rules.prometheus_url.empty();
  if (url_given && o->prometheus_url.rfind("http://", 0) == 0 &&
      (o->prometheus_auth.has_tls_files() || o->prometheus_auth.insecure_skip_verify))
    return Status::InvalidArgument(
        "Prometheus TLS settings (CA, client certificate, insecure skip verify) need an https:// "
        "URL, not " +
        o->prometheus_url);
  o->query_timeout_seconds = FLAGS_query_timeout;
  if (IsDefault("query_timeout") && o->rules.query_timeout_seconds > 0)
    o->query_timeout_seconds = o->rules.query_timeout_seconds;
  if (!(o->query_timeout_seconds > 0)) return Status::InvalidArgument("-query_timeout must be > 0");
  return Status::OK();
}

// The evaluation loop and the write limits.
Status ConfigureReconciler(Options* o) {
  double interval = FLAGS_s;
  if (IsDefault("s") && o->rules.interval_seconds > 0) interval = o->rules.interval_seconds;
  if (!(interval > 0) || !std::isfinite(interval))
    return Status::InvalidArgument("-s must be a number of seconds > 0, got " +
                                   std::to_string(FLAGS_s));
  // -once reads its `for` history on whole milliseconds (PrimeSteps), as the replay its -step.
  if (!WholeMilliseconds(interval))
    return Status::InvalidArgument("-s " + std::to_string(interval) +
                                   ": must be a whole number of milliseconds");
  if (!(FLAGS_write_qps > 0)) return Status::InvalidArgument("-write_qps must be > 0");
  if (!(FLAGS_write_burst >= 1)) return Status::InvalidArgument("-write_burst must be >= 1");
  if (FLAGS_write_concurrency < 1 || FLAGS_write_concurrency > 64)
    return Status::InvalidArgument("-write_concurrency must be 1-64");
  // rules[].interval against -s (rule.yaml's own interval was checked with the file).
  for (const Rule& rule : o->rules.rules)
    if (rule.interval_seconds > 0 && rule.interval_seconds < interval)
      return Status::InvalidArgument(FLAGS_r + ": rule \"" + rule.name + "\": interval " +
                                     std::to_string(rule.interval_seconds) +
                                     " s is shorter than the evaluation interval (-s " +
                                     std::to_string(interval) +
                                     "): a rule is queried at most "
                                     "once a cycle");
  ReconcilerOptions& r = o->reconciler;
  r.mark = o->rules.mark;
  r.interval_seconds = interval;
  r.grace_seconds = MissingDataGraceSeconds(o->rules, interval);
  r.writes.dry_run = FLAGS_dry_run;
  r.one_pass = o->once;  // app/once.h
  // -dry_run writes nothing, and so evicts nothing: a mark left from an earlier run must not
  // start evictions while the operator only watches.
  if (FLAGS_dry_run) o->rules.rebalance.dry_run = true;
  r.writes.max_per_cycle = FLAGS_max_writes_per_cycle;
  r.writes.qps = FLAGS_write_qps;
  r.writes.burst = FLAGS_write_burst;
  r.writes.concurrency = FLAGS_write_concurrency;
  return Status::OK();
}

// The node cache, and the second one of the marked nodes.
Status ConfigureNodeCache(Options* o) {
  if (!(FLAGS_resync >= 0)) return Status::InvalidArgument("-resync must be >= 0");
  if (!(FLAGS_watch_idle_timeout >= 0))
    return Status::InvalidArgument("-watch_idle_timeout must be >= 0");
  o->watch_idle_timeout_seconds = FLAGS_watch_idle_timeout;
  o->cache_stale_after_seconds = std::max(300.0, 2 * FLAGS_watch_idle_timeout);
  o->cache = CycleCacheOptions(o->rules);
  o->cache.resync_seconds = FLAGS_resync;
  if (!o->rules.node_selector.empty()) {
    o->watch_marked = true;
    o->marked_cache = o->cache;
    o->marked_cache.keep_departures = false;
    if (o->rules.mark.UsesLabel()) {
      o->marked_cache.label_selector = o->rules.mark.MarkedSelector();  // every level's value
    } else {
      o->marked_cache.label_selector.clear();  // every node: a taint cannot be selected
      o->marked_cache.keep_if = [mark = o->rules.mark](const NodeInfo& n) {
        return mark.LevelOn({}, n.taints).has_value();  // our key and effect, any level's value
      };
    }
  }
  return Status::OK();
}

// An RFC 1123 label, as Service and namespace names are: 1-63 of [a-z0-9-], alphanumeric at both
// ends.
bool IsDnsLabel(const std::string& s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  return s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
}

// The HTTP endpoints: the address, and what the webhook needs and may trigger.
Status ConfigureWeb(Options* o) {
  o->web_addr = FLAGS_webaddr;
  if (!(FLAGS_webhook_min_interval >= 0) || !std::isfinite(FLAGS_webhook_min_interval))
    return Status::InvalidArgument("-webhook_min_interval must be a number of seconds >= 0");
  o->reconciler.min_trigger_spacing_seconds = FLAGS_webhook_min_interval;
  if (!FLAGS_webhook_token_file.empty()) {
    ASSIGN_OR_RETURN(o->webhook_token,
                     ReadTokenFile("webhook_token_file", FLAGS_webhook_token_file));
    if (o->webhook_token.empty())
      return Status::InvalidArgument("-webhook_token_file: " + FLAGS_webhook_token_file +
                                     " is empty");
  }
  if (auto a = ParseListenAddress(o->web_addr); !a.ok())
    return Status::InvalidArgument("-webaddr " + a.status().message());
  o->probe_addr = FLAGS_probeaddr;
  if (!o->probe_addr.empty()) {
    if (auto a = ParseListenAddress(o->probe_addr); !a.ok())
      return Status::InvalidArgument("-probeaddr " + a.status().message());
    if (o->probe_addr == o->web_addr)
      return Status::InvalidArgument("-probeaddr " + o->probe_addr +
                                     ": the probes need a listener of their own, not -webaddr's");
  }
  if (FLAGS_web_auth == "kubernetes") {
    o->web_auth_kubernetes = true;
    const std::string& svc = FLAGS_web_auth_service;
    const size_t slash = svc.find('/');
    o->web_access_scope.service = slash == std::string::npos ? svc : svc.substr(slash + 1);
    if (slash != std::string::npos) o->web_access_scope.namespace_name = svc.substr(0, slash);
    if (!IsDnsLabel(o->web_access_scope.service) ||
        (slash != std::string::npos && !IsDnsLabel(o->web_access_scope.namespace_name)))
      return Status::InvalidArgument("-web_auth_service \"" + svc +
                                     "\": expected NAME or NAMESPACE/NAME of a Service");
  } else if (FLAGS_web_auth != "none") {
    return Status::InvalidArgument("-web_auth \"" + FLAGS_web_auth +
                                   "\": expected none or kubernetes");
  }
  WebServerOptions& w = o->web;
  if (FLAGS_web_tls_cert_file.empty() != FLAGS_web_tls_key_file.empty())
    return Status::InvalidArgument(
        "-web_tls_cert_file and -web_tls_key_file go together: give both or neither");
  w.tls_cert_file = FLAGS_web_tls_cert_file;
  w.tls_key_file = FLAGS_web_tls_key_file;
  if (FLAGS_web_max_connections < 1 || FLAGS_web_max_connections_per_client < 1)
    return Status::InvalidArgument(
        "-web_max_connections and -web_max_connections_per_client must be at least 1");
  w.max_connections = FLAGS_web_max_connections;
  w.max_connections_per_client = FLAGS_web_max_connections_per_client;
  if (!(FLAGS_web_header_timeout > 0) || !(FLAGS_web_header_timeout <= 300))
    return Status::InvalidArgument("-web_header_timeout must be seconds in (0, 300]");
  if (!(FLAGS_web_idle_timeout > 0) || !(FLAGS_web_idle_timeout <= 3600))
    return Status::InvalidArgument("-web_idle_timeout must be seconds in (0, 3600]");
  w.header_timeout_seconds = FLAGS_web_header_timeout;
  w.idle_timeout_seconds = FLAGS_web_idle_timeout;
  return Status::OK();
}

// Leader election, checked but for the lease's namespace (ResolveCluster).
Status ConfigureLeaderElection(Options* o) {
  o->leader_elect = FLAGS_leader_elect;
  LeaderElectionOptions& le = o->leader_election;
  le.lease_namespace = FLAGS_leader_elect_namespace;
  le.lease_name = FLAGS_leader_elect_name;
  le.identity =
      FLAGS_leader_elect_identity.empty() ? DefaultIdentity() : FLAGS_leader_elect_identity;
  le.lease_duration_seconds = FLAGS_leader_elect_lease_duration;
  le.renew_deadline_seconds = FLAGS_leader_elect_renew_deadline;
  le.retry_period_seconds = FLAGS_leader_elect_retry_period;
  if (o->leader_elect) {
    // The namespace may come from the cluster (below); check everything else first.
    LeaderElectionOptions check = le;
    if (check.lease_namespace.empty()) check.lease_namespace = "default";
    if (std::string why = ValidateLeaderElection(check); !why.empty())
      return Status::InvalidArgument(why);
  }
  return Status::OK();
}

// Prometheus' token, password and TLS files. Read once now so that a wrong path stops the start;
// the client reads them again when they change.
Status LoadPrometheusFiles(const std::string (&auth_names)[5], Options* o) {
  const HttpAuthConfig& a = o->prometheus_auth;
  for (const auto& [path, name] : {std::pair{a.bearer_token_file, auth_names[0]},
                                   std::pair{a.basic_auth_password_file, auth_names[1]}}) {
    if (path.empty()) continue;
    if (auto secret = FileSecret(path, name).Get(); !secret.ok())
      return Status::InvalidArgument(secret.status().message());
  }
  const std::string tls_names[3] = {auth_names[2], auth_names[3], auth_names[4]};
  ASSIGN_OR_RETURN(o->prometheus_tls, LoadTlsFiles(a, tls_names));
  o->prometheus_tls_names = {tls_names[0], tls_names[1], tls_names[2]};
  return Status::OK();
}

// `replay`'s flags; they mean nothing to the controller, which refuses them.
Status ConfigureReplay(Options* o) {
  const char* only[] = {"from", "to", "step", "out", "nodes_file", "pods_file", "compare"};
  if (!o->replay.on) {
    for (const char* f : only)
      if (!IsDefault(f))
        return Status::InvalidArgument(std::string("-") + f +
                                       " is for `dynamic-scheduler replay ...` only");
    return Status::OK();
  }
  if (o->cleanup) return Status::InvalidArgument("replay and -cleanup exclude each other");
  Options::Replay& r = o->replay;
  const double now = RealClock().WallSeconds();
  ASSIGN_OR_RETURN(r.from, ParseReplayTime(FLAGS_from, now, "from"));
  ASSIGN_OR_RETURN(r.to, ParseReplayTime(FLAGS_to, now, "to"));
  if (!(r.to > r.from))
    return Status::InvalidArgument("replay: -to (" + FLAGS_to + ") must be after -from (" +
                                   FLAGS_from + ")");
  r.step = o->reconciler.interval_seconds;
  if (!FLAGS_step.empty()) {
    // As -from takes "now-7d": a duration, or a bare number of seconds.
    auto step = ParseDuration(FLAGS_step);
    if (!step.ok())
      return Status::InvalidArgument("-step " + FLAGS_step + ": " + step.status().message());
    r.step = *step;
  }
  if (!(r.step > 0) || !std::isfinite(r.step))
    return Status::InvalidArgument("-step must be longer than 0 (e.g. 60s, 1m, or 60)");
  if (!WholeMilliseconds(r.step))
    return Status::InvalidArgument("-step " + std::to_string(r.step) +
                                   ": must be a whole number of milliseconds");
  // The grid on multiples of the step (a -from 30 s off a minute at a 60 s step read no point
  // at all on VictoriaMetrics: every step an outage, exit 0).
  r.from = StepGridAtOrAfter(r.from, r.step);
  if (!(r.to > r.from))
    return Status::InvalidArgument("replay: -from (" + FLAGS_from + ") on the -step grid is " +
                                   FormatRfc3339(r.from) + ", not before -to (" + FLAGS_to + ")");
  if ((r.to - r.from) / r.step > kMaxReplaySteps)
    return Status::InvalidArgument("replay: " + std::to_string((r.to - r.from) / r.step) +
                                   " steps from -from to -to at -step; at most " +
                                   std::to_string(kMaxReplaySteps) +
                                   " (a longer -step, or a shorter window)");
  if (FLAGS_out.empty()) return Status::InvalidArgument("replay: -out DIR is required");
  r.out_dir = FLAGS_out;
  r.nodes_file = FLAGS_nodes_file;
  r.pods_file = FLAGS_pods_file;
  r.compare_file = FLAGS_compare;
  return CheckReplayableRules(o->rules, o->rule_file);
}

// The cluster (kubeconfig or in-cluster), the lease's namespace, and the user agent.
Status ResolveCluster(const GetEnv& getenv, Options* o) {
  ASSIGN_OR_RETURN(o->rest, ResolveRestConfig(FLAGS_kubeconfig, FLAGS_context));
  LeaderElectionOptions& le = o->leader_election;
  if (le.lease_namespace.empty()) {
    const char* pod_ns = getenv("POD_NAMESPACE");
    le.lease_namespace = pod_ns != nullptr && *pod_ns != '\0' ? pod_ns
                         : !o->rest.namespace_name.empty()    ? o->rest.namespace_name
                                                              : "default";
  }
  if (o->web_access_scope.namespace_name.empty())
    o->web_access_scope.namespace_name = le.lease_namespace;
  if (o->leader_elect) {  // the namespace as resolved (POD_NAMESPACE may hold anything)
    if (std::string why = ValidateLeaderElection(le); !why.empty())
      return Status::InvalidArgument(why);
  }
  o->user_agent = std::string("dynamic-scheduler/") + Version() + "+" + GitCommit() + " (" +
                  (o->leader_elect ? le.identity : "single") + ")";
  return Status::OK();
}

}  // namespace

StatusOr<Options> ParseOptions(int* argc, char*** argv, const GetEnv& getenv) {
  // `replay` is a subcommand: the word goes before gflags sees the arguments.
  const bool replay = *argc > 1 && std::string((*argv)[1]) == "replay";
  if (replay) {
    for (int i = 1; i + 1 < *argc; ++i) (*argv)[i] = (*argv)[i + 1];
    --*argc;
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> header_flags, ParseFlags(argc, argv));
  Options o;
  o.replay.on = replay;
  ASSIGN_OR_RETURN(o.log_format, LogFormatFlag());
  RETURN_NOT_OK(LoadRules(&o));
  RETURN_NOT_OK(ConfigureOnce(&o));
  std::string auth_names[5];
  RETURN_NOT_OK(ConfigurePrometheus(header_flags, &o, auth_names));
  RETURN_NOT_OK(ConfigureReconciler(&o));
  RETURN_NOT_OK(ConfigureNodeCache(&o));
  RETURN_NOT_OK(ConfigureWeb(&o));
  RETURN_NOT_OK(ConfigureLeaderElection(&o));
  if (o.check_only) return o;  // checking a rule file needs no files or cluster
  RETURN_NOT_OK(ConfigureReplay(&o));
  RETURN_NOT_OK(LoadPrometheusFiles(auth_names, &o));
  if (o.replay.on && !o.replay.nodes_file.empty()) return o;  // an offline replay
  RETURN_NOT_OK(ResolveCluster(getenv, &o));
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
         << (rule.relative_to != Rule::Relative::kNone ? ", balance: to the mean" : "") << ")";
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

StatusOr<LogFormat> LogFormatFlag() { return ParseLogFormat(FLAGS_log_format, "log_format"); }

std::string DescribeConfig(const Options& o) {
  std::ostringstream os;
  os << o.rule_file << ": OK: " << o.rules.rules.size() << " rules (" << Format(o.rules)
     << " format), " << (o.rules.mark.mode == Mark::Mode::kLabel ? "label " : "mark ")
     << o.rules.mark.ToString() << ", managed nodes: " << Managed(o.rules) << "\n";
  if (const Mark& m = o.rules.mark; !m.levels.empty()) {  // graded marks
    os << "  levels, coolest first:";
    for (size_t below = m.LevelCount(); below-- > 0;)
      os << " " << m.LevelName(below) << " (" << m.Below(below).ToString() << ")"
         << (below > 0 ? "," : "\n");
  }
  for (const std::string& w : o.rules.warnings) os << "  warning: " << w << "\n";
  for (const auto& r : o.rules.rules) {
    const bool greater = r.op == Comparison::kGreater;
    // maxAge, nodeSelector and interval, when set: "; maxAge 120 s; nodes pool=gpu; every 60 s".
    std::ostringstream extra;
    if (r.max_age_seconds > 0)
      extra << "; maxAge " << r.max_age_seconds << " s"
            << (r.age_query.empty() ? "" : " (update times: " + r.age_query + ")");
    if (!r.node_selector.empty()) extra << "; nodes " << r.node_selector;
    if (r.interval_seconds > 0) extra << "; queried every " << r.interval_seconds << " s";
    if (r.relative_to == Rule::Relative::kNone)
      os << "  " << r.name << ": " << (greater ? ">" : "<") << " " << r.threshold << " (clears at "
         << r.clear_threshold << ", for " << r.for_seconds << " s" << extra.str()
         << "): " << r.query << "\n";
    else  // the thresholds are offsets: say from what
      os << "  " << r.name << ": " << (greater ? "> mean + " : "< mean - ") << r.threshold
         << " (clears at mean " << (greater ? "+ " : "- ") << r.clear_threshold << ", for "
         << r.for_seconds << " s; mean of the " << (r.node_selector.empty() ? "managed" : "pool's")
         << " nodes' values, at least " << r.min_nodes << extra.str() << "): " << r.query << "\n";
    if (r.predict.enabled)
      os << "    predicted: the daily P" << r.predict.quantile * 100 << " of the last "
         << r.predict.days << " finished days (" << r.predict.time_zone << "), half-life "
         << r.predict.half_life_seconds / 86400 << " d, at least " << r.predict.min_days
         << " days with data\n";
  }
  if (o.rules.rebalance.enabled) os << "  " << DescribeRebalance(o.rules) << "\n";
  return os.str();
}

std::string DescribePrometheusAuth(const HttpAuthConfig& a) {
  std::ostringstream os;
  if (!a.bearer_token_file.empty()) {
    os << "bearer token from " << a.bearer_token_file;
  } else if (!a.basic_auth_user.empty()) {
    os << "basic auth as " << a.basic_auth_user << " (password from " << a.basic_auth_password_file
       << ")";
  } else {
    os << "no credentials";
  }
  if (!a.headers.empty()) {
    os << ", headers";
    for (const std::string& h : a.headers) os << " " << HeaderName(h);  // values may be secrets
  }
  if (!a.ca_file.empty()) os << ", CA " << a.ca_file;
  if (!a.cert_file.empty()) os << ", client certificate " << a.cert_file;
  if (a.insecure_skip_verify) os << ", certificate NOT verified";
  return os.str();
}

std::string DescribeStartup(const Options& o) {
  std::ostringstream os;
  os << "prometheus: " << o.prometheus_url << " (" << DescribePrometheusAuth(o.prometheus_auth)
     << "); rules from " << o.rule_file << " (" << o.rules.rules.size() << " rules, "
     << Format(o.rules) << " format); interval " << o.reconciler.interval_seconds << " s; label "
     << o.reconciler.mark.ToString() << "; managed nodes: " << Managed(o.rules)
     << (o.reconciler.writes.dry_run ? "; DRY RUN" : "");
  if (o.rules.rebalance.enabled) os << "; " << DescribeRebalance(o.rules);
  return os.str();
}

}  // namespace ds
