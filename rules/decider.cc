#include "rules/decider.h"

#include <cmath>

namespace ds {

Decider::Decider(std::vector<Rule> rules, Duration grace)
    : rules_(std::move(rules)), grace_(grace) {}

bool Decider::Over(const Rule& r, double v) const {
  return r.op == Comparison::kGreater ? v > r.threshold : v < r.threshold;
}

bool Decider::Cleared(const Rule& r, double v) const {
  return r.op == Comparison::kGreater ? v <= r.clear_threshold : v >= r.clear_threshold;
}

std::vector<NodeDecision> Decider::Decide(TimePoint now, const std::vector<NodeInput>& nodes,
                                          const std::vector<RuleInput>& inputs) {
  ++generation_;
  const size_t nrules = rules_.size();
  std::vector<NodeDecision> out(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto [it, created] = states_.try_emplace(std::string(nodes[i].name));
    NodeState& ns = it->second;
    if (created) {
      ns.rules.resize(nrules);
      ns.first_seen = now;
    }
    ns.generation = generation_;
    bool evidence = false;  // some query succeeded this cycle
    bool any_hot = false;
    NodeDecision& d = out[i];
    for (size_t r = 0; r < nrules; ++r) {
      const Rule& rule = rules_[r];
      RuleState& st = ns.rules[r];
      const RuleInput& in = inputs[r];
      double v = std::nan("");
      if (!in.failed && in.values != nullptr) {
        evidence = true;
        v = (*in.values)[i];
      }
      bool fresh = !std::isnan(v);
      if (fresh) {
        ns.ever_had_value = true;
        bool first = !st.seen;
        st.seen = true;
        st.last_seen = now;
        st.last_value = v;
        if (st.hot) {
          if (Cleared(rule, v)) st.hot = st.pending = false;
        } else if (first && nodes[i].labelled && !Cleared(rule, v)) {
          // Already labelled and not cooled: keep it without re-running `for`.
          st.hot = true;
          st.hot_since = now;
        } else if (Over(rule, v)) {
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
        st.pending = false;  // `for` restarts after a gap, as in Prometheus alerting
        if (st.seen && now - st.last_seen > grace_) st = RuleState{};
      }
      if (st.hot) {
        any_hot = true;
        d.holds.push_back(Hold{r, st.last_value, st.hot_since, !fresh});
      }
    }
    if (any_hot) {
      d.verdict = Verdict::kHot;
    } else if (!evidence) {
      d.verdict = Verdict::kUnknown;
    } else if (nodes[i].labelled && !ns.ever_had_value && now - ns.first_seen <= grace_) {
      d.verdict = Verdict::kUnknown;  // labelled before we started; wait for data
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
  return out;
}

}  // namespace ds
