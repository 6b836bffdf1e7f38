#include "rules/decider.h"

#include <algorithm>
#include <cmath>

#include "rules/rule_scope.h"

namespace ds {

Decider::Decider(std::vector<Rule> rules, Duration grace)
    : rules_(std::move(rules)), grace_(grace) {
  for (const Rule& r : rules_) rule_grace_.push_back(RuleGrace(r, grace_));
}

void Decider::Rebase(std::vector<Rule> rules, Duration grace) {
  // Per new rule: the old one defined exactly alike, or else the old one of the same name.
  std::vector<int> same(rules.size(), -1), renamed(rules.size(), -1);
  for (size_t j = 0; j < rules.size(); ++j)
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (rules[j] == rules_[i]) same[j] = static_cast<int>(i);
      if (rules[j].name == rules_[i].name) renamed[j] = static_cast<int>(i);
    }
  for (auto& [name, ns] : states_) {
    std::vector<RuleState> next(rules.size());
    for (size_t j = 0; j < rules.size(); ++j) {
      if (same[j] >= 0) {
        next[j] = ns.rules[static_cast<size_t>(same[j])];
      } else if (renamed[j] >= 0) {
        // Changed (a new threshold, say): it starts over, but if it held the node, its first
        // value still in its band or above keeps the (still set) mark without a new `for`,
        // as after a gap in the data.
        const RuleState& was = ns.rules[static_cast<size_t>(renamed[j])];
        next[j].held_before_gap = was.hot || was.held_before_gap;
      }
    }
    ns.rules = std::move(next);
  }
  rules_ = std::move(rules);
  grace_ = grace;
  rule_grace_.clear();
  for (const Rule& r : rules_) rule_grace_.push_back(RuleGrace(r, grace_));
  thresholds_.clear();
}

EffectiveThresholds ComputeThresholds(const Rule& rule, const std::vector<double>* values) {
  EffectiveThresholds t;
  t.threshold = rule.threshold;
  t.clear_threshold = rule.clear_threshold;
  if (rule.relative_to == Rule::Relative::kNone) return t;
  t.known = false;
  if (values == nullptr) return t;
  double sum = 0;
  for (double v : *values) {
    if (!std::isfinite(v)) continue;
    sum += v;
    ++t.count;
  }
  if (t.count < rule.min_nodes || t.count == 0) return t;
  t.known = true;
  t.mean = sum / static_cast<double>(t.count);
  const double sign = rule.op == Comparison::kGreater ? 1 : -1;
  t.threshold = t.mean + sign * rule.threshold;
  t.clear_threshold = t.mean + sign * rule.clear_threshold;
  return t;
}

std::vector<NodeDecision> Decider::Decide(TimePoint now, const std::vector<NodeInput>& nodes,
                                          const std::vector<RuleInput>& inputs) {
  ++generation_;
  const size_t nrules = rules_.size();
  thresholds_.resize(nrules);
  for (size_t r = 0; r < nrules; ++r)
    thresholds_[r] = ComputeThresholds(rules_[r], inputs[r].failed ? nullptr : inputs[r].values);
  bool answered_any = false;  // some query succeeded this cycle
  for (size_t r = 0; r < nrules; ++r) answered_any = answered_any || Answered(inputs, r);
  std::vector<NodeDecision> out(nodes.size());
  // Only Decide inserts into states_; empty means new or Reset(): the remembered entries are gone.
  if (states_.empty()) by_position_.clear();
  by_position_.resize(nodes.size(), nullptr);
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeState& ns = StateOf(i, nodes[i], now);
    ns.generation = generation_;
    DecideNode(now, i, nodes[i], inputs, answered_any, &ns, &out[i]);
  }
  ForgetDeparted(nodes.size());
  // by_position_ points only at entries seen this cycle (a repeated name points twice at one
  // entry, which is kept): none was erased above.
  return out;
}

// A rule answered when its query succeeded and, if relative, its mean is known.
inline bool Decider::Answered(const std::vector<RuleInput>& inputs, size_t r) const {
  return !inputs[r].failed && inputs[r].values != nullptr && thresholds_[r].known;
}

// The state of `node`, at position i of Decide's list; created when the node is new.
inline Decider::NodeState& Decider::StateOf(size_t i, const NodeInput& node, TimePoint now) {
  // The node list is usually last cycle's, in the same order: node i's entry is then found by
  // one short compare instead of a string hash and a bucket chase (10,000 nodes a cycle).
  auto* entry = by_position_[i];
  if (entry != nullptr && entry->first == node.name) return entry->second;
  auto [it, inserted] = states_.try_emplace(std::string(node.name));
  by_position_[i] = &*it;
  if (inserted) StartTracking(node, now, &it->second);
  return it->second;
}

// A node seen for the first time: fresh rule states and, when it carries the mark, the rules
// that may adopt it.
void Decider::StartTracking(const NodeInput& node, TimePoint now, NodeState* ns) const {
  const size_t nrules = rules_.size();
  ns->rules.resize(nrules);
  ns->first_seen = now;
  if (!node.labelled) return;
  // Adopting a mark set before (by us before a restart, or by another leader): wait for the rules
  // that may hold it. A record that names none of the current rules (each renamed or removed
  // since) says nothing about them: adopt by the threshold, as without a record.
  ns->owners_recorded = node.owners != nullptr && !node.owners->empty();
  if (ns->owners_recorded) {
    for (size_t r : *node.owners)
      if (r < nrules) ns->rules[r].awaited = true;
  } else {
    for (auto& st : ns->rules) st.awaited = true;
  }
}

// One node's cycle: each rule's state moves on with its value (or its absence), then the holds,
// the level and the verdict are read off the states.
inline void Decider::DecideNode(TimePoint now, size_t i, const NodeInput& node,
                                const std::vector<RuleInput>& inputs, bool answered_any,
                                NodeState* ns, NodeDecision* d) const {
  // Adoption waits at most the grace time for a rule to report, counted from the first cycle
  // in which any query answered: a restart during a Prometheus outage longer than the grace
  // must still adopt when data returns, not start `for` again on a marked node.
  if (answered_any && !ns->adoption_clock_started) {
    ns->adoption_clock_started = true;
    ns->adoption_since = now;
  }
  const bool adopting_window = !ns->adoption_clock_started || now - ns->adoption_since <= grace_;
  const size_t nrules = rules_.size();
  // Room for every hold at once: growing 1, 2, 4 cost up to three allocations per hot node.
  size_t hot_rules = 0;
  for (size_t r = 0; r < nrules; ++r) hot_rules += ns->rules[r].hot ? 1 : 0;
  if (hot_rules > 0) d->holds.reserve(std::min(nrules, hot_rules + 1));
  Tally tally;
  for (size_t r = 0; r < nrules; ++r) {
    RuleState& st = ns->rules[r];
    const RuleInput& in = inputs[r];
    if (in.applies != nullptr && !in.applies->empty() && !(*in.applies)[i]) {
      st = RuleState{};  // out of its pool: no hold, no timer, nothing to adopt
      continue;
    }
    tally.in_scope = true;
    // A relative rule without its mean counts as failed: no evidence, `for` timers kept.
    const bool answered = Answered(inputs, r);
    tally.evidence = tally.evidence || answered;
    const double v = answered ? (*in.values)[i] : std::nan("");
    const bool fresh = !std::isnan(v);
    // A mark must still be on for a rule to adopt it (it may have been removed meanwhile).
    if (st.awaited && (!node.labelled || !adopting_window)) st.awaited = false;
    if (fresh)
      Observe(rules_[r], thresholds_[r], v, now, node.labelled, ns->owners_recorded, &st);
    else
      NoValue(rule_grace_[r], answered, now, &st);
    tally.awaiting = tally.awaiting || st.awaited;
    if (st.hot)
      d->holds.push_back(
          Hold{r, st.last_value, st.hot_since, !fresh, st.last_threshold, st.last_clear});
  }
  d->below_hottest = HottestLevel(d->holds);
  d->verdict = Judge(tally, !d->holds.empty(), answered_any);
}

// A fresh value for a rule that applies: it may adopt the node, start or complete `for`, or let
// go of a hold once the value reaches the clear threshold (hysteresis).
inline void Decider::Observe(const Rule& rule, const EffectiveThresholds& t, double v,
                             TimePoint now, bool labelled, bool owners_recorded, RuleState* st) {
  const bool over = rule.Over(t.threshold, v), cleared = rule.Cleared(t.clear_threshold, v);
  const bool adopt = (st->awaited && (owners_recorded ? !cleared : over)) ||
                     (st->held_before_gap && labelled && !cleared);
  st->awaited = st->held_before_gap = false;
  st->seen = true;
  st->last_seen = now;
  st->last_value = v;
  st->last_threshold = t.threshold;
  st->last_clear = t.clear_threshold;
  if (st->hot) {
    if (cleared) st->hot = st->pending = false;
  } else if (adopt) {
    // It held the node before and has not cooled: keep it without re-running `for`.
    st->hot = true;
    st->hot_since = now;
  } else if (over) {
    if (!st->pending) {
      st->pending = true;
      st->pending_since = now;
    }
    if (now - st->pending_since >= FromSeconds(rule.for_seconds)) {
      st->hot = true;
      st->pending = false;
      st->hot_since = now;
    }
  } else {
    st->pending = false;
  }
}

// No value for a rule that applies (its query failed, or the node's series is absent or NaN).
// As in Prometheus alerting: a series that left a successful answer restarts `for`, but a failed
// evaluation keeps the pending alert, so one query timeout does not restart a long `for`. The
// grace bounds both: past it the rule's state is dropped.
inline void Decider::NoValue(Duration grace, bool answered, TimePoint now, RuleState* st) {
  if (answered) st->pending = false;
  if (st->seen && now - st->last_seen > grace) {
    // Past the grace the hold is dropped; but a rule that held the node may take its mark back
    // when its data returns (a Prometheus outage must not make marks flap).
    const bool held = st->hot;
    *st = RuleState{};
    st->held_before_gap = held;
  }
}

// Graded marks: the hottest level any holding rule marks (the fewest levels below the hottest);
// 0 without holds.
inline size_t Decider::HottestLevel(const std::vector<Hold>& holds) const {
  size_t below_hottest = 0;
  for (size_t k = 0; k < holds.size(); ++k) {
    const size_t below = rules_[holds[k].rule].below_hottest;
    below_hottest = k == 0 ? below : std::min(below_hottest, below);
  }
  return below_hottest;
}

// The node's verdict from its tally, whether any rule holds it, and whether any query answered.
inline Verdict Decider::Judge(const Tally& tally, bool held, bool answered_any) {
  // In no rule's pool (any more): nothing may hold its mark.
  if (!tally.in_scope && answered_any) return Verdict::kCold;
  // Nothing answered: neither add nor remove a label (one removed by hand during an outage
  // stays removed). Stale holds stay in the decision's holds to say why the node was hot.
  if (!tally.evidence) return Verdict::kUnknown;
  if (held) return Verdict::kHot;
  // Adopting: a rule that may hold the mark has not reported.
  if (tally.awaiting) return Verdict::kUnknown;
  return Verdict::kCold;
}

// Forgets nodes that left the cluster (or the managed set): those this Decide did not see.
void Decider::ForgetDeparted(size_t node_count) {
  if (states_.size() <= node_count) return;
  for (auto it = states_.begin(); it != states_.end();) {
    if (it->second.generation != generation_)
      it = states_.erase(it);
    else
      ++it;
  }
}

}  // namespace ds
