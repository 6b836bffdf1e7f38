#include "rules/herd_cap.h"

#include <algorithm>
#include <cmath>

namespace ds {

size_t HerdCap::Limit(size_t managed) const {
  auto by_share = static_cast<size_t>(std::floor(max_fraction * static_cast<double>(managed)));
  if (max_marked > 0) by_share = std::min(by_share, max_marked);
  return std::max<size_t>(by_share, 1);
}

double Margin(Comparison op, double threshold, double value) {
  const double past = op == Comparison::kGreater ? value - threshold : threshold - value;
  // A threshold of 0 has no scale: the distance itself orders the nodes.
  return threshold == 0 ? past : past / std::abs(threshold);
}

CapOutcome ApplyHerdCap(const HerdCap& cap, const std::vector<Rule>& rules,
                        const std::vector<bool>& marked, std::vector<NodeDecision>* decisions) {
  CapOutcome out;
  out.limit = cap.Limit(decisions->size());
  std::vector<std::pair<double, size_t>> candidates;  // (margin, node)
  for (size_t i = 0; i < decisions->size(); ++i) {
    const NodeDecision& d = (*decisions)[i];
    if (marked[i]) {
      if (d.verdict != Verdict::kCold) ++out.marked;
      continue;
    }
    if (d.verdict != Verdict::kHot) continue;
    double margin = -INFINITY;
    for (const Hold& h : d.holds)
      margin = std::max(margin, Margin(rules[h.rule].op, h.threshold, h.value));
    candidates.emplace_back(margin, i);
  }
  // Hottest first; by index among equals, so the choice does not depend on sort internals.
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (const auto& [margin, i] : candidates) {
    if (out.marked < out.limit) {
      ++out.marked;
      continue;
    }
    (*decisions)[i].verdict = Verdict::kUnknown;
    out.capped.push_back(i);
  }
  return out;
}

}  // namespace ds
