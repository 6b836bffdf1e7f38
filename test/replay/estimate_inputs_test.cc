#include "replay/estimate_inputs.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ds {
namespace {

NodeInfo Node(const std::string& name, double cpu, double memory) {
  NodeInfo n;
  n.name = name;
  n.addresses = {"10.0.0." + std::to_string(name.size())};
  n.labels = {{"zone", "a"}};
  n.allocatable_cpu = cpu;
  n.allocatable_memory = memory;
  n.allocatable_other = {{"pods", 110}};
  return n;
}

PodInfo Pod(const std::string& name, const std::string& node, double cpu, double memory,
            const std::string& phase = "Running") {
  PodInfo p;
  p.ns = "shop";
  p.name = name;
  p.uid = "uid-" + name;
  p.node = node;
  p.phase = phase;
  p.cpu_request = cpu;
  p.memory_request = memory;
  return p;
}

TEST(PlacementNodesOfTest, KeepsAllocatableAndSumsTheRequestsOfTheRunningPodsBoundThere) {
  std::vector<NodeInfo> nodes = {Node("a", 4, 8e9), Node("b", 8, 16e9)};
  nodes[1].unschedulable = true;
  std::vector<PodInfo> pods = {Pod("p1", "a", 0.5, 1e9), Pod("p2", "a", 1, 2e9),
                               Pod("done", "a", 3, 3e9, "Succeeded"),
                               Pod("gone", "elsewhere", 1, 1e9), Pod("p3", "b", 2, 4e9)};
  pods[1].host_ports = {HostPort{8080, "TCP", ""}};
  std::vector<PlacementNode> got = PlacementNodesOf(nodes, pods);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].name, "a");
  EXPECT_EQ(got[0].allocatable_cpu, 4);
  EXPECT_EQ(got[0].allocatable_memory, 8e9);
  EXPECT_EQ(got[0].labels, nodes[0].labels);
  EXPECT_DOUBLE_EQ(got[0].requested_cpu, 1.5);  // the finished pod holds nothing
  EXPECT_DOUBLE_EQ(got[0].requested_memory, 3e9);
  ASSERT_EQ(got[0].pods.size(), 2u);
  EXPECT_EQ(got[0].pods[1].uid, "uid-p2");
  EXPECT_EQ(got[0].host_ports.size(), 1u);
  EXPECT_TRUE(std::isnan(got[0].used_cpu));  // real usage unknown: requests decide
  EXPECT_TRUE(got[1].unschedulable);
  EXPECT_DOUBLE_EQ(got[1].requested_cpu, 2);
  EXPECT_EQ(got[1].allocatable_other, nodes[1].allocatable_other);
}

ReplayResult Result() {
  ReplayResult r;
  r.to = 9000;
  ReplayNodeResult a;
  a.name = "a";
  a.marks = {ReplayMark{100, 500, {"cpu", "mem"}, 0}, ReplayMark{1000, std::nan(""), {"cpu"}, 0},
             ReplayMark{2000, 2500, {"cpu@warm"}, 1}};
  r.nodes = {a};
  return r;
}

std::vector<Rule> Rules() {
  Rule cpu;
  cpu.name = "cpu";
  cpu.resource = Rule::Resource::kCpu;
  cpu.threshold = 80;
  cpu.clear_threshold = 60;
  cpu.relieve_after_seconds = 300;
  Rule mem;
  mem.name = "mem";
  mem.resource = Rule::Resource::kMemory;
  mem.op = Comparison::kLess;
  mem.threshold = 1e9;
  mem.clear_threshold = 2e9;
  Rule warm = cpu;
  warm.name = "cpu@warm";
  warm.below_hottest = 1;
  Rule plain;
  plain.name = "plain";  // no resource: nothing to relieve
  Rule relative = cpu;
  relative.name = "relative";
  relative.relative_to = Rule::Relative::kMean;
  return {cpu, mem, warm, plain, relative};
}

TEST(HottestMarksTest, LeavesCoolerLevelsOutAndRunsOpenMarksToTheEnd) {
  NodeMarks got = HottestMarks(Result());
  ASSERT_EQ(got.at("a").size(), 2u);
  EXPECT_EQ(got.at("a")[0].start, 100);
  EXPECT_EQ(got.at("a")[0].end, 500);
  EXPECT_EQ(got.at("a")[1].end, 9000);
}

TEST(HeldAtMarkTest, TheRulesThatSetTheMarkSinceItsStartWithTheirOwnWait) {
  const ReplayResult r = Result();
  const std::vector<Rule> rules = Rules();
  std::vector<HeldSince> got = HeldAtMark(r, rules, "a", 100);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].rule, "cpu");
  EXPECT_EQ(got[0].since_wall, 100);
  EXPECT_EQ(got[0].relieve_after_seconds, 300);
  EXPECT_EQ(got[1].rule, "mem");
  EXPECT_EQ(got[1].relieve_after_seconds, -1);           // rebalance.after
  EXPECT_TRUE(HeldAtMark(r, rules, "a", 2000).empty());  // a cooler level's mark
  EXPECT_TRUE(HeldAtMark(r, rules, "a", 101).empty());
  EXPECT_TRUE(HeldAtMark(r, rules, "b", 100).empty());
}

Sample At(const std::string& node, double v) { return Sample{{{"instance", node + ":9100"}}, v}; }

TEST(HoldingValuesTest, AsksResourceRulesOfTheHottestLevelAndHoldsUntilTheClearThreshold) {
  const std::vector<Rule> rules = Rules();
  HoldingValues values(rules);
  EXPECT_EQ(values.asked(), (std::vector<size_t>{0, 1}));
  std::vector<NodeInfo> nodes = {Node("a", 4, 8e9), Node("bb", 4, 8e9), Node("ccc", 4, 8e9)};
  std::vector<NodeIdentity> ids;
  std::vector<std::string> names;
  for (const NodeInfo& n : nodes) {
    ids.push_back(NodeIdentity{n.name, n.addresses});
    names.push_back(n.name);
  }
  const NodeMatcher matcher(ids);
  // a: cpu in the hysteresis band (still held), memory cleared; bb: cpu cleared, memory low;
  // ccc: NaN, then a duplicate; a stray series names no node.
  values.Add(0, 600,
             {At("a", 70), At("bb", 60), At("ccc", std::nan("")), At("ccc", 95), At("ccc", 50),
              At("stray", 99)},
             matcher, names);
  values.Add(1, 600, {At("a", 3e9), At("bb", 5e8)}, matcher, names);
  // By address: "10.0.0.1:9100" is a's.
  values.Add(0, 660, {Sample{{{"instance", "10.0.0.1:9100"}}, 85}}, matcher, names);

  std::vector<HoldingRule> a = values.At("a", 600);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].rule, "cpu");
  EXPECT_EQ(a[0].value, 70);
  EXPECT_EQ(a[0].clear_threshold, 60);
  EXPECT_EQ(a[0].resource, Rule::Resource::kCpu);
  std::vector<HoldingRule> bb = values.At("bb", 600);
  ASSERT_EQ(bb.size(), 1u);
  EXPECT_EQ(bb[0].rule, "mem");
  EXPECT_TRUE(bb[0].available_bytes);
  std::vector<HoldingRule> ccc = values.At("ccc", 600);
  ASSERT_EQ(ccc.size(), 1u);
  EXPECT_EQ(ccc[0].value, 95);  // the first finite value
  ASSERT_EQ(values.At("a", 660).size(), 1u);
  EXPECT_EQ(values.At("a", 660)[0].value, 85);
  EXPECT_TRUE(values.At("a", 720).empty());  // not asked then
  EXPECT_TRUE(values.At("stray", 600).empty());
}

// E4: a rule in its hysteresis band that never crossed its threshold holds nothing. a is marked
// by mem at 500 and cpu joins at 700 (the decider's `held`); at 600 cpu's 70 is in its band
// (clears at 60) but it has not crossed yet, so only mem may set the goal; at 700 both.
TEST(HoldingValuesTest, OnlyWhatTheDeciderSaidHoldsHolds) {
  const std::vector<Rule> rules = Rules();
  ReplayResult r;
  r.to = 5000;
  ReplayNodeResult a;
  a.name = "a";
  ReplayMark m;
  m.start = 500;
  m.end = 2000;
  m.rules = {"mem"};
  m.held = {{500, {"mem"}}, {700, {"mem", "cpu"}}};
  a.marks = {m};
  r.nodes = {a};
  ASSERT_NE(HoldingAt(r, "a", 600), nullptr);
  EXPECT_EQ(*HoldingAt(r, "a", 600), std::vector<std::string>{"mem"});
  EXPECT_EQ(HoldingAt(r, "a", 700)->size(), 2u);
  EXPECT_EQ(HoldingAt(r, "a", 2000), nullptr) << "the mark ended";
  EXPECT_EQ(HoldingAt(r, "b", 600), nullptr);

  HoldingValues values(rules);
  const NodeMatcher matcher({NodeIdentity{"a", {}}});
  for (double t : {600.0, 700.0}) {
    values.Add(0, t, {Sample{{{"instance", "a"}}, 70}}, matcher, {"a"});
    values.Add(1, t, {Sample{{{"instance", "a"}}, 5e8}}, matcher, {"a"});
  }
  std::vector<HoldingRule> at600 = values.At("a", 600, HoldingAt(r, "a", 600));
  ASSERT_EQ(at600.size(), 1u);
  EXPECT_EQ(at600[0].rule, "mem");
  EXPECT_EQ(values.At("a", 600).size(), 2u) << "by the values alone, cpu's band would count";
  EXPECT_EQ(values.At("a", 700, HoldingAt(r, "a", 700)).size(), 2u);
}

}  // namespace
}  // namespace ds
