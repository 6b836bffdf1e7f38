// The rebalance section: when a marked node is relieved, which pods may go, within which limits
// and windows, how the effect is measured, and the mirror mode, underused
// (config/rule_config_parse.h).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "config/rule_config.h"
#include "config/rule_config_parse.h"
#include "rebalance/rebalance_config.h"
#include "rules/mark.h"
#include "rules/rule.h"

namespace ds {
namespace rule_config_parse {
namespace {

// "must be below the clear threshold of rule cpu (80)": how each bound that must stay under a
// resource rule's goal (rebalance.target, rebalance.underused) starts its error.
std::string BelowClearThreshold(const Rule& rule) {
  std::ostringstream why;
  why << "must be below the clear threshold of rule " << rule.name << " (" << rule.clear_threshold
      << ")";
  return why.str();
}

// The section's steps, reading their fields through FieldReader.
class RebalanceParser : public FieldReader {
 public:
  explicit RebalanceParser(const FieldReader& in) : FieldReader(in) {}

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
                             "evictWithinRequests",
                             "keepDecisions"}));
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

  // rebalance.referenceQuery and .effectWindow: how the rebalancer's effect is measured;
  // .keepDecisions: how many evictions /explain keeps across restarts.
  Status ParseRebalanceMeasures(const YAML::Node& n, RebalanceConfig* r) const {
    if (n["keepDecisions"]) {
      ASSIGN_OR_RETURN(r->keep_decisions, Count(n["keepDecisions"], "rebalance.keepDecisions"));
      if (r->keep_decisions > kMaxKeptDecisions)
        return Error(n["keepDecisions"], "rebalance.keepDecisions",
                     "must be at most " + std::to_string(kMaxKeptDecisions) +
                         " (they are kept in an annotation of the ledger's Lease)");
    }
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
    // A percent of allocatable in use: below 0 it is no floor, at 100 or more no plan could ever
    // start (with only relative or bytes rules nothing below would catch it).
    if (*target < 0 || *target >= 100)
      return Error(t, "rebalance.target",
                   "must be a percent of allocatable in use, at least 0 and below 100");
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

  // One of rebalance.windows: {days, start, end} (rebalance/eviction_budget.h, TimeWindow).
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
};

}  // namespace

Status ParseRebalance(const FieldReader& in, const YAML::Node& n, RuleConfig* cfg) {
  return RebalanceParser(in).ParseRebalance(n, cfg);
}

}  // namespace rule_config_parse
}  // namespace ds
