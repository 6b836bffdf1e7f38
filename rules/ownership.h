// The ownership record: an annotation written in the same PATCH as our mark, saying which mark we
// set and which rules hold the node since when. It is how a restarted controller or a new leader
// knows what it owns (it adopts only those rules; rules/decider.h), how `kubectl describe node`
// explains the label, and how `-cleanup` finds marks this controller set. It is removed with
// the mark. Pure: formatting and parsing only.
//
//   dynamic-scheduler.io/held-by:
//     {"label":"status","value":"presure","rules":[{"rule":"cpu","since":"2026-11-23T12:00:00Z"}]}
//   (plus "lastEviction":"2026-11-23T12:05:00Z" once the rebalancer evicted from the node)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

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
  std::string label_key;  // the mark we set: key and value
  std::string label_value;
  std::vector<OwnerRule> rules;
  // The rebalancer's last eviction from the node (epoch seconds; 0: none), so that a new leader
  // or a restarted controller keeps holding the mark and waits out the node's cool-down instead
  // of evicting again at once. Written as "lastEviction" only when set.
  double last_eviction_wall = 0;
  bool operator==(const Ownership&) const = default;
};

std::string FormatOwnership(const Ownership& o);
// Errors say what is wrong (not JSON, a missing field, a bad time); the caller then treats the
// node as having no record.
StatusOr<Ownership> ParseOwnership(std::string_view text);

}  // namespace ds
