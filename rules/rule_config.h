// rule.yaml: its schema, loading and validation. Two formats load:
//
// Legacy (the original project's; loads unchanged):
//   PromJob: {Name: "k8s-nodes"}
//   Rulename:
//     Node_cpu1: {Promsql: "<PromQL>", Threshold: 70}
//
// Current (all keys optional except rules[].name/query/threshold):
//   prometheus: {url: "http://prometheus:9090", timeout: 5s}
//   # or, with credentials and TLS (file paths relative to rule.yaml's folder):
//   prometheus:
//     url: https://thanos-query:10902
//     bearerTokenFile: /var/run/secrets/prometheus/token    # or basicAuth: {username,
//     passwordFile} headers: {X-Scope-OrgID: team-a} tls: {caFile: ca.crt, certFile: tls.crt,
//     keyFile: tls.key, insecureSkipVerify: false}
//   interval: 10s
//   missingDataGrace: 30s          # default: 3 intervals
//   label: {key: status, value: presure}
//   mark: label                    # or taint, or both (rules/mark.h); default label
//   taint: {key: dynamic-scheduler.io/pressure, value: presure, effect: PreferNoSchedule}
//   nodeSelector: "!node-role.kubernetes.io/control-plane"
//   maxMarkedFraction: 0.5         # the herd cap (rules/herd_cap.h): a share of the managed
//   maxMarked: 20                  # nodes and/or a number; default 0.5 and no number
//   onPrometheusDown: release      # or hold (the default): rules/outage.h
//   releaseAfter: 10m              # with release; default 10m
//   rules:
//     - {name: cpu, query: "...", operator: ">", threshold: 80, clearThreshold: 70, for: 30s,
//        nodeLabel: instance, maxAge: 2m, ageQuery: 'push_time_seconds{job="..."}',
//        nodeSelector: "pool=gpu", interval: 1m}
//     - {name: cpu-skew, query: "...", relativeTo: mean, threshold: 20, minNodes: 3}
//     - {name: cpu-peak, query: "...", threshold: 80, predict: {days: 8, quantile: 0.95,
//        halfLife: 2d, minDays: 3, resolution: 1m, timeZone: UTC}}
//   rebalance: {...}               # rebalance/rebalance_config.h
//   levels: [{name: warm, value: warm}, {name: hot}]   # graded marks (rules/mark.h), coolest
//   # first; a rule gives a cooler level's thresholds as levels: {warm: {threshold: 60}}
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/http_auth.h"
#include "common/status.h"
#include "rebalance/rebalance_config.h"
#include "rules/mark.h"
#include "rules/prediction.h"

namespace ds {

enum class Comparison { kGreater, kLess };

struct Rule {
  std::string name;
  std::string query;
  Comparison op = Comparison::kGreater;
  double threshold = 0;
  // The node leaves pressure once the value is at or past this (<= for '>', >= for '<').
  // Equals threshold when not configured (no hysteresis).
  double clear_threshold = 0;
  double for_seconds = 0;  // the condition must hold this long before the label is set
  std::string node_label;  // series label naming the node; empty: node, instance, ip, nodename
  // What the value measures, for the rebalancer: the percent of the node's allocatable CPU or
  // memory in use (`resource: cpu | memory`), so each pod's real usage can be put in the same
  // unit. kNone: the rule marks nodes but its value cannot be relieved by moving pods.
  enum class Resource { kNone, kCpu, kMemory } resource = Resource::kNone;
  // `maxAge`: a node's value whose last update is older than this counts as missing data (not
  // as its last value), so a node whose exporter or push.sh died lets go of its hold after the
  // grace. 0: off. The update time is the value of `age_query` per node (e.g. the
  // pushgateway's push_time_seconds), its age measured against the evaluation time Prometheus
  // reports with it; without `age_query`, the sample's own timestamp against this controller's
  // clock.
  double max_age_seconds = 0;
  std::string age_query;  // `ageQuery`; only with maxAge
  // `relativeTo: mean`: threshold and clear_threshold are offsets (>= 0) from the mean of the
  // rule's values over the managed nodes that have one this cycle, in the rule's direction: for
  // '>' a node is over at value > mean + threshold and clears at value <= mean + clear_threshold;
  // for '<' over at value < mean - threshold, clears at value >= mean - clear_threshold
  // (descheduler's useDeviationThresholds, with hysteresis). The node's own value is in the mean.
  enum class Relative { kNone, kMean } relative_to = Relative::kNone;
  // With relativeTo: the fewest nodes with a value for the mean to mean something (`minNodes`,
  // >= 2). With fewer, the rule has no evidence that cycle (as if its query failed).
  size_t min_nodes = 3;
  // Graded marks: how many levels below the hottest this rule marks (0: the hottest, the mark
  // itself). A rule's `levels: {warm: {...}}` loads as one more rule per cooler level, named
  // "<rule>@<level>", with that level's thresholds, so hysteresis, `for`, grace and adoption work
  // per level unchanged; it measures no resource (the rebalancer acts on the hottest level only).
  size_t below_hottest = 0;
  // `predict:` (rules/prediction.h): the rule's value per node is predicted from the daily
  // quantiles of `query` over the last finished days, not read from now.
  PredictConfig predict;
  // `nodeSelector` (the syntax of the top-level one): the rule applies only to the managed nodes
  // whose labels match it, so pools of nodes get their own thresholds; empty: to every managed
  // node. `interval`: the rule is queried at most this often (>= the evaluation interval), its
  // last answer reused in the cycles between; 0: every cycle. Both: rules/rule_scope.h.
  std::string node_selector;
  double interval_seconds = 0;

  // Every field: a reload keeps the state of a rule only if nothing in it changed.
  bool operator==(const Rule&) const = default;
};

// The default set of managed nodes: every node but the control plane.
inline constexpr const char* kDefaultNodeSelector =
    "!node-role.kubernetes.io/control-plane,!node-role.kubernetes.io/master";

struct RuleConfig {
  std::string source;  // file the config came from, for messages
  bool legacy = false;
  std::string job_name;  // legacy PromJob.Name; informational
  std::vector<Rule> rules;
  Mark mark;  // mark (the mode), label.key / label.value, taint.key / taint.value
  std::string node_selector = kDefaultNodeSelector;
  std::string prometheus_url;             // "" = take it from -prom
  double interval_seconds = 0;            // 0 = not set here
  double query_timeout_seconds = 0;       // 0 = not set here
  double missing_data_grace_seconds = 0;  // 0 = three intervals
  RebalanceConfig rebalance;              // the `rebalance:` section; off when absent
  // What was accepted but deserves a word, each "<source>:<line>:<col>: <field>: <why>": keys of
  // the legacy format the original project ignored (it still ignores them, and says so).
  std::vector<std::string> warnings;
  // prometheus.bearerTokenFile, .basicAuth, .headers and .tls, checked for shape and conflicts
  // (the files are read by the controller's options); paths as written.
  HttpAuthConfig prometheus_auth;
  // maxMarkedFraction / maxMarked: at most this many managed nodes carry the mark at once
  // (rules/herd_cap.h). The legacy format has no keys for them and gets the defaults.
  double max_marked_fraction = 0.5;
  size_t max_marked = 0;  // 0 = no limit by number
  // onPrometheusDown / releaseAfter (rules/outage.h).
  bool release_on_outage = false;
  double release_after_seconds = 600;
};

// missingDataGrace, or three intervals when the file does not set it.
inline double MissingDataGraceSeconds(const RuleConfig& cfg, double interval_seconds) {
  return cfg.missing_data_grace_seconds > 0 ? cfg.missing_data_grace_seconds : 3 * interval_seconds;
}

// Parses "30s", "1m30s", "500ms", "2h", "2d", or a bare number of seconds. Negative is an error.
StatusOr<double> ParseDuration(const std::string& text);

// Parses and validates YAML text. `source` names the file in every error, which has the form
// "<source>:<line>:<col>: <rule or field>: <problem>".
StatusOr<RuleConfig> ParseRuleConfig(const std::string& yaml_text, const std::string& source);

// The top-level keys of the current format (the legacy format's are Rulename and PromJob).
const std::set<std::string>& CurrentFormatKeys();

// Reads a rule file's text (at most 1 MiB). Errors name the file.
StatusOr<std::string> ReadRuleFile(const std::string& path);

// Reads and parses a file. Errors name the file.
StatusOr<RuleConfig> LoadRuleConfigFile(const std::string& path);

}  // namespace ds
