// Command-line flags, the rule file, the kubeconfig and the environment, assembled once into a
// validated Options struct; nothing else reads FLAGS_, and main only builds, starts and stops
// what Options describes. (The kubeconfig's own precedence, kube/kubeconfig.h, still reads
// KUBECONFIG, HOME and KUBERNETES_SERVICE_* itself.)
#pragma once

#include <array>
#include <functional>
#include <string>

#include "common/http_auth.h"
#include "common/json_log_sink.h"
#include "common/status.h"
#include "common/web_server.h"
#include "config/rule_config.h"
#include "controller/reconciler.h"
#include "election/leader_elector.h"
#include "kube/kubeconfig.h"
#include "kube/node_cache.h"
#include "web/access_policy.h"

namespace ds {

struct Options {
  std::string rule_file;
  RuleConfig rules;
  bool check_only = false;  // -check_config: validate, print the summary, exit
  bool cleanup = false;     // -cleanup: remove what this controller put on nodes, exit
  // -once (app/once.h): one pass -- list, judge, write, relieve -- then exit; `once_json`
  // (-o json): its summary as JSON for scripts, else text for people.
  bool once = false;
  bool once_json = false;
  // `dynamic-scheduler replay` (app/replay.h): what it would have done over [from, to] of
  // Prometheus' history, written to out_dir; nodes from nodes_file (`kubectl get nodes -o json`)
  // or, when that is empty, listed from the cluster; pods from pods_file (`kubectl get pods -A
  // -o json`) or listed. `step`: the cycle interval replayed.
  struct Replay {
    bool on = false;
    double from = 0, to = 0, step = 0;
    std::string out_dir, nodes_file, pods_file;
    std::string compare_file;  // -compare: a second rule file replayed on the same history
  } replay;
  LogFormat log_format = LogFormat::kText;  // -log_format

  // Prometheus.
  std::string prometheus_url;  // normalized (no trailing slash)
  // Credentials, headers and TLS files: the -prom_* flags over rule.yaml's prometheus section,
  // paths resolved, every file found readable at start-up (the secrets are re-read by the client
  // when they change; see HttpPrometheusClient).
  HttpAuthConfig prometheus_auth;
  TlsOptions prometheus_tls;  // prometheus_auth's TLS files, loaded
  // The flag or rule.yaml field of each TLS file (ca, cert, key), for messages when the running
  // controller reads them again (common/tls_files_transport.h).
  std::array<std::string, 3> prometheus_tls_names;
  double query_timeout_seconds = 5;

  // Kubernetes. `rest` is resolved only when !check_only (checking a rule file needs no cluster).
  RestConfig rest;
  double api_timeout_seconds = 30;  // each LIST, PATCH and Lease call
  double watch_idle_timeout_seconds = 150;
  // /status is not ready once the node cache is stale for this long (NodeCache::Stale says why:
  // 300 s, or twice the watch idle timeout if that is longer).
  double cache_stale_after_seconds = 300;
  NodeCacheOptions cache;
  // The nodes that carry our mark whatever the nodeSelector says, so /nodes lists every node
  // carrying it, as the original did: a second watch that keeps only those. With a label, the
  // selector key=value finds them on the server (a small watch). In taint mode no selector can
  // find a taint: the watch sees every node, one event at a time, and keeps only those carrying
  // our taint (NodeCacheOptions::keep_if), trimmed as the node cache trims, so 10,000 nodes cost
  // no memory but the marked few. Unused (watch_marked false) when every node is managed.
  bool watch_marked = false;
  NodeCacheOptions marked_cache;
  std::string user_agent;  // names the replica, so audit logs tell the replicas' writes apart

  // HTTP endpoints.
  std::string web_addr;
  std::string webhook_token;  // read from -webhook_token_file; "" = the webhook needs none
  // The probes' own listener (-probeaddr; "" = none): /healthz and /status served by workers no
  // client of the web port can occupy, as controller-runtime's health-probe address.
  std::string probe_addr;
  // How the web port treats its clients: connection caps, deadlines, TLS (common/web_server.h).
  WebServerOptions web;
  // -web_auth=kubernetes: callers of the web port's data and webhook prove who they are with a
  // bearer token (TokenReview) and may do what a SubjectAccessReview allows (web/access_policy.h).
  bool web_auth_kubernetes = false;
  // What the reviews point at (-web_auth_service): the Service in front of the port, in the
  // controller's namespace unless the flag names one. Resolved with the cluster (ResolveCluster).
  WebAccessScope web_access_scope;

  ReconcilerOptions reconciler;

  bool leader_elect = false;
  // lease_namespace is resolved: the flag, then POD_NAMESPACE, then the kubeconfig context's or
  // service account's namespace, then "default".
  LeaderElectionOptions leader_election;
};

// Where ParseOptions reads the environment (tests substitute their own).
using GetEnv = std::function<const char*(const char*)>;

// Parses argv (gflags; single- and double-dash forms; -prom_header may be repeated), loads the
// rule file, checks that the token, password and TLS files can be read, resolves the kubeconfig and
// validates everything. On error returns a message that names the flag, file or field.
StatusOr<Options> ParseOptions(int* argc, char*** argv, const GetEnv& getenv = ::getenv);

// A rule file replay can run (`replay`'s own and its -compare file): no predict: rules, whose
// history is of finished days, not of the window.
Status CheckReplayableRules(const RuleConfig& rules, const std::string& file);
// At most this many steps in a replay's window (a week at 1 s is 604,800).
inline constexpr double kMaxReplaySteps = 5e6;

// -log_format as ParseOptions read it from argv (call it after ParseOptions, which parses the
// flags first): main sets the log format up with it even when other options are invalid, so that
// the start-up error comes out in the format asked for.
StatusOr<LogFormat> LogFormatFlag();

// The -check_config summary: the rules, the mark and the managed nodes, one rule a line.
std::string DescribeConfig(const Options& o);

// The time zones a rule file names (rebalance.timeZone, each rule's predict.timeZone) must exist
// in this machine's tz database: checked at start-up and on each reload, so an unknown zone is
// refused with the file and the field, instead of failing every cycle that needs it.
Status CheckTimeZones(const RuleConfig& rules, const std::string& source);
// The start-up log line: where the rules, Prometheus and the cluster are, and the mark.
std::string DescribeStartup(const Options& o);

}  // namespace ds
