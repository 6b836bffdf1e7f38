#include "controller/reconciler.h"

#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <set>
#include <sstream>
#include <string_view>

#include "common/label_selector.h"
#include "common/log_fields.h"
#include "controller/eviction_records.h"

namespace ds {
namespace {

double CpuSeconds(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
double ProcessCpuSeconds() { return CpuSeconds(CLOCK_PROCESS_CPUTIME_ID); }
double ThreadCpuSeconds() { return CpuSeconds(CLOCK_THREAD_CPUTIME_ID); }

const char* OpName(Comparison op) { return op == Comparison::kGreater ? ">" : "<"; }

// 91.5, 0.25; large values (bytes: memory.available) whole, "159992000" rather than
// "1.59992e+08", which reads badly in a log line and hides digits.
std::string Num(double v) {
  std::ostringstream os;
  if (std::abs(v) >= 1e6 && std::abs(v) < 1e15) {
    os << std::fixed;
    os.precision(0);
  } else {
    os.precision(6);
  }
  os << v;
  return os.str();
}

// "node-3 (312 s), node-9 (no update time)", the first few of a rule's stale values.
std::string DescribeStale(const std::vector<std::pair<size_t, double>>& stale,
                          const NodeSnapshot& snap) {
  constexpr size_t kExamples = 5;
  std::string s;
  for (size_t k = 0; k < stale.size() && k < kExamples; ++k) {
    const auto& [node, age] = stale[k];
    if (!s.empty()) s += ", ";
    s += node < snap.nodes.size() ? snap.nodes[node]->name : "#" + std::to_string(node);
    s += std::isnan(age) ? " (no update time)" : " (" + Num(std::round(age)) + " s)";
  }
  if (stale.size() > kExamples) s += ", ...";
  return s;
}

// The mean a relative rule's effective threshold came from (rules/decider.h adds the offset in
// the operator's direction); holds keep the threshold, not the mean.
double RelativeMean(const Rule& r, double effective_threshold) {
  return r.op == Comparison::kGreater ? effective_threshold - r.threshold
                                      : effective_threshold + r.threshold;
}

}  // namespace

NodeCacheOptions CycleCacheOptions(const RuleConfig& rules) {
  NodeCacheOptions o;
  o.label_selector = rules.node_selector;
  std::vector<std::string> keys = RuleSelectorKeys(rules.rules);
  if (rules.rebalance.enabled && !rules.rebalance.node_selector.empty())
    if (auto sel = LabelSelector::Parse(rules.rebalance.node_selector); sel.ok())
      for (std::string& k : sel->Keys()) keys.push_back(std::move(k));
  o.keep_label_keys = {rules.mark.key};
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (std::string& k : keys)
    if (k != rules.mark.key) o.keep_label_keys.push_back(std::move(k));
  // The mirror mode's mark, which has no record, is taken off a node that leaves (the cycle).
  if (rules.rebalance.enabled && rules.rebalance.underused.enabled)
    o.departure_labels = {{rules.mark.key, rules.rebalance.underused.value}};
  return o;
}

Reconciler::Reconciler(const RuleConfig& rules, ReconcilerOptions options, NodeCache* cache,
                       PrometheusClient* prom, KubeApi* kube, const Clock* clock,
                       const Leadership* leadership, Rebalancer* rebalancer)
    : rules_(rules.rules),
      options_(std::move(options)),
      cache_(cache),
      prom_(prom),
      clock_(clock),
      leadership_(leadership),
      kube_(kube),
      rebalancer_(rebalancer),
      reference_query_(rules.rebalance.reference_query),
      underused_value_(rules.rebalance.enabled && rules.rebalance.underused.enabled
                           ? rules.rebalance.underused.value
                           : std::string()),
      judge_(rules.rules, FromSeconds(options_.grace_seconds),
             HerdCap{rules.max_marked_fraction, rules.max_marked},
             OutagePolicy{rules.release_on_outage, rules.release_after_seconds}),
      writer_(options_.writes, options_.mark, kube, clock),
      eviction_records_(options_.mark, cache, &writer_) {
  IndexRules();
}

void Reconciler::IndexRules() {
  label_filters_.clear();
  rule_index_.clear();
  for (const auto& r : rules_) label_filters_.push_back(MatchLabels(r));
  for (size_t i = 0; i < rules_.size(); ++i) rule_index_.emplace(rules_[i].name, i);
  scope_ = RuleScope(rules_);
  asked_by_ = SharedQueries(rules_);
  answers_.assign(rules_.size(), std::nullopt);  // a reload queries every rule anew
}

void Reconciler::Reload(const RuleConfig& rules) {
  {
    MutexLock l(&mu_);
    pending_reload_ = rules;
  }
  Trigger();
}

void Reconciler::ApplyReload() {
  std::optional<RuleConfig> next;
  {
    MutexLock l(&mu_);
    next.swap(pending_reload_);
  }
  if (!next) return;
  size_t kept = 0;
  for (const Rule& r : next->rules) kept += std::count(rules_.begin(), rules_.end(), r) > 0 ? 1 : 0;
  const double grace = MissingDataGraceSeconds(*next, options_.interval_seconds);
  judge_.Rebase(next->rules, FromSeconds(grace),
                HerdCap{next->max_marked_fraction, next->max_marked},
                OutagePolicy{next->release_on_outage, next->release_after_seconds});
  rules_ = next->rules;
  IndexRules();
  predictions_.Retain(rules_);
  // A removed rule's series go now (its query histogram and error count), not at the next
  // restart: left, they would look like a rule that still runs.
  std::vector<std::string> names;
  for (const Rule& r : rules_) names.push_back(r.name);
  durations_.RetainQueries(names);
  {
    MutexLock l(&mu_);
    std::erase_if(counters_.query_errors, [&names](const auto& e) {
      return std::find(names.begin(), names.end(), e.first) == names.end();
    });
  }
  LOG(INFO) << "rules reloaded: " << rules_.size() << " rules, " << kept
            << " of them unchanged (they keep their state); grace " << grace << " s"
            << Fields("file", next->source);
}

void Reconciler::RunCycle(const std::atomic<bool>* stop) {
  const Stopwatch cycle_time;
  const double cpu0 = ProcessCpuSeconds();
  CycleReport report;
  report.started_wall = clock_->WallSeconds();
  {
    MutexLock l(&mu_);
    report.cycle = ++counters_.cycles;
  }
  ApplyReload();
  if (!MayRun(&report)) return Publish(std::move(report));

  auto snap = cache_->Snapshot();
  report.managed_nodes = snap->nodes.size();
  RefreshMatcher(*snap);
  Evidence evidence = QueryAndMatch(*snap, &report);
  MarkProgress();
  const TimePoint now = clock_->Now();
  const NodeMarks marks = ReadMarks(*snap);
  if (rebalancer_ != nullptr) rebalancer_->BeginCycle(term_);  // a new leader's pods in motion
  const CycleJudgement judged = Judge(*snap, marks, evidence, now, &report);
  const std::vector<NodeDecision>& decisions = judged.decisions;
  const std::vector<bool>& cold = judged.cold;
  std::vector<MarkWrite> writes = Plan(*snap, marks, judged, now, &report);
  ReviewPlan(marks, &writes, &report);
  PlanDepartures(&writes);
  const std::vector<MarkWrite> written = Write(writes, stop, &report);
  UnmarkDepartedUnderused(stop);
  RememberChanges(written);
  PostMarkEvents(*snap, written, stop);
  const double rebalance_cpu0 = ThreadCpuSeconds();
  Relieve(*snap, marks, evidence, decisions, cold, stop);
  report.rebalance_cpu_seconds = ThreadCpuSeconds() - rebalance_cpu0;
  ReportHolds(*snap, decisions, now, &report);
  ReportTable(*snap, marks, evidence, decisions, cold, &report);

  report.duration_seconds = cycle_time.Seconds();
  durations_.ObserveCycle(report.duration_seconds);
  report.cpu_seconds = ProcessCpuSeconds() - cpu0;
  VLOG(1) << "cycle " << report.cycle << ": " << snap->nodes.size() << " nodes, "
          << report.hot_nodes << " hot, " << writes.size() << " changes, "
          << report.duration_seconds * 1000 << " ms"
          << Fields("v", 1, "cycle", report.cycle, "term", term_);
  Publish(std::move(report));
}

bool Reconciler::MayRun(CycleReport* report) {
  // A standby or an unsynced cache relieves nothing: the alerts it receives go stale.
  auto drop_alerts = [this] {
    MutexLock l(&mu_);
    alerts_.clear();
  };
  if (!cache_->Synced()) {
    drop_alerts();
    report->skipped = true;
    return false;
  }
  if (leadership_ == nullptr) return true;
  if (!leadership_->IsLeader()) {
    drop_alerts();
    report->skipped = report->standby = true;
    return false;
  }
  if (uint64_t term = leadership_->Term(); term != term_) {
    // Hysteresis timers and last seen values from an earlier term are stale (another replica
    // decided meanwhile): start over as after a restart, adopting the labels on the nodes.
    if (term_ != 0)
      LOG(INFO) << "leader again: starting from the labels in the cluster" << Fields("term", term);
    judge_.Reset();
    term_ = term;
  }
  return true;
}

void Reconciler::RefreshMatcher(const NodeSnapshot& snap) {
  if (matcher_ != nullptr && matcher_topology_ == snap.topology) return;
  std::vector<NodeIdentity> ids;
  ids.reserve(snap.nodes.size());
  for (const auto& n : snap.nodes) ids.push_back(NodeIdentity{n->name, n->addresses});
  matcher_ = std::make_unique<NodeMatcher>(ids);
  matcher_topology_ = snap.topology;
}

// The queries of one cycle, sent: one per rule that is due (and its ageQuery), each decoding
// straight into its accumulator.
struct Reconciler::Queries {
  std::vector<bool> due;  // rules[].interval: a rule not due reuses its last answer
  std::vector<std::unique_ptr<MatchAccumulator>> acc;
  std::vector<std::unique_ptr<UpdateAgeAccumulator>> ages;
  std::vector<std::future<StatusOr<QueryResult>>> futures, age_futures;
  std::vector<Stopwatch> started;
};

Reconciler::Queries Reconciler::SendQueries(TimePoint now, double now_wall) {
  bool query_all = false;
  {
    MutexLock l(&mu_);
    std::swap(query_all, query_all_);
  }
  Queries q;
  q.due.resize(rules_.size());
  for (size_t r = 0; r < rules_.size(); ++r)
    q.due[r] = query_all || !answers_[r] ||
               RuleDue(rules_[r], answers_[r]->started, now, options_.interval_seconds);
  q.ages.resize(rules_.size());
  q.age_futures.resize(rules_.size());
  q.started.resize(rules_.size());
  for (const auto& rule : rules_)
    q.acc.push_back(std::make_unique<MatchAccumulator>(matcher_.get(), &rule, now_wall));
  for (size_t r = 0; r < rules_.size(); ++r) {
    q.started[r] = Stopwatch();
    if (asked_by_[r] != r || !q.due[r]) {  // a graded rule's level shares its rule's answer
      q.futures.emplace_back();
      continue;
    }
    q.futures.push_back(std::async(std::launch::async, [this, r, a = q.acc[r].get()] {
      if (rules_[r].predict.enabled) return predictions_.Query(rules_[r], &label_filters_[r], a);
      return prom_->Query(rules_[r].query, &label_filters_[r], a);
    }));
    if (rules_[r].age_query.empty()) continue;
    q.ages[r] = std::make_unique<UpdateAgeAccumulator>(matcher_.get(), &rules_[r]);
    q.age_futures[r] = std::async(std::launch::async, [this, r, a = q.ages[r].get()] {
      return prom_->Query(rules_[r].age_query, &label_filters_[r], a);
    });
  }
  return q;
}

void Reconciler::ReuseLastAnswer(size_t r, const std::vector<std::string_view>& names,
                                 double now_wall, Evidence* ev, RuleReport* rr) {
  const RuleAnswer& a = *answers_[r];
  ev->matched[r] = ReuseAnswer(rules_[r], a, names, now_wall);
  MaskOutOfScope(ev->applies[r], &ev->matched[r].values);
  rr->ok = rr->reused = true;
  rr->samples = a.samples;
  rr->unmatched = a.unmatched;
  rr->duplicates = a.duplicates;
  rr->matched = rr->samples - rr->unmatched;
  rr->too_old = ev->matched[r].stale.size();
  ev->inputs[r].values = &ev->matched[r].values;
}

bool Reconciler::TakeAnswer(size_t r, Queries* q, const NodeSnapshot& snap,
                            const std::vector<std::string_view>& names, TimePoint now,
                            double now_wall, Evidence* ev, CycleReport* report) {
  RuleReport& rr = report->rules[r];
  auto res = q->futures[r].get();
  if (q->age_futures[r].valid()) {
    // Without its nodes' update times the rule cannot tell a fresh value from a dead pusher's:
    // it counts as failed (verdicts kept for the grace time), not as having no values.
    auto age = q->age_futures[r].get();
    if (res.ok() && !age.ok()) res = age.status().Prepend("ageQuery");
    if (age.ok()) {
      report->phases.query = std::max(report->phases.query, age->fetch_seconds);
      report->phases.decode += age->decode_seconds;
    }
  }
  rr.query_seconds = q->started[r].Seconds();
  durations_.ObserveQuery(rr.name, rr.query_seconds);
  if (rules_[r].predict.enabled) {
    rr.predict_days = rules_[r].predict.days;
    rr.predict_days_held = predictions_.DaysHeld(rr.name);
  }
  if (!res.ok()) {
    rr.error = res.status().ToString();
    ev->inputs[r].failed = true;
    if (throttle_.ShouldLog("query:" + rr.name + ":" + StatusCodeName(res.status().code()),
                            clock_->Now()))
      LOG(WARNING) << "query failed (keeping its last verdicts for the grace time)"
                   << Fields("rule", rr.name, "err", rr.error);
    MutexLock l(&mu_);
    ++counters_.query_errors[rr.name];
    return false;
  }
  rr.ok = true;
  rr.warnings = res->warnings;
  rr.samples = res->sample_count;
  report->phases.query = std::max(report->phases.query, res->fetch_seconds);
  report->phases.decode += res->decode_seconds;  // includes matching: they are one pass
  ev->matched[r] = std::move(q->acc[r]->result());
  if (q->ages[r] != nullptr)
    DropStaleValues(q->ages[r]->ages(), rules_[r].max_age_seconds, &ev->matched[r]);
  rr.unmatched = ev->matched[r].unmatched;
  rr.duplicates = ev->matched[r].duplicates;
  rr.matched = rr.samples - rr.unmatched;
  rr.too_old = ev->matched[r].stale.size();
  if (rules_[r].interval_seconds > 0)
    answers_[r] = KeepAnswer(rules_[r], now, now_wall, {names.begin(), names.end()}, ev->matched[r],
                             q->ages[r] ? q->ages[r]->ages() : std::vector<double>{}, rr.samples);
  MaskOutOfScope(ev->applies[r], &ev->matched[r].values);
  ev->inputs[r].values = &ev->matched[r].values;
  LogAnswerProblems(r, rr, ev->matched[r], snap, res->warnings);
  return true;
}

void Reconciler::LogAnswerProblems(size_t r, const RuleReport& rr, const MatchedValues& matched,
                                   const NodeSnapshot& snap,
                                   const std::vector<std::string>& warnings) {
  if (!warnings.empty() && throttle_.ShouldLog("warn:" + rr.name, clock_->Now()))
    LOG(WARNING) << "Prometheus warnings" << Fields("rule", rr.name, "warning", warnings.front());
  if (rr.unmatched > 0 && throttle_.ShouldLog("unmatched:" + rr.name, clock_->Now())) {
    std::string ex;
    for (const auto& n : matched.unmatched_names) ex += " " + n;
    LOG(WARNING) << rr.unmatched << " series name no known node; they are ignored. e.g." << ex
                 << Fields("rule", rr.name);
  }
  if (rr.too_old > 0 && throttle_.ShouldLog("too-old:" + rr.name, clock_->Now()))
    LOG(WARNING) << rr.too_old << " node value(s) older than maxAge "
                 << Num(rules_[r].max_age_seconds)
                 << " s count as missing data (the pusher or exporter stopped?): "
                 << DescribeStale(matched.stale, snap) << Fields("rule", rr.name);
}

Reconciler::Evidence Reconciler::QueryAndMatch(const NodeSnapshot& snap, CycleReport* report) {
  // One query per rule, all at once: the cycle waits for the slowest, not the sum. Samples
  // stream straight into per-node values (decode and match fused, no Sample objects). A rule's
  // ageQuery runs alongside its query.
  const double now_wall = clock_->WallSeconds();
  const TimePoint now = clock_->Now();
  Queries q = SendQueries(now, now_wall);
  Evidence ev;
  ev.matched.resize(rules_.size());
  ev.inputs.resize(rules_.size());
  report->rules.resize(rules_.size());
  size_t failed = 0;
  std::vector<std::string_view> names;
  for (const auto& n : snap.nodes) names.push_back(n->name);
  ev.applies = scope_.Applies([&] {
    std::vector<const Labels*> labels;
    for (const auto& n : snap.nodes) labels.push_back(&n->labels);
    return labels;
  }());
  for (size_t r = 0; r < rules_.size(); ++r) {
    ev.inputs[r].applies = &ev.applies[r];
    if (const size_t b = asked_by_[r]; b != r) {  // b < r: its answer is in
      report->rules[r] = report->rules[b];
      report->rules[r].name = rules_[r].name;
      ev.inputs[r].failed = ev.inputs[b].failed;
      failed += ev.inputs[r].failed ? 1 : 0;
      if (ev.inputs[b].values == nullptr) continue;
      ev.matched[r] = ev.matched[b];
      ev.inputs[r].values = &ev.matched[r].values;
      continue;
    }
    report->rules[r].name = rules_[r].name;
    if (!q.due[r])
      ReuseLastAnswer(r, names, now_wall, &ev, &report->rules[r]);
    else if (!TakeAnswer(r, &q, snap, names, now, now_wall, &ev, report))
      ++failed;
  }
  report->all_queries_failed = !rules_.empty() && failed == rules_.size();
  return ev;
}

Reconciler::NodeMarks Reconciler::ReadMarks(const NodeSnapshot& snap) {
  const size_t n = snap.nodes.size();
  NodeMarks m;
  m.decide.resize(n);
  m.plan.resize(n);
  m.record_at.assign(n, NodeMarks::kNoRecord);
  m.owners.resize(n);
  m.owned.resize(n);
  std::vector<Mark> levels;  // graded marks: the mark at each level, hottest first
  for (size_t k = 0; k < options_.mark.LevelCount(); ++k) levels.push_back(options_.mark.Below(k));
  for (size_t i = 0; i < n; ++i) {
    const NodeInfo& node = *snap.nodes[i];
    const std::string* text = FindLabel(node.annotations, kHeldByAnnotation);
    auto record =
        text == nullptr ? StatusOr<Ownership>(Status::NotFound("")) : ParseOwnership(*text);
    // Graded marks: everything below reads the level the node is at (rules/ownership.h).
    const size_t level = levels.size() > 1 ? NodeMarkLevel(options_.mark, node.labels, node.taints,
                                                           record.ok() ? &*record : nullptr)
                                           : 0;
    const Mark& mark = levels[level];
    // Which parts of our mark on the node are ours (rules/ownership.h): a taint only where our
    // record names it; one no record of ours names (put there by hand, or by another tool) is
    // never removed. A hot node that carries one is marked with a record saying so
    // (taintNotOurs): it then counts as marked, and the taint still is not ours.
    auto read_marks = [&](const Ownership* record) {
      const OwnedParts owned = OwnedMarkParts(mark, node.labels, node.taints, record);
      const bool taint_on =
          owned.taint || (record != nullptr && record->taint_not_ours && mark.TaintOn(node.taints));
      const bool marked = (!mark.UsesLabel() || owned.label) && (!mark.UsesTaint() || taint_on);
      m.decide[i].labelled = m.plan[i].marked = marked;
      m.plan[i].partly = !marked && owned.any();
      m.owned[i] = owned;
    };
    m.decide[i] = NodeInput{node.name, false, nullptr};
    m.plan[i] = PlanNode{node.name, false, text != nullptr, nullptr, false, level};
    read_marks(nullptr);
    if (text == nullptr) continue;
    if (!record.ok()) {
      if (throttle_.ShouldLog("record:" + node.name, clock_->Now()))
        LOG(WARNING) << "unreadable ownership record: it is treated as having no record"
                     << Fields("node", node.name, "err", record.status().message());
      continue;
    }
    // A record of another mark (the label or taint, or the mode, was changed in rule.yaml) says
    // nothing about ours, and is left alone: it is how `-cleanup` finds that mark.
    if (!RecordNamesMark(*record, mark)) {
      m.plan[i].has_record = false;
      continue;
    }
    read_marks(&*record);
    for (const OwnerRule& r : record->rules)
      if (auto it = rule_index_.find(r.rule); it != rule_index_.end())
        m.owners[i].push_back(it->second);
    std::sort(m.owners[i].begin(), m.owners[i].end());
    m.owners[i].erase(std::unique(m.owners[i].begin(), m.owners[i].end()), m.owners[i].end());
    m.record_at[i] = static_cast<uint32_t>(m.records.size());
    m.records.push_back(std::move(*record));
  }
  // Pointers last: `owners` no longer moves.
  for (size_t i = 0; i < n; ++i) {
    if (m.record(i) == nullptr) continue;
    m.decide[i].owners = &m.owners[i];
    m.plan[i].recorded = &m.owners[i];
  }
  return m;
}

CycleJudgement Reconciler::Judge(const NodeSnapshot& snap, const NodeMarks& marks,
                                 const Evidence& evidence, TimePoint now, CycleReport* report) {
  const Stopwatch t;
  CycleJudgement judged =
      judge_.Judge(now, marks.decide, marks.plan, evidence.inputs, report->all_queries_failed,
                   [&](std::vector<NodeDecision>* d) { HoldForRebalance(marks, d); });
  report->phases.decide = t.Seconds();
  report->outage_seconds = judged.outage_seconds;
  report->releasing = judged.releasing;
  if (judged.released > 0 && throttle_.ShouldLog("outage-release", now))
    LOG(WARNING) << "no query has answered for " << static_cast<int64_t>(report->outage_seconds)
                 << " s (onPrometheusDown: release, releaseAfter "
                 << judge_.outage_policy().release_after_seconds
                 << " s): removing the marks, within the write limits";
  ReportCap(snap, judged.cap, report);
  const std::vector<EffectiveThresholds>& eff = judge_.decider().thresholds();
  for (size_t r = 0; r < rules_.size() && r < eff.size() && r < report->rules.size(); ++r) {
    if (rules_[r].relative_to == Rule::Relative::kNone) continue;
    RuleReport& rr = report->rules[r];
    rr.relative = true;
    rr.mean_known = eff[r].known;
    rr.mean = eff[r].mean;
    rr.mean_values = eff[r].count;
    if (rr.ok && !eff[r].known && throttle_.ShouldLog("mean:" + rr.name, now))
      LOG(WARNING) << "only " << eff[r].count << " node(s) have a value, fewer than minNodes "
                   << rules_[r].min_nodes
                   << ": no mean, so no verdicts this cycle (last ones kept for the grace time)"
                   << Fields("rule", rr.name);
  }
  return judged;
}

std::vector<MarkWrite> Reconciler::Plan(const NodeSnapshot& snap, const NodeMarks& marks,
                                        const CycleJudgement& judged, TimePoint now,
                                        CycleReport* report) const {
  const Stopwatch t;
  const double now_wall = clock_->WallSeconds();
  const std::vector<NodeDecision>& decisions = judged.decisions;
  std::vector<MarkWrite> writes;
  for (const LabelChange& c : judged.changes) {
    MarkWrite w;
    const NodeInfo& node = *snap.nodes[c.node];
    w.node = node.name;
    w.kind = c.kind;
    if (options_.mark.UsesTaint())
      w.read = MarkWrite::Read{node.resource_version, node.labels, node.taints};
    const NodeDecision& d = decisions[c.node];
    // Graded marks: a mark goes to the level the holds say, a removal takes the node's own.
    const bool to_holds = c.kind == ChangeKind::kMark || c.kind == ChangeKind::kRecord;
    w.below_hottest = to_holds ? d.below_hottest : marks.plan[c.node].below_hottest;
    switch (c.kind) {
      case ChangeKind::kMark:
      case ChangeKind::kRecord:
        // A taint equal to ours that is on the node but not ours (put there by hand) is
        // recorded as such, not adopted: it is never removed.
        w.record = RecordFor(d, marks.record(c.node),
                             options_.mark.UsesTaint() &&
                                 options_.mark.Below(w.below_hottest).TaintOn(node.taints) &&
                                 !marks.owned[c.node].taint,
                             now, now_wall);
        w.reason = DescribeHolds(d);
        break;
      case ChangeKind::kUnmark:
        w.had_record = marks.plan[c.node].has_record;
        w.owned = marks.owned[c.node];
        w.reason = report->releasing
                       ? "Prometheus has not answered for " +
                             std::to_string(static_cast<int64_t>(report->outage_seconds)) +
                             " s (onPrometheusDown: release)"
                       : "every rule is below its clear threshold";
        break;
      case ChangeKind::kForget:
        w.reason = "a record without our mark";
        break;
    }
    writes.push_back(std::move(w));
  }
  report->phases.plan = t.Seconds();
  return writes;
}

void Reconciler::UnmarkDepartedUnderused(const std::atomic<bool>* stop) {
  WriteHooks hooks;
  hooks.gate = [this, stop, planned_in = term_] { return MaySend(stop, planned_in); };
  hooks.on_progress = [this] { MarkProgress(); };
  for (auto it = underused_departed_.begin(); it != underused_departed_.end();) {
    NodeWrite w;
    w.node = it->first;
    // Conditional: a value written meanwhile (an operator's, our hot mark) is not ours.
    w.edit.label = {NodeEdit::Op::kRemove, options_.mark.key, underused_value_};
    // The drain record goes with the mark (in the same JSON Patch, which fails if it is gone).
    if (it->second.drain_record)
      w.edit.annotation = {NodeEdit::Op::kRemove, kLastDrainAnnotation, ""};
    w.reason = "it left the managed set with the underused mark of rebalance.underused";
    const EditOutcome out = writer_.WriteEdit(w, hooks, stop);
    // Tried again next cycle only when nothing was decided (the gate closed, a brownout), and
    // not for ever: -cleanup takes what a long outage left.
    const bool again =
        out.end == WriteEnd::kRetryLater && !out.dry_run &&
        (out.status.code() == StatusCode::kCancelled || ++it->second.tries < kUnmarkDepartedTries);
    if (!again && out.end == WriteEnd::kRetryLater && !out.dry_run)
      LOG(WARNING) << "the underused mark stays on node " << it->first << ", which left the "
                   << "managed set: removing it failed " << kUnmarkDepartedTries
                   << " cycles in a row (" << out.status.ToString() << "); -cleanup removes it";
    it = again ? std::next(it) : underused_departed_.erase(it);
  }
}

void Reconciler::PlanDepartures(std::vector<MarkWrite>* writes) {
  std::vector<NodeInfo> left = cache_->TakeDepartures();
  // Whether a node is back is asked of the cache as it is now, after the departures were taken:
  // the cycle's snapshot is older, and a node that left since it was taken is in both (it was
  // taken for back, its departure dropped, and our mark left on it for good).
  const auto snap = cache_->Snapshot();
  MutexLock l(&departed_mu_);
  for (NodeInfo& n : left) departed_[n.name] = std::move(n);
  if (departed_.empty()) return;
  size_t added = 0;
  for (auto it = departed_.begin(); it != departed_.end();) {
    const NodeInfo& n = it->second;
    const bool back = snap->Find(n.name) != nullptr;
    const std::string* text = FindLabel(n.annotations, kHeldByAnnotation);
    // The mirror mode's mark has no record: our key with its value is ours to take off.
    if (const std::string* v = FindLabel(n.labels, options_.mark.key);
        !back && !underused_value_.empty() && v != nullptr && *v == underused_value_)
      underused_departed_[n.name] =
          Departed{FindLabel(n.annotations, kLastDrainAnnotation) != nullptr, 0};
    if (back || text == nullptr) {
      it = departed_.erase(it);  // managed again (the cycle decides), or no record of ours
      continue;
    }
    auto record = ParseOwnership(*text);
    MarkWrite w;
    w.node = n.name;
    w.below_hottest =
        NodeMarkLevel(options_.mark, n.labels, n.taints, record.ok() ? &*record : nullptr);
    const Mark mark = options_.mark.Below(w.below_hottest);
    // Ours only where the record says so: the record names our mark and the node still has it.
    if (options_.mark.UsesTaint()) w.read = MarkWrite::Read{n.resource_version, n.labels, n.taints};
    const OwnedParts owned = record.ok() && RecordNamesMark(*record, mark)
                                 ? OwnedMarkParts(mark, n.labels, n.taints, &*record)
                                 : OwnedParts{};
    if (owned.any()) {
      w.kind = ChangeKind::kUnmark;
      w.had_record = true;
      w.owned = owned;
      w.reason = "the node left the managed set";
    } else {
      w.kind = ChangeKind::kForget;
      w.reason = "the node left the managed set (its record names no mark of ours on it)";
    }
    writes->push_back(std::move(w));
    ++added;
    ++it;
  }
  if (added > 0)
    std::sort(writes->begin(), writes->end(),
              [](const MarkWrite& a, const MarkWrite& b) { return a.node < b.node; });
}

std::vector<MarkWrite> Reconciler::Write(const std::vector<MarkWrite>& writes,
                                         const std::atomic<bool>* stop, CycleReport* report) {
  const Stopwatch t;
  Mutex written_mu;  // on_done runs on the writer's threads
  std::vector<MarkWrite> written;
  WriteHooks hooks;
  // Every write belongs to the term it was planned in: a write phase that outlives its term
  // must not write decisions from before another leader's term, even once the lease is back.
  hooks.gate = [this, stop, planned_in = term_] { return MaySend(stop, planned_in); };
  hooks.on_written = [this](const NodeInfo& n) { cache_->ApplyWriteResult(n); };
  hooks.on_progress = [this] { MarkProgress(); };
  hooks.on_done = [&, this](const MarkWrite& w, WriteEnd end) {
    if (end == WriteEnd::kWritten &&
        (w.kind == ChangeKind::kMark || w.kind == ChangeKind::kUnmark)) {
      MutexLock l(&written_mu);
      written.push_back(w);
    }
    if (end == WriteEnd::kRetryLater) return;
    MutexLock l(&departed_mu_);
    auto it = departed_.find(w.node);
    if (it == departed_.end()) return;
    if (end == WriteEnd::kChanged && w.kind == ChangeKind::kUnmark) {
      // Someone put their own value under our key after the node left: not ours any more, but
      // our record still is. Forget it next cycle.
      auto& labels = it->second.labels;
      labels.erase(std::remove_if(labels.begin(), labels.end(),
                                  [&](const auto& kv) { return kv.first == options_.mark.key; }),
                   labels.end());
      it->second.taints = options_.mark.Below(w.below_hottest).WithoutTaint(it->second.taints);
      return;
    }
    departed_.erase(it);
  };
  WriteOutcome out = writer_.Write(writes, hooks, stop);
  report->writes_ok = out.ok;
  report->writes_failed = out.failed;
  report->deferred = out.deferred;
  report->held_back = out.held_back;
  report->phases.write = t.Seconds();
  return written;
}

void Reconciler::PostMarkEvents(const NodeSnapshot& snap, const std::vector<MarkWrite>& written,
                                const std::atomic<bool>* stop) {
  // No early return when nothing was written: a series that ended still gets its final count.
  std::vector<const MarkWrite*> sorted;
  for (const MarkWrite& w : written) sorted.push_back(&w);
  // Node order, not the writer threads' finishing order: the same cycle gives the same Events.
  std::sort(sorted.begin(), sorted.end(),
            [](const MarkWrite* a, const MarkWrite* b) { return a->node < b->node; });
  events_.NewCycle();
  const double now_wall = clock_->WallSeconds();
  const TimePoint now = clock_->Now();
  uint64_t posted = 0, suppressed = 0, failed = 0;
  const auto send_if = [this, stop, t = term_] { return MaySend(stop, t); };
  auto send = [&](const EventWrite& w) {
    Status st = w.kind == EventWrite::Kind::kPatch ? kube_->PatchEventSeries(w.event, send_if)
                                                   : kube_->CreateEvent(w.event, send_if);
    // The first Event is gone (the API server's event TTL): created anew with the series, as
    // client-go's recorder does.
    if (w.kind == EventWrite::Kind::kPatch && st.code() == StatusCode::kNotFound)
      st = kube_->CreateEvent(w.event, send_if);
    if (st.ok()) {
      ++posted;
      return;
    }
    ++failed;
    event_recorder_.Failed(w);
    if (throttle_.ShouldLog("mark-event", now))
      LOG(WARNING) << "the Event for a node could not be written"
                   << Fields("node", w.event.name, "err", st);
  };
  for (const MarkWrite* w : sorted) {
    if (!MaySend(stop, term_)) break;
    // Held back by the limiter: still counted in its series, written with the next write.
    const bool admitted = events_.Admit(w->node, now).has_value();
    if (!admitted) ++suppressed;
    EventInfo e;
    e.kind = "Node";
    e.name = w->node;
    if (const NodeInfo* n = snap.Find(w->node)) e.uid = n->uid;
    const bool set = w->kind == ChangeKind::kMark;
    e.reason = set ? "Marked" : "Unmarked";
    e.action = set ? "Mark" : "Unmark";
    e.at_wall = now_wall;
    e.message = std::string(set ? "Marked " : "Unmarked ") +
                options_.mark.Below(w->below_hottest).ToString() + ": " + w->reason;
    if (std::optional<EventWrite> write = event_recorder_.Observe(e, now, admitted)) send(*write);
  }
  for (const EventWrite& w : event_recorder_.Finish(now)) {
    if (!MaySend(stop, term_)) break;
    send(w);
  }
  MutexLock l(&mu_);
  counters_.events_posted += posted;
  counters_.events_suppressed += suppressed;
  counters_.event_errors += failed;
}

bool Reconciler::MaySend(const std::atomic<bool>* stop, uint64_t planned_in) const {
  if (stop->load()) return false;
  return leadership_ == nullptr || (leadership_->IsLeader() && leadership_->Term() == planned_in);
}

void Reconciler::HoldForRebalance(const NodeMarks& marks,
                                  std::vector<NodeDecision>* decisions) const {
  if (rebalancer_ == nullptr) return;
  for (size_t i = 0; i < decisions->size(); ++i) {
    NodeDecision& d = (*decisions)[i];
    // Only the hottest level is the rebalancer's (a cooler one is never relieved). Held are its
    // cold verdicts, and with graded marks a fall into a cooler level's band too: the evicted pods'
    // replacements must not be let back in by a warm mark while they still terminate.
    const bool cooler =
        d.verdict == Verdict::kCold || (d.verdict == Verdict::kHot && d.below_hottest > 0);
    if (!cooler || !marks.plan[i].marked || marks.plan[i].below_hottest != 0) continue;
    const double recorded = marks.record(i) ? marks.record(i)->last_eviction_wall : 0;
    if (rebalancer_->HoldsMark(std::string(marks.plan[i].name), recorded))
      d.verdict = Verdict::kUnknown;
  }
}

void Reconciler::ReportCap(const NodeSnapshot& snap, const CapOutcome& out, CycleReport* report) {
  const HerdCap& cap = judge_.herd_cap();
  report->mark_limit = out.limit;
  if (out.capped.empty()) return;
  for (size_t i : out.capped) report->capped.push_back(snap.nodes[i]->name);
  if (throttle_.ShouldLog("herd-cap", clock_->Now())) {
    std::string ex;
    for (size_t k = 0; k < report->capped.size() && k < 5; ++k) ex += " " + report->capped[k];
    LOG(WARNING) << report->capped.size() << " hot nodes left unmarked: " << out.marked
                 << " nodes already carry or get the mark, the most the herd cap allows ("
                 << "maxMarkedFraction " << cap.max_fraction << " of " << snap.nodes.size()
                 << " managed nodes"
                 << (cap.max_marked > 0 ? ", maxMarked " + std::to_string(cap.max_marked)
                                        : std::string())
                 << "); the hottest go first. e.g." << ex;
  }
}

std::vector<std::string> Reconciler::ReferenceHot(const NodeSnapshot& snap) {
  std::vector<std::string> hot;
  if (reference_query_.empty()) return hot;
  auto res = prom_->Query(reference_query_);
  if (!res.ok()) {
    if (throttle_.ShouldLog("reference", clock_->Now()))
      LOG(WARNING) << "rebalance.referenceQuery failed (the discovery rate skips this cycle)"
                   << Fields("err", res.status());
    return hot;
  }
  for (const Sample& s : res->samples)
    if (int i = matcher_->Match(s.metric, ""); i >= 0 && static_cast<size_t>(i) < snap.nodes.size())
      hot.push_back(snap.nodes[i]->name);
  std::sort(hot.begin(), hot.end());
  hot.erase(std::unique(hot.begin(), hot.end()), hot.end());
  return hot;
}

void Reconciler::Relieve(const NodeSnapshot& snap, const NodeMarks& marks, const Evidence& evidence,
                         const std::vector<NodeDecision>& decisions, const std::vector<bool>& cold,
                         const std::atomic<bool>* stop) {
  if (rebalancer_ == nullptr || stop->load()) return;
  const std::vector<std::shared_ptr<const PoolMean>> pools =
      BalancePools(snap, evidence, decisions);
  std::vector<ReliefInput> in(snap.nodes.size());
  MeasureForRelief(snap, evidence, decisions, pools, &in);
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    ReliefInput& r = in[i];
    r.hot = decisions[i].verdict == Verdict::kHot;
    // Ours only with our record: a value set by hand under our key is not a mark to act on.
    r.marked = marks.plan[i].marked && marks.record(i) != nullptr &&
               marks.plan[i].below_hottest == 0;  // the hottest level only
    if (!r.marked) continue;
    // Since when the hottest level holds it: a cooler level's rules in the record say since when
    // the node was warm, and `after` must count from when it turned hot.
    for (const OwnerRule& o : marks.record(i)->rules) {
      auto rule = rule_index_.find(o.rule);
      if (rule == rule_index_.end() || rules_[rule->second].below_hottest != 0) continue;
      if (r.marked_since_wall == 0 || o.since_wall < r.marked_since_wall)
        r.marked_since_wall = o.since_wall;
    }
    r.cold = cold[i];
    // The record keeps whole seconds (RFC 3339): the eviction was up to a second later than it
    // says, and a cool-down counted from the truncated time would end up to a second early.
    if (const double last = marks.record(i)->last_eviction_wall; last > 0)
      r.recorded_eviction_wall = last + 1;
    for (const Hold& h : decisions[i].holds) {
      if (h.stale) continue;
      const Rule& rule = rules_[h.rule];
      // The clear threshold the value was judged by: a relative rule's is the cycle's mean plus
      // its clear offset, and its pool goes along so that the plan follows the mean.
      r.holding.push_back(
          HoldingRule{rule.name, rule.resource, h.value, h.clear_threshold, rule.AvailableBytes()});
      r.holding.back().pool = pools[h.rule];
      // Urgency counts from when the hottest level turned hot, as `after` does.
      if (rule.below_hottest != 0) continue;
      // Its own wait, so that a rule that has just begun to hold (no `since` in the record the
      // cycle started from) waits it from now, not from when another rule marked the node (E2).
      r.holding.back().relieve_after_seconds = rule.relieve_after_seconds;
      for (const OwnerRule& o : marks.record(i)->rules)
        if (o.rule == rule.name)
          r.held.push_back(HeldSince{o.since_wall, rule.relieve_after_seconds, rule.name});
    }
  }
  std::vector<std::pair<TimePoint, Labels>> alerts;
  {
    MutexLock l(&mu_);
    alerts.swap(alerts_);
  }
  std::set<std::string> alerted;
  // Only fresh alerts: one that waited through an outage or a standby's term says nothing now.
  const TimePoint fresh = clock_->Now() - FromSeconds(2 * options_.interval_seconds);
  for (const auto& [at, a] : alerts)
    if (int i = matcher_->Match(a, "");
        at >= fresh && i >= 0 && static_cast<size_t>(i) < snap.nodes.size())
      alerted.insert(snap.nodes[i]->name);
  ReliefWrites io;
  io.writer = &writer_;
  io.records = &eviction_records_;
  io.hooks.gate = [this, stop, planned_in = term_] { return MaySend(stop, planned_in); };
  io.hooks.on_written = [this](const NodeInfo& n) { cache_->ApplyWriteResult(n); };
  io.hooks.on_progress = [this] { MarkProgress(); };
  io.stop = stop;
  io.term = term_;
  rebalancer_->Relieve(in, alerted, io, ReferenceHot(snap));
  MarkProgress();
}

void Reconciler::MeasureForRelief(const NodeSnapshot& snap, const Evidence& evidence,
                                  const std::vector<NodeDecision>& decisions,
                                  const std::vector<std::shared_ptr<const PoolMean>>& pools,
                                  std::vector<ReliefInput>* in) const {
  const std::vector<EffectiveThresholds>& eff = judge_.decider().thresholds();
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    ReliefInput& x = (*in)[i];
    x.node = snap.nodes[i].get();
    // Each resource from the first rule measuring it that has a value for the node: with a rule
    // per pool (nodeSelector), each node's own pool's rule.
    for (size_t r = 0; r < rules_.size(); ++r) {
      const Rule& rule = rules_[r];
      const std::vector<double>* values = evidence.inputs[r].values;
      if (rule.resource == Rule::Resource::kNone || values == nullptr || i >= values->size() ||
          !std::isfinite((*values)[i]))
        continue;
      const double v = (*values)[i];
      if (rule.AvailableBytes()) {  // no percent: the fit check keeps its floor available
        if (std::isfinite(x.available_memory)) continue;
        x.available_memory = v;
        // A relative rule's: the mean less the threshold offset, or the destination would turn
        // hot by the same rule (pool_mean.h); without a mean this cycle, none is known.
        if (rule.relative_to == Rule::Relative::kNone)
          x.available_floor = rule.clear_threshold;
        else if (pools[r] != nullptr)
          x.available_floor = pools[r]->Mean() - pools[r]->threshold_offset;
        continue;
      }
      const int k = rule.resource == Rule::Resource::kCpu ? 0 : 1;
      if (!std::isfinite(x.load[k])) x.load[k] = v;
      // Its own pool's balance: a replacement may not make it stand out there.
      if (pools[r] != nullptr && std::isnan(x.balance_ceiling[k]))
        x.balance_ceiling[k] = eff[r].threshold;
    }
  }
  // Balance first, then the mirror mode: the nodes whose room a pool's held nodes need are not
  // marked underused (rebalance/underuse.h).
  for (size_t p = 0; p < pools.size(); ++p) {
    // Only a pool whose rule holds some node has relief to make room for (BalancePools lists
    // the nodes of exactly those).
    if (pools[p] == nullptr || pools[p]->per_unit.empty()) continue;
    const bool negated = rules_[p].AvailableBytes();  // the plan's units: hotter is larger
    std::vector<double> values = *evidence.inputs[p].values;
    if (negated)
      for (double& v : values) v = -v;
    std::vector<bool> held(values.size(), false);
    for (size_t i = 0; i < decisions.size() && i < held.size(); ++i)
      for (const Hold& h : decisions[i].holds) held[i] = held[i] || (h.rule == p && !h.stale);
    const double mean = negated ? -pools[p]->Mean() : pools[p]->Mean();
    for (size_t i : BalanceDestinations(values, held, mean, pools[p]->clear_offset,
                                        pools[p]->threshold_offset))
      (*in)[i].balance_destination = true;
  }
}

std::vector<std::shared_ptr<const PoolMean>> Reconciler::BalancePools(
    const NodeSnapshot& snap, const Evidence& evidence,
    const std::vector<NodeDecision>& decisions) const {
  std::vector<std::shared_ptr<const PoolMean>> pools(rules_.size());
  const std::vector<EffectiveThresholds>& eff = judge_.decider().thresholds();
  // Only a rule that holds some node can set a goal: the others' pools need no nodes (a map of
  // every node's name each cycle would be 1 MB at 10,000 nodes for nothing).
  std::vector<bool> holding(rules_.size(), false);
  for (const NodeDecision& d : decisions)
    for (const Hold& h : d.holds)
      if (!h.stale && h.rule < holding.size()) holding[h.rule] = true;
  for (size_t r = 0; r < rules_.size() && r < eff.size(); ++r) {
    const Rule& rule = rules_[r];
    const std::vector<double>* values = evidence.inputs[r].values;
    if (!eff[r].known || values == nullptr) continue;
    // The nodes whose values made the mean (out-of-scope ones are NaN already: rule_scope.h).
    pools[r] = MakePoolMean(
        rule, eff[r].mean, eff[r].count, *values,
        [&](size_t i) {
          const NodeInfo& n = *snap.nodes[i];
          return std::pair<std::string, double>(n.name, rule.resource == Rule::Resource::kCpu
                                                            ? n.allocatable_cpu
                                                            : n.allocatable_memory);
        },
        holding[r]);
  }
  return pools;
}

void Reconciler::ReportHolds(const NodeSnapshot& snap, const std::vector<NodeDecision>& decisions,
                             TimePoint now, CycleReport* report) const {
  const double now_wall = clock_->WallSeconds();
  report->hot_nodes = report->capped.size();  // hot, but left unmarked by the herd cap
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    // An Unknown verdict may carry stale holds (every query failed): they still explain the mark
    // the node keeps, so they are shown, but the node is not counted as hot.
    if (decisions[i].verdict == Verdict::kHot)
      ++report->hot_nodes;
    else if (decisions[i].holds.empty())
      continue;
    auto& hv = report->holds[snap.nodes[i]->name];
    for (const auto& h : decisions[i].holds) {
      const Rule& r = rules_[h.rule];
      HoldReport hr{r.name,      OpName(r.op),      h.value,
                    h.threshold, h.clear_threshold, now_wall - ToSeconds(now - h.since),
                    h.stale};
      hr.unit = r.unit;
      if (r.relative_to != Rule::Relative::kNone) {
        hr.relative = true;
        hr.mean = RelativeMean(r, h.threshold);
      }
      hv.push_back(std::move(hr));
    }
  }
}

size_t NodeTable::Bytes() const {
  size_t b = sizeof(NodeTable) + rules.capacity() * sizeof(Column) +
             names.capacity() * sizeof(std::string) + values.capacity() * sizeof(double) +
             states.capacity() * sizeof(State) + since_wall.capacity() * sizeof(double) +
             applies.capacity();
  for (const Column& c : rules) b += c.rule.capacity() + c.op.capacity();
  // Names longer than the small-string buffer live on the heap.
  for (const std::string& n : names)
    if (n.capacity() > std::string().capacity()) b += n.capacity() + 1;
  return b;
}

void Reconciler::ReportTable(const NodeSnapshot& snap, const NodeMarks& marks,
                             const Evidence& evidence, const std::vector<NodeDecision>& decisions,
                             const std::vector<bool>& cold, CycleReport* report) const {
  auto t = std::make_shared<NodeTable>();
  const std::vector<EffectiveThresholds>& eff = judge_.decider().thresholds();
  for (size_t r = 0; r < rules_.size(); ++r) {
    const Rule& rule = rules_[r];
    NodeTable::Column c{rule.name, OpName(rule.op), rule.threshold, rule.clear_threshold};
    c.unit = rule.unit;
    if (rule.relative_to != Rule::Relative::kNone) {
      c.relative = true;
      const bool known = r < eff.size() && eff[r].known;
      c.mean = known ? eff[r].mean : std::nan("");
      c.threshold = known ? eff[r].threshold : std::nan("");
      c.clear_threshold = known ? eff[r].clear_threshold : std::nan("");
    }
    t->rules.push_back(std::move(c));
  }
  const size_t n = snap.nodes.size(), nr = rules_.size();
  t->names.reserve(n);
  t->values.assign(n * nr, std::nan(""));
  t->states.resize(n);
  t->since_wall.assign(n, 0);
  std::set<std::string_view> capped(report->capped.begin(), report->capped.end());
  for (size_t i = 0; i < n; ++i) {
    const std::string& name = snap.nodes[i]->name;
    t->names.push_back(name);
    for (size_t r = 0; r < nr; ++r) {
      if (const std::vector<double>* v = evidence.inputs[r].values; v != nullptr && i < v->size())
        t->values[i * nr + r] = (*v)[i];
      if (r < evidence.applies.size() && i < evidence.applies[r].size() &&
          !evidence.applies[r][i]) {
        if (t->applies.empty()) t->applies.assign(n * nr, 1);
        t->applies[i * nr + r] = 0;
      }
    }
    NodeTable::State& st = t->states[i];
    switch (decisions[i].verdict) {
      case Verdict::kHot:
        st = NodeTable::State::kHot;
        break;
      case Verdict::kCold:
        st = NodeTable::State::kCold;
        break;
      case Verdict::kUnknown:
        // The rebalancer's hold and the herd cap turn their nodes' verdicts unknown: say which.
        st = capped.count(name) ? NodeTable::State::kCapped
             : cold[i]          ? NodeTable::State::kHeld
                                : NodeTable::State::kUnknown;
        break;
    }
    // Since when: the holds of this cycle (the same times as the record), else the record of a
    // mark kept without them (held by the rebalancer, adopting).
    if (auto it = report->holds.find(name); it != report->holds.end()) {
      for (const HoldReport& h : it->second)
        if (t->since_wall[i] == 0 || h.since_wall < t->since_wall[i])
          t->since_wall[i] = h.since_wall;
    } else if (const Ownership* record = marks.record(i)) {
      for (const OwnerRule& o : record->rules)
        if (t->since_wall[i] == 0 || o.since_wall < t->since_wall[i])
          t->since_wall[i] = o.since_wall;
    }
  }
  report->table = std::move(t);
}

void Reconciler::RememberChanges(const std::vector<MarkWrite>& written) {
  if (written.empty()) return;
  std::vector<const MarkWrite*> sorted;
  for (const MarkWrite& w : written) sorted.push_back(&w);
  // Node order within a cycle, as the Events: the writer threads' order means nothing.
  std::sort(sorted.begin(), sorted.end(),
            [](const MarkWrite* a, const MarkWrite* b) { return a->node < b->node; });
  const double now_wall = clock_->WallSeconds();
  MutexLock l(&mu_);
  auto next = std::make_shared<std::vector<MarkChange>>();
  const size_t kept = recent_changes_ == nullptr ? 0 : recent_changes_->size();
  // Bounded: the oldest go first. Copied, not changed in place, because published reports
  // still share the old list.
  const size_t total = kept + sorted.size();
  const size_t drop = total > kRecentChanges ? total - kRecentChanges : 0;
  next->reserve(std::min(total, kRecentChanges));
  for (size_t k = drop; k < kept; ++k) next->push_back((*recent_changes_)[k]);
  for (size_t k = drop > kept ? drop - kept : 0; k < sorted.size(); ++k)
    next->push_back(MarkChange{now_wall, sorted[k]->node, sorted[k]->kind == ChangeKind::kMark,
                               sorted[k]->reason,
                               options_.mark.LevelName(sorted[k]->below_hottest)});
  recent_changes_ = std::move(next);
}

void Reconciler::Publish(CycleReport report) {
  MarkProgress();
  if (observer_) observer_(report);
  MutexLock l(&mu_);
  report.recent_changes = recent_changes_;
  rebalance_cpu_total_ += report.rebalance_cpu_seconds;
  report.rebalance_cpu_seconds_total =
      rebalance_cpu_total_;  // with the cycle it counts, for rate()
  last_ = std::move(report);
  last_end_ = clock_->Now();
}

void Reconciler::MarkProgress() { progress_.store(clock_->Now().time_since_epoch().count()); }

TimePoint Reconciler::LastProgress() const { return TimePoint(Duration(progress_.load())); }

std::string Reconciler::RecordFor(const NodeDecision& d, const Ownership* old, bool taint_not_ours,
                                  TimePoint now, double now_wall) const {
  Ownership o;
  SetRecordedMark(options_.mark.Below(d.below_hottest), &o);
  o.taint_not_ours = taint_not_ours;
  for (size_t r : HoldingRules(d)) {
    OwnerRule owner{rules_[r].name, now_wall};
    for (const Hold& h : d.holds)
      if (h.rule == r) owner.since_wall = now_wall - ToSeconds(now - h.since);
    // A rule adopted after a restart holds "since" the adoption here; the record knows better.
    if (old)
      for (const OwnerRule& was : old->rules)
        if (was.rule == owner.rule) owner.since_wall = std::min(owner.since_wall, was.since_wall);
    o.rules.push_back(std::move(owner));
  }
  if (old) o.last_eviction_wall = old->last_eviction_wall;  // the rebalancer's, kept
  return FormatOwnership(o);
}

std::string Reconciler::DescribeHolds(const NodeDecision& d) const {
  std::string s;
  for (const auto& h : d.holds) {
    const Rule& r = rules_[h.rule];
    if (!s.empty()) s += "; ";
    s += "rule " + r.name + " value " + FormatValue(h.value, r.unit) + " " + OpName(r.op) + " " +
         FormatValue(h.threshold, r.unit);
    if (r.relative_to != Rule::Relative::kNone)
      s += " (mean " + FormatValue(RelativeMean(r, h.threshold), r.unit) +
           (r.op == Comparison::kGreater ? " + " : " - ") + FormatValue(r.threshold, r.unit) + ")";
    if (h.stale) s += " (last seen value, data missing)";
  }
  return s;
}

void Reconciler::Run(const std::atomic<bool>* stop) {
  // Deciding before the first LIST would see no nodes; wait for it (bounded, then cycle anyway
  // so /status keeps reporting why we are not ready).
  const TimePoint give_up = clock_->Now() + std::chrono::seconds(30);
  while (!cache_->Synced() && clock_->Now() < give_up &&
         clock_->SleepFor(std::chrono::milliseconds(50), stop)) {
  }
  while (!stop->load()) {
    const TimePoint start = clock_->Now();
    MarkProgress();
    RunCycle(stop);
    // A cycle frees its response bodies (about 1.2 MB per rule at 10,000 nodes); hand the pages
    // back to the kernel so the resident size does not ratchet up between cycles.
    malloc_trim(0);
    MutexLock l(&mu_);
    clock_->WaitUntil(&mu_, &cv_, start + FromSeconds(options_.interval_seconds),
                      [&]() REQUIRES(mu_) { return triggered_ || stop->load(); });
    if (triggered_ && trigger_spaced_) {
      // Webhook calls can come back to back (or from anything that reaches the port): a
      // triggered cycle starts no sooner than the minimum spacing after the previous one. A
      // trigger that may not wait (a new term) ends the wait.
      clock_->WaitUntil(&mu_, &cv_, start + FromSeconds(options_.min_trigger_spacing_seconds),
                        [&]() REQUIRES(mu_) { return stop->load() || !trigger_spaced_; });
    }
    triggered_ = false;
    trigger_spaced_ = false;
  }
}

void Reconciler::Trigger(bool spaced) {
  {
    MutexLock l(&mu_);
    // Pending triggers coalesce: the cycle may wait the spacing only if all of them may.
    trigger_spaced_ = triggered_ ? trigger_spaced_ && spaced : spaced;
    triggered_ = true;
    query_all_ = true;
  }
  cv_.SignalAll();
}

void Reconciler::Alerted(std::vector<Labels> alerts) {
  if (rebalancer_ == nullptr || alerts.empty()) return;
  MutexLock l(&mu_);
  // Bounded: a flood of webhooks between two cycles keeps the newest.
  const TimePoint now = clock_->Now();
  for (auto& a : alerts) alerts_.emplace_back(now, std::move(a));
  if (alerts_.size() > kMaxAlerts)
    alerts_.erase(alerts_.begin(), alerts_.end() - static_cast<std::ptrdiff_t>(kMaxAlerts));
}

void Reconciler::Wake() {
  // Under the mutex: otherwise the notification can fall between Run's check of *stop and its
  // wait, and Run sleeps a whole interval more.
  MutexLock l(&mu_);
  cv_.SignalAll();
}

CycleReport Reconciler::LastReport() const {
  MutexLock l(&mu_);
  return last_;
}

ReconcilerCounters Reconciler::Counters() const {
  ReconcilerCounters c;
  {
    MutexLock l(&mu_);
    c = counters_;
  }
  WriteCounters w = writer_.Counters();
  c.label_sets = w.sets;
  c.label_removals = w.removals;
  c.write_errors = w.errors;
  c.write_retries = w.retries;
  c.record_writes = w.records;
  c.removals_changed = w.changed;
  c.taint_sets = w.taint_sets;
  c.taint_removals = w.taint_removals;
  c.taint_conflicts = w.taint_conflicts;
  return c;
}

TimePoint Reconciler::LastCycleEnd() const {
  MutexLock l(&mu_);
  return last_end_;
}

}  // namespace ds
