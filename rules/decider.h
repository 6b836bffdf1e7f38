// The pure decision: rule values per node in, a verdict per node out. No I/O, no clock reads;
// time comes in as an argument so tests drive `for`, hysteresis and grace deterministically.
//
// Per (node, rule):
//  - a value over the threshold for `for` seconds makes the rule hold the node (hot);
//  - a hot rule lets go only when the value reaches the clear threshold (hysteresis);
//  - adoption: a node that carries our mark when this Decider first sees it (a restart, a new
//    leadership term) is held, without waiting for `for` again, only by the rules that held it
//    before: those its ownership record names (rules/ownership.h), on their first value in the
//    hysteresis band or above; without a readable record, any rule on its first value over the
//    threshold. A rule that sits in its band but never held the node does not adopt it (it
//    could hold a label it never set for ever);
//  - missing data (query failed, series absent, NaN) keeps the last verdict for `grace`,
//    then the rule's state is dropped; if it held the node, its first value after the gap (in
//    the band or above, the mark still on) holds the node again without `for`;
//  - the `for` timer, as a pending Prometheus alert: a failed query keeps it (one timeout must
//    not restart a long `for`), a series absent from a successful answer or a value not over
//    the threshold restarts it, and it is dropped with the rest once data is missing past `grace`.
// Relative rules (`relativeTo: mean`) are judged against thresholds recomputed each cycle from
// the mean of the rule's values (EffectiveThresholds); `for`, hysteresis and grace work on those
// as on fixed ones. With fewer than `minNodes` values the rule has no evidence that cycle, as if
// its query had failed: a mean of one or two nodes says nothing about the cluster.
// Per node, hot and cold both need evidence: at least one rule whose query succeeded this cycle.
// With no evidence the verdict is unknown, even when rules still hold the node from before, so
// no label is added or removed while Prometheus is down (a label removed by hand during an
// outage stays removed); the stale holds are still returned, to say why the node was hot.
// With evidence: hot while any rule holds it (a stale hold counts within `grace`, also one from
// a rule whose own query failed), else cold -- except while adopting: a marked node is unknown
// (keeps its mark) until every rule that may adopt it (the recorded ones; without a record, all)
// has reported a value, or for at most `grace` from the first cycle in which any query answered
// (a restart during an outage waits for Prometheus first). So a mark held by the
// memory rule is not removed on failover because cpu reports low while memory's series is
// briefly absent.
// A rule with a nodeSelector judges only its pool (RuleInput::applies, rules/rule_scope.h): to
// other nodes it gives no evidence and holds none; a node in no rule's pool is cold once any
// query answered. A rule's grace is at least three of its intervals (RuleGrace).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "rules/rule.h"

namespace ds {

enum class Verdict { kHot, kCold, kUnknown };

struct NodeInput {
  std::string_view name;
  bool labelled = false;  // carries our mark (rules/mark.h: the label, the taint or both)
  // The rules (indices) the node's ownership record names, or null when it has no readable
  // record for our mark (empty: it names none of the current rules; treated as null). Read only
  // when the node is first seen, to adopt it.
  const std::vector<size_t>* owners = nullptr;
};

struct RuleInput {
  bool failed = false;  // the query failed this cycle: not evidence, but `for` timers are kept
  const std::vector<double>* values = nullptr;  // per node, NaN = no sample; null when failed
  // Per node, 0 where the rule does not apply (its nodeSelector, rules/rule_scope.h): there it
  // gives no value and no evidence, and its state for the node is dropped (a hold ends). Null
  // or empty: it applies to every node. A node no rule applies to is cold once a query answered.
  const std::vector<uint8_t>* applies = nullptr;
};

// A rule's thresholds for one cycle. An absolute rule's are its own. A relative rule's are its
// offsets applied to the mean of the finite values (NaN, no sample, and +-Inf, which would make
// the mean infinite, are left out): '>' mean + offset, '<' mean - offset.
struct EffectiveThresholds {
  bool known = true;  // false: a relative rule without minNodes values (or its query failed)
  double threshold = 0, clear_threshold = 0;
  double mean = 0;   // relative rules: the mean used (when known)
  size_t count = 0;  // relative rules: how many values went into the mean
};

// REQUIRES: values, when not null, holds one value per managed node (NaN = none).
EffectiveThresholds ComputeThresholds(const Rule& rule, const std::vector<double>* values);

// Why a rule holds a node.
struct Hold {
  size_t rule = 0;
  double value = 0;    // last value seen
  TimePoint since;     // when the rule started holding the node
  bool stale = false;  // no fresh value this cycle; held through the grace time
  // The thresholds `value` was judged against: the rule's own, or a relative rule's of the cycle
  // that saw the value (they move with the mean).
  double threshold = 0, clear_threshold = 0;
};

struct NodeDecision {
  Verdict verdict = Verdict::kUnknown;
  // Why the node is (or, for unknown, was) hot: empty when cold. An unknown decision may carry
  // holds, all stale, when no query succeeded this cycle; they must not be read as "hot".
  std::vector<Hold> holds;
  // Graded marks: the level the holds put the node at, in levels below the hottest: the hottest
  // level any holding rule marks (Rule::below_hottest). 0 without holds, and without levels.
  size_t below_hottest = 0;
};

class Decider {
 public:
  Decider(std::vector<Rule> rules, Duration grace);

  // REQUIRES: rules.size() == number of rules; each non-failed values vector has nodes.size()
  // entries. Nodes not passed in are forgotten. Returns one decision per node, in order.
  std::vector<NodeDecision> Decide(TimePoint now, const std::vector<NodeInput>& nodes,
                                   const std::vector<RuleInput>& rules);

  // Forgets every node's state, as a new Decider would (a new leadership term: another replica
  // may have decided meanwhile).
  void Reset() { states_.clear(); }
  // A reloaded rule.yaml: from now on these rules and this grace. A rule defined exactly as
  // before (same name, query, thresholds, `for`, ...) keeps every node's state -- its `for`
  // timer, hysteresis and last value -- so a reload that changes one rule does not restart the
  // others' timers or drop their holds. A new or changed rule starts fresh, as after a restart:
  // a node it held under its old definition is adopted again through the ownership record.
  void Rebase(std::vector<Rule> rules, Duration grace);

  const std::vector<Rule>& rules() const { return rules_; }
  // The thresholds of the last Decide, one per rule (empty before the first and after Rebase).
  const std::vector<EffectiveThresholds>& thresholds() const { return thresholds_; }
  size_t tracked_nodes() const { return states_.size(); }

 private:
  struct RuleState {
    bool seen = false;  // has had a value since the last drop
    bool hot = false;
    bool pending = false;  // over threshold, waiting for `for`
    bool awaited = false;  // adopting: this rule may adopt the node on its first value
    // It held the node until its data went missing past the grace: on its first value, still in
    // its band or above, it holds the (still marked) node again without waiting for `for`.
    bool held_before_gap = false;
    double last_value = 0;
    double last_threshold = 0, last_clear = 0;  // what last_value was judged against
    TimePoint last_seen{};
    TimePoint pending_since{};
    TimePoint hot_since{};
  };
  struct NodeState {
    std::vector<RuleState> rules;
    TimePoint first_seen{};
    bool owners_recorded = false;         // adopting by the record (else: by the threshold)
    bool adoption_clock_started = false;  // a query has answered since the node was first seen
    TimePoint adoption_since{};           // ...first at this time; adoption waits `grace` from it
    uint64_t generation = 0;
  };

  // What a node's rules said in one Decide, for its verdict (Judge).
  struct Tally {
    bool in_scope = false;  // some rule applies to the node
    bool evidence = false;  // some query succeeded this cycle
    bool awaiting = false;  // some rule may still adopt the node
  };

  // Decide's steps, in the order they run for each node. Those run for every node or rule are
  // inline (defined in decider.cc, their only user), so that Decide compiles to one loop again:
  // out of line, they made it about 10 % slower (10,000 nodes, 4 rules).
  inline bool Answered(const std::vector<RuleInput>& inputs, size_t r) const;
  inline NodeState& StateOf(size_t i, const NodeInput& node, TimePoint now);
  void StartTracking(const NodeInput& node, TimePoint now, NodeState* ns) const;
  inline void DecideNode(TimePoint now, size_t i, const NodeInput& node,
                         const std::vector<RuleInput>& inputs, bool answered_any, NodeState* ns,
                         NodeDecision* d) const;
  static inline void Observe(const Rule& rule, const EffectiveThresholds& t, double v,
                             TimePoint now, bool labelled, bool owners_recorded, RuleState* st);
  static inline void NoValue(Duration grace, bool answered, TimePoint now, RuleState* st);
  inline size_t HottestLevel(const std::vector<Hold>& holds) const;
  static inline Verdict Judge(const Tally& tally, bool held, bool answered_any);
  void ForgetDeparted(size_t node_count);

  std::vector<Rule> rules_;
  Duration grace_;
  std::vector<Duration> rule_grace_;  // per rule: RuleGrace (rules/rule_scope.h)
  std::vector<EffectiveThresholds> thresholds_;
  uint64_t generation_ = 0;
  std::unordered_map<std::string, NodeState> states_;
  // Last Decide's entry for each position in `nodes` (unordered_map entries do not move).
  std::vector<std::pair<const std::string, NodeState>*> by_position_;
};

}  // namespace ds
