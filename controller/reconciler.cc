#include "controller/reconciler.h"

#include <malloc.h>
#include <time.h>

#include <cmath>
#include <future>
#include <sstream>

namespace ds {
namespace {

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

const char* OpName(Comparison op) { return op == Comparison::kGreater ? ">" : "<"; }

std::string Num(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

}  // namespace

Reconciler::Reconciler(const RuleConfig& rules, ReconcilerOptions options, NodeCache* cache,
                       PrometheusClient* prom, KubeApi* kube, const Clock* clock,
                       const Leadership* leadership)
    : rules_(rules.rules),
      options_(std::move(options)),
      cache_(cache),
      prom_(prom),
      clock_(clock),
      leadership_(leadership),
      decider_(rules.rules, FromSeconds(options_.grace_seconds)),
      writer_(options_.writes, options_.mark, kube, clock) {
  for (const auto& r : rules_) label_filters_.push_back(MatchLabels(r));
}

void Reconciler::RunCycle(const std::atomic<bool>* stop) {
  const Stopwatch cycle_time;
  const double cpu0 = ProcessCpuSeconds();
  CycleReport report;
  report.started_wall = clock_->WallSeconds();
  {
    std::lock_guard<std::mutex> l(mu_);
    report.cycle = ++counters_.cycles;
  }
  if (!MayRun(&report)) return Publish(std::move(report));

  auto snap = cache_->Snapshot();
  report.managed_nodes = snap->nodes.size();
  RefreshMatcher(*snap);
  Evidence evidence = QueryAndMatch(&report);
  MarkProgress();
  const TimePoint now = clock_->Now();
  // Whether each node carries our mark, read once: the decider and the planner both need it.
  const std::vector<NodeInput> nodes = MarkedNodes(*snap);
  std::vector<NodeDecision> decisions = Decide(nodes, evidence, now, &report);
  std::vector<MarkWrite> writes = Plan(*snap, nodes, decisions, &report);
  Write(writes, stop, &report);
  ReportHolds(*snap, decisions, now, &report);

  report.duration_seconds = cycle_time.Seconds();
  report.cpu_seconds = ProcessCpuSeconds() - cpu0;
  VLOG(1) << "cycle " << report.cycle << ": " << snap->nodes.size() << " nodes, "
          << report.hot_nodes << " hot, " << writes.size() << " changes, "
          << report.duration_seconds * 1000 << " ms";
  Publish(std::move(report));
}

bool Reconciler::MayRun(CycleReport* report) {
  if (!cache_->Synced()) {
    report->skipped = true;
    return false;
  }
  if (leadership_ == nullptr) return true;
  if (!leadership_->IsLeader()) {
    report->skipped = report->standby = true;
    return false;
  }
  if (uint64_t term = leadership_->Term(); term != term_) {
    // Hysteresis timers and last seen values from an earlier term are stale (another replica
    // decided meanwhile): start over as after a restart, adopting the labels on the nodes.
    if (term_ != 0)
      LOG(INFO) << "leader again (term " << term << "): starting from the labels in the cluster";
    decider_.Reset();
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

Reconciler::Evidence Reconciler::QueryAndMatch(CycleReport* report) {
  // One query per rule, all at once: the cycle waits for the slowest, not the sum. Samples
  // stream straight into per-node values (decode and match fused, no Sample objects).
  std::vector<std::unique_ptr<MatchAccumulator>> acc;
  for (const auto& rule : rules_)
    acc.push_back(std::make_unique<MatchAccumulator>(matcher_.get(), &rule));
  std::vector<std::future<StatusOr<QueryResult>>> futures;
  std::vector<Stopwatch> started(rules_.size());
  for (size_t r = 0; r < rules_.size(); ++r) {
    started[r] = Stopwatch();
    futures.push_back(std::async(std::launch::async, [this, r, a = acc[r].get()] {
      return prom_->Query(rules_[r].query, &label_filters_[r], a);
    }));
  }
  Evidence ev;
  ev.matched.resize(rules_.size());
  ev.inputs.resize(rules_.size());
  report->rules.resize(rules_.size());
  size_t failed = 0;
  for (size_t r = 0; r < rules_.size(); ++r) {
    auto res = futures[r].get();
    RuleReport& rr = report->rules[r];
    rr.name = rules_[r].name;
    rr.query_seconds = started[r].Seconds();
    if (!res.ok()) {
      ++failed;
      rr.error = res.status().ToString();
      ev.inputs[r].failed = true;
      if (throttle_.ShouldLog("query:" + rr.name + ":" + StatusCodeName(res.status().code()),
                              clock_->Now()))
        LOG(WARNING) << "rule " << rr.name
                     << ": query failed (keeping its last verdicts for the grace time): "
                     << rr.error;
      std::lock_guard<std::mutex> l(mu_);
      ++counters_.query_errors[rr.name];
      continue;
    }
    rr.ok = true;
    rr.warnings = res->warnings;
    rr.samples = res->sample_count;
    report->phases.query = std::max(report->phases.query, res->fetch_seconds);
    report->phases.decode += res->decode_seconds;  // includes matching: they are one pass
    ev.matched[r] = std::move(acc[r]->result());
    rr.unmatched = ev.matched[r].unmatched;
    rr.duplicates = ev.matched[r].duplicates;
    rr.matched = rr.samples - rr.unmatched;
    ev.inputs[r].values = &ev.matched[r].values;
    if (!res->warnings.empty() && throttle_.ShouldLog("warn:" + rr.name, clock_->Now()))
      LOG(WARNING) << "rule " << rr.name << ": Prometheus warnings: " << res->warnings.front();
    if (rr.unmatched > 0 && throttle_.ShouldLog("unmatched:" + rr.name, clock_->Now())) {
      std::string ex;
      for (const auto& n : ev.matched[r].unmatched_names) ex += " " + n;
      LOG(WARNING) << "rule " << rr.name << ": " << rr.unmatched
                   << " series name no known node; they are ignored. e.g." << ex;
    }
  }
  report->all_queries_failed = !rules_.empty() && failed == rules_.size();
  return ev;
}

std::vector<NodeInput> Reconciler::MarkedNodes(const NodeSnapshot& snap) const {
  std::vector<NodeInput> nodes(snap.nodes.size());
  for (size_t i = 0; i < snap.nodes.size(); ++i)
    nodes[i] = NodeInput{snap.nodes[i]->name, options_.mark.IsOn(snap.nodes[i]->labels)};
  return nodes;
}

std::vector<NodeDecision> Reconciler::Decide(const std::vector<NodeInput>& nodes,
                                             const Evidence& evidence, TimePoint now,
                                             CycleReport* report) {
  const Stopwatch t;
  std::vector<NodeDecision> decisions = decider_.Decide(now, nodes, evidence.inputs);
  report->phases.decide = t.Seconds();
  return decisions;
}

std::vector<MarkWrite> Reconciler::Plan(const NodeSnapshot& snap,
                                        const std::vector<NodeInput>& marked,
                                        const std::vector<NodeDecision>& decisions,
                                        CycleReport* report) const {
  const Stopwatch t;
  std::vector<PlanNode> nodes(marked.size());
  for (size_t i = 0; i < marked.size(); ++i)
    nodes[i] = PlanNode{marked[i].name, marked[i].labelled};
  std::vector<MarkWrite> writes;
  for (const LabelChange& c : PlanChanges(nodes, decisions)) {
    writes.push_back(MarkWrite{
        snap.nodes[c.node]->name, c.set,
        c.set ? DescribeHolds(decisions[c.node]) : "every rule is below its clear threshold"});
  }
  report->phases.plan = t.Seconds();
  return writes;
}

void Reconciler::Write(const std::vector<MarkWrite>& writes, const std::atomic<bool>* stop,
                       CycleReport* report) {
  const Stopwatch t;
  WriteHooks hooks;
  // Every write belongs to the term it was planned in: a write phase that outlives its term
  // must not write decisions from before another leader's term, even once the lease is back.
  hooks.gate = [this, stop, planned_in = term_] {
    if (stop->load()) return false;
    return leadership_ == nullptr || (leadership_->IsLeader() && leadership_->Term() == planned_in);
  };
  hooks.on_written = [this](const NodeInfo& n) { cache_->ApplyWriteResult(n); };
  hooks.on_progress = [this] { MarkProgress(); };
  WriteOutcome out = writer_.Write(writes, hooks, stop);
  report->writes_ok = out.ok;
  report->writes_failed = out.failed;
  report->deferred = out.deferred;
  report->held_back = out.held_back;
  report->phases.write = t.Seconds();
}

void Reconciler::ReportHolds(const NodeSnapshot& snap, const std::vector<NodeDecision>& decisions,
                             TimePoint now, CycleReport* report) const {
  const double now_wall = clock_->WallSeconds();
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
      hv.push_back(HoldReport{r.name, OpName(r.op), h.value, r.threshold, r.clear_threshold,
                              now_wall - ToSeconds(now - h.since), h.stale});
    }
  }
}

void Reconciler::Publish(CycleReport report) {
  MarkProgress();
  std::lock_guard<std::mutex> l(mu_);
  last_ = std::move(report);
  last_end_ = clock_->Now();
}

void Reconciler::MarkProgress() { progress_.store(clock_->Now().time_since_epoch().count()); }

TimePoint Reconciler::LastProgress() const { return TimePoint(Duration(progress_.load())); }

std::string Reconciler::DescribeHolds(const NodeDecision& d) const {
  std::string s;
  for (const auto& h : d.holds) {
    const Rule& r = rules_[h.rule];
    if (!s.empty()) s += "; ";
    s += "rule " + r.name + " value " + Num(h.value) + " " + OpName(r.op) + " " + Num(r.threshold);
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
    std::unique_lock<std::mutex> l(mu_);
    clock_->WaitUntil(l, cv_, start + FromSeconds(options_.interval_seconds),
                      [&] { return triggered_ || stop->load(); });
    if (triggered_ && trigger_spaced_) {
      // Webhook calls can come back to back (or from anything that reaches the port): a
      // triggered cycle starts no sooner than the minimum spacing after the previous one. A
      // trigger that may not wait (a new term) ends the wait.
      clock_->WaitUntil(l, cv_, start + FromSeconds(options_.min_trigger_spacing_seconds),
                        [&] { return stop->load() || !trigger_spaced_; });
    }
    triggered_ = false;
    trigger_spaced_ = false;
  }
}

void Reconciler::Trigger(bool spaced) {
  {
    std::lock_guard<std::mutex> l(mu_);
    // Pending triggers coalesce: the cycle may wait the spacing only if all of them may.
    trigger_spaced_ = triggered_ ? trigger_spaced_ && spaced : spaced;
    triggered_ = true;
  }
  cv_.notify_all();
}

void Reconciler::Wake() {
  // Under the mutex: otherwise the notification can fall between Run's check of *stop and its
  // wait, and Run sleeps a whole interval more.
  std::lock_guard<std::mutex> l(mu_);
  cv_.notify_all();
}

CycleReport Reconciler::LastReport() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_;
}

ReconcilerCounters Reconciler::Counters() const {
  ReconcilerCounters c;
  {
    std::lock_guard<std::mutex> l(mu_);
    c = counters_;
  }
  WriteCounters w = writer_.Counters();
  c.label_sets = w.sets;
  c.label_removals = w.removals;
  c.write_errors = w.errors;
  c.write_retries = w.retries;
  return c;
}

TimePoint Reconciler::LastCycleEnd() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_end_;
}

}  // namespace ds
