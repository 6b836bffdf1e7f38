#include "rules/outage.h"

namespace ds {

size_t ReleaseVerdicts(std::vector<NodeDecision>* decisions) {
  size_t changed = 0;
  for (NodeDecision& d : *decisions) {
    if (d.verdict != Verdict::kUnknown) continue;
    // The stale holds explained a mark kept through the outage; the mark goes now.
    d.verdict = Verdict::kCold;
    d.holds.clear();
    ++changed;
  }
  return changed;
}

}  // namespace ds
