// The sections that say what marks a node and how many nodes may carry it: label, mark, taint,
// levels, maxMarkedFraction and maxMarked (config/rule_config_parse.h).
#include <string>
#include <vector>

#include "common/labels.h"
#include "config/rule_config.h"
#include "config/rule_config_parse.h"
#include "rules/mark.h"

namespace ds {
namespace rule_config_parse {
namespace {

// These sections' steps, reading their fields through FieldReader.
class MarkParser : public FieldReader {
 public:
  explicit MarkParser(const FieldReader& in) : FieldReader(in) {}

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
};

}  // namespace

Status ParseLabel(const FieldReader& in, const YAML::Node& l, Mark* mark) {
  return MarkParser(in).ParseLabel(l, mark);
}

Status ParseMarkMode(const FieldReader& in, const YAML::Node& m, Mark* mark) {
  return MarkParser(in).ParseMarkMode(m, mark);
}

Status ParseTaint(const FieldReader& in, const YAML::Node& t, Mark* mark) {
  return MarkParser(in).ParseTaint(t, mark);
}

Status ParseHerdCap(const FieldReader& in, const YAML::Node& root, RuleConfig* cfg) {
  return MarkParser(in).ParseHerdCap(root, cfg);
}

Status ParseLevels(const FieldReader& in, const YAML::Node& n, const YAML::Node& label,
                   RuleConfig* cfg) {
  return MarkParser(in).ParseLevels(n, label, cfg);
}

}  // namespace rule_config_parse
}  // namespace ds
