#include "rules/planner.h"

#include <gtest/gtest.h>

#include "rules/mark.h"

namespace ds {
namespace {

TEST(Planner, OnlyChangesAndOnlyOurs) {
  Mark mark;
  Labels ours = {{"status", "presure"}}, foreign = {{"status", "maintenance"}}, none;
  std::vector<PlanNode> nodes = {
      {"hot-unlabelled", mark.IsOn(none)},  {"hot-labelled", mark.IsOn(ours)},
      {"cold-labelled", mark.IsOn(ours)},   {"cold-clean", mark.IsOn(none)},
      {"cold-foreign", mark.IsOn(foreign)}, {"unknown-labelled", mark.IsOn(ours)},
      {"hot-foreign", mark.IsOn(foreign)}};
  std::vector<NodeDecision> d(7);
  d[0].verdict = d[1].verdict = d[6].verdict = Verdict::kHot;
  d[2].verdict = d[3].verdict = d[4].verdict = Verdict::kCold;
  d[5].verdict = Verdict::kUnknown;
  std::vector<LabelChange> p = PlanChanges(nodes, d);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].node, 0u);
  EXPECT_TRUE(p[0].set);
  EXPECT_EQ(p[1].node, 2u);
  EXPECT_FALSE(p[1].set);
  EXPECT_EQ(p[2].node, 6u) << "our key with another value on a hot node is set to ours";
  EXPECT_TRUE(p[2].set);
}

TEST(Planner, SteadyStatePlansNothing) {
  std::vector<PlanNode> nodes = {{"a", true}, {"b", false}};
  std::vector<NodeDecision> d(2);
  d[0].verdict = Verdict::kHot;
  d[1].verdict = Verdict::kCold;
  EXPECT_TRUE(PlanChanges(nodes, d).empty());
}

TEST(Mark, OursOnlyWithOurValue) {
  Mark m;
  EXPECT_TRUE(m.IsOn({{"a", "b"}, {"status", "presure"}}));
  EXPECT_FALSE(m.IsOn({{"status", "maintenance"}})) << "a foreign value under our key";
  EXPECT_FALSE(m.IsOn({{"x", "presure"}}));
  EXPECT_FALSE(m.IsOn({}));
  Mark custom{"example.com/busy", "true"};
  EXPECT_TRUE(custom.IsOn({{"example.com/busy", "true"}}));
  EXPECT_FALSE(custom.IsOn({{"status", "presure"}}));
}

}  // namespace
}  // namespace ds
