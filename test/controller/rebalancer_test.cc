// The rebalancer inside the reconciler's cycle, on the fake API server, fake Prometheus and fake
// clock: the mark comes before any eviction, stays for the evictions, and every limit holds.
#include "controller/rebalancer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "controller/eviction_ledger_store.h"
#include "controller/eviction_records.h"
#include "controller/reconciler.h"
#include "kube/lease.h"
#include "rebalance/decision.h"
#include "rebalance/decision_trail.h"
#include "rebalance/eviction_ledger.h"
#include "test/fakes/cycle_fixture.h"
#include "web/explain_json.h"

namespace ds {
namespace {

constexpr const char* kPodCpu = "pod_cpu";

// The term the README asks workloads to carry: the scheduler keeps their pods off nodes with our
// key at these values, so the rebalancer may move them (rebalance/steering.h).
PreferredSchedulingTerm Avoiding(std::vector<std::string> values) {
  return PreferredSchedulingTerm{100,
                                 NodeSelectorTerm{{{"status", "NotIn", std::move(values)}}, {}}};
}

class RebalancerTest : public CycleFixture {
 protected:
  void SetUp() override {
    for (int i = 1; i <= 3; ++i) AddWorker(i);
    Rule cpu;
    cpu.name = "cpu";
    cpu.query = "cpu_pct";
    cpu.threshold = 80;
    cpu.clear_threshold = 60;
    cpu.resource = Rule::Resource::kCpu;
    cfg_.rules = {cpu};
    RebalanceConfig& r = cfg_.rebalance;
    r.enabled = true;
    r.after_seconds = 0;
    r.hold_after_eviction_seconds = 60;
    r.cpu_usage_query = kPodCpu;
    r.pods.min_pod_age_seconds = 0;
    r.limits.node_cooldown_seconds = 30;
    opts_.writes.qps = 0;
    // node-1 runs a big user (2 cores = 50 % of it), a small one and a DaemonSet pod.
    AddPod("big", "node-1", 2.0);
    AddPod("small", "node-1", 0.4);
    AddPod("agent", "node-1", 1.0, "DaemonSet");
  }
  // node-<i>: 4 cores, 16 GB, 110 pods, at 10.0.0.<i>.
  void AddWorker(int i, Labels labels = {}) {
    NodeInfo n;
    n.name = "node-" + std::to_string(i);
    n.addresses = {"10.0.0." + std::to_string(i)};
    n.allocatable_cpu = 4;
    n.allocatable_memory = 16e9;
    n.allocatable_other = {{"pods", 110}};
    n.uid = "uid-" + n.name;
    n.labels = std::move(labels);
    api_.AddNode(n);
  }
  void AddPod(const std::string& name, const std::string& node, double usage,
              const std::string& kind = "ReplicaSet") {
    PodInfo p;
    p.ns = "shop";
    p.name = name;
    p.node = node;
    p.owner_kind = kind;
    p.owner_name = name + "-rs";
    p.phase = "Running";
    p.ready = true;
    p.cpu_request = 0.5;
    p.memory_request = 1e9;
    p.created_wall = clock_.WallSeconds() - 3600;
    p.uid = "uid-" + name;
    p.labels = {{"app", name}, {"pod-template-hash", "5d8f"}};
    p.preferred_affinity = {Avoiding({"presure", "underused"})};
    api_.AddPod(p);
    usage_.push_back(Sample{{{"namespace", "shop"}, {"pod", name}}, usage, 0});
    prom_.SetSamples(kPodCpu, usage_);
  }
  // A pod requesting `cpu` cores on node-2 and on node-3, the places replacements may go.
  void FillOtherNodes(double cpu) {
    for (const char* node : {"node-2", "node-3"}) {
      PodInfo filler;
      filler.ns = "fill";
      filler.name = std::string("filler-") + node;
      filler.node = node;
      filler.phase = "Running";
      filler.cpu_request = cpu;
      api_.AddPod(filler);
    }
  }
  void Cycle(double cpu_node1) {
    prom_.SetValues("cpu_pct", {{"node-1", cpu_node1}, {"node-2", 10}, {"node-3", 10}});
    clock_.AdvanceSeconds(10);
    RunCycleExplained();
  }
  // One cycle, and /explain's records held to what the cycle did (rebalance/decision.h): each
  // pod decision of this cycle names a reason the cycle counted this cycle at least as often, in
  // the counter of its stage, with a meaning DescribeReason knows; each eviction sent has its
  // decision. Every test that relieves through here checks it, for whatever reasons it reaches.
  void RunCycleExplained() {
    if (!rebalancer_) return rec_->RunCycle(&stop_);
    const RebalanceCounters before = rebalancer_->Counters();
    const size_t sent = api_.evictions().size();
    const double now = clock_.WallSeconds();
    rec_->RunCycle(&stop_);
    const RebalanceReport report = rebalancer_->Report();
    const RebalanceCounters after = rebalancer_->Counters();
    std::map<std::string, uint64_t> decided;  // "counter/reason" -> decisions this cycle
    std::set<std::string> evicted_decided;
    if (report.decisions)
      for (const auto& [node, nd] : *report.decisions) {
        if (nd.at_wall != now) continue;  // an earlier cycle's
        // Each pod the cycle listed on the node, once.
        std::set<std::string> listed, recorded;
        for (const auto& [key, p] : api_.pods())
          if (p.node == node) listed.insert(key);
        for (const PodDecision& d : nd.pods)
          EXPECT_TRUE(recorded.insert(d.pod).second) << d.pod << " decided twice";
        EXPECT_EQ(recorded, listed) << node;
        for (const PodDecision& d : nd.pods) {
          EXPECT_NE(DescribeReason(d.reason, d.stage).verdict, PodVerdict::kUnknown)
              << d.pod << ": " << d.reason << " at " << StageName(d.stage);
          // A pick's order, a no_usage pod's absent usage: the plan's, for the plan's stages.
          const bool eviction = d.stage == DecisionStage::kEviction;
          const std::string counter =
              d.stage == DecisionStage::kEvictable ? "kept"
              : eviction && d.reason != "ledger_unreadable" && d.reason != "ledger_failed" &&
                      d.reason != "record_failed" &&
                      DescribeReason(d.reason, DecisionStage::kLimits).verdict ==
                          PodVerdict::kUnknown
                  ? "evictions"
                  : "skips";
          // The plan's own reasons that no counter names (they are no skip: not needed).
          if (d.reason == "goal_reached" || d.reason == "no_room" || d.reason == "no_relief" ||
              d.reason == "no_usage" || d.reason == "over_floor" ||
              d.stage == DecisionStage::kKubeletOrder)  // counted once per node
            continue;
          ++decided[counter + "/" + d.reason];
          if (eviction) evicted_decided.insert(d.pod);
        }
      }
    auto delta = [&](const std::string& key) -> uint64_t {
      const std::string counter = key.substr(0, key.find('/'));
      const std::string reason = key.substr(key.find('/') + 1);
      const auto& b = counter == "kept"        ? before.kept
                      : counter == "evictions" ? before.evictions
                                               : before.skips;
      const auto& a = counter == "kept"        ? after.kept
                      : counter == "evictions" ? after.evictions
                                               : after.skips;
      const uint64_t was = b.count(reason) ? b.at(reason) : 0;
      const uint64_t is = a.count(reason) ? a.at(reason) : 0;
      return is - was;
    };
    for (const auto& [key, n] : decided) EXPECT_GE(delta(key), n) << key;
    const std::vector<std::string> all = api_.evictions();
    // (A drain of the mirror mode, rebalance.underused, is no relief: it has no decisions.)
    for (size_t i = sent; i < all.size() && !cfg_.rebalance.underused.enabled; ++i)
      EXPECT_TRUE(evicted_decided.count(all[i])) << all[i] << " was evicted without a decision";
  }
  uint64_t Evictions(const std::string& result) {
    auto c = rebalancer_->Counters().evictions;
    return c.count(result) ? c[result] : 0;
  }
  uint64_t Skips(const std::string& reason) {
    auto c = rebalancer_->Counters().skips;
    return c.count(reason) ? c[reason] : 0;
  }

  // The Events of the rebalancer: not the labeller's Marked and Unmarked.
  std::vector<EventInfo> RebalanceEvents() {
    std::vector<EventInfo> out;
    for (auto& e : api_.events())
      if (e.reason != "Marked" && e.reason != "Unmarked") out.push_back(e);
    return out;
  }
  // `big` is gone, and its replacement (same labels and owner, created within the second of the
  // eviction: creationTimestamp has whole seconds) is bound back onto node-1, which it left.
  void BigComesBack() {
    api_.RemovePod("shop/big");
    PodInfo back = api_.pods().at("shop/small");
    back.name = "big-x2k4p";
    back.uid = "uid-big-x2k4p";
    back.owner_name = "big-rs";
    back.labels = {{"app", "big"}, {"pod-template-hash", "5d8f"}};
    back.created_wall = std::floor(clock_.WallSeconds());
    api_.AddPod(back);
  }
  // Two cycles (the first marks node-1): `pod` is never evicted, as no other node can take it.
  void ExpectStaysForNoFit(const std::string& pod) {
    Build();
    Cycle(95);
    Cycle(95);
    for (const std::string& e : api_.evictions()) EXPECT_NE(e, pod);
    EXPECT_GE(Skips("no_fit"), 1u);
  }
  std::vector<Sample> usage_;
};

TEST_F(RebalancerTest, MarksFirstThenEvictsTheFewestLargestPodsAndHoldsTheMark) {
  Build();
  Cycle(95);
  EXPECT_TRUE(Labelled("node-1"));
  EXPECT_TRUE(api_.evictions().empty()) << "the cycle that marks the node evicts nothing: the "
                                           "cache had not seen the mark when it read the nodes";
  Cycle(95);
  // 95 % - 50 % (big) = 45 % <= 60 %: one pod is enough; the DaemonSet pod is never chosen.
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  EXPECT_GT(rec_->LastReport().rebalance_cpu_seconds, 0) << "the step's CPU is measured";
  EXPECT_LE(rec_->LastReport().rebalance_cpu_seconds, rec_->LastReport().cpu_seconds);
  const double total = rec_->LastReport().rebalance_cpu_seconds_total;
  EXPECT_GE(total, rec_->LastReport().rebalance_cpu_seconds) << "the total counts this cycle too";
  EXPECT_EQ(Evictions("evicted"), 1u);
  auto report = rebalancer_->Report();
  ASSERT_EQ(report.recent.size(), 1u);
  EXPECT_EQ(report.recent[0].node, "node-1");
  EXPECT_NE(report.recent[0].to, "node-1");
  EXPECT_DOUBLE_EQ(report.recent[0].usage, 50);
  auto events = RebalanceEvents();
  ASSERT_EQ(events.size(), 3u) << "one on the pod, one on the node, one on its owner";
  EXPECT_EQ(events[0].kind, "Pod");
  EXPECT_EQ(events[0].object_namespace, "shop");
  EXPECT_EQ(events[0].name, "big");
  EXPECT_EQ(events[0].reason, "RebalanceEviction");
  EXPECT_EQ(events[0].uid, "uid-big") << "kubectl describe finds events by uid";
  EXPECT_EQ(events[1].uid, "uid-node-1");
  EXPECT_EQ(events[0].message,
            "Evicted to relieve node node-1 (rule cpu at 95 % is over its clear threshold 60 %; "
            "this pod used 50 % of it); its replacement should fit on " +
                report.recent[0].to);
  EXPECT_EQ(events[1].kind, "Node");
  EXPECT_EQ(events[1].name, "node-1");
  // The owner outlives the pod: the same words there.
  EXPECT_EQ(events[2].kind, "ReplicaSet");
  EXPECT_EQ(events[2].name, "big-rs");
  EXPECT_EQ(events[2].reason, "RebalanceEvictedPod");
  EXPECT_NE(
      events[2].message.find("Evicted shop/big from node node-1 (rule cpu at 95 % is over its "
                             "clear threshold 60 %); its replacement should fit on"),
      std::string::npos)
      << events[2].message;
  EXPECT_EQ(EventNamespace(events[1]), "default");
  EXPECT_NE(events[1].message.find("Evicted shop/big (50 % of the node)"), std::string::npos);
  EXPECT_EQ(report.pod_lists, 4u) << "the hot node's pods and the two free nodes', one LIST each, "
                                     "and the pods of big's namespace (zone-wide anti-affinity)";

  // The node cools at once, but the evicted pod is still terminating: the mark stays.
  Cycle(40);
  EXPECT_TRUE(Labelled("node-1")) << "evictions in flight hold the mark";
  api_.RemovePod("shop/big");
  Cycle(40);
  EXPECT_TRUE(Labelled("node-1")) << "holdAfterEviction holds the mark after the pod is gone";
  clock_.AdvanceSeconds(60);
  Cycle(40);
  EXPECT_FALSE(Labelled("node-1")) << "after holdAfterEviction the cold node loses its mark";
  EXPECT_EQ(api_.evictions().size(), 1u);
}

// How the relief went (rebalance/effect.h), as the cycle feeds it: time to relief counts from the
// mark as the node's record says (not from the cycle that qualified it and evicted), and hot
// node-seconds count each cycle the node began marked and was not yet at or below 60 %.
TEST_F(RebalancerTest, TimeToReliefCountsFromTheMarkAndHotTimeFromTheCycles) {
  Build();
  Cycle(95);  // marks node-1 (at 1.8e9 + 10: the record's `since`)
  Cycle(95);  // qualifies and evicts big, 10 s later; node-1 began this cycle marked and hot
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  Cycle(40);  // at or below its clear threshold: relieved, 20 s after the mark
  const EffectFigures f = rebalancer_->Report().figures;
  EXPECT_EQ(f.episodes_relieved, 1u);
  EXPECT_DOUBLE_EQ(f.time_to_relief_sum, 20);
  EXPECT_EQ(f.time_to_relief[0], 1u) << "le=30";
  EXPECT_EQ(f.relieved_evictions, 1u);
  EXPECT_DOUBLE_EQ(f.EvictionsPerRelief(), 1);
  EXPECT_DOUBLE_EQ(f.hot_node_seconds, 10) << "one cycle (-s 10) marked and hot";
  Cycle(40);
  EXPECT_DOUBLE_EQ(rebalancer_->Report().figures.hot_node_seconds, 10) << "cooled: held, not hot";
}

// Balance: a relative rule with a resource relieves a node that stands out from its pool, to the
// pool's mean + the clear offset, onto nodes that stay at or below the mean + the threshold offset.
// node-1..3 are pool a; node-4 (pool b, idle, cordoned) is in the cluster but not in the rule's
// mean: pool a's mean is (95 + 10 + 10) / 3 = 38.3, so node-1 is over 93.3 and relieved to 53.3 by
// moving big (50 %) onto node-2 or node-3 (10 + 50 = 60 <= 93.3). With the cluster's mean (28.75)
// the goal would be 43.75 and small would go too; with the clear threshold as the destinations'
// ceiling (53.3), big would fit nowhere.
TEST_F(RebalancerTest, ARelativeRuleRelievesToItsPoolsMean) {
  AddWorker(4, {{"pool", "b"}});
  api_.EditNode("node-4", [](NodeInfo* n) { n->unschedulable = true; });
  for (const char* n : {"node-1", "node-2", "node-3"})
    api_.EditNode(n, [](NodeInfo* node) { node->labels = {{"pool", "a"}}; });
  Rule& skew = cfg_.rules[0];
  skew.name = "skew";
  skew.relative_to = Rule::Relative::kMean;
  skew.threshold = 55;  // big's 50 % alone does not make a node at the mean stand out
  skew.clear_threshold = 15;
  skew.node_selector = "pool=a";
  cfg_.max_marked_fraction = 1;
  Build();
  for (int c = 0; c < 2; ++c) {
    prom_.SetValues("cpu_pct", {{"node-1", 95}, {"node-2", 10}, {"node-3", 10}, {"node-4", 0}});
    clock_.AdvanceSeconds(10);
    RunCycleExplained();
  }
  EXPECT_TRUE(Labelled("node-1"));
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"}) << "95 - 50 = 45 <= 53.3";
  auto report = rebalancer_->Report();
  ASSERT_EQ(report.recent.size(), 1u);
  EXPECT_TRUE(report.recent[0].to == "node-2" || report.recent[0].to == "node-3")
      << report.recent[0].to;
  EXPECT_NEAR(report.recent[0].goal, 115.0 / 3 + 15, 1e-9);
  EXPECT_EQ(report.recent[0].rule, "skew");
}

// Balance with a rule per pool: each node's load comes from its own pool's rule, so pool b's
// nodes are destinations too (they were not: the first cpu rule, pool a's, has no value for
// them), and each destination is held to its own pool's mean + threshold. Pool b (node-1, node-5,
// node-6: 95, 10, 10; skew-b over its mean 38.3 + 55) relieves node-1; pool a (node-2..4 at 10,
// skew-a over its mean + 20) has no room for big's 50 % (60 > 30): big goes within pool b.
TEST_F(RebalancerTest, EachPoolBalancesWithinItsOwnCeiling) {
  for (int i = 4; i <= 6; ++i) AddWorker(i);
  for (const char* n : {"node-1", "node-5", "node-6"})
    api_.EditNode(n, [](NodeInfo* node) { node->labels = {{"pool", "b"}}; });
  for (const char* n : {"node-2", "node-3", "node-4"})
    api_.EditNode(n, [](NodeInfo* node) { node->labels = {{"pool", "a"}}; });
  Rule a = cfg_.rules[0];
  a.name = "skew-a";
  a.relative_to = Rule::Relative::kMean;
  a.threshold = 20;
  a.clear_threshold = 10;
  a.node_selector = "pool=a";
  Rule b = a;
  b.name = "skew-b";
  b.threshold = 55;
  b.clear_threshold = 15;
  b.node_selector = "pool=b";
  cfg_.rules = {a, b};
  cfg_.max_marked_fraction = 1;
  Build();
  for (int c = 0; c < 2; ++c) {
    prom_.SetValues("cpu_pct", {{"node-1", 95},
                                {"node-2", 10},
                                {"node-3", 10},
                                {"node-4", 10},
                                {"node-5", 10},
                                {"node-6", 10}});
    clock_.AdvanceSeconds(10);
    RunCycleExplained();
  }
  EXPECT_TRUE(Labelled("node-1"));
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  auto report = rebalancer_->Report();
  ASSERT_EQ(report.recent.size(), 1u);
  EXPECT_EQ(report.recent[0].rule, "skew-b");
  EXPECT_TRUE(report.recent[0].to == "node-5" || report.recent[0].to == "node-6")
      << "into pool a it would stand out there (60 > 30): " << report.recent[0].to;
}

// Graded marks: a warm node carries one of our values, which workloads avoid too, so it is no
// place for a replacement. node-2 is warm at 10 %, where `big` would fit by requests and by use;
// node-3 is cool but full by requests. So `big` stays.
TEST_F(RebalancerTest, AWarmNodeIsNoDestination) {
  cfg_.mark.levels = {{"warm", "warm"}, {"hot", "presure"}};
  opts_.mark = cfg_.mark;
  Rule warm = cfg_.rules[0];
  warm.name = "cpu@warm";
  warm.threshold = 8;
  warm.clear_threshold = 6;
  warm.below_hottest = 1;
  warm.resource = Rule::Resource::kNone;
  cfg_.rules.push_back(warm);
  cfg_.max_marked_fraction = 1;  // node-1 hot and node-2 warm: two marks of three nodes
  for (int i = 0; i < 8; ++i) AddPod("filler-" + std::to_string(i), "node-3", 0.01);
  Build();
  for (int c = 0; c < 3; ++c) {
    prom_.SetValues("cpu_pct", {{"node-1", 95}, {"node-2", 10}, {"node-3", 2}});
    clock_.AdvanceSeconds(10);
    RunCycleExplained();
    ASSERT_TRUE(cache_->ListOnce().ok());
  }
  const NodeInfo n2 = api_.nodes()["node-2"];
  const std::string* v = FindLabel(n2.labels, "status");
  ASSERT_TRUE(v != nullptr && *v == "warm") << "node-2 is warm";
  EXPECT_TRUE(api_.evictions().empty()) << "big would go to the warm node-2";
  EXPECT_GE(Skips("no_fit"), 1u);
}

// Graded marks (issue 24, defects 4 and 5): warm below 70 %, hot above 80 %.
class GradedRebalancerTest : public RebalancerTest {
 protected:
  void SetUp() override {
    RebalancerTest::SetUp();
    cfg_.mark.levels = {{"warm", "warm"}, {"hot", "presure"}};
    Rule warm = cfg_.rules[0];
    warm.name = "cpu@warm";
    warm.threshold = 70;
    warm.clear_threshold = 65;
    warm.below_hottest = 1;
    warm.resource = Rule::Resource::kNone;
    cfg_.rules.push_back(warm);
    // Hot's clear threshold above the warm band: a node at 75 % is warm, not hot by hysteresis.
    cfg_.rules[0].clear_threshold = 78;
    cfg_.max_marked_fraction = 1;
    cfg_.rebalance.after_seconds = 60;
  }
};

// `after` counts from when the node turned hot, not from when it turned warm: the hot record must
// not inherit the warm level's `since`.
TEST_F(GradedRebalancerTest, AfterCountsFromHotNotFromWarm) {
  Build();
  for (int i = 0; i < 12; ++i) Cycle(75);  // warm for 120 s, longer than `after`
  ASSERT_TRUE(Labelled("node-1", "warm"));
  Cycle(95);
  ASSERT_TRUE(Labelled("node-1"));
  Cycle(95);
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty()) << "hot for 20 s of the 60 s `after`";
  for (int i = 0; i < 5; ++i) Cycle(95);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"}) << "hot for 60 s and more";
}

// A relieved node that cools into the warm band keeps the hot mark while its evicted pods
// terminate and for holdAfterEviction, as a node that cools for good does.
TEST_F(GradedRebalancerTest, ARelievedNodeCoolingIntoTheWarmBandKeepsTheHotMark) {
  cfg_.rebalance.after_seconds = 0;
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  Cycle(75);  // big still terminating: in the warm band now
  EXPECT_TRUE(Labelled("node-1")) << "not dropped to warm while its pod terminates";
  api_.RemovePod("shop/big");
  Cycle(75);
  EXPECT_TRUE(Labelled("node-1")) << "holdAfterEviction (60 s)";
  clock_.AdvanceSeconds(60);
  Cycle(75);
  EXPECT_TRUE(Labelled("node-1", "warm")) << "then the levels as usual";
}

TEST_F(RebalancerTest, ANewLeaderKnowsTheLastEvictionFromTheRecord) {
  cfg_.rebalance.settle_seconds = 0;  // big's usage is not counted as leaving once it is gone
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions().size(), 1u);
  auto record = ParseOwnership(*FindLabel(api_.nodes()["node-1"].annotations, kHeldByAnnotation));
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->last_eviction_wall, std::floor(clock_.WallSeconds()));
  // Another replica takes over: a fresh cache, rebalancer and reconciler, no memory of this one.
  api_.RemovePod("shop/big");
  Build();
  Cycle(95);
  EXPECT_EQ(api_.evictions().size(), 1u) << "the node's cool-down (30 s) holds across the failover";
  EXPECT_EQ(Skips("node_cooldown"), 1u);
  Cycle(40);
  EXPECT_TRUE(Labelled("node-1")) << "holdAfterEviction (60 s) holds across the failover";
  clock_.AdvanceSeconds(60);
  Cycle(40);
  EXPECT_FALSE(Labelled("node-1"));
}

TEST_F(RebalancerTest, TheRecordsWholeSecondsNeverShortenTheCoolDown) {
  cfg_.rebalance.settle_seconds = 0;
  Build();
  // The eviction happens 0.9 s into a second; the record keeps the whole second only.
  clock_.AdvanceSeconds(1.9 - std::fmod(clock_.WallSeconds(), 1.0));
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions().size(), 1u);
  api_.RemovePod("shop/big");
  Build();  // another replica: it knows the eviction only from the record
  // 29.5 s after the eviction (30.4 s after the second the record names), within the 30 s.
  clock_.AdvanceSeconds(19.5);
  Cycle(95);
  EXPECT_EQ(api_.evictions().size(), 1u) << "the cool-down counts from the end of that second";
  EXPECT_EQ(Skips("node_cooldown"), 1u);
}

TEST_F(RebalancerTest, ReplacementsAreLookedForOnTheLeastLoadedNodesOnly) {
  // 20 more nodes; the least loaded are node-12 and up. Only kDestinations of them are listed.
  std::vector<std::pair<std::string, double>> cpu = {
      {"node-1", 95}, {"node-2", 50}, {"node-3", 50}};
  for (int i = 4; i <= 23; ++i) {
    NodeInfo n;
    n.name = "node-" + std::to_string(i);
    n.allocatable_cpu = 4;
    n.allocatable_memory = 16e9;
    n.allocatable_other = {{"pods", 110}};
    api_.AddNode(n);
    cpu.emplace_back(n.name, i >= 12 ? 5 : 40);
  }
  Build();
  for (int i = 0; i < 2; ++i) {
    prom_.SetValues("cpu_pct", cpu);
    clock_.AdvanceSeconds(10);
    RunCycleExplained();
  }
  ASSERT_EQ(api_.evictions().size(), 1u);
  EXPECT_EQ(api_.pod_list_calls(), static_cast<int>(1 + Rebalancer::kDestinations + 1))
      << "the hot node's, the destinations' and the evicted pod's namespace's: never the whole "
         "cluster";
  const std::string to = rebalancer_->Report().recent.at(0).to;
  EXPECT_GE(std::stoi(to.substr(5)), 12) << to << " is not among the least loaded";
}

TEST_F(RebalancerTest, AnAlertNamingAMarkedNodeQualifiesItAtOnce) {
  cfg_.rebalance.after_seconds = 3600;
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty()) << "marked for 10 s of the 3600 s `after`";
  rec_->Alerted({{{"alertname", "NodeHot"}, {"instance", "10.0.0.2:9100"}}});  // unmarked node
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty()) << "an alert never lets a node without our mark qualify";
  rec_->Alerted({{{"alertname", "NodeHot"}, {"node", "node-1"}}});
  Cycle(95);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  EXPECT_EQ(rebalancer_->Report().nodes.at(0).qualification, "qualifies");
}

TEST_F(RebalancerTest, TheDiscoveryRateComparesOurMarksWithAReferenceQuery) {
  cfg_.rebalance.reference_query = "ref_hot";
  prom_.SetValues("ref_hot", {{"node-1", 1}, {"node-2", 1}, {"node-99", 1}});  // node-99: unknown
  Build();
  Cycle(95);  // node-1 is marked in this cycle: the cache had not seen it yet
  Cycle(95);
  const EffectFigures f = rebalancer_->Report().figures;
  EXPECT_EQ(f.reference_hot, 4u) << "node-1 and node-2, twice";
  EXPECT_EQ(f.reference_hot_marked, 1u);
  EXPECT_DOUBLE_EQ(f.DiscoveryRate(), 0.25);
}

// A destination's requests are listed once per kRequestsMaxAgeSeconds, and the replacements sent
// its way meanwhile are counted on it: node-2 and node-3 have room for one more 0.5-core pod each.
TEST_F(RebalancerTest, ADestinationIsListedOncePerMaxAgeAndItsReplacementsCountMeanwhile) {
  RebalanceConfig& r = cfg_.rebalance;
  r.limits.per_cycle = 1;
  r.limits.node_cooldown_seconds = 0;
  r.limits.per_node_per_hour = 10;
  r.limits.per_workload_unreplaced = 10;
  AddPod("mid", "node-1", 1.0);
  FillOtherNodes(3.3);   // of 4: room for 0.7 cores
  r.settle_seconds = 0;  // node-1 stays at 95 % once its pods are gone: heat of its own
  Build();
  Cycle(95);  // marks node-1
  Cycle(95);  // big goes, to one of them
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  api_.RemovePod("shop/big");
  Cycle(95);  // mid goes, to the other: the first is full with big's replacement
  ASSERT_EQ(api_.evictions().size(), 2u);
  auto recent = rebalancer_->Report().recent;
  EXPECT_NE(recent.at(0).to, recent.at(1).to)
      << "big's replacement was counted on " << recent[0].to;
  EXPECT_EQ(api_.pod_lists_with("spec.nodeName=node-2"), 1) << "listed once, then reused";
  EXPECT_EQ(api_.pod_lists_with("spec.nodeName=node-3"), 1);
  EXPECT_EQ(api_.pod_lists_with("spec.nodeName=node-1"), 2) << "once per cycle that evicts";
  api_.RemovePod("shop/mid");
  Cycle(95);  // small fits nowhere now: both hold a replacement this replica sent
  EXPECT_EQ(api_.evictions().size(), 2u);
  EXPECT_EQ(Skips("no_fit"), 1u);

  clock_.AdvanceSeconds(Rebalancer::kRequestsMaxAgeSeconds);
  Cycle(95);  // listed again: the replacements are not there (nobody created them), room again
  EXPECT_EQ(api_.pod_lists_with("spec.nodeName=node-2"), 2);
  EXPECT_EQ(api_.evictions().size(), 3u);
}

// Dry-run reports what would happen: the replacement it planned is counted on its node too.
TEST_F(RebalancerTest, ADryRunCountsThePlannedReplacementOnItsDestination) {
  RebalanceConfig& r = cfg_.rebalance;
  r.dry_run = true;
  r.limits.per_cycle = 1;
  r.limits.node_cooldown_seconds = 0;
  r.limits.per_node_per_hour = 10;
  r.limits.per_workload_unreplaced = 10;
  FillOtherNodes(3.3);  // of 4: room for 0.7 cores
  Build();
  Cycle(95);
  Cycle(95);
  Cycle(95);
  auto recent = rebalancer_->Report().recent;
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_EQ(recent[0].result, "dry_run");
  EXPECT_NE(recent[0].to, recent[1].to) << "the first plan's replacement fills " << recent[0].to;
  EXPECT_TRUE(api_.evictions().empty());
}

TEST_F(RebalancerTest, ReplacementsAreFollowedWhereverTheyLand) {
  cfg_.rebalance.limits.per_workload_unreplaced = 1;
  Build();
  Cycle(95);
  clock_.AdvanceSeconds(0.5);  // the eviction happens at x.5 s
  Cycle(95);
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  BigComesBack();
  Cycle(40);
  auto f = rebalancer_->Report().figures;
  EXPECT_EQ(f.replacements, 1u);
  EXPECT_EQ(f.bounce_backs, 1u) << "bound back onto node-1, which it left";
  // Seen once only, though it stays listed.
  Cycle(40);
  EXPECT_EQ(rebalancer_->Report().figures.replacements, 1u);
}

// After a replacement came back to the node its pod left, its workload is left alone for
// rebalance.bounceBackPause: a loop of evictions would not relieve the node.
TEST_F(RebalancerTest, ABounceBackPausesItsWorkload) {
  cfg_.rebalance.limits.per_workload_unreplaced = 1;
  cfg_.rebalance.settle_seconds = 0;  // node-1 stays hot by its own heat once big is gone
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  BigComesBack();
  usage_.push_back(Sample{{{"namespace", "shop"}, {"pod", "big-x2k4p"}}, 2.0, 0});
  prom_.SetSamples(kPodCpu, usage_);
  Cycle(95);
  ASSERT_EQ(rebalancer_->Report().figures.bounce_backs, 1u);
  const double bounced = clock_.WallSeconds();
  auto paused = rebalancer_->Report().paused;
  ASSERT_EQ(paused.size(), 1u);
  EXPECT_EQ(paused.begin()->first, "shop/ReplicaSet/big-rs");
  EXPECT_DOUBLE_EQ(paused.begin()->second, bounced + 3600);
  for (int i = 0; i < 6; ++i) {  // past nodeCooldown and the retry wait, node-1 still hot
    clock_.AdvanceSeconds(20);
    Cycle(95);
  }
  for (const std::string& e : api_.evictions()) EXPECT_NE(e, "shop/big-x2k4p");
  EXPECT_GE(Skips("bounced_back"), 1u);
  clock_.AdvanceSeconds(3600);
  Cycle(95);
  Cycle(95);
  EXPECT_TRUE(rebalancer_->Report().paused.empty()) << "the pause ends";
  EXPECT_EQ(api_.evictions().back(), "shop/big-x2k4p") << "and the workload may move again";
}

// Steer or skip: without a term that keeps the replacement off the mark, the scheduler would put
// it back where its pod was; nothing is evicted, and its owner is told what to add, once an hour.
// When an eviction's effectWindow ends, an Event on the pod's owner says what became of it.
TEST_F(RebalancerTest, AnOutcomeEventOnTheOwnerWhenTheWindowEnds) {
  PodInfo big = api_.pods().at("shop/big");
  big.owner_api_version = "apps/v1";
  api_.AddPod(big);
  cfg_.rebalance.effect_window_seconds = 60;
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  api_.RemovePod("shop/big");
  Cycle(40);  // relieved: below its clear threshold 10 s after the eviction
  for (int i = 0; i < 6; ++i) Cycle(40);
  std::vector<EventInfo> outcomes;
  for (const EventInfo& e : RebalanceEvents())
    if (e.reason == "RebalanceRelieved" || e.reason == "RebalanceNotRelieved")
      outcomes.push_back(e);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].reason, "RebalanceRelieved");
  EXPECT_EQ(outcomes[0].kind, "ReplicaSet");
  EXPECT_EQ(outcomes[0].name, "big-rs");
  EXPECT_EQ(outcomes[0].object_namespace, "shop");
  EXPECT_EQ(outcomes[0].api_version, "apps/v1");
  EXPECT_NE(outcomes[0].message.find("node relieved after 0m10s"), std::string::npos)
      << outcomes[0].message;
}

TEST_F(RebalancerTest, APodWhoseReplacementWouldComeBackIsNotEvicted) {
  for (const char* name : {"shop/big", "shop/small"}) {
    PodInfo p = api_.pods().at(name);
    p.preferred_affinity.clear();
    api_.AddPod(p);
  }
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_EQ(Skips("would_return"), 2u);
  ASSERT_EQ(rebalancer_->Report().nodes.size(), 1u);
  EXPECT_EQ(rebalancer_->Report().nodes[0].would_return, 2u);
  auto warned = [&] {
    std::vector<EventInfo> out;
    for (auto& e : RebalanceEvents())
      if (e.reason == "RebalanceWouldReturn") out.push_back(e);
    return out;
  };
  ASSERT_EQ(warned().size(), 2u) << "one per workload";
  EXPECT_EQ(warned()[0].type, "Warning");
  EXPECT_EQ(warned()[0].related_name, "node-1");
  EXPECT_NE(warned()[0].message.find("{key: status, operator: NotIn, values: [presure]}"),
            std::string::npos)
      << warned()[0].message;
  for (int i = 0; i < 4; ++i) {
    clock_.AdvanceSeconds(30);
    Cycle(95);
  }
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_EQ(warned().size(), 2u) << "not again within the hour";
}

// ...unless the operator says the cluster steers by other means.
TEST_F(RebalancerTest, WithoutRequiredSteeringAnyPodMayGo) {
  PodInfo big = api_.pods().at("shop/big");
  big.preferred_affinity.clear();
  api_.AddPod(big);
  cfg_.rebalance.require_steering = false;
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  EXPECT_EQ(Skips("would_return"), 0u);
}

// mark: both: our taint steers a pod that does not tolerate it, without any affinity term.
TEST_F(RebalancerTest, OurTaintSteersAPodThatDoesNotTolerateIt) {
  PodInfo big = api_.pods().at("shop/big");
  big.preferred_affinity.clear();
  api_.AddPod(big);
  PodInfo small = api_.pods().at("shop/small");
  small.preferred_affinity.clear();
  small.tolerations = {{"", "Exists", "", ""}};
  api_.AddPod(small);
  cfg_.mark.mode = Mark::Mode::kBoth;
  opts_.mark = cfg_.mark;
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  EXPECT_EQ(Skips("would_return"), 1u) << "small tolerates every taint";
}

// mark: taint: the rebalancer reads our taint as the mark. Only a pod that does not tolerate it
// is steered away; the affinity term against the label steers nothing, as no label is set.
TEST_F(RebalancerTest, WithTheTaintAloneTheTaintIsTheMark) {
  PodInfo small = api_.pods().at("shop/small");
  small.tolerations = {{"", "Exists", "", ""}};  // tolerates everything, and has the term
  api_.AddPod(small);
  PodInfo big = api_.pods().at("shop/big");
  big.preferred_affinity.clear();
  api_.AddPod(big);
  cfg_.mark.mode = Mark::Mode::kTaint;
  opts_.mark = cfg_.mark;
  Build();
  Cycle(95);
  EXPECT_FALSE(Labelled("node-1"));
  Cycle(95);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  EXPECT_EQ(Skips("would_return"), 1u) << "small tolerates the taint";
  bool advised = false;
  for (const EventInfo& e : RebalanceEvents())
    if (e.reason == "RebalanceWouldReturn") {
      advised = true;
      EXPECT_NE(e.message.find("drop from its template the toleration"), std::string::npos)
          << e.message;
    }
  EXPECT_TRUE(advised);
}

// A pod pinned to its node by required node affinity: its replacement could only go back there.
TEST_F(RebalancerTest, APodPinnedToItsNodeIsNeverEvicted) {
  for (const char* n : {"node-1", "node-2", "node-3"})
    api_.EditNode(n,
                  [n](NodeInfo* node) { node->labels.emplace_back("kubernetes.io/hostname", n); });
  PodInfo big = api_.pods().at("shop/big");
  big.required_affinity = {NodeSelectorTerm{{{"kubernetes.io/hostname", "In", {"node-1"}}}, {}}};
  api_.AddPod(big);
  ExpectStaysForNoFit("shop/big");
}

// Pinned, and without the term: no term added would let it move, so it is no_fit, and its
// workload is not told to add one (steering is asked only of pods that fit elsewhere).
TEST_F(RebalancerTest, APinnedPodIsNotAdvisedToSteer) {
  for (const char* n : {"node-1", "node-2", "node-3"})
    api_.EditNode(n,
                  [n](NodeInfo* node) { node->labels.emplace_back("kubernetes.io/hostname", n); });
  PodInfo big = api_.pods().at("shop/big");
  big.preferred_affinity.clear();
  big.required_affinity = {NodeSelectorTerm{{{"kubernetes.io/hostname", "In", {"node-1"}}}, {}}};
  api_.AddPod(big);
  ExpectStaysForNoFit("shop/big");
  EXPECT_EQ(Skips("would_return"), 0u);
  for (const EventInfo& e : RebalanceEvents()) EXPECT_NE(e.reason, "RebalanceWouldReturn");
}

// node-1 and node-2 in zone z1, node-3 in z2.
void InZones(FakeKubeApi* api) {
  for (const auto& nz : {std::pair{"node-1", "z1"}, {"node-2", "z1"}, {"node-3", "z2"}}) {
    const std::string zone = nz.second;  // (a lambda may not capture a structured binding in C++17)
    api->EditNode(nz.first, [zone](NodeInfo* node) {
      node->labels.emplace_back("topology.kubernetes.io/zone", zone);
    });
  }
}

// A bare running pod (no owner, no requests).
PodInfo RunningPod(const std::string& ns, const std::string& name, const std::string& node) {
  PodInfo p;
  p.ns = ns;
  p.name = name;
  p.node = node;
  p.phase = "Running";
  return p;
}

PodGroupTerm GroupOf(const std::string& app, const std::string& key) {
  PodGroupTerm t;
  t.selector = *LabelSelector::Parse("app=" + app);
  t.namespaces = {"shop"};
  t.topology_key = key;
  return t;
}

// A zone term: the pods it counts are listed (the API server filters by its selector) and their
// nodes read for their zone. big keeps away from its own app by zone: it is in z1 itself, so only
// node-3, in z2, may take it; with another big pod in z2, nothing may.
TEST_F(RebalancerTest, ZoneAntiAffinityIsJudgedOnTheListedPods) {
  InZones(&api_);
  PodInfo big = api_.pods().at("shop/big");
  big.pod_anti_affinity = {GroupOf("big", "topology.kubernetes.io/zone")};
  api_.AddPod(big);
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  ASSERT_EQ(rebalancer_->Report().recent.size(), 1u);
  EXPECT_EQ(rebalancer_->Report().recent[0].to, "node-3") << "node-2 is in big's own zone";
}

TEST_F(RebalancerTest, ZoneAntiAffinityWithNoZoneFreeStays) {
  InZones(&api_);
  PodInfo big = api_.pods().at("shop/big");
  big.pod_anti_affinity = {GroupOf("big", "topology.kubernetes.io/zone")};
  api_.AddPod(big);
  PodInfo twin = big;
  twin.name = "big-twin";
  twin.uid = "uid-big-twin";
  twin.node = "node-3";
  twin.pod_anti_affinity.clear();  // only big's own term keeps it out of z2
  api_.AddPod(twin);
  ExpectStaysForNoFit("shop/big");
}

// A claim's volume is read (PersistentVolumeClaim, then its PersistentVolume): the replacement
// may only go where the volume's node affinity holds. Unbound or unreadable: not judged.
TEST_F(RebalancerTest, ABoundVolumeDecidesWhereTheReplacementMayGo) {
  InZones(&api_);
  PodInfo big = api_.pods().at("shop/big");
  big.claims = {"data"};
  api_.AddPod(big);
  api_.AddClaim(
      "shop", "data",
      ClaimPlace{"pv-z2", {NodeSelectorTerm{{{"topology.kubernetes.io/zone", "In", {"z2"}}}, {}}}});
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  ASSERT_EQ(rebalancer_->Report().recent.size(), 1u);
  EXPECT_EQ(rebalancer_->Report().recent[0].to, "node-3") << "the volume is in z2";
}

TEST_F(RebalancerTest, AnUnboundOrUnreadableClaimIsNotJudged) {
  PodInfo big = api_.pods().at("shop/big");
  big.claims = {"data"};
  api_.AddPod(big);
  PodInfo small = api_.pods().at("shop/small");
  small.claims = {"missing"};  // 404
  api_.AddPod(small);
  api_.AddClaim("shop", "data", ClaimPlace{"", {}});  // not bound
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_EQ(Skips("constraint"), 2u);
  EXPECT_EQ(rebalancer_->Report().nodes[0].constraint, 2u);
}

// A pod on another node of a destination's zone that keeps pods like this one out of the whole
// zone (required anti-affinity, zone key): listed with the pods of this one's namespace.
TEST_F(RebalancerTest, AZoneWideGuardElsewhereKeepsTheReplacementOutOfItsZone) {
  InZones(&api_);
  NodeInfo n4;
  n4.name = "node-4";
  n4.labels = {{"topology.kubernetes.io/zone", "z2"}};
  api_.AddNode(n4);  // not managed by the test's cycle, but where the guard runs
  PodInfo guard = RunningPod("shop", "guard", "node-4");
  guard.pod_anti_affinity = {GroupOf("big", "topology.kubernetes.io/zone")};
  api_.AddPod(guard);
  PodInfo filler =
      RunningPod("fill", "filler", "node-2");  // no room on node-2: only node-3 (z2) could take big
  filler.cpu_request = 3.8;
  api_.AddPod(filler);
  ExpectStaysForNoFit("shop/big");
}

// The required anti-affinity of a pod already on a destination (read with its pods) keeps the
// replacement off it, as the scheduler's symmetric check does.
TEST_F(RebalancerTest, ADestinationPodsAntiAffinityKeepsTheReplacementAway) {
  for (const char* n : {"node-1", "node-2", "node-3"})
    api_.EditNode(n,
                  [n](NodeInfo* node) { node->labels.emplace_back("kubernetes.io/hostname", n); });
  PodInfo guard = RunningPod("shop", "guard", "node-2");
  guard.pod_anti_affinity = {GroupOf("big", "kubernetes.io/hostname")};
  api_.AddPod(guard);
  PodInfo filler = RunningPod("fill", "filler", "node-3");  // no room on node-3
  filler.cpu_request = 3.8;
  api_.AddPod(filler);
  ExpectStaysForNoFit("shop/big");
}

// Where a term with a namespaceSelector lets the replacement run depends on namespaces' labels
// the rebalancer does not read: never a guess.
TEST_F(RebalancerTest, APodWithAConstraintTheFitCheckDoesNotJudgeStays) {
  PodInfo big = api_.pods().at("shop/big");
  big.unjudged = {"podAntiAffinity (namespaceSelector)"};
  api_.AddPod(big);
  Build();
  Cycle(95);
  Cycle(95);
  for (const std::string& e : api_.evictions()) EXPECT_NE(e, "shop/big");
  EXPECT_EQ(Skips("constraint"), 1u);
  EXPECT_EQ(rebalancer_->Report().nodes[0].constraint, 1u);
}

// onPrometheusDown: release says the marks go when the metrics are gone: an eviction's hold
// does not keep them (the operator chose a cluster that schedules as if we were not there).
TEST_F(RebalancerTest, ReleaseOnOutageIsNotUndoneByTheHold) {
  cfg_.release_on_outage = true;
  cfg_.release_after_seconds = 20;
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  prom_.SetError("cpu_pct", Status::Unavailable("connection refused"));
  for (int i = 0; i < 4 && Labelled("node-1"); ++i) {
    clock_.AdvanceSeconds(10);
    RunCycleExplained();
  }
  EXPECT_TRUE(rec_->LastReport().releasing);
  EXPECT_FALSE(Labelled("node-1")) << "released, though big is still terminating";
}

TEST_F(RebalancerTest, AnEvictionInFlightHoldsTheMarkUntilThePodIsGoneOrStuck) {
  cfg_.rebalance.hold_after_eviction_seconds = 0;  // only the pod in flight holds the mark
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions().size(), 1u);
  Cycle(40);
  EXPECT_TRUE(Labelled("node-1")) << "the evicted pod is still terminating on the node";
  EXPECT_EQ(api_.pod_lists_with("metadata.name=big,spec.nodeName=node-1"), 1)
      << "looked up by name, not by listing its node again";
  EXPECT_EQ(api_.pod_lists_with("spec.nodeName=node-1"), 1) << "only to choose the pod";
  clock_.AdvanceSeconds(Rebalancer::kInFlightLimitSeconds);
  Cycle(40);
  EXPECT_FALSE(Labelled("node-1")) << "a pod stuck terminating holds the mark no longer";
}

// A StatefulSet re-creates its pod under the same name, maybe on the same node: that is not the
// evicted pod still terminating (the uid tells them apart).
TEST_F(RebalancerTest, APodReCreatedUnderTheSameNameIsNotTheOneInFlight) {
  cfg_.rebalance.hold_after_eviction_seconds = 0;
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  PodInfo again = api_.pods().at("shop/big");
  api_.RemovePod("shop/big");
  again.uid = "uid-big-2";
  again.terminating = false;
  api_.AddPod(again);
  Cycle(40);  // looked up (after the mark was judged: it is held this cycle)
  Cycle(40);
  EXPECT_FALSE(Labelled("node-1")) << "the evicted pod is gone; its namesake holds no mark";
}

// A failed lookup leaves the pods in flight (they hold the mark), and the next ones are not sent
// that cycle: each would wait out its own timeout against an API server in trouble.
TEST_F(RebalancerTest, AFailedLookupOfAPodInFlightKeepsItAndStopsTheOthers) {
  cfg_.rebalance.hold_after_eviction_seconds = 0;
  cfg_.rebalance.limits.per_cycle = 2;
  usage_.clear();
  AddPod("big", "node-1", 0.8);
  AddPod("small", "node-1", 0.8);  // two are needed: 95 - 2 x 20 = 55 <= 60
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions().size(), 2u);
  api_.RemovePod("shop/big");
  api_.RemovePod("shop/small");
  auto lookups = [&] {
    return api_.pod_lists_with("metadata.name=big,spec.nodeName=node-1") +
           api_.pod_lists_with("metadata.name=small,spec.nodeName=node-1");
  };
  api_.FailNextPodLists(1);
  Cycle(40);
  EXPECT_EQ(lookups(), 1) << "the second pod is not looked up this cycle";
  EXPECT_EQ(rebalancer_->Counters().list_errors, 1u);
  Cycle(40);
  EXPECT_EQ(lookups(), 3) << "both next cycle";
  EXPECT_TRUE(Labelled("node-1")) << "held while they were not known to be gone";
  Cycle(40);
  EXPECT_FALSE(Labelled("node-1")) << "both are gone";
}

TEST_F(RebalancerTest, AnEvictionOfUnknownOutcomeCountsAsOne) {
  cfg_.rebalance.settle_seconds = 0;
  Build();
  Cycle(95);
  // The request left but no answer came (a timeout): the pod may well be gone.
  api_.ScriptEvictions({EvictionResult{EvictionResult::Kind::kError,
                                       Status(StatusCode::kUnavailable, "timed out")}});
  Cycle(95);
  EXPECT_EQ(Evictions("error"), 1u);
  auto record = ParseOwnership(*FindLabel(api_.nodes()["node-1"].annotations, kHeldByAnnotation));
  ASSERT_TRUE(record.ok());
  EXPECT_GT(record->last_eviction_wall, 0) << "a new leader must wait out the cool-down too";
  Cycle(95);
  EXPECT_EQ(api_.evictions().size(), 1u) << "the pod is still listed: it may be leaving";
  EXPECT_EQ(Skips("in_motion"), 1u);
  api_.RemovePod("shop/big");
  Cycle(95);
  EXPECT_EQ(api_.evictions().size(), 1u) << "the node's cool-down runs as after an eviction";
  EXPECT_EQ(Skips("node_cooldown"), 1u);
  Cycle(40);
  EXPECT_TRUE(Labelled("node-1")) << "holdAfterEviction holds the mark";
}

// rebalance.nodeSelector is judged on the node's own labels, though the node cache keeps only the
// labels the controller reads (issue 24, defect 1): its keys are among them.
TEST_F(RebalancerTest, ANodeTheSelectorExcludesIsNeverRelieved) {
  cfg_.rebalance.node_selector = "!no-rebalance";
  api_.EditNode("node-1", [](NodeInfo* n) { n->labels.emplace_back("no-rebalance", "true"); });
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_TRUE(Labelled("node-1")) << "the labeller still marks it";
  EXPECT_TRUE(api_.evictions().empty()) << "the operator excluded it from the rebalancer";
}

TEST_F(RebalancerTest, ANodeAPositiveSelectorNamesIsRelieved) {
  cfg_.rebalance.node_selector = "pool=general";
  api_.EditNode("node-1", [](NodeInfo* n) { n->labels.emplace_back("pool", "general"); });
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
}

// A pod's own nodeSelector is judged on the destinations' whole labels, which the rebalancer reads
// (issue 24, defect 2): `kubernetes.io/os: linux`, set by many charts, fits on every Linux node.
TEST_F(RebalancerTest, APodWithANodeSelectorFitsWhereItsLabelsAre) {
  for (const char* n : {"node-1", "node-2", "node-3"})
    api_.EditNode(n,
                  [](NodeInfo* node) { node->labels.emplace_back("kubernetes.io/os", "linux"); });
  PodInfo big = api_.pods()["shop/big"];
  big.node_selector = {{"kubernetes.io/os", "linux"}};
  api_.AddPod(big);
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  EXPECT_EQ(Skips("no_fit"), 0u);
}

// ...and not where they are not: a destination without the label is no place for it.
TEST_F(RebalancerTest, APodWithANodeSelectorStaysWhereNoOtherNodeMatches) {
  api_.EditNode("node-1", [](NodeInfo* n) { n->labels.emplace_back("disktype", "ssd"); });
  PodInfo big = api_.pods()["shop/big"];
  big.node_selector = {{"disktype", "ssd"}};
  api_.AddPod(big);
  ExpectStaysForNoFit("shop/big");
}

// The eviction carries the listed pod's UID as a precondition: a pod re-created under the same
// name since it was listed (a StatefulSet's) is another pod, and is not evicted.
TEST_F(RebalancerTest, APodReCreatedUnderTheSameNameSinceItWasListedIsNotEvicted) {
  Build();
  Cycle(95);
  // Between the listing and the eviction (the record is written in between), big is re-created.
  api_.on_patch = [&](const std::string&) {
    PodInfo again = api_.pods()["shop/big"];
    again.uid = "uid-big-2";
    api_.AddPod(again);
  };
  Cycle(95);
  api_.on_patch = nullptr;
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"}) << "asked once";
  EXPECT_FALSE(api_.pods()["shop/big"].terminating) << "the new pod is not evicted";
  EXPECT_EQ(Evictions("gone"), 1u);
  EXPECT_EQ(Evictions("evicted"), 0u);
}

// Write-ahead: the record names the eviction before the eviction is sent.
TEST_F(RebalancerTest, TheRecordIsWrittenBeforeTheEvictionIsSent) {
  Build();
  Cycle(95);
  const size_t before = api_.patches().size();
  std::vector<size_t> sent_at_patch;  // evictions sent when each later PATCH arrived, in order
  api_.on_patch = [&](const std::string&) { sent_at_patch.push_back(api_.evictions().size()); };
  Cycle(95);
  api_.on_patch = nullptr;
  ASSERT_EQ(api_.evictions().size(), 1u);
  auto record = ParseOwnership(*FindLabel(api_.nodes()["node-1"].annotations, kHeldByAnnotation));
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->last_eviction_wall, std::floor(clock_.WallSeconds()));
  const std::vector<FakeKubeApi::PatchCall> p = api_.patches();
  ASSERT_EQ(p.size(), before + sent_at_patch.size());
  bool found = false;
  for (size_t i = 0; i < sent_at_patch.size(); ++i)
    if (p[before + i].edit.annotation.value.find("lastEviction") != std::string::npos) {
      found = true;
      EXPECT_EQ(sent_at_patch[i], 0u) << "the record went after the eviction";
    }
  EXPECT_TRUE(found) << "no record write named the eviction";
}

TEST_F(RebalancerTest, NoEvictionIsSentWhileItsRecordCannotBeWritten) {
  Build();
  Cycle(95);
  // Every node write fails in the next cycle (a 403 from an admission policy, say): the record
  // cannot be written, so nothing is evicted, and a new leader could not have evicted twice.
  api_.on_patch = [&](const std::string&) {
    api_.FailNextPatches({Status(StatusCode::kPermissionDenied, "denied").set_http_status(403)});
  };
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_EQ(Skips("record_failed"), 1u);
  api_.on_patch = nullptr;
  clock_.AdvanceSeconds(600);  // the node's write backoff and the retry wait
  Cycle(95);
  EXPECT_EQ(api_.evictions().size(), 1u) << "tried again once the record can be written";
}

// An eviction abandoned in flight (the lease was lost while the answer was awaited) may have
// happened: the record written ahead holds the node for the next leader, which does not evict
// from it again within the cool-down.
TEST_F(RebalancerTest, AnEvictionAbandonedInFlightHoldsTheNodeForTheNextLeader) {
  cfg_.rebalance.settle_seconds = 0;
  Build();
  Cycle(95);
  api_.ScriptEvictions({EvictionResult{EvictionResult::Kind::kError,
                                       Status(StatusCode::kCancelled, "abandoned: lease lost")}});
  Cycle(95);
  ASSERT_EQ(api_.evictions().size(), 1u);
  api_.RemovePod("shop/big");  // it was evicted after all
  Build();                     // another replica takes over
  Cycle(95);
  EXPECT_EQ(api_.evictions().size(), 1u) << "within the node's cool-down (30 s)";
  EXPECT_EQ(Skips("node_cooldown"), 1u);
}

// A definite refusal evicted nothing: neither the budget nor the node's cool-down is charged, the
// intent is taken back from the record, and a 403 is said by its own result.
TEST_F(RebalancerTest, ARefusedEvictionIsNotCharged) {
  Build();
  Cycle(95);
  api_.ScriptEvictions({EvictionResult{
      EvictionResult::Kind::kError,
      Status(StatusCode::kPermissionDenied,
             "pods \"big\" is forbidden: User \"system:serviceaccount:ds:ds\" cannot create "
             "resource \"pods/eviction\" in API group \"\" in the namespace \"shop\"")
          .set_http_status(403)}});
  Cycle(95);
  EXPECT_EQ(Evictions("forbidden"), 1u);
  auto record = ParseOwnership(*FindLabel(api_.nodes()["node-1"].annotations, kHeldByAnnotation));
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->last_eviction_wall, 0) << "the intent is taken back";
  // Loud: /status's note (through the report), and a Warning Event on the pod.
  EXPECT_NE(rebalancer_->Report().problem.find("forbidden (403)"), std::string::npos);
  bool warned = false;
  for (const EventInfo& e : RebalanceEvents())
    warned |= e.reason == "RebalanceEvictionForbidden" && e.type == "Warning" && e.name == "big";
  EXPECT_TRUE(warned);
  Cycle(40);
  EXPECT_FALSE(Labelled("node-1")) << "nothing is terminating: the cooled node's mark is not held";
}

// The ledger (the lease dynamic-scheduler-evictions, its annotation) as the API server has it.
std::vector<LedgerEntry> LedgerOf(FakeKubeApi& api, const LedgerPlace& place) {
  auto leases = api.leases();
  auto it = leases.find(place.ns + "/" + place.name);
  if (it == leases.end()) return {};
  auto entries = DecodeLedger(LeaseAnnotation(it->second.object, kLedgerAnnotation));
  return entries.ok() ? *entries : std::vector<LedgerEntry>{};
}

// A refused eviction is taken out of the ledger too: no limit of a later leader counts it.
TEST_F(RebalancerTest, ARefusedEvictionIsTakenOutOfTheLedger) {
  Build();
  Cycle(95);
  api_.ScriptEvictions({EvictionResult{EvictionResult::Kind::kBlockedByBudget,
                                       Status(StatusCode::kUnavailable, "pdb")}});
  Cycle(95);
  EXPECT_EQ(Evictions("blocked_by_pdb"), 1u);
  EXPECT_TRUE(LedgerOf(api_, ledger_).empty());
}

// Issue 38, E1: three pods of 20 % each on a node at 95 % whose goal is 60 %: two must go. Each
// evicted pod keeps running (and using CPU) while it terminates, so the node's value stays at 95 %;
// once the cool-down is over, the pods still leaving count as gone, and the third stays.
TEST_F(RebalancerTest, PodsStillTerminatingCountAsGone) {
  usage_.clear();
  api_.RemovePod("shop/big");
  api_.RemovePod("shop/small");
  for (const char* name : {"p1", "p2", "p3"}) AddPod(name, "node-1", 0.8);
  cfg_.rebalance.limits.per_cycle = 1;
  cfg_.rebalance.limits.per_workload_unreplaced = 5;
  Build();
  for (int i = 0; i < 20; ++i) Cycle(95);  // 200 s: six cool-downs of 30 s
  EXPECT_EQ(api_.evictions().size(), 2u) << "exactly what the goal needs";
  EXPECT_GE(Skips("in_motion"), 1u);
  auto nodes = rebalancer_->Report().nodes;
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].qualification, "in_motion");
  EXPECT_EQ(nodes[0].leaving_pods, 2u);
  EXPECT_DOUBLE_EQ(nodes[0].leaving, 40);  // percent of the node, taken off its 95 %
  EXPECT_DOUBLE_EQ(nodes[0].load_after, 55);
  EXPECT_EQ(nodes[0].leaving_until_wall, 0) << "until they are gone, and the settle time after";
}

// The node's value lags (a rate over 5 minutes): a pod that is gone still counts for the rule's
// settle time (its query's window plus one interval), then the node is judged on its value again.
TEST_F(RebalancerTest, AGonePodCountsUntilTheRuleCanShowIt) {
  cfg_.rules[0].query = "avg_over_time(cpu_pct[5m])";
  Build();
  EXPECT_DOUBLE_EQ(rebalancer_->SettleSeconds("cpu"), 300 + opts_.interval_seconds);
  prom_.SetValues("avg_over_time(cpu_pct[5m])", {{"node-1", 95}, {"node-2", 10}, {"node-3", 10}});
  auto cycle = [&] {
    clock_.AdvanceSeconds(10);
    RunCycleExplained();
  };
  cycle();
  cycle();
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  api_.RemovePod("shop/big");
  const double gone = clock_.WallSeconds() + 10;  // seen gone by the next cycle
  for (int i = 0; i < 30; ++i) cycle();           // 300 s: the value still shows big
  EXPECT_EQ(api_.evictions().size(), 1u) << "big's usage is still in the 5-minute window";
  auto nodes = rebalancer_->Report().nodes;
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].qualification, "in_motion");
  EXPECT_DOUBLE_EQ(nodes[0].leaving_until_wall, gone + 310);
  for (int i = 0; i < 3; ++i) cycle();
  EXPECT_EQ(api_.evictions().size(), 2u) << "past the settle time the node's own heat is relieved";
}

// Issue 38: perHour 1, the controller restarted after its first eviction. The budget is counted
// from the ledger written ahead of the eviction, not from zero.
TEST_F(RebalancerTest, TheHourlyLimitHoldsAcrossARestart) {
  cfg_.rebalance.limits.per_hour = 1;
  cfg_.rebalance.settle_seconds = 0;
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions().size(), 1u);
  auto ledger = LedgerOf(api_, ledger_);
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger[0].pod, "shop/big");
  EXPECT_EQ(ledger[0].node, "node-1");
  EXPECT_EQ(ledger[0].workload, "shop/ReplicaSet/big-rs");
  EXPECT_DOUBLE_EQ(ledger[0].cpu, 2.0) << "as measured";
  EXPECT_DOUBLE_EQ(ledger[0].memory, 1e9) << "its request";
  api_.RemovePod("shop/big");
  Build();                                 // killed and started again: nothing in memory
  for (int i = 0; i < 12; ++i) Cycle(95);  // 2 minutes: past the cool-down and the hold
  EXPECT_EQ(api_.evictions().size(), 1u) << "one eviction an hour, whoever made it";
  EXPECT_GE(Skips("per_hour"), 1u);
  clock_.AdvanceSeconds(3600);
  Cycle(95);
  Cycle(95);
  EXPECT_EQ(api_.evictions().size(), 2u) << "the next hour";
}

// After a failover the new leader knows the pods still leaving from the ledger (E1): big is still
// terminating, so node-1 is not relieved again once the cool-down is over.
TEST_F(RebalancerTest, ANewLeaderKnowsThePodsStillLeaving) {
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions().size(), 1u);
  Build();  // another replica, in a new term
  for (int i = 0; i < 6; ++i) Cycle(95);
  EXPECT_EQ(api_.evictions().size(), 1u);
  EXPECT_GE(Skips("in_motion"), 1u);
  EXPECT_TRUE(Labelled("node-1")) << "and its eviction in flight holds the mark";
}

// A new leader holds the mark of a cooled node while a pod another replica evicted from it is
// still terminating, past holdAfterEviction (60 s): it knows the pod from the ledger before it
// plans the marks.
TEST_F(RebalancerTest, ANewLeaderHoldsTheMarkForAPodStillTerminating) {
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions().size(), 1u);
  clock_.AdvanceSeconds(70);
  Build();  // another replica, in a new term
  Cycle(40);
  EXPECT_TRUE(Labelled("node-1")) << "big is still terminating";
  api_.RemovePod("shop/big");
  Cycle(40);
  Cycle(40);
  EXPECT_FALSE(Labelled("node-1")) << "gone: the mark goes";
}

// A ledger that cannot be read: its limits would not hold, so nothing is evicted until it can.
TEST_F(RebalancerTest, AnUnreadableLedgerStopsTheEvictions) {
  api_.set_lease_down(true);
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_GE(Skips("ledger_unreadable"), 1u);
  ASSERT_EQ(rebalancer_->Report().nodes.size(), 1u);
  EXPECT_EQ(rebalancer_->Report().nodes[0].limit, "ledger_unreadable");
  api_.set_lease_down(false);
  Cycle(95);
  EXPECT_EQ(api_.evictions().size(), 1u) << "read, written ahead, evicted";
}

// One that cannot be written: no eviction goes without its entry written ahead.
TEST_F(RebalancerTest, AnUnwritableLedgerStopsTheEviction) {
  Build();
  Cycle(95);  // marks; the ledger is read
  api_.set_lease_down(true);
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_EQ(Skips("ledger_failed"), 1u);
  auto record = ParseOwnership(*FindLabel(api_.nodes()["node-1"].annotations, kHeldByAnnotation));
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->last_eviction_wall, 0) << "nothing written after the ledger failed";
  api_.set_lease_down(false);
  clock_.AdvanceSeconds(30);  // the retry wait
  Cycle(95);
  EXPECT_EQ(api_.evictions().size(), 1u);
}

// A 429 that started a move in the background (KubeVirt's live migration) is no refusal: the pod
// is in flight and charged to every limit.
TEST_F(RebalancerTest, AnEvictionInTheBackgroundIsInFlight) {
  cfg_.rebalance.limits.per_hour = 1;
  Build();
  Cycle(95);
  api_.ScriptEvictions({EvictionResult{
      EvictionResult::Kind::kInBackground,
      Status(StatusCode::kUnavailable, "Eviction triggered evacuation of VMI \"shop/big\"")}});
  Cycle(95);
  EXPECT_EQ(Evictions("evicting_in_background"), 1u);
  EXPECT_EQ(LedgerOf(api_, ledger_).size(), 1u);
  for (int i = 0; i < 6; ++i) Cycle(95);
  EXPECT_EQ(api_.evictions().size(), 1u);
  EXPECT_TRUE(rebalancer_->HoldsMark("node-1", 0)) << "in flight until the pod is gone";
}

// Other disruptors (issue 38): the pods of a Deployment mid-rollout, of a workload its HPA scales
// down, on a node a cluster-autoscaler removes, or annotated safe-to-evict "false" stay; each
// reason is counted and on /rebalance.
class DisruptorTest : public RebalancerTest {
 protected:
  // big as a Deployment's pod: its ReplicaSet big-rs (apps/v1) owned by Deployment big.
  void BigOfADeployment(bool rolling) {
    PodInfo big = api_.pods().at("shop/big");
    big.owner_api_version = "apps/v1";
    api_.AddPod(big);
    WorkloadStatus rs;
    rs.kind = "ReplicaSet";
    rs.ns = "shop";
    rs.name = "big-rs";
    rs.owner_kind = "Deployment";
    rs.owner_name = "big";
    rs.owner_api_version = "apps/v1";
    rs.spec_replicas = rs.replicas = rs.ready_replicas = rs.available_replicas = 3;
    rs.generation = rs.observed_generation = 1;
    api_.AddWorkload(rs);
    WorkloadStatus d;
    d.kind = "Deployment";
    d.ns = "shop";
    d.name = "big";
    d.generation = d.observed_generation = 2;
    d.spec_replicas = 3;
    d.replicas = rolling ? 4 : 3;  // one old replica still there
    d.updated_replicas = d.ready_replicas = d.available_replicas = 3;
    api_.AddWorkload(d);
  }
  size_t Disrupted(const std::string& who) {
    auto nodes = rebalancer_->Report().nodes;
    if (nodes.empty()) return 0;
    auto it = nodes[0].disrupted.find(who);
    return it == nodes[0].disrupted.end() ? 0 : it->second;
  }
};

TEST_F(DisruptorTest, APodOfADeploymentMidRolloutStays) {
  BigOfADeployment(true);
  Build();
  Cycle(95);
  Cycle(95);
  for (const std::string& e : api_.evictions()) EXPECT_NE(e, "shop/big");
  EXPECT_GE(Skips("rollout"), 1u);
  EXPECT_EQ(Disrupted("rollout"), 1u);
  EXPECT_EQ(api_.workload_gets(),
            (std::vector<std::string>{"shop/ReplicaSet/big-rs", "shop/Deployment/big"}));
}

TEST_F(DisruptorTest, OnceTheRolloutIsDoneItMayMove) {
  BigOfADeployment(false);
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
}

TEST_F(DisruptorTest, APodOfAWorkloadItsAutoscalerScalesDownStays) {
  BigOfADeployment(false);
  Autoscaler hpa;
  hpa.ns = "shop";
  hpa.name = "big";
  hpa.target_kind = "Deployment";
  hpa.target_name = "big";
  hpa.target_api_version = "apps/v1";
  hpa.current_replicas = 3;
  hpa.desired_replicas = 2;
  api_.AddAutoscaler(hpa);
  Build();
  Cycle(95);
  Cycle(95);
  for (const std::string& e : api_.evictions()) EXPECT_NE(e, "shop/big");
  EXPECT_EQ(Disrupted("scale_down"), 1u);
}

TEST_F(DisruptorTest, AWorkloadThatCannotBeReadIsNoLicenceToEvict) {
  BigOfADeployment(false);
  api_.FailNextWorkloadGets({Status(StatusCode::kPermissionDenied, "forbidden")});
  Build();
  Cycle(95);
  Cycle(95);
  for (const std::string& e : api_.evictions()) EXPECT_NE(e, "shop/big");
  EXPECT_EQ(Disrupted("disruptors_unread"), 1u);
}

// A cluster without autoscaling/v2 (before 1.23) answers 404 to the HPA list: no autoscalers.
TEST_F(DisruptorTest, NoAutoscalingV2MeansNoAutoscalers) {
  BigOfADeployment(false);
  api_.FailNextAutoscalerLists({Status(StatusCode::kNotFound,
                                       "the server could not find the "
                                       "requested resource")});
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
}

TEST_F(DisruptorTest, ANodeTheClusterAutoscalerRemovesIsNotRelieved) {
  api_.EditNode("node-1", [](NodeInfo* n) {
    n->taints.push_back(Taint{"ToBeDeletedByClusterAutoscaler", "1733580000", "NoSchedule"});
  });
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_GE(Skips("node_removal"), 1u);
  ASSERT_FALSE(rebalancer_->Report().nodes.empty());
  EXPECT_EQ(rebalancer_->Report().nodes[0].limit, "node_removal");
  EXPECT_EQ(api_.pod_list_calls(), 0) << "not even listed";
}

TEST_F(DisruptorTest, APodSafeToEvictFalseStays) {
  PodInfo big = api_.pods().at("shop/big");
  big.annotations.emplace_back("cluster-autoscaler.kubernetes.io/safe-to-evict", "false");
  api_.AddPod(big);
  Build();
  Cycle(95);
  Cycle(95);
  for (const std::string& e : api_.evictions()) EXPECT_NE(e, "shop/big");
  EXPECT_EQ(Disrupted("safe_to_evict_false"), 1u);
}

// An admission webhook's 403 is about that pod, not the rebalancer's permissions: a refusal like
// any other 4xx, with no note on /status.
TEST_F(RebalancerTest, AWebhooksDenialIsNotBlamedOnRbac) {
  Build();
  Cycle(95);
  api_.ScriptEvictions({EvictionResult{
      EvictionResult::Kind::kError,
      Status(StatusCode::kPermissionDenied,
             "admission webhook \"policy.example.com\" denied the request: protected")
          .set_http_status(403)}});
  Cycle(95);
  EXPECT_EQ(Evictions("forbidden"), 1u);
  EXPECT_TRUE(rebalancer_->Report().problem.empty());
  for (const EventInfo& e : RebalanceEvents()) EXPECT_NE(e.reason, "RebalanceEvictionForbidden");
}

TEST_F(RebalancerTest, LosingTheLeadershipMidCycleStopsTheEvictions) {
  // Two pods are needed (95 - 2 x 20 = 55 <= 60), so the plan has two picks.
  usage_.clear();
  AddPod("big", "node-1", 0.8);
  AddPod("small", "node-1", 0.8);
  cfg_.rebalance.limits.per_cycle = 2;
  Build();
  Cycle(95);
  int asked = 0;
  // The reconciler's gate: leader for the first eviction only.
  auto snap = cache_->Snapshot();
  std::vector<ReliefInput> in;
  for (const auto& n : snap->nodes) {
    ReliefInput r;
    r.node = n.get();
    r.marked = n->name == "node-1";
    r.marked_since_wall = clock_.WallSeconds() - 60;
    r.load[0] = n->name == "node-1" ? 95 : 10;
    if (r.marked) r.holding = {HoldingRule{"cpu", Rule::Resource::kCpu, 95, 60}};
    in.push_back(r);
  }
  Rebalancer fresh(cfg_, &api_, &prom_, &clock_, TimeZone::Utc(),
                   RebalancerOptions{ledger_, opts_.interval_seconds});
  NodeWriter writer(opts_.writes, opts_.mark, &api_, &clock_);
  EvictionRecords records(opts_.mark, cache_.get(), &writer);
  ReliefWrites io;
  io.writer = &writer;
  io.records = &records;
  // Leader until the first eviction has been sent: every later ask (its answer, the next pod's
  // write-ahead and send) finds the leadership lost.
  io.hooks.gate = [&] { return ++asked > 0 && api_.evictions().empty(); };
  io.stop = &stop_;
  fresh.Relieve(in, {}, io);
  EXPECT_EQ(api_.evictions().size(), 1u) << "no eviction after the leadership was lost";
}

TEST_F(RebalancerTest, AColdNodeWithoutEvictionsLosesItsMarkAsBefore) {
  Build();
  Cycle(95);
  ASSERT_TRUE(Labelled("node-1"));
  Cycle(40);  // cooled before any eviction: nothing holds the mark
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_FALSE(Labelled("node-1"));
}

TEST_F(RebalancerTest, NeverEvictsFromANodeMarkedByHand) {
  NodeEdit e;
  e.label = {NodeEdit::Op::kSet, "status", "presure"};
  ASSERT_TRUE(api_.PatchNode("node-1", e).ok());  // our key and value, but no record of ours
  Build();
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty()) << "a mark without our record is not ours to act on";
  EXPECT_NE(FindLabel(api_.nodes()["node-1"].annotations, kHeldByAnnotation), nullptr)
      << "the hot node's mark is adopted: our record is written";
  Cycle(95);
  EXPECT_EQ(api_.evictions().size(), 1u) << "once the record is ours, the node is relieved";
}

TEST_F(RebalancerTest, DryRunPlansAndReportsButNeverEvicts) {
  cfg_.rebalance.dry_run = true;
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_TRUE(RebalanceEvents().empty()) << "nothing happened to announce";
  EXPECT_EQ(Evictions("dry_run"), 1u);
  auto report = rebalancer_->Report();
  ASSERT_EQ(report.recent.size(), 1u);
  EXPECT_EQ(report.recent[0].pod, "shop/big");
  EXPECT_EQ(report.recent[0].result, "dry_run");
  Cycle(95);
  EXPECT_EQ(Evictions("dry_run"), 1u) << "dry runs are paced by the node cool-down too";
  EXPECT_EQ(Skips("node_cooldown"), 1u);
}

TEST_F(RebalancerTest, ABudgetThatSaysNoIsCountedAndRetriedLater) {
  Build();
  Cycle(95);
  api_.ScriptEvictions({EvictionResult{EvictionResult::Kind::kBlockedByBudget,
                                       Status(StatusCode::kUnavailable, "budget")}});
  Cycle(95);
  EXPECT_EQ(Evictions("blocked_by_pdb"), 1u);
  EXPECT_EQ(Evictions("evicted"), 0u);
  const int lists = api_.pod_list_calls();
  Cycle(95);
  EXPECT_EQ(Evictions("evicted"), 0u);
  EXPECT_EQ(api_.pod_list_calls(), lists)
      << "a node that gave nothing waits before it is listed again";
  EXPECT_EQ(Skips("retry_wait"), 1u);
  clock_.AdvanceSeconds(20);  // the node's cool-down (30 s) since the refused attempt
  Cycle(95);
  EXPECT_EQ(Evictions("evicted"), 1u) << "tried again after the wait";
}

TEST_F(RebalancerTest, OutsideTheWindowNothingIsListedOrEvicted) {
  // A window of one minute, twelve hours away from the fake clock's time of day.
  int weekday = 0, minute = 0;
  TimeZone::Utc().LocalWeekdayMinute(clock_.WallSeconds(), &weekday, &minute);
  const int start = (minute + 12 * 60) % (24 * 60);
  cfg_.rebalance.limits.windows = {TimeWindow{0x7f, start, start + 1}};
  Build();
  for (int i = 0; i < 3; ++i) Cycle(95);
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_EQ(api_.pod_list_calls(), 0) << "limits are checked before any pod is listed";
  EXPECT_EQ(Skips("window"), 2u);
}

TEST_F(RebalancerTest, APodThatFitsNowhereElseStays) {
  FillOtherNodes(4);  // full by requests
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_GE(Skips("no_fit"), 1u);
}

TEST_F(RebalancerTest, WithoutUsageNothingIsEvicted) {
  Build();
  Cycle(95);
  prom_.SetError(kPodCpu, Status(StatusCode::kUnavailable, "prometheus down"));
  Cycle(95);
  EXPECT_TRUE(api_.evictions().empty()) << "a pod of unknown usage is never evicted";
  EXPECT_EQ(rebalancer_->Counters().usage_errors, 1u);
}

// A rule on the kubelet's memory.available (bytes, operator '<', relieveAfter: 0s) beside the
// CPU rule, whose patience (rebalance.after) is ten minutes.
class MemoryAvailableTest : public RebalancerTest {
 protected:
  static constexpr double kMiB = 1024.0 * 1024;
  void SetUp() override {
    RebalancerTest::SetUp();
    Rule mem;
    mem.name = "mem";
    mem.query = "mem_avail";
    mem.op = Comparison::kLess;
    mem.threshold = 300 * kMiB;
    mem.clear_threshold = 500 * kMiB;
    mem.resource = Rule::Resource::kMemory;
    mem.unit = ValueUnit::kBytes;
    mem.relieve_after_seconds = 0;
    cfg_.rules.push_back(mem);
    cfg_.rebalance.after_seconds = 600;
    cfg_.rebalance.memory_usage_query = "pod_mem";
    // Working sets: big 200 MiB, small 400 MiB, the DaemonSet's agent 50 MiB.
    prom_.SetSamples("pod_mem", {Sample{{{"namespace", "shop"}, {"pod", "big"}}, 200 * kMiB, 0},
                                 Sample{{{"namespace", "shop"}, {"pod", "small"}}, 400 * kMiB, 0},
                                 Sample{{{"namespace", "shop"}, {"pod", "agent"}}, 50 * kMiB, 0}});
  }
  void MemCycle(double cpu_node1, double avail_node1, double avail_node2 = 4096 * kMiB) {
    prom_.SetValues("mem_avail",
                    {{"node-1", avail_node1}, {"node-2", avail_node2}, {"node-3", 4096 * kMiB}});
    Cycle(cpu_node1);
  }
};

TEST_F(MemoryAvailableTest, AMemoryRuleActsAtOnceInBytes) {
  cfg_.rebalance.evict_within_requests = true;  // every pod here is within its 1 GB request
  Build();
  MemCycle(10, 100 * kMiB);
  ASSERT_TRUE(Labelled("node-1"));
  MemCycle(10, 100 * kMiB);
  // 400 MiB short of 500 MiB available: small's 400 MiB working set is enough.
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/small"})
      << "relieveAfter: 0s, not rebalance.after's 10 minutes";
  auto report = rebalancer_->Report();
  ASSERT_EQ(report.recent.size(), 1u);
  EXPECT_EQ(report.recent[0].unit, ValueUnit::kBytes);
  EXPECT_DOUBLE_EQ(report.recent[0].usage, 400 * kMiB);
  EXPECT_DOUBLE_EQ(report.recent[0].load, 100 * kMiB) << "bytes available, as the rule says";
  EXPECT_DOUBLE_EQ(report.recent[0].goal, 500 * kMiB);
  ASSERT_EQ(report.nodes.size(), 1u);
  EXPECT_EQ(report.nodes[0].unit, ValueUnit::kBytes);
  EXPECT_DOUBLE_EQ(report.nodes[0].load_after, 500 * kMiB);
  auto events = RebalanceEvents();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_NE(events[0].message.find("rule mem at 100 MiB available is below its clear threshold "
                                   "500 MiB; this pod used 400 MiB)"),
            std::string::npos)
      << events[0].message;
}

// Issue 38, E3: by default memory relief moves only the kubelet's next victims -- pods over their
// request -- so a pod within its request is never moved in their place.
TEST_F(MemoryAvailableTest, PodsWithinTheirRequestsStayByDefault) {
  Build();
  MemCycle(10, 100 * kMiB);
  MemCycle(10, 100 * kMiB);
  EXPECT_TRUE(api_.evictions().empty()) << "every pod is within its 1 GB request";
  EXPECT_GE(Skips("within_requests"), 1u);
  ASSERT_EQ(rebalancer_->Report().nodes.size(), 1u);
  EXPECT_EQ(rebalancer_->Report().nodes[0].limit, "within_requests");
}

// The kubelet would kill `small` next (over its request); it cannot move (nothing steers its
// replacement off the mark), so nothing else is moved in its place, and its owner is told.
TEST_F(MemoryAvailableTest, TheKubeletsNextVictimThatCannotMoveStopsTheRelief) {
  PodInfo small = api_.pods().at("shop/small");
  small.preferred_affinity.clear();  // would come back
  api_.AddPod(small);
  prom_.SetSamples("pod_mem", {Sample{{{"namespace", "shop"}, {"pod", "big"}}, 1.5e9, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "small"}}, 2.5e9, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "agent"}}, 50 * kMiB, 0}});
  Build();
  MemCycle(10, 100 * kMiB);
  MemCycle(10, 100 * kMiB);
  EXPECT_TRUE(api_.evictions().empty()) << "big (also over its request) is not moved in its place";
  EXPECT_GE(Skips("kubelet_victim_stays"), 1u);
  bool told = false;
  for (const EventInfo& e : RebalanceEvents())
    told |= e.reason == "RebalanceKubeletVictimStays" && e.kind == "ReplicaSet" &&
            e.name == "small-rs" && e.type == "Warning";
  EXPECT_TRUE(told);
}

// E6 through the controller: a BestEffort pod whose RuntimeClass adds an overhead exceeds its
// (zero) request at the kubelet with any use, so it is the next victim, before `small`.
TEST_F(MemoryAvailableTest, ABestEffortPodWithAnOverheadIsTheKubeletsNextVictim) {
  PodInfo vm = api_.pods().at("shop/big");
  vm.name = "kata";
  vm.uid = "uid-kata";
  vm.owner_name = "kata-rs";
  vm.labels = {{"app", "kata"}, {"pod-template-hash", "5d8f"}};
  vm.memory_request = 160 * kMiB;  // the scheduler's: its overhead only
  vm.memory_overhead = 160 * kMiB;
  api_.AddPod(vm);
  prom_.SetSamples("pod_mem", {Sample{{{"namespace", "shop"}, {"pod", "big"}}, 200 * kMiB, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "small"}}, 1.05e9, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "agent"}}, 50 * kMiB, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "kata"}}, 150 * kMiB, 0}});
  Build();
  MemCycle(10, 100 * kMiB);
  MemCycle(10, 100 * kMiB);
  ASSERT_FALSE(api_.evictions().empty());
  // 150 MiB over its zero request, where small is 48 MiB over its own: kata first. Counted
  // against the scheduler's request (its overhead), it would be within it, and go after small.
  EXPECT_EQ(api_.evictions()[0], "shop/kata");
}

// E3: the kubelet's next victim is refused at the API (a PodDisruptionBudget): nothing else moves
// in its place, and its owner is told.
TEST_F(MemoryAvailableTest, ARefusedVictimStopsTheNodesRelief) {
  prom_.SetSamples("pod_mem", {Sample{{{"namespace", "shop"}, {"pod", "big"}}, 1.5e9, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "small"}}, 2.5e9, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "agent"}}, 50 * kMiB, 0}});
  cfg_.rebalance.limits.per_cycle = 2;
  Build();
  MemCycle(10, 100 * kMiB);
  api_.ScriptEvictions({EvictionResult{EvictionResult::Kind::kBlockedByBudget,
                                       Status(StatusCode::kUnavailable, "pdb")}});
  MemCycle(10, 100 * kMiB);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/small"}) << "big is not sent";
  EXPECT_GE(Skips("kubelet_victim_stays"), 1u);
  ASSERT_FALSE(rebalancer_->Report().nodes.empty());
  EXPECT_EQ(rebalancer_->Report().nodes[0].limit, "kubelet_victim_stays");
}

// The rebalancer's Events go through its EventLimiter (issue 38): the same warning on the same
// owner, every retry, is posted five times (the burst), then held back and counted.
TEST_F(MemoryAvailableTest, RepeatedEventsOnOneObjectAreLimited) {
  PodInfo small = api_.pods().at("shop/small");
  small.preferred_affinity.clear();  // would come back: the kubelet's next victim stays
  api_.AddPod(small);
  prom_.SetSamples("pod_mem", {Sample{{{"namespace", "shop"}, {"pod", "big"}}, 1.5e9, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "small"}}, 2.5e9, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "agent"}}, 50 * kMiB, 0}});
  Build();
  for (int i = 0; i < 12; ++i) {
    MemCycle(10, 100 * kMiB);
    clock_.AdvanceSeconds(20);  // past the retry wait (the cool-down, 30 s)
  }
  size_t posted = 0;
  for (const EventInfo& e : RebalanceEvents()) posted += e.reason == "RebalanceKubeletVictimStays";
  EXPECT_EQ(posted, 5u) << "the burst per object";
  EXPECT_GE(rebalancer_->Counters().events_suppressed, 1u);
  EXPECT_GE(Skips("kubelet_victim_stays"), 6u);
}

// The same node once small can move: it goes, the kubelet's next victim.
TEST_F(MemoryAvailableTest, TheKubeletsNextVictimMoves) {
  prom_.SetSamples("pod_mem", {Sample{{{"namespace", "shop"}, {"pod", "big"}}, 1.5e9, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "small"}}, 2.5e9, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "agent"}}, 50 * kMiB, 0}});
  Build();
  MemCycle(10, 100 * kMiB);
  MemCycle(10, 100 * kMiB);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/small"});
}

// Issue 38, E2: the memory rule begins to hold a node the CPU rule marked and qualified; its own
// relieveAfter (10 minutes) counts from now, so the goal is still the CPU rule's.
TEST_F(MemoryAvailableTest, ARuleThatJustBeganToHoldWaitsItsOwnTime) {
  cfg_.rebalance.after_seconds = 0;
  cfg_.rules[1].relieve_after_seconds = 600;
  cfg_.rebalance.evict_within_requests = true;  // the memory plan would pick small, not big
  Build();
  MemCycle(95, 4096 * kMiB);  // the CPU rule marks node-1
  MemCycle(95, 100 * kMiB);   // the memory rule begins to hold
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  EXPECT_EQ(rebalancer_->Report().recent[0].rule, "cpu");
}

TEST_F(MemoryAvailableTest, ACpuRuleKeepsItsPatience) {
  Build();
  for (int i = 0; i < 10; ++i) MemCycle(95, 4096 * kMiB);
  ASSERT_TRUE(Labelled("node-1"));
  EXPECT_TRUE(api_.evictions().empty()) << "hot by CPU for 100 s of the 600 s `after`";
}

// An urgent rule qualifies the node, but only it may set the goal: the CPU rule, further over its
// clear threshold, has not waited its `after` yet, so the relief is by memory, not by CPU.
TEST_F(RebalancerTest, AnUrgentRuleDoesNotCutAPatientRulesWait) {
  Rule mem;
  mem.name = "mempct";
  mem.query = "mem_pct";
  mem.threshold = 80;
  mem.clear_threshold = 70;
  mem.resource = Rule::Resource::kMemory;
  mem.relieve_after_seconds = 0;
  cfg_.rules.push_back(mem);
  cfg_.rebalance.after_seconds = 600;  // the CPU rule's patience
  cfg_.rebalance.memory_usage_query = "pod_mem";
  prom_.SetSamples("pod_mem", {Sample{{{"namespace", "shop"}, {"pod", "big"}}, 1e9, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "small"}}, 3e9, 0},
                               Sample{{{"namespace", "shop"}, {"pod", "agent"}}, 1e8, 0}});
  Build();
  for (int i = 0; i < 2; ++i) {
    // CPU 35 points over its clear threshold, memory 11 over its own.
    prom_.SetValues("mem_pct", {{"node-1", 81}, {"node-2", 10}, {"node-3", 10}});
    Cycle(95);
  }
  ASSERT_TRUE(Labelled("node-1"));
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/small"})
      << "3 GB of 16 GB relieves memory; by CPU it would have been big";
  EXPECT_EQ(rebalancer_->Report().recent[0].rule, "mempct");
}

// node-2 is the emptier by requests, but 600 MiB available there would fall to 200 MiB with
// small's working set, under the rule's 500 MiB: the replacement must go to node-3.
TEST_F(MemoryAvailableTest, TheDestinationMustKeepItsAvailableBytes) {
  PodInfo filler;
  filler.ns = "fill";
  filler.name = "filler";
  filler.node = "node-3";
  filler.phase = "Running";
  filler.cpu_request = 2;
  api_.AddPod(filler);
  cfg_.rebalance.evict_within_requests = true;  // every pod here is within its 1 GB request
  Build();
  MemCycle(10, 100 * kMiB, 600 * kMiB);
  MemCycle(10, 100 * kMiB, 600 * kMiB);
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/small"});
  EXPECT_EQ(rebalancer_->Report().recent[0].to, "node-3");
}

// The mirror mode (rebalance.underused): node-3 idles with two small pods, node-2 a little less
// idle and empty, node-1 busy but cool.
class UnderusedTest : public RebalancerTest {
 protected:
  void SetUp() override {
    RebalancerTest::SetUp();
    AddPod("w1", "node-3", 0.1);
    AddPod("w2", "node-3", 0.1);
    UnderusedConfig& u = cfg_.rebalance.underused;
    u.enabled = true;
    u.below[0] = 20;
    u.for_seconds = 60;
  }
  void Loads(double node1, double node2, double node3) {
    prom_.SetValues("cpu_pct", {{"node-1", node1}, {"node-2", node2}, {"node-3", node3}});
    clock_.AdvanceSeconds(10);
    RunCycleExplained();
    ASSERT_TRUE(cache_->ListOnce().ok());  // what the watch would bring before the next cycle
  }
  std::string Value(const std::string& node) {
    const NodeInfo n = api_.nodes()[node];
    const std::string* v = FindLabel(n.labels, "status");
    return v == nullptr ? "" : *v;
  }
};

// The two modes never act on one node (issue 24, defect 3): a node marked underused by its memory
// that turns CPU-hot gets the hot mark and is not drained, neither in that cycle nor after.
TEST_F(UnderusedTest, AHotNodeIsNeverDrained) {
  UnderusedConfig& u = cfg_.rebalance.underused;
  u.below[0] = std::nan("");
  u.below[1] = 25;
  Rule mem;
  mem.name = "mem";
  mem.query = "mem_pct";
  mem.threshold = 90;
  mem.clear_threshold = 85;
  mem.resource = Rule::Resource::kMemory;
  cfg_.rules.push_back(mem);
  Build();
  auto loads = [&](double cpu3) {
    prom_.SetValues("cpu_pct", {{"node-1", 40}, {"node-2", 40}, {"node-3", cpu3}});
    prom_.SetValues("mem_pct", {{"node-1", 50}, {"node-2", 50}, {"node-3", 10}});
    clock_.AdvanceSeconds(10);
    RunCycleExplained();
    ASSERT_TRUE(cache_->ListOnce().ok());
  };
  for (int i = 0; i < 7; ++i) loads(40);
  ASSERT_EQ(Value("node-3"), "underused");
  loads(95);  // CPU-hot now; its memory still idles
  EXPECT_EQ(Value("node-3"), "presure");
  for (int i = 0; i < 3; ++i) loads(95);
  EXPECT_EQ(Value("node-3"), "presure") << "the underused mark never comes back over the hot one";
  for (const EvictionRecord& r : rebalancer_->Report().recent)
    EXPECT_NE(r.rule, Rebalancer::kUnderusedRule) << r.pod << " drained from a hot node";
}

// A node that leaves the managed set with the underused mark loses it (issue 24, defect 9): the
// mode no longer looks at the node, so nothing else would ever take it off.
// Issue 38: the underused mark is set only on the node as the cycle read it: an operator's value
// written under our key meanwhile is not overwritten.
TEST_F(UnderusedTest, AnOperatorsValueWrittenDuringTheCycleIsNotOverwritten) {
  Build();
  for (int i = 0; i < 6; ++i) Loads(40, 40, 5);  // node-3 below 20 % for 50 s of the 60 s
  ASSERT_EQ(Value("node-3"), "");
  api_.on_patch = [&](const std::string& node) {
    if (node != "node-3") return;
    api_.on_patch = nullptr;
    api_.EditNode("node-3", [](NodeInfo* n) { n->labels.emplace_back("status", "maintenance"); });
  };
  Loads(40, 40, 5);  // its `for` is over: the set is planned from the cycle's read
  EXPECT_EQ(Value("node-3"), "maintenance");
  EXPECT_EQ(rebalancer_->Counters().underused_marks["changed"], 1u);
  Loads(40, 40, 5);
  EXPECT_EQ(Value("node-3"), "maintenance") << "the next cycle sees the operator's value";
}

TEST_F(UnderusedTest, ANodeThatLeavesTheManagedSetLosesTheUnderusedMark) {
  cfg_.node_selector = "!excluded";
  Build();
  for (int i = 0; i < 7; ++i) Loads(40, 15, 5);
  ASSERT_EQ(Value("node-3"), "underused");
  api_.EditNode("node-3", [](NodeInfo* n) { n->labels.emplace_back("excluded", "true"); });
  Loads(40, 15, 5);  // the re-LIST no longer returns node-3
  Loads(40, 15, 5);
  EXPECT_EQ(Value("node-3"), "");
}

// ...but not at any cost: after kUnmarkDepartedTries cycles of failing writes it is left (with a
// warning) for -cleanup, not tried for ever.
TEST_F(UnderusedTest, RemovingItFromADepartedNodeIsNotTriedForEver) {
  cfg_.node_selector = "!excluded";
  Build();
  for (int i = 0; i < 7; ++i) Loads(40, 15, 5);
  ASSERT_EQ(Value("node-3"), "underused");
  api_.EditNode("node-3", [](NodeInfo* n) { n->labels.emplace_back("excluded", "true"); });
  api_.FailNextPatches(std::vector<Status>(10000, Status::Unavailable("503 brownout")));
  for (int i = 0; i < kUnmarkDepartedTries + 5; ++i) Loads(40, 15, 5);
  api_.FailNextPatches({});
  Loads(40, 15, 5);
  EXPECT_EQ(Value("node-3"), "underused") << "given up";
}

// A drained pod's replacement, once running, releases its workload's perWorkload limit as a
// relieved pod's does (issue 24, defect 10): the workload's next pod need not wait 10 minutes.
TEST_F(UnderusedTest, ADrainedPodsReplacementReleasesItsWorkload) {
  api_.RemovePod("shop/w1");
  api_.RemovePod("shop/w2");
  auto pod = [&](const std::string& name, const std::string& node) {
    PodInfo p = api_.pods()["shop/big"];
    p.name = name;
    p.node = node;
    p.uid = "uid-" + name;
    p.owner_name = "web-rs";
    p.terminating = false;
    p.created_wall = clock_.WallSeconds();
    return p;
  };
  PodInfo a = pod("web-a", "node-3"), b = pod("web-b", "node-3");
  a.created_wall = b.created_wall = clock_.WallSeconds() - 3600;
  api_.AddPod(a);
  api_.AddPod(b);
  Build();
  for (int i = 0; i < 8; ++i) Loads(40, 15, 5);
  ASSERT_EQ(api_.evictions().size(), 1u) << "perWorkload (1): one pod of web at a time";
  EXPECT_EQ(Skips("per_workload"), 1u);
  api_.RemovePod("shop/" + api_.evictions()[0].substr(5));
  api_.AddPod(pod("web-c", "node-1"));  // its replacement runs elsewhere
  clock_.AdvanceSeconds(30);            // the node's cool-down
  Loads(40, 15, 5);
  EXPECT_EQ(api_.evictions().size(), 2u) << "the replacement released the workload";
}

TEST_F(UnderusedTest, MarkedAfterForThenDrainedThenUnmarkedWhenBusyAgain) {
  Build();
  for (int i = 0; i < 6; ++i) Loads(40, 15, 5);
  EXPECT_EQ(Value("node-3"), "") << "below 20 % for 50 s, not yet 60 s";
  Loads(40, 15, 5);
  EXPECT_EQ(Value("node-3"), "underused") << "the emptiest of the two idle nodes (maxNodes 1)";
  EXPECT_EQ(Value("node-2"), "");
  EXPECT_TRUE(api_.evictions().empty()) << "the cache had not seen the mark in that cycle";
  auto events = api_.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "MarkedUnderused");
  EXPECT_EQ(events[0].name, "node-3");
  auto report = rebalancer_->Report();
  ASSERT_EQ(report.underused.size(), 2u);
  EXPECT_EQ(report.underused[0].state, "marked");
  EXPECT_EQ(report.underused[1].state, "capped") << "node-2 waits for node-3";

  Loads(40, 15, 5);
  EXPECT_EQ(api_.evictions(), (std::vector<std::string>{"shop/w1", "shop/w2"}))
      << "every evictable pod, within perCycle (2)";
  EXPECT_EQ(rebalancer_->Report().recent.at(0).rule, Rebalancer::kUnderusedRule);
  EXPECT_EQ(rebalancer_->Report().recent.at(0).to, "node-1")
      << "not node-2: it idles too (capped), and its pods' turn would come";
  EXPECT_EQ(rebalancer_->Counters().underused_marks["set"], 1u);
  events = api_.events();
  ASSERT_EQ(events.size(), 5u) << "the mark, then a pod and a node event per eviction";
  EXPECT_EQ(events[1].reason, "UnderusedDrain");
  EXPECT_NE(events[1].message.find("Evicted to drain node node-3"), std::string::npos)
      << events[1].message;
  EXPECT_FALSE(Labelled("node-3")) << "the hot mark is another value";

  Loads(40, 15, 25);  // busy again (pods landed on it anyway: the affinity term is soft)
  EXPECT_EQ(Value("node-3"), "");
  EXPECT_EQ(rebalancer_->Counters().underused_marks["removed"], 1u);
  auto patches = api_.patches();
  ASSERT_EQ(patches.size(), 5u) << "the mark, each drain's record, the unmark, node-2's mark";
  for (int i : {1, 2}) {
    EXPECT_EQ(patches[i].node, "node-3");
    EXPECT_EQ(patches[i].edit.annotation.key, kLastDrainAnnotation);
    EXPECT_EQ(patches[i].edit.annotation.op, NodeEdit::Op::kSet);
  }
  EXPECT_EQ(patches[3].node, "node-3");
  EXPECT_FALSE(patches[3].set);
  EXPECT_EQ(patches[3].edit.label.value, "underused") << "removed only if still ours";
  EXPECT_EQ(patches[3].edit.annotation.op, NodeEdit::Op::kRemove) << "the record goes with it";
  EXPECT_EQ(FindLabel(api_.nodes()["node-3"].annotations, kLastDrainAnnotation), nullptr);
  EXPECT_EQ(patches[4].node, "node-2") << "the place it held goes to the next idle node";
  EXPECT_EQ(Value("node-2"), "underused");
}

// Pods that would come back stay on the node, so it is not drained: were it called drained, its
// maxNodes place would go to the next idle node, and in time every idle node would carry the mark.
TEST_F(UnderusedTest, PodsThatWouldComeBackKeepTheNodeDraining) {
  for (const char* name : {"shop/w1", "shop/w2"}) {
    PodInfo p = api_.pods().at(name);
    p.preferred_affinity = {Avoiding({"presure"})};  // not the underused value
    api_.AddPod(p);
  }
  Build();
  for (int i = 0; i < 10; ++i) Loads(40, 15, 5);
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_GE(Skips("would_return"), 2u);
  EXPECT_EQ(Value("node-3"), "underused");
  EXPECT_EQ(Value("node-2"), "") << "node-3 still holds the one place (maxNodes 1)";
  auto report = rebalancer_->Report();
  ASSERT_FALSE(report.underused.empty());
  EXPECT_EQ(report.underused[0].name, "node-3");
  EXPECT_EQ(report.underused[0].state, "draining");
}

// Defect 8: a drain is recorded before it is sent, so a new leader waits out the node's
// cool-down instead of draining it again at once.
TEST_F(UnderusedTest, ADrainIsRecordedFirstAndANewLeaderWaitsOutTheCooldown) {
  cfg_.rebalance.limits.per_cycle = 1;
  Build();
  std::vector<size_t> sent_at_patch;  // evictions sent when each PATCH arrived
  api_.on_patch = [&](const std::string&) { sent_at_patch.push_back(api_.evictions().size()); };
  for (int i = 0; i < 8; ++i) Loads(40, 15, 5);
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/w1"});
  auto patches = api_.patches();
  ASSERT_EQ(patches.size(), 2u) << "the mark, the drain's record";
  EXPECT_EQ(patches[1].edit.annotation.key, kLastDrainAnnotation);
  EXPECT_EQ(sent_at_patch[1], 0u) << "the record's PATCH came before the eviction";
  ASSERT_NE(FindLabel(api_.nodes()["node-3"].annotations, kLastDrainAnnotation), nullptr);
  api_.on_patch = nullptr;
  // Another replica takes over: nothing in memory, the record on the node.
  Build();
  Loads(40, 15, 5);
  EXPECT_EQ(api_.evictions().size(), 1u) << "within nodeCooldown (30 s) of the recorded drain";
  auto report = rebalancer_->Report();
  ASSERT_FALSE(report.underused.empty());
  EXPECT_EQ(report.underused[0].limit, "node_cooldown");
  for (int i = 0; i < 3; ++i) Loads(40, 15, 5);
  EXPECT_EQ(api_.evictions(), (std::vector<std::string>{"shop/w1", "shop/w2"}))
      << "after the cool-down the drain goes on";
}

// The hot mark replacing the underused one leaves the drain record behind; it goes once the
// node's cool-down is over, as no removal of the underused mark will take it along.
TEST_F(UnderusedTest, ADrainRecordWhoseMarkWasReplacedGoes) {
  Build();
  for (int i = 0; i < 8; ++i) Loads(40, 15, 5);
  ASSERT_FALSE(api_.evictions().empty());
  ASSERT_NE(FindLabel(api_.nodes()["node-3"].annotations, kLastDrainAnnotation), nullptr);
  Loads(40, 15, 95);  // hot: the labeller's mark replaces the underused one
  ASSERT_EQ(Value("node-3"), "presure");
  for (int i = 0; i < 4; ++i) Loads(40, 15, 95);  // past nodeCooldown (30 s)
  EXPECT_EQ(Value("node-3"), "presure");
  EXPECT_EQ(FindLabel(api_.nodes()["node-3"].annotations, kLastDrainAnnotation), nullptr);
}

TEST_F(UnderusedTest, HotNodesComeFirstAndAHotMarkIsNeverOverwritten) {
  cfg_.rebalance.underused.for_seconds = 0;
  Build();
  // node-1 hot: marked by the labeller; node-3 marked underused. node-2 at 10 %: big (2 cores,
  // 50 %) fits there by real usage too, at the clear threshold (60 %).
  Loads(95, 10, 5);
  EXPECT_TRUE(Labelled("node-1"));
  EXPECT_EQ(Value("node-3"), "underused");
  Loads(95, 10, 5);
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"})
      << "relief of the hot node; the drain waits for a cycle without one";
  EXPECT_EQ(rebalancer_->Report().underused.at(0).limit, "hot_nodes_first");
  EXPECT_EQ(Value("node-1"), "presure") << "an underused mark never lands on a marked node";
}

TEST_F(UnderusedTest, ReplacementsAvoidBothOurValuesButNotAnOperatorsValue) {
  cfg_.rebalance.underused.for_seconds = 3600;  // nothing newly marked underused in this test
  NodeInfo n2 = api_.nodes()["node-2"];
  n2.labels = {{"status", "maintenance"}};  // an operator's value under our key
  api_.AddNode(n2);
  NodeInfo n3 = api_.nodes()["node-3"];
  n3.labels = {{"status", "underused"}};
  api_.AddNode(n3);
  Build();
  Loads(95, 10, 50);  // node-2 at 10 %: big (50 % of a node) fits there by real usage too
  Loads(95, 10, 50);
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  EXPECT_EQ(rebalancer_->Report().recent.at(0).to, "node-2")
      << "node-3 is being drained; node-2's value is not ours, the affinity term does not avoid it";
}

TEST_F(UnderusedTest, DryRunNeitherMarksNorEvictsButReportsThePlan) {
  cfg_.rebalance.underused.for_seconds = 0;
  cfg_.rebalance.dry_run = true;
  Build();
  Loads(40, 15, 5);
  Loads(40, 15, 5);
  EXPECT_EQ(Value("node-3"), "");
  EXPECT_TRUE(api_.patches().empty());
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_GE(Evictions("dry_run"), 2u) << "the drain it would do, paced by the limits";
}

// /explain answers from the cycle's own records: the view the web port renders, built as
// Controller::View builds it (the reconciler's last report, the rebalancer's report).
class ExplainTest : public RebalancerTest {
 protected:
  rapidjson::Document Explain(const std::string& query) {
    ControllerView view;
    view.last_cycle = rec_->LastReport();
    view.rebalance = rebalancer_->Report();
    const ExplainAnswer a = RenderExplain(query, view);
    rapidjson::Document d;
    d.Parse(a.body.c_str());
    EXPECT_FALSE(d.HasParseError()) << a.body;
    EXPECT_EQ(a.status, 200) << a.body;
    return d;
  }
  static std::string Str(const rapidjson::Value& v, const char* key) {
    return v.HasMember(key) && v[key].IsString() ? v[key].GetString() : "";
  }
};

TEST_F(ExplainTest, AnEvictedPodNamesItsRuleValueGoalAndDestination) {
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions(), std::vector<std::string>{"shop/big"});
  auto d = Explain("pod=shop/big");
  EXPECT_EQ(Str(d, "source"), "cycle");
  const auto& dec = d["decision"];
  EXPECT_EQ(Str(dec, "verdict"), "moves");
  EXPECT_EQ(Str(dec, "reason"), "evicted");
  EXPECT_EQ(Str(dec, "to"), "node-2");
  // Every check before the eviction passed, in the cycle's order.
  ASSERT_EQ(dec["checks"].Size(), kDecisionStages);
  for (size_t i = 0; i + 1 < kDecisionStages; ++i)
    EXPECT_EQ(Str(dec["checks"][static_cast<rapidjson::SizeType>(i)], "result"), "passed");
  EXPECT_EQ(Str(d["eviction"], "rule"), "cpu");
  EXPECT_DOUBLE_EQ(d["eviction"]["load"].GetDouble(), 95);
  EXPECT_DOUBLE_EQ(d["eviction"]["goal"].GetDouble(), 60);
  EXPECT_EQ(Str(d["nodeState"], "state"), "hot");
  // The Eviction itself carried why.
  Labels a = api_.eviction_annotations("shop/big");
  EXPECT_EQ(*FindLabel(a, kEvictionRuleAnnotation), "cpu");
  EXPECT_EQ(*FindLabel(a, kEvictionDestinationAnnotation), "node-2");
  EXPECT_NE(FindLabel(a, kEvictionReasonAnnotation)->find("over its clear threshold"),
            std::string::npos);
}

TEST_F(ExplainTest, APodKeptByItsBudgetSaysSoAndWhatWouldChangeIt) {
  Build();
  Cycle(95);
  api_.ScriptEvictions({EvictionResult{EvictionResult::Kind::kBlockedByBudget,
                                       Status(StatusCode::kUnavailable, "budget")}});
  Cycle(95);
  auto d = Explain("pod=shop/big");
  const auto& dec = d["decision"];
  EXPECT_EQ(Str(dec, "reason"), "blocked_by_pdb");
  EXPECT_EQ(Str(dec, "verdict"), "waits");
  EXPECT_EQ(Str(dec, "stage"), "eviction");
  EXPECT_NE(Str(dec, "change").find("PodDisruptionBudget"), std::string::npos);
  // The node: relieved, its pods in the order the cycle took them, the DaemonSet's last.
  auto n = Explain("node=node-1");
  EXPECT_EQ(Str(n, "state"), "hot");
  ASSERT_TRUE(n["pods"].IsArray());
  ASSERT_EQ(n["pods"].Size(), 3u);
  EXPECT_EQ(Str(n["pods"][0], "pod"), "shop/big");
  EXPECT_EQ(Str(n["pods"][2], "reason"), "daemonset");
  EXPECT_EQ(Str(n["pods"][2], "verdict"), "stays");
}

TEST_F(ExplainTest, APodWithoutASteeringTermIsToldWhatToAdd) {
  PodInfo p = api_.pods().at("shop/big");
  p.preferred_affinity.clear();
  api_.AddPod(p);
  Build();
  Cycle(95);
  Cycle(95);
  auto d = Explain("pod=shop/big&node=node-1");
  const auto& dec = d["decision"];
  EXPECT_EQ(Str(dec, "reason"), "would_return");
  EXPECT_EQ(Str(dec, "stage"), "steering");
  EXPECT_NE(Str(dec, "detail").find("NotIn"), std::string::npos) << Str(dec, "detail");
  // Passed what comes before steering, stopped there, not asked the rest.
  EXPECT_EQ(Str(dec["checks"][0], "result"), "passed");
  EXPECT_EQ(
      Str(dec["checks"][static_cast<rapidjson::SizeType>(DecisionStage::kSteering)], "result"),
      "stopped");
  EXPECT_EQ(Str(dec["checks"][static_cast<rapidjson::SizeType>(DecisionStage::kLimits)], "result"),
            "not_reached");
}

TEST_F(ExplainTest, APodOfANodeNeverRelievedGetsItsNodesState) {
  Build();
  Cycle(50);  // node-1 is not hot
  auto d = Explain("pod=shop/big&node=node-1");
  EXPECT_EQ(Str(d, "source"), "node");
  EXPECT_EQ(Str(d["nodeState"], "verdict"), "cold");
  EXPECT_FALSE(d.HasMember("decision"));
  auto unknown = Explain("pod=shop/big");
  EXPECT_EQ(Str(unknown, "source"), "none");
}

TEST_F(ExplainTest, BadQueriesAreRefusedWithTheReason) {
  Build();
  Cycle(50);
  ControllerView view;
  view.last_cycle = rec_->LastReport();
  EXPECT_EQ(RenderExplain("", view).status, 400);
  EXPECT_EQ(RenderExplain("pod=nonamespace", view).status, 400);
  EXPECT_EQ(RenderExplain("pod=a/b%zz", view).status, 400);
  EXPECT_EQ(RenderExplain("node=node-9", view).status, 404);
}

// Each eviction's record outlives the process: a new controller reads it from the ledger's
// Lease, with its result, and /explain answers for a pod evicted before the restart.
TEST_F(ExplainTest, TheTrailSurvivesARestart) {
  Build();
  Cycle(95);
  Cycle(95);
  ASSERT_EQ(api_.evictions().size(), 1u);
  Build();  // a new process: nothing in memory
  Cycle(95);
  auto d = Explain("pod=shop/big");
  ASSERT_TRUE(d.HasMember("eviction")) << Str(d, "source");
  EXPECT_EQ(Str(d["eviction"], "result"), "evicted");
  EXPECT_EQ(Str(d["eviction"], "rule"), "cpu");
  EXPECT_DOUBLE_EQ(d["eviction"]["goal"].GetDouble(), 60);
}

// Each reason a pod is kept for whatever the load (rebalance/evictable.h) is its decision, and
// /explain says it with the cycle's words.
TEST_F(ExplainTest, EachReasonAPodIsKeptForIsItsDecision) {
  cfg_.rebalance.pods.min_pod_age_seconds = 600;
  cfg_.rebalance.pods.exclude_namespaces = {"kube-system"};
  auto variant = [&](const std::string& name, const std::function<void(PodInfo*)>& change) {
    AddPod(name, "node-1", 0.1);
    PodInfo p = api_.pods().at("shop/" + name);
    api_.RemovePod(p.Key());
    change(&p);
    api_.AddPod(p);
  };
  variant("mirror", [](PodInfo* p) { p->mirror = true; });
  variant("bare", [](PodInfo* p) { p->owner_kind.clear(); });
  variant("scratch", [](PodInfo* p) { p->local_storage = true; });
  variant("critical", [](PodInfo* p) { p->priority = 2000000000; });
  variant("pending", [](PodInfo* p) { p->phase = "Pending"; });
  variant("young", [&](PodInfo* p) { p->created_wall = clock_.WallSeconds(); });
  variant("optout", [](PodInfo* p) { p->annotations = {{kEvictOptOutAnnotation, "false"}}; });
  variant("system", [](PodInfo* p) { p->ns = "kube-system"; });
  Build();
  Cycle(95);
  Cycle(95);
  std::map<std::string, std::string> reasons;
  auto n = Explain("node=node-1");
  for (const auto& p : n["pods"].GetArray()) reasons[Str(p, "pod")] = Str(p, "reason");
  EXPECT_EQ(reasons, (std::map<std::string, std::string>{{"shop/agent", "daemonset"},
                                                         {"shop/bare", "no_controller"},
                                                         {"shop/big", "evicted"},
                                                         {"shop/critical", "priority"},
                                                         {"shop/mirror", "mirror"},
                                                         {"shop/optout", "opted_out"},
                                                         {"shop/pending", "not_running"},
                                                         {"shop/scratch", "local_storage"},
                                                         {"shop/small", "goal_reached"},
                                                         {"shop/young", "too_young"},
                                                         {"kube-system/system", "namespace"}}));
  auto young = Explain("pod=shop/young");
  EXPECT_EQ(Str(young["decision"], "verdict"), "waits");
  EXPECT_NE(Str(young["decision"], "change").find("minPodAge"), std::string::npos);
}

// A limit of the pod's namespace, and a pod evicted and still terminating: for now.
TEST_F(ExplainTest, ALimitAndAPodInMotionWait) {
  cfg_.rebalance.limits.per_namespace_per_hour = 1;
  // big uses 10 % of node-1: its eviction leaves the node hot, and the next cycle relieves again.
  for (Sample& u : usage_)
    if (FindLabel(u.metric, "pod") != nullptr && *FindLabel(u.metric, "pod") == "big")
      u.value = 0.4;
  prom_.SetSamples(kPodCpu, usage_);
  Build();
  Cycle(95);
  Cycle(95);  // big goes (terminating gracefully); small: the limit at its eviction
  ASSERT_EQ(api_.evictions().size(), 1u);
  EXPECT_EQ(Str(Explain("pod=shop/small")["decision"], "stage"), "eviction")
      << "the namespace's hour was used up by big, in the same cycle";
  clock_.AdvanceSeconds(60);  // past the node's cool-down
  Cycle(95);
  auto small = Explain("pod=shop/small");
  EXPECT_EQ(Str(small["decision"], "reason"), "per_namespace_per_hour");
  EXPECT_EQ(Str(small["decision"], "stage"), "limits");
  EXPECT_EQ(Str(small["decision"], "verdict"), "waits");
  auto big = Explain("pod=shop/big");  // evicted, terminating gracefully
  EXPECT_EQ(Str(big["decision"], "reason"), "terminating");
  EXPECT_EQ(Str(big["decision"], "verdict"), "waits");
  EXPECT_EQ(Str(big["eviction"], "result"), "evicted") << "and its eviction on record";
}

// A standby decides nothing: /explain sends the caller to ask again (the service proxy picks
// any replica).
TEST_F(ExplainTest, AStandbyAnswers503) {
  Build();
  Cycle(95);
  ControllerView view;
  view.last_cycle = rec_->LastReport();
  view.rebalance = rebalancer_->Report();
  view.leader_election = true;
  view.is_leader = false;
  view.leader_holder = "pod-a";
  const ExplainAnswer a = RenderExplain("node=node-1", view);
  EXPECT_EQ(a.status, 503);
  EXPECT_NE(a.body.find("standby (the leader is pod-a)"), std::string::npos) << a.body;
}

// Only Kubernetes names reach the answer: any other byte (not UTF-8, markup) is refused.
TEST_F(ExplainTest, OnlyNamesAreAccepted) {
  Build();
  Cycle(95);
  ControllerView view;
  view.last_cycle = rec_->LastReport();
  for (const char* q : {"pod=%FF%FE/x", "pod=shop/%3Cimg%3E", "node=a%20b", "pod=shop/big&uid=%22"})
    EXPECT_EQ(RenderExplain(q, view).status, 400) << q;
}

// A pod re-created under its name (a StatefulSet's) is not given the old pod's decision.
TEST_F(ExplainTest, TheUidTellsAPodFromItsNamesake) {
  Build();
  Cycle(95);
  Cycle(95);
  EXPECT_TRUE(Explain("pod=shop/small&uid=uid-small").HasMember("decision"));
  EXPECT_FALSE(Explain("pod=shop/small&uid=uid-other").HasMember("decision"));
}

// An eviction whose write-ahead failed was never sent: the trail says so across a restart, not
// "requested".
TEST_F(ExplainTest, ATrailNeverClaimsAnEvictionThatWasNotSent) {
  Build();
  Cycle(95);
  api_.on_patch = [&](const std::string&) {
    api_.FailNextPatches({Status(StatusCode::kPermissionDenied, "denied").set_http_status(403)});
  };
  Cycle(95);
  ASSERT_TRUE(api_.evictions().empty());
  api_.on_patch = nullptr;
  Build();  // a new process, in a cycle that evicts nothing (node-1 cooled)
  Cycle(50);
  auto d = Explain("pod=shop/big");
  ASSERT_TRUE(d.HasMember("eviction")) << Str(d, "source");
  EXPECT_EQ(Str(d["eviction"], "result"), "record_failed");
  EXPECT_EQ(Str(d, "evictionBecause"), "writing the node's record ahead of the eviction failed");
}

// The trail and a full ledger stay within the Lease's annotation budget: the oldest records go.
TEST(DecisionTrail, StaysWithinItsBudget) {
  std::deque<EvictionRecord> trail;
  for (int i = 0; i < 200; ++i) {
    EvictionRecord r;
    r.pod = "a-namespace/a-pod-of-a-deployment-7d9f8c6b5-x2k4p" + std::to_string(i);
    r.node = "ip-10-0-1-23.eu-west-1.compute.internal";
    r.to = r.node;
    r.rule = "cpu";
    r.result = "evicted";
    r.at_wall = 1795435200.123456 + i;
    trail.push_back(r);
  }
  const std::string all = TrailWithin(trail, 1 << 20);
  const std::string some = TrailWithin(trail, all.size() / 2);
  EXPECT_LE(some.size(), all.size() / 2);
  auto kept = DecodeTrail(some);
  ASSERT_TRUE(kept.ok());
  ASSERT_FALSE(kept->empty());
  EXPECT_EQ(kept->back().pod, trail.back().pod) << "the newest kept";
  EXPECT_EQ(TrailWithin(trail, 0), "[]");
}

TEST(DescribeReason, EveryReasonHasAVerdictAndASentence) {
  for (const auto& [reason, stage] : KnownReasons()) {
    const ReasonInfo info = DescribeReason(reason, stage);
    EXPECT_NE(info.verdict, PodVerdict::kUnknown) << reason;
    EXPECT_GT(std::string(info.because).size(), 10u) << reason;
  }
  EXPECT_EQ(DescribeReason("per_hour", DecisionStage::kEviction).verdict, PodVerdict::kWaits);
  EXPECT_EQ(DescribeReason("evicting_in_background", DecisionStage::kDisruptors).verdict,
            PodVerdict::kWaits);
  EXPECT_EQ(DescribeReason("evicting_in_background", DecisionStage::kEviction).verdict,
            PodVerdict::kMoves);
  EXPECT_EQ(DescribeReason("from_the_future", DecisionStage::kPlan).verdict, PodVerdict::kUnknown);
}

TEST(DecisionTrail, RoundTripsAndMergesByPodAndTime) {
  EvictionRecord a;
  a.pod = "shop/big";
  a.node = "node-1";
  a.to = "node-2";
  a.rule = "mem";
  a.result = kRequestedResult;
  a.load = 5e8;
  a.goal = 1e9;
  a.usage = 2e8;
  a.unit = ValueUnit::kBytes;
  a.at_wall = 1795435200.123456789;  // a wall time's last bits come back as they were written
  auto back = DecodeTrail(EncodeTrail({a}));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(back->front().unit, ValueUnit::kBytes);
  EXPECT_EQ(back->front().to, "node-2");
  EXPECT_EQ(back->front().at_wall, a.at_wall);
  for (int i = 0; i < 1000; ++i) {  // exactly: records are matched by their time
    EvictionRecord t = a;
    t.at_wall = 1795435200.123456789 + i * 1.000000119;
    auto x = DecodeTrail(EncodeTrail({t}));
    ASSERT_TRUE(x.ok());
    ASSERT_EQ(x->front().at_wall, t.at_wall) << i;
  }
  EvictionRecord answered = a;
  answered.result = "evicted";
  EvictionRecord later = a;
  later.at_wall += 60;
  auto merged = MergeTrail({a, later}, {answered}, 10);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].result, "evicted") << "the answer replaces the request";
  EXPECT_EQ(MergeTrail({a, later}, {}, 1).front().at_wall, later.at_wall) << "the newest kept";
  EXPECT_FALSE(DecodeTrail("[{\"t\":1}]").ok());
  EXPECT_FALSE(DecodeTrail("{").ok());
}

}  // namespace
}  // namespace ds
