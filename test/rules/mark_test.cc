// The mark's pure parts: which nodes carry it, and the taint list edit of taint mode (ours added
// or removed, every other taint kept in its place, idempotent), with the ownership record that
// names the taint.
#include "rules/mark.h"

#include <gtest/gtest.h>

#include "rules/ownership.h"
#include "rules/planner.h"

namespace ds {
namespace {

Mark TaintMark(Mark::Mode mode = Mark::Mode::kTaint) {
  Mark m;
  m.mode = mode;
  m.taint = {"example.com/hot", "yes", "PreferNoSchedule"};
  return m;
}

const Taint kOurs{"example.com/hot", "yes", "PreferNoSchedule"};
const Taint kGpu{"nvidia.com/gpu", "present", "NoSchedule"};
const Taint kCordon{"node.kubernetes.io/unschedulable", "", "NoSchedule"};

TEST(MarkTaint, AddsOursAndKeepsEveryOtherTaintInItsPlace) {
  const Mark m = TaintMark();
  EXPECT_EQ(m.WithTaint({}), std::vector<Taint>{kOurs});
  EXPECT_EQ(m.WithTaint({kGpu, kCordon}), (std::vector<Taint>{kGpu, kCordon, kOurs}));
  EXPECT_EQ(m.WithTaint({kGpu, kOurs, kCordon}), (std::vector<Taint>{kGpu, kOurs, kCordon}))
      << "idempotent: already there, nothing added";
  EXPECT_EQ(m.WithTaint(m.WithTaint({kGpu})), m.WithTaint({kGpu}));
}

TEST(MarkTaint, OurKeyWithAnotherEffectIsAnotherTaint) {
  const Mark m = TaintMark();
  const Taint no_schedule{"example.com/hot", "yes", "NoSchedule"};
  EXPECT_EQ(m.WithTaint({no_schedule}), (std::vector<Taint>{no_schedule, kOurs}));
  EXPECT_EQ(m.WithoutTaint({no_schedule, kOurs}), std::vector<Taint>{no_schedule});
  EXPECT_FALSE(m.TaintOn({no_schedule}));
}

TEST(MarkTaint, AForeignValueUnderOurKeyAndEffectIsNeverRemovedButAHotNodeGetsOurs) {
  const Mark m = TaintMark();
  const Taint foreign{"example.com/hot", "maintenance", "PreferNoSchedule"};
  EXPECT_FALSE(m.TaintOn({foreign}));
  EXPECT_EQ(m.WithoutTaint({kGpu, foreign}), (std::vector<Taint>{kGpu, foreign}));
  // One taint per key and effect: ours takes its place (as our label value over a foreign one).
  EXPECT_EQ(m.WithTaint({foreign, kGpu}), (std::vector<Taint>{kOurs, kGpu}));
}

TEST(MarkTaint, RemovesOnlyOurs) {
  const Mark m = TaintMark();
  EXPECT_EQ(m.WithoutTaint({kGpu, kOurs, kCordon}), (std::vector<Taint>{kGpu, kCordon}));
  EXPECT_EQ(m.WithoutTaint({kGpu}), std::vector<Taint>{kGpu});
  EXPECT_TRUE(m.WithoutTaint({kOurs}).empty());
}

TEST(MarkTaint, WhatCountsAsMarkedFollowsTheMode) {
  const Labels ours_label = {{"status", "presure"}};
  const std::vector<Taint> ours_taint = {kGpu, kOurs};
  Mark label;
  EXPECT_TRUE(label.IsOn(ours_label, {}));
  EXPECT_FALSE(label.IsOn({}, ours_taint)) << "label mode ignores taints";
  const Mark taint = TaintMark();
  EXPECT_TRUE(taint.IsOn({}, ours_taint));
  EXPECT_FALSE(taint.IsOn(ours_label, {kGpu}));
  EXPECT_FALSE(taint.PartlyOn(ours_label, {})) << "taint mode ignores the label";
  const Mark both = TaintMark(Mark::Mode::kBoth);
  EXPECT_TRUE(both.IsOn(ours_label, ours_taint));
  EXPECT_FALSE(both.IsOn(ours_label, {kGpu}));
  EXPECT_TRUE(both.PartlyOn(ours_label, {kGpu}));
  EXPECT_TRUE(both.PartlyOn({}, ours_taint));
  EXPECT_FALSE(both.PartlyOn({{"status", "maintenance"}}, {kGpu}));
  EXPECT_EQ(both.ToString(), "status=presure and taint example.com/hot=yes:PreferNoSchedule");
}

// With mark `both`, a node that lost one half (the taint removed by hand) is whole again when
// hot, and loses the other half when cold.
TEST(MarkTaint, APartMarkIsCompletedWhenHotAndRemovedWhenCold) {
  std::vector<PlanNode> nodes = {{"hot", false, false, nullptr, true},
                                 {"cold", false, false, nullptr, true}};
  std::vector<NodeDecision> d(2);
  d[0].verdict = Verdict::kHot;
  d[1].verdict = Verdict::kCold;
  auto changes = PlanChanges(nodes, d);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].kind, ChangeKind::kMark);
  EXPECT_EQ(changes[1].kind, ChangeKind::kUnmark);
}

TEST(MarkTaint, TheRecordNamesTheTaintAndRoundTrips) {
  const Mark taint = TaintMark();
  Ownership o;
  SetRecordedMark(taint, &o);
  o.rules = {OwnerRule{"cpu", 1795435200}};
  const std::string text = FormatOwnership(o);
  EXPECT_EQ(text.find("\"label\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"taint\":{\"key\":\"example.com/hot\",\"value\":\"yes\","
                      "\"effect\":\"PreferNoSchedule\"}"),
            std::string::npos)
      << text;
  auto back = ParseOwnership(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, o);
  EXPECT_TRUE(RecordNamesMark(*back, taint));
  EXPECT_FALSE(RecordNamesMark(*back, Mark{})) << "a label mode controller does not own it";
  EXPECT_FALSE(RecordNamesMark(*back, TaintMark(Mark::Mode::kBoth)));
  Mark other = taint;
  other.taint.value = "no";
  EXPECT_FALSE(RecordNamesMark(*back, other));

  Ownership both;
  SetRecordedMark(TaintMark(Mark::Mode::kBoth), &both);
  auto both_back = ParseOwnership(FormatOwnership(both));
  ASSERT_TRUE(both_back.ok());
  EXPECT_EQ(both_back->label_key, "status");
  EXPECT_EQ(both_back->taint, kOurs);
  // A label mode record is what it always was: no "taint".
  Ownership label;
  SetRecordedMark(Mark{}, &label);
  EXPECT_EQ(FormatOwnership(label), "{\"label\":\"status\",\"value\":\"presure\",\"rules\":[]}");

  EXPECT_FALSE(ParseOwnership("{\"rules\":[]}").ok()) << "neither label nor taint";
  EXPECT_FALSE(ParseOwnership("{\"taint\":{\"key\":\"k\"},\"rules\":[]}").ok());
  EXPECT_FALSE(ParseOwnership("{\"taint\":\"k=v\",\"rules\":[]}").ok());
}

}  // namespace
}  // namespace ds
