// The rules section: each rule's query, comparison and thresholds, what it measures, how old its
// values may be, its pool and interval, its prediction and its cooler levels
// (config/rule_config_parse.h).
#include <cmath>
#include <cstddef>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/label_selector.h"
#include "common/value_format.h"
#include "config/rule_config.h"
#include "config/rule_config_parse.h"
#include "rules/mark.h"
#include "rules/rule.h"

namespace ds {
namespace rule_config_parse {
namespace {

// The least a bytes-available rule's threshold may be (ParseResource).
constexpr double kMinAvailableBytes = 1 << 20;

// Whether a rule's thresholds grow hotter upwards: '>' and relative offsets (in the operator's
// direction) do, '<' grows hotter downwards.
bool HotterUpwards(const Rule& rule) {
  return rule.op == Comparison::kGreater || rule.relative_to != Rule::Relative::kNone;
}

// The section's steps, reading their fields through FieldReader.
class RulesParser : public FieldReader {
 public:
  explicit RulesParser(const FieldReader& in) : FieldReader(in) {}

  // rules: a non-empty list, each rule after those before it (names must differ).
  Status ParseRules(const YAML::Node& root, RuleConfig* cfg) const {
    const YAML::Node rules = root["rules"];
    if (!rules) return Error(root, "rules", "missing: at least one rule is needed");
    if (!rules.IsSequence() || rules.size() == 0)
      return Error(rules, "rules", "must be a non-empty list of rules");
    for (size_t i = 0; i < rules.size(); ++i) RETURN_NOT_OK(ParseRule(rules[i], i, cfg));
    return Status::OK();
  }

  // One rule of the list, at `i` (its place names it in errors until its name is read).
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
};

}  // namespace

Status ParseRules(const FieldReader& in, const YAML::Node& root, RuleConfig* cfg) {
  return RulesParser(in).ParseRules(root, cfg);
}

}  // namespace rule_config_parse
}  // namespace ds
