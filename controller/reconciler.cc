#include "controller/reconciler.h"

#include <malloc.h>
#include <time.h>

#include <cmath>
#include <future>
#include <sstream>
#include <thread>

#include "common/backoff.h"

namespace ds {
namespace {

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
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
      kube_(kube),
      clock_(clock),
      leadership_(leadership),
      decider_(rules.rules, FromSeconds(options_.grace_seconds)),
      limiter_(options_.write_qps, options_.write_burst) {
  for (const auto& r : rules_) label_filters_.push_back(MatchLabels(r));
}

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

void Reconciler::ExecuteChange(const NodeInfo& node, bool set, const NodeDecision& d,
                               const std::atomic<bool>* stop, CycleReport* report) {
  const std::string* value = set ? &options_.label_value : nullptr;
  std::string what = set ? "set " + options_.label_key + "=" + options_.label_value + " on node " + node.name +
                               ": " + DescribeHolds(d)
                         : "removed " + options_.label_key + " from node " + node.name +
                               ": every rule is below its clear threshold";
  if (options_.dry_run) {
    LOG(INFO) << "dry-run: would have " << what;
    return;
  }
  Backoff backoff(0.2, 5);
  for (int attempt = 1; attempt <= options_.write_attempts; ++attempt) {
    for (;;) {  // honour a Retry-After the server gave any writer
      std::chrono::steady_clock::time_point not_before;
      {
        std::lock_guard<std::mutex> l(mu_);
        not_before = writes_not_before_;
      }
      if (stop->load()) return;
      if (std::chrono::steady_clock::now() >= not_before) break;
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          not_before - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
    }
    if (!limiter_.Acquire(stop)) return;
    // Leadership can end while a cycle writes (renew deadline passed): a standby may take over once
    // the lease expires, so no write may start after that.
    if (leadership_ != nullptr && !leadership_->IsLeader()) {
      if (throttle_.ShouldLog("not-leader", clock_->Now()))
        LOG(WARNING) << "not the leader any more: the remaining label writes of this cycle are dropped";
      std::lock_guard<std::mutex> l(mu_);
      ++report->deferred;
      return;
    }
    auto res = kube_->PatchNodeLabel(node.name, options_.label_key, value);
    if (res.ok()) {
      cache_->ApplyWriteResult(*res);
      LOG(INFO) << what;
      std::lock_guard<std::mutex> l(mu_);
      ++report->writes_ok;
      if (set) ++counters_.label_sets;
      else ++counters_.label_removals;
      return;
    }
    const Status& st = res.status();
    if (st.code() == StatusCode::kNotFound) return;  // deleted meanwhile; the watch will tell
    if (st.code() == StatusCode::kCancelled) {  // not sent: leadership ended while connecting
      std::lock_guard<std::mutex> l(mu_);
      ++report->deferred;
      return;
    }
    if (st.retry_after_seconds() > 0) {
      std::lock_guard<std::mutex> l(mu_);
      writes_not_before_ = std::max(writes_not_before_, std::chrono::steady_clock::now() +
                                                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                std::chrono::duration<double>(st.retry_after_seconds())));
    }
    if (!st.IsRetryable() || attempt == options_.write_attempts) {
      if (throttle_.ShouldLog("write:" + node.name + ":" + std::to_string(st.http_status()), clock_->Now()))
        LOG(WARNING) << "could not " << (set ? "label" : "unlabel") << " node " << node.name << ": "
                     << st.ToString();
      std::lock_guard<std::mutex> l(mu_);
      ++report->writes_failed;
      ++counters_.write_errors;
      return;
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      ++counters_.write_retries;
    }
    Duration wait = st.code() == StatusCode::kConflict ? Duration::zero() : backoff.Next();
    if (st.retry_after_seconds() > 0) wait = std::max(wait, FromSeconds(st.retry_after_seconds()));
    auto until = std::chrono::steady_clock::now() + wait;
    while (!stop->load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (stop->load()) return;
  }
}

void Reconciler::RunCycle(const std::atomic<bool>* stop) {
  auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = ProcessCpuSeconds();
  CycleReport report;
  report.started_wall = clock_->WallSeconds();
  {
    std::lock_guard<std::mutex> l(mu_);
    report.cycle = ++counters_.cycles;
  }
  if (!cache_->Synced()) {
    report.skipped = true;
    std::lock_guard<std::mutex> l(mu_);
    last_ = std::move(report);
    last_end_ = clock_->Now();
    return;
  }
  if (leadership_ != nullptr) {
    if (!leadership_->IsLeader()) {
      report.skipped = report.standby = true;
      std::lock_guard<std::mutex> l(mu_);
      last_ = std::move(report);
      last_end_ = clock_->Now();
      return;
    }
    if (uint64_t term = leadership_->Term(); term != term_) {
      // Hysteresis timers and last seen values from an earlier term are stale (another replica
      // decided meanwhile): start over as after a restart, adopting the labels on the nodes.
      if (term_ != 0) LOG(INFO) << "leader again (term " << term << "): starting from the labels in the cluster";
      decider_.Reset();
      term_ = term;
    }
  }
  auto snap = cache_->Snapshot();
  const auto& nodes = snap->nodes;
  report.managed_nodes = nodes.size();
  if (matcher_ == nullptr || matcher_topology_ != snap->topology) {
    std::vector<NodeIdentity> ids;
    ids.reserve(nodes.size());
    for (const auto& n : nodes) ids.push_back(NodeIdentity{n->name, n->addresses});
    matcher_ = std::make_unique<NodeMatcher>(ids);
    matcher_topology_ = snap->topology;
  }

  // One query per rule, all at once: the cycle waits for the slowest, not the sum.
  // Samples stream straight into per-node values (decode and match fused, no Sample objects).
  std::vector<std::unique_ptr<MatchAccumulator>> acc;
  for (const auto& rule : rules_) acc.push_back(std::make_unique<MatchAccumulator>(matcher_.get(), &rule));
  std::vector<std::future<StatusOr<QueryResult>>> futures;
  std::vector<TimePoint> started(rules_.size());
  for (size_t r = 0; r < rules_.size(); ++r) {
    started[r] = std::chrono::steady_clock::now();
    futures.push_back(std::async(std::launch::async, [this, r, a = acc[r].get()] {
      return prom_->Query(rules_[r].query, &label_filters_[r], a);
    }));
  }
  std::vector<MatchedValues> matched(rules_.size());
  std::vector<RuleInput> inputs(rules_.size());
  report.rules.resize(rules_.size());
  size_t failed = 0;
  for (size_t r = 0; r < rules_.size(); ++r) {
    auto res = futures[r].get();
    RuleReport& rr = report.rules[r];
    rr.name = rules_[r].name;
    rr.query_seconds = ToSeconds(std::chrono::steady_clock::now() - started[r]);
    if (!res.ok()) {
      ++failed;
      rr.error = res.status().ToString();
      inputs[r].failed = true;
      if (throttle_.ShouldLog("query:" + rr.name + ":" + rr.error, clock_->Now()))
        LOG(WARNING) << "rule " << rr.name << ": query failed (keeping its last verdicts for the grace time): "
                     << rr.error;
      std::lock_guard<std::mutex> l(mu_);
      ++counters_.query_errors[rr.name];
      continue;
    }
    rr.ok = true;
    rr.warnings = res->warnings;
    rr.samples = res->sample_count;
    report.phases.query = std::max(report.phases.query, res->fetch_seconds);
    report.phases.decode += res->decode_seconds;  // includes matching: they are one pass
    matched[r] = std::move(acc[r]->result());
    rr.unmatched = matched[r].unmatched;
    rr.duplicates = matched[r].duplicates;
    rr.matched = rr.samples - rr.unmatched;
    inputs[r].values = &matched[r].values;
    if (!res->warnings.empty() && throttle_.ShouldLog("warn:" + rr.name, clock_->Now()))
      LOG(WARNING) << "rule " << rr.name << ": Prometheus warnings: " << res->warnings.front();
    if (rr.unmatched > 0 && throttle_.ShouldLog("unmatched:" + rr.name, clock_->Now())) {
      std::string ex;
      for (const auto& n : matched[r].unmatched_names) ex += " " + n;
      LOG(WARNING) << "rule " << rr.name << ": " << rr.unmatched
                   << " series name no known node; they are ignored. e.g." << ex;
    }
  }
  report.all_queries_failed = !rules_.empty() && failed == rules_.size();

  std::vector<NodeInput> node_inputs(nodes.size());
  std::vector<PlanNode> plan_nodes(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string* cur = FindLabel(nodes[i]->labels, options_.label_key);
    node_inputs[i] = NodeInput{nodes[i]->name, cur != nullptr && *cur == options_.label_value};
    plan_nodes[i] = PlanNode{nodes[i]->name, cur};
  }
  TimePoint now = clock_->Now();
  auto td = std::chrono::steady_clock::now();
  std::vector<NodeDecision> decisions = decider_.Decide(now, node_inputs, inputs);
  report.phases.decide = Since(td);
  auto tp = std::chrono::steady_clock::now();
  Plan plan = PlanChanges(plan_nodes, decisions, PlanOptions{options_.label_value, options_.max_writes_per_cycle});
  report.phases.plan = Since(tp);
  report.deferred = plan.deferred;
  if (plan.deferred > 0)
    LOG(WARNING) << plan.deferred << " label changes deferred to the next cycle (max_writes_per_cycle)";
  auto tw = std::chrono::steady_clock::now();
  {
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i; (i = next++) < plan.changes.size() && !stop->load();) {
        const LabelChange& c = plan.changes[i];
        ExecuteChange(*nodes[c.node], c.set, decisions[c.node], stop, &report);
      }
    };
    size_t n = std::min<size_t>(static_cast<size_t>(std::max(1, options_.write_concurrency)), plan.changes.size());
    std::vector<std::thread> workers;
    for (size_t i = 1; i < n; ++i) workers.emplace_back(worker);
    if (n > 0) worker();  // this thread is one of the writers
    for (auto& t : workers) t.join();
  }
  report.phases.write = Since(tw);

  double now_wall = clock_->WallSeconds();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (decisions[i].verdict != Verdict::kHot) continue;
    ++report.hot_nodes;
    auto& hv = report.holds[nodes[i]->name];
    for (const auto& h : decisions[i].holds) {
      const Rule& r = rules_[h.rule];
      hv.push_back(HoldReport{r.name, OpName(r.op), h.value, r.threshold, r.clear_threshold,
                              now_wall - ToSeconds(now - h.since), h.stale});
    }
  }
  report.duration_seconds = ToSeconds(std::chrono::steady_clock::now() - t0);
  report.cpu_seconds = ProcessCpuSeconds() - cpu0;
  VLOG(1) << "cycle " << report.cycle << ": " << nodes.size() << " nodes, " << report.hot_nodes << " hot, "
          << plan.changes.size() << " changes, " << report.duration_seconds * 1000 << " ms";
  std::lock_guard<std::mutex> l(mu_);
  last_ = std::move(report);
  last_end_ = clock_->Now();
}

void Reconciler::Run(const std::atomic<bool>* stop) {
  // Deciding before the first LIST would see no nodes; wait for it (bounded, then cycle anyway
  // so /status keeps reporting why we are not ready).
  for (int i = 0; i < 600 && !cache_->Synced() && !stop->load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  while (!stop->load()) {
    auto start = std::chrono::steady_clock::now();
    RunCycle(stop);
    // A cycle frees its response bodies (about 1.2 MB per rule at 10,000 nodes); hand the pages
    // back to the kernel so the resident size does not ratchet up between cycles.
    malloc_trim(0);
    auto next = start + FromSeconds(options_.interval_seconds);
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_until(l, next, [&] { return triggered_ || stop->load(); });
    triggered_ = false;
  }
}

void Reconciler::Trigger() {
  {
    std::lock_guard<std::mutex> l(mu_);
    triggered_ = true;
  }
  cv_.notify_all();
}

void Reconciler::Wake() { cv_.notify_all(); }

CycleReport Reconciler::LastReport() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_;
}

ReconcilerCounters Reconciler::Counters() const {
  std::lock_guard<std::mutex> l(mu_);
  return counters_;
}

TimePoint Reconciler::LastCycleEnd() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_end_;
}

}  // namespace ds
