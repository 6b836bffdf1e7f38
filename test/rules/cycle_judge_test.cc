#include "rules/cycle_judge.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/fakes/fake_clock.h"

namespace ds {
namespace {

Rule Cpu() {
  Rule r;
  r.name = "cpu";
  r.query = "cpu";
  r.threshold = 80;
  r.clear_threshold = 60;
  return r;
}

// One rule, cpu > 80 (clear 60), three nodes; the cycle's evidence is one value per node;
// onPrometheusDown: release after 60 s.
class Judging : public ::testing::Test {
 protected:
  Judging() : judge_({Cpu()}, FromSeconds(30), HerdCap{1.0, 0}, OutagePolicy{true, 60}) {}
  // A cycle 10 s after the last on `values` (empty: the query failed); the marks follow the
  // planned changes, as a writer that never fails would leave them.
  CycleJudgement Cycle(std::vector<double> values, const CycleJudge::Hold& hold = {}) {
    clock_.AdvanceSeconds(10);
    std::vector<NodeInput> nodes;
    std::vector<PlanNode> plan;
    for (size_t i = 0; i < kNames.size(); ++i) {
      nodes.push_back(NodeInput{kNames[i], marked_[i], nullptr});
      plan.push_back(PlanNode{kNames[i], marked_[i], marked_[i], nullptr, false, 0});
    }
    const bool failed = values.empty();
    std::vector<RuleInput> in{RuleInput{failed, failed ? nullptr : &values, nullptr}};
    CycleJudgement j = judge_.Judge(clock_.Now(), nodes, plan, in, failed, hold);
    for (const LabelChange& c : j.changes) {
      if (c.kind == ChangeKind::kMark) marked_[c.node] = true;
      if (c.kind == ChangeKind::kUnmark) marked_[c.node] = false;
    }
    return j;
  }
  const std::vector<std::string> kNames{"a", "b", "c"};
  std::vector<bool> marked_ = std::vector<bool>(3, false);
  FakeClock clock_;
  CycleJudge judge_;
};

TEST_F(Judging, TheHoldKeepsAMarkTheDeciderWouldTakeOffAndColdStillSaysTheLoad) {
  Cycle({90, 20, 20});
  ASSERT_TRUE(marked_[0]);
  const CycleJudgement j = Cycle({30, 20, 20}, [](std::vector<NodeDecision>* d) {
    (*d)[0].verdict = Verdict::kUnknown;  // the rebalancer is relieving node a
  });
  EXPECT_TRUE(marked_[0]) << "the held node lost its mark";
  EXPECT_TRUE(j.changes.empty());
  EXPECT_TRUE(j.cold[0]) << "cold is the decider's verdict, before the hold";
  EXPECT_EQ(j.decisions[0].verdict, Verdict::kUnknown);
}

TEST_F(Judging, AnOutageReleaseTakesTheMarksOffAndTheHoldIsNotAsked) {
  Cycle({90, 95, 20});
  ASSERT_TRUE(marked_[0] && marked_[1]);
  bool asked = false;
  auto hold = [&](std::vector<NodeDecision>* d) {
    asked = true;
    for (NodeDecision& x : *d) x.verdict = Verdict::kUnknown;
  };
  for (int k = 0; k < 6; ++k) EXPECT_FALSE(Cycle({}, hold).releasing) << k;  // 60 s: not yet
  asked = false;
  const CycleJudgement j = Cycle({}, hold);
  EXPECT_TRUE(j.releasing);
  EXPECT_EQ(j.released, 3u);
  EXPECT_DOUBLE_EQ(j.outage_seconds, 60);
  EXPECT_FALSE(asked) << "a release is the operator's choice: the rebalancer holds nothing";
  EXPECT_FALSE(marked_[0] || marked_[1]);
}

TEST_F(Judging, TheHerdCapCountsTheNodesTheHoldKeeps) {
  judge_.Rebase(judge_.decider().rules(), FromSeconds(30), HerdCap{0.5, 1}, OutagePolicy{true, 60});
  Cycle({90, 20, 20});
  ASSERT_TRUE(marked_[0]);
  // Node a has cooled but is held; node b turns hot: the one place is a's.
  const CycleJudgement j = Cycle(
      {30, 95, 20}, [](std::vector<NodeDecision>* d) { (*d)[0].verdict = Verdict::kUnknown; });
  EXPECT_TRUE(marked_[0]);
  EXPECT_FALSE(marked_[1]);
  ASSERT_EQ(j.cap.capped.size(), 1u);
  EXPECT_EQ(j.cap.capped[0], 1u);
}

}  // namespace
}  // namespace ds
