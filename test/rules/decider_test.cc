#include "rules/decider.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test/fakes/fake_clock.h"

namespace ds {

// Lets gtest print a verdict by name in failure messages (found by ADL, so outside the
// anonymous namespace).
void PrintTo(Verdict v, std::ostream* os) {
  *os << (v == Verdict::kHot ? "Hot" : v == Verdict::kCold ? "Cold" : "Unknown");
}

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
    auto d = decider_.Decide(clock_.Now(), {NodeInput{"n1", labelled_, owners_}}, in);
    last_ = d[0];
    // Emulate the planner and API: the label follows hot/cold verdicts.
    if (d[0].verdict == Verdict::kHot) labelled_ = true;
    if (d[0].verdict == Verdict::kCold) labelled_ = false;
    return d[0].verdict;
  }
  void Rebase(std::vector<Rule> rules) { decider_.Rebase(std::move(rules), FromSeconds(30)); }
  bool labelled_ = false;
  const std::vector<size_t>* owners_ = nullptr;  // the node's ownership record, if any
  NodeDecision last_;

 private:
  FakeClock clock_;
  Decider decider_;
};

TEST(Decider, AReloadKeepsTheStateOfTheRulesItDidNotChange) {
  const Rule cpu = MakeRule("cpu", Comparison::kGreater, 80, 60, /*for_s=*/30);
  const Rule mem = MakeRule("mem", Comparison::kGreater, 90, 70, /*for_s=*/30);
  OneNode n({cpu, mem});
  EXPECT_EQ(n.Step({95, 10}), Verdict::kCold);
  EXPECT_EQ(n.Step({95, 10}), Verdict::kCold);  // cpu's `for`: 10 of 30 s
  // mem's threshold changes, and a new rule comes first; cpu is as it was.
  Rule mem2 = mem;
  mem2.threshold = 85;
  n.Rebase({MakeRule("disk", Comparison::kGreater, 95, 90), cpu, mem2});
  EXPECT_EQ(n.Step({0, 95, 10}), Verdict::kCold);
  EXPECT_EQ(n.Step({0, 95, 10}), Verdict::kHot) << "cpu's `for` went on, not from the reload";
  EXPECT_EQ(n.last_.holds.at(0).rule, 1u) << "the hold names cpu's new index";
}

TEST(Decider, AChangedRuleThatHeldTheNodeKeepsTheMarkWithoutANewFor) {
  const Rule cpu = MakeRule("cpu", Comparison::kGreater, 80, 60, /*for_s=*/60);
  OneNode n({cpu});
  for (int i = 0; i < 7; ++i) n.Step({95});
  ASSERT_EQ(n.last_.verdict, Verdict::kHot);
  Rule stricter = cpu;
  stricter.threshold = 90;
  stricter.clear_threshold = 75;
  n.Rebase({stricter});
  EXPECT_EQ(n.Step({85}), Verdict::kHot) << "in the new band: the mark stays, no 60 s `for`";
  EXPECT_EQ(n.Step({70}), Verdict::kCold) << "the new clear threshold lets go";
  // A rule that is removed takes its holds with it.
  for (int i = 0; i < 8; ++i) n.Step({95});
  ASSERT_EQ(n.last_.verdict, Verdict::kHot);
  n.Rebase({MakeRule("mem", Comparison::kGreater, 90, 70)});
  EXPECT_EQ(n.Step({10}), Verdict::kCold);
}

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

// One step of a single-rule scenario: the rule's value (or a failed query) `advance` seconds after
// the previous step, and the verdict expected then.
struct ForStep {
  double value;
  bool failed;
  Verdict want;
};

struct ForCase {
  const char* name;
  double for_s;
  double grace;
  std::vector<ForStep> steps;  // 10 s apart
};

// Prometheus keeps a pending alert across a failed rule evaluation, but resolves it when the
// series leaves a successful result. A query timeout must not restart a long `for`.
TEST(Decider, ForTimerSurvivesFailedQueryButNotAbsentSeries) {
  constexpr Verdict kH = Verdict::kHot, kC = Verdict::kCold, kU = Verdict::kUnknown;
  const std::vector<ForCase> cases = {
      {"a failed query keeps the timer",
       60,
       30,
       {{90, false, kC},  // t=10: pending since 10
        {kNone, true, kU},
        {kNone, true, kU},
        {90, false, kC},  // 30 s
        {90, false, kC},
        {90, false, kC},
        {90, false, kH}}},  // t=70: 60 s since 10
      {"failing for exactly the grace keeps the timer",
       60,
       30,
       {{90, false, kC},
        {kNone, true, kU},
        {kNone, true, kU},
        {kNone, true, kU},  // t=40: 30 s without a value, not over the grace
        {90, false, kC},
        {90, false, kC},
        {90, false, kH}}},
      {"failing for longer than the grace drops the timer",
       60,
       30,
       {{90, false, kC},
        {kNone, true, kU},
        {kNone, true, kU},
        {kNone, true, kU},
        {kNone, true, kU},  // t=50: 40 s > grace, state dropped
        {90, false, kC},    // t=60: pending again
        {90, false, kC},    // would be hot here had the timer survived
        {90, false, kC},
        {90, false, kC},
        {90, false, kC},
        {90, false, kC},
        {90, false, kH}}},  // t=120
      {"a series absent from a successful answer restarts the timer",
       60,
       30,
       {{90, false, kC},
        {kNone, false, kC},
        {90, false, kC},  // t=30: pending since 30
        {90, false, kC},
        {90, false, kC},
        {90, false, kC},
        {90, false, kC},  // t=70: hot here had the gap kept the timer
        {90, false, kC},
        {90, false, kH}}},  // t=90
  };
  for (const ForCase& c : cases) {
    SCOPED_TRACE(c.name);
    OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 80, c.for_s)}, c.grace);
    for (size_t i = 0; i < c.steps.size(); ++i) {
      const ForStep& s = c.steps[i];
      EXPECT_EQ(n.Step({s.value}, {s.failed}), s.want)
          << "step " << i << " (t=" << 10 * (i + 1) << ")";
    }
  }
}

struct EvidenceCase {
  const char* name;
  bool labelled;  // false: our label was removed by hand after the node turned hot
  std::vector<double> values;
  std::vector<bool> failed;
  Verdict want;
  bool want_stale;  // of the one hold (cpu) the decision carries
};

// "No label is added or removed while Prometheus is down": without a single successful query a
// stale hold must not re-add a label removed by hand. The hold is still reported, to say why.
TEST(Decider, NoEvidenceIsUnknownEvenWithStaleHolds) {
  const std::vector<EvidenceCase> cases = {
      {"every query failed, label kept",
       true,
       {kNone, kNone},
       {true, true},
       Verdict::kUnknown,
       true},
      {"every query failed, label removed by hand",
       false,
       {kNone, kNone},
       {true, true},
       Verdict::kUnknown,
       true},
      {"cpu failed, mem answered: the stale hold keeps it hot",
       false,
       {kNone, 10},
       {true, false},
       Verdict::kHot,
       true},
      {"cpu series absent from a successful answer: held through the grace",
       true,
       {kNone, 10},
       {false, false},
       Verdict::kHot,
       true},
      {"mem failed, cpu answered", true, {85, kNone}, {false, true}, Verdict::kHot, false},
  };
  for (const EvidenceCase& c : cases) {
    SCOPED_TRACE(c.name);
    OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60),
               MakeRule("mem", Comparison::kGreater, 90, 70)},
              30);
    ASSERT_EQ(n.Step({85, 10}), Verdict::kHot);
    n.labelled_ = c.labelled;
    EXPECT_EQ(n.Step(c.values, c.failed), c.want);
    ASSERT_EQ(n.last_.holds.size(), 1u);
    EXPECT_EQ(n.last_.holds[0].rule, 0u);
    EXPECT_EQ(n.last_.holds[0].value, 85);
    EXPECT_EQ(n.last_.holds[0].stale, c.want_stale);
  }
}

TEST(Decider, OneFailingRuleDoesNotStopOthers) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60),
             MakeRule("mem", Comparison::kGreater, 90, 70)});
  EXPECT_EQ(n.Step({kNone, 95}, {true, false}), Verdict::kHot);
  EXPECT_EQ(n.last_.holds[0].rule, 1u);
}

TEST(Decider, LabelledBeforeStartKeptUntilData) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60, /*for=*/60)}, 30);
  const std::vector<size_t> cpu = {0};
  n.labelled_ = true;  // labelled by a previous run of the controller, cpu held it
  n.owners_ = &cpu;
  EXPECT_EQ(n.Step({kNone}), Verdict::kUnknown) << "no data yet: do not remove";
  EXPECT_EQ(n.Step({70}), Verdict::kHot) << "in the band, and cpu held it: keep, no `for` wait";
}

TEST(Decider, WithoutARecordOnlyARuleOverItsThresholdAdopts) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60, /*for=*/60)}, 30);
  n.labelled_ = true;  // no record: set by an older version, or by hand
  EXPECT_EQ(n.Step({85}), Verdict::kHot) << "over the threshold: adopted without `for`";
  OneNode band({MakeRule("cpu", Comparison::kGreater, 80, 60, /*for=*/60)}, 30);
  band.labelled_ = true;
  EXPECT_EQ(band.Step({70}), Verdict::kCold) << "in the band: it may never have held the node";
}

// The review's case: cpu 80/70 marked the node; memory 85/75 sits at 80, inside its band. After a
// restart memory must not adopt the mark (it would hold it for ever): cpu, which held it, lets go.
TEST(Decider, ARuleThatDidNotHoldTheNodeDoesNotAdoptIt) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 70),
             MakeRule("mem", Comparison::kGreater, 85, 75)},
            30);
  const std::vector<size_t> cpu = {0};
  n.labelled_ = true;
  n.owners_ = &cpu;
  EXPECT_EQ(n.Step({65, 80}), Verdict::kCold);
  EXPECT_TRUE(n.last_.holds.empty());
}

// The review's failover case: memory held the mark; its series is briefly absent while cpu
// reports a low value. The mark stays until memory reports or its grace runs out.
TEST(Decider, AdoptionWaitsForEveryRecordedRule) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 70),
             MakeRule("mem", Comparison::kGreater, 85, 75)},
            30);
  const std::vector<size_t> mem = {1};
  n.labelled_ = true;
  n.owners_ = &mem;
  EXPECT_EQ(n.Step({20, kNone}), Verdict::kUnknown) << "cpu's low value proves nothing";
  EXPECT_EQ(n.Step({20, kNone}, {false, true}), Verdict::kUnknown) << "mem's query failed";
  EXPECT_EQ(n.Step({20, 80}), Verdict::kHot) << "mem reports in its band: adopted";
  ASSERT_EQ(n.last_.holds.size(), 1u);
  EXPECT_EQ(n.last_.holds[0].rule, 1u);

  OneNode late({MakeRule("cpu", Comparison::kGreater, 80, 70),
                MakeRule("mem", Comparison::kGreater, 85, 75)},
               30);
  late.labelled_ = true;
  late.owners_ = &mem;
  EXPECT_EQ(late.Step({20, kNone}, {}, 0), Verdict::kUnknown);
  EXPECT_EQ(late.Step({20, kNone}, {}, 30), Verdict::kUnknown) << "still within the grace";
  EXPECT_EQ(late.Step({20, kNone}, {}, 1), Verdict::kCold) << "mem never reported: grace ran out";
}

// Every query fails for longer than the grace (Prometheus down for minutes): the holds are
// dropped, but when data returns in the band the mark is kept, not removed and re-added.
TEST(Decider, AnOutageLongerThanTheGraceDoesNotFlapTheMark) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60, /*for=*/60),
             MakeRule("mem", Comparison::kGreater, 90, 70)},
            30);
  for (int i = 0; i < 7; ++i) n.Step({95, 10});
  ASSERT_TRUE(n.labelled_);
  for (int i = 0; i < 6; ++i)
    ASSERT_EQ(n.Step({kNone, kNone}, {true, true}), Verdict::kUnknown);  // 60 s down
  EXPECT_EQ(n.Step({70, 10}), Verdict::kHot) << "cpu held it and is still in its band";
  EXPECT_EQ(n.Step({50, 10}), Verdict::kCold) << "and lets go below its clear threshold";
  OneNode other({MakeRule("cpu", Comparison::kGreater, 80, 60),
                 MakeRule("mem", Comparison::kGreater, 90, 70)},
                30);
  for (int i = 0; i < 2; ++i) other.Step({95, 10});
  for (int i = 0; i < 6; ++i) other.Step({kNone, kNone}, {true, true});
  EXPECT_EQ(other.Step({10, 80}), Verdict::kCold) << "mem, in its band, never held the node";
}

// The review's case: restarted while Prometheus is down for longer than the grace. The wait for
// the recorded rule starts when queries answer again, so cpu (still over its threshold) keeps
// the mark instead of starting `for` from scratch on a node that is marked cold meanwhile.
TEST(Decider, ARestartDuringAnOutageStillAdoptsWhenDataReturns) {
  OneNode n({MakeRule("cpu", Comparison::kGreater, 80, 60, /*for=*/60)}, 30);
  const std::vector<size_t> cpu = {0};
  n.labelled_ = true;
  n.owners_ = &cpu;
  for (int i = 0; i < 6; ++i) ASSERT_EQ(n.Step({kNone}, {true}), Verdict::kUnknown);  // 60 s
  EXPECT_EQ(n.Step({95}), Verdict::kHot);
  OneNode absent({MakeRule("cpu", Comparison::kGreater, 80, 60, 60),
                  MakeRule("mem", Comparison::kGreater, 90, 70)},
                 30);
  absent.labelled_ = true;
  absent.owners_ = &cpu;
  for (int i = 0; i < 6; ++i) absent.Step({kNone, kNone}, {true, true});
  EXPECT_EQ(absent.Step({kNone, 10}), Verdict::kUnknown) << "the wait starts now";
  EXPECT_EQ(absent.Step({kNone, 10}, {}, 31), Verdict::kCold) << "and ends after the grace";
}

TEST(Decider, ARecordNamingNoCurrentRuleAdoptsByTheThreshold) {
  const std::vector<size_t> none;  // the record names a rule since renamed or removed
  OneNode over({MakeRule("cpu2", Comparison::kGreater, 80, 60, /*for=*/60)}, 30);
  over.labelled_ = true;
  over.owners_ = &none;
  EXPECT_EQ(over.Step({95}), Verdict::kHot) << "over the threshold: kept, as without a record";
  OneNode band({MakeRule("cpu2", Comparison::kGreater, 80, 60, 60)}, 30);
  band.labelled_ = true;
  band.owners_ = &none;
  EXPECT_EQ(band.Step({70}), Verdict::kCold);
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

// Decide remembers each position's state from the last cycle (a speed-up for a node list that
// rarely changes); a list in another order, shorter, or after Reset must still find each node's
// own.
TEST(Decider, EachNodeKeepsItsOwnStateWhenTheListChanges) {
  Decider d({MakeRule("cpu", Comparison::kGreater, 80, 60, /*for_s=*/20)}, FromSeconds(30));
  FakeClock clock;
  std::vector<double> ab{90, 10};
  d.Decide(clock.Now(), {NodeInput{"a", false}, NodeInput{"b", false}}, {RuleInput{false, &ab}});
  clock.AdvanceSeconds(10);
  std::vector<double> ba{90, 90};  // b goes over only now; a has been over for 10 s
  d.Decide(clock.Now(), {NodeInput{"b", false}, NodeInput{"a", false}}, {RuleInput{false, &ba}});
  clock.AdvanceSeconds(10);
  auto out = d.Decide(clock.Now(), {NodeInput{"b", false}, NodeInput{"a", false}},
                      {RuleInput{false, &ba}});
  EXPECT_EQ(out[0].verdict, Verdict::kCold);  // b: over for 10 s of 20
  EXPECT_EQ(out[1].verdict, Verdict::kHot);   // a: over for 20 s
  std::vector<double> just_b{90};
  clock.AdvanceSeconds(10);
  out = d.Decide(clock.Now(), {NodeInput{"b", false}}, {RuleInput{false, &just_b}});
  EXPECT_EQ(out[0].verdict, Verdict::kHot);  // b: over for 20 s, at position 0 of a shorter list
  d.Reset();
  out = d.Decide(clock.Now(), {NodeInput{"b", false}}, {RuleInput{false, &just_b}});
  EXPECT_EQ(out[0].verdict, Verdict::kCold);  // forgotten: `for` starts again
  EXPECT_EQ(d.tracked_nodes(), 1u);
}

// --- relativeTo: mean ---

Rule Relative(Comparison op, double offset, double clear_offset, double for_s = 0,
              size_t min_nodes = 3) {
  Rule r = MakeRule("skew", op, offset, clear_offset, for_s);
  r.relative_to = Rule::Relative::kMean;
  r.min_nodes = min_nodes;
  return r;
}

struct ThresholdCase {
  const char* name;
  Rule rule;
  std::vector<double> values;  // empty with `no_values`: the query failed
  bool no_values;
  bool known;
  double mean, threshold, clear;
  size_t count;
};

TEST(Decider, EffectiveThresholdsAreOffsetsFromTheMean) {
  const double inf = std::numeric_limits<double>::infinity();
  const ThresholdCase cases[] = {
      {"greater: mean + offsets",
       Relative(Comparison::kGreater, 20, 10),
       {40, 50, 60},
       false,
       true,
       50,
       70,
       60,
       3},
      {"less: mean - offsets",
       Relative(Comparison::kLess, 20, 10),
       {40, 50, 60},
       false,
       true,
       50,
       30,
       40,
       3},
      {"NaN and infinities are left out of the mean",
       Relative(Comparison::kGreater, 5, 5),
       {10, kNone, 20, inf, -inf, 30},
       false,
       true,
       20,
       25,
       25,
       3},
      {"fewer than minNodes values: unknown",
       Relative(Comparison::kGreater, 20, 10),
       {40, kNone, 60},
       false,
       false,
       0,
       20,
       10,
       2},
      {"minNodes 2 is enough with two",
       Relative(Comparison::kGreater, 20, 10, 0, 2),
       {40, kNone, 60},
       false,
       true,
       50,
       70,
       60,
       2},
      {"a failed query: unknown",
       Relative(Comparison::kGreater, 20, 10),
       {},
       true,
       false,
       0,
       20,
       10,
       0},
      {"an absolute rule keeps its own",
       MakeRule("cpu", Comparison::kGreater, 80, 70),
       {40, 50, 60},
       false,
       true,
       0,
       80,
       70,
       0},
  };
  for (const ThresholdCase& c : cases) {
    SCOPED_TRACE(c.name);
    const EffectiveThresholds t = ComputeThresholds(c.rule, c.no_values ? nullptr : &c.values);
    EXPECT_EQ(t.known, c.known);
    EXPECT_EQ(t.count, c.count);
    if (!c.known) continue;
    EXPECT_DOUBLE_EQ(t.mean, c.mean);
    EXPECT_DOUBLE_EQ(t.threshold, c.threshold);
    EXPECT_DOUBLE_EQ(t.clear_threshold, c.clear);
  }
}

// Drives a Decider over several nodes and one rule; the mark follows the verdicts.
class Cluster {
 public:
  Cluster(Rule rule, size_t nodes, double grace = 30)
      : decider_({std::move(rule)}, FromSeconds(grace)), labelled_(nodes, false) {
    for (size_t i = 0; i < nodes; ++i) names_.push_back("n" + std::to_string(i));
  }
  std::vector<Verdict> Step(std::vector<double> values, bool failed = false) {
    clock_.AdvanceSeconds(10);
    std::vector<NodeInput> nodes;
    for (size_t i = 0; i < names_.size(); ++i)
      nodes.push_back(NodeInput{names_[i], labelled_[i], nullptr});
    last_ = decider_.Decide(clock_.Now(), nodes, {RuleInput{failed, failed ? nullptr : &values}});
    std::vector<Verdict> out;
    for (size_t i = 0; i < last_.size(); ++i) {
      if (last_[i].verdict == Verdict::kHot) labelled_[i] = true;
      if (last_[i].verdict == Verdict::kCold) labelled_[i] = false;
      out.push_back(last_[i].verdict);
    }
    return out;
  }
  const Decider& decider() const { return decider_; }
  std::vector<NodeDecision> last_;

 private:
  FakeClock clock_;
  Decider decider_;
  std::vector<std::string> names_;
  std::vector<bool> labelled_;
};

constexpr Verdict kH = Verdict::kHot, kC = Verdict::kCold, kU = Verdict::kUnknown;

TEST(Decider, ARelativeRuleMarksTheNodeThatStandsOutNotAUniformlyHotCluster) {
  // Mean 55 + 20 = 75: the node at 85 stands out.
  Cluster skewed(Relative(Comparison::kGreater, 20, 10), 4);
  EXPECT_EQ(skewed.Step({85, 45, 45, 45}), (std::vector<Verdict>{kH, kC, kC, kC}));
  ASSERT_EQ(skewed.last_[0].holds.size(), 1u);
  EXPECT_DOUBLE_EQ(skewed.last_[0].holds[0].threshold, 75) << "the effective threshold";
  EXPECT_DOUBLE_EQ(skewed.last_[0].holds[0].clear_threshold, 65);
  EXPECT_DOUBLE_EQ(skewed.decider().thresholds().at(0).mean, 55);
  // The same 85 everywhere: nobody is above the mean.
  Cluster uniform(Relative(Comparison::kGreater, 20, 10), 4);
  EXPECT_EQ(uniform.Step({85, 85, 85, 85}), (std::vector<Verdict>{kC, kC, kC, kC}));
}

TEST(Decider, ARelativeLessRuleMarksTheNodeFarBelowTheMean) {
  // memory available: mean 700 - 200 = 500.
  Cluster c(Relative(Comparison::kLess, 200, 100), 4);
  EXPECT_EQ(c.Step({400, 800, 800, 800}), (std::vector<Verdict>{kH, kC, kC, kC}));
  // Mean 712.5, clears at >= 612.5: 550 is in the band, held.
  EXPECT_EQ(c.Step({550, 800, 800, 700}), (std::vector<Verdict>{kH, kC, kC, kC}));
  // Mean 737.5, clears at >= 637.5.
  EXPECT_EQ(c.Step({650, 800, 800, 700}), (std::vector<Verdict>{kC, kC, kC, kC}));
}

TEST(Decider, HysteresisAndForWorkOnTheEffectiveThresholds) {
  Cluster c(Relative(Comparison::kGreater, 20, 10, /*for_s=*/20), 4);
  // Mean 55, over at > 75: `for` 20 s starts.
  EXPECT_EQ(c.Step({85, 45, 45, 45}), (std::vector<Verdict>{kC, kC, kC, kC}));
  EXPECT_EQ(c.Step({85, 45, 45, 45}), (std::vector<Verdict>{kC, kC, kC, kC}));
  EXPECT_EQ(c.Step({85, 45, 45, 45}), (std::vector<Verdict>{kH, kC, kC, kC}));
  // Mean 50: over at > 70, clears at <= 60; 68 is in the band: held.
  EXPECT_EQ(c.Step({68, 44, 44, 44}), (std::vector<Verdict>{kH, kC, kC, kC}));
  // The node has not changed, but the cluster caught up: mean 65.5, clears at <= 75.5.
  EXPECT_EQ(c.Step({68, 65, 65, 64}), (std::vector<Verdict>{kC, kC, kC, kC}));
}

TEST(Decider, TooFewValuesForAMeanIsNoEvidenceAndKeepsTheMarks) {
  Cluster c(Relative(Comparison::kGreater, 20, 10), 4, /*grace=*/30);
  EXPECT_EQ(c.Step({85, 45, 45, 45}), (std::vector<Verdict>{kH, kC, kC, kC}));
  // Only two nodes report (fewer than minNodes 3): no verdict at all, the mark stays, and the
  // hold is kept, stale, as for a failed query.
  EXPECT_EQ(c.Step({85, 10, kNone, kNone}), (std::vector<Verdict>{kU, kU, kU, kU}));
  ASSERT_EQ(c.last_[0].holds.size(), 1u);
  EXPECT_TRUE(c.last_[0].holds[0].stale);
  EXPECT_FALSE(c.decider().thresholds().at(0).known);
  EXPECT_EQ(c.decider().thresholds().at(0).count, 2u);
  // Back to four: judged again, without a new `for` being needed for the hold.
  EXPECT_EQ(c.Step({85, 45, 45, 45}), (std::vector<Verdict>{kH, kC, kC, kC}));
}

TEST(Decider, NodesWithoutAValueAreLeftOutOfTheMean) {
  // With the silent node counted as 0, the mean would be 47 and 70 would stand 23 over it.
  Cluster c(Relative(Comparison::kGreater, 20, 20), 5);
  EXPECT_EQ(c.Step({70, 55, 55, 55, kNone}), (std::vector<Verdict>{kC, kC, kC, kC, kC}))
      << "mean 58.75: 70 is not 20 over it";
}

TEST(Decider, AReloadThatMakesARuleRelativeStartsItAfresh) {
  // The fixed rule holds node 0 at 85 > 80. Made relative (mean 70 + 20 = 90), its mark is kept
  // without a new `for` while the value is in the new band, then judged by the mean.
  Rule fixed = MakeRule("skew", Comparison::kGreater, 80, 60, /*for_s=*/60);
  Rule relative = Relative(Comparison::kGreater, 20, 10, /*for_s=*/60);
  EXPECT_FALSE(fixed == relative) << "a changed rule, not the same one";
  Decider d({fixed}, FromSeconds(30));
  FakeClock clock;
  std::vector<double> v{85, 65, 65, 65};
  std::vector<NodeInput> nodes = {NodeInput{"a", false}, NodeInput{"b", false},
                                  NodeInput{"c", false}, NodeInput{"d", false}};
  d.Decide(clock.Now(), nodes, {RuleInput{false, &v}});
  clock.AdvanceSeconds(60);
  EXPECT_EQ(d.Decide(clock.Now(), nodes, {RuleInput{false, &v}})[0].verdict, Verdict::kHot);
  nodes[0].labelled = true;
  d.Rebase({relative}, FromSeconds(30));
  clock.AdvanceSeconds(10);
  auto out = d.Decide(clock.Now(), nodes, {RuleInput{false, &v}});
  EXPECT_EQ(out[0].verdict, Verdict::kHot) << "85 is in the band (80, 90]: the mark is kept";
  EXPECT_DOUBLE_EQ(out[0].holds.at(0).threshold, 90);
  v = {78, 65, 65, 65};  // mean 68.25: clears at <= 78.25
  clock.AdvanceSeconds(10);
  EXPECT_EQ(d.Decide(clock.Now(), nodes, {RuleInput{false, &v}})[0].verdict, Verdict::kCold);
}

}  // namespace
}  // namespace ds
