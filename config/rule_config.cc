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

// The least a bytes-available rule's threshold may be (ParseResource).
constexpr double kMinAvailableBytes = 1 << 20;

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

// "must be below the clear threshold of rule cpu (80)": how each bound that must stay under a
// resource rule's goal (rebalance.target, rebalance.underused) starts its error.
std::string BelowClearThreshold(const Rule& rule) {
  std::ostringstream why;
  why << "must be below the clear threshold of rule " << rule.name << " (" << rule.clear_threshold
      << ")";
  return why.str();
}

// Whether a rule's thresholds grow hotter upwards: '>' and relative offsets (in the operator's
// direction) do, '<' grows hotter downwards.
bool HotterUpwards(const Rule& rule) {
  return rule.op == Comparison::kGreater || rule.relative_to != Rule::Relative::kNone;
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

  // A duration longer than 0 s; `problem` is what the error says otherwise.
  StatusOr<double> PositiveSeconds(const YAML::Node& n, const std::string& field,
                                   const std::string& problem = "must be > 0") const {
    ASSIGN_OR_RETURN(double v, Seconds(n, field));
    if (v <= 0) return Error(n, field, problem);
    return v;
  }

  // A PromQL query: anything but blanks (what it means is Prometheus' to say).
  StatusOr<std::string> QueryText(const YAML::Node& n, const std::string& field) const {
    ASSIGN_OR_RETURN(std::string q, String(n, field));
    if (q.find_first_not_of(" \t\n") == std::string::npos) return Error(n, field, "empty query");
    return q;
  }

  // A label selector (common/label_selector.h), as written.
  StatusOr<std::string> Selector(const YAML::Node& n, const std::string& field) const {
    ASSIGN_OR_RETURN(std::string text, String(n, field));
    auto sel = LabelSelector::Parse(text);
    if (!sel.ok()) return Error(n, field, sel.status().message());
    return text;
  }

  // A label key, or a taint key: a taint key is a qualified name, as a label key (apimachinery's
  // validation of both).
  StatusOr<std::string> LabelKey(const YAML::Node& n, const std::string& field) const {
    ASSIGN_OR_RETURN(std::string key, String(n, field));
    if (auto why = ValidateLabelKey(key); !why.empty()) return Error(n, field, why);
    return key;
  }

  // A label value, or a taint value.
  StatusOr<std::string> LabelValue(const YAML::Node& n, const std::string& field) const {
    ASSIGN_OR_RETURN(std::string value, String(n, field));
    if (auto why = ValidateLabelValue(value); !why.empty()) return Error(n, field, why);
    return value;
  }

  // A value the controller sets its label to (the mark's, the underused mark's): a label value,
  // and not empty.
  StatusOr<std::string> MarkValue(const YAML::Node& n, const std::string& field) const {
    ASSIGN_OR_RETURN(std::string value, LabelValue(n, field));
    if (value.empty()) return Error(n, field, "must not be empty");
    return value;
  }

  // A time zone name (TimeZoneNameOk); whether this machine's tz database has it is checked at
  // start-up and on reloads (app/options.h, CheckTimeZones).
  StatusOr<std::string> TimeZoneName(const YAML::Node& n, const std::string& field) const {
    ASSIGN_OR_RETURN(std::string name, String(n, field));
    if (!TimeZoneNameOk(name))
      return Error(n, field, "\"" + name + "\" is not a time zone name like Europe/Berlin or UTC");
    return name;
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

  // The `rebalance:` section (rebalance/rebalance_config.h). The rules are parsed already: the
  // target and the underused bounds are checked against their clear thresholds.
  Status ParseRebalance(const YAML::Node& n, RuleConfig* cfg) const {
    RebalanceConfig& r = cfg->rebalance;
    RETURN_NOT_OK(CheckKeys(n, "rebalance",
                            {"after",
                             "holdAfterEviction",
                             "dryRun",
                             "target",
                             "podUsage",
                             "minPodAge",
                             "evictBarePods",
                             "evictLocalStorage",
                             "priorityThreshold",
                             "namespaces",
                             "nodeSelector",
                             "limits",
                             "windows",
                             "timeZone",
                             "effectWindow",
                             "referenceQuery",
                             "underused",
                             "requireSteering",
                             "bounceBackPause",
                             "settle",
                             "evictWithinRequests"}));
    r.enabled = true;
    RETURN_NOT_OK(ParseRebalanceMeasures(n, &r));
    RETURN_NOT_OK(ParseSteering(n, &r));
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
    if (n["target"]) RETURN_NOT_OK(ParseRebalanceTarget(n["target"], cfg->rules, &r.target));
    if (const YAML::Node u = n["podUsage"]) RETURN_NOT_OK(ParsePodUsage(u, cfg->rules, &r));
    RETURN_NOT_OK(ParseEvictablePods(n, &r.pods));
    if (n["nodeSelector"]) {
      ASSIGN_OR_RETURN(r.node_selector, Selector(n["nodeSelector"], "rebalance.nodeSelector"));
    }
    if (const YAML::Node l = n["limits"]) RETURN_NOT_OK(ParseEvictionLimits(l, &r.limits));
    if (const YAML::Node w = n["windows"]) RETURN_NOT_OK(ParseEvictionWindows(w, &r.limits));
    if (n["timeZone"]) {
      ASSIGN_OR_RETURN(r.time_zone, TimeZoneName(n["timeZone"], "rebalance.timeZone"));
    }
    if (const YAML::Node u = n["underused"]) RETURN_NOT_OK(ParseUnderused(u, cfg));
    // Balance with a zero offset: about half the pool is over the mean, always, and every pod
    // would make a node near the mean stand out (rebalance/pod_choice.cc): relief that never ends
    // and never moves anything.
    for (const Rule& rule : cfg->rules)
      if (rule.relative_to != Rule::Relative::kNone && rule.resource != Rule::Resource::kNone &&
          !(rule.threshold > 0))
        return Error(n, "rebalance",
                     "rule " + rule.name +
                         " balances (relativeTo: mean with resource) with threshold 0: it needs "
                         "an offset > 0 (with 0, about half the pool is always over the mean)");
    bool relievable = false;
    for (const Rule& rule : cfg->rules) relievable |= rule.resource != Rule::Resource::kNone;
    if (!relievable)
      return Error(n, "rebalance",
                   "no rule says which resource it measures (resource: cpu or memory on a rule), "
                   "so no node could be relieved");
    return Status::OK();
  }

  // rebalance.requireSteering and .bounceBackPause: the guards against a replacement that comes
  // back to the node its pod left.
  Status ParseSteering(const YAML::Node& n, RebalanceConfig* r) const {
    if (n["requireSteering"]) {
      ASSIGN_OR_RETURN(r->require_steering,
                       Bool(n["requireSteering"], "rebalance.requireSteering"));
    }
    if (n["bounceBackPause"]) {
      ASSIGN_OR_RETURN(r->bounce_back_pause_seconds,
                       Seconds(n["bounceBackPause"], "rebalance.bounceBackPause"));
    }
    // What is already moving (rebalance/in_motion.h): how long a gone pod's usage still counts,
    // and whether memory relief may move pods within their requests.
    if (n["settle"]) {
      ASSIGN_OR_RETURN(r->settle_seconds, Seconds(n["settle"], "rebalance.settle"));
    }
    if (n["evictWithinRequests"]) {
      ASSIGN_OR_RETURN(r->evict_within_requests,
                       Bool(n["evictWithinRequests"], "rebalance.evictWithinRequests"));
    }
    return Status::OK();
  }

  // rebalance.referenceQuery and .effectWindow: how the rebalancer's effect is measured.
  Status ParseRebalanceMeasures(const YAML::Node& n, RebalanceConfig* r) const {
    if (n["referenceQuery"]) {
      ASSIGN_OR_RETURN(r->reference_query, String(n["referenceQuery"], "rebalance.referenceQuery"));
    }
    if (n["effectWindow"]) {
      ASSIGN_OR_RETURN(
          r->effect_window_seconds,
          PositiveSeconds(n["effectWindow"], "rebalance.effectWindow", "must be longer than 0 s"));
    }
    return Status::OK();
  }

  // rebalance.target, the floor under which no node's load is planned. It must leave room under
  // the goal (a rule's clear threshold): at or above it, no eviction could ever be planned for
  // that rule.
  Status ParseRebalanceTarget(const YAML::Node& t, const std::vector<Rule>& rules,
                              double* target) const {
    ASSIGN_OR_RETURN(*target, Number(t, "rebalance.target"));
    for (const Rule& rule : rules) {
      // A bytes-available rule has no percent to compare with: the target is a percent floor.
      // A relative rule's goal moves with the mean: the plan stops at the floor when the goal is
      // below it (rebalance/pod_choice.cc).
      if (rule.resource == Rule::Resource::kNone || rule.AvailableBytes() ||
          rule.relative_to != Rule::Relative::kNone || *target < rule.clear_threshold)
        continue;
      return Error(t, "rebalance.target",
                   BelowClearThreshold(rule) +
                       ": the rebalancer plans a node's load down to that threshold and never "
                       "below the target");
    }
    return Status::OK();
  }

  // rebalance.podUsage: the queries of each pod's cpu and memory usage.
  Status ParsePodUsage(const YAML::Node& u, const std::vector<Rule>& rules,
                       RebalanceConfig* r) const {
    RETURN_NOT_OK(CheckKeys(u, "rebalance.podUsage", {"cpu", "memory"}));
    if (u["cpu"]) {
      ASSIGN_OR_RETURN(r->cpu_usage_query, String(u["cpu"], "rebalance.podUsage.cpu"));
    }
    if (u["memory"]) {
      ASSIGN_OR_RETURN(r->memory_usage_query, String(u["memory"], "rebalance.podUsage.memory"));
      // A bytes rule counts each pod's working set in bytes: without the query nothing could be
      // relieved.
      for (const Rule& rule : rules)
        if (rule.AvailableBytes() && r->memory_usage_query.empty())
          return Error(u["memory"], "rebalance.podUsage.memory",
                       "must not be empty: rule " + rule.name +
                           " (memory available, operator \"<\") counts each pod's working-set "
                           "bytes from it");
    }
    return Status::OK();
  }

  // Which pods may be evicted (rebalance/evictable.h): minPodAge, evictBarePods,
  // evictLocalStorage, priorityThreshold and namespaces. `n` is the rebalance section.
  Status ParseEvictablePods(const YAML::Node& n, EvictablePolicy* pods) const {
    if (n["minPodAge"]) {
      ASSIGN_OR_RETURN(pods->min_pod_age_seconds, Seconds(n["minPodAge"], "rebalance.minPodAge"));
    }
    if (n["evictBarePods"]) {
      ASSIGN_OR_RETURN(pods->evict_bare_pods, Bool(n["evictBarePods"], "rebalance.evictBarePods"));
    }
    if (n["evictLocalStorage"]) {
      ASSIGN_OR_RETURN(pods->evict_local_storage,
                       Bool(n["evictLocalStorage"], "rebalance.evictLocalStorage"));
    }
    if (n["priorityThreshold"]) {
      ASSIGN_OR_RETURN(double p, Number(n["priorityThreshold"], "rebalance.priorityThreshold"));
      if (p != std::floor(p) || p < -2147483648.0 || p > 2147483647.0)
        return Error(n["priorityThreshold"], "rebalance.priorityThreshold",
                     "must be a whole number within a pod priority's range (int32)");
      pods->priority_threshold = static_cast<int32_t>(p);
    }
    if (const YAML::Node ns = n["namespaces"]) {
      RETURN_NOT_OK(CheckKeys(ns, "rebalance.namespaces", {"include", "exclude"}));
      if (ns["include"]) {
        ASSIGN_OR_RETURN(pods->include_namespaces,
                         Strings(ns["include"], "rebalance.namespaces.include"));
      }
      if (ns["exclude"]) {
        ASSIGN_OR_RETURN(pods->exclude_namespaces,
                         Strings(ns["exclude"], "rebalance.namespaces.exclude"));
      }
    }
    return Status::OK();
  }

  // rebalance.limits: how many evictions, how often (rebalance/eviction_budget.h).
  Status ParseEvictionLimits(const YAML::Node& l, EvictionLimits* lim) const {
    RETURN_NOT_OK(CheckKeys(l, "rebalance.limits",
                            {"perCycle", "perHour", "perNodePerHour", "nodeCooldown",
                             "perNamespacePerHour", "perWorkload"}));
    if (l["perCycle"]) {
      ASSIGN_OR_RETURN(lim->per_cycle, Count(l["perCycle"], "rebalance.limits.perCycle"));
    }
    if (l["perHour"]) {
      ASSIGN_OR_RETURN(lim->per_hour, Count(l["perHour"], "rebalance.limits.perHour"));
    }
    if (l["perNodePerHour"]) {
      ASSIGN_OR_RETURN(lim->per_node_per_hour,
                       Count(l["perNodePerHour"], "rebalance.limits.perNodePerHour"));
    }
    if (l["nodeCooldown"]) {
      ASSIGN_OR_RETURN(lim->node_cooldown_seconds,
                       Seconds(l["nodeCooldown"], "rebalance.limits.nodeCooldown"));
    }
    if (l["perNamespacePerHour"]) {
      ASSIGN_OR_RETURN(lim->per_namespace_per_hour,
                       Count(l["perNamespacePerHour"], "rebalance.limits.perNamespacePerHour"));
    }
    if (l["perWorkload"]) {
      ASSIGN_OR_RETURN(lim->per_workload_unreplaced,
                       Count(l["perWorkload"], "rebalance.limits.perWorkload"));
    }
    return Status::OK();
  }

  // rebalance.windows: the times of the week when evictions may happen (in rebalance.timeZone).
  Status ParseEvictionWindows(const YAML::Node& w, EvictionLimits* lim) const {
    if (!w.IsSequence() || w.size() == 0)
      return Error(w, "rebalance.windows", "must be a non-empty list of {days, start, end}");
    for (size_t i = 0; i < w.size(); ++i) {
      TimeWindow tw;
      RETURN_NOT_OK(ParseWindow(w[i], "rebalance.windows[" + std::to_string(i) + "]", &tw));
      lim->windows.push_back(tw);
    }
    return Status::OK();
  }

  // rebalance.underused (rebalance_config.h). The rules are parsed already: each bound needs a
  // rule measuring its resource, and must lie below the clear threshold of every such rule, or
  // one node could be underused and hot at once.
  Status ParseUnderused(const YAML::Node& u, RuleConfig* cfg) const {
    // Its mark is a label under the mark's key (no taint could say "move pods here last").
    if (!cfg->mark.UsesLabel())
      return Error(u, "rebalance.underused", "needs the label: mark: label or both, not taint");
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
        // The bound is a percent in use: a bytes-available rule neither measures it nor meets it.
        if (rule.resource != resources[i] || rule.AvailableBytes()) continue;
        measured = true;
        // A relative rule's clear threshold moves with the mean; a node it holds is never
        // drained (the two modes do not act on a hot node), and while it holds one, the pool is
        // balance's (rebalance/underuse.h).
        if (rule.relative_to != Rule::Relative::kNone) continue;
        if (c.below[i] >= rule.clear_threshold)  // resource rules all compare with '>'
          return Error(b, field,
                       BelowClearThreshold(rule) + ", or a node could be both hot and underused");
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
      ASSIGN_OR_RETURN(c.value, MarkValue(u["value"], "rebalance.underused.value"));
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
      ASSIGN_OR_RETURN(r.query, QueryText(kv.second["Promsql"], f + ".Promsql"));
      if (!kv.second["Threshold"]) return Error(kv.second, f + ".Threshold", "missing threshold");
      ASSIGN_OR_RETURN(r.threshold, Number(kv.second["Threshold"], f + ".Threshold"));
      r.clear_threshold = r.threshold;
      cfg->rules.push_back(std::move(r));
    }
    return Status::OK();
  }

  Status ParseRule(const YAML::Node& n, size_t i, RuleConfig* cfg) const {
    const std::string at = "rules[" + std::to_string(i) + "]";
    RETURN_NOT_OK(
        CheckKeys(n, at,
                  {"name", "query", "operator", "threshold", "clearThreshold", "for", "nodeLabel",
                   "resource", "maxAge", "ageQuery", "relativeTo", "minNodes", "levels", "predict",
                   "nodeSelector", "interval", "unit", "relieveAfter"}));
    Rule r;
    if (!n["name"]) return Error(n, at + ".name", "missing rule name");
    ASSIGN_OR_RETURN(r.name, String(n["name"], at + ".name"));
    if (r.name.empty()) return Error(n["name"], at + ".name", "empty rule name");
    // From here on, errors name the rule instead of its place in the list.
    const std::string f = "rule \"" + r.name + "\"";
    for (const auto& prev : cfg->rules)
      if (prev.name == r.name) return Error(n["name"], f, "duplicate rule name");
    if (!n["query"]) return Error(n, f + ": query", "missing query");
    ASSIGN_OR_RETURN(r.query, QueryText(n["query"], f + ": query"));
    if (n["operator"]) RETURN_NOT_OK(ParseOperator(n["operator"], f, &r));
    RETURN_NOT_OK(ParseThresholds(n, f, &r));
    if (n["relativeTo"]) RETURN_NOT_OK(ParseRelativeTo(n, f, &r));
    if (n["clearThreshold"]) RETURN_NOT_OK(CheckClearThreshold(n["clearThreshold"], f, r));
    if (n["minNodes"]) RETURN_NOT_OK(ParseMinNodes(n["minNodes"], f, &r));
    if (n["for"]) {
      ASSIGN_OR_RETURN(r.for_seconds, Seconds(n["for"], f + ": for"));
    }
    if (n["nodeLabel"]) {
      ASSIGN_OR_RETURN(r.node_label, NonEmptyString(n["nodeLabel"], f + ": nodeLabel"));
    }
    if (n["resource"]) RETURN_NOT_OK(ParseResource(n["resource"], f, &r));
    if (r.resource != Rule::Resource::kNone)
      r.unit = r.AvailableBytes() ? ValueUnit::kBytes : ValueUnit::kPercent;
    if (n["unit"]) {
      ASSIGN_OR_RETURN(std::string unit, String(n["unit"], f + ": unit"));
      if (!ParseValueUnit(unit, &r.unit))
        return Error(n["unit"], f + ": unit",
                     "\"" + unit + "\" is not percent, bytes, cores, seconds or none");
      // The rebalancer counts each pod's working set against it: any other unit is a mistake.
      if (r.AvailableBytes() && r.unit != ValueUnit::kBytes)
        return Error(n["unit"], f + ": unit",
                     "must be bytes for resource: memory with operator \"<\" (bytes available)");
    }
    if (n["relieveAfter"]) {
      if (r.resource == Rule::Resource::kNone)
        return Error(n["relieveAfter"], f + ": relieveAfter",
                     "needs resource: cpu or memory (only such a rule's nodes are relieved)");
      ASSIGN_OR_RETURN(r.relieve_after_seconds, Seconds(n["relieveAfter"], f + ": relieveAfter"));
    }
    RETURN_NOT_OK(ParseRuleAge(n, f, &r));
    RETURN_NOT_OK(ParseRuleScope(n, f, cfg, &r));
    if (n["predict"]) RETURN_NOT_OK(ParsePredict(n, f, &r));
    cfg->rules.push_back(r);
    if (n["levels"]) RETURN_NOT_OK(ParseRuleLevels(n["levels"], f, r, cfg));
    return Status::OK();
  }

  // A rule's `operator:` ("rule \"cpu\": operator" is `f` + ": operator").
  Status ParseOperator(const YAML::Node& o, const std::string& f, Rule* r) const {
    ASSIGN_OR_RETURN(std::string op, String(o, f + ": operator"));
    if (op == ">")
      r->op = Comparison::kGreater;
    else if (op == "<")
      r->op = Comparison::kLess;
    else
      return Error(o, f + ": operator", "unknown operator \"" + op + "\" (use \">\" or \"<\")");
    return Status::OK();
  }

  // A rule's threshold (required) and clearThreshold (the threshold when not given).
  Status ParseThresholds(const YAML::Node& n, const std::string& f, Rule* r) const {
    if (!n["threshold"]) return Error(n, f + ": threshold", "missing threshold");
    ASSIGN_OR_RETURN(r->threshold, Number(n["threshold"], f + ": threshold"));
    r->clear_threshold = r->threshold;
    if (n["clearThreshold"]) {
      ASSIGN_OR_RETURN(r->clear_threshold, Number(n["clearThreshold"], f + ": clearThreshold"));
    }
    return Status::OK();
  }

  // A rule's `relativeTo: mean`: its thresholds (parsed already) are offsets from the mean.
  Status ParseRelativeTo(const YAML::Node& n, const std::string& f, Rule* r) const {
    ASSIGN_OR_RETURN(std::string to, String(n["relativeTo"], f + ": relativeTo"));
    if (to != "mean")
      return Error(n["relativeTo"], f + ": relativeTo",
                   "unknown \"" + to +
                       "\" (use mean: thresholds are offsets from the mean of "
                       "the managed nodes' values)");
    r->relative_to = Rule::Relative::kMean;
    // An offset against the rule's direction would call nodes on the cool side of the mean
    // hot (about half the cluster); the operator already says which side is hot.
    if (r->threshold < 0)
      return Error(n["threshold"], f + ": threshold",
                   "must be >= 0 with relativeTo: mean (an offset from the mean, in the "
                   "operator's direction)");
    if (r->clear_threshold < 0)
      return Error(n["clearThreshold"], f + ": clearThreshold",
                   "must be >= 0 with relativeTo: mean (an offset from the mean, in the "
                   "operator's direction)");
    return Status::OK();
  }

  // A given clearThreshold lies on the cool side of the threshold, or at it (hysteresis).
  Status CheckClearThreshold(const YAML::Node& c, const std::string& f, const Rule& r) const {
    const std::string field = f + ": clearThreshold";
    if (r.relative_to == Rule::Relative::kMean) {
      // Offsets in the operator's direction: the clearing one is the smaller, for '<' as well.
      if (r.clear_threshold > r.threshold)
        return Error(c, field,
                     "must be <= threshold with relativeTo: mean (the node clears nearer the "
                     "mean than it turned hot)");
    } else {
      if (r.op == Comparison::kGreater && r.clear_threshold > r.threshold)
        return Error(c, field, "must be <= threshold for operator \">\" (the node cools below it)");
      if (r.op == Comparison::kLess && r.clear_threshold < r.threshold)
        return Error(c, field,
                     "must be >= threshold for operator \"<\" (the node recovers above it)");
    }
    return Status::OK();
  }

  // A relative rule's `minNodes`: how many values its mean needs.
  Status ParseMinNodes(const YAML::Node& m, const std::string& f, Rule* r) const {
    if (r->relative_to == Rule::Relative::kNone)
      return Error(m, f + ": minNodes",
                   "only with relativeTo: mean (how many values the mean needs)");
    ASSIGN_OR_RETURN(double v, Number(m, f + ": minNodes"));
    // The mean of one value is that value: no node could ever stand out from it.
    if (v < 2 || v != std::floor(v) || v > 1e6)
      return Error(m, f + ": minNodes", "must be a whole number >= 2");
    r->min_nodes = static_cast<size_t>(v);
    return Status::OK();
  }

  // A rule's `resource:` (cpu or memory): the rule's value is that percent of a node's
  // allocatable, which the rebalancer can relieve.
  Status ParseResource(const YAML::Node& res, const std::string& f, Rule* r) const {
    const std::string field = f + ": resource";
    ASSIGN_OR_RETURN(std::string name, String(res, field));
    if (name == "cpu")
      r->resource = Rule::Resource::kCpu;
    else if (name == "memory")
      r->resource = Rule::Resource::kMemory;
    else
      return Error(
          res, field,
          "unknown resource \"" + name +
              "\" (use cpu or memory: the value is that percent of the node's allocatable)");
    // '<' on memory: the bytes available (the kubelet's memory.available), which relief raises
    // by each moved pod's working set. CPU has no such signal, and a percent in use with '<'
    // would call idle nodes hot.
    if (r->op != Comparison::kGreater && r->resource != Rule::Resource::kMemory)
      return Error(res, field,
                   "needs operator \">\" (a percent in use); \"<\" only with resource: memory "
                   "(bytes available, e.g. the kubelet's memory.available)");
    // Bytes: the kubelet's default hard threshold alone is 100Mi. A value this small is a percent
    // ("available below 10"), which would mark no node and relieve none, silently. (A relative
    // rule's threshold is an offset from the mean: any number of bytes >= 0 is one.)
    if (r->AvailableBytes() && r->relative_to == Rule::Relative::kNone &&
        !(r->threshold >= kMinAvailableBytes))
      return Error(res, field,
                   "with operator \"<\" the threshold is bytes available and must be at least "
                   "1Mi (1048576); for a percent of memory, use operator \">\" on the percent "
                   "in use");
    // With relativeTo: mean the rule balances: the rebalancer plans a node down to the pool's
    // mean plus the clear offset, following the mean as it plans (rebalance/pool_mean.h).
    return Status::OK();
  }

  // A rule's maxAge and ageQuery: how old a node's last update may be, and the query of the
  // update times.
  Status ParseRuleAge(const YAML::Node& n, const std::string& f, Rule* r) const {
    if (n["maxAge"]) {
      ASSIGN_OR_RETURN(r->max_age_seconds,
                       PositiveSeconds(n["maxAge"], f + ": maxAge", "must be longer than 0 s"));
    }
    if (n["ageQuery"]) {
      ASSIGN_OR_RETURN(r->age_query, QueryText(n["ageQuery"], f + ": ageQuery"));
      // Without maxAge nothing would read the update times: a forgotten maxAge, not a choice.
      if (r->max_age_seconds == 0)
        return Error(n["ageQuery"], f + ": ageQuery",
                     "needs maxAge (how old a node's last update may be)");
    }
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
    std::vector<std::optional<Rule>> by_level(mark.LevelCount());
    std::vector<YAML::Node> where(mark.LevelCount());  // each level's threshold, for errors
    for (const auto& kv : n) {
      const std::string lf = f + ": levels." + kv.first.Scalar();
      ASSIGN_OR_RETURN(const size_t below, CoolerLevel(kv.first, lf, mark));
      ASSIGN_OR_RETURN(Rule r, ParseRuleLevel(kv.first, kv.second, lf, base, below, cfg->rules));
      where[below] = kv.second["threshold"];
      by_level[below] = std::move(r);
    }
    // A cooler level is reached first: its threshold lies before every hotter level's.
    const bool up = HotterUpwards(base);
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

  // The level a key of a rule's `levels:` names, counted below the hottest. The hottest level
  // itself has no entry: its thresholds are the rule's own.
  StatusOr<size_t> CoolerLevel(const YAML::Node& key, const std::string& lf,
                               const Mark& mark) const {
    const std::string name = key.Scalar();
    size_t below = 0;
    std::string names;
    for (size_t k = mark.LevelCount(); k-- > 0;) {
      if (mark.LevelName(k) == name) below = k;
      names += (names.empty() ? "" : ", ") + mark.LevelName(k);
    }
    if (below == 0 && name != mark.LevelName(0))
      return Error(key, lf, "unknown level (levels: " + names + ")");
    if (below == 0)
      return Error(key, lf,
                   "the hottest level's thresholds are the rule's own threshold and "
                   "clearThreshold");
    return below;
  }

  // One cooler level of rule `base`: a copy of it named "<rule>@<level>" with the level's
  // thresholds and `for`. It measures no resource (the rebalancer acts on the hottest level only).
  // `rules`: those loaded so far, whose names it must not take.
  StatusOr<Rule> ParseRuleLevel(const YAML::Node& key, const YAML::Node& level,
                                const std::string& lf, const Rule& base, size_t below,
                                const std::vector<Rule>& rules) const {
    RETURN_NOT_OK(CheckKeys(level, lf, {"threshold", "clearThreshold", "for"}));
    Rule r = base;
    r.name = base.name + "@" + key.Scalar();
    r.below_hottest = below;
    r.resource = Rule::Resource::kNone;
    for (const Rule& prev : rules)
      if (prev.name == r.name)
        return Error(key, lf, "rule name \"" + r.name + "\" is taken by another rule");
    if (!level["threshold"]) return Error(level, lf + ".threshold", "missing threshold");
    ASSIGN_OR_RETURN(r.threshold, Number(level["threshold"], lf + ".threshold"));
    r.clear_threshold = r.threshold;
    if (level["clearThreshold"]) {
      const bool up = HotterUpwards(base);
      ASSIGN_OR_RETURN(r.clear_threshold, Number(level["clearThreshold"], lf + ".clearThreshold"));
      if (up ? r.clear_threshold > r.threshold : r.clear_threshold < r.threshold)
        return Error(level["clearThreshold"], lf + ".clearThreshold",
                     std::string("must be ") + (up ? "<=" : ">=") +
                         " the level's threshold (the node leaves the level past it)");
    }
    if (base.relative_to != Rule::Relative::kNone && (r.threshold < 0 || r.clear_threshold < 0))
      return Error(level["threshold"], lf + ".threshold",
                   "must be >= 0 with relativeTo: mean (an offset from the mean)");
    if (level["for"]) {
      ASSIGN_OR_RETURN(r.for_seconds, Seconds(level["for"], lf + ".for"));
    }
    return r;
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
      ASSIGN_OR_RETURN(c.time_zone, TimeZoneName(p["timeZone"], pf + ".timeZone"));
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
      ASSIGN_OR_RETURN(r->interval_seconds, PositiveSeconds(i, f + ": interval"));
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

  // The sections in the order their errors are reported. Later ones read earlier ones: the taint
  // needs the mark, levels the label, the rules the intervals, the rebalancer the rules.
  Status ParseCurrent(const YAML::Node& root, RuleConfig* cfg) const {
    RETURN_NOT_OK(CheckKeys(root, "", kCurrentKeys));
    if (const YAML::Node p = root["prometheus"]) RETURN_NOT_OK(ParsePrometheus(p, cfg));
    RETURN_NOT_OK(ParseCycle(root, cfg));
    if (const YAML::Node l = root["label"]) RETURN_NOT_OK(ParseLabel(l, &cfg->mark));
    if (const YAML::Node m = root["mark"]) RETURN_NOT_OK(ParseMarkMode(m, &cfg->mark));
    if (const YAML::Node t = root["taint"]) RETURN_NOT_OK(ParseTaint(t, &cfg->mark));
    if (root["nodeSelector"]) {
      ASSIGN_OR_RETURN(cfg->node_selector, Selector(root["nodeSelector"], "nodeSelector"));
    }
    RETURN_NOT_OK(ParseHerdCap(root, cfg));
    RETURN_NOT_OK(ParseOutagePolicy(root, cfg));
    if (root["levels"]) RETURN_NOT_OK(ParseLevels(root["levels"], root["label"], cfg));
    RETURN_NOT_OK(ParseRules(root, cfg));
    if (const YAML::Node r = root["rebalance"]) RETURN_NOT_OK(ParseRebalance(r, cfg));
    return Status::OK();
  }

  // prometheus: where it is, how long a query may take, and the credentials.
  Status ParsePrometheus(const YAML::Node& p, RuleConfig* cfg) const {
    RETURN_NOT_OK(CheckKeys(p, "prometheus",
                            {"url", "timeout", "bearerTokenFile", "basicAuth", "headers", "tls"}));
    RETURN_NOT_OK(ParsePrometheusAuth(p, &cfg->prometheus_auth));
    if (p["url"]) {
      ASSIGN_OR_RETURN(cfg->prometheus_url, String(p["url"], "prometheus.url"));
    }
    if (p["timeout"]) {
      ASSIGN_OR_RETURN(cfg->query_timeout_seconds,
                       PositiveSeconds(p["timeout"], "prometheus.timeout"));
    }
    return Status::OK();
  }

  // interval and missingDataGrace: how often the rules are evaluated, and how long a verdict
  // outlives its data.
  Status ParseCycle(const YAML::Node& root, RuleConfig* cfg) const {
    if (root["interval"]) {
      ASSIGN_OR_RETURN(cfg->interval_seconds, PositiveSeconds(root["interval"], "interval"));
    }
    if (root["missingDataGrace"]) {
      ASSIGN_OR_RETURN(cfg->missing_data_grace_seconds,
                       Seconds(root["missingDataGrace"], "missingDataGrace"));
    }
    return Status::OK();
  }

  // label: the mark's key and value.
  Status ParseLabel(const YAML::Node& l, Mark* mark) const {
    RETURN_NOT_OK(CheckKeys(l, "label", {"key", "value"}));
    if (l["key"]) {
      ASSIGN_OR_RETURN(mark->key, LabelKey(l["key"], "label.key"));
    }
    if (l["value"]) {
      ASSIGN_OR_RETURN(mark->value, MarkValue(l["value"], "label.value"));
    }
    return Status::OK();
  }

  // mark: what marks a hot node (rules/mark.h).
  Status ParseMarkMode(const YAML::Node& m, Mark* mark) const {
    ASSIGN_OR_RETURN(std::string mode, String(m, "mark"));
    if (mode == "label")
      mark->mode = Mark::Mode::kLabel;
    else if (mode == "taint")
      mark->mode = Mark::Mode::kTaint;
    else if (mode == "both")
      mark->mode = Mark::Mode::kBoth;
    else
      return Error(m, "mark", "\"" + mode + "\" is not label, taint or both");
    return Status::OK();
  }

  // taint: the mark's taint, when the mark (parsed already) has one.
  Status ParseTaint(const YAML::Node& t, Mark* mark) const {
    RETURN_NOT_OK(CheckKeys(t, "taint", {"key", "value", "effect"}));
    if (!mark->UsesTaint())
      return Error(t, "taint", "only with mark: taint or both (the mark is the label alone)");
    if (t["key"]) {
      ASSIGN_OR_RETURN(mark->taint.key, LabelKey(t["key"], "taint.key"));
    }
    if (t["value"]) {
      ASSIGN_OR_RETURN(mark->taint.value, LabelValue(t["value"], "taint.value"));
    }
    if (t["effect"]) {
      ASSIGN_OR_RETURN(std::string effect, String(t["effect"], "taint.effect"));
      if (effect != Mark::kTaintEffect)
        return Error(t["effect"], "taint.effect",
                     "\"" + effect +
                         "\": only PreferNoSchedule (the mark is a preference: it must never "
                         "keep a pod from being scheduled)");
    }
    return Status::OK();
  }

  // maxMarkedFraction and maxMarked: how many managed nodes may carry the mark at once
  // (rules/herd_cap.h).
  Status ParseHerdCap(const YAML::Node& root, RuleConfig* cfg) const {
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
    return Status::OK();
  }

  // onPrometheusDown and releaseAfter: what happens to the marks while Prometheus does not answer
  // (rules/outage.h).
  Status ParseOutagePolicy(const YAML::Node& root, RuleConfig* cfg) const {
    if (const YAML::Node o = root["onPrometheusDown"]) {
      ASSIGN_OR_RETURN(std::string action, String(o, "onPrometheusDown"));
      if (action != "hold" && action != "release")
        return Error(o, "onPrometheusDown", "\"" + action + "\" is neither hold nor release");
      cfg->release_on_outage = action == "release";
    }
    if (const YAML::Node a = root["releaseAfter"]) {
      if (!cfg->release_on_outage)
        return Error(a, "releaseAfter", "only with onPrometheusDown: release (marks are held)");
      ASSIGN_OR_RETURN(cfg->release_after_seconds, PositiveSeconds(a, "releaseAfter"));
    }
    return Status::OK();
  }

  // rules: a non-empty list, each rule after those before it (names must differ).
  Status ParseRules(const YAML::Node& root, RuleConfig* cfg) const {
    const YAML::Node rules = root["rules"];
    if (!rules) return Error(root, "rules", "missing: at least one rule is needed");
    if (!rules.IsSequence() || rules.size() == 0)
      return Error(rules, "rules", "must be a non-empty list of rules");
    for (size_t i = 0; i < rules.size(); ++i) RETURN_NOT_OK(ParseRule(rules[i], i, cfg));
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
