// Balance: relief of a node that stands out from its pool (rebalance/pool_mean.h) follows the
// pool's mean as pods are planned, keeps destinations at or below the mean plus the threshold,
// and the mirror mode leaves balance's destinations alone (rebalance/underuse.h).
#include "rebalance/pool_mean.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "rebalance/node_relief.h"
#include "rebalance/pod_choice.h"
#include "rebalance/relief_plan.h"
#include "rebalance/underuse.h"

namespace ds {
namespace {

constexpr double kNow = 1795435200;  // 2026-11-23 12:00 UTC

PodInfo Replica(const std::string& name) {
  PodInfo p;
  p.ns = "shop";
  p.name = name;
  p.node = "packed";
  p.owner_kind = "ReplicaSet";
  p.owner_name = "web";
  p.phase = "Running";
  p.ready = true;
  p.created_wall = kNow - 3600;
  p.cpu_request = 0.1;
  p.memory_request = 64e6;
  return p;
}

// A 4-core node using `percent` of its CPU, with room for many replicas by requests.
PlacementNode Worker(const std::string& name, double percent, double cores = 4) {
  PlacementNode n;
  n.name = name;
  n.allocatable_cpu = cores;
  n.requested_cpu = 0;
  n.allocatable_memory = 16e9;
  n.allocatable_other = {{"pods", 110}};
  n.used_cpu = percent / 100 * cores;
  return n;
}

// The seed's story: six replicas of 10 % each on one worker at 77 %, two at 13 %, one new at 3 %.
// The rule: over the mean + 30, cleared at the mean + 15.
PoolMean SeedPool() {
  PoolMean p;
  p.sum = 77 + 13 + 13 + 3;
  p.count = 4;
  p.clear_offset = 15;
  p.threshold_offset = 30;
  for (const char* n : {"packed", "a", "b", "new"}) p.per_unit[n] = 100.0 / 4;
  return p;
}

// The six replicas of the seed's story, on the packed worker.
std::vector<PodInfo> SixReplicas() {
  std::vector<PodInfo> pods;
  for (int i = 0; i < 6; ++i) pods.push_back(Replica("web-" + std::to_string(i)));
  return pods;
}

// The packed worker's relief by the seed's pool (77 %, goal 41.5).
std::optional<Relief> SeedRelief() {
  HoldingRule h{"skew", Rule::Resource::kCpu, 77, 41.5, false};
  h.pool = std::make_shared<const PoolMean>(SeedPool());
  return ReliefFor("packed", {h}, 4, 16e9, 0);
}

TEST(MovingMean, MovesWithinThePoolKeepTheMeanAndLeavingItLowersIt) {
  PoolMean pool = SeedPool();
  pool.per_unit["big"] = 100.0 / 8;  // an 8-core node of the pool: a core is half the percent
  MovingMean m(&pool, false);
  EXPECT_DOUBLE_EQ(m.Mean(), 26.5);
  EXPECT_DOUBLE_EQ(m.Goal(), 41.5);
  EXPECT_DOUBLE_EQ(m.Ceiling(), 56.5);
  m.Move(10, 0.4, "new");  // 10 % off packed, 10 % onto new: same size
  EXPECT_DOUBLE_EQ(m.Mean(), 26.5);
  m.Move(10, 0.4, "big");  // 10 % off packed, 5 % onto the larger node
  EXPECT_DOUBLE_EQ(m.Mean(), 26.5 - 5.0 / 4);
  m.Move(10, 0.4, "elsewhere");  // out of the pool: its share leaves the mean
  EXPECT_DOUBLE_EQ(m.Mean(), 26.5 - 15.0 / 4);
  // Bytes available ('<'): loads are negated; a move within the pool changes no sum of bytes.
  PoolMean bytes;
  bytes.sum = 4e9 + 8e9;
  bytes.count = 2;
  bytes.clear_offset = 1e9;
  bytes.threshold_offset = 2e9;
  bytes.per_unit = {{"short", 1}, {"roomy", 1}};
  MovingMean b(&bytes, true);
  EXPECT_DOUBLE_EQ(b.Mean(), -6e9);
  EXPECT_DOUBLE_EQ(b.Goal(), -5e9) << "in bytes: at least the mean less 1 GiB available";
  b.Move(5e8, 5e8, "roomy");
  EXPECT_DOUBLE_EQ(b.Mean(), -6e9);
  b.Move(5e8, 5e8, "gone");
  EXPECT_DOUBLE_EQ(b.Mean(), -6e9 - 2.5e8) << "memory freed in the pool raises its mean";
}

// The relief a relative rule's hold gives: the goal it was judged by, its pool, and a ceiling for
// destinations of the mean plus the threshold offset.
TEST(BalanceRelief, ReliefCarriesThePoolAndItsCeiling) {
  auto relief = SeedRelief();
  ASSERT_TRUE(relief.has_value());
  EXPECT_DOUBLE_EQ(relief->load.goal, 41.5);
  ASSERT_NE(relief->pool, nullptr);
  EXPECT_DOUBLE_EQ(relief->pool->Mean(), 26.5);
  EXPECT_DOUBLE_EQ(relief->CeilingPercent(), 56.5) << "mean + threshold, not the clear 41.5";
}

// Six replicas of 10 %: four go (77 -> 37, at the goal 41.5 or below), spread over the least
// allocated workers, each destination staying at or below the mean + 30.
TEST(BalanceRelief, APackedWorkerSpreadsOntoItsPool) {
  auto relief = SeedRelief();
  ASSERT_TRUE(relief.has_value());
  const std::vector<PodInfo> pods = SixReplicas();
  std::vector<UsedPod> used;
  for (const PodInfo& p : pods) used.push_back(UsedPod{&p, 0.4});  // 10 % each
  Placement place({Worker("new", 3), Worker("a", 13), Worker("b", 13)});
  PodChoice ch = PlanRelief(*relief, used, 10, &place);
  ASSERT_EQ(ch.picks.size(), 4u);
  EXPECT_TRUE(ch.reached);
  EXPECT_DOUBLE_EQ(ch.load_after, 37);
  EXPECT_DOUBLE_EQ(ch.goal, 41.5) << "moves within the pool keep the mean";
  size_t to_new = 0;
  for (const auto& p : ch.picks) to_new += p.to == "new";
  EXPECT_GE(to_new, 1u) << "the empty worker takes its share";
}

// A pod moved out of the pool lowers the mean, and with it the goal: one more pod goes than a
// fixed goal would move (77 -> 27, not 37).
TEST(BalanceRelief, TheGoalIsJudgedOnTheMeanAfterTheMoves) {
  auto relief = SeedRelief();
  ASSERT_TRUE(relief.has_value());
  const std::vector<PodInfo> pods = SixReplicas();
  std::vector<UsedPod> used;
  for (const PodInfo& p : pods) used.push_back(UsedPod{&p, 0.4});  // 10 % each
  Placement place({Worker("other-pool", 3, 8)});                   // 8 cores: 5 % a replica there
  PodChoice ch = PlanRelief(*relief, used, 10, &place);
  EXPECT_EQ(ch.picks.size(), 5u);
  EXPECT_DOUBLE_EQ(ch.load_after, 27);
  EXPECT_DOUBLE_EQ(ch.goal, 26.5 - 50.0 / 4 + 15);
  EXPECT_TRUE(ch.reached);
}

// A destination may take a pod up to the mean + the threshold offset, not beyond. Here the pool's
// mean is 53 (97 on the hot node), so the ceiling is 83: warm at 75 takes no 10 % pod, mild at 72
// takes one (82), and neither stands out afterwards, so nothing comes back.
TEST(BalanceRelief, DestinationsStayAtOrBelowTheMeanPlusTheThreshold) {
  PoolMean p = SeedPool();
  p.sum = 97 + 50 + 45 + 20;
  p.per_unit = {{"packed", 25}, {"warm", 25}, {"mild", 25}, {"cool", 25}};
  auto pool = std::make_shared<const PoolMean>(p);  // mean 53, ceiling 83, goal 68
  HoldingRule h{"skew", Rule::Resource::kCpu, 97, 68, false};
  h.pool = pool;
  auto relief = ReliefFor("packed", {h}, 4, 16e9, 0);
  ASSERT_TRUE(relief.has_value());
  relief->load.load = 97;
  PodInfo big = Replica("big");
  Placement place({Worker("warm", 75), Worker("mild", 72)});
  PodChoice ch = PlanRelief(*relief, {UsedPod{&big, 0.4}}, 10, &place);
  ASSERT_EQ(ch.picks.size(), 1u);
  EXPECT_EQ(ch.picks[0].to, "mild") << "72 + 10 <= 83; warm would be 85";
  Placement full({Worker("warm", 75)});
  PodInfo second = Replica("second");
  EXPECT_TRUE(PlanRelief(*relief, {UsedPod{&second, 0.4}}, 10, &full).picks.empty());
}

// kube-scheduler binds a replacement by requests, not where the plan reserved room: a pod whose
// share alone is over the threshold offset (35 > 30) would make a node near the mean stand out
// wherever it lands, so it stays and the smaller ones go.
TEST(BalanceRelief, APodThatWouldMakeANodeNearTheMeanStandOutStays) {
  auto relief = SeedRelief();
  ASSERT_TRUE(relief.has_value());
  PodInfo whale = Replica("whale"), a = Replica("a"), b = Replica("b"), c = Replica("c");
  Placement place({Worker("new", 0, 16)});  // room for anything in the plan's own terms
  PodChoice ch = PlanRelief(
      *relief, {UsedPod{&whale, 1.4}, UsedPod{&a, 0.4}, UsedPod{&b, 0.4}, UsedPod{&c, 0.4}}, 10,
      &place);
  EXPECT_EQ(ch.stands_out, 1u);
  ASSERT_EQ(ch.picks.size(), 3u);
  for (const auto& p : ch.picks) EXPECT_NE(p.pod, &whale);
  EXPECT_DOUBLE_EQ(ch.load_after, 47);
  EXPECT_FALSE(ch.reached) << "the goal stays out of reach rather than move the hot spot";
  // Without a pool (an absolute rule) the whale goes first, as before.
  Relief absolute = *relief;
  absolute.pool = nullptr;
  Placement again({Worker("new", 0, 16)});
  PodChoice abs = PlanRelief(absolute, {UsedPod{&whale, 1.4}, UsedPod{&a, 0.4}}, 10, &again);
  ASSERT_FALSE(abs.picks.empty());
  EXPECT_EQ(abs.picks[0].pod, &whale);
}

// The mirror mode spares only the nodes balance needs: the least loaded whose room (up to the
// mean + 30) takes what the held nodes have over the mean + 15. packed at 77 has 77 - 41.5 = 35.5
// to give: new (3) has 53.5 of room, enough alone; a and b stay free to be marked underused.
TEST(BalanceDestinations, TheLeastLoadedWhoseRoomIsNeeded) {
  const std::vector<double> values = {77, 13, 13, 3, std::nan("")};
  const std::vector<bool> held = {true, false, false, false, false};
  EXPECT_EQ(BalanceDestinations(values, held, 26.5, 15, 30), std::vector<size_t>{3});
  // Two packed nodes, relieved to the mean + 5 (41.6), give 70.8: new's 63.6 of room is not
  // enough, a comes next (by position among equals).
  const std::vector<double> two = {77, 77, 13, 13, 3};
  const std::vector<bool> both = {true, true, false, false, false};
  EXPECT_EQ(BalanceDestinations(two, both, 36.6, 5, 30), (std::vector<size_t>{4, 2}));
  // In the hysteresis band (held, over the mean + 15 but not + 30) relief goes on: so does the
  // need for a destination.
  EXPECT_EQ(BalanceDestinations({45, 13, 13, 3}, {true, false, false, false}, 18.5, 15, 30),
            std::vector<size_t>{3});
  // Nothing held, or the held node at its goal: no destination, the mirror mode is free.
  EXPECT_TRUE(
      BalanceDestinations(values, {false, false, false, false, false}, 26.5, 15, 30).empty());
  EXPECT_TRUE(
      BalanceDestinations({40, 13, 13, 3}, {true, false, false, false}, 17.25, 25, 30).empty());
}

// A destination's own pool ceiling (PlacementNode::balance_ceiling) is kept whatever relief
// places the pod: 60 % on a node whose pool lets it carry 55 is no fit.
TEST(Placement, ADestinationStaysWithinItsOwnPoolsCeiling) {
  PlacementNode n = Worker("other-pool", 10);
  n.balance_ceiling[0] = 55;
  Placement place({n});
  PodInfo p = Replica("p");
  EXPECT_EQ(place.Reserve(p, "packed", UsageFit{Rule::Resource::kCpu, 2.0}), "")
      << "10 + 50 = 60 > 55";
  EXPECT_EQ(place.Reserve(p, "packed", UsageFit{Rule::Resource::kCpu, 1.6}), "other-pool")
      << "10 + 40 = 50 <= 55";
}

UnderusedConfig Underused() {
  UnderusedConfig c;
  c.enabled = true;
  c.below[0] = 15;
  c.for_seconds = 600;
  return c;
}

UnderuseNode Idle(const std::string& name, double cpu) {
  UnderuseNode n;
  n.name = name;
  n.load[0] = cpu;
  return n;
}

// The mirror mode gives way to balance: a node where a packed one's pods are to go is not
// marked underused, its wait starts over when balance is done, and a node marked already keeps
// its mark (no flapping between the two modes).
TEST(Underuse, ABalanceDestinationIsNotMarkedUnderused) {
  UnderusedConfig c = Underused();
  c.max_nodes = 2;
  UnderuseTracker t;
  std::vector<UnderuseNode> nodes = {Idle("new", 3), Idle("marked", 2)};
  nodes[1].ours = true;
  for (UnderuseNode& n : nodes) n.balance_destination = true;
  UnderusePlan p = t.Step(nodes, c, kNow);
  EXPECT_TRUE(p.mark.empty());
  p = t.Step(nodes, c, kNow + 3600);
  EXPECT_TRUE(p.mark.empty()) << "an hour below, but balance needs it";
  EXPECT_TRUE(p.unmark.empty()) << "a marked node keeps its mark";
  EXPECT_EQ(p.drain, std::vector<std::string>{"marked"});
  for (UnderuseNode& n : nodes) n.balance_destination = false;
  p = t.Step(nodes, c, kNow + 3700);
  EXPECT_TRUE(p.mark.empty()) << "the wait starts when balance is done";
  nodes[1].ours = false;  // the first went away (the autoscaler)
  p = t.Step(nodes, c, kNow + 3700 + 600);
  EXPECT_EQ(p.mark, (std::vector<std::string>{"marked", "new"})) << "after `for` again";
}

}  // namespace
}  // namespace ds
