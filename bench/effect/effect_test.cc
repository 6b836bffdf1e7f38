// The effect simulation's smoke test: its invariants on a small hot cluster for every scenario
// (pods conserved, no node over its allocatable by requests, the rebalancer within its limits,
// one history per seed), and unit tests of the workload model, the parameter file, the
// descheduler model and the scheduler model's fast path. The figures are not asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "bench/effect/descheduler.h"
#include "bench/effect/params.h"
#include "bench/effect/random.h"
#include "bench/effect/simulation.h"
#include "bench/effect/workload.h"
#include "test/sched/scheduler_model.h"

namespace effect {
namespace {

EffectParams Smoke() {
  auto p = LoadEffectParams(std::string(EFFECT_DIR) + "/smoke.yaml");
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

class ScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScenarioTest, KeepsItsInvariants) {
  const EffectParams p = Smoke();
  Simulation sim(p, ScenarioNamed(GetParam(), p), /*check=*/true);
  sim.Run();
  EXPECT_TRUE(sim.violations().empty()) << sim.violations().front();
  const Figures& f = sim.figures();
  EXPECT_GT(f.pods_bound, 0u);
  // The smoke cluster reaches the code under test (else the invariants were checked on nothing).
  EXPECT_GT(f.node_minutes_cpu, 0);
  const Scenario s = ScenarioNamed(GetParam(), p);
  if (s.controller) {
    EXPECT_GT(f.label_writes, 0u);
  }
  if (s.rebalance || s.descheduler) {
    EXPECT_GT(f.evictions, 0u);
  }
  EXPECT_EQ(f.hot_series.size(), static_cast<size_t>(std::ceil(p.days * 86400 / 600)));
}

INSTANTIATE_TEST_SUITE_P(All, ScenarioTest, ::testing::ValuesIn(KnownScenarios()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// marks-sized's numeric mark: a power of two at or below the GiB available, down at once, up only
// with 25 % to spare (SizeLevel).
TEST(SizedTest, TheNumericMarkMovesDownAtOnceAndUpWithRoomToSpare) {
  EXPECT_EQ(SizeLevel(7.9, -1), 4);
  EXPECT_EQ(SizeLevel(0.5, -1), 0);
  EXPECT_EQ(SizeLevel(300, -1), 64);
  EXPECT_EQ(SizeLevel(8.5, 4), 4) << "8 GiB, but not 25 % over it";
  EXPECT_EQ(SizeLevel(10.1, 4), 8);
  EXPECT_EQ(SizeLevel(3.0, 8), 2) << "never promise room the node no longer has";
  EXPECT_EQ(SizeLevel(7.0, 4), 4);
}

// The smoke cluster: marks-sized writes its label only where a node's level changes, far less
// than once per node and hour, and its marks-relief history differs (the term steers).
TEST(SizedTest, TheLabelIsWrittenRarelyAndSteers) {
  const EffectParams p = Smoke();
  Simulation sized(p, ScenarioNamed("marks-sized", p), /*check=*/true);
  sized.Run();
  Simulation relief(p, ScenarioNamed("marks-relief", p), /*check=*/true);
  relief.Run();
  const Figures& f = sized.figures();
  EXPECT_GT(f.size_label_writes, 0u);
  // Each node's first label, then its changes: in the smoke cluster's few hours of churn about one
  // per node-hour (the week at 1,000 nodes: 0.04, bench/effect/README.md "marks-sized").
  EXPECT_LT(static_cast<double>(f.size_label_writes), 2 * p.nodes.count * p.days * 24);
  EXPECT_EQ(relief.figures().size_label_writes, 0u);
  EXPECT_NE(f.pods_bound == relief.figures().pods_bound &&
                f.node_minutes_memory == relief.figures().node_minutes_memory,
            true)
      << "the term changes where pods go";
}

// Taint mode: the pods carry no affinity term, and TaintToleration (weight 3) steers them off
// the marked nodes as fully as the NotIn term (NodeAffinity, weight 2) does: both outweigh the
// resource scores, so the same history follows.
TEST(SimulationTest, ATaintSteersAsTheAffinityTermDoes) {
  const EffectParams p = Smoke();
  Simulation label(p, ScenarioNamed("marks-w100", p));
  Simulation taint(p, ScenarioNamed("marks-taint", p), /*check=*/true);
  Simulation none(p, ScenarioNamed("none", p));
  label.Run();
  taint.Run();
  none.Run();
  EXPECT_TRUE(taint.violations().empty()) << taint.violations().front();
  EXPECT_GT(taint.figures().marked_node_minutes, 0);
  EXPECT_EQ(taint.figures().node_minutes_cpu, label.figures().node_minutes_cpu);
  EXPECT_EQ(taint.figures().label_writes, label.figures().label_writes);
  EXPECT_EQ(taint.figures().pods_bound, label.figures().pods_bound);
  EXPECT_NE(taint.figures().node_minutes_cpu, none.figures().node_minutes_cpu)
      << "the taint changes where pods go";
}

// The kubelet kills below its memory.available threshold, in its order (kubelet_order.h): with
// memory use 1.5 times the requests, most pods are over their requests, and its victims are those.
TEST(SimulationTest, TheKubeletKillsInItsOrder) {
  EffectParams p = Smoke();
  p.workload.memory_usage_ratio = {1.5, 0.4};
  Simulation sim(p, ScenarioNamed("none", p));
  sim.Run();
  const Figures& f = sim.figures();
  ASSERT_GT(f.kubelet_evictions, 0u) << "the smoke cluster reaches the kubelet";
  EXPECT_GE(f.kubelet_evictions, f.memory_breaches) << "at least one kill per breach";
  EXPECT_EQ(f.kubelet_victims_over_request + f.kubelet_victims_within_request, f.kubelet_evictions);
  EXPECT_GT(f.kubelet_victims_over_request, f.kubelet_victims_within_request);
}

// marks-relief runs the rules of its own file, whose memory_available rule sees bytes available:
// it marks nodes that rule.yaml's percent rules alone leave unmarked, and relieves them.
TEST(SimulationTest, MarksReliefJudgesMemoryAvailableInBytes) {
  EffectParams p = Smoke();
  p.days = 0.25;
  Simulation base(p, ScenarioNamed("marks-rebalance", p));
  Simulation relief(p, ScenarioNamed("marks-relief", p), /*check=*/true);
  base.Run();
  relief.Run();
  EXPECT_TRUE(relief.violations().empty()) << relief.violations().front();
  EXPECT_NE(relief.figures().label_writes, base.figures().label_writes);
  // Only the rules differ: without the memory_available rule the histories are the same.
  for (ds::Rule& r : p.relief_rules.rules)
    if (r.AvailableBytes()) r.threshold = r.clear_threshold = -1e18;  // never below it
  Simulation off(p, ScenarioNamed("marks-relief", p));
  off.Run();
  EXPECT_EQ(off.figures().label_writes, base.figures().label_writes);
  EXPECT_EQ(off.figures().evictions, base.figures().evictions);
}

// marks-early's extra rule marks on memory.available in bytes but never drives the rebalancer:
// with its threshold out of reach the history is marks-relief's; within reach it marks more
// nodes, and no breach begins on a node it held.
TEST(SimulationTest, MarksEarlyMarksOnBytesAvailableWithoutRelief) {
  EffectParams p = Smoke();
  p.days = 0.25;
  auto early = [](EffectParams* q) -> ds::Rule& {
    for (ds::Rule& r : q->early_rules.rules)
      if (SeesBytesAvailable(r) && !r.AvailableBytes()) return r;
    ADD_FAILURE() << "rule-early.yaml has no mark-only rule";
    return q->early_rules.rules.front();
  };
  ASSERT_EQ(early(&p).resource, ds::Rule::Resource::kNone);
  Simulation relief(p, ScenarioNamed("marks-relief", p));
  Simulation marked(p, ScenarioNamed("marks-early", p), /*check=*/true);
  relief.Run();
  marked.Run();
  EXPECT_TRUE(marked.violations().empty()) << marked.violations().front();
  EXPECT_GT(marked.figures().marked_node_minutes, relief.figures().marked_node_minutes);
  EffectParams q = p;
  early(&q).threshold = early(&q).clear_threshold = -1e18;  // never below it
  Simulation off(q, ScenarioNamed("marks-early", q));
  off.Run();
  EXPECT_EQ(off.figures().label_writes, relief.figures().label_writes);
  EXPECT_EQ(off.figures().evictions, relief.figures().evictions);
  EXPECT_EQ(off.figures().marked_node_minutes, relief.figures().marked_node_minutes);
  // It judges bytes: below 1 GiB available it marks fewer nodes than a threshold above every
  // node's memory.available, which marks as many as the herd cap lets it.
  auto marked_at = [&](double threshold) {
    EffectParams q = p;
    early(&q).threshold = threshold;
    early(&q).clear_threshold = 2 * threshold;
    Simulation sim(q, ScenarioNamed("marks-early", q));
    sim.Run();
    return sim.figures().marked_node_minutes;
  };
  EXPECT_LT(marked_at(1024.0 * (1 << 20)), marked_at(1e15));
}

// Every breach is described as it began: at a binding with the pod that was bound (where it came
// from, its request and working set) and the nodes that could have taken it.
TEST(SimulationTest, BreachesAreDescribed) {
  EffectParams p = Smoke();
  p.workload.memory_usage_ratio = {1.5, 0.4};
  Simulation sim(p, ScenarioNamed("marks-rebalance", p));
  sim.Run();
  const Figures& f = sim.figures();
  ASSERT_GT(f.memory_breaches, 0u) << "the smoke cluster reaches the kubelet";
  ASSERT_EQ(f.breach_details.size(), f.memory_breaches);
  size_t at_bind = 0, kubelet = 0;
  for (const BreachDetail& b : f.breach_details) {
    EXPECT_LT(b.node, p.nodes.count);
    EXPECT_LE(b.at, p.days * 86400);
    if (!b.at_bind) continue;
    ++at_bind;
    kubelet += b.origin == PodOrigin::kKubelet;
    EXPECT_GE(b.bound, 1u);
    EXPECT_GT(b.request, 0);
    EXPECT_GT(b.working_set, 0);
    EXPECT_LE(b.safe_unmarked, b.safe_nodes);
    EXPECT_LT(b.safe_nodes, p.nodes.count);
  }
  EXPECT_EQ(at_bind, f.breaches_at_bind);
  EXPECT_GT(kubelet, 0u) << "a killed pod's replacement breaches another node";
}

// marks-placed: the rebalancer keeps a pod whose working set would not fit on the node the
// scheduler would bind its replacement to, so fewer breaches begin with a rebalancer's
// replacement than in marks-relief, whose rules it shares.
TEST(SimulationTest, MarksPlacedMovesNoPodWhereItWouldNotFit) {
  // A day of the smoke cluster less crowded, with a few deployments using 2-4 times their memory
  // request: the case of the 1,000-node week, where memory relief moves such a pod and the
  // scheduler binds its replacement by its request on a node without room for it.
  EffectParams p = Smoke();
  p.days = 1;
  p.workload.pods_per_node = 12;
  p.workload.memory_request = {1024.0 * (1 << 20), 0.9};
  p.workload.memory_usage_ratio = {0.7, 0.6};
  auto by_rebalancer = [](const Figures& f) {
    return std::count_if(
        f.breach_details.begin(), f.breach_details.end(),
        [](const BreachDetail& b) { return b.at_bind && b.origin == PodOrigin::kRebalancer; });
  };
  Simulation relief(p, ScenarioNamed("marks-relief", p));
  Simulation placed(p, ScenarioNamed("marks-placed", p), /*check=*/true);
  relief.Run();
  placed.Run();
  EXPECT_TRUE(placed.violations().empty()) << placed.violations().front();
  ASSERT_GT(by_rebalancer(relief.figures()), 0) << "the smoke cluster reaches the case";
  EXPECT_LT(by_rebalancer(placed.figures()), by_rebalancer(relief.figures()));
  EXPECT_GT(placed.figures().evictions, 0u);
}

// workload.memoryRampUp: new pods grow to their working set after their binding instead of
// starting at full size, so fewer breaches begin in the step a pod is bound.
TEST(SimulationTest, PodsThatRampUpBreachLessAtTheirBinding) {
  EffectParams p = Smoke();
  p.workload.memory_usage_ratio = {1.5, 0.4};
  Simulation instant(p, ScenarioNamed("none", p));
  instant.Run();
  p.workload.memory_ramp_seconds = 600;
  Simulation ramped(p, ScenarioNamed("none", p), /*check=*/true);
  ramped.Run();
  EXPECT_TRUE(ramped.violations().empty()) << ramped.violations().front();
  ASSERT_GT(instant.figures().breaches_at_bind, 0u);
  EXPECT_LT(ramped.figures().breaches_at_bind, instant.figures().breaches_at_bind);
}

TEST(SimulationTest, OneHistoryPerSeed) {
  EffectParams p = Smoke();
  p.days = 0.2;
  auto run = [](const EffectParams& q) {
    Simulation sim(q, ScenarioNamed("marks-rebalance", q));
    sim.Run();
    return sim.figures();
  };
  const Figures a = run(p), b = run(p);
  EXPECT_EQ(a.hot_series, b.hot_series);
  EXPECT_EQ(a.evictions, b.evictions);
  EXPECT_EQ(a.kubelet_evictions, b.kubelet_evictions);
  EXPECT_EQ(a.pods_bound, b.pods_bound);
  EXPECT_EQ(a.label_writes, b.label_writes);
  EXPECT_DOUBLE_EQ(a.node_minutes_cpu, b.node_minutes_cpu);
  EXPECT_DOUBLE_EQ(a.spread_memory, b.spread_memory);
  p.seed += 1;
  const Figures c = run(p);
  EXPECT_TRUE(c.pods_bound != a.pods_bound || c.node_minutes_cpu != a.node_minutes_cpu);
}

// One hot node whose value lags (the mean of its usage over 5 minutes, rate(...[5m])), with
// evicted pods terminating for 30 s: four nodes of 4 cores with ten identical pods each (0.2
// cores, no churn, no daily swing), node-0000's pods bursting from the first step to 0.36 cores
// each (90 %, each pod 9 points). The cpu rule's goal is its clear threshold 70: three pods (to
// 63 %). A one-minute cool-down lets the rebalancer look again long before the 5-minute window
// shows the three gone.
EffectParams LaggingNode() {
  const std::string yaml = R"(
seed: 3
days: 0.0139          # 20 minutes
step: 10s
nodes: {count: 4, cpu: 4, memory: 16Gi, systemReserved: 1Gi, evictionHard: 100Mi, pods: 110}
workload:
  podsPerNode: 10
  replicas: {median: 1, sigma: 0}
  maxReplicas: 1
  cpuRequest: {median: 0.2, sigma: 0}
  memoryRequest: {median: 256Mi, sigma: 0}
  cpuUsageRatio: {median: 1, sigma: 0}
  memoryUsageRatio: {median: 0.5, sigma: 0}
  podJitter: 0
  daily: {cpuAmplitude: 0, memoryAmplitude: 0, peak: 14h, phaseSpread: 0s}
  bursts: {perDay: 0, factor: 1.8, duration: 15m}
  leaks: {share: 0, perHour: 0}
  rollouts: {perDay: 0}
  scaling: {perDay: 0, change: 0.3}
  jobs: {perNodeHour: 0, duration: {median: 5m, sigma: 1.0}}
controller: {ruleFile: rule.yaml, valueWindow: 5m, terminationGrace: 30s}
)";
  auto p = ParseEffectParams(yaml, "lagging-node", EFFECT_DIR);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  ds::EvictionLimits& lim = p->rules.rebalance.limits;
  lim.per_cycle = lim.per_hour = lim.per_node_per_hour = 100;
  lim.node_cooldown_seconds = 60;
  return *p;
}

Figures RunLaggingNode(const std::string& scenario) {
  const EffectParams p = LaggingNode();
  Simulation sim(p, ScenarioNamed(scenario, p), /*check=*/true);
  EXPECT_TRUE(sim.Step());  // the pods are bound
  sim.TEST_BurstNode(0, 1e9);
  sim.Run();
  EXPECT_TRUE(sim.violations().empty()) << sim.violations().front();
  return sim.figures();
}

// The issue's loop: without the discount the rebalancer looks again after its cool-down, sees
// the node still over its goal (the evicted pods' usage is in the 5-minute mean for minutes), and
// evicts more pods than the goal needs. With DiscountLeaving (rebalance/in_motion.h) the pods
// already leaving count as gone, and it evicts exactly the three the goal needs.
TEST(SimulationTest, WhatIsLeavingIsNotRelievedAgain) {
  const Figures before = RunLaggingNode("marks-lag");
  const Figures after = RunLaggingNode("marks-lag-motion");
  EXPECT_EQ(after.evictions, 3u);
  EXPECT_GT(before.evictions, 3u) << "the lagging value qualifies the node again";
  EXPECT_GT(before.evictions_while_leaving, 0u);
  EXPECT_EQ(after.evictions_while_leaving, 0u);
  EXPECT_GT(after.in_motion_skips, 0u);
  EXPECT_EQ(before.in_motion_skips, 0u);
  EXPECT_EQ(after.terminating_max, 3u);  // the three terminated gracefully, at once
  // One episode each, from the mark to its clearing.
  EXPECT_EQ(after.effect.episodes_evicted, 1u);
  EXPECT_EQ(after.effect.evictions, 3u);
  ASSERT_EQ(after.episode_evictions.size(), 1u) << "the node cleared within the 20 minutes";
  EXPECT_EQ(after.episode_evictions[0], 3u);
  EXPECT_EQ(before.effect.episodes_evicted, 1u);
  EXPECT_EQ(before.effect.evictions, before.evictions);
  // The proposal that counts a gone pod by the share of the window still holding it: the node's
  // value less that share stays at 63 %, so it too evicts exactly three.
  EXPECT_EQ(RunLaggingNode("marks-lag-decay").evictions, 3u);
}

// Without the lag the new scenarios' code paths change nothing: marks-lag with a window of one
// step and no grace period is marks-rebalance, step for step (its cpu is then the usage as is,
// where marks-rebalance's lags through cpuRateWindow, so both go instant for the comparison).
TEST(SimulationTest, TheLagIsTheOnlyDifference) {
  EffectParams p = Smoke();
  p.days = 0.25;
  p.cpu_rate_window_seconds = 0;
  p.value_window_seconds = p.step_seconds;
  p.termination_grace_seconds = 0;
  Simulation base(p, ScenarioNamed("marks-rebalance", p));
  Simulation lag(p, ScenarioNamed("marks-lag", p), /*check=*/true);
  base.Run();
  lag.Run();
  EXPECT_TRUE(lag.violations().empty()) << lag.violations().front();
  EXPECT_EQ(lag.figures().evictions, base.figures().evictions);
  EXPECT_EQ(lag.figures().label_writes, base.figures().label_writes);
  EXPECT_EQ(lag.figures().hot_series, base.figures().hot_series);
  EXPECT_EQ(lag.figures().episode_evictions, base.figures().episode_evictions);
  EXPECT_EQ(lag.figures().terminating_max, 0u);
}

TEST(SimulationTest, EvictionLimitsAreKeptWhenTight) {
  EffectParams p = Smoke();
  p.days = 0.25;
  p.rules.rebalance.limits.per_hour = 2;
  p.rules.rebalance.limits.per_cycle = 1;
  Simulation sim(p, ScenarioNamed("marks-rebalance", p), true);
  sim.Run();
  EXPECT_TRUE(sim.violations().empty()) << sim.violations().front();
  EXPECT_LE(sim.figures().evictions, 2u * 6 + 2);  // at most 2 an hour over 6 hours
}

TEST(SimulationTest, TheHerdCapHoldsWhenTight) {
  EffectParams p = Smoke();
  p.days = 0.25;
  p.rules.max_marked = 1;  // the invariants check it every step
  Simulation sim(p, ScenarioNamed("marks-rebalance", p), true);
  sim.Run();
  EXPECT_TRUE(sim.violations().empty()) << sim.violations().front();
  EXPECT_GT(sim.figures().capped_node_cycles, 0u) << "the smoke cluster reaches the cap";
  EXPECT_EQ(sim.figures().marked_max, 1u);  // what EFFECT.md reports as the most marked at once
}

// A new worker joins a busy cluster, without churn: four 4-core nodes with ten identical pods
// each (0.2 cores requested, 0.36 used: 90 %), no rollouts, scaling, jobs, bursts or daily swing,
// so that no pod moves unless a policy moves it; two empty nodes join at 10 minutes. The mean cpu
// falls from 90 to 60: marks-balance's rule (rule-balance.yaml: over the mean plus 20, clear at
// the mean plus 10) holds the four old nodes, and each must shed three pods (9 points each) to
// reach 70 while the mean stays 60 (every move stays within the pool).
EffectParams QuietJoin() {
  const std::string yaml = R"(
seed: 5
days: 0.0625          # 90 minutes
step: 10s
nodes: {count: 4, cpu: 4, memory: 16Gi, systemReserved: 1Gi, evictionHard: 100Mi, pods: 110}
workload:
  podsPerNode: 10
  replicas: {median: 1, sigma: 0}
  maxReplicas: 1
  cpuRequest: {median: 0.2, sigma: 0}
  memoryRequest: {median: 256Mi, sigma: 0}
  cpuUsageRatio: {median: 1.8, sigma: 0}
  memoryUsageRatio: {median: 0.5, sigma: 0}
  podJitter: 0
  daily: {cpuAmplitude: 0, memoryAmplitude: 0, peak: 14h, phaseSpread: 0s}
  bursts: {perDay: 0, factor: 1, duration: 15m}
  leaks: {share: 0, perHour: 0}
  rollouts: {perDay: 0}
  scaling: {perDay: 0, change: 0.3}
  jobs: {perNodeHour: 0, duration: {median: 5m, sigma: 1.0}}
controller: {ruleFile: rule.yaml, balanceRuleFile: rule-balance.yaml}
join: {at: 10m, nodes: 2}
)";
  auto p = ParseEffectParams(yaml, "quiet-join", EFFECT_DIR);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

constexpr size_t kQuietNodes = 4, kQuietJoined = 2;
constexpr double kQuietJoinAt = 600;

// The join adds its nodes, empty and of the cluster's shape, in the first step at or after its
// time, and never again; without a policy nothing moves onto them in a cluster without churn.
TEST(JoinTest, NewNodesJoinEmptyAtTheirTime) {
  const EffectParams p = QuietJoin();
  Simulation sim(p, ScenarioNamed("none", p), /*check=*/true);
  for (double t = sim.now(); sim.Step(); t = sim.now()) {
    const auto views = sim.NodeViews();
    ASSERT_EQ(views.size(), kQuietNodes + (t >= kQuietJoinAt ? kQuietJoined : 0)) << t;
    for (size_t k = kQuietNodes; k < views.size(); ++k) {
      EXPECT_EQ(views[k].name, "node-000" + std::to_string(k));
      EXPECT_EQ(views[k].pods, 0u) << t;
      EXPECT_EQ(views[k].cpu, 0);
      EXPECT_EQ(views[k].memory, 0);
    }
    for (size_t k = 0; k < kQuietNodes; ++k) EXPECT_EQ(views[k].pods, 10u);
  }
  EXPECT_TRUE(sim.violations().empty()) << sim.violations().front();
  const JoinFigures& j = sim.figures().join;
  EXPECT_EQ(j.at, kQuietJoinAt);
  EXPECT_EQ(j.joined_pods_end, 0u);
  EXPECT_NEAR(j.sd_cpu[JoinFigures::kBefore], 0, 1e-9);  // four nodes at 90 %
  EXPECT_NEAR(j.mean_cpu[JoinFigures::kJoin], 60, 1e-9);
  EXPECT_NEAR(j.sd_cpu[JoinFigures::kJoin], std::sqrt(4 * 30.0 * 30 + 2 * 60.0 * 60) / std::sqrt(6),
              1e-9);
  EXPECT_TRUE(std::isnan(j.sd_cpu[JoinFigures::kSixHours])) << "the run ends before";
  EXPECT_EQ(sim.figures().spread_cpu_series.size(), 9u);  // 10-minute periods of 90 minutes
  // Off by default: the same cluster without the join keeps its four nodes and its history.
  EffectParams q = p;
  q.join = JoinParams{};
  Simulation off(q, ScenarioNamed("none", q));
  off.Run();
  EXPECT_EQ(off.NodeViews().size(), kQuietNodes);
  EXPECT_LT(off.figures().join.at, 0);
}

// With churn the scheduler places new pods on the joined nodes too, and every scenario keeps its
// invariants across the join (the smoke cluster, two nodes joining at two hours).
TEST(JoinTest, TheSmokeClusterKeepsItsInvariantsAcrossAJoin) {
  EffectParams p = Smoke();
  p.join = JoinParams{2 * 3600, 4};
  for (const char* name : {"none", "lownodeutil", "marks-rebalance", "marks-balance"}) {
    Simulation sim(p, ScenarioNamed(name, p), /*check=*/true);
    sim.Run();
    EXPECT_TRUE(sim.violations().empty()) << name << ": " << sim.violations().front();
    EXPECT_EQ(sim.figures().join.at, 2 * 3600) << name;
    EXPECT_GT(sim.figures().join.joined_pods_end, 0u) << name;
    EXPECT_EQ(sim.NodeViews().size(), p.nodes.count + 4) << name;
  }
}

// The balance relief spreads the load onto the joined nodes: an hour after the join the nodes'
// cpu % spread less than with nothing acting, on the same workload and join. Nothing moves
// without a policy here, so the spread stays where the join left it unless relief works.
TEST(BalanceTest, ReliefLowersTheSpreadAfterAJoin) {
  const EffectParams p = QuietJoin();
  Simulation none(p, ScenarioNamed("none", p));
  Simulation balance(p, ScenarioNamed("marks-balance", p), /*check=*/true);
  none.Run();
  balance.Run();
  EXPECT_TRUE(balance.violations().empty()) << balance.violations().front();
  const JoinFigures& n = none.figures().join;
  const JoinFigures& b = balance.figures().join;
  ASSERT_FALSE(std::isnan(b.sd_cpu[JoinFigures::kHour]));
  EXPECT_NEAR(n.sd_cpu[JoinFigures::kHour], n.sd_cpu[JoinFigures::kJoin], 1e-9);
  EXPECT_NEAR(b.sd_cpu[JoinFigures::kJoin], n.sd_cpu[JoinFigures::kJoin], 1e-9);
  EXPECT_LT(b.sd_cpu[JoinFigures::kHour], n.sd_cpu[JoinFigures::kHour] / 4);
  EXPECT_LT(balance.figures().node_minutes_over_mean, none.figures().node_minutes_over_mean);
  EXPECT_GT(b.joined_pods_end, 0u);
  EXPECT_EQ(b.evictions_before, 0u) << "no node stood out before the join";
}

// Relief follows the mean (rebalance/pool_mean.h): each old node sheds the three pods that bring
// it from 90 % to 63 %, at or below the mean (60) plus the clear offset (10), and no more; every
// replacement lands where the plan reserved room, at or below the mean plus the threshold offset
// (20), so no joined node ever stands out by the rule that moved the pods there.
TEST(BalanceTest, ReliefStopsAtTheMeanAndKeepsDestinationsBelowItsThreshold) {
  const EffectParams p = QuietJoin();
  Simulation sim(p, ScenarioNamed("marks-balance", p), /*check=*/true);
  const ds::Rule& rule = p.balance_rules.rules.front();
  while (sim.Step()) {
    const auto views = sim.NodeViews();
    double mean = 0;
    for (const auto& v : views) mean += v.cpu;
    mean /= static_cast<double>(views.size());
    for (size_t k = kQuietNodes; k < views.size(); ++k) {
      EXPECT_LE(views[k].cpu, mean + rule.threshold + 1e-9) << views[k].name << " at " << sim.now();
      EXPECT_FALSE(views[k].marked) << views[k].name << " at " << sim.now();
    }
  }
  EXPECT_TRUE(sim.violations().empty()) << sim.violations().front();
  const Figures& f = sim.figures();
  EXPECT_EQ(f.evictions, 3 * kQuietNodes);
  EXPECT_EQ(f.bounce_backs, 0u);
  EXPECT_EQ(f.landed_over_mean, 0u);
  EXPECT_EQ(f.replacements_bound, f.evictions);
  EXPECT_EQ(f.join.joined_pods_end, 3 * kQuietNodes);
  for (size_t k = 0; k < kQuietNodes; ++k) EXPECT_EQ(sim.NodeViews()[k].pods, 7u);
}

// On the smoke cluster (churn, bursts, a daily swing), two hours after four new nodes join, the
// balance relief has spread the cpu load more evenly than the same history without a policy.
TEST(BalanceTest, ReliefLowersTheSpreadOnABusyCluster) {
  EffectParams p = Smoke();
  p.join = JoinParams{2 * 3600, 4};
  Simulation none(p, ScenarioNamed("none", p));
  Simulation balance(p, ScenarioNamed("marks-balance", p));
  none.Run();
  balance.Run();
  EXPECT_GT(balance.figures().evictions, balance.figures().join.evictions_before);
  EXPECT_LT(balance.figures().join.sd_cpu[JoinFigures::kHour],
            none.figures().join.sd_cpu[JoinFigures::kHour]);
}

TEST(WorkloadTest, DeploymentsReachTheDensityAndSpreadBothWays) {
  WorkloadParams w;
  Rng rng(3);
  const auto deps = GenerateDeployments(w, 100, &rng);
  size_t pods = 0, over = 0, under = 0;
  for (const auto& d : deps) {
    pods += d.replicas;
    EXPECT_GE(d.replicas, 1u);
    EXPECT_GT(d.cpu_request, 0);
    EXPECT_EQ(std::fmod(d.memory_request, 1 << 20), 0);  // whole MiB
    (d.cpu_ratio > 1 ? over : under) += 1;
  }
  EXPECT_EQ(pods, 3000u);             // exactly podsPerNode x nodes: the last deployment is trimmed
  EXPECT_GT(over, deps.size() / 10);  // requests understate usage for some...
  EXPECT_GT(under, deps.size() / 2);  // ...and overstate it for most (median ratio 0.6)
}

TEST(WorkloadTest, DailyPeakFollowsThePhase) {
  EXPECT_DOUBLE_EQ(DailyFactor(0.5, 14 * 3600, 14 * 3600, 0), 1.5);
  EXPECT_NEAR(DailyFactor(0.5, 2 * 3600, 14 * 3600, 0), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(DailyFactor(0.5, 16 * 3600, 14 * 3600, 2 * 3600), 1.5);
  Deployment d;
  d.cpu_ratio = 2;
  d.burst_until = 100;
  WorkloadParams w;
  w.cpu_daily_amplitude = 0;
  w.burst_factor = 3;
  EXPECT_DOUBLE_EQ(CpuFactor(w, d, 50), 6);
  EXPECT_DOUBLE_EQ(CpuFactor(w, d, 100), 2);
}

TEST(WorkloadTest, PodMultiplierIsAFunctionOfItsSlot) {
  EXPECT_EQ(PodMultiplier(1, 2, 3, 0, 0.2), PodMultiplier(1, 2, 3, 0, 0.2));
  EXPECT_NE(PodMultiplier(1, 2, 3, 0, 0.2), PodMultiplier(1, 2, 4, 0, 0.2));
  EXPECT_EQ(PodMultiplier(1, 2, 3, 0, 0), 1);
  Rng a(9), b(9);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.Draw({2, 0.5}), b.Draw({2, 0.5}));
}

TEST(ParamsTest, ErrorsNameTheFileLineAndField) {
  auto bad = [](const std::string& text) {
    auto p = ParseEffectParams(text, "p.yaml", EFFECT_DIR);
    EXPECT_FALSE(p.ok());
    return p.ok() ? std::string() : p.status().message();
  };
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml}\nnodes:\n  cores: 4\n"),
            "p.yaml:3:3: nodes.cores: unknown field (allowed: count, cpu, memory, systemReserved, "
            "evictionHard, pods)");
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml}\nworkload: {leaks: {share: 2}}\n"),
            "p.yaml:2:27: workload.leaks.share: must be from 0 to 1");
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml}\nnodes: {memory: lots}\n"),
            "p.yaml:2:17: nodes.memory: \"lots\" is not a number or quantity");
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml}\nscenarios: [none, magic]\n"),
            "p.yaml:2:19: scenarios[1]: unknown scenario \"magic\" (known: none, marks-w10, "
            "marks-w50, marks-w100, lownodeutil, evict-usage, marks-rebalance, marks-taint, "
            "marks-relief, marks-early, marks-placed, marks-lag, marks-lag-motion, "
            "marks-motion, marks-lag-decay, marks-balance, marks-sized, "
            "marks-sized-all, marks-sized-requests)");
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml}\nscenarios: [none, marks-relief]\n"),
            "p.yaml: scenario marks-relief needs controller.reliefRuleFile");
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml}\nsweep: {reliefThreshold: [1Gi]}\n"),
            "p.yaml: sweep.reliefThreshold needs controller.reliefRuleFile");
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml}\nscenarios: [marks-early]\n"),
            "p.yaml: scenario marks-early needs controller.earlyRuleFile");
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml}\nsweep: {earlyThreshold: [8Gi]}\n"),
            "p.yaml: sweep.earlyThreshold needs controller.earlyRuleFile");
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml, earlyRuleFile: rule-relief.yaml}\n"
                "sweep: {earlyThreshold: [8Gi]}\n"),
            "p.yaml: sweep.earlyThreshold: controller.earlyRuleFile has no rule that only marks "
            "on the bytes available (unit: bytes, operator \"<\", no resource)");
  EXPECT_EQ(bad("seed: 1\n"), "p.yaml: controller.ruleFile: required (a rule.yaml)");
  EXPECT_NE(bad("controller: {ruleFile: missing.yaml}\n").find("p.yaml:1:24: controller.ruleFile"),
            std::string::npos);
  EXPECT_NE(bad("nodes: [").find("not valid YAML"), std::string::npos);
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml}\nsweep: {maxMarkedFraction: [0.5, 0]}\n"),
            "p.yaml:2:34: sweep.maxMarkedFraction[1]: must be from 0.001 to 1");
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml}\nbalance: {scenarios: [marks-balance]}\n"),
            "p.yaml: balance.scenarios: marks-balance needs controller.balanceRuleFile");
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml}\njoin: {at: 1h, nodes: 2.5}\n"),
            "p.yaml: seed, nodes.count, nodes.pods, sweep.nodes, controller.affinityWeight, "
            "join.nodes, balance.nodes and balance.join.nodes must be whole numbers");
  EXPECT_EQ(bad("controller: {ruleFile: rule.yaml}\njoin: {when: 1h}\n"),
            "p.yaml:2:8: join.when: unknown field (allowed: at, nodes)");
  auto ok = ParseEffectParams("controller: {ruleFile: rule.yaml}\nnodes: {memory: 8Gi}\n", "p.yaml",
                              EFFECT_DIR);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->nodes.memory, 8.0 * (1LL << 30));
  EXPECT_EQ(ok->rules.rules.size(), 2u);
  // Without a relief rule file the default scenarios are the ones the file can run.
  EXPECT_EQ(std::count(ok->scenarios.begin(), ok->scenarios.end(), "marks-relief"), 0);
  EXPECT_EQ(std::count(ok->scenarios.begin(), ok->scenarios.end(), "marks-early"), 0);
}

TEST(ParamsTest, TheShippedParametersLoad) {
  auto p = LoadEffectParams(std::string(EFFECT_DIR) + "/params.yaml");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->nodes.count, 1000u);
  // Every scenario but marks-balance, which runs in the balance set (a new worker joins).
  std::vector<std::string> listed = KnownScenarios();
  std::erase(listed, "marks-balance");
  EXPECT_EQ(p->scenarios, listed);
  EXPECT_EQ(p->join.nodes, 0u) << "the scenarios run without a join";
  EXPECT_EQ(p->balance.join.nodes, 100u);
  EXPECT_EQ(p->balance.join.at_seconds, 6 * 3600);
  EXPECT_EQ(p->balance.scenarios,
            (std::vector<std::string>{"none", "lownodeutil", "marks-balance"}));
  ASSERT_TRUE(p->has_balance_rules);
  ASSERT_EQ(p->balance_rules.rules.size(), 1u);
  const ds::Rule& balance = p->balance_rules.rules.front();
  EXPECT_EQ(balance.relative_to, ds::Rule::Relative::kMean);
  EXPECT_EQ(balance.resource, ds::Rule::Resource::kCpu);
  EXPECT_EQ(balance.threshold, 20);
  EXPECT_EQ(balance.clear_threshold, 10);
  EXPECT_EQ(p->value_window_seconds, 300);  // marks-lag's: a rate(...[5m])
  EXPECT_EQ(p->termination_grace_seconds, 30);
  EXPECT_TRUE(p->rules.rebalance.enabled);
  // marks-relief's rule file: the kubelet's memory.available in bytes, relieved at once.
  ASSERT_TRUE(p->has_relief_rules);
  const ds::Rule& bytes = p->relief_rules.rules.back();
  EXPECT_TRUE(bytes.AvailableBytes());
  EXPECT_GT(bytes.threshold, p->nodes.eviction_hard);
  EXPECT_EQ(bytes.relieve_after_seconds, 0);
  EXPECT_EQ(p->sweep.relief_threshold.front(), 512.0 * (1 << 20));
  // marks-early's rule file: a mark-only rule on the bytes available above the relief rule.
  ASSERT_TRUE(p->has_early_rules);
  const ds::Rule& mark = p->early_rules.rules.back();
  EXPECT_TRUE(SeesBytesAvailable(mark));
  EXPECT_FALSE(mark.AvailableBytes());
  EXPECT_GT(mark.threshold, bytes.threshold);
  // The sweep turns the herd cap off at 1 and compares it with the default 0.5.
  EXPECT_EQ(p->sweep.max_marked_fraction, (std::vector<double>{0.1, 0.25, 0.5, 1}));
  EXPECT_EQ(p->rules.max_marked_fraction, 0.5);
}

// The trace preset and the check's cluster load as well. The check's cluster has no churn, which
// test_effect_check.py relies on: its pods never move, so usage does not depend on the marks.
TEST(ParamsTest, TheTraceAndCheckParametersLoad) {
  auto t = LoadEffectParams(std::string(EFFECT_DIR) + "/params-trace.yaml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_NEAR(t->workload.cpu_usage_ratio.median, 0.388, 1e-9);
  auto c = LoadEffectParams(std::string(EFFECT_DIR) + "/check.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->workload.rollouts_per_day, 0);
  EXPECT_EQ(c->workload.scales_per_day, 0);
  EXPECT_EQ(c->workload.jobs_per_node_hour, 0);
  EXPECT_EQ(c->workload.leak_share, 0);
}

// NodeViews (what effect-sim --trace writes) shows each step's marks: summed over the steps they
// give the figures' marked node-minutes, and the cpu the rules saw is the node's own.
TEST(SimulationTest, NodeViewsShowTheMarksOfEachStep) {
  const EffectParams p = Smoke();
  Simulation sim(p, ScenarioNamed("marks-w100", p));
  double marked_minutes = 0;
  size_t steps = 0;
  while (sim.Step()) {
    const auto views = sim.NodeViews();
    ASSERT_EQ(views.size(), p.nodes.count);
    for (const auto& v : views) {
      marked_minutes += v.marked ? p.step_seconds / 60 : 0;
      EXPECT_GE(v.cpu_seen, 0);
      EXPECT_LE(v.cpu, 100 + 1e-9);  // capped at the node's cores
    }
    ++steps;
  }
  EXPECT_GT(steps, 0u);
  EXPECT_GT(marked_minutes, 0);
  EXPECT_NEAR(marked_minutes, sim.figures().marked_node_minutes, 1e-6);
}

TEST(DeschedulerTest, MovesRequestsFromOverToUnderutilizedNodes) {
  DeschedulerParams p;                                                       // 20 % / 50 %
  DeschedNode over{100, 100, 100, {{30, 10, 1}, {30, 10, 2}, {10, 10, 3}}};  // cpu 70 %
  DeschedNode under{100, 100, 100, {{5, 5, 4}}};
  EXPECT_EQ(LowNodeUtilization({over, under}, p), (std::vector<uint64_t>{1}));  // 70 -> 40 %
  // No underutilized node: nothing moves, however full the others are.
  DeschedNode middle{100, 100, 100, {{30, 30, 5}}};
  EXPECT_TRUE(LowNodeUtilization({over, middle}, p).empty());
}

TEST(SchedulerModelTest, ChooseNodeAgreesWithSchedule) {
  std::vector<sim::SchedNode> nodes(6);
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].name = "n" + std::to_string(i);
    nodes[i].cpu_milli = 4000;
    nodes[i].memory = 8LL << 30;
  }
  nodes[1].labels["status"] = "presure";
  nodes[2].taints.push_back({"k", "", "NoSchedule"});
  nodes[3].taints.push_back({"k", "", "PreferNoSchedule"});
  Rng rng(5);
  std::vector<sim::SchedPod> bound;
  std::vector<sim::NodeRequests> requested(nodes.size());
  for (int i = 0; i < 60; ++i) {
    sim::SchedPod pod;
    pod.cpu_milli = static_cast<int64_t>(50 + 400 * rng.Uniform());
    pod.memory = static_cast<int64_t>((64 + 900 * rng.Uniform()) * (1 << 20));
    pod.cpu_set = pod.memory_set = i % 3 != 0;
    if (i % 2) pod.preferred.push_back({50, {{"status", "NotIn", {"presure"}}}});
    const sim::ScheduleResult full = sim::Schedule(nodes, bound, pod);
    const int fast = sim::ChooseNode(nodes, requested, pod);
    ASSERT_EQ(full.node, fast < 0 ? "" : nodes[static_cast<size_t>(fast)].name) << i;
    if (fast < 0) continue;
    pod.node = full.node;
    bound.push_back(pod);
    requested[static_cast<size_t>(fast)].Add(pod);
  }
}

}  // namespace
}  // namespace effect
