// Turns verdicts into changes of our mark and of its ownership record (rules/ownership.h): only
// changes are planned, only our mark is ever removed (a foreign value under our key stays), and
// an unknown verdict changes nothing. How many of the changes are written, how fast and whether
// at all (dry-run) is the NodeWriter's business (controller/node_writer.h), which holds every
// write limit in one place.
#pragma once

#include <cstddef>
#include <vector>

#include "rules/decider.h"

namespace ds {

struct PlanNode {
  std::string_view name;
  bool marked = false;  // carries our mark (Mark::IsOn)
  // Carries an ownership annotation that is ours to remove: a record of our mark, or unreadable.
  // (A record of another mark, from an earlier label key or value, is left for `-cleanup`.)
  bool has_record = false;
  // The rules the record names (sorted indices), or null when it has no readable record for
  // our mark.
  const std::vector<size_t>* recorded = nullptr;
  // Not marked, but carries a part of our mark (Mark::PartlyOn: with mark `both`, the label
  // without the taint or the reverse): a hot node gets the whole mark, a cold one loses the part.
  bool partly = false;
  // Graded marks: the level of our mark the node is at (levels below the hottest; NodeMarkLevel
  // in rules/ownership.h), which `marked`, `partly` and `recorded` are about.
  size_t below_hottest = 0;
};

enum class ChangeKind {
  kMark,    // set our mark and its record (the rules that hold the node); with graded marks
            // also a node's move to another level (NodeDecision::below_hottest): one PATCH
  kRecord,  // the node stays marked but the rules that hold it changed (or it had no record)
  kUnmark,  // remove our mark, only if it is still ours, and its record
  kForget,  // a record without our mark (removed by hand, overwritten): remove the record
};

struct LabelChange {
  size_t node = 0;  // index into the planned nodes
  ChangeKind kind = ChangeKind::kMark;
};

// The rules that hold a node (sorted, unique indices): what its record should name.
std::vector<size_t> HoldingRules(const NodeDecision& d);

// In node order. REQUIRES: nodes.size() == decisions.size().
std::vector<LabelChange> PlanChanges(const std::vector<PlanNode>& nodes,
                                     const std::vector<NodeDecision>& decisions);

}  // namespace ds
