#include "config/rule_config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "common/label_selector.h"
#include "common/labels.h"
#include "common/yaml_guard.h"

namespace ds {
namespace {

constexpr size_t kMaxRuleFileBytes = 1u << 20;

std::string Where(const std::string& source, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.is_null()) return source;
  return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

// An IANA name (Europe/Berlin) or UTC: letters, digits, '/', '_', '-', '+', and no way out of
// the zoneinfo folder.
bool TimeZoneNameOk(const std::string& name) {
  bool ok =
      !name.empty() && name.size() < 64 && name[0] != '/' && name.find("..") == std::string::npos;
  for (char c : name)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' ||
                c == '+');
  return ok;
}

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  Status Error(const YAML::Node& at, const std::string& field, const std::string& problem) const {
    return Status::InvalidArgument(Where(source_, at) + ": " + field + ": " + problem);
  }

  Status CheckKeys(const YAML::Node& map, const std::string& field,
                   const std::set<std::string>& allowed) const {
    if (!map.IsMap()) return Error(map, field, "must be a mapping");
    for (const auto& kv : map) {
      std::string key = kv.first.Scalar();
      if (!allowed.count(key)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        return Error(kv.first, field.empty() ? key : field + "." + key,
                     "unknown field (allowed: " + list + ")");
      }
    }
    return Status::OK();
  }

  StatusOr<std::string> String(const YAML::Node& n, const std::string& field) const {
    if (!n.IsScalar()) return Error(n, field, "must be a string");
    return n.Scalar();
  }

  StatusOr<double> Number(const YAML::Node& n, const std::string& field) const {
    if (!n.IsScalar()) return Error(n, field, "must be a number");
    const std::string& s = n.Scalar();
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size())
      return Error(n, field, "\"" + s + "\" is not a number");
    if (!std::isfinite(v)) return Error(n, field, "\"" + s + "\" is not a finite number");
    return v;
  }

  StatusOr<double> Seconds(const YAML::Node& n, const std::string& field) const {
    if (!n.IsScalar()) return Error(n, field, "must be a duration like 30s");
    auto d = ParseDuration(n.Scalar());
    if (!d.ok()) return Error(n, field, d.status().message());
    return *d;
  }

  StatusOr<bool> Bool(const YAML::Node& n, const std::string& field) const {
    if (n.IsScalar()) {
      if (n.Scalar() == "true") return true;
      if (n.Scalar() == "false") return false;
    }
    return Error(n, field, "must be true or false");
  }

  // A whole number >= 0.
  StatusOr<size_t> Count(const YAML::Node& n, const std::string& field) const {
    ASSIGN_OR_RETURN(double v, Number(n, field));
    if (v < 0 || v != std::floor(v) || v > 1e9)
      return Error(n, field, "must be a whole number from 0 to 1000000000");
    return static_cast<size_t>(v);
  }

  StatusOr<std::vector<std::string>> Strings(const YAML::Node& n, const std::string& field) const {
    if (!n.IsSequence()) return Error(n, field, "must be a list of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < n.size(); ++i) {
      ASSIGN_OR_RETURN(std::string v, String(n[i], field + "[" + std::to_string(i) + "]"));
      out.push_back(std::move(v));
    }
    return out;
  }

  // "HH:MM" (24:00 allowed as an end) as minutes of the day.
  StatusOr<int> ClockTime(const YAML::Node& n, const std::string& field) const {
    int h = -1, m = -1, used = 0;
    const std::string s = n.IsScalar() ? n.Scalar() : "";
    if (std::sscanf(s.c_str(), "%2d:%2d%n", &h, &m, &used) != 2 || used != 5 ||
        static_cast<size_t>(used) != s.size() || h < 0 || m < 0 || m > 59 || h > 24 ||
        (h == 24 && m != 0))
      return Error(n, field, "must be a time of day like \"22:00\"");
    return h * 60 + m;
  }

  Status ParseWindow(const YAML::Node& n, const std::string& field, TimeWindow* w) const {
    RETURN_NOT_OK(CheckKeys(n, field, {"days", "start", "end"}));
    if (n["days"]) {
      static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
      ASSIGN_OR_RETURN(std::vector<std::string> days, Strings(n["days"], field + ".days"));
      w->days = 0;
      for (size_t i = 0; i < days.size(); ++i) {
        int d = -1;
        for (int k = 0; k < 7; ++k)
          if (days[i] == kDays[k]) d = k;
        if (d < 0)
          return Error(n["days"][i], field + ".days[" + std::to_string(i) + "]",
                       "\"" + days[i] + "\" is not one of Sun, Mon, Tue, Wed, Thu, Fri, Sat");
        w->days |= static_cast<uint8_t>(1u << d);
      }
    }
    if (!n["start"] || !n["end"]) return Error(n, field, "needs start and end, e.g. \"22:00\"");
    ASSIGN_OR_RETURN(w->start_minute, ClockTime(n["start"], field + ".start"));
    ASSIGN_OR_RETURN(w->end_minute, ClockTime(n["end"], field + ".end"));
    if (w->start_minute == w->end_minute)
      return Error(n["end"], field + ".end", "must differ from start");
    return Status::OK();
  }

  Status ParseRebalance(const YAML::Node& n, RuleConfig* cfg) const {
    RebalanceConfig& r = cfg->rebalance;
    RETURN_NOT_OK(CheckKeys(
        n, "rebalance",
        {"after", "holdAfterEviction", "dryRun", "target", "podUsage", "minPodAge", "evictBarePods",
         "evictLocalStorage", "priorityThreshold", "namespaces", "nodeSelector", "limits",
         "windows", "timeZone", "effectWindow", "referenceQuery", "underused"}));
    r.enabled = true;
    if (n["referenceQuery"]) {
      ASSIGN_OR_RETURN(r.reference_query, String(n["referenceQuery"], "rebalance.referenceQuery"));
    }
    if (n["effectWindow"]) {
      ASSIGN_OR_RETURN(r.effect_window_seconds,
                       Seconds(n["effectWindow"], "rebalance.effectWindow"));
      if (r.effect_window_seconds <= 0)
        return Error(n["effectWindow"], "rebalance.effectWindow", "must be longer than 0 s");
    }
    if (n["after"]) {
      ASSIGN_OR_RETURN(r.after_seconds, Seconds(n["after"], "rebalance.after"));
    }
    if (n["holdAfterEviction"]) {
      ASSIGN_OR_RETURN(r.hold_after_eviction_seconds,
                       Seconds(n["holdAfterEviction"], "rebalance.holdAfterEviction"));
    }
    if (n["dryRun"]) {
      ASSIGN_OR_RETURN(r.dry_run, Bool(n["dryRun"], "rebalance.dryRun"));
    }
    if (n["target"]) {
      ASSIGN_OR_RETURN(r.target, Number(n["target"], "rebalance.target"));
      // The floor must leave room under the goal (a rule's clear threshold): at or above it, no
      // eviction could ever be planned for that rule.
      for (const Rule& rule : cfg->rules) {
        if (rule.resource == Rule::Resource::kNone || r.target < rule.clear_threshold) continue;
        std::ostringstream why;
        why << "must be below the clear threshold of rule " << rule.name << " ("
            << rule.clear_threshold << "): the rebalancer plans a node's load down to that "
            << "threshold and never below the target";
        return Error(n["target"], "rebalance.target", why.str());
      }
    }
    if (const YAML::Node u = n["podUsage"]) {
      RETURN_NOT_OK(CheckKeys(u, "rebalance.podUsage", {"cpu", "memory"}));
      if (u["cpu"]) {
        ASSIGN_OR_RETURN(r.cpu_usage_query, String(u["cpu"], "rebalance.podUsage.cpu"));
      }
      if (u["memory"]) {
        ASSIGN_OR_RETURN(r.memory_usage_query, String(u["memory"], "rebalance.podUsage.memory"));
      }
    }
    if (n["minPodAge"]) {
      ASSIGN_OR_RETURN(r.pods.min_pod_age_seconds, Seconds(n["minPodAge"], "rebalance.minPodAge"));
    }
    if (n["evictBarePods"]) {
      ASSIGN_OR_RETURN(r.pods.evict_bare_pods, Bool(n["evictBarePods"], "rebalance.evictBarePods"));
    }
    if (n["evictLocalStorage"]) {
      ASSIGN_OR_RETURN(r.pods.evict_local_storage,
                       Bool(n["evictLocalStorage"], "rebalance.evictLocalStorage"));
    }
    if (n["priorityThreshold"]) {
      ASSIGN_OR_RETURN(double p, Number(n["priorityThreshold"], "rebalance.priorityThreshold"));
      if (p != std::floor(p) || p < -2147483648.0 || p > 2147483647.0)
        return Error(n["priorityThreshold"], "rebalance.priorityThreshold",
                     "must be a whole number within a pod priority's range (int32)");
      r.pods.priority_threshold = static_cast<int32_t>(p);
    }
    if (const YAML::Node ns = n["namespaces"]) {
      RETURN_NOT_OK(CheckKeys(ns, "rebalance.namespaces", {"include", "exclude"}));
      if (ns["include"]) {
        ASSIGN_OR_RETURN(r.pods.include_namespaces,
                         Strings(ns["include"], "rebalance.namespaces.include"));
      }
      if (ns["exclude"]) {
        ASSIGN_OR_RETURN(r.pods.exclude_namespaces,
                         Strings(ns["exclude"], "rebalance.namespaces.exclude"));
      }
    }
    if (n["nodeSelector"]) {
      ASSIGN_OR_RETURN(r.node_selector, String(n["nodeSelector"], "rebalance.nodeSelector"));
      auto sel = LabelSelector::Parse(r.node_selector);
      if (!sel.ok())
        return Error(n["nodeSelector"], "rebalance.nodeSelector", sel.status().message());
    }
    if (const YAML::Node l = n["limits"]) {
      RETURN_NOT_OK(CheckKeys(l, "rebalance.limits",
                              {"perCycle", "perHour", "perNodePerHour", "nodeCooldown",
                               "perNamespacePerHour", "perWorkload"}));
      EvictionLimits& lim = r.limits;
      if (l["perCycle"]) {
        ASSIGN_OR_RETURN(lim.per_cycle, Count(l["perCycle"], "rebalance.limits.perCycle"));
      }
      if (l["perHour"]) {
        ASSIGN_OR_RETURN(lim.per_hour, Count(l["perHour"], "rebalance.limits.perHour"));
      }
      if (l["perNodePerHour"]) {
        ASSIGN_OR_RETURN(lim.per_node_per_hour,
                         Count(l["perNodePerHour"], "rebalance.limits.perNodePerHour"));
      }
      if (l["nodeCooldown"]) {
        ASSIGN_OR_RETURN(lim.node_cooldown_seconds,
                         Seconds(l["nodeCooldown"], "rebalance.limits.nodeCooldown"));
      }
      if (l["perNamespacePerHour"]) {
        ASSIGN_OR_RETURN(lim.per_namespace_per_hour,
                         Count(l["perNamespacePerHour"], "rebalance.limits.perNamespacePerHour"));
      }
      if (l["perWorkload"]) {
        ASSIGN_OR_RETURN(lim.per_workload_unreplaced,
                         Count(l["perWorkload"], "rebalance.limits.perWorkload"));
      }
    }
    if (const YAML::Node w = n["windows"]) {
      if (!w.IsSequence() || w.size() == 0)
        return Error(w, "rebalance.windows", "must be a non-empty list of {days, start, end}");
      for (size_t i = 0; i < w.size(); ++i) {
        TimeWindow tw;
        RETURN_NOT_OK(ParseWindow(w[i], "rebalance.windows[" + std::to_string(i) + "]", &tw));
        r.limits.windows.push_back(tw);
      }
    }
    if (n["timeZone"]) {
      ASSIGN_OR_RETURN(r.time_zone, String(n["timeZone"], "rebalance.timeZone"));
      if (!TimeZoneNameOk(r.time_zone))
        return Error(n["timeZone"], "rebalance.timeZone",
                     "\"" + r.time_zone + "\" is not a time zone name like Europe/Berlin or UTC");
    }
    if (const YAML::Node u = n["underused"]) RETURN_NOT_OK(ParseUnderused(u, cfg));
    return Status::OK();
  }

  // rebalance.underused (rebalance_config.h). The rules are parsed already: each bound needs a
  // rule measuring its resource, and must lie below the clear threshold of every such rule, or
  // one node could be underused and hot at once.
  Status ParseUnderused(const YAML::Node& u, RuleConfig* cfg) const {
    UnderusedConfig& c = cfg->rebalance.underused;
    RETURN_NOT_OK(CheckKeys(u, "rebalance.underused",
                            {"cpuBelow", "memoryBelow", "for", "value", "maxNodes"}));
    c.enabled = true;
    const char* keys[2] = {"cpuBelow", "memoryBelow"};
    const Rule::Resource resources[2] = {Rule::Resource::kCpu, Rule::Resource::kMemory};
    for (int i = 0; i < 2; ++i) {
      const YAML::Node b = u[keys[i]];
      if (!b) continue;
      const std::string field = std::string("rebalance.underused.") + keys[i];
      ASSIGN_OR_RETURN(c.below[i], Number(b, field));
      if (!(c.below[i] > 0 && c.below[i] < 100))
        return Error(b, field, "must be a percent between 0 and 100");
      bool measured = false;
      for (const Rule& rule : cfg->rules) {
        if (rule.resource != resources[i]) continue;
        measured = true;
        if (c.below[i] >= rule.clear_threshold) {  // resource rules all compare with '>'
          std::ostringstream why;
          why << "must be below the clear threshold of rule " << rule.name << " ("
              << rule.clear_threshold << "), or a node could be both hot and underused";
          return Error(b, field, why.str());
        }
      }
      if (!measured)
        return Error(b, field,
                     std::string("no rule measures ") + (i == 0 ? "cpu" : "memory") +
                         " (resource: " + (i == 0 ? "cpu" : "memory") + " on a rule)");
    }
    if (std::isnan(c.below[0]) && std::isnan(c.below[1]))
      return Error(u, "rebalance.underused", "needs cpuBelow, memoryBelow or both");
    if (u["for"]) {
      ASSIGN_OR_RETURN(c.for_seconds, Seconds(u["for"], "rebalance.underused.for"));
    }
    if (u["value"]) {
      ASSIGN_OR_RETURN(c.value, String(u["value"], "rebalance.underused.value"));
      if (auto why = ValidateLabelValue(c.value); !why.empty())
        return Error(u["value"], "rebalance.underused.value", why);
      if (c.value.empty())
        return Error(u["value"], "rebalance.underused.value", "must not be empty");
    }
    if (c.value == cfg->mark.value)
      return Error(u["value"] ? u["value"] : u, "rebalance.underused.value",
                   "must differ from the mark's value \"" + cfg->mark.value + "\"");
    for (const Mark::Level& l : cfg->mark.levels)
      if (c.value == l.value)
        return Error(u["value"] ? u["value"] : u, "rebalance.underused.value",
                     "must differ from level " + l.name + "'s value \"" + l.value + "\"");
    if (u["maxNodes"]) {
      ASSIGN_OR_RETURN(c.max_nodes, Count(u["maxNodes"], "rebalance.underused.maxNodes"));
      if (c.max_nodes == 0)
        return Error(u["maxNodes"], "rebalance.underused.maxNodes", "must be at least 1");
    }
    return Status::OK();
  }

  // The original project read its files into Go structs, which drop unknown keys without a word:
  // files written for it may carry keys it never used. They are ignored here too, with a warning
  // (the current format refuses them, since there a typo would silently change behaviour).
  inline static const std::set<std::string> kCurrentKeys = {"prometheus",
                                                            "interval",
                                                            "missingDataGrace",
                                                            "label",
                                                            "nodeSelector",
                                                            "rules",
                                                            "maxMarkedFraction",
                                                            "maxMarked",
                                                            "rebalance",
                                                            "onPrometheusDown",
                                                            "releaseAfter",
                                                            "mark",
                                                            "taint",
                                                            "levels"};

  Status IgnoreUnknown(const YAML::Node& map, const std::string& field,
                       const std::set<std::string>& known, RuleConfig* cfg) const {
    if (!map.IsMap()) return Error(map, field, "must be a mapping");
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      if (known.count(key)) continue;
      cfg->warnings.push_back(Where(source_, kv.first) + ": " +
                              (field.empty() ? key : field + "." + key) +
                              ": unknown field, ignored (as the original project did)");
    }
    return Status::OK();
  }

  Status ParseLegacy(const YAML::Node& root, RuleConfig* cfg) const {
    // A key of the current format means the file mixes the two: ignoring it would drop what
    // its author meant to configure.
    for (const auto& kv : root)
      if (kCurrentKeys.count(kv.first.Scalar()))
        return Error(kv.first, kv.first.Scalar(),
                     "unknown field: a legacy file (PromJob/Rulename) cannot use the current "
                     "format's keys; convert the whole file (docs/reference.md, rule.yaml)");
    RETURN_NOT_OK(IgnoreUnknown(root, "", {"PromJob", "Rulename"}, cfg));
    cfg->legacy = true;
    if (const YAML::Node job = root["PromJob"]) {
      RETURN_NOT_OK(IgnoreUnknown(job, "PromJob", {"Name"}, cfg));
      if (job["Name"]) {
        ASSIGN_OR_RETURN(cfg->job_name, String(job["Name"], "PromJob.Name"));
      }
    }
    const YAML::Node rules = root["Rulename"];
    if (!rules.IsMap() || rules.size() == 0)
      return Error(rules, "Rulename", "must map rule names to {Promsql, Threshold}");
    for (const auto& kv : rules) {
      Rule r;
      r.name = kv.first.Scalar();
      const std::string f = "Rulename." + r.name;
      RETURN_NOT_OK(IgnoreUnknown(kv.second, f, {"Promsql", "Threshold"}, cfg));
      if (!kv.second["Promsql"]) return Error(kv.second, f + ".Promsql", "missing query");
      ASSIGN_OR_RETURN(r.query, String(kv.second["Promsql"], f + ".Promsql"));
      if (r.query.find_first_not_of(" \t\n") == std::string::npos)
        return Error(kv.second["Promsql"], f + ".Promsql", "empty query");
      if (!kv.second["Threshold"]) return Error(kv.second, f + ".Threshold", "missing threshold");
      ASSIGN_OR_RETURN(r.threshold, Number(kv.second["Threshold"], f + ".Threshold"));
      r.clear_threshold = r.threshold;
      cfg->rules.push_back(std::move(r));
    }
    return Status::OK();
  }

  Status ParseRule(const YAML::Node& n, size_t i, RuleConfig* cfg) const {
    std::string f = "rules[" + std::to_string(i) + "]";
    RETURN_NOT_OK(CheckKeys(n, f,
                            {"name", "query", "operator", "threshold", "clearThreshold", "for",
                             "nodeLabel", "resource", "maxAge", "ageQuery", "relativeTo",
                             "minNodes", "levels", "predict", "nodeSelector", "interval"}));
    Rule r;
    if (!n["name"]) return Error(n, f + ".name", "missing rule name");
    ASSIGN_OR_RETURN(r.name, String(n["name"], f + ".name"));
    if (r.name.empty()) return Error(n["name"], f + ".name", "empty rule name");
    f = "rule \"" + r.name + "\"";
    for (const auto& prev : cfg->rules)
      if (prev.name == r.name) return Error(n["name"], f, "duplicate rule name");
    if (!n["query"]) return Error(n, f + ": query", "missing query");
    ASSIGN_OR_RETURN(r.query, String(n["query"], f + ": query"));
    if (r.query.find_first_not_of(" \t\n") == std::string::npos)
      return Error(n["query"], f + ": query", "empty query");
    if (n["operator"]) {
      ASSIGN_OR_RETURN(std::string op, String(n["operator"], f + ": operator"));
      if (op == ">")
        r.op = Comparison::kGreater;
      else if (op == "<")
        r.op = Comparison::kLess;
      else
        return Error(n["operator"], f + ": operator",
                     "unknown operator \"" + op + "\" (use \">\" or \"<\")");
    }
    if (!n["threshold"]) return Error(n, f + ": threshold", "missing threshold");
    ASSIGN_OR_RETURN(r.threshold, Number(n["threshold"], f + ": threshold"));
    r.clear_threshold = r.threshold;
    if (n["clearThreshold"]) {
      ASSIGN_OR_RETURN(r.clear_threshold, Number(n["clearThreshold"], f + ": clearThreshold"));
    }
    if (n["relativeTo"]) {
      ASSIGN_OR_RETURN(std::string to, String(n["relativeTo"], f + ": relativeTo"));
      if (to != "mean")
        return Error(n["relativeTo"], f + ": relativeTo",
                     "unknown \"" + to +
                         "\" (use mean: thresholds are offsets from the mean of "
                         "the managed nodes' values)");
      r.relative_to = Rule::Relative::kMean;
      // An offset against the rule's direction would call nodes on the cool side of the mean
      // hot (about half the cluster); the operator already says which side is hot.
      if (r.threshold < 0)
        return Error(n["threshold"], f + ": threshold",
                     "must be >= 0 with relativeTo: mean (an offset from the mean, in the "
                     "operator's direction)");
      if (r.clear_threshold < 0)
        return Error(n["clearThreshold"], f + ": clearThreshold",
                     "must be >= 0 with relativeTo: mean (an offset from the mean, in the "
                     "operator's direction)");
    }
    if (n["clearThreshold"] && r.relative_to == Rule::Relative::kMean) {
      // Offsets in the operator's direction: the clearing one is the smaller, for '<' as well.
      if (r.clear_threshold > r.threshold)
        return Error(n["clearThreshold"], f + ": clearThreshold",
                     "must be <= threshold with relativeTo: mean (the node clears nearer the "
                     "mean than it turned hot)");
    } else if (n["clearThreshold"]) {
      if (r.op == Comparison::kGreater && r.clear_threshold > r.threshold)
        return Error(n["clearThreshold"], f + ": clearThreshold",
                     "must be <= threshold for operator \">\" (the node cools below it)");
      if (r.op == Comparison::kLess && r.clear_threshold < r.threshold)
        return Error(n["clearThreshold"], f + ": clearThreshold",
                     "must be >= threshold for operator \"<\" (the node recovers above it)");
    }
    if (n["minNodes"]) {
      if (r.relative_to == Rule::Relative::kNone)
        return Error(n["minNodes"], f + ": minNodes",
                     "only with relativeTo: mean (how many values the mean needs)");
      ASSIGN_OR_RETURN(double m, Number(n["minNodes"], f + ": minNodes"));
      // The mean of one value is that value: no node could ever stand out from it.
      if (m < 2 || m != std::floor(m) || m > 1e6)
        return Error(n["minNodes"], f + ": minNodes", "must be a whole number >= 2");
      r.min_nodes = static_cast<size_t>(m);
    }
    if (n["for"]) {
      ASSIGN_OR_RETURN(r.for_seconds, Seconds(n["for"], f + ": for"));
    }
    if (n["nodeLabel"]) {
      ASSIGN_OR_RETURN(r.node_label, String(n["nodeLabel"], f + ": nodeLabel"));
      if (r.node_label.empty())
        return Error(n["nodeLabel"], f + ": nodeLabel", "must not be empty");
    }
    if (n["resource"]) {
      ASSIGN_OR_RETURN(std::string res, String(n["resource"], f + ": resource"));
      if (res == "cpu")
        r.resource = Rule::Resource::kCpu;
      else if (res == "memory")
        r.resource = Rule::Resource::kMemory;
      else
        return Error(
            n["resource"], f + ": resource",
            "unknown resource \"" + res +
                "\" (use cpu or memory: the value is that percent of the node's allocatable)");
      if (r.op != Comparison::kGreater)
        return Error(n["resource"], f + ": resource",
                     "needs operator \">\" (a percent in use; relieving raises nothing)");
      // The rebalancer plans a node's load down to the clear threshold as a percent; a relative
      // one moves with every eviction it plans.
      if (r.relative_to != Rule::Relative::kNone)
        return Error(n["resource"], f + ": resource",
                     "not with relativeTo (the rebalancer needs an absolute clear threshold)");
    }
    if (n["maxAge"]) {
      ASSIGN_OR_RETURN(r.max_age_seconds, Seconds(n["maxAge"], f + ": maxAge"));
      if (r.max_age_seconds <= 0)
        return Error(n["maxAge"], f + ": maxAge", "must be longer than 0 s");
    }
    if (n["ageQuery"]) {
      ASSIGN_OR_RETURN(r.age_query, String(n["ageQuery"], f + ": ageQuery"));
      if (r.age_query.find_first_not_of(" \t\n") == std::string::npos)
        return Error(n["ageQuery"], f + ": ageQuery", "empty query");
      // Without maxAge nothing would read the update times: a forgotten maxAge, not a choice.
      if (r.max_age_seconds == 0)
        return Error(n["ageQuery"], f + ": ageQuery",
                     "needs maxAge (how old a node's last update may be)");
    }
    RETURN_NOT_OK(ParseRuleScope(n, f, cfg, &r));
    if (n["predict"]) RETURN_NOT_OK(ParsePredict(n, f, &r));
    cfg->rules.push_back(r);
    if (n["levels"]) RETURN_NOT_OK(ParseRuleLevels(n["levels"], f, r, cfg));
    return Status::OK();
  }

  // `levels:` (graded marks, rules/mark.h): coolest first, each {name, value}. A cooler level's
  // value defaults to its name; the hottest level is the mark itself, its value label.value.
  Status ParseLevels(const YAML::Node& n, const YAML::Node& label, RuleConfig* cfg) const {
    if (!n.IsSequence() || n.size() < 2)
      return Error(n, "levels",
                   "must be a list of at least two levels, coolest first (with one, the mark is "
                   "that level: drop levels)");
    Mark& mark = cfg->mark;
    std::vector<YAML::Node> at;  // where each level's value was given (or the level)
    for (size_t i = 0; i < n.size(); ++i) {
      const std::string f = "levels[" + std::to_string(i) + "]";
      RETURN_NOT_OK(CheckKeys(n[i], f, {"name", "value"}));
      if (!n[i]["name"]) return Error(n[i], f + ".name", "missing level name");
      Mark::Level l;
      ASSIGN_OR_RETURN(l.name, NonEmptyString(n[i]["name"], f + ".name"));
      // The name is part of the name of the rule each level loads as ("cpu@warm").
      if (auto why = ValidateLabelValue(l.name); !why.empty())
        return Error(n[i]["name"], f + ".name", why);
      for (const Mark::Level& prev : mark.levels)
        if (prev.name == l.name)
          return Error(n[i]["name"], f + ".name", "duplicate level name \"" + l.name + "\"");
      const bool hottest = i + 1 == n.size();
      if (n[i]["value"]) {
        ASSIGN_OR_RETURN(l.value, NonEmptyString(n[i]["value"], f + ".value"));
        if (auto why = ValidateLabelValue(l.value); !why.empty())
          return Error(n[i]["value"], f + ".value", why);
        if (hottest && label && label["value"] && l.value != mark.value)
          return Error(n[i]["value"], f + ".value",
                       "the hottest level is the mark itself, whose value is label.value \"" +
                           mark.value + "\": give it in one place");
        if (hottest) mark.value = l.value;
      } else {
        l.value = hottest ? mark.value : l.name;
      }
      at.push_back(n[i]["value"] ? n[i]["value"] : n[i]);
      mark.levels.push_back(std::move(l));
    }
    for (size_t i = 0; i < mark.levels.size(); ++i) {
      const std::string f = "levels[" + std::to_string(i) + "].value";
      for (size_t j = 0; j < i; ++j)
        if (mark.levels[j].value == mark.levels[i].value)
          return Error(at[i], f,
                       "\"" + mark.levels[i].value + "\" is level " + mark.levels[j].name +
                           "'s value too: each level needs its own");
      // A cooler level's taint takes its value; the hottest's is taint.value.
      if (mark.UsesTaint() && i + 1 < mark.levels.size() &&
          mark.levels[i].value == mark.taint.value)
        return Error(at[i], f,
                     "\"" + mark.taint.value + "\" is the taint's value (the hottest level's)");
    }
    return Status::OK();
  }

  // A rule's `levels: {warm: {threshold, clearThreshold, for}}`: when it marks a node at a cooler
  // level. Each level loads as a rule of its own, after `base` (Rule::below_hottest).
  Status ParseRuleLevels(const YAML::Node& n, const std::string& f, const Rule& base,
                         RuleConfig* cfg) const {
    const Mark& mark = cfg->mark;
    if (mark.levels.empty())
      return Error(n, f + ": levels",
                   "needs the top-level levels list (the levels, coolest first)");
    if (!n.IsMap() || n.size() == 0)
      return Error(n, f + ": levels", "must map level names to {threshold, clearThreshold, for}");
    // Thresholds in the rule's direction: '>' and relative offsets grow hotter, '<' cooler.
    const bool up = base.op == Comparison::kGreater || base.relative_to != Rule::Relative::kNone;
    std::vector<std::optional<Rule>> by_level(mark.LevelCount());
    std::vector<YAML::Node> where(mark.LevelCount());
    for (const auto& kv : n) {
      const std::string name = kv.first.Scalar(), lf = f + ": levels." + name;
      size_t below = 0;
      std::string names;
      for (size_t k = mark.LevelCount(); k-- > 0;) {
        if (mark.LevelName(k) == name) below = k;
        names += (names.empty() ? "" : ", ") + mark.LevelName(k);
      }
      if (below == 0 && name != mark.LevelName(0))
        return Error(kv.first, lf, "unknown level (levels: " + names + ")");
      if (below == 0)
        return Error(kv.first, lf,
                     "the hottest level's thresholds are the rule's own threshold and "
                     "clearThreshold");
      RETURN_NOT_OK(CheckKeys(kv.second, lf, {"threshold", "clearThreshold", "for"}));
      Rule r = base;
      r.name = base.name + "@" + name;
      r.below_hottest = below;
      r.resource = Rule::Resource::kNone;
      for (const Rule& prev : cfg->rules)
        if (prev.name == r.name)
          return Error(kv.first, lf, "rule name \"" + r.name + "\" is taken by another rule");
      if (!kv.second["threshold"]) return Error(kv.second, lf + ".threshold", "missing threshold");
      ASSIGN_OR_RETURN(r.threshold, Number(kv.second["threshold"], lf + ".threshold"));
      r.clear_threshold = r.threshold;
      if (kv.second["clearThreshold"]) {
        ASSIGN_OR_RETURN(r.clear_threshold,
                         Number(kv.second["clearThreshold"], lf + ".clearThreshold"));
        if (up ? r.clear_threshold > r.threshold : r.clear_threshold < r.threshold)
          return Error(kv.second["clearThreshold"], lf + ".clearThreshold",
                       std::string("must be ") + (up ? "<=" : ">=") +
                           " the level's threshold (the node leaves the level past it)");
      }
      if (base.relative_to != Rule::Relative::kNone && (r.threshold < 0 || r.clear_threshold < 0))
        return Error(kv.second["threshold"], lf + ".threshold",
                     "must be >= 0 with relativeTo: mean (an offset from the mean)");
      if (kv.second["for"]) {
        ASSIGN_OR_RETURN(r.for_seconds, Seconds(kv.second["for"], lf + ".for"));
      }
      where[below] = kv.second["threshold"];
      by_level[below] = std::move(r);
    }
    // A cooler level is reached first: its threshold lies before every hotter level's.
    double hotter = base.threshold;
    std::string hotter_name = mark.LevelName(0);
    for (size_t below = 1; below < by_level.size(); ++below) {
      if (!by_level[below]) continue;
      const double t = by_level[below]->threshold;
      if (up ? t >= hotter : t <= hotter) {
        std::ostringstream why;
        why << "must be " << (up ? "below" : "above") << " level " << hotter_name
            << "'s threshold (" << hotter << "): a cooler level is reached first";
        return Error(where[below], f + ": levels." + mark.LevelName(below) + ".threshold",
                     why.str());
      }
      hotter = t;
      hotter_name = mark.LevelName(below);
      cfg->rules.push_back(std::move(*by_level[below]));
    }
    return Status::OK();
  }

  // A rule's `predict:` block (rules/prediction.h). `n` is the rule's mapping.
  Status ParsePredict(const YAML::Node& n, const std::string& f, Rule* r) const {
    const YAML::Node p = n["predict"];
    const std::string pf = f + ": predict";
    RETURN_NOT_OK(
        CheckKeys(p, pf, {"days", "quantile", "halfLife", "minDays", "resolution", "timeZone"}));
    // A prediction is a day's level, not a current reading: an update age says nothing about it.
    if (n["maxAge"])
      return Error(n["maxAge"], f + ": maxAge", "not with predict (finished days do not age)");
    PredictConfig& c = r->predict;
    c.enabled = true;
    if (p["days"]) {
      ASSIGN_OR_RETURN(c.days, Count(p["days"], pf + ".days"));
      // Each day is one cached vector per rule; a quarter of history is more than a daily
      // pattern needs and keeps the first fill bounded.
      if (c.days < 1 || c.days > 90)
        return Error(p["days"], pf + ".days", "must be a whole number from 1 to 90");
    }
    if (p["quantile"]) {
      ASSIGN_OR_RETURN(c.quantile, Number(p["quantile"], pf + ".quantile"));
      if (c.quantile < 0 || c.quantile > 1)
        return Error(p["quantile"], pf + ".quantile", "must be from 0 to 1 (0.95: the P95)");
    }
    if (p["halfLife"]) {
      ASSIGN_OR_RETURN(c.half_life_seconds, Seconds(p["halfLife"], pf + ".halfLife"));
      if (c.half_life_seconds < 3600)
        return Error(p["halfLife"], pf + ".halfLife",
                     "must be at least 1h (how much older a day weighing half as much is)");
    }
    if (p["minDays"]) {
      ASSIGN_OR_RETURN(c.min_days, Count(p["minDays"], pf + ".minDays"));
      if (c.min_days < 1) return Error(p["minDays"], pf + ".minDays", "must be at least 1");
    }
    if (c.min_days > c.days)
      return Error(
          p["minDays"] ? p["minDays"] : p, pf + ".minDays",
          "must not exceed days (" + std::to_string(c.days) + "): no node could ever have a value");
    if (p["resolution"]) {
      ASSIGN_OR_RETURN(c.resolution_seconds, Seconds(p["resolution"], pf + ".resolution"));
      if (c.resolution_seconds < 1 || c.resolution_seconds > 3600 ||
          c.resolution_seconds != std::floor(c.resolution_seconds))
        return Error(p["resolution"], pf + ".resolution",
                     "must be whole seconds from 1s to 1h (the step of each day's subquery)");
    }
    if (p["timeZone"]) {
      ASSIGN_OR_RETURN(c.time_zone, String(p["timeZone"], pf + ".timeZone"));
      if (!TimeZoneNameOk(c.time_zone))
        return Error(p["timeZone"], pf + ".timeZone",
                     "\"" + c.time_zone + "\" is not a time zone name like Europe/Berlin or UTC");
    }
    return Status::OK();
  }

  // rules[].nodeSelector and rules[].interval (rules/rule_scope.h). The top-level interval and
  // missingDataGrace are parsed already.
  Status ParseRuleScope(const YAML::Node& n, const std::string& f, const RuleConfig* cfg,
                        Rule* r) const {
    if (const YAML::Node s = n["nodeSelector"]) {
      ASSIGN_OR_RETURN(r->node_selector, String(s, f + ": nodeSelector"));
      // An empty selector would select every node: leaving the key out says that plainly.
      if (r->node_selector.find_first_not_of(" \t") == std::string::npos)
        return Error(s, f + ": nodeSelector",
                     "must not be empty (leave it out for a rule of every managed node)");
      auto sel = LabelSelector::Parse(r->node_selector);
      if (!sel.ok()) return Error(s, f + ": nodeSelector", sel.status().message());
    }
    if (const YAML::Node i = n["interval"]) {
      ASSIGN_OR_RETURN(r->interval_seconds, Seconds(i, f + ": interval"));
      if (r->interval_seconds <= 0) return Error(i, f + ": interval", "must be > 0");
      std::ostringstream why;
      if (cfg->interval_seconds > 0 && r->interval_seconds < cfg->interval_seconds) {
        why << "must be at least the evaluation interval (" << cfg->interval_seconds
            << " s): a rule is queried at most once a cycle";
        return Error(i, f + ": interval", why.str());
      }
      // Between two queries the rule's data cannot come back: a grace shorter than three of its
      // intervals would drop its holds over one series missing from one answer.
      if (cfg->missing_data_grace_seconds > 0 &&
          cfg->missing_data_grace_seconds < 3 * r->interval_seconds) {
        why << "at most a third of missingDataGrace (" << cfg->missing_data_grace_seconds
            << " s): the grace must cover three of the rule's queries";
        return Error(i, f + ": interval", why.str());
      }
    }
    return Status::OK();
  }

  StatusOr<std::string> NonEmptyString(const YAML::Node& n, const std::string& field) const {
    ASSIGN_OR_RETURN(std::string v, String(n, field));
    if (v.empty()) return Error(n, field, "must not be empty");
    return v;
  }

  // prometheus.bearerTokenFile / basicAuth / headers / tls: the same choices as the -prom_*
  // flags, refused in the same combinations.
  Status ParsePrometheusAuth(const YAML::Node& p, HttpAuthConfig* auth) const {
    if (p["bearerTokenFile"]) {
      ASSIGN_OR_RETURN(auth->bearer_token_file,
                       NonEmptyString(p["bearerTokenFile"], "prometheus.bearerTokenFile"));
    }
    if (const YAML::Node b = p["basicAuth"]) {
      RETURN_NOT_OK(CheckKeys(b, "prometheus.basicAuth", {"username", "passwordFile"}));
      if (p["bearerTokenFile"])
        return Error(b, "prometheus.basicAuth",
                     "give either bearerTokenFile or basicAuth, not both");
      if (!b["username"] || !b["passwordFile"])
        return Error(b, "prometheus.basicAuth", "needs both username and passwordFile");
      ASSIGN_OR_RETURN(auth->basic_auth_user,
                       NonEmptyString(b["username"], "prometheus.basicAuth.username"));
      if (auth->basic_auth_user.find(':') != std::string::npos)
        return Error(b["username"], "prometheus.basicAuth.username", "must not contain ':'");
      ASSIGN_OR_RETURN(auth->basic_auth_password_file,
                       NonEmptyString(b["passwordFile"], "prometheus.basicAuth.passwordFile"));
    }
    if (const YAML::Node h = p["headers"]) {
      if (!h.IsMap()) return Error(h, "prometheus.headers", "must be a mapping of name: value");
      for (const auto& kv : h) {
        const std::string field = "prometheus.headers." + kv.first.Scalar();
        ASSIGN_OR_RETURN(std::string value, String(kv.second, field));
        auto line = CheckHeaderLine(kv.first.Scalar() + ": " + value);
        if (!line.ok()) return Error(kv.first, field, line.status().message());
        auth->headers.push_back(std::move(*line));
      }
    }
    if (const YAML::Node t = p["tls"]) {
      RETURN_NOT_OK(
          CheckKeys(t, "prometheus.tls", {"caFile", "certFile", "keyFile", "insecureSkipVerify"}));
      if (t["caFile"]) {
        ASSIGN_OR_RETURN(auth->ca_file, NonEmptyString(t["caFile"], "prometheus.tls.caFile"));
      }
      if (t["certFile"]) {
        ASSIGN_OR_RETURN(auth->cert_file, NonEmptyString(t["certFile"], "prometheus.tls.certFile"));
      }
      if (t["keyFile"]) {
        ASSIGN_OR_RETURN(auth->key_file, NonEmptyString(t["keyFile"], "prometheus.tls.keyFile"));
      }
      if (t["certFile"].IsDefined() != t["keyFile"].IsDefined())
        return Error(t, "prometheus.tls", "certFile and keyFile go together");
      if (t["insecureSkipVerify"]) {
        ASSIGN_OR_RETURN(auth->insecure_skip_verify,
                         Bool(t["insecureSkipVerify"], "prometheus.tls.insecureSkipVerify"));
        if (auth->insecure_skip_verify && !auth->ca_file.empty())
          return Error(t["insecureSkipVerify"], "prometheus.tls.insecureSkipVerify",
                       "true with caFile: a CA that is not checked is a mistake; drop one");
      }
    }
    return Status::OK();
  }

  Status ParseCurrent(const YAML::Node& root, RuleConfig* cfg) const {
    RETURN_NOT_OK(CheckKeys(root, "", kCurrentKeys));
    if (const YAML::Node p = root["prometheus"]) {
      RETURN_NOT_OK(CheckKeys(
          p, "prometheus", {"url", "timeout", "bearerTokenFile", "basicAuth", "headers", "tls"}));
      RETURN_NOT_OK(ParsePrometheusAuth(p, &cfg->prometheus_auth));
      if (p["url"]) {
        ASSIGN_OR_RETURN(cfg->prometheus_url, String(p["url"], "prometheus.url"));
      }
      if (p["timeout"]) {
        ASSIGN_OR_RETURN(cfg->query_timeout_seconds, Seconds(p["timeout"], "prometheus.timeout"));
        if (cfg->query_timeout_seconds <= 0)
          return Error(p["timeout"], "prometheus.timeout", "must be > 0");
      }
    }
    if (root["interval"]) {
      ASSIGN_OR_RETURN(cfg->interval_seconds, Seconds(root["interval"], "interval"));
      if (cfg->interval_seconds <= 0) return Error(root["interval"], "interval", "must be > 0");
    }
    if (root["missingDataGrace"]) {
      ASSIGN_OR_RETURN(cfg->missing_data_grace_seconds,
                       Seconds(root["missingDataGrace"], "missingDataGrace"));
    }
    if (const YAML::Node l = root["label"]) {
      RETURN_NOT_OK(CheckKeys(l, "label", {"key", "value"}));
      if (l["key"]) {
        ASSIGN_OR_RETURN(cfg->mark.key, String(l["key"], "label.key"));
        if (auto why = ValidateLabelKey(cfg->mark.key); !why.empty())
          return Error(l["key"], "label.key", why);
      }
      if (l["value"]) {
        ASSIGN_OR_RETURN(cfg->mark.value, String(l["value"], "label.value"));
        if (auto why = ValidateLabelValue(cfg->mark.value); !why.empty())
          return Error(l["value"], "label.value", why);
        if (cfg->mark.value.empty()) return Error(l["value"], "label.value", "must not be empty");
      }
    }
    if (const YAML::Node m = root["mark"]) {
      ASSIGN_OR_RETURN(std::string mode, String(m, "mark"));
      if (mode == "label")
        cfg->mark.mode = Mark::Mode::kLabel;
      else if (mode == "taint")
        cfg->mark.mode = Mark::Mode::kTaint;
      else if (mode == "both")
        cfg->mark.mode = Mark::Mode::kBoth;
      else
        return Error(m, "mark", "\"" + mode + "\" is not label, taint or both");
    }
    if (const YAML::Node t = root["taint"]) {
      RETURN_NOT_OK(CheckKeys(t, "taint", {"key", "value", "effect"}));
      if (!cfg->mark.UsesTaint())
        return Error(t, "taint", "only with mark: taint or both (the mark is the label alone)");
      if (t["key"]) {
        ASSIGN_OR_RETURN(cfg->mark.taint.key, String(t["key"], "taint.key"));
        // A taint key is a qualified name, as a label key (apimachinery's validation of both).
        if (auto why = ValidateLabelKey(cfg->mark.taint.key); !why.empty())
          return Error(t["key"], "taint.key", why);
      }
      if (t["value"]) {
        ASSIGN_OR_RETURN(cfg->mark.taint.value, String(t["value"], "taint.value"));
        if (auto why = ValidateLabelValue(cfg->mark.taint.value); !why.empty())
          return Error(t["value"], "taint.value", why);
      }
      if (t["effect"]) {
        ASSIGN_OR_RETURN(std::string effect, String(t["effect"], "taint.effect"));
        if (effect != Mark::kTaintEffect)
          return Error(t["effect"], "taint.effect",
                       "\"" + effect +
                           "\": only PreferNoSchedule (the mark is a preference: it must never "
                           "keep a pod from being scheduled)");
      }
    }
    if (root["nodeSelector"]) {
      ASSIGN_OR_RETURN(cfg->node_selector, String(root["nodeSelector"], "nodeSelector"));
      auto sel = LabelSelector::Parse(cfg->node_selector);
      if (!sel.ok()) return Error(root["nodeSelector"], "nodeSelector", sel.status().message());
    }
    if (const YAML::Node f = root["maxMarkedFraction"]) {
      ASSIGN_OR_RETURN(cfg->max_marked_fraction, Number(f, "maxMarkedFraction"));
      if (!(cfg->max_marked_fraction > 0 && cfg->max_marked_fraction <= 1))
        return Error(f, "maxMarkedFraction",
                     "must be a share of the managed nodes, above 0 and at most 1 (1: no limit)");
    }
    if (const YAML::Node m = root["maxMarked"]) {
      ASSIGN_OR_RETURN(cfg->max_marked, Count(m, "maxMarked"));
      if (cfg->max_marked == 0) return Error(m, "maxMarked", "must be at least 1");
    }
    if (const YAML::Node o = root["onPrometheusDown"]) {
      ASSIGN_OR_RETURN(std::string action, String(o, "onPrometheusDown"));
      if (action != "hold" && action != "release")
        return Error(o, "onPrometheusDown", "\"" + action + "\" is neither hold nor release");
      cfg->release_on_outage = action == "release";
    }
    if (const YAML::Node a = root["releaseAfter"]) {
      if (!cfg->release_on_outage)
        return Error(a, "releaseAfter", "only with onPrometheusDown: release (marks are held)");
      ASSIGN_OR_RETURN(cfg->release_after_seconds, Seconds(a, "releaseAfter"));
      if (cfg->release_after_seconds <= 0) return Error(a, "releaseAfter", "must be > 0");
    }
    if (root["levels"]) RETURN_NOT_OK(ParseLevels(root["levels"], root["label"], cfg));
    const YAML::Node rules = root["rules"];
    if (!rules) return Error(root, "rules", "missing: at least one rule is needed");
    if (!rules.IsSequence() || rules.size() == 0)
      return Error(rules, "rules", "must be a non-empty list of rules");
    for (size_t i = 0; i < rules.size(); ++i) RETURN_NOT_OK(ParseRule(rules[i], i, cfg));
    if (const YAML::Node r = root["rebalance"]) {
      // The rebalancer reads and writes the label (its underused mark shares the label's key).
      if (!cfg->mark.UsesLabel())
        return Error(r, "rebalance", "needs the label: mark: label or both, not taint");
      RETURN_NOT_OK(ParseRebalance(r, cfg));
      bool relievable = false;
      for (const Rule& rule : cfg->rules) relievable |= rule.resource != Rule::Resource::kNone;
      if (!relievable)
        return Error(r, "rebalance",
                     "no rule says which resource it measures (resource: cpu or memory on a rule), "
                     "so no node could be relieved");
    }
    return Status::OK();
  }

 private:
  const std::string source_;
};

}  // namespace

const std::set<std::string>& CurrentFormatKeys() { return Parser::kCurrentKeys; }

StatusOr<double> ParseDuration(const std::string& text) {
  if (text.empty()) return Status::InvalidArgument("empty duration");
  char* end = nullptr;
  double bare = std::strtod(text.c_str(), &end);
  if (end == text.c_str() + text.size()) {
    if (!std::isfinite(bare) || bare < 0)
      return Status::InvalidArgument("\"" + text + "\" is not a duration >= 0");
    return bare;
  }
  double total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (i == start) return Status::InvalidArgument("\"" + text + "\" is not a duration like 1m30s");
    double v = std::strtod(text.substr(start, i - start).c_str(), nullptr);
    size_t u = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = text.substr(u, i - u);
    if (unit == "ms")
      total += v / 1000;
    else if (unit == "s")
      total += v;
    else if (unit == "m")
      total += v * 60;
    else if (unit == "h")
      total += v * 3600;
    else if (unit == "d")  // as in PromQL; predict's halfLife is counted in days
      total += v * 86400;
    else
      return Status::InvalidArgument("\"" + text + "\": unknown unit \"" + unit +
                                     "\" (use ms, s, m, h, d)");
  }
  return total;
}

StatusOr<RuleConfig> ParseRuleConfig(const std::string& yaml_text, const std::string& source) {
  ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(yaml_text, source));
  if (!root || root.IsNull()) return Status::InvalidArgument(source + ": empty rule file");
  if (!root.IsMap())
    return Status::InvalidArgument(Where(source, root) + ": the top level must be a mapping");
  RuleConfig cfg;
  cfg.source = source;
  Parser p(source);
  try {
    if (root["Rulename"] || root["PromJob"]) {
      RETURN_NOT_OK(p.ParseLegacy(root, &cfg));
    } else {
      RETURN_NOT_OK(p.ParseCurrent(root, &cfg));
    }
  } catch (const YAML::Exception& e) {
    // Defensive: yaml-cpp throws on unexpected shapes (e.g. a key that is itself a mapping).
    return Status::InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return cfg;
}

StatusOr<std::string> ReadRuleFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(path + ": cannot open rule file");
  std::string text;
  text.resize(kMaxRuleFileBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxRuleFileBytes)
    return Status::InvalidArgument(path + ": rule file is larger than 1 MiB");
  return text;
}

StatusOr<RuleConfig> LoadRuleConfigFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadRuleFile(path));
  return ParseRuleConfig(text, path);
}

}  // namespace ds
