// rule.yaml: the whole file's schema as loaded (what one rule is: rules/rule.h), its parsing and
// validation. The one place that knows every section: the rules, the mark, Prometheus' address and
// credentials, the herd cap, the outage policy and the rebalancer's section. Two formats load: the
// original project's legacy one (PromJob, Rulename: loads unchanged) and the current one. Every
// field, its default and its limits are documented once, in docs/reference.md ("rule.yaml").
// Parsed by one entry point, ParseRuleConfig (config/rule_config.cc), with each section in a file
// of its own (config/rule_config_parse.h lists them).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/http_auth.h"
#include "common/status.h"
#include "rebalance/rebalance_config.h"
#include "rules/mark.h"
#include "rules/rule.h"

namespace ds {

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
