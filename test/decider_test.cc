#include "rules/decider.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test/fakes/fake_clock.h"

namespace ds {
namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

Rule MakeRule(const std::string& name, Comparison op, double threshold, double clear,
              double for_s = 0) {
  Rule r;
  r.name = name;
  r.query = name;
  r.op = op;
  r.threshold = threshold;
  r.clear_threshold = clear;
  r.for_seconds = for_s;
  return r;
}

// Drives a Decider over one node with a fake clock, one step per "interval".
class OneNode {
 public:
  OneNode(std::vector<Rule> rules, double grace = 30)
      : decider_(std::move(rules), FromSeconds(grace)) {}
  // values: one per rule; NaN = no sample; failed[i] = query i failed.
  Verdict Step(std::vector<double> values, std::vector<bool> failed = {}, double advance = 10) {
    clock_.AdvanceSeconds(advance);
    std::vector<std::vector<double>> cols;
    for (double v : values) cols.push_back({v});
    std::vector<RuleInput> in(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      bool f = i < failed.size() && failed[i];
      in[i] = RuleInput{f, f ? nullptr : &cols[i]};
    }
    auto d = decider_.Decide(clock_.Now(), {NodeInput{"n1", labelled_}}, in);
    last_ = d[0];
    // Emulate the planner and API: the label follows hot/cold verdicts.
    if (d[0].verdict == Verdict::kHot) labelled_ = true;
    if (d[0].verdict == Verdict::kCold) labelled_ = false;
    return d[0].verdict;
  }
  bool labelled_ = false;
  NodeDecision last_;

 private:
  FakeClock clock_;
  Decider decider_;
};

TEST(Decider, ThresholdAndHysteresisGreater) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60)});
  EXPECT_EQ(n.Step({50}), Verdict::kCold);
  EXPECT_EQ(n.Step({85}), Verdict::kHot);
  EXPECT_EQ(n.last_.holds.size(), 1u);
  EXPECT_EQ(n.last_.holds[0].value, 85);
  EXPECT_EQ(n.Step({70}), Verdict::kHot) << "inside the band the node stays hot";
  EXPECT_EQ(n.Step({60}), Verdict::kCold) << "at the clear threshold it leaves";
  EXPECT_EQ(n.Step({70}), Verdict::kCold) << "inside the band a cold node stays cold";
  EXPECT_EQ(n.Step({80}), Verdict::kCold) << "equal to the threshold is not over it";
  EXPECT_EQ(n.Step({80.5}), Verdict::kHot);
}

TEST(Decider, LessOperatorForMemoryAvailable) {
  OneNode n({MakeRule("mem", Comparison::kLess, 500, 800)});
  EXPECT_EQ(n.Step({1000}), Verdict::kCold);
  EXPECT_EQ(n.Step({400}), Verdict::kHot);
  EXPECT_EQ(n.Step({700}), Verdict::kHot);
  EXPECT_EQ(n.Step({800}), Verdict::kCold);
}

TEST(Decider, ForDurationMustHold) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 80, /*for=*/25)});
  EXPECT_EQ(n.Step({90}), Verdict::kCold);  // t=0 of the condition
  EXPECT_EQ(n.Step({90}), Verdict::kCold);  // 10 s
  EXPECT_EQ(n.Step({50}), Verdict::kCold);  // broken: restarts
  EXPECT_EQ(n.Step({90}), Verdict::kCold);
  EXPECT_EQ(n.Step({90}), Verdict::kCold);  // 10 s
  EXPECT_EQ(n.Step({90}), Verdict::kCold);  // 20 s
  EXPECT_EQ(n.Step({90}), Verdict::kHot);   // 30 s >= 25 s
}

TEST(Decider, AnyRuleHoldsAndAllMustClear) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60),
             MakeRule("mem", Comparison::kGreater, 90, 70)});
  EXPECT_EQ(n.Step({85, 50}), Verdict::kHot);
  EXPECT_EQ(n.Step({85, 95}), Verdict::kHot);
  EXPECT_EQ(n.last_.holds.size(), 2u);
  EXPECT_EQ(n.Step({50, 95}), Verdict::kHot) << "cpu cleared, mem still holds";
  EXPECT_EQ(n.last_.holds.size(), 1u);
  EXPECT_EQ(n.last_.holds[0].rule, 1u);
  EXPECT_EQ(n.Step({50, 75}), Verdict::kHot) << "mem in its band";
  EXPECT_EQ(n.Step({50, 70}), Verdict::kCold);
}

TEST(Decider, MissingDataKeepsVerdictForGraceThenDrops) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60),
             MakeRule("mem", Comparison::kGreater, 90, 70)},
            30);
  EXPECT_EQ(n.Step({85, 10}), Verdict::kHot);
  EXPECT_EQ(n.Step({kNone, 10}), Verdict::kHot);  // 10 s without cpu data
  EXPECT_TRUE(n.last_.holds[0].stale);
  EXPECT_EQ(n.Step({kNone, 10}), Verdict::kHot);  // 20 s
  EXPECT_EQ(n.Step({kNone, 10}), Verdict::kHot);  // 30 s: still within grace
  EXPECT_EQ(n.Step({kNone, 10}), Verdict::kCold) << "40 s > grace: the verdict is dropped";
}

TEST(Decider, NaNIsMissingNotCold) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60)});
  EXPECT_EQ(n.Step({85}), Verdict::kHot);
  EXPECT_EQ(n.Step({std::nan("")}), Verdict::kHot);
}

TEST(Decider, InfinityCounts) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60)});
  EXPECT_EQ(n.Step({INFINITY}), Verdict::kHot);
  EXPECT_EQ(n.Step({-INFINITY}), Verdict::kCold);
}

TEST(Decider, AllQueriesFailingIsUnknownNeverCold) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60)}, 30);
  EXPECT_EQ(n.Step({85}), Verdict::kHot);
  for (int i = 0; i < 10; ++i) {
    Verdict v = n.Step({kNone}, {true});
    EXPECT_NE(v, Verdict::kCold) << "step " << i << ": an outage must never remove labels";
  }
  EXPECT_TRUE(n.labelled_);
  // Prometheus is back and the node is still hot: it keeps its label without `for` or flapping.
  EXPECT_EQ(n.Step({85}), Verdict::kHot);
}

TEST(Decider, OneFailingRuleDoesNotStopOthers) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60),
             MakeRule("mem", Comparison::kGreater, 90, 70)});
  EXPECT_EQ(n.Step({kNone, 95}, {true, false}), Verdict::kHot);
  EXPECT_EQ(n.last_.holds[0].rule, 1u);
}

TEST(Decider, LabelledBeforeStartKeptUntilData) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60, /*for=*/60)}, 30);
  n.labelled_ = true;  // labelled by a previous run of the controller
  EXPECT_EQ(n.Step({kNone}), Verdict::kUnknown) << "no data yet: do not remove";
  EXPECT_EQ(n.Step({70}), Verdict::kHot) << "in the band and already labelled: keep, no `for` wait";
}

TEST(Decider, LabelledBeforeStartRemovedWhenDataSaysCold) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60)}, 30);
  n.labelled_ = true;
  EXPECT_EQ(n.Step({20}), Verdict::kCold);
}

TEST(Decider, LabelledBeforeStartWithoutAnyDataDroppedAfterGrace) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60)}, 30);
  n.labelled_ = true;
  EXPECT_EQ(n.Step({kNone}, {}, 0), Verdict::kUnknown);
  EXPECT_EQ(n.Step({kNone}, {}, 20), Verdict::kUnknown);
  EXPECT_EQ(n.Step({kNone}, {}, 20), Verdict::kCold);
}

TEST(Decider, ForgetsNodesThatLeave) {
  Decider d({MakeRule("cpu", Comparison::kGreater, 80, 60)}, FromSeconds(30));
  FakeClock clock;
  std::vector<double> v{90, 90};
  d.Decide(clock.Now(), {NodeInput{"a", false}, NodeInput{"b", false}}, {RuleInput{false, &v}});
  EXPECT_EQ(d.tracked_nodes(), 2u);
  std::vector<double> v1{90};
  d.Decide(clock.Now(), {NodeInput{"a", false}}, {RuleInput{false, &v1}});
  EXPECT_EQ(d.tracked_nodes(), 1u);
}

}  // namespace
}  // namespace ds
