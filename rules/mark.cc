#include "rules/mark.h"

#include <algorithm>

namespace ds {

bool Mark::TaintOn(const std::vector<Taint>& taints) const {
  return std::any_of(taints.begin(), taints.end(), [&](const Taint& t) { return t.SameAs(taint); });
}

std::vector<Taint> Mark::WithTaint(const std::vector<Taint>& taints) const {
  std::vector<Taint> out = taints;
  for (Taint& t : out)
    if (t.key == taint.key && t.effect == taint.effect) {
      t.value = taint.value;  // its timeAdded is kept: the taint is still in its place
      return out;
    }
  out.push_back(taint);
  return out;
}

std::vector<Taint> Mark::WithoutTaint(const std::vector<Taint>& taints) const {
  std::vector<Taint> out;
  for (const Taint& t : taints)
    if (!t.SameAs(taint)) out.push_back(t);
  return out;
}

Mark Mark::Below(size_t below) const {
  Mark m = *this;
  if (below == 0 || levels.empty()) return m;
  const Level& l = levels[levels.size() - 1 - below];
  m.value = l.value;
  m.taint.value = l.value;
  return m;
}

std::string Mark::LevelName(size_t below) const {
  return levels.empty() ? std::string() : levels[levels.size() - 1 - below].name;
}

std::optional<size_t> Mark::LevelOn(const Labels& labels, const std::vector<Taint>& taints) const {
  for (size_t below = 0; below < LevelCount(); ++below) {
    const Mark m = Below(below);
    if (UsesLabel() ? m.LabelOn(labels) : m.TaintOn(taints)) return below;
  }
  return std::nullopt;
}

bool Mark::AnyLevelIsOn(const Labels& labels, const std::vector<Taint>& taints) const {
  if (levels.empty()) return IsOn(labels, taints);
  const std::optional<size_t> on = LevelOn(labels, taints);
  return on.has_value() && Below(*on).IsOn(labels, taints);
}

std::string Mark::MarkedSelector() const {
  if (levels.empty()) return key + "=" + value;
  std::string values;
  for (const Level& l : levels) values += (values.empty() ? "" : ",") + l.value;
  return key + " in (" + values + ")";
}

std::string Mark::ToString() const {
  switch (mode) {
    case Mode::kLabel:
      return key + "=" + value;
    case Mode::kTaint:
      return "taint " + TaintString();
    case Mode::kBoth:
      break;
  }
  return key + "=" + value + " and taint " + TaintString();
}

const char* MarkModeName(Mark::Mode mode) {
  switch (mode) {
    case Mark::Mode::kLabel:
      return "label";
    case Mark::Mode::kTaint:
      return "taint";
    case Mark::Mode::kBoth:
      break;
  }
  return "both";
}

}  // namespace ds
