// Private to config/: what the files of ParseRuleConfig (config/rule_config.h) share. The loader
// is one parse split by section, one file each, so that a section's checks can be read apart:
//   rule_config.cc            the entry point, the order of the sections, the legacy format, the
//                             file on disk
//   rule_config_fields.cc     FieldReader below: a field's value as a type, and ParseDuration
//   rule_config_prometheus.cc prometheus, interval, missingDataGrace, onPrometheusDown,
//                             releaseAfter: where the values come from, and how long they last
//   rule_config_mark.cc       label, mark, taint, levels, maxMarkedFraction, maxMarked: what
//                             marks a node, and how many nodes may carry it
//   rule_config_rules.cc      rules, with each rule's levels, predict, pool and interval
//   rule_config_rebalance.cc  rebalance, with underused
// Every error has the form "<source>:<line>:<col>: <field>: <problem>" (FieldReader::Error), so a
// message does not depend on which file words it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "config/rule_config.h"
#include "rules/mark.h"

namespace ds {
namespace rule_config_parse {

// "<source>:<line>:<col>" of `n`, or `source` alone when `n` has no place in the text.
std::string Where(const std::string& source, const YAML::Node& n);

// Reads one field's value as the type the schema gives it, or says why it cannot: each error
// names the file, the line and column of `n`, and `field` as the user wrote its path
// ("rebalance.limits.perHour", "rule \"cpu\": threshold"). A section's parser is a FieldReader
// with the section's own steps added (a class in the section's file), so that every section
// reads and words its fields alike. Copyable (it holds the source's name only).
class FieldReader {
 public:
  explicit FieldReader(std::string source) : source_(std::move(source)) {}

  const std::string& source() const { return source_; }

  // kInvalidArgument "<source>:<line>:<col>: <field>: <problem>".
  Status Error(const YAML::Node& at, const std::string& field, const std::string& problem) const;

  // `map` is a mapping whose keys are all in `allowed` (listed in the error otherwise); `field`
  // is the mapping's path, "" for the top level.
  Status CheckKeys(const YAML::Node& map, const std::string& field,
                   const std::set<std::string>& allowed) const;

  StatusOr<std::string> String(const YAML::Node& n, const std::string& field) const;
  StatusOr<std::string> NonEmptyString(const YAML::Node& n, const std::string& field) const;
  // A finite number (strtod's syntax, the whole scalar).
  StatusOr<double> Number(const YAML::Node& n, const std::string& field) const;
  // A duration (ParseDuration), in seconds.
  StatusOr<double> Seconds(const YAML::Node& n, const std::string& field) const;
  // A duration longer than 0 s; `problem` is what the error says otherwise.
  StatusOr<double> PositiveSeconds(const YAML::Node& n, const std::string& field,
                                   const std::string& problem = "must be > 0") const;
  // true or false, spelled so (yes, on and True are refused).
  StatusOr<bool> Bool(const YAML::Node& n, const std::string& field) const;
  // A whole number >= 0.
  StatusOr<size_t> Count(const YAML::Node& n, const std::string& field) const;
  StatusOr<std::vector<std::string>> Strings(const YAML::Node& n, const std::string& field) const;
  // A PromQL query: anything but blanks (what it means is Prometheus' to say).
  StatusOr<std::string> QueryText(const YAML::Node& n, const std::string& field) const;
  // A label selector (common/label_selector.h), as written.
  StatusOr<std::string> Selector(const YAML::Node& n, const std::string& field) const;
  // A label key, or a taint key: a taint key is a qualified name, as a label key (apimachinery's
  // validation of both).
  StatusOr<std::string> LabelKey(const YAML::Node& n, const std::string& field) const;
  // A label value, or a taint value.
  StatusOr<std::string> LabelValue(const YAML::Node& n, const std::string& field) const;
  // A value the controller sets its label to (the mark's, the underused mark's): a label value,
  // and not empty.
  StatusOr<std::string> MarkValue(const YAML::Node& n, const std::string& field) const;
  // A time zone name like Europe/Berlin or UTC, with no way out of the zoneinfo folder; whether
  // this machine's tz database has it is checked at start-up and on reloads (app/options.h,
  // CheckTimeZones).
  StatusOr<std::string> TimeZoneName(const YAML::Node& n, const std::string& field) const;

 private:
  std::string source_;
};

// The sections of the current format, in the files named above. ParseCurrent (rule_config.cc)
// calls them in the order their errors are reported; a section that reads another one's values
// from `cfg` says so (REQUIRES).

// prometheus: where it is, how long a query may take, and the credentials. `p`: the section.
Status ParsePrometheus(const FieldReader& in, const YAML::Node& p, RuleConfig* cfg);
// interval and missingDataGrace. `root`: the top level.
Status ParseCycle(const FieldReader& in, const YAML::Node& root, RuleConfig* cfg);
// onPrometheusDown and releaseAfter (rules/outage.h). `root`: the top level.
Status ParseOutagePolicy(const FieldReader& in, const YAML::Node& root, RuleConfig* cfg);

// label: the mark's key and value. `l`: the section.
Status ParseLabel(const FieldReader& in, const YAML::Node& l, Mark* mark);
// mark: label, taint or both (rules/mark.h). `m`: the value.
Status ParseMarkMode(const FieldReader& in, const YAML::Node& m, Mark* mark);
// taint: the mark's taint. REQUIRES: `mark`'s mode is parsed (a taint needs one that has it).
Status ParseTaint(const FieldReader& in, const YAML::Node& t, Mark* mark);
// maxMarkedFraction and maxMarked (rules/herd_cap.h). `root`: the top level.
Status ParseHerdCap(const FieldReader& in, const YAML::Node& root, RuleConfig* cfg);
// levels: the graded marks, coolest first (rules/mark.h). `label`: the top-level label section
// (may be undefined). REQUIRES: label and taint are parsed into cfg->mark.
Status ParseLevels(const FieldReader& in, const YAML::Node& n, const YAML::Node& label,
                   RuleConfig* cfg);

// rules: the list, each rule with its cooler levels appended after it. `root`: the top level.
// REQUIRES: the mark's levels, interval and missingDataGrace are parsed into `cfg`.
Status ParseRules(const FieldReader& in, const YAML::Node& root, RuleConfig* cfg);

// rebalance (rebalance/rebalance_config.h). `n`: the section. REQUIRES: the rules and the mark
// are parsed into `cfg` (the target and the underused bounds are checked against the rules).
Status ParseRebalance(const FieldReader& in, const YAML::Node& n, RuleConfig* cfg);

}  // namespace rule_config_parse
}  // namespace ds
