// The NodeWriter holds every write limit; each test names one and fails without it.
#include "controller/node_writer.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "common/mutex.h"
#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_kube_api.h"

namespace ds {
namespace {

MarkWrite Set(const std::string& node) {
  MarkWrite w;
  w.node = node;
  w.kind = ChangeKind::kMark;
  w.record = "{}";
  w.reason = "hot";
  return w;
}
MarkWrite Unset(const std::string& node) {
  MarkWrite w;
  w.node = node;
  w.kind = ChangeKind::kUnmark;
  w.reason = "cold";
  w.owned.label = true;  // our key with our value (label mode: ours, record or not)
  return w;
}

class NodeWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 1; i <= 6; ++i) {
      NodeInfo n;
      n.name = "n" + std::to_string(i);
      api_.AddNode(n);
    }
    limits_.qps = 0;  // unlimited unless a test sets it
    limits_.concurrency = 1;
  }
  std::vector<MarkWrite> SetAll(int n) {
    std::vector<MarkWrite> w;
    for (int i = 1; i <= n; ++i) w.push_back(Set("n" + std::to_string(i)));
    return w;
  }
  WriteOutcome Write(const std::vector<MarkWrite>& w, std::function<bool()> gate = {}) {
    // One writer per test (created at the first write, with the limits the test set): the
    // per-node backoff and the rotating cap are state across batches.
    if (!writer_) writer_.emplace(limits_, Mark{}, &api_, &clock_);
    WriteHooks hooks;
    hooks.gate = std::move(gate);
    hooks.on_written = [&](const NodeInfo& n) {  // from writer threads, several at once
      MutexLock l(&written_mu_);
      written_.push_back(n.name);
    };
    hooks.on_progress = [&] { ++progress_; };
    WriteOutcome out = writer_->Write(w, hooks, &stop_);
    counters_ = writer_->Counters();
    return out;
  }

  FakeKubeApi api_;
  FakeClock clock_;
  WriteLimits limits_;
  std::atomic<bool> stop_{false};
  Mutex written_mu_;
  // Read once the writes are done (the writer threads joined): no lock then.
  std::vector<std::string> written_;
  WriteCounters counters_;
  std::atomic<int> progress_{0};
  std::optional<NodeWriter> writer_;
};

void MarkNode(FakeKubeApi* api, const std::string& name, const std::string& value,
              bool with_record) {
  NodeInfo n;
  n.name = name;
  n.labels = {{"status", value}};
  if (with_record) n.annotations = {{kHeldByAnnotation, "{}"}};
  api->AddNode(n);
}

TEST_F(NodeWriterTest, WritesOurMarkAndHandsEachResponseBack) {
  MarkNode(&api_, "n2", "presure", false);
  WriteOutcome out = Write({Set("n1"), Unset("n2")});
  EXPECT_EQ(out.ok, 2u);
  auto p = api_.patches();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].key, "status");
  EXPECT_EQ(p[0].value, "presure");
  EXPECT_FALSE(p[1].set);
  EXPECT_EQ(api_.nodes()["n2"].labels, Labels{});
  EXPECT_EQ(written_, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(counters_.sets, 1u);
  EXPECT_EQ(counters_.removals, 1u);
}

TEST_F(NodeWriterTest, PerCycleCapDefersTheRest) {
  limits_.max_per_cycle = 4;
  WriteOutcome out = Write(SetAll(6));
  EXPECT_EQ(out.ok, 4u);
  EXPECT_EQ(out.deferred, 2u);
  EXPECT_EQ(api_.patches().size(), 4u);
}

TEST_F(NodeWriterTest, DryRunSendsNothing) {
  limits_.dry_run = true;
  WriteOutcome out = Write(SetAll(3));
  EXPECT_TRUE(api_.patches().empty());
  EXPECT_EQ(out.ok, 0u);
}

TEST_F(NodeWriterTest, RateLimitPacesTheWritesOnTheClock) {
  limits_.qps = 2;
  limits_.burst = 1;
  const TimePoint t0 = clock_.Now();
  Write(SetAll(5));
  EXPECT_EQ(api_.patches().size(), 5u);
  EXPECT_NEAR(ToSeconds(clock_.Now() - t0), 4 / 2.0, 1e-6) << "1 at once, then 2 a second";
}

TEST_F(NodeWriterTest, RetryAfterHoldsBackEveryLaterWrite) {
  // n1 gets a 429 with Retry-After and, with one attempt, gives up at once: n2 must still wait
  // for the time the server asked, although its own request never got that answer.
  limits_.attempts = 1;
  api_.FailNextPatches(
      {Status(StatusCode::kTooManyRequests, "slow down").set_retry_after_seconds(7)});
  const TimePoint t0 = clock_.Now();
  std::vector<double> sent_at;
  api_.on_patch = [&](const std::string&) { sent_at.push_back(ToSeconds(clock_.Now() - t0)); };
  WriteOutcome out = Write(SetAll(2));
  EXPECT_EQ(out.failed, 1u);
  EXPECT_EQ(out.ok, 1u);
  EXPECT_EQ(sent_at, (std::vector<double>{0, 7})) << "the server's Retry-After holds every writer";
}

TEST_F(NodeWriterTest, ABrownoutDoesNotBackTheNodesOff) {
  limits_.attempts = 2;
  api_.FailNextPatches({Status::Unavailable("503"), Status::Unavailable("503")});
  ASSERT_EQ(Write({Set("n1")}).failed, 1u);
  WriteOutcome next = Write({Set("n1")});
  EXPECT_EQ(next.held_back, 0u) << "retries used up on 5xx say nothing about the node";
  EXPECT_EQ(next.ok, 1u);
}

TEST_F(NodeWriterTest, AClosedGateTakesNoRateLimitToken) {
  limits_.qps = 1;
  limits_.burst = 1;
  const TimePoint t0 = clock_.Now();
  WriteOutcome out = Write(SetAll(5), [] { return false; });
  EXPECT_EQ(out.deferred, 5u);
  EXPECT_EQ(clock_.Now(), t0) << "dropped writes do not wait for tokens";
}

TEST_F(NodeWriterTest, RefusedForGoodIsNotRetried) {
  api_.FailNextPatches({Status(StatusCode::kInvalidArgument, "Invalid").set_http_status(422)});
  WriteOutcome out = Write(SetAll(1));
  EXPECT_EQ(out.failed, 1u);
  EXPECT_EQ(api_.patches().size(), 1u);
  EXPECT_EQ(counters_.errors, 1u);
}

TEST_F(NodeWriterTest, RetriesUpToTheAttemptLimit) {
  limits_.attempts = 3;
  api_.FailNextPatches(
      {Status::Unavailable("a"), Status::Unavailable("b"), Status::Unavailable("c")});
  WriteOutcome out = Write(SetAll(1));
  EXPECT_EQ(out.failed, 1u);
  EXPECT_EQ(api_.patches().size(), 3u);
  EXPECT_EQ(counters_.retries, 2u);
}

TEST_F(NodeWriterTest, ClosedGateDropsTheWrites) {
  int asked = 0;
  WriteOutcome out = Write(SetAll(3), [&] { return ++asked <= 3; });
  // n1: asked before its waits (1), after them (2) and just before sending (3): sent. n2: refused
  // at the start.
  EXPECT_EQ(api_.patches().size(), 1u);
  EXPECT_EQ(out.ok, 1u);
  EXPECT_EQ(out.deferred, 2u);
}

TEST_F(NodeWriterTest, GateClosingWhileConnectingSendsNothing) {
  int asked = 0;
  WriteOutcome out = Write(SetAll(1), [&] { return ++asked <= 2; });
  EXPECT_TRUE(api_.patches().empty()) << "the second question comes just before the bytes leave";
  EXPECT_EQ(out.deferred, 1u);
}

TEST_F(NodeWriterTest, DeletedNodeIsNeitherWrittenNorAFailure) {
  WriteOutcome out = Write({Set("gone")});
  EXPECT_EQ(out.ok + out.failed + out.deferred, 0u);
  EXPECT_EQ(counters_.errors, 0u);
}

TEST_F(NodeWriterTest, RefusedNodesBackOffAndTheCapGoesRound) {
  // Two nodes whose writes are refused for good (e.g. an admission webhook says no) and a cap of
  // 2: without a per-node backoff and a rotating start, no other node would ever be written.
  limits_.max_per_cycle = 2;
  Status refused = Status(StatusCode::kInvalidArgument, "Invalid").set_http_status(422);
  api_.FailNextPatches({refused, refused});
  WriteOutcome first = Write(SetAll(5));
  EXPECT_EQ(first.failed, 2u);
  EXPECT_EQ(first.deferred, 3u);
  clock_.AdvanceSeconds(1);
  WriteOutcome second = Write(SetAll(5));
  EXPECT_EQ(second.held_back, 2u) << "n1 and n2 wait out their backoff";
  EXPECT_EQ(second.ok, 2u);
  WriteOutcome third = Write({Set("n1"), Set("n2"), Set("n5")});
  EXPECT_EQ(third.held_back, 2u);
  EXPECT_EQ(third.ok, 1u);
  EXPECT_EQ(written_, (std::vector<std::string>{"n3", "n4", "n5"}));
  // After the backoff (10 s) the refused nodes are tried again; a success clears it.
  clock_.AdvanceSeconds(10);
  WriteOutcome fourth = Write({Set("n1"), Set("n2")});
  EXPECT_EQ(fourth.ok, 2u);
  EXPECT_EQ(fourth.held_back, 0u);
}

TEST_F(NodeWriterTest, RefusedNodeBackoffDoublesAndASuccessResetsIt) {
  Status refused = Status(StatusCode::kPermissionDenied, "forbidden").set_http_status(403);
  const std::vector<MarkWrite> w = {Set("n1")};
  api_.FailNextPatches({refused});
  ASSERT_EQ(Write(w).failed, 1u);  // backoff 10 s
  clock_.AdvanceSeconds(9.9);
  EXPECT_EQ(Write(w).held_back, 1u);
  clock_.AdvanceSeconds(0.2);
  api_.FailNextPatches({refused});
  ASSERT_EQ(Write(w).failed, 1u);  // refused again: 20 s
  clock_.AdvanceSeconds(19.9);
  EXPECT_EQ(Write(w).held_back, 1u) << "the second refusal doubled the backoff";
  clock_.AdvanceSeconds(0.2);
  EXPECT_EQ(Write(w).ok, 1u);
  api_.FailNextPatches({refused});
  ASSERT_EQ(Write(w).failed, 1u);
  clock_.AdvanceSeconds(10.1);
  EXPECT_EQ(Write(w).ok, 1u) << "a success reset it: 10 s again, not 40";
  EXPECT_EQ(api_.patches().size(), 5u) << "nothing is sent while a node is held back";
}

TEST_F(NodeWriterTest, ProgressIsReportedPerWrite) {
  Write(SetAll(3));
  EXPECT_GE(progress_.load(), 3);
}

TEST_F(NodeWriterTest, ConcurrentWritersShareTheLimits) {
  limits_.concurrency = 4;
  limits_.max_per_cycle = 5;
  limits_.qps = 2;
  limits_.burst = 1;
  const TimePoint t0 = clock_.Now();
  WriteOutcome out = Write(SetAll(6));
  EXPECT_EQ(out.ok, 5u);
  EXPECT_EQ(out.deferred, 1u);
  EXPECT_EQ(api_.patches().size(), 5u);
  // One bucket for all four writers: 1 at once, then 2 a second. With a bucket per writer the
  // first four would leave at once.
  EXPECT_GE(ToSeconds(clock_.Now() - t0), 2.0);
}

TEST_F(NodeWriterTest, TheRecordGoesInTheSamePatchAsTheMark) {
  MarkWrite w = Set("n1");
  w.record = R"({"label":"status","value":"presure","rules":[]})";
  ASSERT_EQ(Write({w}).ok, 1u);
  auto p = api_.patches();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].edit.label.op, NodeEdit::Op::kSet);
  EXPECT_EQ(p[0].edit.annotation.op, NodeEdit::Op::kSet);
  EXPECT_EQ(p[0].edit.annotation.key, kHeldByAnnotation);
  NodeInfo n = api_.nodes()["n1"];
  EXPECT_EQ(n.labels, (Labels{{"status", "presure"}}));
  EXPECT_EQ(n.annotations, (Labels{{kHeldByAnnotation, w.record}}));

  MarkWrite off = Unset("n1");
  off.had_record = true;
  ASSERT_EQ(Write({off}).ok, 1u);
  n = api_.nodes()["n1"];
  EXPECT_TRUE(n.labels.empty());
  EXPECT_TRUE(n.annotations.empty()) << "the record goes with the mark";
  EXPECT_EQ(counters_.sets, 1u);
  EXPECT_EQ(counters_.removals, 1u);
}

// An operator's `kubectl label node n2 status=maintenance --overwrite` lands between the snapshot
// the removal was planned from and its PATCH.
TEST_F(NodeWriterTest, ARemovalLeavesAValueWrittenMeanwhile) {
  MarkNode(&api_, "n2", "presure", true);
  api_.on_patch = [&](const std::string& node) {
    if (node == "n2") MarkNode(&api_, "n2", "maintenance", true);
  };
  MarkWrite off = Unset("n2");
  off.had_record = true;
  std::vector<std::pair<std::string, WriteEnd>> done;
  WriteHooks hooks;
  hooks.on_done = [&](const MarkWrite& w, WriteEnd end) { done.emplace_back(w.node, end); };
  NodeWriter writer(limits_, Mark{}, &api_, &clock_);
  WriteOutcome out = writer.Write({off}, hooks, &stop_);
  EXPECT_EQ(out.changed, 1u);
  EXPECT_EQ(out.failed, 0u) << "nothing failed: the node changed";
  EXPECT_EQ(api_.nodes()["n2"].labels, (Labels{{"status", "maintenance"}}));
  EXPECT_EQ(api_.nodes()["n2"].annotations.size(), 1u) << "nothing of the patch was applied";
  EXPECT_EQ(writer.Counters().changed, 1u);
  EXPECT_EQ(done, (std::vector<std::pair<std::string, WriteEnd>>{{"n2", WriteEnd::kChanged}}));
  // Not a refusal: the node is not backed off.
  api_.on_patch = nullptr;
  MarkNode(&api_, "n2", "presure", false);
  EXPECT_EQ(writer.Write({Unset("n2")}, hooks, &stop_).ok, 1u);
}

TEST_F(NodeWriterTest, OnDoneSaysHowEachWriteEnded) {
  std::map<std::string, WriteEnd> done;
  WriteHooks hooks;
  hooks.on_done = [&](const MarkWrite& w, WriteEnd end) { done[w.node] = end; };
  limits_.attempts = 1;
  limits_.max_per_cycle = 4;
  NodeWriter writer(limits_, Mark{}, &api_, &clock_);
  api_.FailNextPatches({Status::NotFound("nodes \"gone\" not found"),
                        Status(StatusCode::kPermissionDenied, "forbidden").set_http_status(403),
                        Status::Unavailable("brownout")});
  writer.Write({Set("gone"), Set("n1"), Set("n2"), Set("n3"), Set("n4")}, hooks, &stop_);
  EXPECT_EQ(done["gone"], WriteEnd::kGone);
  EXPECT_EQ(done["n1"], WriteEnd::kRefused) << "refused for good: backed off";
  EXPECT_EQ(done["n2"], WriteEnd::kRetryLater) << "a brownout: to be tried again";
  EXPECT_EQ(done["n3"], WriteEnd::kWritten);
  EXPECT_EQ(done.count("n4"), 0u) << "over the budget: not tried, so no end to report";
}

// Taint mode: the taint is a read-modify-write of the node's taints. Someone taints the node
// between the cycle's read and the write: the API server refuses the stale edit (409), the writer
// reads the node again and edits afresh, and both their taint and every older one are kept.
class TaintWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mark_.mode = Mark::Mode::kTaint;
    NodeInfo n;
    n.name = "n1";
    n.taints = {kGpu};
    api_.AddNode(n);
    limits_.qps = 0;
    limits_.concurrency = 1;
  }
  MarkWrite Planned(ChangeKind kind) {  // as the reconciler plans it, from the node as read
    const NodeInfo n = api_.nodes()["n1"];
    MarkWrite w;
    w.node = "n1";
    w.kind = kind;
    w.record = RecordText();
    w.had_record = FindLabel(n.annotations, kHeldByAnnotation) != nullptr;
    w.reason = "test";
    w.read = MarkWrite::Read{n.resource_version, n.labels, n.taints};
    if (kind == ChangeKind::kUnmark) {
      auto record = ParseOwnership(w.had_record ? *FindLabel(n.annotations, kHeldByAnnotation)
                                                : std::string("-"));
      w.owned = OwnedMarkParts(mark_, n.labels, n.taints, record.ok() ? &*record : nullptr);
    }
    return w;
  }
  std::string RecordText() const {  // our record of mark_, as a cycle writes it
    Ownership o;
    SetRecordedMark(mark_, &o);
    o.rules = {OwnerRule{"cpu", 1795435200}};
    return FormatOwnership(o);
  }
  WriteOutcome Write(const MarkWrite& w) {
    NodeWriter writer(limits_, mark_, &api_, &clock_);
    WriteOutcome out = writer.Write({w}, {}, &stop_);
    counters_ = writer.Counters();
    return out;
  }
  // `kubectl taint nodes n1 <taint>` from another client, as our PATCH is on its way.
  void TaintMeanwhile(const Taint& t) {
    api_.on_patch = [api = &api_, t](const std::string& node) {
      // Clearing on_patch destroys this lambda and its captures: copy them first.
      FakeKubeApi* a = api;
      const Taint added = t;
      a->on_patch = nullptr;
      a->EditNode(node, [&](NodeInfo* n) { n->taints.push_back(added); });
    };
  }
  std::vector<Taint> Taints() { return api_.nodes()["n1"].taints; }

  const Taint kGpu{"nvidia.com/gpu", "present", "NoSchedule"};
  const Taint kDrain{"example.com/drain", "", "NoSchedule"};
  Mark mark_;
  FakeKubeApi api_;
  FakeClock clock_;
  WriteLimits limits_;
  std::atomic<bool> stop_{false};
  WriteCounters counters_;
};

TEST_F(TaintWriterTest, AConcurrentTaintEditIsKept) {
  const MarkWrite w = Planned(ChangeKind::kMark);
  TaintMeanwhile(kDrain);
  WriteOutcome out = Write(w);
  EXPECT_EQ(out.ok, 1u);
  EXPECT_EQ(Taints(), (std::vector<Taint>{kGpu, kDrain, mark_.taint}));
  EXPECT_EQ(api_.patches().size(), 2u) << "the stale edit, then the one made afresh";
  EXPECT_EQ(api_.get_calls(), 1);
  EXPECT_EQ(counters_.taint_conflicts, 1u);
  EXPECT_EQ(counters_.taint_sets, 1u);
  EXPECT_EQ(counters_.sets, 0u) << "a taint-only write is no label write";
  EXPECT_TRUE(api_.nodes()["n1"].labels.empty()) << "taint mode sets no label";

  const MarkWrite off = Planned(ChangeKind::kUnmark);
  TaintMeanwhile(Taint{"example.com/late", "", "PreferNoSchedule"});
  out = Write(off);
  EXPECT_EQ(out.ok, 1u);
  EXPECT_EQ(Taints(),
            (std::vector<Taint>{kGpu, kDrain, Taint{"example.com/late", "", "PreferNoSchedule"}}));
  EXPECT_EQ(counters_.taint_removals, 1u);
  EXPECT_EQ(counters_.removals, 0u) << "a taint-only write is no label write";
}

TEST_F(TaintWriterTest, ARemovalFindingOurTaintGoneChangesNothing) {
  Write(Planned(ChangeKind::kMark));
  const MarkWrite off = Planned(ChangeKind::kUnmark);
  // `kubectl taint nodes n1 example.com/...-` meanwhile, and an operator's own value put there.
  Taint theirs = mark_.taint;
  theirs.value = "maintenance";
  api_.on_patch = [api = &api_, now = std::vector<Taint>{kGpu, theirs}](const std::string& node) {
    FakeKubeApi* a = api;  // clearing on_patch destroys this lambda: copy its captures first
    const std::vector<Taint> taints = now;
    a->on_patch = nullptr;
    a->EditNode(node, [&](NodeInfo* n) { n->taints = taints; });
  };
  WriteOutcome out = Write(off);
  EXPECT_EQ(out.changed, 1u);
  EXPECT_EQ(out.failed, 0u);
  EXPECT_EQ(Taints(), (std::vector<Taint>{kGpu, theirs})) << "their value is not ours to remove";
}

TEST_F(TaintWriterTest, WithBothTheLabelGoesOnlyIfStillOurs) {
  mark_.mode = Mark::Mode::kBoth;
  Write(Planned(ChangeKind::kMark));
  EXPECT_EQ(*FindLabel(api_.nodes()["n1"].labels, "status"), "presure");
  EXPECT_EQ(Taints(), (std::vector<Taint>{kGpu, mark_.taint}));
  EXPECT_EQ(counters_.sets, 1u) << "label and taint in one write: a label write and a taint write";
  EXPECT_EQ(counters_.taint_sets, 1u);
  const MarkWrite off = Planned(ChangeKind::kUnmark);
  api_.on_patch = [api = &api_](const std::string& node) {  // `kubectl label ... =maintenance`
    FakeKubeApi* a = api;  // clearing on_patch destroys this lambda: copy its capture first
    a->on_patch = nullptr;
    a->EditNode(node, [](NodeInfo* n) { n->labels = {{"status", "maintenance"}}; });
  };
  EXPECT_EQ(Write(off).ok, 1u);
  EXPECT_EQ(*FindLabel(api_.nodes()["n1"].labels, "status"), "maintenance");
  EXPECT_EQ(Taints(), std::vector<Taint>{kGpu}) << "our taint still goes";
}

TEST_F(TaintWriterTest, ConflictsThatNeverEndUseUpTheAttempts) {
  limits_.attempts = 3;
  api_.on_patch = [this](const std::string& node) {  // a node that changes under every write
    api_.EditNode(node, [](NodeInfo*) {});
  };
  WriteOutcome out = Write(Planned(ChangeKind::kMark));
  api_.on_patch = nullptr;
  EXPECT_EQ(out.failed, 1u);
  EXPECT_EQ(api_.patches().size(), 3u);
  EXPECT_EQ(Taints(), std::vector<Taint>{kGpu}) << "nothing written";
}

// After a 409 the removal is planned again from the fresh node and its fresh record: our taint,
// taken off by hand and put back as the operator's own with the record gone, is not ours any more.
TEST_F(TaintWriterTest, AfterAConflictARemovalTakesOnlyWhatTheFreshRecordNames) {
  Write(Planned(ChangeKind::kMark));
  const MarkWrite off = Planned(ChangeKind::kUnmark);
  ASSERT_TRUE(off.owned.taint);
  api_.on_patch = [api = &api_](const std::string& node) {  // the record removed by hand
    FakeKubeApi* a = api;  // clearing on_patch destroys this lambda: copy its capture first
    a->on_patch = nullptr;
    a->EditNode(node, [](NodeInfo* n) { n->annotations.clear(); });
  };
  WriteOutcome out = Write(off);
  EXPECT_EQ(out.changed, 1u);
  EXPECT_EQ(out.ok, 0u);
  EXPECT_EQ(Taints(), (std::vector<Taint>{kGpu, mark_.taint})) << "no record names it now";
  EXPECT_EQ(api_.patches().size(), 2u) << "the set, then the stale removal (409); nothing more";
}

// With `both`, a 409 whose fresh record is gone still removes the label (ours by its value) but
// leaves the taint.
TEST_F(TaintWriterTest, AfterAConflictWithBothTheLabelGoesAndAnUnrecordedTaintStays) {
  mark_.mode = Mark::Mode::kBoth;
  Write(Planned(ChangeKind::kMark));
  const MarkWrite off = Planned(ChangeKind::kUnmark);
  ASSERT_TRUE(off.owned.label && off.owned.taint);
  api_.on_patch = [api = &api_](const std::string& node) {
    FakeKubeApi* a = api;
    a->on_patch = nullptr;
    a->EditNode(node, [](NodeInfo* n) { n->annotations.clear(); });
  };
  EXPECT_EQ(Write(off).ok, 1u);
  EXPECT_EQ(FindLabel(api_.nodes()["n1"].labels, "status"), nullptr);
  EXPECT_EQ(Taints(), (std::vector<Taint>{kGpu, mark_.taint}));
}

// A taint edit without the resourceVersion it was read at would be unconditional on the wire:
// it is never sent, and the node is backed off as for any refusal.
TEST_F(TaintWriterTest, ATaintEditWithoutAResourceVersionIsNeverSent) {
  MarkWrite w = Planned(ChangeKind::kMark);
  w.read.resource_version.clear();
  WriteOutcome out = Write(w);
  EXPECT_EQ(out.failed, 1u);
  EXPECT_TRUE(api_.patches().empty());
  EXPECT_EQ(Taints(), std::vector<Taint>{kGpu});
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

// WriteEdit: the single edits (underused marks, eviction records, -cleanup) under the same limits.
class NodeWriterEditTest : public NodeWriterTest {
 protected:
  EditOutcome Edit(NodeEdit edit, std::function<bool()> gate = {}, bool record = false) {
    if (!writer_) writer_.emplace(limits_, Mark{}, &api_, &clock_);
    WriteHooks hooks;
    hooks.gate = std::move(gate);
    hooks.on_written = [&](const NodeInfo& n) { written_.push_back(n.name); };
    EditOutcome out =
        writer_->WriteEdit(NodeWrite{"n1", std::move(edit), "test", record}, hooks, &stop_);
    counters_ = writer_->Counters();
    return out;
  }
  static NodeEdit SetUnderused() {
    NodeEdit e;
    e.label = {NodeEdit::Op::kSet, "status", "underused"};
    return e;
  }
};

TEST_F(NodeWriterEditTest, RetriesABrownoutAndHandsTheAnswerBack) {
  api_.FailNextPatches({Status::Unavailable("503")});
  EditOutcome out = Edit(SetUnderused());
  EXPECT_EQ(out.end, WriteEnd::kWritten);
  ASSERT_TRUE(out.node.has_value());
  EXPECT_EQ(*FindLabel(out.node->labels, "status"), "underused");
  EXPECT_EQ(api_.patches().size(), 2u);
  EXPECT_EQ(counters_.retries, 1u);
  EXPECT_EQ(written_, std::vector<std::string>{"n1"});
}

TEST_F(NodeWriterEditTest, DryRunSendsNothing) {
  limits_.dry_run = true;
  EditOutcome out = Edit(SetUnderused());
  EXPECT_TRUE(out.dry_run);
  EXPECT_NE(out.end, WriteEnd::kWritten);
  EXPECT_TRUE(api_.patches().empty());
}

TEST_F(NodeWriterEditTest, AClosedGateSendsNothingAndTakesNoToken) {
  limits_.qps = 1;
  limits_.burst = 1;
  const TimePoint t0 = clock_.Now();
  for (int i = 0; i < 3; ++i) {
    EditOutcome out = Edit(SetUnderused(), [] { return false; });
    EXPECT_EQ(out.end, WriteEnd::kRetryLater);
    EXPECT_EQ(out.status.code(), StatusCode::kCancelled);
  }
  EXPECT_TRUE(api_.patches().empty());
  EXPECT_EQ(clock_.Now(), t0);
}

TEST_F(NodeWriterEditTest, ARefusalBacksTheNodeOffForBatchesToo) {
  api_.FailNextPatches({Status(StatusCode::kPermissionDenied, "forbidden").set_http_status(403)});
  EXPECT_EQ(Edit(SetUnderused()).end, WriteEnd::kRefused);
  EXPECT_EQ(counters_.errors, 1u);
  // The node's backoff is the writer's, whichever path hit it: the mark's batch waits it out.
  WriteOutcome out = Write({Set("n1")});
  EXPECT_EQ(out.held_back, 1u);
  EXPECT_EQ(api_.patches().size(), 1u);
}

TEST_F(NodeWriterEditTest, AFailedConditionIsAChangeNotAFailure) {
  MarkNode(&api_, "n1", "someone-elses", false);
  NodeEdit e;
  e.label = {NodeEdit::Op::kRemove, "status", "underused"};  // only while it is still ours
  EditOutcome out = Edit(e);
  EXPECT_EQ(out.end, WriteEnd::kChanged);
  EXPECT_EQ(counters_.errors, 0u);
  EXPECT_EQ(counters_.changed, 1u);
  EXPECT_EQ(*FindLabel(api_.nodes()["n1"].labels, "status"), "someone-elses");
}

TEST_F(NodeWriterEditTest, ARecordAloneCountsAsARecordWrite) {
  NodeEdit e;
  e.annotation = {NodeEdit::Op::kSet, kHeldByAnnotation, "{}"};
  EXPECT_EQ(Edit(e, {}, /*record=*/true).end, WriteEnd::kWritten);
  EXPECT_EQ(counters_.records, 1u);
  EXPECT_EQ(counters_.sets, 0u);
}

}  // namespace
}  // namespace ds
