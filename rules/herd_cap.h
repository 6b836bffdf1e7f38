// The herd cap: how many managed nodes may carry our mark at once. Every marked node pushes new
// pods toward the unmarked ones; with most of a cluster marked, the few cold nodes take every new
// pod (and turn hot themselves), and past that the preference scores every node alike. So when
// more nodes are hot than the cap allows, only the hottest unmarked ones are marked and the rest
// are reported as capped.
//
// Existing marks come first: a marked node that is still hot (or whose state is unknown) keeps
// its mark, and only the free places go to new nodes. Swapping marks between nodes whose margins
// cross from cycle to cycle would flap labels; and a cap lowered below the marks already set
// takes effect as those nodes cool, never by unmarking a node that is hot.
//
// Graded marks (rules/mark.h): a node marked at any level counts, since a warm mark steers new
// pods away as a hot one does (less strongly), and a cluster mostly warm herds into its few cool
// nodes all the same. A marked node that moves to another level keeps its place.
#pragma once

#include <cstddef>
#include <vector>

#include "rules/decider.h"
#include "rules/rule.h"

namespace ds {

struct HerdCap {
  double max_fraction = 0.5;  // of the managed nodes; 1 = no limit by share
  size_t max_marked = 0;      // 0 = no absolute limit

  // The most nodes that may carry the mark among `managed`. At least one: a single mark cannot
  // herd (every other node stays unmarked), and a one-node test cluster still shows the label.
  size_t Limit(size_t managed) const;
};

// How far a value is past the rule's threshold, relative to the threshold (0.1 = 10 % past), so
// rules in different units (percent, bytes) compare. Negative when not past it.
// `threshold`: the one the value was judged against (a relative rule's moves with the mean).
double Margin(Comparison op, double threshold, double value);
inline double Margin(const Rule& rule, double value) {
  return Margin(rule.op, rule.threshold, value);
}

struct CapOutcome {
  size_t limit = 0;
  size_t marked = 0;           // nodes that keep or get the mark this cycle
  std::vector<size_t> capped;  // hot nodes left unmarked, hottest first (indices)
};

// Turns the kHot verdict of unmarked nodes beyond the cap into kUnknown (no change is planned;
// their holds stay, to say why they are hot). `marked[i]`: node i carries our mark now. A marked
// node counts unless its verdict is kCold (it is about to lose the mark).
// Margins are taken past each hold's own threshold (Hold::threshold).
// REQUIRES: marked.size() == decisions->size(); holds name indices into `rules`.
CapOutcome ApplyHerdCap(const HerdCap& cap, const std::vector<Rule>& rules,
                        const std::vector<bool>& marked, std::vector<NodeDecision>* decisions);

}  // namespace ds
