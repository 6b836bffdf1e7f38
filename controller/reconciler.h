// The evaluation loop: every interval (or at once when triggered by the Alertmanager webhook) one
// cycle runs its stages in order (RunCycle):
//   query    each rule once for all nodes, all rules at once (PrometheusClient)
//   match    series to nodes, fused with decoding (rules/node_matcher.h)
//   judge    one CycleJudge (rules/cycle_judge.h), the replay's too:
//            decide   verdicts with hysteresis, `for` and grace (rules/decider.h)
//            release  onPrometheusDown: the marks go after a long outage (rules/outage.h)
//            hold     the rebalancer keeps the mark of a node it is relieving (HoldForRebalance)
//            cap      the herd cap: at most so many nodes marked (rules/herd_cap.h)
//            plan     only the changes, only our mark (rules/planner.h)
//   writes   the changes as node writes with their records (Plan; -once: ReviewPlan)
//   write    within every write limit (NodeWriter), then Events for the marks
//   relieve  with rebalance: evict off marked nodes, balance, the mirror mode (Rebalancer)
//   report   what the cycle saw and did, for /status, /nodes and /metrics
// I/O sits behind NodeCache, PrometheusClient and KubeApi; the decisions are rules/ and
// rebalance/. A one-pass run primes the decider from Prometheus' history first
// (PrimeFromHistory, reconciler_once.cc).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/log_throttle.h"
#include "common/mutex.h"
#include "config/rule_config.h"
#include "controller/duration_metrics.h"
#include "controller/event_limiter.h"
#include "controller/event_recorder.h"
#include "controller/eviction_records.h"
#include "controller/node_writer.h"
#include "controller/prediction_source.h"
#include "controller/rebalancer.h"
#include "election/leadership.h"
#include "kube/node_cache.h"
#include "promql/prometheus_client.h"
#include "rules/cycle_judge.h"
#include "rules/decider.h"
#include "rules/herd_cap.h"
#include "rules/mark.h"
#include "rules/node_matcher.h"
#include "rules/outage.h"
#include "rules/ownership.h"
#include "rules/planner.h"
#include "rules/rule_scope.h"

namespace ds {

// Firing alerts kept between two cycles (Reconciler::Alerted), and read from one webhook body.
inline constexpr size_t kMaxAlerts = 1000;

struct ReconcilerOptions {
  Mark mark;
  double interval_seconds = 10;
  double grace_seconds = 30;  // missing-data grace
  // A cycle triggered by the webhook starts at least this long after the previous one (a new
  // leadership term's is not held back: see Trigger).
  double min_trigger_spacing_seconds = 2;
  WriteLimits writes;  // every limit on writing, held by the NodeWriter
  // A one-pass run (-once, app/once.h): when any rule's query failed, no mark is removed and no
  // ownership record rewritten in the cycle (a mark may still be set on another rule's evidence).
  // The loop keeps a failed rule's last verdicts for the grace time instead; one pass has no last
  // verdicts to keep, and exits with the error for the next run to judge again. And the cycle
  // lists the changes it planned (CycleReport::planned) for the pass's summary; the loop does not
  // (a mass flip at 10,000 nodes would keep a reason per node in every report).
  bool one_pass = false;
};

struct RuleReport {
  std::string name;
  bool ok = false;
  std::string error;
  size_t samples = 0, matched = 0, unmatched = 0, duplicates = 0;
  double query_seconds = 0;
  std::vector<std::string> warnings;
  // maxAge: node values dropped this cycle because their last update was too old (or, with an
  // ageQuery, unknown); they count as missing data.
  size_t too_old = 0;
  // rules[].interval: not due this cycle, its last answer reused (rules/rule_scope.h).
  bool reused = false;
  // relativeTo: mean: the mean of the cycle and how many values it took; `mean_known` false when
  // fewer than minNodes nodes had a value (the rule then gave no verdicts).
  bool relative = false, mean_known = false;
  double mean = 0;
  size_t mean_values = 0;
  // predict: the finished days the rule needs and how many it holds; fewer held: warming up,
  // no verdicts yet (its history is fetched again at each start, at most 2 days a cycle).
  size_t predict_days = 0, predict_days_held = 0;
  bool WarmingUp() const { return predict_days_held < predict_days; }
};

struct HoldReport {
  std::string rule;
  std::string op;
  double value = 0, threshold = 0, clear_threshold = 0;  // the thresholds the value was judged by
  double since_wall = 0;                                 // epoch seconds
  bool stale = false;
  // relativeTo: mean: threshold and clear_threshold are that mean plus or minus the rule's
  // offsets; the mean is shown so the threshold can be understood.
  bool relative = false;
  double mean = 0;
  ValueUnit unit = ValueUnit::kNone;  // the rule's, for people (FormatValue)
};

// Where a cycle's time went, for /metrics and the benchmarks.
struct CyclePhases {
  double query = 0;   // waiting on Prometheus (the slowest rule; queries run in parallel)
  double decode = 0;  // JSON decoding fused with node matching, summed over rules (CPU)
  double decide = 0, plan = 0, write = 0;
};

// What the last cycle saw of every managed node, for the web page (GET /api/v1/state): its
// value for each rule and its verdict. Built once per cycle and shared, never copied, by the
// requests that read it. 41 bytes a node plus 8 per rule and node (a name over 15 characters
// adds its length): 0.57 MB at 10,000 nodes and two rules (web_test,
// StateJson.At10000Nodes).
struct NodeTable {
  enum class State : uint8_t {
    kCold,
    kHot,
    kUnknown,  // no evidence this cycle (every query failed, adopting, missing data)
    kCapped,   // hot, left unmarked by the herd cap
    kHeld,     // cold, but the rebalancer holds the mark (evictions in flight or just done)
  };
  struct Column {
    std::string rule, op;
    // This cycle's (a relative rule's: the mean's, NaN when too few nodes had a value).
    double threshold = 0, clear_threshold = 0;
    double mean = 0;  // relative rules only
    bool relative = false;
    ValueUnit unit = ValueUnit::kNone;  // for people (FormatValue)
  };
  std::vector<Column> rules;
  std::vector<std::string> names;  // sorted, as the cycle's snapshot
  std::vector<double> values;      // names.size() x rules.size(), row-major; NaN: no value
  std::vector<State> states;       // per node
  std::vector<double> since_wall;  // per node: since when its rules hold it (epoch s), 0: not
  // Like values; 0 where the rule does not apply to the node (its nodeSelector: another pool),
  // which is no value but not missing data either. Empty: every rule applies to every node.
  std::vector<uint8_t> applies;
  double Value(size_t node, size_t rule) const { return values[node * rules.size() + rule]; }
  bool Applies(size_t node, size_t rule) const {
    return applies.empty() || applies[node * rules.size() + rule] != 0;
  }
  // Heap bytes held, for the figures in docs/contributing.md (Performance).
  size_t Bytes() const;
};

// A mark set or removed, with its reason; the reconciler keeps the newest kRecentChanges.
struct MarkChange {
  double at_wall = 0;
  std::string node;
  bool marked = false;  // set (true) or removed
  std::string reason;
  std::string level = {};  // graded marks: the level set or removed ("" without levels)
};
inline constexpr size_t kRecentChanges = 200;
// Cycles in a row the removal of the underused mark from a node that left the managed set may end
// undecided (a brownout) before it is given up, with a warning.
inline constexpr int kUnmarkDepartedTries = 30;

struct CycleReport {
  uint64_t cycle = 0;
  double started_wall = 0;
  double duration_seconds = 0;
  double cpu_seconds = 0;  // process CPU time during the cycle
  // CPU time of the rebalance step on the cycle's thread (its LISTs, usage query, evictions and
  // Events with their decoding and decisions): what rebalancing adds to a cycle, without the
  // other threads (watch, scrapes) that the process figure counts while the cycle runs.
  double rebalance_cpu_seconds = 0;
  double rebalance_cpu_seconds_total = 0;  // over every cycle since start, this one included
  CyclePhases phases;
  size_t managed_nodes = 0;
  size_t hot_nodes = 0;
  size_t writes_ok = 0, writes_failed = 0, deferred = 0;
  size_t held_back = 0;  // changes whose node waits out a failure backoff
  bool all_queries_failed = false;
  bool skipped = false;  // cache not synced yet, or standby
  bool standby = false;  // another replica holds the leader lease: nothing queried or written
  std::vector<RuleReport> rules;
  std::map<std::string, std::vector<HoldReport>> holds;  // hot nodes -> why
  // The herd cap (rules/herd_cap.h): how many nodes may carry the mark, and the hot nodes left
  // unmarked because that many already do (hottest first; they are in `holds` and hot_nodes).
  size_t mark_limit = 0;
  std::vector<std::string> capped;
  // Seconds every query has been failing (0 while Prometheus answers), and whether the marks
  // are being released for it (onPrometheusDown: release, rules/outage.h).
  double outage_seconds = 0;
  bool releasing = false;
  // Every managed node's values and verdict (null when the cycle was skipped: standby, cache
  // not synced), and the newest mark changes, oldest first (kept across cycles and terms).
  std::shared_ptr<const NodeTable> table;
  std::shared_ptr<const std::vector<MarkChange>> recent_changes;
  // With ReconcilerOptions::one_pass, the marks this cycle planned to set and remove (before the
  // write limits, in node order; at_wall is the cycle's start): with recent_changes they say what
  // was written, and with -dry_run what would have been (a one-pass run's summary, app/once.h).
  std::vector<MarkChange> planned;
};

struct ReconcilerCounters {
  uint64_t cycles = 0;
  uint64_t label_sets = 0, label_removals = 0, write_errors = 0, write_retries = 0;
  uint64_t record_writes = 0;     // the held-by annotation written or removed alone
  uint64_t removals_changed = 0;  // removals not written: the node changed since planned
  // Taint mode: sets and removals that carried our taint, and 409s on a taint edit (someone
  // wrote the node between our read and our write: read again, edited afresh).
  uint64_t taint_sets = 0, taint_removals = 0, taint_conflicts = 0;
  uint64_t events_posted = 0, events_suppressed = 0, event_errors = 0;  // mark Events
  std::map<std::string, uint64_t> query_errors;                         // by rule
};

// The node cache the cycle and the rebalancer read, as production builds it: the managed nodes
// (rule.yaml's nodeSelector, on the server), and of their labels only the keys the controller
// reads (our key, rules[].nodeSelector's, rebalance.nodeSelector's), so that 10,000 nodes stay
// small. Other labels (a pod's nodeSelector may name any) are read from the node itself where
// needed (the rebalancer's destinations). Tests build their cache with this too.
NodeCacheOptions CycleCacheOptions(const RuleConfig& rules);

// The past cycles Reconciler::PrimeFromHistory feeds the decider (Unix seconds, ascending): one
// each `interval`, on multiples of it (as long-term stores answer range queries), the last the
// newest before now_wall, the first at least the longest `for` of the rules it primes before
// now_wall, so a node over its threshold on every step has been for `for` by the cycle at now.
// Empty when no such rule has a `for` (predict: rules are not primed). REQUIRES: interval > 0,
// a whole number of milliseconds (app/options.cc refuses others).
std::vector<double> PrimeSteps(const std::vector<Rule>& rules, double now_wall, double interval);

class Reconciler {
 public:
  // All pointers must outlive the Reconciler. With a `leadership`, cycles run only while it says
  // this replica is the leader, and every write checks it again just before it is sent. With a
  // `rebalancer`, each cycle ends by relieving the marked nodes that qualify, and the marks it
  // holds stay although their nodes cooled.
  Reconciler(const RuleConfig& rules, ReconcilerOptions options, NodeCache* cache,
             PrometheusClient* prom, KubeApi* kube, const Clock* clock,
             const Leadership* leadership = nullptr, Rebalancer* rebalancer = nullptr);

  // One evaluation cycle. Thread-compatible: call from one thread at a time.
  void RunCycle(const std::atomic<bool>* stop);

  // A one-pass run (-once, app/once.h) has no earlier cycles to have started `for` timers. Before
  // its one RunCycle, this feeds the decider each rule's history from Prometheus as the cycles
  // the loop would have run: range queries over [now - the longest `for` - one interval,
  // now - one interval] at a step of the interval, matched to the cache's nodes as a cycle
  // matches them (the replay's step reader, promql/range_query.h), each node with the mark and
  // record it carries now (so adoption and hysteresis start from them). A node over its threshold
  // for only part of that window stays pending. Writes nothing. OK at once when no rule has a
  // `for` (the cycle needs no history). A failed range query fails the call, naming the rule;
  // the caller should then write nothing (the decider is left partly primed). `predict:` rules
  // are not primed (their values are not their query's of the moment), nor is rules[].interval
  // (every step reads every rule). REQUIRES: the cache is synced; no cycle has run yet.
  Status PrimeFromHistory(const std::atomic<bool>* stop);

  // Runs cycles every interval until *stop; waits for the cache's first sync.
  void Run(const std::atomic<bool>* stop);
  // Asks for a cycle (coalesced with one already pending). A webhook's trigger (`spaced`) starts
  // no sooner than min_trigger_spacing_seconds after the previous cycle started, so that callers
  // cannot drive back-to-back cycles; leadership starting a term asks for one at once.
  // Thread-safe.
  void Trigger(bool spaced = true);
  // Wakes Run() so it can see *stop. Thread-safe.
  void Wake();
  // The label sets of firing alerts (the webhook's): the next cycle's rebalancer relieves the
  // nodes they name (matched as series are: node, instance, ...) without waiting for `after`.
  // Thread-safe.
  void Alerted(std::vector<Labels> alerts);

  // A reloaded rule.yaml (config/rule_reload.h: only its reloadable parts differ). It takes
  // effect at the start of the next cycle, on the cycle's thread; rules defined as before keep
  // their state (Decider::Rebase). Thread-safe.
  void Reload(const RuleConfig& rules);

  // Called on the cycle's thread with each cycle's report as it is published (the page's
  // history, web/value_history.h). Set before Run.
  void OnPublish(std::function<void(const CycleReport&)> observer) {
    observer_ = std::move(observer);
  }

  // Thread-safe copies for the HTTP endpoints.
  CycleReport LastReport() const;
  ReconcilerCounters Counters() const;
  // Steady time the last cycle ended (epoch 0 if none yet).
  TimePoint LastCycleEnd() const;
  // Steady time the loop last moved on: a cycle stage ended, a write attempt ended, a long wait
  // woke. Liveness is judged on this, not on whole cycles: a cycle of many slow writes is alive.
  // Thread-safe.
  TimePoint LastProgress() const;
  // How long cycles and rule queries took, as histograms (one observation per cycle that ran,
  // one per rule query). Thread-safe.
  const DurationMetrics& durations() const { return durations_; }
  const ReconcilerOptions& options() const { return options_; }
  const std::vector<Rule>& rules() const { return rules_; }

 private:
  // What the query and match stages found: per rule, a value per node of the snapshot.
  struct Evidence {
    std::vector<MatchedValues> matched;         // per rule
    std::vector<RuleInput> inputs;              // per rule; values point into `matched`
    std::vector<std::vector<uint8_t>> applies;  // per rule: RuleScope::Applies
  };

  // What each node of the snapshot carries of ours, read once per cycle: the decider (adoption)
  // and the planner both need it.
  struct NodeMarks {
    std::vector<NodeInput> decide;  // per node; owners point into `owners`
    std::vector<PlanNode> plan;     // per node; recorded points into `owners`
    // Per node: its readable record for our mark, or null. Only marked nodes have one, so they
    // are kept apart from the per-node vectors (an optional record per node was 2 MB a cycle at
    // 10,000 nodes).
    const Ownership* record(size_t node) const {
      return record_at[node] == kNoRecord ? nullptr : &records[record_at[node]];
    }
    static constexpr uint32_t kNoRecord = 0xffffffffu;
    std::vector<uint32_t> record_at;  // per node: its index in `records`, or kNoRecord
    std::vector<Ownership> records;
    std::vector<std::vector<size_t>> owners;  // per node: the rules its record names
    std::vector<OwnedParts> owned;  // per node: the parts of our mark that are ours to remove
  };

  // The stages of RunCycle, in order.
  void ApplyReload();  // a pending Reload, if any
  void IndexRules();   // label_filters_, rule_index_, scope_ and asked_by_ from rules_
  bool MayRun(CycleReport* report);  // cache synced, leader; a new term resets the decider
  void RefreshMatcher(const NodeSnapshot& snap);
  Evidence QueryAndMatch(const NodeSnapshot& snap, CycleReport* report);
  // QueryAndMatch's steps: every due rule's query (and ageQuery) sent at once; then per rule its
  // last answer reused (not due: rules[].interval), or its answer taken in (false: it failed)
  // with what deserves a log line about it.
  struct Queries;
  Queries SendQueries(TimePoint now, double now_wall);
  void ReuseLastAnswer(size_t r, const std::vector<std::string_view>& names, double now_wall,
                       Evidence* ev, RuleReport* rr);
  bool TakeAnswer(size_t r, Queries* q, const NodeSnapshot& snap,
                  const std::vector<std::string_view>& names, TimePoint now, double now_wall,
                  Evidence* ev, CycleReport* report);
  void LogAnswerProblems(size_t r, const RuleReport& rr, const MatchedValues& matched,
                         const NodeSnapshot& snap, const std::vector<std::string>& warnings);
  NodeMarks ReadMarks(const NodeSnapshot& snap);
  // The CycleJudge with the rebalancer's hold, and what the cycle reports and logs of it (the
  // relative rules' means, an outage release, the herd cap).
  CycleJudgement Judge(const NodeSnapshot& snap, const NodeMarks& marks, const Evidence& evidence,
                       TimePoint now, CycleReport* report);
  std::vector<MarkWrite> Plan(const NodeSnapshot& snap, const NodeMarks& marks,
                              const CycleJudgement& judged, TimePoint now,
                              CycleReport* report) const;
  // After Plan, in a one-pass run: when a query failed, keeps only the marks to set on unmarked
  // nodes; lists the marks to set and remove in report->planned (reconciler_once.cc).
  void ReviewPlan(const NodeMarks& marks, std::vector<MarkWrite>* writes,
                  CycleReport* report) const;
  // PrimeFromHistory's decisions, on answers already fetched: per rule its range answer (and
  // its ageQuery's), null for a rule not primed. Pure but for the decider's state it moves on.
  struct History;
  void PrimeDecider(const NodeSnapshot& snap, const History& history, TimePoint now,
                    double now_wall);
  // Adds the removals of our mark from nodes that left the managed set (NodeCache::
  // TakeDepartures), kept until written or refused; keeps `writes` sorted by node name.
  void PlanDepartures(std::vector<MarkWrite>* writes);
  // Takes the mirror mode's mark off the nodes that left the managed set with it (conditional:
  // only while the value is still the underused one), through the node writer.
  void UnmarkDepartedUnderused(const std::atomic<bool>* stop);
  // Returns the marks set and removed (for their Events).
  std::vector<MarkWrite> Write(const std::vector<MarkWrite>& writes, const std::atomic<bool>* stop,
                               CycleReport* report);
  // Events on the nodes whose mark was set or removed, within the EventLimiter's limits; repeats
  // counted in the first Event's series (EventRecorder), and series that ended get their final
  // count.
  void PostMarkEvents(const NodeSnapshot& snap, const std::vector<MarkWrite>& written,
                      const std::atomic<bool>* stop);
  // Keeps the marks the rebalancer holds (evictions in flight or just done, also by an earlier
  // term as the record says): a cold verdict on such a node, or with graded marks a fall into a
  // cooler level's band, becomes unknown, which changes nothing. The judge does not call it
  // while an outage release is in force: the operator chose marks that go when the metrics do.
  void HoldForRebalance(const NodeMarks& marks, std::vector<NodeDecision>* decisions) const;
  // The herd cap's outcome in the report, and a (throttled) warning naming capped nodes.
  void ReportCap(const NodeSnapshot& snap, const CapOutcome& out, CycleReport* report);
  void Relieve(const NodeSnapshot& snap, const NodeMarks& marks, const Evidence& evidence,
               const std::vector<NodeDecision>& decisions, const std::vector<bool>& cold,
               const std::atomic<bool>* stop);
  // What the rules measured of each node, for relief and its fit check (`in`, one per node of
  // the snapshot: node, load, bytes available and their floor, balance's ceiling and
  // destinations).
  void MeasureForRelief(const NodeSnapshot& snap, const Evidence& evidence,
                        const std::vector<NodeDecision>& decisions,
                        const std::vector<std::shared_ptr<const PoolMean>>& pools,
                        std::vector<ReliefInput>* in) const;
  // Per rule, the pool of a relative rule with a resource (balance, rebalance/pool_mean.h) as this
  // cycle's mean took it; null for the other rules and when the mean is unknown. Its nodes
  // (PoolMean::per_unit) only when the rule holds some node (`decisions`): only then is it a goal.
  std::vector<std::shared_ptr<const PoolMean>> BalancePools(
      const NodeSnapshot& snap, const Evidence& evidence,
      const std::vector<NodeDecision>& decisions) const;
  // The nodes rebalance.referenceQuery calls hot (each series names one), for the discovery rate.
  std::vector<std::string> ReferenceHot(const NodeSnapshot& snap);
  // Whether a write or an eviction planned in this term may still be sent.
  bool MaySend(const std::atomic<bool>* stop, uint64_t planned_in) const;
  void ReportHolds(const NodeSnapshot& snap, const std::vector<NodeDecision>& decisions,
                   TimePoint now, CycleReport* report) const;
  // The NodeTable of the cycle (after ReportHolds: it reads the holds and the capped nodes).
  void ReportTable(const NodeSnapshot& snap, const NodeMarks& marks, const Evidence& evidence,
                   const std::vector<NodeDecision>& decisions, const std::vector<bool>& cold,
                   CycleReport* report) const;
  // Adds the marks set and removed to recent_changes_.
  void RememberChanges(const std::vector<MarkWrite>& written);
  void Publish(CycleReport report);
  void MarkProgress();

  std::string DescribeHolds(const NodeDecision& d) const;
  // The record for the rules that hold the node now; a rule already recorded keeps its `since`.
  // `taint_not_ours`: the node carries a taint equal to ours that is not ours (Ownership).
  std::string RecordFor(const NodeDecision& d, const Ownership* old, bool taint_not_ours,
                        TimePoint now, double now_wall) const;

  // Replaced only by ApplyReload, on the cycle's thread.
  std::vector<Rule> rules_;
  const ReconcilerOptions options_;
  EventLimiter events_;           // cycle thread only
  EventRecorder event_recorder_;  // cycle thread only
  std::optional<RuleConfig> pending_reload_ GUARDED_BY(mu_);
  NodeCache* const cache_;
  PrometheusClient* const prom_;
  const Clock* const clock_;
  const Leadership* const leadership_;
  KubeApi* const kube_;
  Rebalancer* const rebalancer_;       // null: rebalancing is off
  const std::string reference_query_;  // rebalance.referenceQuery, for the discovery rate
  const std::string underused_value_;  // rebalance.underused's value; "" when the mode is off
  uint64_t term_ = 0;                  // the leadership term judge_'s state belongs to
  CycleJudge judge_;                   // the decider's state, the outage clock, the herd cap
  NodeWriter writer_;                  // every node write of the cycle and of the rebalancer
  EvictionRecords eviction_records_;
  LogThrottle throttle_{300};
  std::vector<LabelFilter> label_filters_;    // per rule: the series labels matching needs
  std::map<std::string, size_t> rule_index_;  // rule name -> index, to read records
  std::vector<size_t> asked_by_;  // per rule: the rule whose query answers it (SharedQueries)
  RuleScope scope_{{}};           // rules[].nodeSelector
  std::vector<std::optional<RuleAnswer>> answers_;  // rules[].interval: last answers, per rule
  // Nodes that left the managed set with our record on, until their mark is removed. Touched by
  // RunCycle and (under departed_mu_) by writer threads.
  Mutex departed_mu_;
  std::map<std::string, NodeInfo> departed_ GUARDED_BY(departed_mu_);
  // Nodes that left the managed set with the mirror mode's mark, until it is taken off (cycle
  // thread only).
  struct Departed {
    bool drain_record = false;  // it has a drain record too
    int tries = 0;              // cycles that could not decide (kUnmarkDepartedTries at most)
  };
  std::map<std::string, Departed> underused_departed_;

  // Node index, rebuilt only when the set of nodes or their addresses change.
  uint64_t matcher_topology_ = ~uint64_t{0};
  std::unique_ptr<NodeMatcher> matcher_;

  mutable Mutex mu_;
  CondVar cv_;
  bool triggered_ GUARDED_BY(mu_) = false;
  bool trigger_spaced_ GUARDED_BY(mu_) = false;  // every pending trigger may wait the spacing
  bool query_all_ GUARDED_BY(mu_) = false;       // triggered; every rule is due (rule_scope.h)
  // Firing alerts not yet seen by a cycle, with when they came.
  std::vector<std::pair<TimePoint, Labels>> alerts_ GUARDED_BY(mu_);
  CycleReport last_ GUARDED_BY(mu_);
  std::function<void(const CycleReport&)> observer_;  // OnPublish; set before Run
  double rebalance_cpu_total_ GUARDED_BY(mu_) = 0;
  ReconcilerCounters counters_ GUARDED_BY(mu_);  // the write counters live in writer_
  TimePoint last_end_ GUARDED_BY(mu_){};
  std::atomic<Duration::rep> progress_{0};  // LastProgress(), as ticks since the clock's epoch
  DurationMetrics durations_;               // thread-safe itself
  // Replaced, never changed in place, so a published report may share it.
  std::shared_ptr<const std::vector<MarkChange>> recent_changes_ GUARDED_BY(mu_);
  // The `predict:` rules' histories of finished days; their values come from here, not from a
  // query of now.
  PredictionSource predictions_{prom_, clock_};
};

}  // namespace ds
