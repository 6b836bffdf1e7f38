#include "rules/rule_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
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

  Status ParseLegacy(const YAML::Node& root, RuleConfig* cfg) const {
    RETURN_NOT_OK(CheckKeys(root, "", {"PromJob", "Rulename"}));
    cfg->legacy = true;
    if (const YAML::Node job = root["PromJob"]) {
      RETURN_NOT_OK(CheckKeys(job, "PromJob", {"Name"}));
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
      RETURN_NOT_OK(CheckKeys(kv.second, f, {"Promsql", "Threshold"}));
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
    RETURN_NOT_OK(CheckKeys(
        n, f, {"name", "query", "operator", "threshold", "clearThreshold", "for", "nodeLabel"}));
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
      if (r.op == Comparison::kGreater && r.clear_threshold > r.threshold)
        return Error(n["clearThreshold"], f + ": clearThreshold",
                     "must be <= threshold for operator \">\" (the node cools below it)");
      if (r.op == Comparison::kLess && r.clear_threshold < r.threshold)
        return Error(n["clearThreshold"], f + ": clearThreshold",
                     "must be >= threshold for operator \"<\" (the node recovers above it)");
    }
    if (n["for"]) {
      ASSIGN_OR_RETURN(r.for_seconds, Seconds(n["for"], f + ": for"));
    }
    if (n["nodeLabel"]) {
      ASSIGN_OR_RETURN(r.node_label, String(n["nodeLabel"], f + ": nodeLabel"));
      if (r.node_label.empty())
        return Error(n["nodeLabel"], f + ": nodeLabel", "must not be empty");
    }
    cfg->rules.push_back(std::move(r));
    return Status::OK();
  }

  Status ParseCurrent(const YAML::Node& root, RuleConfig* cfg) const {
    RETURN_NOT_OK(CheckKeys(
        root, "",
        {"prometheus", "interval", "missingDataGrace", "label", "nodeSelector", "rules"}));
    if (const YAML::Node p = root["prometheus"]) {
      RETURN_NOT_OK(CheckKeys(p, "prometheus", {"url", "timeout"}));
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
    if (root["nodeSelector"]) {
      ASSIGN_OR_RETURN(cfg->node_selector, String(root["nodeSelector"], "nodeSelector"));
      auto sel = LabelSelector::Parse(cfg->node_selector);
      if (!sel.ok()) return Error(root["nodeSelector"], "nodeSelector", sel.status().message());
    }
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
    else
      return Status::InvalidArgument("\"" + text + "\": unknown unit \"" + unit +
                                     "\" (use ms, s, m, h)");
  }
  return total;
}

StatusOr<RuleConfig> ParseRuleConfig(const std::string& yaml_text, const std::string& source) {
  if (std::string why = YamlNestingProblem(yaml_text); !why.empty())
    return Status::InvalidArgument(source + ": " + why);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    return Status::InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                                   std::to_string(e.mark.column + 1) +
                                   ": not valid YAML: " + e.msg);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(source + ": not valid YAML: " + e.what());
  }
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

StatusOr<RuleConfig> LoadRuleConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(path + ": cannot open rule file");
  std::string text;
  text.resize(kMaxRuleFileBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxRuleFileBytes)
    return Status::InvalidArgument(path + ": rule file is larger than 1 MiB");
  return ParseRuleConfig(text, path);
}

}  // namespace ds
