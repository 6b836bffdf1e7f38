// rule.yaml's one parser entry point: which format a file is in, the order of the current
// format's sections (each parsed in its own file, config/rule_config_parse.h), the legacy format,
// and reading the file from disk.
#include "config/rule_config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <string>

#include "common/yaml_guard.h"
#include "config/rule_config_parse.h"

namespace ds {
namespace {

constexpr size_t kMaxRuleFileBytes = 1u << 20;

}  // namespace

namespace rule_config_parse {
namespace {

// The sections in the order their errors are reported. Later ones read earlier ones: the taint
// needs the mark, levels the label, the rules the intervals, the rebalancer the rules.
Status ParseCurrent(const FieldReader& in, const YAML::Node& root, RuleConfig* cfg) {
  RETURN_NOT_OK(in.CheckKeys(root, "", CurrentFormatKeys()));
  if (const YAML::Node p = root["prometheus"]) RETURN_NOT_OK(ParsePrometheus(in, p, cfg));
  RETURN_NOT_OK(ParseCycle(in, root, cfg));
  if (const YAML::Node l = root["label"]) RETURN_NOT_OK(ParseLabel(in, l, &cfg->mark));
  if (const YAML::Node m = root["mark"]) RETURN_NOT_OK(ParseMarkMode(in, m, &cfg->mark));
  if (const YAML::Node t = root["taint"]) RETURN_NOT_OK(ParseTaint(in, t, &cfg->mark));
  if (root["nodeSelector"]) {
    ASSIGN_OR_RETURN(cfg->node_selector, in.Selector(root["nodeSelector"], "nodeSelector"));
  }
  RETURN_NOT_OK(ParseHerdCap(in, root, cfg));
  RETURN_NOT_OK(ParseOutagePolicy(in, root, cfg));
  if (root["levels"]) RETURN_NOT_OK(ParseLevels(in, root["levels"], root["label"], cfg));
  RETURN_NOT_OK(ParseRules(in, root, cfg));
  if (const YAML::Node r = root["rebalance"]) RETURN_NOT_OK(ParseRebalance(in, r, cfg));
  return Status::OK();
}

// The original project's format (PromJob, Rulename). It read its files into Go structs, which
// drop unknown keys without a word: files written for it may carry keys it never used. They are
// ignored here too, with a warning (the current format refuses them, since there a typo would
// silently change behaviour).
class LegacyParser : public FieldReader {
 public:
  explicit LegacyParser(const FieldReader& in) : FieldReader(in) {}

  Status IgnoreUnknown(const YAML::Node& map, const std::string& field,
                       const std::set<std::string>& known, RuleConfig* cfg) const {
    if (!map.IsMap()) return Error(map, field, "must be a mapping");
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      if (known.count(key)) continue;
      cfg->warnings.push_back(Where(source(), kv.first) + ": " +
                              (field.empty() ? key : field + "." + key) +
                              ": unknown field, ignored (as the original project did)");
    }
    return Status::OK();
  }

  Status ParseLegacy(const YAML::Node& root, RuleConfig* cfg) const {
    // A key of the current format means the file mixes the two: ignoring it would drop what
    // its author meant to configure.
    for (const auto& kv : root)
      if (CurrentFormatKeys().count(kv.first.Scalar()))
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
};

}  // namespace
}  // namespace rule_config_parse

const std::set<std::string>& CurrentFormatKeys() {
  static const std::set<std::string> keys = {"prometheus",
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
  return keys;
}

StatusOr<RuleConfig> ParseRuleConfig(const std::string& yaml_text, const std::string& source) {
  ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(yaml_text, source));
  if (!root || root.IsNull()) return Status::InvalidArgument(source + ": empty rule file");
  if (!root.IsMap())
    return Status::InvalidArgument(rule_config_parse::Where(source, root) +
                                   ": the top level must be a mapping");
  RuleConfig cfg;
  cfg.source = source;
  const rule_config_parse::FieldReader in(source);
  try {
    if (root["Rulename"] || root["PromJob"]) {
      RETURN_NOT_OK(rule_config_parse::LegacyParser(in).ParseLegacy(root, &cfg));
    } else {
      RETURN_NOT_OK(rule_config_parse::ParseCurrent(in, root, &cfg));
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
