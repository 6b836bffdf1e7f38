#include "bench/effect/params.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>

#include "common/quantity.h"
#include "common/yaml_guard.h"

namespace effect {
namespace {

using ds::Status;
using ds::StatusOr;

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  Status Error(const YAML::Node& at, const std::string& field, const std::string& problem) const {
    const YAML::Mark m = at.Mark();
    std::string where = source_;
    if (!m.is_null())
      where += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
    return Status::InvalidArgument(where + ": " + field + ": " + problem);
  }

  // Each key of `map` must be one of `fields`; each present one is handed to its reader.
  using Reader = std::function<Status(const YAML::Node&, const std::string&)>;
  Status Section(const YAML::Node& map, const std::string& field,
                 const std::vector<std::pair<std::string, Reader>>& fields) const {
    if (!map.IsMap()) return Error(map, field, "must be a mapping");
    for (const auto& kv : map) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      const std::string name = field.empty() ? key : field + "." + key;
      bool known = false;
      for (const auto& [k, read] : fields) {
        if (k != key) continue;
        known = true;
        RETURN_NOT_OK(read(kv.second, name));
      }
      if (!known) {
        std::string list;
        for (const auto& f : fields) list += (list.empty() ? "" : ", ") + f.first;
        return Error(kv.first, name, "unknown field (allowed: " + list + ")");
      }
    }
    return Status::OK();
  }

  // A finite number in [lo, hi]; memory-like fields accept quantities ("512Mi").
  Reader Number(double* out, double lo, double hi, bool quantity = false) const {
    return [this, out, lo, hi, quantity](const YAML::Node& n, const std::string& f) -> Status {
      if (!n.IsScalar()) return Error(n, f, "must be a number");
      const std::string& s = n.Scalar();
      double v = 0;
      char* end = nullptr;
      v = std::strtod(s.c_str(), &end);
      const bool plain = !s.empty() && end == s.c_str() + s.size();
      if (!plain && !(quantity && ds::ParseQuantity(s, &v)))
        return Error(n, f, "\"" + s + "\" is not a number" + (quantity ? " or quantity" : ""));
      if (!std::isfinite(v) || v < lo || v > hi)
        return Error(n, f, "must be from " + Text(lo) + " to " + Text(hi));
      *out = v;
      return Status::OK();
    };
  }
  Reader Seconds(double* out, double lo, double hi) const {
    return [this, out, lo, hi](const YAML::Node& n, const std::string& f) -> Status {
      if (!n.IsScalar()) return Error(n, f, "must be a duration like 30s");
      auto d = ds::ParseDuration(n.Scalar());
      if (!d.ok()) return Error(n, f, d.status().message());
      if (*d < lo || *d > hi)
        return Error(n, f, "must be from " + Text(lo) + " s to " + Text(hi) + " s");
      *out = *d;
      return Status::OK();
    };
  }
  Reader Dist(LogNormal* out, double lo, double hi, bool quantity, bool duration) const {
    return [=, this](const YAML::Node& n, const std::string& f) -> Status {
      return Section(n, f,
                     {{"median", duration ? Seconds(&out->median, lo, hi)
                                          : Number(&out->median, lo, hi, quantity)},
                      {"sigma", Number(&out->sigma, 0, 5)}});
    };
  }
  Reader List(std::vector<double>* out, double lo, double hi, bool quantity = false) const {
    return [=, this](const YAML::Node& n, const std::string& f) -> Status {
      if (!n.IsSequence() || n.size() == 0) return Error(n, f, "must be a non-empty list");
      out->clear();
      for (size_t i = 0; i < n.size(); ++i) {
        double v = 0;
        RETURN_NOT_OK(Number(&v, lo, hi, quantity)(n[i], f + "[" + std::to_string(i) + "]"));
        out->push_back(v);
      }
      return Status::OK();
    };
  }

  static std::string Text(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }

 private:
  const std::string source_;
};

}  // namespace

bool SeesBytesAvailable(const ds::Rule& r) {
  return r.op == ds::Comparison::kLess &&
         (r.AvailableBytes() ||
          (r.resource == ds::Rule::Resource::kNone && r.unit == ds::ValueUnit::kBytes));
}

const std::vector<std::string>& KnownScenarios() {
  static const std::vector<std::string> kNames = {"none",
                                                  "marks-w10",
                                                  "marks-w50",
                                                  "marks-w100",
                                                  "lownodeutil",
                                                  "evict-usage",
                                                  "marks-rebalance",
                                                  "marks-taint",
                                                  "marks-relief",
                                                  "marks-early",
                                                  "marks-placed",
                                                  "marks-lag",
                                                  "marks-lag-motion",
                                                  "marks-motion",
                                                  "marks-lag-decay",
                                                  "marks-balance",
                                                  "marks-sized",
                                                  "marks-sized-all",
                                                  "marks-sized-requests"};
  return kNames;
}

StatusOr<EffectParams> ParseEffectParams(const std::string& yaml_text, const std::string& source,
                                         const std::string& dir) {
  ASSIGN_OR_RETURN(YAML::Node root, ds::LoadYaml(yaml_text, source));
  if (!root || !root.IsMap())
    return Status::InvalidArgument(source + ": the top level must be a mapping");
  EffectParams p;
  p.source = source;
  p.scenarios = KnownScenarios();
  Parser ps(source);
  WorkloadParams& w = p.workload;
  NodeParams& nd = p.nodes;
  std::string rule_file;
  YAML::Node rule_file_node;
  std::string relief_file, early_file, balance_file;
  YAML::Node relief_file_node, early_file_node, balance_file_node;
  double seed = 1, weight = p.affinity_weight, node_count = static_cast<double>(nd.count),
         node_pods = static_cast<double>(nd.pods), sweep_nodes = static_cast<double>(p.sweep.nodes);
  YAML::Node scenarios_node, balance_scenarios_node;
  bool scenarios_given = false, balance_scenarios_given = false;
  double join_nodes = 0, balance_nodes = 0, balance_join_nodes = 0;
  using R = Parser::Reader;
  auto section = [&](const std::vector<std::pair<std::string, R>>& fields) -> R {
    return [&ps, fields](const YAML::Node& n, const std::string& f) {
      return ps.Section(n, f, fields);
    };
  };
  auto triple = [&](double* v) -> R {
    return section({{"cpu", ps.Number(&v[0], 0, 100)},
                    {"memory", ps.Number(&v[1], 0, 100)},
                    {"pods", ps.Number(&v[2], 0, 100)}});
  };
  auto path = [&](std::string* file, YAML::Node* node) -> R {
    return [&ps, file, node](const YAML::Node& n, const std::string& f) -> Status {
      if (!n.IsScalar() || n.Scalar().empty()) return ps.Error(n, f, "must be a path");
      *file = n.Scalar();
      *node = n;
      return Status::OK();
    };
  };
  auto join = [&](JoinParams* j, double* count) -> R {
    return section({{"at", ps.Seconds(&j->at_seconds, 0, 365 * 86400.0)},
                    {"nodes", ps.Number(count, 0, 100000)}});
  };
  try {
    RETURN_NOT_OK(ps.Section(
        root, "",
        {{"seed", ps.Number(&seed, 0, 9e15)},
         {"days", ps.Number(&p.days, 0.01, 365)},
         {"step", ps.Seconds(&p.step_seconds, 1, 600)},
         {"nodes", section({{"count", ps.Number(&node_count, 1, 100000)},
                            {"cpu", ps.Number(&nd.cpu, 0.1, 1024)},
                            {"memory", ps.Number(&nd.memory, 1 << 20, 1e15, true)},
                            {"systemReserved", ps.Number(&nd.system_reserved, 0, 1e15, true)},
                            {"evictionHard", ps.Number(&nd.eviction_hard, 0, 1e15, true)},
                            {"pods", ps.Number(&node_pods, 1, 10000)}})},
         {"workload",
          section({{"podsPerNode", ps.Number(&w.pods_per_node, 0, 10000)},
                   {"replicas", ps.Dist(&w.replicas, 1, 10000, false, false)},
                   {"maxReplicas", ps.Number(&w.max_replicas, 1, 100000)},
                   {"cpuRequest", ps.Dist(&w.cpu_request, 0.001, 1024, false, false)},
                   {"memoryRequest", ps.Dist(&w.memory_request, 1 << 20, 1e15, true, false)},
                   {"cpuUsageRatio", ps.Dist(&w.cpu_usage_ratio, 0.001, 100, false, false)},
                   {"memoryUsageRatio", ps.Dist(&w.memory_usage_ratio, 0.001, 100, false, false)},
                   {"podJitter", ps.Number(&w.pod_jitter, 0, 5)},
                   {"daily", section({{"cpuAmplitude", ps.Number(&w.cpu_daily_amplitude, 0, 1)},
                                      {"memoryAmplitude",
                                       ps.Number(&w.memory_daily_amplitude, 0, 1)},
                                      {"peak", ps.Seconds(&w.peak_seconds, 0, 86400)},
                                      {"phaseSpread",
                                       ps.Seconds(&w.phase_spread_seconds, 0, 86400)}})},
                   {"bursts", section({{"perDay", ps.Number(&w.bursts_per_day, 0, 1000)},
                                       {"factor", ps.Number(&w.burst_factor, 1, 100)},
                                       {"duration", ps.Seconds(&w.burst_seconds, 0, 86400)}})},
                   {"leaks", section({{"share", ps.Number(&w.leak_share, 0, 1)},
                                      {"perHour", ps.Number(&w.leak_per_hour, 0, 10)}})},
                   {"memoryRampUp", ps.Seconds(&w.memory_ramp_seconds, 0, 86400)},
                   {"rollouts", section({{"perDay", ps.Number(&w.rollouts_per_day, 0, 1000)}})},
                   {"scaling", section({{"perDay", ps.Number(&w.scales_per_day, 0, 1000)},
                                        {"change", ps.Number(&w.scale_change, 0, 0.95)}})},
                   {"jobs",
                    section({{"perNodeHour", ps.Number(&w.jobs_per_node_hour, 0, 1000)},
                             {"duration", ps.Dist(&w.job_seconds, 1, 30 * 86400, false, true)}})}})},
         {"controller",
          section({{"ruleFile", path(&rule_file, &rule_file_node)},
                   {"reliefRuleFile", path(&relief_file, &relief_file_node)},
                   {"earlyRuleFile", path(&early_file, &early_file_node)},
                   {"balanceRuleFile", path(&balance_file, &balance_file_node)},
                   {"cpuRateWindow", ps.Seconds(&p.cpu_rate_window_seconds, 0, 86400)},
                   {"valueWindow", ps.Seconds(&p.value_window_seconds, 0, 86400)},
                   {"terminationGrace", ps.Seconds(&p.termination_grace_seconds, 0, 3600)},
                   {"affinityWeight", ps.Number(&weight, 1, 100)}})},
         {"measure", section({{"cpu", ps.Number(&p.measure_cpu, 0, 100)},
                              {"memory", ps.Number(&p.measure_memory, 0, 1000)},
                              {"cpuOverMean", ps.Number(&p.measure_cpu_over_mean, 0, 100)}})},
         {"join", join(&p.join, &join_nodes)},
         {"balance", section({{"nodes", ps.Number(&balance_nodes, 0, 100000)},
                              {"days", ps.Number(&p.balance.days, 0, 365)},
                              {"join", join(&p.balance.join, &balance_join_nodes)},
                              {"scenarios",
                               [&](const YAML::Node& n, const std::string&) {
                                 balance_scenarios_node = n;
                                 balance_scenarios_given = true;
                                 return Status::OK();
                               }},
                              {"seeds", ps.List(&p.balance.seeds, 0, 9e15)}})},
         {"descheduler",
          section({{"interval", ps.Seconds(&p.descheduler.interval_seconds, 1, 86400)},
                   {"thresholds", triple(p.descheduler.thresholds)},
                   {"targetThresholds", triple(p.descheduler.target_thresholds)}})},
         {"scenarios",
          [&](const YAML::Node& n, const std::string&) {
            scenarios_node = n;
            scenarios_given = true;
            return Status::OK();
          }},
         {"sweep", section({{"nodes", ps.Number(&sweep_nodes, 1, 100000)},
                            {"days", ps.Number(&p.sweep.days, 0.01, 365)},
                            {"threshold", ps.List(&p.sweep.threshold, 0, 100)},
                            {"clearGap", ps.List(&p.sweep.clear_gap, 0, 100)},
                            {"affinityWeight", ps.List(&p.sweep.affinity_weight, 1, 100)},
                            {"perHour", ps.List(&p.sweep.per_hour, 0, 100000)},
                            {"maxMarkedFraction", ps.List(&p.sweep.max_marked_fraction, 0.001, 1)},
                            {"seeds", ps.List(&p.sweep.seeds, 0, 9e15)},
                            {"reliefThreshold",
                             ps.List(&p.sweep.relief_threshold, 1, 1e15, true)},
                            {"earlyThreshold",
                             ps.List(&p.sweep.early_threshold, 1, 1e15, true)}})}}));
    auto names = [&](const YAML::Node& n, const std::string& field,
                     std::vector<std::string>* out) -> Status {
      if (!n.IsSequence() || n.size() == 0)
        return ps.Error(n, field, "must be a non-empty list of names");
      out->clear();
      for (size_t i = 0; i < n.size(); ++i) {
        const YAML::Node& s = n[i];
        const std::string name = s.IsScalar() ? s.Scalar() : "";
        bool known = false;
        for (const auto& k : KnownScenarios()) known = known || k == name;
        if (!known) {
          std::string list;
          for (const auto& k : KnownScenarios()) list += (list.empty() ? "" : ", ") + k;
          return ps.Error(s, field + "[" + std::to_string(i) + "]",
                          "unknown scenario \"" + name + "\" (known: " + list + ")");
        }
        out->push_back(name);
      }
      return Status::OK();
    };
    if (scenarios_given) RETURN_NOT_OK(names(scenarios_node, "scenarios", &p.scenarios));
    if (balance_scenarios_given)
      RETURN_NOT_OK(names(balance_scenarios_node, "balance.scenarios", &p.balance.scenarios));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  for (double* whole : {&seed, &node_count, &node_pods, &sweep_nodes, &weight, &join_nodes,
                        &balance_nodes, &balance_join_nodes})
    if (*whole != std::floor(*whole))
      return Status::InvalidArgument(source +
                                     ": seed, nodes.count, nodes.pods, sweep.nodes, "
                                     "controller.affinityWeight, join.nodes, balance.nodes and "
                                     "balance.join.nodes must be whole numbers");
  for (double s : p.balance.seeds)
    if (s != std::floor(s))
      return Status::InvalidArgument(source + ": balance.seeds must be whole numbers");
  p.join.nodes = static_cast<size_t>(join_nodes);
  p.balance.nodes = static_cast<size_t>(balance_nodes);
  p.balance.join.nodes = static_cast<size_t>(balance_join_nodes);
  p.seed = static_cast<uint64_t>(seed);
  nd.count = static_cast<size_t>(node_count);
  nd.pods = static_cast<int64_t>(node_pods);
  p.sweep.nodes = static_cast<size_t>(sweep_nodes);
  p.affinity_weight = static_cast<int>(weight);
  if (nd.AllocatableMemory() <= 0)
    return Status::InvalidArgument(source +
                                   ": nodes: systemReserved + evictionHard must be less "
                                   "than the node's memory");
  for (int r = 0; r < 3; ++r)
    if (p.descheduler.thresholds[r] > p.descheduler.target_thresholds[r])
      return Status::InvalidArgument(source +
                                     ": descheduler: thresholds must not be above "
                                     "targetThresholds (descheduler refuses them too)");
  if (rule_file.empty())
    return Status::InvalidArgument(source + ": controller.ruleFile: required (a rule.yaml)");
  // Each rule's value is computed from the node's usage: the percent of allocatable in use
  // (operator ">"), or for memory with "<" the bytes available as the kubelet computes
  // memory.available.
  auto load_rules = [&](const std::string& file, const YAML::Node& node,
                        const char* field) -> StatusOr<ds::RuleConfig> {
    const std::string path = file[0] == '/' || dir.empty() ? file : dir + "/" + file;
    auto rules = ds::LoadRuleConfigFile(path);
    if (!rules.ok()) return ps.Error(node, field, rules.status().message());
    for (const ds::Rule& r : rules->rules)
      if (!SeesBytesAvailable(r) &&
          (r.resource == ds::Rule::Resource::kNone || r.op != ds::Comparison::kGreater))
        return ps.Error(node, field,
                        "rule " + r.name +
                            ": the simulation evaluates rules with `resource: cpu|memory` and "
                            "operator \">\" (the node's percent of allocatable in use), or "
                            "`resource: memory` with \"<\" (its memory.available in bytes), or "
                            "`unit: bytes` with \"<\" and no resource (the same, marking only)");
    for (const ds::Rule& r : rules->rules)
      if (!r.node_selector.empty())
        return ps.Error(node, field,
                        "rule " + r.name +
                            ": nodeSelector is not simulated (the simulated nodes carry no "
                            "labels to select; the rule would judge every node)");
    if (rules->rules.empty()) return ps.Error(node, field, "names no rules");
    return rules;
  };
  auto rules = load_rules(rule_file, rule_file_node, "controller.ruleFile");
  if (!rules.ok()) return rules.status();
  if (!relief_file.empty()) {
    auto relief = load_rules(relief_file, relief_file_node, "controller.reliefRuleFile");
    if (!relief.ok()) return relief.status();
    p.relief_rules = std::move(*relief);
    p.has_relief_rules = true;
  }
  if (!early_file.empty()) {
    auto early = load_rules(early_file, early_file_node, "controller.earlyRuleFile");
    if (!early.ok()) return early.status();
    p.early_rules = std::move(*early);
    p.has_early_rules = true;
  }
  if (!balance_file.empty()) {
    auto balance = load_rules(balance_file, balance_file_node, "controller.balanceRuleFile");
    if (!balance.ok()) return balance.status();
    p.balance_rules = std::move(*balance);
    p.has_balance_rules = true;
  }
  // A scenario whose rule file is not given: refused when asked for, left out of the default list.
  for (const auto& [scenario, has, field] :
       {std::tuple{"marks-relief", p.has_relief_rules, "controller.reliefRuleFile"},
        std::tuple{"marks-placed", p.has_relief_rules, "controller.reliefRuleFile"},
        std::tuple{"marks-sized", p.has_relief_rules, "controller.reliefRuleFile"},
        std::tuple{"marks-sized-all", p.has_relief_rules, "controller.reliefRuleFile"},
        std::tuple{"marks-sized-requests", p.has_relief_rules, "controller.reliefRuleFile"},
        std::tuple{"marks-early", p.has_early_rules, "controller.earlyRuleFile"},
        std::tuple{"marks-balance", p.has_balance_rules, "controller.balanceRuleFile"}}) {
    const bool asked =
        std::find(p.scenarios.begin(), p.scenarios.end(), scenario) != p.scenarios.end();
    if (std::find(p.balance.scenarios.begin(), p.balance.scenarios.end(), scenario) !=
            p.balance.scenarios.end() &&
        !has)
      return Status::InvalidArgument(source + ": balance.scenarios: " + scenario + " needs " +
                                     field);
    if (!asked || has) continue;
    if (scenarios_given)
      return Status::InvalidArgument(source + ": scenario " + scenario + " needs " + field);
    std::erase(p.scenarios, scenario);
  }
  // The balance runs' default: nothing, the request-based descheduler, and ours where its rules
  // are.
  if (p.balance.scenarios.empty()) {
    p.balance.scenarios = {"none", "lownodeutil"};
    if (p.has_balance_rules) p.balance.scenarios.push_back("marks-balance");
  }
  if (!p.sweep.relief_threshold.empty() && !p.has_relief_rules)
    return Status::InvalidArgument(source +
                                   ": sweep.reliefThreshold needs controller.reliefRuleFile");
  if (!p.sweep.early_threshold.empty()) {
    if (!p.has_early_rules)
      return Status::InvalidArgument(source +
                                     ": sweep.earlyThreshold needs controller.earlyRuleFile");
    if (std::none_of(p.early_rules.rules.begin(), p.early_rules.rules.end(), [](const ds::Rule& r) {
          return SeesBytesAvailable(r) && !r.AvailableBytes();
        }))
      return Status::InvalidArgument(source +
                                     ": sweep.earlyThreshold: controller.earlyRuleFile has no rule "
                                     "that only marks on the bytes available (unit: bytes, "
                                     "operator \"<\", no resource)");
  }
  p.rules = std::move(*rules);
  return p;
}

StatusOr<EffectParams> LoadEffectParams(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(path + ": cannot open the parameter file");
  std::stringstream text;
  text << in.rdbuf();
  const size_t slash = path.rfind('/');
  return ParseEffectParams(text.str(), path,
                           slash == std::string::npos ? "" : path.substr(0, slash));
}

}  // namespace effect
