#include "rules/planner.h"

#include <gtest/gtest.h>

namespace ds {
namespace {

TEST(Planner, OnlyChangesAndOnlyOurs) {
  std::string ours = "presure", foreign = "maintenance";
  std::vector<PlanNode> nodes = {
      {"hot-unlabelled", nullptr}, {"hot-labelled", &ours},     {"cold-labelled", &ours},
      {"cold-clean", nullptr},     {"cold-foreign", &foreign},  {"unknown-labelled", &ours},
      {"hot-foreign", &foreign}};
  std::vector<NodeDecision> d(7);
  d[0].verdict = d[1].verdict = d[6].verdict = Verdict::kHot;
  d[2].verdict = d[3].verdict = d[4].verdict = Verdict::kCold;
  d[5].verdict = Verdict::kUnknown;
  Plan p = PlanChanges(nodes, d, PlanOptions{ours, 0});
  ASSERT_EQ(p.changes.size(), 3u);
  EXPECT_EQ(p.changes[0].node, 0u);
  EXPECT_TRUE(p.changes[0].set);
  EXPECT_EQ(p.changes[1].node, 2u);
  EXPECT_FALSE(p.changes[1].set);
  EXPECT_EQ(p.changes[2].node, 6u) << "our key with another value on a hot node is set to ours";
  EXPECT_TRUE(p.changes[2].set);
}

TEST(Planner, SteadyStatePlansNothing) {
  std::string ours = "presure";
  std::vector<PlanNode> nodes = {{"a", &ours}, {"b", nullptr}};
  std::vector<NodeDecision> d(2);
  d[0].verdict = Verdict::kHot;
  d[1].verdict = Verdict::kCold;
  EXPECT_TRUE(PlanChanges(nodes, d, PlanOptions{ours, 0}).changes.empty());
}

TEST(Planner, WriteBudgetDefersTheRest) {
  std::vector<PlanNode> nodes(10, PlanNode{"n", nullptr});
  std::vector<NodeDecision> d(10);
  for (auto& x : d) x.verdict = Verdict::kHot;
  Plan p = PlanChanges(nodes, d, PlanOptions{"presure", 4});
  EXPECT_EQ(p.changes.size(), 4u);
  EXPECT_EQ(p.deferred, 6u);
}

}  // namespace
}  // namespace ds
