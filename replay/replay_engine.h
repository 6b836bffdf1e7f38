// Replay: what the controller would have done over a stretch of Prometheus history, with the
// controller's own decisions. Pure: node identities and range-query answers in, marks out; no
// I/O, no clock (app/replay.h fetches and writes).
//
// Each step is one cycle at that time, run through the same pieces as Reconciler::RunCycle:
// series matched to nodes (NodeMatcher, MatchAccumulator, maxAge with the ageQuery's update
// ages), rules[].interval (RuleDue, KeepAnswer, ReuseAnswer), pools (RuleScope), graded levels
// sharing their rule's query (SharedQueries), and then the controller's own CycleJudge
// (rules/cycle_judge.h: the Decider's `for`, hysteresis, grace, relative thresholds and
// adoption, the outage policy, the herd cap and the planner). What is not replayed, and why:
// - writes are taken as done at once: the write limits (-max_writes_per_cycle, ...) only delay
//   marks by cycles, and a failed PATCH is not history;
// - the rebalancer's hold (a cooled node keeps its mark while evictions settle) is not
//   replayed: the scheduler is not replayed either, so its evictions' effect is unknown;
// - at `from` no node carries a mark (nothing to adopt);
// - a step at which no rule's query has a single sample is taken as Prometheus being down
//   (every query failed): Prometheus' own downtime leaves exactly that gap in its history. A
//   gap of some series only is missing data, as live.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/labels.h"
#include "config/rule_config.h"
#include "promql/range_query.h"
#include "rules/cycle_judge.h"
#include "rules/decider.h"
#include "rules/node_matcher.h"
#include "rules/rule_scope.h"

namespace ds {

struct ReplayNode {
  std::string name;
  std::vector<std::string> addresses;  // InternalIP, ExternalIP, Hostname, as the cache keeps
  Labels labels;                       // for rules[].nodeSelector
};

// One mark: set at `start` (the first step the controller would have set it), removed at `end`
// (the first step it would have removed it; NaN while still on at the end of the replay).
struct ReplayMark {
  double start = 0;
  double end = 0;                  // NaN: still marked
  std::vector<std::string> rules;  // the rules that held the node when it was set
  size_t below_hottest = 0;        // graded marks: the level set (0: the hottest)
  // The rules holding the node from each time on, as the decider said (the ownership record the
  // controller would write): (time, rules), in time order, the first at `start`. A rule in its
  // hysteresis band holds only once it crossed its threshold: the rebalancer's estimate asks
  // this, not the value alone (estimate_inputs.h HoldingAt).
  std::vector<std::pair<double, std::vector<std::string>>> held = {};
  // The first step after `start` at which the node was at or below its clear threshold (every
  // rule's verdict cold) while it carried this mark: its time to relief is relieved_at - start, as
  // the controller measures it (rebalance/effect.h). NaN: not within the mark (an outage released
  // it, or it is still on and hot at the end of the replay). Without the rebalancer's hold
  // replayed, a mark ends at that step: the history decides when, evictions or none.
  double relieved_at = std::numeric_limits<double>::quiet_NaN();
};

struct ReplayNodeResult {
  std::string name;
  std::vector<ReplayMark> marks;
  double marked_seconds = 0;
  double capped_seconds = 0;  // hot but left unmarked by the herd cap
  size_t cap_hits = 0;        // steps at which the herd cap left it unmarked
  // Steps at which it carried a mark (from an earlier step) and was not at or below its clear
  // threshold, times the step: the controller's hot node-seconds (rebalance/effect.h).
  double hot_marked_seconds = 0;
};

struct ReplayTotals {
  size_t marks = 0;
  double marked_node_seconds = 0;
  size_t max_marked_at_once = 0;
  double capped_node_seconds = 0;
  size_t unmatched_series = 0;  // distinct series (per rule) that named no node
  size_t outage_steps = 0;      // steps replayed as Prometheus down
  // The nodes' hot_marked_seconds summed.
  double hot_marked_node_seconds = 0;
  // The marks with a relieved_at, and the median and 90th percentile (nearest rank) of their time
  // to relief (NaN without one).
  size_t relieved_marks = 0;
  double time_to_relief_median = std::numeric_limits<double>::quiet_NaN();
  double time_to_relief_p90 = std::numeric_limits<double>::quiet_NaN();
};

// Per step, for the report's charts.
struct ReplayTimeline {
  std::vector<double> times;
  std::vector<uint32_t> marked, capped;
  std::vector<std::vector<uint32_t>> held_by_rule;  // per rule: marked nodes the rule holds
};

struct ReplayResult {
  double from = 0, to = 0, step_seconds = 0;
  std::vector<std::string> rules;
  std::vector<ReplayNodeResult> nodes;  // sorted by name
  ReplayTotals totals;
  ReplayTimeline timeline;
};

// One rule's answers over a chunk of steps: its query's series, and its ageQuery's (null
// without one). Both may be the same pointer as another rule's (SharedQueries).
struct RuleHistory {
  const std::vector<RangeSeries>* series = nullptr;
  const std::vector<RangeSeries>* ages = nullptr;
};

class ReplayEngine {
 public:
  // `step_seconds`: the cycle interval replayed; `grace_seconds`: the missing-data grace
  // (MissingDataGraceSeconds). REQUIRES: step_seconds > 0; `config` validated (ParseRuleConfig).
  ReplayEngine(const RuleConfig& config, std::vector<ReplayNode> nodes, double step_seconds,
               double grace_seconds);
  ~ReplayEngine();

  // Per rule: the rule whose query answers it (SharedQueries): the fetcher asks only those, and
  // the labels each rule's matching reads (MatchLabels), to keep while decoding.
  const std::vector<size_t>& asked_by() const { return asked_by_; }
  const std::vector<LabelFilter>& label_filters() const { return label_filters_; }

  // Runs the cycles at `times` (ascending, after every step run before) on `history` (one per
  // rule; a rule answered by another's query may repeat its pointers). A series' point at a
  // step is the one whose time equals the step's (within a millisecond); none: no sample.
  // REQUIRES: history.size() == rules.
  void Run(const std::vector<double>& times, const std::vector<RuleHistory>& history);

  // The marks up to `to` (the end of the window: open marks count their time up to it).
  ReplayResult Finish(double from, double to) const;

 private:
  struct NodeMarkState {
    bool marked = false;
    bool has_record = false;
    size_t below_hottest = 0;
    std::vector<size_t> owners;  // the rules its record names
  };
  // One cycle at Unix time t on this cycle's evidence: decide, the outage policy, the herd
  // cap, plan, and the plan taken as written.
  void Cycle(double t, const std::vector<RuleInput>& inputs, bool every_query_failed);
  // The rules `d` says hold a marked node from `t` on, appended to its current mark's `held`.
  void RecordHeld(double t, const NodeDecision& d, ReplayNodeResult* res) const;

  const RuleConfig config_;
  const std::vector<ReplayNode> nodes_;
  const double step_;
  std::vector<size_t> asked_by_;
  std::vector<LabelFilter> label_filters_;
  std::vector<std::vector<uint8_t>> applies_;  // per rule (RuleScope), fixed: the nodes are
  std::unique_ptr<NodeMatcher> matcher_;
  std::vector<std::string_view> names_;
  CycleJudge judge_;
  std::vector<std::optional<RuleAnswer>> answers_;  // rules[].interval
  std::vector<NodeMarkState> state_;                // per node
  std::vector<ReplayNodeResult> results_;           // per node, in nodes_ order
  ReplayTotals totals_;
  ReplayTimeline timeline_;
  std::set<std::pair<size_t, Labels>> unmatched_;  // (rule, series labels)
  double last_t_ = 0;
  bool started_ = false;
};

}  // namespace ds
