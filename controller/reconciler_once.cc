// The Reconciler's parts for a one-pass run (-once, app/once.h), apart from the loop's stages in
// reconciler.cc: the decider primed with Prometheus' history, and the plan's review.
#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <future>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include "common/log_fields.h"
#include "controller/reconciler.h"
#include "promql/range_query.h"

namespace ds {

std::vector<double> PrimeSteps(const std::vector<Rule>& rules, double now_wall, double interval) {
  double longest = 0;
  for (const Rule& r : rules)
    if (!r.predict.enabled) longest = std::max(longest, r.for_seconds);
  std::vector<double> times;
  if (!(longest > 0)) return times;
  // On the range-query grid (StepGridAtOrAfter). The last step is the newest multiple before
  // now, at most one interval back, as the loop's previous cycle would have been; the first is
  // far enough back that a node over its threshold on every step has been for `for` by the
  // cycle at now.
  const double last = StepGridAtOrAfter(now_wall, interval) - interval;
  const auto steps = static_cast<int64_t>(std::ceil(longest / interval - 1e-9)) + 1;
  for (int64_t k = steps - 1; k >= 0; --k)
    times.push_back(last - static_cast<double>(k) * interval);
  return times;
}

// Per rule, its range answers; null where the rule is not primed or shares another's query.
struct Reconciler::History {
  std::vector<double> times;
  std::vector<std::optional<RangeResult>> series, ages;
};

Status Reconciler::PrimeFromHistory(const std::atomic<bool>* stop) {
  if (!cache_->Synced()) return Status::Internal("the node list is not read yet");
  const double now_wall = clock_->WallSeconds();
  const TimePoint now = clock_->Now();
  History h;
  h.times = PrimeSteps(rules_, now_wall, options_.interval_seconds);
  if (h.times.empty()) return Status::OK();
  const double from = h.times.front(), to = h.times.back(), step = options_.interval_seconds;
  // Every rule's history at once, as a cycle sends every query at once. One request each:
  // PrimeSteps spans `for`, far fewer steps than Prometheus' limit for any sane interval.
  const size_t n = rules_.size();
  std::vector<std::future<StatusOr<RangeResult>>> q(n), ages(n);
  for (size_t r = 0; r < n; ++r) {
    if (asked_by_[r] != r || rules_[r].predict.enabled) continue;
    const LabelFilter* keep = &label_filters_[r];
    q[r] = std::async(std::launch::async, [this, r, keep, from, to, step] {
      return prom_->QueryRange(rules_[r].query, from, to, step, keep);
    });
    if (!rules_[r].age_query.empty())
      ages[r] = std::async(std::launch::async, [this, r, keep, from, to, step] {
        return prom_->QueryRange(rules_[r].age_query, from, to, step, keep);
      });
  }
  h.series.resize(n);
  h.ages.resize(n);
  Status failed;
  for (size_t r = 0; r < n; ++r) {
    for (auto [f, into, what] :
         {std::tuple{&q[r], &h.series[r], "query"}, std::tuple{&ages[r], &h.ages[r], "ageQuery"}}) {
      if (!f->valid()) continue;
      auto res = f->get();  // every future is waited for: none may outlive `this`' use
      if (!res.ok()) {
        if (failed.ok())
          failed = res.status().Prepend("rule " + rules_[r].name + ": the history of its " + what +
                                        " (for `for`)");
        continue;
      }
      *into = std::move(*res);
    }
  }
  RETURN_NOT_OK(failed);
  if (stop->load()) return Status::Cancelled("stopping");
  PrimeDecider(*cache_->Snapshot(), h, now, now_wall);
  LOG(INFO) << "primed `for` with " << h.times.size() << " past cycles of Prometheus' history"
            << Fields("from", from, "to", to, "step", step);
  return Status::OK();
}

void Reconciler::PrimeDecider(const NodeSnapshot& snap, const History& h, TimePoint now,
                              double now_wall) {
  RefreshMatcher(snap);
  // The marks and records on the nodes now: the decider adopts from them at the first step.
  const NodeMarks marks = ReadMarks(snap);
  const size_t n = rules_.size();
  std::vector<std::optional<RangeStepReader>> readers(n), age_readers(n);
  for (size_t r = 0; r < n; ++r) {
    if (h.series[r]) readers[r].emplace(&h.series[r]->series);
    if (h.ages[r]) age_readers[r].emplace(&h.ages[r]->series);
  }
  const std::vector<std::vector<uint8_t>> applies = scope_.Applies([&] {
    std::vector<const Labels*> labels;
    for (const auto& node : snap.nodes) labels.push_back(&node->labels);
    return labels;
  }());
  for (double t : h.times) {
    // Matching, maxAge and pools as QueryAndMatch (and the replay) do them, at time t.
    std::vector<MatchedValues> matched(n);
    std::vector<RuleInput> inputs(n);
    bool any_sample = false, asked_any = false;
    for (size_t r = 0; r < n; ++r) {
      const Rule& rule = rules_[r];
      inputs[r].applies = &applies[r];
      if (const size_t b = asked_by_[r]; b != r) {
        matched[r] = matched[b];
        continue;
      }
      if (!readers[r]) continue;
      asked_any = true;
      MatchAccumulator acc(matcher_.get(), &rule, t);
      any_sample |= readers[r]->Feed(t, &acc);
      matched[r] = std::move(acc.result());
      if (!rule.age_query.empty()) {
        UpdateAgeAccumulator age(matcher_.get(), &rule);
        if (age_readers[r]) age_readers[r]->Feed(t, &age);
        DropStaleValues(age.ages(), rule.max_age_seconds, &matched[r]);
      }
      MaskOutOfScope(applies[r], &matched[r].values);
    }
    // A step without a single sample is Prometheus' own downtime (as the replay takes it): every
    // query failed, which keeps `for` timers and decides nothing. A rule not primed (predict:)
    // counts as failed at every step: no evidence, its timers kept.
    const bool down = asked_any && !any_sample;
    for (size_t r = 0; r < n; ++r) {
      const bool primed = readers[asked_by_[r]].has_value();
      inputs[r].failed = down || !primed;
      inputs[r].values = inputs[r].failed ? nullptr : &matched[r].values;
    }
    // The steady time of the step: the decider measures `for` on it.
    judge_.decider().Decide(now - FromSeconds(now_wall - t), marks.decide, inputs);
  }
}

void Reconciler::ReviewPlan(const NodeMarks& marks, std::vector<MarkWrite>* writes,
                            CycleReport* report) const {
  if (!options_.one_pass) return;
  const bool any_failed = std::any_of(report->rules.begin(), report->rules.end(),
                                      [](const RuleReport& r) { return !r.ok; });
  if (any_failed) {
    // Marks to set on unmarked nodes stay; removals go, and so do the record-only writes (a
    // record rewritten without the failed rule, which holds nothing this cycle, would keep it
    // from adopting the mark in the next pass) and, with graded marks, every change of level of
    // a marked node (a hot node whose hottest rule failed would go down to warm).
    std::set<std::string_view> marked;
    for (const PlanNode& n : marks.plan)
      if (n.marked || n.partly) marked.insert(n.name);
    const size_t before = writes->size();
    std::erase_if(*writes, [&](const MarkWrite& w) {
      return w.kind != ChangeKind::kMark || marked.count(w.node) > 0;
    });
    if (writes->size() < before)
      LOG(WARNING) << "a rule's query failed: " << before - writes->size()
                   << " removal(s) and record change(s) not written (the next pass judges again)";
  }
  for (const MarkWrite& w : *writes)
    if (w.kind == ChangeKind::kMark || w.kind == ChangeKind::kUnmark)
      report->planned.push_back(MarkChange{report->started_wall, w.node,
                                           w.kind == ChangeKind::kMark, w.reason,
                                           options_.mark.LevelName(w.below_hottest)});
}

}  // namespace ds
