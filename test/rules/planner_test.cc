#include "rules/planner.h"

#include <gtest/gtest.h>

#include "rules/mark.h"

namespace ds {
namespace {

TEST(Planner, OnlyChangesAndOnlyOurs) {
  Mark mark;
  Labels ours = {{"status", "presure"}}, foreign = {{"status", "maintenance"}}, none;
  std::vector<PlanNode> nodes = {
      {"hot-unlabelled", mark.LabelOn(none)},  {"hot-labelled", mark.LabelOn(ours)},
      {"cold-labelled", mark.LabelOn(ours)},   {"cold-clean", mark.LabelOn(none)},
      {"cold-foreign", mark.LabelOn(foreign)}, {"unknown-labelled", mark.LabelOn(ours)},
      {"hot-foreign", mark.LabelOn(foreign)}};
  std::vector<NodeDecision> d(7);
  d[0].verdict = d[1].verdict = d[6].verdict = Verdict::kHot;
  d[2].verdict = d[3].verdict = d[4].verdict = Verdict::kCold;
  d[5].verdict = Verdict::kUnknown;
  std::vector<LabelChange> p = PlanChanges(nodes, d);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].node, 0u);
  EXPECT_EQ(p[0].kind, ChangeKind::kMark);
  EXPECT_EQ(p[1].node, 1u) << "marked before records existed: the record is written";
  EXPECT_EQ(p[1].kind, ChangeKind::kRecord);
  EXPECT_EQ(p[2].node, 2u);
  EXPECT_EQ(p[2].kind, ChangeKind::kUnmark);
  EXPECT_EQ(p[3].node, 6u) << "our key with another value on a hot node is set to ours";
  EXPECT_EQ(p[3].kind, ChangeKind::kMark);
}

NodeDecision HotBy(std::vector<size_t> rules) {
  NodeDecision d;
  d.verdict = Verdict::kHot;
  for (size_t r : rules) d.holds.push_back(Hold{r, 0, {}, false});
  return d;
}

TEST(Planner, TheRecordFollowsTheRulesThatHold) {
  const std::vector<size_t> cpu = {0}, cpu_mem = {0, 1};
  std::vector<PlanNode> nodes = {{"same", true, true, &cpu},
                                 {"more", true, true, &cpu},
                                 {"unreadable", true, true, nullptr},
                                 {"fewer", true, true, &cpu_mem}};
  std::vector<NodeDecision> d = {HotBy({0}), HotBy({1, 0}), HotBy({0}), HotBy({1})};
  std::vector<LabelChange> p = PlanChanges(nodes, d);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].node, 1u);
  EXPECT_EQ(p[0].kind, ChangeKind::kRecord);
  EXPECT_EQ(p[1].node, 2u);
  EXPECT_EQ(p[2].node, 3u);
  EXPECT_EQ(HoldingRules(HotBy({1, 0, 1})), cpu_mem) << "sorted, unique";
}

TEST(Planner, ARecordWithoutOurMarkIsForgottenOnceCold) {
  const std::vector<size_t> cpu = {0};
  // The mark was removed or overwritten by hand; our record stays behind.
  std::vector<PlanNode> nodes = {{"cold", false, true, &cpu}, {"unknown", false, true, &cpu}};
  std::vector<NodeDecision> d(2);
  d[0].verdict = Verdict::kCold;
  d[1].verdict = Verdict::kUnknown;
  std::vector<LabelChange> p = PlanChanges(nodes, d);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].node, 0u);
  EXPECT_EQ(p[0].kind, ChangeKind::kForget);
}

TEST(Planner, SteadyStatePlansNothing) {
  const std::vector<size_t> cpu = {0};
  std::vector<PlanNode> nodes = {{"a", true, true, &cpu}, {"b", false}};
  std::vector<NodeDecision> d(2);
  d[0] = HotBy({0});
  d[1].verdict = Verdict::kCold;
  EXPECT_TRUE(PlanChanges(nodes, d).empty());
}

TEST(Mark, OursOnlyWithOurValue) {
  Mark m;
  EXPECT_TRUE(m.LabelOn({{"a", "b"}, {"status", "presure"}}));
  EXPECT_FALSE(m.LabelOn({{"status", "maintenance"}})) << "a foreign value under our key";
  EXPECT_FALSE(m.LabelOn({{"x", "presure"}}));
  EXPECT_FALSE(m.LabelOn({}));
  Mark custom{"example.com/busy", "true"};
  EXPECT_TRUE(custom.LabelOn({{"example.com/busy", "true"}}));
  EXPECT_FALSE(custom.LabelOn({{"status", "presure"}}));
}

}  // namespace
}  // namespace ds
