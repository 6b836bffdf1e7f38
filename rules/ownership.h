// The ownership record: an annotation written in the same PATCH as our mark, saying which mark we
// set and which rules hold the node since when. It is how a restarted controller or a new leader
// knows what it owns (it adopts only those rules; rules/decider.h), how `kubectl describe node`
// explains the label, and how `-cleanup` finds marks this controller set. It is removed with
// the mark. Pure: formatting and parsing only.
//
//   dynamic-scheduler.io/held-by:
//     {"label":"status","value":"presure","rules":[{"rule":"cpu","since":"2026-11-23T12:00:00Z"}]}
//   (plus "lastEviction":"2026-11-23T12:05:00Z" once the rebalancer evicted from the node)
//   In taint mode the record names the taint it set, "taint":{"key":..,"value":..,"effect":..},
//   and ("both") the label as well; a taint mode record without a label has no "label"/"value".
//   A taint is removed only where a record names it: one this controller did not set never is.
//   A node that already carried a taint equal to ours when it was marked gets "taintNotOurs":true:
//   the record names the mark, but that taint stays someone else's.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/taint.h"
#include "rules/mark.h"

namespace ds {

inline constexpr const char* kHeldByAnnotation = "dynamic-scheduler.io/held-by";
// A record longer than this is refused unread (ours are a few hundred bytes).
inline constexpr size_t kMaxOwnershipBytes = 16 * 1024;

struct OwnerRule {
  std::string rule;       // the rule's name in rule.yaml
  double since_wall = 0;  // epoch seconds (whole seconds on the wire)
  bool operator==(const OwnerRule&) const = default;
};

struct Ownership {
  std::string label_key;  // the label we set: key and value (empty: no label, taint mode)
  std::string label_value;
  std::vector<OwnerRule> rules;
  // The rebalancer's last eviction from the node (epoch seconds; 0: none), so that a new leader
  // or a restarted controller keeps holding the mark and waits out the node's cool-down instead
  // of evicting again at once. Written as "lastEviction" only when set.
  double last_eviction_wall = 0;
  Taint taint = {};  // the taint we set (key empty: none, label mode)
  // The node already carried a taint equal to ours when we marked it (put there by hand or by
  // another tool): the node counts as marked, but that taint is not ours and is never removed,
  // so it is not adopted. Written as "taintNotOurs":true only when set.
  bool taint_not_ours = false;
  bool operator==(const Ownership&) const = default;
};

std::string FormatOwnership(const Ownership& o);
// The record's fields for `mark` (what a mark set in its mode is recorded as).
void SetRecordedMark(const Mark& mark, Ownership* o);
// True when the record names exactly the mark `mark` sets (its mode's label and/or taint): a
// record of another mark (the key, value or mode changed in rule.yaml) is left for `-cleanup`.
bool RecordNamesMark(const Ownership& o, const Mark& mark);
// Which parts of `mark` a node carries that are ours to remove. The label: our key with our value
// (as in label mode, where no record is needed: mark.h). The taint: only where `record`, a record
// naming this mark (RecordNamesMark) and not saying taintNotOurs, names it and the node carries
// it; a taint no record of ours names is never ours. `record` null: the node has no readable
// record. Every reader of a node (a cycle, the re-read after a 409, `-cleanup`) decides with this,
// so they cannot disagree.
struct OwnedParts {
  bool label = false;
  bool taint = false;
  bool any() const { return label || taint; }
  bool operator==(const OwnedParts&) const = default;
};
OwnedParts OwnedMarkParts(const Mark& mark, const Labels& labels, const std::vector<Taint>& taints,
                          const Ownership* record);
// Graded marks (rules/mark.h): which level of `mark` a record names (levels below the hottest),
// or nullopt when it names none of them. Without levels: 0 when RecordNamesMark, else nullopt.
std::optional<size_t> RecordedLevel(const Ownership& o, const Mark& mark);
// The level of `mark` a node is at, to read it with mark.Below(level): the level whose value our
// key carries (the label's, or without one the taint's), else the one its record names, else 0
// (the hottest: then nothing of ours is on it). So the record of a level the label has since
// left is "a record of another mark", as after a change of label.value.
size_t NodeMarkLevel(const Mark& mark, const Labels& labels, const std::vector<Taint>& taints,
                     const Ownership* record);
// The mark a record names (its label and/or taint, and so its mode), for `-cleanup`, which
// removes the mark an earlier configuration set. REQUIRES: the record names a label or a taint.
Mark RecordedMark(const Ownership& o);

// Errors say what is wrong (not JSON, a missing field, a bad time); the caller then treats the
// node as having no record.
StatusOr<Ownership> ParseOwnership(std::string_view text);

}  // namespace ds
