// The sample-controller recipe: seed the node cache, script Prometheus, run one cycle, assert the
// recorded patches.
#include "controller/reconciler.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test/fakes/cycle_fixture.h"
#include "test/fakes/fake_leadership.h"

namespace ds {
namespace {

class ReconcilerTest : public CycleFixture {
 protected:
  void SetUp() override {
    for (int i = 1; i <= 3; ++i) {
      NodeInfo n;
      n.name = "node-" + std::to_string(i);
      n.addresses = {"10.0.0." + std::to_string(i)};
      api_.AddNode(n);
    }
    Rule cpu;
    cpu.name = "cpu";
    cpu.query = "cpu_pct";
    cpu.threshold = 80;
    cpu.clear_threshold = 60;
    Rule mem;
    mem.name = "mem";
    mem.query = "mem_avail";
    mem.op = Comparison::kLess;
    mem.threshold = 100;
    mem.clear_threshold = 200;
    cfg_.rules = {cpu, mem};
    // Three nodes, often two hot: the herd cap (its own tests below) would leave one unmarked.
    cfg_.max_marked_fraction = 1;
    opts_.interval_seconds = 10;
    opts_.grace_seconds = 30;
    opts_.writes.qps = 0;  // unlimited in unit tests
  }
  // Runs Run() on fake time for `cycles` cycles, calling `in_cycle` in each one's query; returns
  // the seconds (from now) at which each cycle queried Prometheus.
  std::vector<double> RunCycles(size_t cycles, const std::function<void()>& in_cycle) {
    std::vector<double> starts;
    const TimePoint t0 = clock_.Now();
    prom_.OnQuery("cpu_pct", [&] {
      starts.push_back(ToSeconds(clock_.Now() - t0));
      if (starts.size() == cycles) stop_ = true;
      in_cycle();
    });
    rec_->Run(&stop_);
    prom_.OnQuery("cpu_pct", nullptr);
    return starts;
  }
  void Cycle() {
    clock_.AdvanceSeconds(10);
    rec_->RunCycle(&stop_);
  }
  // `kubectl label node N status-`: the label goes, our record stays.
  void RemoveByHand(const std::string& node) {
    NodeEdit e;
    e.label = {NodeEdit::Op::kRemove, "status", "presure"};
    ASSERT_TRUE(api_.PatchNode(node, e).ok());
  }
  // The node's ownership record, parsed; fails the test when it has none.
  Ownership Record(const std::string& node) {
    auto n = api_.nodes()[node];
    const std::string* text = FindLabel(n.annotations, kHeldByAnnotation);
    if (text == nullptr) {
      ADD_FAILURE() << node << " has no record";
      return {};
    }
    auto o = ParseOwnership(*text);
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    return o.ok() ? *o : Ownership{};
  }
  std::vector<std::string> RecordedRules(const std::string& node) {
    std::vector<std::string> names;
    for (const auto& r : Record(node).rules) names.push_back(r.rule);
    return names;
  }
  // A node as a previous run (or another leader) left it: marked, with this record.
  void MarkedBefore(const std::string& node, std::vector<std::string> rules) {
    Ownership o{"status", "presure", {}};
    for (auto& r : rules) o.rules.push_back(OwnerRule{r, 1795435200});
    NodeEdit e;
    e.label = {NodeEdit::Op::kSet, "status", "presure"};
    e.annotation = {NodeEdit::Op::kSet, kHeldByAnnotation, FormatOwnership(o)};
    ASSERT_TRUE(api_.PatchNode(node, e).ok());
  }
};

TEST_F(ReconcilerTest, LabelsHotNodeAndOnlyWritesChanges) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 20}, {"node-2", 95}, {"node-3", 50}});
  prom_.SetValues("mem_avail", {{"10.0.0.1", 500}, {"10.0.0.2", 500}, {"10.0.0.3", 50}},
                  "instance");
  Cycle();
  auto p = api_.patches();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_TRUE(Labelled("node-2"));
  EXPECT_TRUE(Labelled("node-3")) << "memory.available below its threshold";
  EXPECT_FALSE(Labelled("node-1"));
  for (const auto& c : p) {
    EXPECT_EQ(c.key, "status");
    EXPECT_EQ(c.value, "presure");
  }
  // Steady state: more cycles, no writes.
  for (int i = 0; i < 5; ++i) Cycle();
  EXPECT_EQ(api_.patches().size(), 2u);
  EXPECT_EQ(prom_.calls("cpu_pct"), 6) << "one query per rule per cycle";
  auto report = rec_->LastReport();
  EXPECT_EQ(report.hot_nodes, 2u);
  EXPECT_EQ(report.holds.at("node-3")[0].rule, "mem");
}

// The reason a mark gives (its log line, Event and the page's change list) says the value and
// threshold in the rule's unit; the numbers stay raw in the report.
TEST_F(ReconcilerTest, TheReasonSaysTheValueInTheRulesUnit) {
  cfg_.rules[1].unit = ValueUnit::kBytes;
  cfg_.rules[1].threshold = 500e6;
  cfg_.rules[1].clear_threshold = 600e6;
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 20}, {"node-2", 20}, {"node-3", 20}});
  prom_.SetValues("mem_avail", {{"10.0.0.1", 900e6}, {"10.0.0.2", 125169277}}, "instance");
  Cycle();
  const CycleReport r = rec_->LastReport();
  ASSERT_NE(r.recent_changes, nullptr);
  ASSERT_EQ(r.recent_changes->size(), 1u);
  EXPECT_EQ(r.recent_changes->front().reason, "rule mem value 119.4 MiB < 476.8 MiB");
  EXPECT_EQ(r.holds.at("node-2")[0].value, 125169277);
  EXPECT_EQ(r.holds.at("node-2")[0].unit, ValueUnit::kBytes);
}

// The web page's data: every node's value per rule and verdict of the last cycle, and the mark
// changes with their reasons, newest last, bounded.
TEST_F(ReconcilerTest, ReportsEveryNodesValuesAndTheRecentChanges) {
  cfg_.max_marked = 1;  // node-2 and node-3 hot: one of them is capped
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 20}, {"node-2", 95}, {"node-3", 97}});
  prom_.SetValues("mem_avail", {{"10.0.0.1", 500}, {"10.0.0.2", 150}}, "instance");
  Cycle();
  const CycleReport r = rec_->LastReport();
  ASSERT_NE(r.table, nullptr);
  const NodeTable& t = *r.table;
  ASSERT_EQ(t.rules.size(), 2u);
  EXPECT_EQ(t.rules[1].rule, "mem");
  EXPECT_EQ(t.rules[1].op, "<");
  EXPECT_EQ(t.rules[1].clear_threshold, 200);
  ASSERT_EQ(t.names, (std::vector<std::string>{"node-1", "node-2", "node-3"}));
  EXPECT_EQ(t.Value(0, 0), 20);
  EXPECT_EQ(t.Value(1, 1), 150);
  EXPECT_TRUE(std::isnan(t.Value(2, 1))) << "no sample: no value";
  EXPECT_EQ(t.states[0], NodeTable::State::kCold);
  // The hottest (relative margin) gets the one place; the other is capped.
  EXPECT_EQ(t.states[2], NodeTable::State::kHot);
  EXPECT_EQ(t.states[1], NodeTable::State::kCapped);
  EXPECT_EQ(t.since_wall[0], 0);
  EXPECT_GT(t.since_wall[2], 0);
  EXPECT_GT(t.Bytes(), 3 * sizeof(std::string));
  ASSERT_NE(r.recent_changes, nullptr);
  ASSERT_EQ(r.recent_changes->size(), 1u);
  const MarkChange& c = r.recent_changes->front();
  EXPECT_EQ(c.node, "node-3");
  EXPECT_TRUE(c.marked);
  EXPECT_EQ(c.reason, "rule cpu value 97 > 80");
  // Cooled: the unmark joins the list, after the mark.
  prom_.SetValues("cpu_pct", {{"node-1", 20}, {"node-2", 20}, {"node-3", 20}});
  prom_.SetValues("mem_avail", {{"10.0.0.1", 500}, {"10.0.0.2", 500}, {"10.0.0.3", 500}},
                  "instance");
  Cycle();
  auto changes = rec_->LastReport().recent_changes;
  ASSERT_EQ(changes->size(), 2u);
  EXPECT_EQ((*changes)[1].node, "node-3");
  EXPECT_FALSE((*changes)[1].marked);
  EXPECT_EQ((*changes)[1].reason, "every rule is below its clear threshold");
  EXPECT_EQ(r.recent_changes->size(), 1u) << "a published list is never changed in place";
  // Bounded: flapping keeps only the newest kRecentChanges.
  for (size_t i = 0; i < kRecentChanges; ++i) {
    prom_.SetValues("cpu_pct", {{"node-1", i % 2 == 0 ? 95.0 : 20.0}});
    Cycle();
  }
  changes = rec_->LastReport().recent_changes;
  EXPECT_EQ(changes->size(), kRecentChanges);
  EXPECT_EQ(changes->back().node, "node-1");
  EXPECT_FALSE(changes->back().marked);
  EXPECT_LE(changes->front().at_wall, changes->back().at_wall);
}

// relativeTo: mean. A node 25 points above the cluster's mean is marked; the same value in a
// cluster that is uniformly as hot is not: only standing out counts.
class RelativeRuleTest : public ReconcilerTest {
 protected:
  void SetUp() override {
    ReconcilerTest::SetUp();
    NodeInfo n;
    n.name = "node-4";
    n.addresses = {"10.0.0.4"};
    api_.AddNode(n);
    Rule skew;
    skew.name = "cpu-skew";
    skew.query = "cpu_pct";
    skew.threshold = 20;
    skew.clear_threshold = 10;
    skew.relative_to = Rule::Relative::kMean;
    cfg_.rules = {skew};
  }
};

TEST_F(RelativeRuleTest, ANodeWellAboveTheMeanIsMarkedAUniformlyHotClusterIsNot) {
  Build();
  // Mean 65: node-1 at 90 is 25 over it, past the offset of 20.
  prom_.SetValues("cpu_pct", {{"node-1", 90}, {"node-2", 55}, {"node-3", 55}, {"node-4", 60}});
  Cycle();
  EXPECT_TRUE(Labelled("node-1"));
  EXPECT_FALSE(Labelled("node-2"));
  EXPECT_FALSE(Labelled("node-4"));
  EXPECT_EQ(api_.patches().size(), 1u);
  CycleReport r = rec_->LastReport();
  ASSERT_EQ(r.rules.size(), 1u);
  EXPECT_TRUE(r.rules[0].relative);
  EXPECT_TRUE(r.rules[0].mean_known);
  EXPECT_DOUBLE_EQ(r.rules[0].mean, 65);
  EXPECT_EQ(r.rules[0].mean_values, 4u);
  // /nodes shows the threshold used and the mean it came from.
  const HoldReport& h = r.holds.at("node-1").at(0);
  EXPECT_DOUBLE_EQ(h.threshold, 85);
  EXPECT_DOUBLE_EQ(h.clear_threshold, 75);
  EXPECT_TRUE(h.relative);
  EXPECT_DOUBLE_EQ(h.mean, 65);
  ASSERT_NE(r.recent_changes, nullptr);
  EXPECT_EQ(r.recent_changes->front().reason, "rule cpu-skew value 90 > 85 (mean 65 + 20)");
  ASSERT_NE(r.table, nullptr);
  EXPECT_DOUBLE_EQ(r.table->rules[0].threshold, 85) << "the page colours by this cycle's";
  EXPECT_DOUBLE_EQ(r.table->rules[0].mean, 65);

  // The whole cluster as hot as node-1 was: no node stands out, node-1 clears (mean 90).
  prom_.SetValues("cpu_pct", {{"node-1", 90}, {"node-2", 90}, {"node-3", 88}, {"node-4", 92}});
  Cycle();
  EXPECT_FALSE(Labelled("node-1"));
  EXPECT_FALSE(Labelled("node-4"));
  EXPECT_EQ(rec_->LastReport().hot_nodes, 0u);
}

TEST_F(RelativeRuleTest, TooFewNodesWithAValueDecideNothingAndKeepTheMarks) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 90}, {"node-2", 55}, {"node-3", 55}, {"node-4", 60}});
  Cycle();
  ASSERT_TRUE(Labelled("node-1"));
  // Two series left (minNodes 3): a mean of two says nothing about the cluster. Node-1 reads
  // low, but that is no evidence: its mark stays, and node-2 is not marked either.
  prom_.SetValues("cpu_pct", {{"node-1", 10}, {"node-2", 99}});
  Cycle();
  EXPECT_TRUE(Labelled("node-1"));
  EXPECT_FALSE(Labelled("node-2"));
  EXPECT_EQ(api_.patches().size(), 1u);
  CycleReport r = rec_->LastReport();
  EXPECT_FALSE(r.rules[0].mean_known);
  EXPECT_EQ(r.rules[0].mean_values, 2u);
  ASSERT_NE(r.table, nullptr);
  EXPECT_TRUE(std::isnan(r.table->rules[0].threshold)) << "no threshold without a mean";
  EXPECT_EQ(r.table->states[0], NodeTable::State::kUnknown);
}

TEST_F(ReconcilerTest, RemovesLabelWhenCooledPastClearThreshold) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  EXPECT_TRUE(Labelled("node-1"));
  prom_.SetValues("cpu_pct", {{"node-1", 70}});
  Cycle();
  EXPECT_TRUE(Labelled("node-1"));
  prom_.SetValues("cpu_pct", {{"node-1", 40}});
  Cycle();
  EXPECT_FALSE(Labelled("node-1"));
  auto p = api_.patches();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_FALSE(p[1].set);
}

TEST_F(ReconcilerTest, PrometheusOutageWritesNothing) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  ASSERT_EQ(api_.patches().size(), 1u);
  prom_.SetError("cpu_pct", Status::Unavailable("connection refused"));
  prom_.SetError("mem_avail", Status::Unavailable("connection refused"));
  for (int i = 0; i < 10; ++i) Cycle();
  EXPECT_EQ(api_.patches().size(), 1u) << "no label removed while Prometheus is down";
  EXPECT_TRUE(rec_->LastReport().all_queries_failed);
  EXPECT_EQ(rec_->Counters().query_errors.at("cpu"), 10u);
}

TEST_F(ReconcilerTest, OnPrometheusDownReleaseRemovesTheMarksAfterReleaseAfter) {
  cfg_.release_on_outage = true;
  cfg_.release_after_seconds = 60;
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}, {"node-2", 95}});
  Cycle();
  ASSERT_TRUE(Labelled("node-1"));
  ASSERT_TRUE(Labelled("node-2"));
  prom_.SetError("cpu_pct", Status::Unavailable("connection refused"));
  prom_.SetError("mem_avail", Status::Unavailable("connection refused"));
  for (int i = 0; i < 6; ++i) Cycle();  // the first failed cycle starts the count: 50 s
  EXPECT_TRUE(Labelled("node-1")) << "held until releaseAfter";
  EXPECT_EQ(rec_->LastReport().outage_seconds, 50);
  EXPECT_FALSE(rec_->LastReport().releasing);
  Cycle();
  EXPECT_TRUE(rec_->LastReport().releasing);
  EXPECT_FALSE(Labelled("node-1"));
  EXPECT_FALSE(Labelled("node-2"));
  EXPECT_EQ(FindLabel(api_.nodes()["node-1"].annotations, kHeldByAnnotation), nullptr)
      << "the record goes with the mark";
  // Prometheus is back: the node is judged afresh.
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  prom_.SetValues("mem_avail", {}, "instance");
  Cycle();
  EXPECT_TRUE(Labelled("node-1"));
  EXPECT_EQ(rec_->LastReport().outage_seconds, 0);
}

TEST_F(ReconcilerTest, MarkAndUnmarkPostEventsOnTheNodeWithinTheirRateLimit) {
  Build();
  auto flap = [&](double cpu) {
    prom_.SetValues("cpu_pct", {{"node-1", cpu}});
    Cycle();
  };
  flap(95);
  ASSERT_TRUE(Labelled("node-1"));
  auto ev = api_.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ((ev[0].kind + "/" + ev[0].name), "Node/node-1");
  EXPECT_EQ(ev[0].reason, "Marked");
  EXPECT_EQ(ev[0].action, "Mark");
  EXPECT_EQ(ev[0].message, "Marked status=presure: rule cpu value 95 > 80");
  EXPECT_EQ(ev[0].series_count, 0) << "a first occurrence has no series";
  flap(20);
  ev = api_.events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].reason, "Unmarked");
  EXPECT_EQ(ev[1].action, "Unmark");
  EXPECT_EQ(ev[1].message, "Unmarked status=presure: every rule is below its clear threshold");
  // A metric flapping around its threshold: no more Events, but the first two count the repeats
  // in their series, within the limiter's burst (5 writes), and the rest are held back.
  for (int i = 0; i < 4; ++i) {
    flap(95);
    flap(20);
  }
  EXPECT_EQ(api_.events().size(), 2u);
  EXPECT_EQ(api_.patches().size(), 10u) << "every cycle writes the label";
  auto series = api_.series_patches();
  ASSERT_EQ(series.size(), 3u);
  EXPECT_EQ(series[0].event_name, ev[0].event_name) << "the Marked Event's series";
  EXPECT_EQ(series[0].series_count, 2);
  EXPECT_EQ(series[1].event_name, ev[1].event_name);
  EXPECT_EQ(series[1].series_count, 2);
  EXPECT_EQ(series[2].series_count, 3);
  EXPECT_EQ(rec_->Counters().events_suppressed, 5u);
  // Five minutes later (the series still open: 6 min) the next write carries every repeat the
  // limiter held back.
  clock_.AdvanceSeconds(300);
  flap(95);
  series = api_.series_patches();
  ASSERT_EQ(series.size(), 4u);
  EXPECT_EQ(series[3].event_name, ev[0].event_name);
  EXPECT_EQ(series[3].series_count, 6) << "Marked six times";
  // Nothing repeats for the window: the Unmarked series closes with its final count (5), as
  // client-go's finishSeries writes it; the Marked one had all of its count written already.
  clock_.AdvanceSeconds(361);
  Cycle();
  series = api_.series_patches();
  ASSERT_EQ(series.size(), 5u);
  EXPECT_EQ(series[4].event_name, ev[1].event_name);
  EXPECT_EQ(series[4].series_count, 5);
  // The next change starts a new Event.
  flap(20);
  ev = api_.events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[2].reason, "Unmarked");
  EXPECT_NE(ev[2].event_name, ev[1].event_name);
}

TEST_F(ReconcilerTest, ASeriesWhoseEventExpiredIsCreatedAnewWithItsCount) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  prom_.SetValues("cpu_pct", {{"node-1", 20}});
  Cycle();
  auto ev = api_.events();
  ASSERT_EQ(ev.size(), 2u);
  api_.missing_events.insert(ev[0].event_name);  // the API server's event TTL removed it
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  ev = api_.events();
  ASSERT_EQ(ev.size(), 3u) << "the PATCH found nothing: created, as client-go's recorder does";
  EXPECT_EQ(ev[2].event_name, ev[0].event_name);
  EXPECT_EQ(ev[2].series_count, 2);
  EXPECT_EQ(rec_->Counters().event_errors, 0u);
}

TEST_F(ReconcilerTest, RestoresLabelRemovedByHand) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-2", 95}});
  Cycle();
  ASSERT_TRUE(Labelled("node-2"));
  // Someone removes it by hand; the watch tells the cache.
  RemoveByHand("node-2");
  ASSERT_TRUE(cache_->ListOnce().ok());
  Cycle();
  EXPECT_TRUE(Labelled("node-2"));
}

TEST_F(ReconcilerTest, RetriesTooManyRequestsAndGivesUpOnInvalid) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  api_.FailNextPatches(
      {Status(StatusCode::kTooManyRequests, "slow down").set_retry_after_seconds(0.05)});
  Cycle();
  EXPECT_EQ(api_.patches().size(), 2u) << "429 retried";
  EXPECT_TRUE(Labelled("node-1"));
  EXPECT_EQ(rec_->Counters().write_retries, 1u);

  prom_.SetValues("cpu_pct", {{"node-1", 95}, {"node-2", 95}});
  api_.FailNextPatches(
      {Status(StatusCode::kInvalidArgument, "Invalid: bad label").set_http_status(422)});
  Cycle();
  EXPECT_EQ(api_.patches().size(), 3u) << "422 is not retried";
  EXPECT_EQ(rec_->Counters().write_errors, 1u);
}

TEST_F(ReconcilerTest, DryRunNeverWrites) {
  opts_.writes.dry_run = true;
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  EXPECT_TRUE(api_.patches().empty());
  EXPECT_EQ(rec_->LastReport().hot_nodes, 1u);
}

TEST_F(ReconcilerTest, UnmatchedSeriesAreCountedNotLabelled) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-9", 95}, {"node-1", 10}});
  Cycle();
  EXPECT_TRUE(api_.patches().empty());
  EXPECT_EQ(rec_->LastReport().rules[0].unmatched, 1u);
}

TEST_F(ReconcilerTest, SkipsUntilCacheSynced) {
  cache_ = std::make_unique<NodeCache>(&api_, &clock_, NodeCacheOptions{});
  rec_ = std::make_unique<Reconciler>(cfg_, opts_, cache_.get(), &prom_, &api_, &clock_);
  Cycle();
  EXPECT_TRUE(rec_->LastReport().skipped);
  EXPECT_EQ(prom_.calls("cpu_pct"), 0);
}

TEST_F(ReconcilerTest, StandbyQueriesAndWritesNothing) {
  FakeLeadership lead;
  Build();
  rec_ = std::make_unique<Reconciler>(cfg_, opts_, cache_.get(), &prom_, &api_, &clock_, &lead);
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  for (int i = 0; i < 3; ++i) Cycle();
  EXPECT_TRUE(rec_->LastReport().standby);
  EXPECT_EQ(prom_.calls("cpu_pct"), 0) << "a standby does not load Prometheus";
  EXPECT_TRUE(api_.patches().empty());
  lead.leader = true;
  lead.term = 1;
  Cycle();
  EXPECT_FALSE(rec_->LastReport().standby);
  EXPECT_TRUE(Labelled("node-1"));
}

// The duration histograms (/metrics): one observation per cycle that ran, none for a standby's,
// and one per rule query, failed ones too.
TEST_F(ReconcilerTest, ObservesTheDurationOfEachCycleThatRanAndOfEachRuleQuery) {
  FakeLeadership lead;
  Build();
  rec_ = std::make_unique<Reconciler>(cfg_, opts_, cache_.get(), &prom_, &api_, &clock_, &lead);
  Cycle();
  lead.leader = true;
  lead.term = 1;
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  prom_.SetError("mem_avail", Status::Unavailable("connection refused"));
  Cycle();
  Cycle();
  std::map<std::string, uint64_t> counts;
  for (const auto& f : rec_->durations().Collect())
    for (const auto& m : f.metric)
      counts[f.name + (m.label.empty() ? "" : "{" + m.label[0].value + "}")] =
          m.histogram.sample_count;
  EXPECT_EQ(counts, (std::map<std::string, uint64_t>{
                        {"dynamic_scheduler_cycle_duration_seconds", 2},
                        {"dynamic_scheduler_query_duration_seconds{cpu}", 2},
                        {"dynamic_scheduler_query_duration_seconds{mem}", 2}}));
  EXPECT_EQ(rec_->Counters().query_errors.at("mem"), 2u);

  // A reload removes the rule mem: its series go with it (they would look like a rule that still
  // runs); cpu's keep counting.
  RuleConfig next = cfg_;
  next.rules = {cfg_.rules[0]};
  rec_->Reload(next);
  Cycle();
  counts.clear();
  for (const auto& f : rec_->durations().Collect())
    for (const auto& m : f.metric)
      counts[f.name + (m.label.empty() ? "" : "{" + m.label[0].value + "}")] =
          m.histogram.sample_count;
  EXPECT_EQ(counts, (std::map<std::string, uint64_t>{
                        {"dynamic_scheduler_cycle_duration_seconds", 3},
                        {"dynamic_scheduler_query_duration_seconds{cpu}", 3}}));
  EXPECT_EQ(rec_->Counters().query_errors.count("mem"), 0u);
}

// predict: after a start the rule's history is fetched again, at most 2 days a cycle. The report
// says how far it is, so that the page, /status and the state JSON show the warm-up.
TEST_F(ReconcilerTest, APredictRuleReportsItsWarmUp) {
  cfg_.rules[0].predict.enabled = true;
  cfg_.rules[0].predict.days = 3;
  cfg_.rules[0].predict.min_days = 1;
  cfg_.rules[0].predict.half_life_seconds = 86400;
  Build();
  Cycle();
  RuleReport cpu = rec_->LastReport().rules.at(0);
  EXPECT_FALSE(cpu.ok) << "no verdicts while warming up";
  EXPECT_TRUE(cpu.WarmingUp());
  EXPECT_EQ(cpu.predict_days, 3u);
  EXPECT_EQ(cpu.predict_days_held, 2u);
  EXPECT_FALSE(rec_->LastReport().rules.at(1).WarmingUp()) << "an ordinary rule never warms up";
  Cycle();
  cpu = rec_->LastReport().rules.at(0);
  EXPECT_TRUE(cpu.ok) << cpu.error;
  EXPECT_FALSE(cpu.WarmingUp());
  EXPECT_EQ(cpu.predict_days_held, 3u);
}

TEST_F(ReconcilerTest, NoWriteStartsAfterLeadershipEnds) {
  FakeLeadership lead;
  lead.leader = true;
  lead.term = 1;
  lead.allow_checks = 1;  // the cycle starts as leader; the renew deadline passes before the write
  Build();
  rec_ = std::make_unique<Reconciler>(cfg_, opts_, cache_.get(), &prom_, &api_, &clock_, &lead);
  prom_.SetValues("cpu_pct", {{"node-1", 95}, {"node-2", 95}});
  Cycle();
  EXPECT_TRUE(api_.patches().empty());
  EXPECT_EQ(rec_->LastReport().deferred, 2u);
  EXPECT_EQ(rec_->LastReport().writes_ok, 0u);
}

TEST_F(ReconcilerTest, WritesBelongToTheTermTheyWerePlannedIn) {
  FakeLeadership lead;
  lead.leader = true;
  lead.term = 1;
  // Check 0 starts the cycle, checks 1-3 let node-1's write start, wait and leave; from check 4
  // on this replica leads in a newer term: node-2's change was planned before another leader's.
  lead.new_term_after_checks = 4;
  opts_.writes.concurrency = 1;
  Build();
  rec_ = std::make_unique<Reconciler>(cfg_, opts_, cache_.get(), &prom_, &api_, &clock_, &lead);
  prom_.SetValues("cpu_pct", {{"node-1", 95}, {"node-2", 95}});
  Cycle();
  EXPECT_EQ(api_.patches().size(), 1u);
  EXPECT_TRUE(Labelled("node-1"));
  EXPECT_FALSE(Labelled("node-2"));
  EXPECT_EQ(rec_->LastReport().deferred, 1u);
}

TEST_F(ReconcilerTest, OutageKeepsExplainingTheMarkButAddsNothing) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  ASSERT_TRUE(Labelled("node-1"));
  prom_.SetError("cpu_pct", Status::Unavailable("connection refused"));
  prom_.SetError("mem_avail", Status::Unavailable("connection refused"));
  // Someone removes the mark by hand during the outage: it must not come back while we know
  // nothing.
  RemoveByHand("node-1");
  ASSERT_TRUE(cache_->ListOnce().ok());
  Cycle();
  EXPECT_FALSE(Labelled("node-1"));
  auto report = rec_->LastReport();
  EXPECT_EQ(report.hot_nodes, 0u) << "no evidence: not counted as hot";
  ASSERT_EQ(report.holds.count("node-1"), 1u) << "the last known reason is still shown";
  EXPECT_TRUE(report.holds.at("node-1")[0].stale);
}

// Runs Run() on fake time for `cycles` cycles, calling `after_query` in each; returns the
// seconds at which each cycle queried Prometheus.
TEST_F(ReconcilerTest, TriggeredCyclesKeepTheirMinimumSpacing) {
  opts_.min_trigger_spacing_seconds = 2;
  Build();
  // Every cycle is followed by another trigger (a webhook storm).
  EXPECT_EQ(RunCycles(5, [&] { rec_->Trigger(); }), (std::vector<double>{0, 2, 4, 6, 8}))
      << "not back to back, not every 10 s";
}

TEST_F(ReconcilerTest, ANewTermIsEvaluatedAtOnce) {
  opts_.min_trigger_spacing_seconds = 2;
  Build();
  EXPECT_EQ(RunCycles(3,
                      [&] {
                        rec_->Trigger();                  // a webhook ...
                        rec_->Trigger(/*spaced=*/false);  // ... and this replica starting a term
                      }),
            (std::vector<double>{0, 0, 0}));
}

TEST_F(ReconcilerTest, ProgressMovesDuringAWritePhase) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}, {"node-2", 95}, {"node-3", 95}});
  opts_.writes.qps = 1;  // 3 writes at 1/s: the write phase takes 2 s of fake time
  opts_.writes.burst = 1;
  opts_.writes.concurrency = 1;
  rec_ = std::make_unique<Reconciler>(cfg_, opts_, cache_.get(), &prom_, &api_, &clock_);
  const TimePoint t0 = clock_.Now();
  std::vector<double> progress_at_patch;
  api_.on_patch = [&](const std::string&) {
    progress_at_patch.push_back(ToSeconds(rec_->LastProgress() - t0));
  };
  rec_->RunCycle(&stop_);
  EXPECT_EQ(api_.patches().size(), 3u);
  EXPECT_EQ(ToSeconds(clock_.Now() - t0), 2.0);
  // Writes go out at 0, 1 and 2 s; each finished write counts as progress for liveness.
  EXPECT_EQ(progress_at_patch, (std::vector<double>{0, 0, 1}));
}

TEST_F(ReconcilerTest, NewTermStartsFromAFreshState) {
  cfg_.rules[0].for_seconds = 25;
  FakeLeadership lead;
  lead.leader = true;
  lead.term = 1;
  Build();
  rec_ = std::make_unique<Reconciler>(cfg_, opts_, cache_.get(), &prom_, &api_, &clock_, &lead);
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();  // t=10: over threshold, pending
  Cycle();  // t=20
  EXPECT_FALSE(Labelled("node-1"));
  // Another replica led for a while; this one is leader again: its old `for` timer must not count.
  lead.term = 2;
  Cycle();  // t=30: pending again from here
  Cycle();  // t=40: would have fired at 35 with the old timer
  Cycle();  // t=50
  EXPECT_FALSE(Labelled("node-1"));
  Cycle();  // t=60: 30 s over threshold in this term
  EXPECT_TRUE(Labelled("node-1"));
}

TEST_F(ReconcilerTest, TheMarkCarriesItsRecordWhichFollowsTheRulesThatHold) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  ASSERT_TRUE(Labelled("node-1"));
  Ownership o = Record("node-1");
  EXPECT_EQ(o.label_key, "status");
  EXPECT_EQ(o.label_value, "presure");
  ASSERT_EQ(o.rules.size(), 1u);
  EXPECT_EQ(o.rules[0].rule, "cpu");
  const double cpu_since = o.rules[0].since_wall;
  EXPECT_EQ(api_.patches().size(), 1u) << "mark and record in one PATCH";

  prom_.SetValues("mem_avail", {{"10.0.0.1", 50}});
  Cycle();
  EXPECT_EQ(RecordedRules("node-1"), (std::vector<std::string>{"cpu", "mem"}));
  EXPECT_EQ(Record("node-1").rules[0].since_wall, cpu_since) << "cpu keeps its since";
  prom_.SetValues("cpu_pct", {{"node-1", 20}});
  Cycle();
  EXPECT_EQ(RecordedRules("node-1"), (std::vector<std::string>{"mem"}));
  const size_t writes = api_.patches().size();
  Cycle();
  EXPECT_EQ(api_.patches().size(), writes) << "a true record is not rewritten";

  prom_.SetValues("mem_avail", {{"10.0.0.1", 500}});
  Cycle();
  EXPECT_FALSE(Labelled("node-1"));
  EXPECT_TRUE(api_.nodes()["node-1"].annotations.empty()) << "the record goes with the mark";
}

// After a restart (a new Reconciler), a node marked by the memory rule (85/75-like band here:
// mem < 100 marks, >= 200 clears) is adopted by memory alone, and not before memory reports.
TEST_F(ReconcilerTest, ARestartAdoptsOnlyTheRecordedRulesAndWaitsForThem) {
  MarkedBefore("node-1", {"mem"});
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 20}});  // cpu reports low; mem's series is absent
  Cycle();
  Cycle();
  EXPECT_TRUE(Labelled("node-1")) << "mem has not reported yet (within the grace)";
  prom_.SetValues("mem_avail", {{"10.0.0.1", 150}});  // in mem's band
  Cycle();
  EXPECT_TRUE(Labelled("node-1")) << "adopted by mem, which held it";
  EXPECT_TRUE(api_.patches().size() == 1u) << "only the set-up's write: nothing changed";

  // The same band value on a rule that did not hold the node does not adopt it.
  MarkedBefore("node-2", {"cpu"});
  prom_.SetValues("cpu_pct", {{"node-1", 20}, {"node-2", 50}});
  prom_.SetValues("mem_avail", {{"10.0.0.1", 150}, {"10.0.0.2", 150}});
  Build();  // another restart
  ASSERT_TRUE(cache_->ListOnce().ok());
  Cycle();
  EXPECT_FALSE(Labelled("node-2")) << "cpu (which held it) cleared; mem never held it";
  EXPECT_TRUE(Labelled("node-1"));
}

// `kubectl label node node-1 status=maintenance --overwrite` lands after the cycle's snapshot and
// before its removal is sent: the removal must not delete the operator's value.
TEST_F(ReconcilerTest, ARemovalNeverDeletesAValueWrittenMeanwhile) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  ASSERT_TRUE(Labelled("node-1"));
  prom_.SetValues("cpu_pct", {{"node-1", 20}});
  api_.on_patch = [&](const std::string& node) {
    NodeEdit e;
    e.label = {NodeEdit::Op::kSet, "status", "maintenance"};
    api_.on_patch = nullptr;
    ASSERT_TRUE(api_.PatchNode(node, e).ok());
  };
  Cycle();
  EXPECT_EQ(*FindLabel(api_.nodes()["node-1"].labels, "status"), "maintenance");
  EXPECT_EQ(rec_->LastReport().writes_failed, 0u);
  ASSERT_TRUE(cache_->ListOnce().ok());  // the watch shows the operator's value
  Cycle();
  EXPECT_EQ(*FindLabel(api_.nodes()["node-1"].labels, "status"), "maintenance");
  EXPECT_TRUE(api_.nodes()["node-1"].annotations.empty()) << "our record is dropped";
}

// A node that leaves the managed set (here: it becomes control-plane, which the default
// nodeSelector excludes) arrives as DELETED; its mark must not stay for ever.
TEST_F(ReconcilerTest, ANodeThatLeavesTheManagedSetLosesOurMark) {
  cfg_.node_selector = "!node-role.kubernetes.io/control-plane";
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}, {"node-2", 95}});
  Cycle();
  ASSERT_TRUE(Labelled("node-1"));
  ASSERT_TRUE(Labelled("node-2"));
  for (const char* name : {"node-1", "node-2"}) {
    NodeEdit e;
    e.label = {NodeEdit::Op::kSet, "node-role.kubernetes.io/control-plane", ""};
    ASSERT_TRUE(api_.PatchNode(name, e).ok());
  }
  // An operator has meanwhile put their own value on node-2: it is not ours to remove.
  NodeEdit theirs;
  theirs.label = {NodeEdit::Op::kSet, "status", "maintenance"};
  ASSERT_TRUE(api_.PatchNode("node-2", theirs).ok());
  ASSERT_TRUE(cache_->ListOnce().ok());  // the re-LIST no longer returns them
  ASSERT_EQ(cache_->Snapshot()->nodes.size(), 1u);
  Cycle();
  EXPECT_FALSE(Labelled("node-1"));
  EXPECT_TRUE(api_.nodes()["node-1"].annotations.empty());
  EXPECT_EQ(*FindLabel(api_.nodes()["node-2"].labels, "status"), "maintenance");
  Cycle();  // the conditional removal found the operator's value: only the record is ours
  EXPECT_EQ(*FindLabel(api_.nodes()["node-2"].labels, "status"), "maintenance");
  EXPECT_TRUE(api_.nodes()["node-2"].annotations.empty()) << "the record was ours";
  const size_t writes = api_.patches().size();
  Cycle();
  EXPECT_EQ(api_.patches().size(), writes) << "done once";
}

// The node leaves while the cycle queries Prometheus: after the cycle's snapshot was taken, before
// its departures are. It must not count as back (its departure dropped, our mark left on it).
TEST_F(ReconcilerTest, ANodeThatLeavesDuringTheCycleLosesOurMarkToo) {
  cfg_.node_selector = "!node-role.kubernetes.io/control-plane";
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  ASSERT_TRUE(Labelled("node-1"));
  prom_.OnQuery("cpu_pct", [&] {
    NodeEdit e;
    e.label = {NodeEdit::Op::kSet, "node-role.kubernetes.io/control-plane", ""};
    ASSERT_TRUE(api_.PatchNode("node-1", e).ok());
    ASSERT_TRUE(cache_->ListOnce().ok());  // the re-LIST no longer returns it
  });
  Cycle();
  prom_.OnQuery("cpu_pct", [] {});
  Cycle();
  EXPECT_FALSE(Labelled("node-1")) << "its departure was kept";
  EXPECT_TRUE(api_.nodes()["node-1"].annotations.empty());
}

TEST_F(ReconcilerTest, ADepartureDeferredByTheWriteBudgetIsWrittenLater) {
  cfg_.node_selector = "!node-role.kubernetes.io/control-plane";
  opts_.writes.max_per_cycle = 1;
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  ASSERT_TRUE(Labelled("node-1"));
  NodeEdit e;
  e.label = {NodeEdit::Op::kSet, "node-role.kubernetes.io/control-plane", ""};
  ASSERT_TRUE(api_.PatchNode("node-1", e).ok());
  ASSERT_TRUE(cache_->ListOnce().ok());
  prom_.SetValues("cpu_pct", {{"node-2", 95}, {"node-3", 95}});
  Cycle();  // three changes, a budget of one
  Cycle();
  Cycle();
  EXPECT_FALSE(Labelled("node-1")) << "kept until written, not dropped when deferred";
  EXPECT_TRUE(Labelled("node-2"));
  EXPECT_TRUE(Labelled("node-3"));
}

// The label key was changed in rule.yaml (status -> load): a record of the old mark is how
// `-cleanup` finds that mark, so the controller leaves it alone.
TEST_F(ReconcilerTest, ARecordOfAnotherMarkIsLeftForCleanup) {
  NodeEdit e;
  e.label = {NodeEdit::Op::kSet, "load", "high"};
  e.annotation = {NodeEdit::Op::kSet, kHeldByAnnotation,
                  FormatOwnership(Ownership{"load", "high", {{"cpu", 1795435200}}})};
  ASSERT_TRUE(api_.PatchNode("node-1", e).ok());
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 20}});
  Cycle();
  Cycle();
  EXPECT_EQ(api_.patches().size(), 1u) << "only the set-up's write";
  EXPECT_EQ(api_.nodes()["node-1"].annotations.size(), 1u);
}

TEST_F(ReconcilerTest, TheHerdCapMarksTheHottestAndReportsTheRest) {
  NodeInfo n4;
  n4.name = "node-4";
  api_.AddNode(n4);
  cfg_.max_marked_fraction = 0.5;  // 4 nodes: 2 marks
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 85}, {"node-2", 99}, {"node-3", 90}, {"node-4", 10}});
  prom_.SetValues("mem_avail", {}, "instance");
  Cycle();
  EXPECT_FALSE(Labelled("node-1")) << "the least hot waits";
  EXPECT_TRUE(Labelled("node-2"));
  EXPECT_TRUE(Labelled("node-3"));
  auto report = rec_->LastReport();
  EXPECT_EQ(report.mark_limit, 2u);
  EXPECT_EQ(report.capped, (std::vector<std::string>{"node-1"}));
  EXPECT_EQ(report.hot_nodes, 3u) << "a capped node is hot, only not marked";
  ASSERT_EQ(report.holds.count("node-1"), 1u) << "/nodes says why it is hot";

  // node-1 is now the hottest, but the marks already set keep their places.
  prom_.SetValues("cpu_pct", {{"node-1", 99}, {"node-2", 85}, {"node-3", 85}, {"node-4", 10}});
  Cycle();
  EXPECT_FALSE(Labelled("node-1"));
  EXPECT_EQ(api_.patches().size(), 2u);

  // node-3 cools: its place goes to node-1 in the same cycle, with no `for` to wait again.
  prom_.SetValues("cpu_pct", {{"node-1", 99}, {"node-2", 85}, {"node-3", 20}, {"node-4", 10}});
  Cycle();
  EXPECT_TRUE(Labelled("node-1"));
  EXPECT_FALSE(Labelled("node-3"));
  EXPECT_TRUE(rec_->LastReport().capped.empty());
}

// A pushed value never goes stale by itself: the pushgateway serves it for ever. With maxAge and
// an ageQuery (push_time_seconds), a node whose pusher died is missing data after maxAge, and
// loses the mark after the grace; without maxAge it would keep it for ever.
class DeadPusherTest : public ReconcilerTest {
 protected:
  // node-1 is hot and never pushed, node-2 is hot and its pusher dies after the first cycle,
  // node-3 is hot and pushed all along; 30 cycles of 10 s.
  void Run(bool max_age) {
    if (max_age) {
      cfg_.rules[1].max_age_seconds = 120;
      cfg_.rules[1].age_query = "push_time";
    }
    Build();
    // Prometheus' clock is 1000 s ahead of ours: ages are measured on its clock alone.
    const double skew = 1000;
    const double dead_at = clock_.WallSeconds() + 10 + skew;
    auto push = [&] {
      const double eval = clock_.WallSeconds() + 10 + skew;  // the coming cycle's
      prom_.SetSamples("push_time", {Sample{{{"instance", "node-2"}}, dead_at, eval},
                                     Sample{{{"instance", "node-3"}}, eval - 5, eval}});
    };
    prom_.SetValues("mem_avail", {{"node-1", 50}, {"node-2", 50}, {"node-3", 50}});
    push();
    Cycle();
    EXPECT_EQ(Labelled("node-1"), !max_age) << "no update time at all: unknown, not hot";
    EXPECT_TRUE(Labelled("node-2"));
    EXPECT_TRUE(Labelled("node-3"));
    // The value stays on the pushgateway; the push time stops moving.
    for (int cycle = 2; cycle <= 30; ++cycle) {
      push();
      Cycle();
      const double age = clock_.WallSeconds() + skew - dead_at;
      const RuleReport mem = rec_->LastReport().rules.at(1);
      ASSERT_TRUE(mem.ok) << mem.error;
      if (!max_age) {
        EXPECT_EQ(mem.too_old, 0u);
        continue;
      }
      EXPECT_EQ(mem.too_old, age > 120 ? 2u : 1u) << "node-1 (undated); node-2 past 120 s";
      // Within maxAge + grace the hold stays (the decider's missing data); past it, cold.
      if (age <= 120 + 30) {
        EXPECT_TRUE(Labelled("node-2")) << age;
      } else if (age > 120 + 30 + 10) {
        EXPECT_FALSE(Labelled("node-2")) << age;
      }
    }
    EXPECT_TRUE(Labelled("node-3")) << "pushed all along";
    EXPECT_EQ(prom_.calls("push_time"), max_age ? 30 : 0) << "beside the rule's query";
  }
};

// A pushed value never goes stale by itself: the pushgateway serves it for ever. With maxAge and
// an ageQuery (push_time_seconds), a node whose pusher died is missing data after maxAge, and
// loses the mark after the grace.
TEST_F(DeadPusherTest, MaxAgeDropsTheValueOfAStoppedPusher) {
  Run(true);
  EXPECT_FALSE(Labelled("node-2"));
}

TEST_F(DeadPusherTest, WithoutMaxAgeTheLastPushHoldsForEver) {
  Run(false);
  EXPECT_TRUE(Labelled("node-2"));
}

TEST_F(ReconcilerTest, AFailedAgeQueryFailsItsRule) {
  cfg_.rules[1].max_age_seconds = 120;
  cfg_.rules[1].age_query = "push_time";
  Build();
  const double eval = clock_.WallSeconds() + 10;
  prom_.SetValues("mem_avail", {{"node-2", 50}});
  prom_.SetSamples("push_time", {Sample{{{"instance", "node-2"}}, eval, eval}});
  Cycle();
  ASSERT_TRUE(Labelled("node-2"));
  prom_.SetError("push_time", Status::Unavailable("timeout"));
  for (int i = 0; i < 2; ++i) Cycle();
  const RuleReport mem = rec_->LastReport().rules.at(1);
  EXPECT_FALSE(mem.ok);
  EXPECT_EQ(mem.error, "Unavailable: ageQuery: timeout");
  EXPECT_EQ(rec_->Counters().query_errors.at("mem"), 2u);
  EXPECT_TRUE(Labelled("node-2")) << "could not ask is not cold: within the grace, the hold stays";
  // Past the grace it goes, as with any rule whose query keeps failing while others answer.
  for (int i = 0; i < 3; ++i) Cycle();
  EXPECT_FALSE(Labelled("node-2"));
}

// Without an ageQuery the samples' own timestamps are judged, against our clock: for queries
// whose answer carries the time of the data (timestamp(), a backend returning sample times).
TEST_F(ReconcilerTest, MaxAgeWithoutAgeQueryJudgesSampleTimestamps) {
  cfg_.rules[1].max_age_seconds = 120;
  Build();
  auto answer = [&](double node2_age) {
    const double now = clock_.WallSeconds() + 10;  // the cycle's time
    prom_.SetSamples("mem_avail", {Sample{{{"node", "node-2"}}, 50, now - node2_age},
                                   Sample{{{"node", "node-3"}}, 50, now - 1}});
  };
  answer(100);
  Cycle();
  EXPECT_TRUE(Labelled("node-2"));
  EXPECT_TRUE(Labelled("node-3"));
  EXPECT_EQ(rec_->LastReport().rules.at(1).too_old, 0u);
  for (int i = 0; i < 5; ++i) {
    answer(121);
    Cycle();
  }
  EXPECT_EQ(rec_->LastReport().rules.at(1).too_old, 1u);
  EXPECT_FALSE(Labelled("node-2")) << "too old for 50 s: past the 30 s grace";
  EXPECT_TRUE(Labelled("node-3"));
}

// Taint mode end to end through a cycle: a hot node gets our PreferNoSchedule taint next to its
// own, the steady state writes nothing, and the taint (only ours) goes when the node cools.
class TaintModeTest : public ReconcilerTest {
 protected:
  void SetUp() override {
    ReconcilerTest::SetUp();
    cfg_.mark.mode = Mark::Mode::kTaint;
    opts_.mark = cfg_.mark;  // as Build() and production make it; the tests read it before
    api_.EditNode("node-1", [this](NodeInfo* n) { n->taints = {kGpu}; });
  }
  std::vector<Taint> Taints(const std::string& node) { return api_.nodes()[node].taints; }
  const Taint kGpu{"nvidia.com/gpu", "present", "NoSchedule"};
};

TEST_F(TaintModeTest, AHotNodeIsTaintedAndTheTaintGoesWhenItCools) {
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  EXPECT_EQ(Taints("node-1"), (std::vector<Taint>{kGpu, opts_.mark.taint}));
  EXPECT_FALSE(Labelled("node-1")) << "taint mode: no label";
  EXPECT_EQ(Record("node-1").taint, opts_.mark.taint);
  EXPECT_TRUE(Record("node-1").label_key.empty());
  for (int i = 0; i < 3; ++i) Cycle();
  EXPECT_EQ(api_.patches().size(), 1u) << "steady: no writes";
  prom_.SetValues("cpu_pct", {{"node-1", 20}});
  Cycle();
  EXPECT_EQ(Taints("node-1"), std::vector<Taint>{kGpu});
  EXPECT_TRUE(api_.nodes()["node-1"].annotations.empty());
}

// A restart finds its taint and its record: the node is adopted as marked (no write while it
// stays hot); a taint with our key that no record names is someone else's and never removed.
TEST_F(TaintModeTest, ARestartRecognisesItsTaintAndLeavesOneItDidNotSet) {
  Ownership o;
  SetRecordedMark(opts_.mark, &o);
  o.rules = {OwnerRule{"cpu", 1795435200}};
  api_.EditNode("node-1", [&](NodeInfo* n) {
    n->taints.push_back(opts_.mark.taint);
    n->annotations = {{kHeldByAnnotation, FormatOwnership(o)}};
  });
  api_.EditNode("node-2", [&](NodeInfo* n) { n->taints = {opts_.mark.taint}; });  // by hand
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 70}, {"node-2", 20}, {"node-3", 20}});  // node-1: band
  prom_.SetValues("mem_avail", {{"10.0.0.1", 500}, {"10.0.0.2", 500}, {"10.0.0.3", 500}},
                  "instance");
  Cycle();
  Cycle();
  EXPECT_EQ(Taints("node-1"), (std::vector<Taint>{kGpu, opts_.mark.taint})) << "adopted";
  EXPECT_TRUE(api_.patches().empty()) << "nothing to change";
  EXPECT_EQ(rec_->LastReport().hot_nodes, 1u);
  prom_.SetValues("cpu_pct", {{"node-1", 20}, {"node-2", 20}, {"node-3", 20}});
  Cycle();
  EXPECT_EQ(Taints("node-1"), std::vector<Taint>{kGpu});
  EXPECT_EQ(Taints("node-2"), std::vector<Taint>{opts_.mark.taint})
      << "no record of ours names it: not ours to remove";
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

// With `both`, a cooling node that carries our label and a copy of our taint put there by hand
// (no record names it) loses the label only: the taint is not ours to remove.
TEST_F(TaintModeTest, WithBothACoolingNodeKeepsATaintNoRecordNames) {
  cfg_.mark.mode = Mark::Mode::kBoth;
  opts_.mark = cfg_.mark;
  api_.EditNode("node-1", [&](NodeInfo* n) {
    n->labels.emplace_back(opts_.mark.key, opts_.mark.value);
    n->taints.push_back(opts_.mark.taint);  // `kubectl taint` by an operator
  });
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 20}, {"node-2", 20}, {"node-3", 20}});
  prom_.SetValues("mem_avail", {{"10.0.0.1", 500}, {"10.0.0.2", 500}, {"10.0.0.3", 500}},
                  "instance");
  Cycle();
  EXPECT_FALSE(Labelled("node-1")) << "the label with our value is ours";
  EXPECT_EQ(Taints("node-1"), (std::vector<Taint>{kGpu, opts_.mark.taint}))
      << "no record of ours names the taint: never removed";
}

// A hot node that already carries a copy of our taint put there by hand is marked without
// adopting it: the record says so (taintNotOurs), the steady state writes nothing, and the taint
// stays when the node cools, as one no record names always does.
TEST_F(TaintModeTest, AHandSetTaintOnAHotNodeIsNotAdopted) {
  api_.EditNode("node-1", [&](NodeInfo* n) { n->taints.push_back(opts_.mark.taint); });
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  EXPECT_EQ(Taints("node-1"), (std::vector<Taint>{kGpu, opts_.mark.taint}));
  EXPECT_TRUE(Record("node-1").taint_not_ours);
  EXPECT_EQ(Record("node-1").taint, opts_.mark.taint);
  const size_t writes = api_.patches().size();
  for (int i = 0; i < 3; ++i) Cycle();
  EXPECT_EQ(api_.patches().size(), writes) << "marked: nothing to write";
  prom_.SetValues("cpu_pct", {{"node-1", 20}});
  Cycle();
  EXPECT_EQ(Taints("node-1"), (std::vector<Taint>{kGpu, opts_.mark.taint})) << "not ours";
  EXPECT_TRUE(api_.nodes()["node-1"].annotations.empty()) << "our record goes";
}

// Once their copy is taken off while the node is still hot, the node gets our own taint, which
// is ours and goes when it cools.
TEST_F(TaintModeTest, OurTaintReplacesAHandSetOneTakenOff) {
  api_.EditNode("node-1", [&](NodeInfo* n) { n->taints.push_back(opts_.mark.taint); });
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 95}});
  Cycle();
  ASSERT_TRUE(Record("node-1").taint_not_ours);
  api_.EditNode("node-1", [&](NodeInfo* n) { n->taints = {kGpu}; });  // `kubectl taint ...-`
  ASSERT_TRUE(cache_->ListOnce().ok());                               // the watch shows it
  Cycle();
  EXPECT_EQ(Taints("node-1"), (std::vector<Taint>{kGpu, opts_.mark.taint}));
  EXPECT_FALSE(Record("node-1").taint_not_ours);
  prom_.SetValues("cpu_pct", {{"node-1", 20}});
  Cycle();
  EXPECT_EQ(Taints("node-1"), std::vector<Taint>{kGpu});
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

// Node pools (rules[].nodeSelector) and per-rule intervals (rules[].interval), rules/rule_scope.h.
class PoolsTest : public ReconcilerTest {
 protected:
  void SetUp() override {
    ReconcilerTest::SetUp();
    // node-1 and node-2 are GPU nodes, node-3 a general one.
    for (const char* n : {"node-1", "node-2"}) SetPool(n, "gpu");
    SetPool("node-3", "general");
    Rule gpu;
    gpu.name = "gpu-cpu";
    gpu.query = "cpu_pct";
    gpu.threshold = gpu.clear_threshold = 50;
    gpu.node_selector = "pool=gpu";
    Rule general = gpu;
    general.name = "general-cpu";
    general.threshold = general.clear_threshold = 80;
    general.node_selector = "pool=general";
    cfg_.rules = {gpu, general};
  }
  void SetPool(const std::string& node, const std::string& pool) {
    NodeEdit e;
    e.label = {NodeEdit::Op::kSet, "pool", pool};
    ASSERT_TRUE(api_.PatchNode(node, e).ok());
  }
  // Builds the reconciler and marks node-1 (60, over the GPU pool's 50) in one cycle.
  void MarkGpuNode1() {
    Build();
    prom_.SetValues("cpu_pct", {{"node-1", 60}, {"node-2", 10}, {"node-3", 10}});
    Cycle();
    ASSERT_TRUE(Labelled("node-1"));
  }
};

TEST_F(PoolsTest, EachPoolHasItsOwnThreshold) {
  Build();
  // The same value, 60, on a GPU node and a general one: only the GPU rule's threshold is under.
  prom_.SetValues("cpu_pct", {{"node-1", 60}, {"node-2", 10}, {"node-3", 60}});
  Cycle();
  EXPECT_TRUE(Labelled("node-1"));
  EXPECT_FALSE(Labelled("node-3")) << "general pool: 60 is under 80";
  EXPECT_EQ(RecordedRules("node-1"), std::vector<std::string>{"gpu-cpu"});
  EXPECT_EQ(prom_.calls("cpu_pct"), 2) << "one query per rule, pools or not";
  // The table shows no value where a rule does not apply.
  auto t = rec_->LastReport().table;
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->Value(0, 0), 60);
  EXPECT_TRUE(std::isnan(t->Value(0, 1))) << "general-cpu does not apply to node-1";
  EXPECT_TRUE(std::isnan(t->Value(2, 0))) << "gpu-cpu does not apply to node-3";
  EXPECT_EQ(t->Value(2, 1), 60);
  // Not applying is not missing data: the table tells them apart (the page shows "n/a").
  EXPECT_FALSE(t->Applies(0, 1));
  EXPECT_FALSE(t->Applies(2, 0));
  EXPECT_TRUE(t->Applies(0, 0));
  EXPECT_TRUE(t->Applies(2, 1));
  // A node in the pool without a sample is missing data.
  prom_.SetValues("cpu_pct", {{"node-1", 60}, {"node-3", 60}});
  Cycle();
  t = rec_->LastReport().table;
  EXPECT_TRUE(std::isnan(t->Value(1, 0)));
  EXPECT_TRUE(t->Applies(1, 0)) << "node-2 is a GPU node without a value";
}

TEST_F(PoolsTest, ANodeRelabelledOutOfItsPoolLosesTheMark) {
  ASSERT_NO_FATAL_FAILURE(MarkGpuNode1());
  // Into the general pool: 60 is under its 80, and gpu-cpu's hold ends at once (no grace).
  SetPool("node-1", "general");
  ASSERT_TRUE(cache_->ListOnce().ok());
  Cycle();
  EXPECT_FALSE(Labelled("node-1"));
}

TEST_F(PoolsTest, ANodeInNoPoolAnyMoreIsColdNotUnknown) {
  ASSERT_NO_FATAL_FAILURE(MarkGpuNode1());
  // Out of every pool: no rule gives it evidence, yet its mark must go.
  SetPool("node-1", "none");
  ASSERT_TRUE(cache_->ListOnce().ok());
  Cycle();
  EXPECT_FALSE(Labelled("node-1"));
  auto t = rec_->LastReport().table;
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->states[0], NodeTable::State::kCold);
}

TEST_F(PoolsTest, AMarkAdoptedAfterARestartIsDroppedWhenItsRuleNoLongerApplies) {
  // A previous run's gpu-cpu mark on node-3, which is in the general pool now: the record's
  // rule cannot adopt it, and general-cpu's 60 < 80 is cold at once (no waiting out the grace).
  MarkedBefore("node-3", {"gpu-cpu"});
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 10}, {"node-2", 10}, {"node-3", 60}});
  Cycle();
  EXPECT_FALSE(Labelled("node-3"));
}

TEST_F(PoolsTest, AnOutageRemovesNoMarkFromANodeInNoPool) {
  ASSERT_NO_FATAL_FAILURE(MarkGpuNode1());
  SetPool("node-1", "none");
  ASSERT_TRUE(cache_->ListOnce().ok());
  prom_.SetError("cpu_pct", Status::Unavailable("down"));
  Cycle();
  EXPECT_TRUE(Labelled("node-1")) << "nothing answered: no label is removed";
  prom_.SetValues("cpu_pct", {{"node-2", 10}});
  Cycle();
  EXPECT_FALSE(Labelled("node-1"));
}

// A relative rule's mean is over its pool only: a general node's huge value does not raise it.
TEST_F(PoolsTest, ARelativeRulesMeanIsItsPools) {
  cfg_.rules.resize(1);
  Rule& gpu = cfg_.rules[0];
  gpu.relative_to = Rule::Relative::kMean;
  gpu.threshold = gpu.clear_threshold = 15;
  gpu.min_nodes = 2;
  Build();
  prom_.SetValues("cpu_pct", {{"node-1", 10}, {"node-2", 50}, {"node-3", 1000}});
  Cycle();
  EXPECT_TRUE(Labelled("node-2")) << "50 > mean 30 + 15";
  EXPECT_FALSE(Labelled("node-3")) << "not in the pool";
  ASSERT_EQ(rec_->LastReport().rules.size(), 1u);
  EXPECT_EQ(rec_->LastReport().rules[0].mean, 30);
  EXPECT_EQ(rec_->LastReport().rules[0].mean_values, 2u);
}

class IntervalTest : public ReconcilerTest {
 protected:
  void SetUp() override {
    ReconcilerTest::SetUp();
    cfg_.rules[1].interval_seconds = 30;  // mem: every third cycle of 10 s
  }
};

TEST_F(IntervalTest, ARuleIsQueriedOncePerItsIntervalAndItsAnswerReused) {
  Build();
  prom_.SetValues("cpu_pct", {});
  prom_.SetValues("mem_avail", {{"10.0.0.3", 50}}, "instance");
  for (int i = 0; i < 9; ++i) Cycle();
  EXPECT_EQ(prom_.calls("cpu_pct"), 9);
  EXPECT_EQ(prom_.calls("mem_avail"), 3) << "cycles 1, 4 and 7";
  // Between its queries the rule's answer stands as that cycle's values: node-3 stays hot.
  EXPECT_TRUE(Labelled("node-3"));
  auto report = rec_->LastReport();
  EXPECT_TRUE(report.rules[1].ok);
  EXPECT_TRUE(report.rules[1].reused) << "cycle 9 is two after cycle 7's query";
  ASSERT_NE(report.table, nullptr);
  EXPECT_EQ(report.table->Value(2, 1), 50);
  // The value the reused answer holds is the one of its query, not a newer one.
  prom_.SetValues("mem_avail", {{"10.0.0.3", 500}}, "instance");
  Cycle();  // cycle 10: due (30 s after cycle 7)
  EXPECT_FALSE(Labelled("node-3"));
  EXPECT_EQ(prom_.calls("mem_avail"), 4);
}

TEST_F(IntervalTest, AFailedQueryIsRetriedTheNextCycle) {
  Build();
  prom_.SetValues("mem_avail", {{"10.0.0.3", 50}}, "instance");
  Cycle();
  ASSERT_EQ(prom_.calls("mem_avail"), 1);
  Cycle();
  Cycle();
  prom_.SetError("mem_avail", Status::Unavailable("timeout"));
  Cycle();  // due: fails
  EXPECT_EQ(prom_.calls("mem_avail"), 2);
  EXPECT_FALSE(rec_->LastReport().rules[1].ok);
  prom_.SetValues("mem_avail", {{"10.0.0.3", 50}}, "instance");
  Cycle();  // retried at once, not a whole interval later
  EXPECT_EQ(prom_.calls("mem_avail"), 3);
  EXPECT_TRUE(rec_->LastReport().rules[1].ok);
  EXPECT_FALSE(rec_->LastReport().rules[1].reused);
  Cycle();
  EXPECT_EQ(prom_.calls("mem_avail"), 3) << "then its interval again";
  EXPECT_TRUE(Labelled("node-3"));
}

// A series missing from one answer stays missing until the next query: the rule's grace covers
// three of its intervals (90 s here, not the 30 s of the others), or one gap would drop its hold.
TEST_F(IntervalTest, TheGraceOfASlowRuleCoversThreeOfItsIntervals) {
  Build();
  prom_.SetValues("mem_avail", {{"10.0.0.3", 50}}, "instance");
  Cycle();  // t=10: queried, hot
  ASSERT_TRUE(Labelled("node-3"));
  prom_.SetValues("mem_avail", {}, "instance");
  for (int i = 0; i < 7; ++i) Cycle();  // t=20..80: missing from the answers of t=40 and t=70
  EXPECT_TRUE(Labelled("node-3")) << "70 s without a value, within 90 s";
  prom_.SetValues("mem_avail", {{"10.0.0.3", 50}}, "instance");
  Cycle();
  Cycle();  // t=100: queried again
  EXPECT_TRUE(Labelled("node-3"));
  EXPECT_EQ(prom_.calls("mem_avail"), 4);
}

TEST_F(IntervalTest, ATriggeredCycleQueriesEveryRule) {
  Build();
  Cycle();
  ASSERT_EQ(prom_.calls("mem_avail"), 1);
  rec_->Trigger();  // the Alertmanager webhook
  Cycle();
  EXPECT_EQ(prom_.calls("mem_avail"), 2);
  Cycle();
  EXPECT_EQ(prom_.calls("mem_avail"), 2);
}

// A reused answer is aged: a pushed value whose push is older than maxAge is missing data
// although the answer that carried it was fresh when it came.
TEST_F(IntervalTest, AReusedAnswerIsJudgedByMaxAgeAtTheCycleThatReusesIt) {
  cfg_.rules[1].max_age_seconds = 25;
  cfg_.rules[1].age_query = "mem_pushed";
  Build();
  prom_.SetValues("mem_avail", {{"10.0.0.3", 50}}, "instance");
  // Evaluated now, pushed 10 s ago.
  const double now = clock_.WallSeconds() + 10;
  prom_.SetSamples("mem_pushed", {Sample{{{"instance", "10.0.0.3"}}, now - 10, now}});
  Cycle();
  ASSERT_TRUE(Labelled("node-3"));
  EXPECT_EQ(rec_->LastReport().rules[1].too_old, 0u);
  Cycle();  // 20 s old: still fresh
  EXPECT_EQ(rec_->LastReport().table->Value(2, 1), 50);
  Cycle();  // 30 s old: too old, though the answer is reused
  EXPECT_TRUE(rec_->LastReport().rules[1].reused);
  EXPECT_EQ(rec_->LastReport().rules[1].too_old, 1u);
  EXPECT_TRUE(std::isnan(rec_->LastReport().table->Value(2, 1)));
}

// Without an ageQuery, maxAge judges the samples' own timestamps; a reused one ages too.
TEST_F(IntervalTest, AReusedSampleIsJudgedByItsOwnTimestamp) {
  cfg_.rules[1].max_age_seconds = 25;
  Build();
  const double now = clock_.WallSeconds() + 10;
  prom_.SetSamples("mem_avail", {Sample{{{"instance", "10.0.0.3"}}, 50, now - 10}});
  Cycle();
  EXPECT_EQ(rec_->LastReport().table->Value(2, 1), 50);
  Cycle();
  EXPECT_EQ(rec_->LastReport().table->Value(2, 1), 50);
  Cycle();
  EXPECT_TRUE(std::isnan(rec_->LastReport().table->Value(2, 1)));
  EXPECT_EQ(rec_->LastReport().rules[1].too_old, 1u);
}

}  // namespace
}  // namespace ds
