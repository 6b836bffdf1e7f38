// -cleanup removes what is ours, keeps what is not, and says what it did.
#include "app/cleanup.h"

#include <gtest/gtest.h>

#include <sstream>

#include "controller/eviction_records.h"
#include "rules/ownership.h"
#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_kube_api.h"

namespace ds {
namespace {

NodeInfo Node(const std::string& name, Labels labels, const std::string& record = "") {
  NodeInfo n;
  n.name = name;
  n.labels = std::move(labels);
  if (!record.empty()) n.annotations = {{kHeldByAnnotation, record}};
  return n;
}

std::string RecordOf(const std::string& key, const std::string& value) {
  return FormatOwnership(Ownership{key, value, {{"cpu", 1795435200}}});
}

TEST(Cleanup, RemovesOursKeepsTheirs) {
  FakeKubeApi api;
  api.AddNode(
      Node("marked", {{"status", "presure"}, {"zone", "a"}}, RecordOf("status", "presure")));
  api.AddNode(Node("marked-by-an-old-version", {{"status", "presure"}}));
  api.AddNode(Node("foreign", {{"status", "maintenance"}}));
  api.AddNode(
      Node("foreign-with-record", {{"status", "maintenance"}}, RecordOf("status", "presure")));
  // Marked under a key used before the rule file changed it: the record names it.
  api.AddNode(Node("old-key", {{"load", "high"}}, RecordOf("load", "high")));
  api.AddNode(Node("clean", {{"zone", "b"}}));
  FakeClock clock;
  std::ostringstream out;
  CleanupOptions o;
  auto c = RunCleanup(&api, &clock, o, out);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->nodes, 6u);
  EXPECT_EQ(c->unmarked, 3u);
  EXPECT_EQ(c->forgotten, 1u);
  EXPECT_EQ(c->kept, 2u);
  EXPECT_EQ(c->failed, 0u);
  auto nodes = api.nodes();
  EXPECT_EQ(nodes["marked"].labels, (Labels{{"zone", "a"}}));
  EXPECT_TRUE(nodes["marked"].annotations.empty());
  EXPECT_TRUE(nodes["marked-by-an-old-version"].labels.empty());
  EXPECT_EQ(nodes["foreign"].labels, (Labels{{"status", "maintenance"}}));
  EXPECT_EQ(nodes["foreign-with-record"].labels, (Labels{{"status", "maintenance"}}));
  EXPECT_TRUE(nodes["foreign-with-record"].annotations.empty());
  EXPECT_TRUE(nodes["old-key"].labels.empty());
  EXPECT_TRUE(nodes["old-key"].annotations.empty());
  EXPECT_EQ(api.patches().size(), 4u) << "nothing sent for the foreign and the clean nodes";
  const std::string text = out.str();
  EXPECT_NE(text.find("node foreign: kept status=maintenance (not ours)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("node marked: remove status (if still presure) and remove annotation "
                      "dynamic-scheduler.io/held-by: done"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cleanup: 6 nodes, 3 marks removed, 1 records removed, 2 foreign values "
                      "kept, 0 changed meanwhile, 0 failed"),
            std::string::npos)
      << text;
}

TEST(Cleanup, TheUnderusedMarkIsOursWhenTheMirrorModeIsConfigured) {
  const NodeInfo idle = Node("idle", {{"status", "underused"}});
  CleanupStep off = PlanCleanup(idle, Mark{});
  EXPECT_FALSE(off.edit) << "without rebalance.underused the value is someone else's";
  EXPECT_EQ(off.note, "kept status=underused (not ours)");
  CleanupStep on = PlanCleanup(idle, Mark{}, "underused");
  ASSERT_TRUE(on.edit);
  EXPECT_EQ(on.edit->label.op, NodeEdit::Op::kRemove);
  EXPECT_EQ(on.edit->label.value, "underused") << "removed only if it still has that value";
  EXPECT_TRUE(on.note.empty());
}

TEST(Cleanup, TheDrainRecordGoesWithTheUnderusedMark) {
  NodeInfo idle = Node("idle", {{"status", "underused"}});
  idle.annotations = {{kLastDrainAnnotation, "2026-11-27T10:00:00Z"}};
  CleanupStep step = PlanCleanup(idle, Mark{}, "underused");
  ASSERT_TRUE(step.edit);
  EXPECT_EQ(step.edit->label.op, NodeEdit::Op::kRemove);
  EXPECT_EQ(step.edit->annotation.op, NodeEdit::Op::kRemove);
  EXPECT_EQ(step.edit->annotation.key, kLastDrainAnnotation);
}

// A hot mark over an underused node's drain record: both annotations go in one run.
TEST(Cleanup, BothRecordsGoInOneRun) {
  FakeKubeApi api;
  NodeInfo n = Node("hot", {{"status", "presure"}}, RecordOf("status", "presure"));
  n.annotations.emplace_back(kLastDrainAnnotation, "2026-11-27T10:00:00Z");
  api.AddNode(n);
  FakeClock clock;
  std::ostringstream out;
  auto c = RunCleanup(&api, &clock, CleanupOptions{}, out);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(api.nodes()["hot"].annotations.empty()) << out.str();
  EXPECT_EQ(c->unmarked, 1u);
  EXPECT_EQ(c->forgotten, 1u) << "the drain record";
}

TEST(Cleanup, DryRunWritesNothing) {
  FakeKubeApi api;
  api.AddNode(Node("marked", {{"status", "presure"}}, RecordOf("status", "presure")));
  FakeClock clock;
  std::ostringstream out;
  CleanupOptions o;
  o.dry_run = true;
  ASSERT_TRUE(RunCleanup(&api, &clock, o, out).ok());
  EXPECT_TRUE(api.patches().empty());
  EXPECT_NE(out.str().find("node marked: would remove status"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("(dry run)"), std::string::npos);
}

TEST(Cleanup, AValueChangedMeanwhileIsLeftAndFailuresAreCounted) {
  FakeKubeApi api;
  api.AddNode(Node("a", {{"status", "presure"}}));
  api.AddNode(Node("b", {{"status", "presure"}}));
  FakeClock clock;
  std::ostringstream out;
  api.on_patch = [&, first = true](const std::string& node) mutable {
    if (node == "a" && first) {
      first = false;
      api.AddNode(Node("a", {{"status", "maintenance"}}));
    } else if (node == "b") {
      api.FailNextPatches(
          {Status(StatusCode::kPermissionDenied, "forbidden").set_http_status(403)});
    }
  };
  auto c = RunCleanup(&api, &clock, CleanupOptions{}, out);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->changed, 1u);
  EXPECT_EQ(c->failed, 1u);
  EXPECT_EQ(api.nodes()["a"].labels, (Labels{{"status", "maintenance"}}));
  EXPECT_NE(out.str().find("node a: changed since it was listed"), std::string::npos) << out.str();

  api.FailNextLists({Status::Unavailable("connection refused")});
  EXPECT_FALSE(RunCleanup(&api, &clock, CleanupOptions{}, out).ok());
}

// -cleanup writes through the controller's NodeWriter: a brownout (503) is retried, within its
// attempts, instead of leaving a mark behind for the operator to clean by hand.
TEST(Cleanup, ABrownoutIsRetried) {
  FakeKubeApi api;
  api.AddNode(Node("a", {{"status", "presure"}}));
  api.FailNextPatches({Status::Unavailable("503"), Status::Unavailable("503")});
  FakeClock clock;
  std::ostringstream out;
  auto c = RunCleanup(&api, &clock, CleanupOptions{}, out);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->unmarked, 1u) << out.str();
  EXPECT_EQ(c->failed, 0u);
  EXPECT_EQ(api.patches().size(), 3u);
  EXPECT_EQ(api.nodes()["a"].labels, Labels{});
}

// Taint mode: a taint goes only where a record names it, and every other taint stays. One with
// our key, value and effect that no record names was not set by this controller.
TEST(Cleanup, RemovesOnlyARecordedTaintAndKeepsTheOthers) {
  Mark mark;
  mark.mode = Mark::Mode::kTaint;
  const Taint gpu{"nvidia.com/gpu", "present", "NoSchedule"};
  Ownership o;
  SetRecordedMark(mark, &o);
  FakeKubeApi api;
  NodeInfo ours = Node("ours", {}, FormatOwnership(o));
  ours.taints = {gpu, mark.taint};
  api.AddNode(ours);
  NodeInfo by_hand = Node("by-hand", {});
  by_hand.taints = {mark.taint};
  api.AddNode(by_hand);
  FakeClock clock;
  std::ostringstream out;
  CleanupOptions co;
  co.mark = mark;
  auto c = RunCleanup(&api, &clock, co, out);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->unmarked, 1u) << out.str();
  EXPECT_EQ(api.nodes()["ours"].taints, std::vector<Taint>{gpu});
  EXPECT_TRUE(api.nodes()["ours"].annotations.empty());
  EXPECT_EQ(api.nodes()["by-hand"].taints, std::vector<Taint>{mark.taint}) << out.str();

  // A node tainted again after the LIST: the edit of the stale list is refused (409), reported.
  NodeInfo again = Node("again", {}, FormatOwnership(o));
  again.taints = {mark.taint};
  api.AddNode(again);
  api.on_patch = [a = &api, gpu](const std::string& node) {
    FakeKubeApi* fake = a;  // clearing on_patch destroys this lambda: copy its captures first
    const Taint added = gpu;
    fake->on_patch = nullptr;
    fake->EditNode(node, [&](NodeInfo* n) { n->taints.push_back(added); });
  };
  std::ostringstream out2;
  c = RunCleanup(&api, &clock, co, out2);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->changed, 1u) << out2.str();
  EXPECT_EQ(api.nodes()["again"].taints, (std::vector<Taint>{mark.taint, gpu}));
}

// In taint mode the controller sets no label: our key with our value on a node (the label mode's
// mark, set by an earlier configuration without a record, or by hand) is not ours to remove.
TEST(Cleanup, TaintModeLeavesTheLabelAlone) {
  Mark mark;
  mark.mode = Mark::Mode::kTaint;
  Ownership o;
  SetRecordedMark(mark, &o);
  NodeInfo plain = Node("plain", {{"status", "presure"}});
  plain.resource_version = "3";
  EXPECT_FALSE(PlanCleanup(plain, mark).edit) << "nothing of ours on it";
  NodeInfo tainted = Node("tainted", {{"status", "presure"}}, FormatOwnership(o));
  tainted.resource_version = "4";
  tainted.taints = {mark.taint};
  CleanupStep step = PlanCleanup(tainted, mark);
  ASSERT_TRUE(step.edit);
  EXPECT_EQ(step.edit->label.op, NodeEdit::Op::kKeep);
  EXPECT_TRUE(step.edit->set_taints);
  EXPECT_TRUE(step.edit->taints.empty()) << "the recorded taint goes";
  EXPECT_EQ(step.edit->annotation.op, NodeEdit::Op::kRemove);
}

}  // namespace
}  // namespace ds
