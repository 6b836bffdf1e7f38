// The mark: what this controller puts on a hot Node, and nothing else. It is a label (the
// default), a taint, or both. Every decision about whether a node carries it goes through here,
// so "is this ours" has one definition.
//
// Label: our key *with our value*. Our key with any other value (an operator's
// `status=maintenance`) is someone else's: the planner never removes it, but a node that is hot
// gets our value over it (the node is busy, and the affinity term must see that), after which it
// is ours.
//
// Taint (`PreferNoSchedule`, so that workloads avoid marked nodes with no change to their
// templates): our key, value and effect. Kubernetes allows one taint per key and effect on a
// node, so a taint with our key and effect but another value is someone else's, and is treated
// like a foreign label value. Every other taint is kept as it is, in its place. Unlike the label,
// a taint equal to ours is ours to remove only where our record names it (OwnedMarkParts in
// rules/ownership.h): a copy put there by hand never is.
//
// Graded marks (`levels:` in rule.yaml): the mark has several values under the same key, coolest
// first, e.g. status=warm below status=presure. The hottest level is this mark itself (its value
// and taint value); a cooler level is the same mark with that level's value, on the label and on
// the taint alike (Below). A node carries at most one level at a time (one label value; one taint
// per key and effect), and our key with any of our level values is ours, as the single value is.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/labels.h"
#include "common/taint.h"

namespace ds {

struct Mark {
  // The original project's key and value (its historical spelling); workloads' affinity terms
  // name them, so they stay the defaults.
  static constexpr const char* kDefaultKey = "status";
  static constexpr const char* kDefaultValue = "presure";
  static constexpr const char* kDefaultTaintKey = "dynamic-scheduler.io/pressure";
  static constexpr const char* kDefaultTaintValue = "presure";
  // The only effect allowed: the mark is a preference. NoSchedule would make an outage of the
  // metrics pipeline (marks held) block scheduling, which a soft mark never does.
  static constexpr const char* kTaintEffect = "PreferNoSchedule";

  enum class Mode { kLabel, kTaint, kBoth };

  std::string key = kDefaultKey;  // the label
  std::string value = kDefaultValue;
  Mode mode = Mode::kLabel;
  Taint taint{kDefaultTaintKey, kDefaultTaintValue, kTaintEffect};

  // Graded marks: the levels, coolest first; the last one's value is `value` (the hottest level
  // is the mark itself, so that the rebalancer and existing affinity terms see what they did).
  // Empty: one level, the mark (the default).
  struct Level {
    std::string name;
    std::string value;  // the label value, and the taint value of a cooler level
  };
  std::vector<Level> levels = {};

  size_t LevelCount() const { return levels.empty() ? 1 : levels.size(); }
  // The mark `below` levels under the hottest (0: this mark): a cooler level's value on the label
  // and on the taint. REQUIRES: below < LevelCount().
  Mark Below(size_t below) const;
  // The name of that level ("" without levels).
  std::string LevelName(size_t below) const;
  // How many levels below the hottest the value our key carries on the node is (the label's in
  // a mode with a label, else the taint's with our key and effect); nullopt when it is none of
  // ours.
  std::optional<size_t> LevelOn(const Labels& labels, const std::vector<Taint>& taints) const;
  // True when the node carries every part of the mark at some level (IsOn of that level).
  bool AnyLevelIsOn(const Labels& labels, const std::vector<Taint>& taints) const;
  // A selector for the nodes whose label carries any of our values: "key=value", or with levels
  // "key in (warm,presure)".
  std::string MarkedSelector() const;

  bool UsesLabel() const { return mode != Mode::kTaint; }
  bool UsesTaint() const { return mode != Mode::kLabel; }

  // True when `labels` hold our key with our value.
  bool LabelOn(const Labels& labels) const {
    const std::string* v = FindLabel(labels, key);
    return v != nullptr && *v == value;
  }
  // True when `taints` hold our taint: key, value and effect.
  bool TaintOn(const std::vector<Taint>& taints) const;
  // True when the node carries every part of the mark its mode sets.
  bool IsOn(const Labels& labels, const std::vector<Taint>& taints) const {
    return (!UsesLabel() || LabelOn(labels)) && (!UsesTaint() || TaintOn(taints));
  }
  // True when the node carries some part of the mark its mode sets (all of it, or, with `both`,
  // one of the two: the other was removed or overwritten by someone else).
  bool PartlyOn(const Labels& labels, const std::vector<Taint>& taints) const {
    return (UsesLabel() && LabelOn(labels)) || (UsesTaint() && TaintOn(taints));
  }

  // The node's taints with ours in them: a taint with our key and effect takes our value in its
  // place; otherwise ours is appended. Every other taint stays as it is, in its order. Idempotent.
  std::vector<Taint> WithTaint(const std::vector<Taint>& taints) const;
  // The node's taints without ours (key, value and effect all ours): a foreign value under our
  // key and effect, and every other taint, stay.
  std::vector<Taint> WithoutTaint(const std::vector<Taint>& taints) const;

  // "key=value", for messages; with a taint "key=value:PreferNoSchedule" (taint) or both.
  std::string ToString() const;
  std::string TaintString() const { return taint.key + "=" + taint.value + ":" + taint.effect; }
};

const char* MarkModeName(Mark::Mode mode);  // "label", "taint", "both"

}  // namespace ds
