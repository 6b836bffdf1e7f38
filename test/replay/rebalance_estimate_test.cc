#include "replay/rebalance_estimate.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <map>
#include <set>

namespace ds {
namespace {

PodInfo Pod(const std::string& name, const std::string& owner, double created = 0) {
  PodInfo p;
  p.ns = "shop";
  p.name = name;
  p.node = "hot";
  p.owner_kind = "ReplicaSet";
  p.owner_name = owner;
  p.phase = "Running";
  p.ready = true;
  p.created_wall = created;
  p.cpu_request = 0.1;
  return p;
}

PlacementNode Node(const std::string& name) {
  PlacementNode n;
  n.name = name;
  n.allocatable_cpu = 10;
  n.allocatable_memory = 64e9;
  n.allocatable_other = {{"pods", 110}};
  return n;
}

UsageSeries Cpu(const std::string& pod, double cores) {
  UsageSeries s{"shop", pod, "", {}};
  for (double t = 0; t <= 6000; t += 60) s.points.emplace_back(t, cores);
  return s;
}

class EstimateTest : public ::testing::Test {
 protected:
  EstimateTest() {
    cfg.enabled = true;
    cfg.after_seconds = 120;
    cfg.limits.per_cycle = 2;
    cfg.limits.per_hour = 3;
    in.step_seconds = 60;
    // hot: two episodes; short: marked less than `after`; other: not selected; calm: nothing
    // over its clear threshold.
    in.marks = {{"hot", {{1000, 2000}, {2500, 3000}}},
                {"short", {{1000, 1100}}},
                {"other", {{1000, 2000}}},
                {"calm", {{1000, 2000}}}};
    in.selected = {"hot", "short", "calm"};
    in.nodes = {Node("hot"), Node("cool"), Node("other"), Node("calm")};
    // Usage in cores; the node's load is CPU percent of 10 cores: a core is 10 points.
    in.pods = {Pod("a", "a-rs"), Pod("b", "b-rs"), Pod("c", "c-rs"), Pod("f", "f-rs"),
               Pod("young", "y-rs", 2400)};
    in.cpu = {Cpu("a", 1.5), Cpu("b", 1.0), Cpu("c", 0.2), Cpu("f", 0.5), Cpu("young", 3)};
    in.holding = [](const std::string& node, double) {
      std::vector<HoldingRule> h;
      if (node != "calm") h.push_back(HoldingRule{"cpu", Rule::Resource::kCpu, 90, 70});
      return h;
    };
  }
  RebalanceConfig cfg;
  EstimateInput in;
};

TEST_F(EstimateTest, QualifiesAfterTheDelayAndPicksTheLargestUsersToTheGoal) {
  RebalanceEstimate got = EstimateRebalance(in, cfg, TimeZone::Utc());
  ASSERT_EQ(got.episodes.size(), 5u);
  std::map<std::pair<std::string, double>, const EpisodeEstimate*> by;
  for (const EpisodeEstimate& e : got.episodes) by[{e.node, e.start}] = &e;

  const EpisodeEstimate& first = *by.at({"hot", 1000});
  EXPECT_EQ(first.qualified_at, 1120);  // marked at 1000, after: 2m
  EXPECT_EQ(first.qualification, "qualifies");
  EXPECT_EQ(first.rule, "cpu");
  EXPECT_EQ(first.goal, 70);
  // 90 - 15 (a) - 10 (b) = 65 <= 70; "young" (created 2400) did not exist at 1120.
  ASSERT_EQ(first.evictions.size(), 2u);
  EXPECT_EQ(first.evictions[0].pod->name, "a");
  EXPECT_DOUBLE_EQ(first.evictions[0].usage, 15);
  EXPECT_EQ(first.evictions[1].pod->name, "b");
  EXPECT_DOUBLE_EQ(first.load_after, 65);
  EXPECT_EQ(first.candidates, 4u);

  // The second episode: a and b are gone; f (5) then c (2) are chosen, but the hour allows 3
  // evictions: c is held back. "young" is not 5 minutes old at 2620; at 2740, the node still
  // over its goal, the hour holds it back too (said once per pod, not once per cycle).
  const EpisodeEstimate& second = *by.at({"hot", 2500});
  EXPECT_EQ(second.qualified_at, 2620);
  ASSERT_EQ(second.evictions.size(), 1u);
  EXPECT_EQ(second.evictions[0].pod->name, "f");
  ASSERT_EQ(second.held_back.size(), 2u);
  EXPECT_EQ(second.held_back[0].pod->name, "c");
  EXPECT_EQ(second.held_back[0].limit, "per_hour");
  EXPECT_EQ(second.held_back[1].pod->name, "young");
  EXPECT_EQ(second.held_back[1].limit, "per_hour");
  EXPECT_EQ(got.evictions, 3u);

  EXPECT_EQ(by.at({"short", 1000})->qualification, "not_long_enough");
  EXPECT_LT(by.at({"short", 1000})->qualified_at, 0);
  EXPECT_EQ(by.at({"other", 1000})->qualification, "not_selected");
  EXPECT_EQ(by.at({"calm", 1000})->qualification, "nothing_to_relieve");
  EXPECT_TRUE(by.at({"calm", 1000})->evictions.empty());
}

TEST_F(EstimateTest, FirstQualifyingCyclesAreWhereHoldingIsFirstAsked) {
  std::set<std::pair<std::string, double>> asked;
  auto holding = in.holding;
  in.holding = [&](const std::string& node, double t) {
    asked.emplace(node, t);
    return holding(node, t);
  };
  EstimateRebalance(in, cfg, TimeZone::Utc());
  auto cycles = FirstQualifyingCycles(in.marks, cfg, 60, in.selected);
  // hot twice and calm once; short ends first, other is not selected. calm has nothing to relieve,
  // so the estimate asks it again each later cycle: the first is the one named.
  std::vector<std::pair<std::string, double>> want = {{"calm", 1120}, {"hot", 1120}, {"hot", 2620}};
  EXPECT_EQ(cycles, want);
  for (const auto& c : cycles) EXPECT_TRUE(asked.count(c)) << c.first << " " << c.second;
  EXPECT_EQ(asked.size(), 2u + 15u);  // hot's two, and calm's from 1120 to 1960
}

UsageSeries Bytes(const std::string& pod, double bytes) {
  UsageSeries s = Cpu(pod, bytes);
  return s;
}

// A bytes-available memory rule (the kubelet's memory.available, issue 25): the goal is at least
// the clear threshold available, each pod counts with its whole working set, reported in bytes,
// and the pods go in the kubelet's order (over its request first), not the largest first.
TEST_F(EstimateTest, BytesRuleEpisodeInTheKubeletsOrder) {
  in.marks = {{"hot", {{1000, 2000}}}};
  in.selected = {};
  in.pods = {Pod("big", "big-rs"), Pod("over", "over-rs")};
  in.pods[0].memory_request = 4e9;  // working set 3e9: under its request
  in.pods[1].memory_request = 1e9;  // working set 1.5e9: over it, the kubelet's first victim
  in.cpu = {};
  in.memory = {Bytes("big", 3e9), Bytes("over", 1.5e9)};
  in.holding = [](const std::string&, double) {
    HoldingRule h{"mem-available", Rule::Resource::kMemory, 1e9, 3e9};
    h.available_bytes = true;
    return std::vector<HoldingRule>{h};
  };
  RebalanceEstimate got = EstimateRebalance(in, cfg, TimeZone::Utc());
  ASSERT_EQ(got.episodes.size(), 1u);
  const EpisodeEstimate& e = got.episodes[0];
  EXPECT_EQ(e.rule, "mem-available");
  EXPECT_DOUBLE_EQ(e.load, 1e9);  // bytes available, as the rebalancer reports them
  EXPECT_DOUBLE_EQ(e.goal, 3e9);
  ASSERT_EQ(e.evictions.size(), 2u);
  EXPECT_EQ(e.evictions[0].pod->name, "over");  // largest first would take "big" alone
  EXPECT_DOUBLE_EQ(e.evictions[0].usage, 1.5e9);
  EXPECT_EQ(e.evictions[1].pod->name, "big");
  EXPECT_DOUBLE_EQ(e.load_after, 5.5e9);
}

// Per-rule relieveAfter: an urgent rule qualifies the node after its own wait, and only it sets
// the goal then, although a patient rule is further over its threshold.
TEST_F(EstimateTest, RelieveAfterQualifiesEarlyAndOnlyDueRulesSetTheGoal) {
  cfg.after_seconds = 600;
  in.marks = {{"hot", {{1000, 2000}}}};
  in.selected = {};
  in.holding = [](const std::string&, double) {
    return std::vector<HoldingRule>{HoldingRule{"cpu-patient", Rule::Resource::kCpu, 95, 60},
                                    HoldingRule{"cpu-urgent", Rule::Resource::kCpu, 90, 80}};
  };
  in.held = [](const std::string&, double start) {
    return std::vector<HeldSince>{HeldSince{start, -1, "cpu-patient"},
                                  HeldSince{start, 60, "cpu-urgent"}};
  };
  RebalanceEstimate got = EstimateRebalance(in, cfg, TimeZone::Utc());
  ASSERT_EQ(got.episodes.size(), 1u);
  const EpisodeEstimate& e = got.episodes[0];
  EXPECT_EQ(e.qualified_at, 1060);
  EXPECT_EQ(e.rule, "cpu-urgent");
  EXPECT_EQ(e.goal, 80);
  ASSERT_EQ(e.evictions.size(), 1u);  // 90 - 15 (a) = 75 <= 80
  EXPECT_EQ(e.evictions[0].pod->name, "a");
  auto cycles = FirstQualifyingCycles(in.marks, cfg, 60, in.selected, in.held);
  std::vector<std::pair<std::string, double>> want = {{"hot", 1060}};
  EXPECT_EQ(cycles, want);
}

// E5: when perCycle binds, the controller relieves the node furthest over its goal first
// (RelievedBefore); so does the estimate, not the first by name.
TEST_F(EstimateTest, PerCycleGoesToTheNodeFurthestOverItsGoal) {
  cfg.limits.per_cycle = 1;
  cfg.limits.per_hour = 100;
  in.marks = {{"alpha", {{1000, 2000}}}, {"zulu", {{1000, 2000}}}};
  in.selected = {"alpha", "zulu"};
  in.nodes = {Node("alpha"), Node("zulu"), Node("cool")};
  PodInfo a = Pod("a", "a-rs"), z = Pod("z", "z-rs");
  a.node = "alpha";
  z.node = "zulu";
  in.pods = {a, z};
  in.cpu = {Cpu("a", 1.0), Cpu("z", 1.0)};
  in.holding = [](const std::string& node, double) {
    return std::vector<HoldingRule>{
        HoldingRule{"cpu", Rule::Resource::kCpu, node == "zulu" ? 95.0 : 75.0, 70}};
  };
  RebalanceEstimate got = EstimateRebalance(in, cfg, TimeZone::Utc());
  std::map<std::string, std::vector<double>> at;
  for (const EpisodeEstimate& e : got.episodes)
    for (const auto& ev : e.evictions) at[e.node].push_back(ev.at);
  // Both qualify at 1120 (after: 2m). perCycle 1: the cycle's eviction goes to zulu, 25 points
  // over its goal against alpha's 5; alpha, still marked and hot, gets its own the cycle after,
  // as the controller plans it again (the first version left it at none).
  EXPECT_EQ(at["zulu"], std::vector<double>{1120});
  EXPECT_EQ(at["alpha"], std::vector<double>{1180});
  EXPECT_EQ(got.evictions, 2u);
}

// A plan a limit cuts short goes on the cycles after from the load its picks leave, until the
// goal or the mark's end: perCycle at the next cycle, the node's cool-down once it has passed.
TEST_F(EstimateTest, APlanCutShortByALimitGoesOnUntilTheGoalOrTheMarksEnd) {
  cfg.limits.per_cycle = 1;
  cfg.limits.per_hour = 100;
  cfg.limits.node_cooldown_seconds = 0;
  // hot at 90 of 10 cores, goal 70: a (15) and b (10) are both needed; c is left.
  in.marks = {{"hot", {{1000, 2000}}}};
  RebalanceEstimate got = EstimateRebalance(in, cfg, TimeZone::Utc());
  const EpisodeEstimate& e = got.episodes.at(0);
  ASSERT_EQ(e.evictions.size(), 2u);
  EXPECT_EQ(e.evictions[0].pod->name, "a");
  EXPECT_EQ(e.evictions[0].at, 1120);
  EXPECT_EQ(e.evictions[1].pod->name, "b");
  EXPECT_EQ(e.evictions[1].at, 1180);
  EXPECT_DOUBLE_EQ(e.load_after, 65);
  EXPECT_TRUE(e.held_back.empty());

  // A cool-down of 3 minutes after a's eviction: b goes at the first cycle past it. The goal met,
  // nothing is said to be held back (the cool-down only delayed b; c and f were not needed).
  cfg.limits.node_cooldown_seconds = 180;
  got = EstimateRebalance(in, cfg, TimeZone::Utc());
  ASSERT_EQ(got.episodes.at(0).evictions.size(), 2u);
  EXPECT_EQ(got.episodes.at(0).evictions[1].at, 1300);
  EXPECT_TRUE(got.episodes.at(0).held_back.empty());

  // The mark ends before the next cycle: a alone, 75 left against the goal of 70.
  cfg.limits.node_cooldown_seconds = 0;
  in.marks = {{"hot", {{1000, 1150}}}};
  got = EstimateRebalance(in, cfg, TimeZone::Utc());
  const EpisodeEstimate& short_mark = got.episodes.at(0);
  ASSERT_EQ(short_mark.evictions.size(), 1u);
  EXPECT_DOUBLE_EQ(short_mark.load_after, 75);
  EXPECT_EQ(got.evictions, 1u);
}

// A pick a limit holds at its eviction stays on the node: the load after counts only what went,
// and the plan goes on until the limit lifts (here the workload's allowance: one eviction whose
// replacement is not known to run, for unreplacedExpiry), or is said held back when the mark ends
// first.
TEST_F(EstimateTest, APickHeldAtItsEvictionStaysAndThePlanGoesOn) {
  cfg.limits.per_hour = 100;
  cfg.limits.per_node_per_hour = 100;
  cfg.limits.node_cooldown_seconds = 0;
  cfg.limits.per_workload_unreplaced = 1;
  in.marks = {{"hot", {{1000, 2500}}}};
  in.pods = {Pod("a", "web-rs"), Pod("b", "web-rs")};  // one workload
  in.cpu = {Cpu("a", 1.5), Cpu("b", 1.0)};
  RebalanceEstimate got = EstimateRebalance(in, cfg, TimeZone::Utc());
  const EpisodeEstimate& e = got.episodes.at(0);
  ASSERT_EQ(e.evictions.size(), 2u);
  EXPECT_EQ(e.evictions[0].pod->name, "a");
  EXPECT_EQ(e.evictions[0].at, 1120);
  EXPECT_EQ(e.evictions[1].pod->name, "b");
  EXPECT_GE(e.evictions[1].at, 1120 + cfg.limits.unreplaced_expiry_seconds);
  EXPECT_DOUBLE_EQ(e.load_after, 65);
  EXPECT_TRUE(e.held_back.empty());

  in.marks = {{"hot", {{1000, 1500}}}};  // over before the allowance comes back
  got = EstimateRebalance(in, cfg, TimeZone::Utc());
  const EpisodeEstimate& short_mark = got.episodes.at(0);
  ASSERT_EQ(short_mark.evictions.size(), 1u);
  EXPECT_DOUBLE_EQ(short_mark.load_after, 75) << "b was held at its eviction: it stayed";
  ASSERT_EQ(short_mark.held_back.size(), 1u);
  EXPECT_EQ(short_mark.held_back[0].pod->name, "b");
  EXPECT_EQ(short_mark.held_back[0].limit, "per_workload");
}

// Mark first: with `after: 0s` the controller still relieves a node only from the cycle after
// the one that marked it (the node must carry the mark when a cycle begins), so does the estimate.
TEST_F(EstimateTest, WithoutAfterTheFirstPlanIsTheCycleAfterTheMark) {
  cfg.after_seconds = 0;
  in.marks = {{"hot", {{1000, 2000}}}};
  RebalanceEstimate got = EstimateRebalance(in, cfg, TimeZone::Utc());
  EXPECT_EQ(got.episodes.at(0).qualified_at, 1060);
  ASSERT_FALSE(got.episodes.at(0).evictions.empty());
  EXPECT_EQ(got.episodes.at(0).evictions[0].at, 1060);
  const auto cycles = FirstQualifyingCycles(in.marks, cfg, 60, in.selected);
  EXPECT_EQ(cycles, (std::vector<std::pair<std::string, double>>{{"hot", 1060}}));
  // A mark one cycle long is never relieved.
  in.marks = {{"hot", {{1000, 1060}}}};
  EXPECT_EQ(EstimateRebalance(in, cfg, TimeZone::Utc()).evictions, 0u);
}

TEST_F(EstimateTest, NoDestinationNoEviction) {
  in.nodes = {Node("hot")};  // nowhere else for a replacement to go
  RebalanceEstimate got = EstimateRebalance(in, cfg, TimeZone::Utc());
  EXPECT_EQ(got.evictions, 0u);
}

TEST_F(EstimateTest, OneSummaryLineThatClaimsNoDestination) {
  RebalanceEstimate got = EstimateRebalance(in, cfg, TimeZone::Utc());
  EXPECT_EQ(EstimateSummary(got),
            "rebalancer (estimated): 2 of 5 hot episodes qualified, 3 evictions (the scheduler is "
            "not replayed: where replacements would have gone is not claimed)\n");
}

TEST(EstimateMissingTest, SaysWhyWithTheNote) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  WriteEstimateMissing(w, "the pod LIST failed: \"403\"");
  rapidjson::Document d;
  d.Parse(buf.GetString());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_STREQ(d["missing"].GetString(), "the pod LIST failed: \"403\"");
  EXPECT_STREQ(d["note"].GetString(), kEstimateNote);
  EXPECT_FALSE(d.HasMember("episodes"));
}

TEST_F(EstimateTest, WritesTheBlockWithTheNote) {
  RebalanceEstimate got = EstimateRebalance(in, cfg, TimeZone::Utc());
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  WriteRebalanceEstimate(w, got);
  rapidjson::Document d;
  d.Parse(buf.GetString());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_NE(std::string(d["note"].GetString()).find("scheduler is not replayed"),
            std::string::npos);
  EXPECT_EQ(d["evictions"].GetUint64(), 3u);
  const rapidjson::Value& e = d["episodes"][0];  // calm, the first node by name
  EXPECT_STREQ(e["node"].GetString(), "calm");
  EXPECT_TRUE(e["qualified_at"].IsNull());
  bool found = false;
  for (const rapidjson::Value& ep : d["episodes"].GetArray())
    if (std::string(ep["node"].GetString()) == "hot" && ep["evictions"].Size() == 2) {
      found = true;
      EXPECT_STREQ(ep["evictions"][0]["pod"].GetString(), "a");
      EXPECT_STREQ(ep["evictions"][0]["workload"].GetString(), "shop/ReplicaSet/a-rs");
      EXPECT_STREQ(ep["qualified_at"].GetString(), "1970-01-01T00:18:40Z");
    }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace ds
