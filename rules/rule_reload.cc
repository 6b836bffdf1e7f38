#include "rules/rule_reload.h"

#include <map>
#include <set>

#include "common/yaml_guard.h"

namespace ds {
namespace {

// What was built from the file at start-up. Everything else is read anew on a reload (the keys
// of the legacy format included, and those it ignores, which configure nothing).
// `mark` and `taint` shape the mark itself, as `label` does: changing them while marks are set
// would strand the old ones (a restart's -cleanup, or the records, deal with that).
const std::set<std::string> kRestartOnly = {"prometheus", "interval",     "label",    "mark",
                                            "taint",      "nodeSelector", "rebalance"};

// A node in one text form: comments, quoting, flow or block style and key order are no change.
// (LoadYaml bounds the nesting, so the recursion is bounded too.)
std::string Canonical(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar:
      return "'" + n.Scalar() + "'";
    case YAML::NodeType::Sequence: {
      std::string out = "[";
      for (const auto& item : n) out += Canonical(item) + ",";
      return out + "]";
    }
    case YAML::NodeType::Map: {
      std::map<std::string, std::string> sorted;
      for (const auto& kv : n) sorted[Canonical(kv.first)] = Canonical(kv.second);
      std::string out = "{";
      for (const auto& [k, v] : sorted) out += k + ":" + v + ",";
      return out + "}";
    }
    default:
      return "~";
  }
}

// The top-level keys and their values, each in that form.
std::map<std::string, std::string> TopLevel(const YAML::Node& root) {
  std::map<std::string, std::string> out;
  if (!root.IsMap()) return out;
  for (const auto& kv : root) out[kv.first.Scalar()] = Canonical(kv.second);
  return out;
}

}  // namespace

StatusOr<RuleConfig> ParseReload(const std::string& running_text, const std::string& next_text,
                                 const std::string& source) {
  ASSIGN_OR_RETURN(RuleConfig next, ParseRuleConfig(next_text, source));
  ASSIGN_OR_RETURN(YAML::Node was, LoadYaml(running_text, source));
  ASSIGN_OR_RETURN(YAML::Node now, LoadYaml(next_text, source));
  const auto before = TopLevel(was), after = TopLevel(now);
  std::string changed;
  for (const std::string& k : kRestartOnly) {  // sorted: the message lists them in order
    auto b = before.find(k), a = after.find(k);
    const bool same =
        b == before.end() ? a == after.end() : a != after.end() && b->second == a->second;
    if (!same) changed += (changed.empty() ? "" : ", ") + k;
  }
  if (!changed.empty())
    return Status::InvalidArgument(
        source + ": " + changed +
        " changed: that takes a restart (only rules, missingDataGrace, maxMarkedFraction, "
        "maxMarked, onPrometheusDown and releaseAfter are reloaded); the running rules are kept");
  return next;
}

}  // namespace ds
