#include "rules/herd_cap.h"

#include <gtest/gtest.h>

namespace ds {
namespace {

Rule Cpu() {
  Rule r;
  r.name = "cpu";
  r.threshold = 80;
  r.clear_threshold = 70;
  return r;
}
Rule MemAvailable() {  // bytes, lower is worse
  Rule r;
  r.name = "mem";
  r.op = Comparison::kLess;
  r.threshold = 100e6;
  r.clear_threshold = 200e6;
  return r;
}

NodeDecision Hot(size_t rule, double value) {
  NodeDecision d;
  d.verdict = Verdict::kHot;
  // As the Decider does: each hold carries the threshold it was judged against (rule 0 cpu,
  // rule 1 memory, the tests' order).
  const Rule r = rule == 0 ? Cpu() : MemAvailable();
  d.holds.push_back(Hold{rule, value, TimePoint{}, false, r.threshold, r.clear_threshold});
  return d;
}
NodeDecision Cold() {
  NodeDecision d;
  d.verdict = Verdict::kCold;
  return d;
}

TEST(HerdCapTest, TheLimitIsAShareOfTheManagedNodesAndANumberAndAtLeastOne) {
  EXPECT_EQ((HerdCap{0.5, 0}.Limit(10)), 5u);
  EXPECT_EQ((HerdCap{0.5, 0}.Limit(3)), 1u) << "never more than the share: rounded down";
  EXPECT_EQ((HerdCap{0.5, 3}.Limit(10)), 3u) << "the smaller of the two";
  EXPECT_EQ((HerdCap{0.2, 30}.Limit(100)), 20u);
  EXPECT_EQ((HerdCap{1, 0}.Limit(7)), 7u) << "1: no limit by share";
  EXPECT_EQ((HerdCap{0.5, 0}.Limit(1)), 1u) << "one mark cannot herd";
  EXPECT_EQ((HerdCap{0.1, 0}.Limit(0)), 1u);
}

TEST(HerdCapTest, MarginsCompareRulesInDifferentUnits) {
  EXPECT_DOUBLE_EQ(Margin(Cpu(), 88), 0.1);
  EXPECT_DOUBLE_EQ(Margin(MemAvailable(), 50e6), 0.5) << "half the threshold left";
  EXPECT_LT(Margin(Cpu(), 70), 0) << "not past the threshold";
  Rule zero = Cpu();
  zero.threshold = 0;
  EXPECT_DOUBLE_EQ(Margin(zero, 3), 3) << "no scale: the distance itself";
}

TEST(HerdCapTest, OnlyTheHottestUnmarkedNodesGetTheFreePlaces) {
  const std::vector<Rule> rules = {Cpu(), MemAvailable()};
  // 6 nodes: the limit is 3.
  std::vector<NodeDecision> d = {Hot(0, 85), Hot(0, 99), Hot(1, 10e6), Cold(), Hot(0, 90), Cold()};
  const std::vector<bool> marked(6, false);
  CapOutcome out = ApplyHerdCap(HerdCap{0.5, 0}, rules, marked, &d);
  EXPECT_EQ(out.limit, 3u);
  EXPECT_EQ(out.marked, 3u);
  // Margins: node 0 0.0625, node 1 0.2375, node 2 0.9 (memory nearly gone), node 4 0.125.
  ASSERT_EQ(out.capped, (std::vector<size_t>{0}));
  EXPECT_EQ(d[0].verdict, Verdict::kUnknown) << "no change planned for a capped node";
  ASSERT_EQ(d[0].holds.size(), 1u) << "its holds still say why it is hot";
  EXPECT_EQ(d[1].verdict, Verdict::kHot);
  EXPECT_EQ(d[2].verdict, Verdict::kHot);
  EXPECT_EQ(d[4].verdict, Verdict::kHot);
}

TEST(HerdCapTest, ExistingMarksComeFirstAndAreNeverTakenAway) {
  const std::vector<Rule> rules = {Cpu()};
  // 4 nodes, limit 2. Nodes 0 and 1 carry the mark and are only just over; node 2 is hotter
  // but must wait: swapping marks as margins cross would flap labels.
  std::vector<NodeDecision> d = {Hot(0, 81), Hot(0, 81), Hot(0, 99), Cold()};
  CapOutcome out = ApplyHerdCap(HerdCap{0.5, 0}, rules, {true, true, false, false}, &d);
  EXPECT_EQ(out.capped, (std::vector<size_t>{2}));
  EXPECT_EQ(d[0].verdict, Verdict::kHot);
  EXPECT_EQ(d[1].verdict, Verdict::kHot);

  // A cap lowered below the marks already set: nothing is unmarked while it is hot, and no
  // new mark is added.
  d = {Hot(0, 81), Hot(0, 81), Hot(0, 99), Cold()};
  out = ApplyHerdCap(HerdCap{0.5, 1}, rules, {true, true, false, false}, &d);
  EXPECT_EQ(out.marked, 2u);
  EXPECT_EQ(d[0].verdict, Verdict::kHot);
  EXPECT_EQ(d[1].verdict, Verdict::kHot);
  EXPECT_EQ(d[2].verdict, Verdict::kUnknown);
}

TEST(HerdCapTest, AMarkAboutToGoFreesItsPlaceAndAnUnknownOneKeepsIt) {
  const std::vector<Rule> rules = {Cpu()};
  // Node 0 cooled: its mark goes this cycle, so node 2 may take the place.
  std::vector<NodeDecision> d = {Cold(), Hot(0, 85), Hot(0, 95), Cold()};
  CapOutcome out = ApplyHerdCap(HerdCap{0.5, 0}, rules, {true, true, false, false}, &d);
  EXPECT_TRUE(out.capped.empty());
  EXPECT_EQ(d[2].verdict, Verdict::kHot);

  // Node 0's verdict is unknown (no data, or the rebalancer holds its mark): it keeps the mark,
  // and so its place.
  d = {NodeDecision{}, Hot(0, 85), Hot(0, 95), Cold()};
  out = ApplyHerdCap(HerdCap{0.5, 0}, rules, {true, true, false, false}, &d);
  EXPECT_EQ(out.capped, (std::vector<size_t>{2}));
}

TEST(HerdCapTest, EqualMarginsAreTakenInNodeOrder) {
  const std::vector<Rule> rules = {Cpu()};
  std::vector<NodeDecision> d = {Cold(), Hot(0, 90), Cold(), Hot(0, 90)};
  CapOutcome out = ApplyHerdCap(HerdCap{0.25, 0}, rules, std::vector<bool>(4, false), &d);
  EXPECT_EQ(out.capped, (std::vector<size_t>{3}));
}

TEST(HerdCapTest, MarginsArePastTheThresholdEachHoldWasJudgedBy) {
  // A relative rule's threshold moves with the mean: the rule's own number (an offset, 20) says
  // nothing about how far a node is past it; the hold's effective threshold does.
  Rule skew = Cpu();
  skew.threshold = 20;
  skew.clear_threshold = 10;
  skew.relative_to = Rule::Relative::kMean;
  const std::vector<Rule> rules = {skew};
  NodeDecision a, b;
  a.verdict = b.verdict = Verdict::kHot;
  a.holds.push_back(Hold{0, 90, TimePoint{}, false, 80, 70});  // 12.5 % past mean 60 + 20
  b.holds.push_back(Hold{0, 88, TimePoint{}, false, 70, 60});  // 25.7 % past mean 50 + 20
  std::vector<NodeDecision> d = {a, b};
  CapOutcome out = ApplyHerdCap(HerdCap{0.5, 0}, rules, {false, false}, &d);
  EXPECT_EQ(out.capped, (std::vector<size_t>{0})) << "node 1 stands further out";
}

}  // namespace
}  // namespace ds
