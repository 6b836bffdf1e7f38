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

bool Decider::Over(const Rule& r, const EffectiveThresholds& t, double v) {
  return r.op == Comparison::kGreater ? v > t.threshold : v < t.threshold;
}

bool Decider::Cleared(const Rule& r, const EffectiveThresholds& t, double v) {
  return r.op == Comparison::kGreater ? v <= t.clear_threshold : v >= t.clear_threshold;
}

std::vector<NodeDecision> Decider::Decide(TimePoint now, const std::vector<NodeInput>& nodes,
                                          const std::vector<RuleInput>& inputs) {
  ++generation_;
  const size_t nrules = rules_.size();
  thresholds_.resize(nrules);
  for (size_t r = 0; r < nrules; ++r)
    thresholds_[r] = ComputeThresholds(rules_[r], inputs[r].failed ? nullptr : inputs[r].values);
  // A rule answered when its query succeeded and, if relative, its mean is known.
  auto answered_rule = [&](size_t r) {
    return !inputs[r].failed && inputs[r].values != nullptr && thresholds_[r].known;
  };
  bool answered_any = false;  // some query succeeded this cycle
  for (size_t r = 0; r < nrules; ++r) answered_any = answered_any || answered_rule(r);
  std::vector<NodeDecision> out(nodes.size());
  // Only Decide inserts into states_; empty means new or Reset(): the remembered entries are gone.
  if (states_.empty()) by_position_.clear();
  by_position_.resize(nodes.size(), nullptr);
  for (size_t i = 0; i < nodes.size(); ++i) {
    // The node list is usually last cycle's, in the same order: node i's entry is then found by
    // one short compare instead of a string hash and a bucket chase (10,000 nodes a cycle).
    auto* entry = by_position_[i];
    bool created = false;
    if (entry == nullptr || entry->first != nodes[i].name) {
      auto [it, inserted] = states_.try_emplace(std::string(nodes[i].name));
      entry = &*it;
      created = inserted;
      by_position_[i] = entry;
    }
    NodeState& ns = entry->second;
    if (created) {
      ns.rules.resize(nrules);
      ns.first_seen = now;
      if (nodes[i].labelled) {
        // Adopting a mark set before (by us before a restart, or by another leader): wait for
        // the rules that may hold it. A record that names none of the current rules (each renamed
        // or removed since) says nothing about them: adopt by the threshold, as without a
        // record.
        ns.owners_recorded = nodes[i].owners != nullptr && !nodes[i].owners->empty();
        if (ns.owners_recorded) {
          for (size_t r : *nodes[i].owners)
            if (r < nrules) ns.rules[r].awaited = true;
        } else {
          for (auto& st : ns.rules) st.awaited = true;
        }
      }
    }
    // Adoption waits at most the grace time for a rule to report, counted from the first cycle
    // in which any query answered: a restart during a Prometheus outage longer than the grace
    // must still adopt when data returns, not start `for` again on a marked node.
    if (answered_any && !ns.adoption_clock_started) {
      ns.adoption_clock_started = true;
      ns.adoption_since = now;
    }
    const bool adopting_window = !ns.adoption_clock_started || now - ns.adoption_since <= grace_;
    bool awaiting = false;  // some rule may still adopt the node
    ns.generation = generation_;
    bool evidence = false;  // some query succeeded this cycle
    bool any_hot = false;
    bool in_scope = false;  // some rule applies to the node
    NodeDecision& d = out[i];
    // Room for every hold at once: growing 1, 2, 4 cost up to three allocations per hot node.
    size_t hot_rules = 0;
    for (size_t r = 0; r < nrules; ++r) hot_rules += ns.rules[r].hot ? 1 : 0;
    if (hot_rules > 0) d.holds.reserve(std::min(nrules, hot_rules + 1));
    for (size_t r = 0; r < nrules; ++r) {
      const Rule& rule = rules_[r];
      RuleState& st = ns.rules[r];
      const RuleInput& in = inputs[r];
      if (in.applies != nullptr && !in.applies->empty() && !(*in.applies)[i]) {
        st = RuleState{};  // out of its pool: no hold, no timer, nothing to adopt
        continue;
      }
      in_scope = true;
      const EffectiveThresholds& t = thresholds_[r];
      // A relative rule without its mean counts as failed: no evidence, `for` timers kept.
      const bool answered = answered_rule(r);
      double v = std::nan("");
      if (answered) {
        evidence = true;
        v = (*in.values)[i];
      }
      bool fresh = !std::isnan(v);
      // A mark must still be on for a rule to adopt it (it may have been removed meanwhile).
      if (st.awaited && (!nodes[i].labelled || !adopting_window)) st.awaited = false;
      if (fresh) {
        const bool adopt =
            (st.awaited && (ns.owners_recorded ? !Cleared(rule, t, v) : Over(rule, t, v))) ||
            (st.held_before_gap && nodes[i].labelled && !Cleared(rule, t, v));
        st.awaited = st.held_before_gap = false;
        st.seen = true;
        st.last_seen = now;
        st.last_value = v;
        st.last_threshold = t.threshold;
        st.last_clear = t.clear_threshold;
        if (st.hot) {
          if (Cleared(rule, t, v)) st.hot = st.pending = false;
        } else if (adopt) {
          // It held the node before and has not cooled: keep it without re-running `for`.
          st.hot = true;
          st.hot_since = now;
        } else if (Over(rule, t, v)) {
          if (!st.pending) {
            st.pending = true;
            st.pending_since = now;
          }
          if (now - st.pending_since >= FromSeconds(rule.for_seconds)) {
            st.hot = true;
            st.pending = false;
            st.hot_since = now;
          }
        } else {
          st.pending = false;
        }
      } else {
        // As in Prometheus alerting: a series that left a successful answer restarts `for`, but
        // a failed evaluation keeps the pending alert, so one query timeout does not restart a
        // long `for`. The grace bounds both: past it the rule's state is dropped.
        if (answered) st.pending = false;
        if (st.seen && now - st.last_seen > rule_grace_[r]) {
          // Past the grace the hold is dropped; but a rule that held the node may take its mark
          // back when its data returns (a Prometheus outage must not make marks flap).
          const bool held = st.hot;
          st = RuleState{};
          st.held_before_gap = held;
        }
      }
      awaiting = awaiting || st.awaited;
      if (st.hot) {
        any_hot = true;
        d.holds.push_back(
            Hold{r, st.last_value, st.hot_since, !fresh, st.last_threshold, st.last_clear});
      }
    }
    for (size_t k = 0; k < d.holds.size(); ++k) {
      const size_t below = rules_[d.holds[k].rule].below_hottest;
      d.below_hottest = k == 0 ? below : std::min(d.below_hottest, below);
    }
    if (!in_scope && answered_any) {
      d.verdict = Verdict::kCold;  // in no rule's pool (any more): nothing may hold its mark
    } else if (!evidence) {
      // Nothing answered: neither add nor remove a label (one removed by hand during an outage
      // stays removed). Stale holds stay in d.holds to say why the node was hot.
      d.verdict = Verdict::kUnknown;
    } else if (any_hot) {
      d.verdict = Verdict::kHot;
    } else if (awaiting) {
      d.verdict = Verdict::kUnknown;  // adopting: a rule that may hold the mark has not reported
    } else {
      d.verdict = Verdict::kCold;
    }
  }
  // Forget nodes that left the cluster (or the managed set).
  if (states_.size() > nodes.size()) {
    for (auto it = states_.begin(); it != states_.end();) {
      if (it->second.generation != generation_)
        it = states_.erase(it);
      else
        ++it;
    }
  }
  // by_position_ points only at entries seen this cycle (a repeated name points twice at one
  // entry, which is kept): none was erased above.
  return out;
}

}  // namespace ds
