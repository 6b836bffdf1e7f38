#include "config/rule_reload.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/yaml_guard.h"
#include "rules/rule_scope.h"

namespace ds {
namespace {

// The keys of the current format read anew on a reload: the inputs of the pure decisions. Every
// other one of its keys (CurrentFormatKeys) was built into something at start-up, so a key added
// to the format takes a restart until it is listed here. `mark` and `taint` shape the mark
// itself, as `label` does: changing them while marks are set would strand the old ones (a
// restart's -cleanup, or the records, deal with that). The legacy format's keys, and the keys it
// ignores, configure nothing that was built: it always reloads.
const std::set<std::string> kReloadable = {"rules",     "missingDataGrace", "maxMarkedFraction",
                                           "maxMarked", "onPrometheusDown", "releaseAfter"};

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
  for (const std::string& k : CurrentFormatKeys()) {  // sorted: the message lists them in order
    if (kReloadable.count(k)) continue;
    auto b = before.find(k), a = after.find(k);
    const bool same =
        b == before.end() ? a == after.end() : a != after.end() && b->second == a->second;
    if (!same) changed += (changed.empty() ? "" : ", ") + k;
  }
  // The node cache keeps only the label keys the start-up rules' pools read: a pool chosen by
  // another key would never match a node.
  auto running = ParseRuleConfig(running_text, source);
  if (running.ok()) {
    const std::vector<std::string> kept = RuleSelectorKeys(running->rules);
    for (const std::string& k : RuleSelectorKeys(next.rules))
      if (!std::binary_search(kept.begin(), kept.end(), k))
        return Status::InvalidArgument(
            source + ": rules[].nodeSelector reads the label key " + k +
            ", which the running controller does not keep (only the keys of its rules' selectors): "
            "that takes a restart; the running rules are kept");
  }
  if (!changed.empty())
    return Status::InvalidArgument(
        source + ": " + changed +
        " changed: that takes a restart (only rules, missingDataGrace, maxMarkedFraction, "
        "maxMarked, onPrometheusDown and releaseAfter are reloaded); the running rules are kept");
  return next;
}

}  // namespace ds
