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
