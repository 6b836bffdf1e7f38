#include "replay/replay_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace ds {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The steady-clock time of a cycle at Unix time t: the decider measures `for` and grace on it.
TimePoint At(double t) { return TimePoint(FromSeconds(t)); }

}  // namespace

ReplayEngine::ReplayEngine(const RuleConfig& config, std::vector<ReplayNode> nodes,
                           double step_seconds, double grace_seconds)
    : config_(config),
      nodes_([&] {
        std::sort(nodes.begin(), nodes.end(),
                  [](const ReplayNode& a, const ReplayNode& b) { return a.name < b.name; });
        return std::move(nodes);
      }()),
      step_(step_seconds),
      judge_(config.rules, FromSeconds(grace_seconds),
             HerdCap{config.max_marked_fraction, config.max_marked},
             OutagePolicy{config.release_on_outage, config.release_after_seconds}) {
  asked_by_ = SharedQueries(config_.rules);
  for (const Rule& r : config_.rules) label_filters_.push_back(MatchLabels(r));
  std::vector<NodeIdentity> ids;
  std::vector<const Labels*> labels;
  for (const ReplayNode& n : nodes_) {
    ids.push_back(NodeIdentity{n.name, n.addresses});
    labels.push_back(&n.labels);
    names_.push_back(n.name);
  }
  matcher_ = std::make_unique<NodeMatcher>(ids);
  applies_ = RuleScope(config_.rules).Applies(labels);
  answers_.resize(config_.rules.size());
  state_.resize(nodes_.size());
  results_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) results_[i].name = nodes_[i].name;
  timeline_.held_by_rule.resize(config_.rules.size());
}

ReplayEngine::~ReplayEngine() = default;

void ReplayEngine::Run(const std::vector<double>& times, const std::vector<RuleHistory>& history) {
  const size_t rules = config_.rules.size();
  // Per rule, a reader of its query's series and of its ageQuery's, over this chunk (label
  // views made once per chunk, not per step).
  std::vector<std::optional<RangeStepReader>> readers(rules), age_readers(rules);
  for (size_t r = 0; r < rules; ++r) {
    if (asked_by_[r] != r) continue;
    if (history[r].ages != nullptr) age_readers[r].emplace(history[r].ages);
    if (history[r].series == nullptr) continue;
    readers[r].emplace(history[r].series);
    // Series that name no node, once each: the live controller reports them every cycle.
    for (const RangeSeries& s : *history[r].series)
      if (matcher_->Match(s.metric, config_.rules[r].node_label) < 0)
        unmatched_.emplace(r, s.metric);
  }
  for (double t : times) {
    if (started_ && t <= last_t_) continue;
    const TimePoint now = At(t);
    // Matching and maxAge, as Reconciler::QueryAndMatch.
    std::vector<MatchedValues> matched(rules);
    std::vector<RuleInput> inputs(rules);
    bool any_sample = false;
    std::vector<bool> queried(rules);
    std::vector<std::optional<RuleAnswer>> kept(rules);
    for (size_t r = 0; r < rules; ++r) {
      const Rule& rule = config_.rules[r];
      inputs[r].applies = &applies_[r];
      if (const size_t b = asked_by_[r]; b != r) {
        matched[r] = matched[b];
        continue;
      }
      if (answers_[r] && !RuleDue(rule, answers_[r]->started, now, step_)) {
        matched[r] = ReuseAnswer(rule, *answers_[r], names_, t);
        MaskOutOfScope(applies_[r], &matched[r].values);
        continue;
      }
      queried[r] = true;
      MatchAccumulator acc(matcher_.get(), &rule, t);
      if (readers[r]) any_sample |= readers[r]->Feed(t, &acc);
      matched[r] = std::move(acc.result());
      std::vector<double> ages;
      if (!rule.age_query.empty()) {
        UpdateAgeAccumulator age(matcher_.get(), &rule);
        if (age_readers[r]) age_readers[r]->Feed(t, &age);
        ages = age.ages();
        DropStaleValues(ages, rule.max_age_seconds, &matched[r]);
      }
      if (rule.interval_seconds > 0)
        kept[r] = KeepAnswer(rule, now, t, {names_.begin(), names_.end()}, matched[r], ages, 0);
      MaskOutOfScope(applies_[r], &matched[r].values);
    }
    // Prometheus' own downtime: no rule has a sample at all (see the header).
    // A rule not due reuses its last answer, which did not fail.
    const bool down =
        !any_sample && std::find(queried.begin(), queried.end(), true) != queried.end();
    for (size_t r = 0; r < rules; ++r) {
      const bool failed = down && queried[asked_by_[r]];
      inputs[r].failed = failed;
      inputs[r].values = failed ? nullptr : &matched[r].values;
      // A failed query is not kept as an answer: the next cycle asks again.
      if (kept[r] && !failed) answers_[r] = std::move(kept[r]);
    }
    totals_.outage_steps += down ? 1 : 0;
    Cycle(t, inputs,
          std::all_of(inputs.begin(), inputs.end(), [](const RuleInput& in) { return in.failed; }));
    last_t_ = t;
    started_ = true;
  }
}

void ReplayEngine::Cycle(double t, const std::vector<RuleInput>& inputs, bool every_query_failed) {
  const TimePoint now = At(t);
  const size_t n = nodes_.size();
  // What the nodes carry, as Reconciler::ReadMarks: here the replay's own marks.
  std::vector<NodeInput> decide(n);
  std::vector<PlanNode> plan(n);
  for (size_t i = 0; i < n; ++i) {
    const NodeMarkState& s = state_[i];
    const std::vector<size_t>* owners = s.has_record ? &s.owners : nullptr;
    decide[i] = NodeInput{names_[i], s.marked, owners};
    plan[i] = PlanNode{names_[i], s.marked, s.has_record, owners, false, s.below_hottest};
  }
  // The rebalancer's hold is not replayed (see the header): no Hold.
  const CycleJudgement judged = judge_.Judge(now, decide, plan, inputs, every_query_failed);
  const std::vector<NodeDecision>& decisions = judged.decisions;
  const CapOutcome& cap = judged.cap;
  for (size_t i : cap.capped) {
    results_[i].capped_seconds += step_;
    ++results_[i].cap_hits;
    totals_.capped_node_seconds += step_;
  }
  // How the marks on from an earlier step fare, as the rebalancer's effect figures count them
  // (its cycle reads the marks the cycle started with, and the cycle's verdicts).
  for (size_t i = 0; i < n; ++i) {
    ReplayNodeResult& res = results_[i];
    if (!state_[i].marked || res.marks.empty()) continue;
    if (!judged.cold[i]) {
      res.hot_marked_seconds += step_;
      totals_.hot_marked_node_seconds += step_;
    } else if (std::isnan(res.marks.back().relieved_at)) {
      res.marks.back().relieved_at = t;
    }
  }
  for (const LabelChange& c : judged.changes) {
    NodeMarkState& s = state_[c.node];
    const NodeDecision& d = decisions[c.node];
    ReplayNodeResult& res = results_[c.node];
    switch (c.kind) {
      case ChangeKind::kMark:
        if (!s.marked) {
          ReplayMark m;
          m.start = t;
          m.end = kNaN;
          for (size_t r : HoldingRules(d)) m.rules.push_back(config_.rules[r].name);
          m.below_hottest = d.below_hottest;
          res.marks.push_back(std::move(m));
        }
        s.marked = s.has_record = true;
        s.below_hottest = d.below_hottest;
        s.owners = HoldingRules(d);
        RecordHeld(t, d, &res);
        break;
      case ChangeKind::kRecord:
        s.has_record = true;
        s.owners = HoldingRules(d);
        if (s.marked) RecordHeld(t, d, &res);
        break;
      case ChangeKind::kUnmark:
        if (s.marked && !res.marks.empty()) res.marks.back().end = t;
        s = NodeMarkState{};
        break;
      case ChangeKind::kForget:
        s.has_record = false;
        s.owners.clear();
        break;
    }
  }
  // The step's figures, after its changes.
  uint32_t on = 0;
  std::vector<uint32_t> by_rule(config_.rules.size());
  for (size_t i = 0; i < n; ++i) {
    if (!state_[i].marked) continue;
    ++on;
    for (size_t r : HoldingRules(decisions[i])) ++by_rule[r];
  }
  totals_.max_marked_at_once = std::max<size_t>(totals_.max_marked_at_once, on);
  timeline_.times.push_back(t);
  timeline_.marked.push_back(on);
  timeline_.capped.push_back(static_cast<uint32_t>(cap.capped.size()));
  for (size_t r = 0; r < by_rule.size(); ++r) timeline_.held_by_rule[r].push_back(by_rule[r]);
}

void ReplayEngine::RecordHeld(double t, const NodeDecision& d, ReplayNodeResult* res) const {
  if (res->marks.empty()) return;
  std::vector<std::string> names;
  for (size_t r : HoldingRules(d)) names.push_back(config_.rules[r].name);
  res->marks.back().held.emplace_back(t, std::move(names));
}

ReplayResult ReplayEngine::Finish(double from, double to) const {
  ReplayResult out;
  out.from = from;
  out.to = to;
  out.step_seconds = step_;
  for (const Rule& r : config_.rules) out.rules.push_back(r.name);
  out.nodes = results_;
  out.totals = totals_;
  out.totals.unmatched_series = unmatched_.size();
  std::vector<double> relief;
  for (ReplayNodeResult& n : out.nodes) {
    for (const ReplayMark& m : n.marks) {
      const double end = std::isnan(m.end) ? to : m.end;
      n.marked_seconds += std::max(0.0, end - m.start);
      if (!std::isnan(m.relieved_at)) relief.push_back(m.relieved_at - m.start);
    }
    out.totals.marks += n.marks.size();
    out.totals.marked_node_seconds += n.marked_seconds;
  }
  std::sort(relief.begin(), relief.end());
  out.totals.relieved_marks = relief.size();
  // Nearest rank: the least time to relief that at least the share q of the marks stayed within.
  auto rank = [&relief](double q) {
    const size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(relief.size())));
    return relief[std::max<size_t>(k, 1) - 1];
  };
  if (!relief.empty()) {
    out.totals.time_to_relief_median = rank(0.5);
    out.totals.time_to_relief_p90 = rank(0.9);
  }
  out.timeline = timeline_;
  return out;
}

}  // namespace ds
