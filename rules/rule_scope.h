// Node pools and per-rule intervals: which rules apply to which node, and which rules are
// queried this cycle. Pure: node labels, times and answers in, masks and values out.
//
// rules[].nodeSelector: a rule applies to the managed nodes (the top-level nodeSelector) whose
// labels also match its own selector, read from the cycle's node snapshot, so a relabelled node
// changes pools at the next cycle. To a node it does not apply to, the rule gives neither a
// value nor evidence and never holds it (rules/decider.h: RuleInput::applies); its hold on a
// node that leaves its pool ends at once, as if the rule had been removed for that node. A
// relative rule's mean is over its pool only. A node no rule applies to is judged cold (when
// some query answered), so it loses a mark set while it was in a pool.
//
// rules[].interval: the rule is queried on the first cycle at least `interval` after its last
// successful query started (less a tenth of the evaluation interval, for the jitter of cycle
// starts), so an interval that is not a multiple of the evaluation interval is in effect
// rounded up to the next multiple. In the cycles between, its last successful answer is reused
// as that cycle's values, aged: maxAge judges each value by the time of its sample (or of its
// node's update, with an ageQuery) against the reusing cycle's clock. A failed query leaves
// the last success time alone, so it is retried the next cycle. Cycles started by a trigger
// (the Alertmanager webhook, a reload, a new leadership term) query every rule. The rule's
// missing-data grace is at least three of its intervals (RuleGrace).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/label_selector.h"
#include "common/labels.h"
#include "rules/node_matcher.h"
#include "rules/rule.h"

namespace ds {

class RuleScope {
 public:
  // Parses each rule's nodeSelector. A selector that does not parse (ParseRuleConfig refuses
  // those) selects no node: a rule must not reach nodes its author did not mean.
  explicit RuleScope(const std::vector<Rule>& rules);

  // Per rule: empty when it applies to every node, else one entry per node, 1 where it applies.
  // `nodes[i]` is node i's labels.
  std::vector<std::vector<uint8_t>> Applies(const std::vector<const Labels*>& nodes) const;

 private:
  std::vector<std::optional<LabelSelector>> selectors_;  // nullopt: every node
  std::vector<bool> none_;                               // the selector did not parse
};

// The label keys the rules' nodeSelectors read, sorted, once each: the node cache must keep them
// (it keeps only the keys it is told to), and a reload may not need others.
std::vector<std::string> RuleSelectorKeys(const std::vector<Rule>& rules);

// Sets to NaN the values of the nodes a rule does not apply to (`applies` empty: all apply).
void MaskOutOfScope(const std::vector<uint8_t>& applies, std::vector<double>* values);

// Whether a rule is queried this cycle. `last_ok`: when its last successful query started
// (nullopt: never, or forgotten). REQUIRES: cycle_interval_seconds > 0.
bool RuleDue(const Rule& rule, std::optional<TimePoint> last_ok, TimePoint now,
             double cycle_interval_seconds);

// The missing-data grace of one rule: the configured one, but at least three of its intervals.
Duration RuleGrace(const Rule& rule, Duration grace);

// A rule's last successful answer, kept to be reused until it is due again.
struct RuleAnswer {
  TimePoint started{};             // when the query was sent (RuleDue measures from it)
  std::vector<std::string> names;  // the snapshot's node names the values are aligned to
  // Per node: the value (NaN: none), and the Unix time of the update it reflects (NaN: not
  // known; only kept with a maxAge).
  std::vector<double> values, updated_wall;
  // The nodes whose value was already too old when the answer came, with the Unix time of
  // their newest update (NaN: unknown), to go on reporting them.
  std::vector<std::pair<size_t, double>> stale;
  size_t samples = 0, unmatched = 0, duplicates = 0;
};

// Keeps a fresh answer: `matched` as this cycle uses it (maxAge applied), `ages` the
// ageQuery's per-node update ages (empty without one), both measured at `now_wall`.
RuleAnswer KeepAnswer(const Rule& rule, TimePoint started, double now_wall,
                      std::vector<std::string> names, const MatchedValues& matched,
                      const std::vector<double>& ages, size_t samples);

// A kept answer as this cycle's values, aligned to `names` (the cycle's snapshot; a node not in
// the answer's has none) and aged to `now_wall`: a value whose update is now older than the
// rule's maxAge is dropped into `stale`, as a fresh query would have done.
MatchedValues ReuseAnswer(const Rule& rule, const RuleAnswer& answer,
                          const std::vector<std::string_view>& names, double now_wall);

// Per rule, the rule whose query answers it: itself, or, for a graded rule's cooler level
// (config/rule_config.h), the rule it was made from -- the same rule but for the level's name,
// thresholds, `for`, level and resource -- so that each query runs once per cycle. Comparing
// the whole rule keeps a level from taking the answer of another rule that only asks the same
// query (its values masked to another pool, or a predict rule's days).
// (Used by the controller's cycle and by replay, which must ask the same queries.)
std::vector<size_t> SharedQueries(const std::vector<Rule>& rules);

}  // namespace ds
