// Leader election: the pure acquire/renew decision as a table, then two electors sharing one
// fake API server and one fake clock, driven through random interleavings and outages while the
// test checks after every step that at most one of them may write.
#include "election/leader_elector.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <future>
#include <random>
#include <thread>

#include "common/mutex.h"
#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_kube_api.h"

namespace ds {
namespace {

LeaderElectionOptions Opts(const std::string& id) {
  LeaderElectionOptions o;
  o.lease_namespace = "kube-system";
  o.lease_name = "dynamic-scheduler";
  o.identity = id;
  return o;  // 15 / 10 / 2 s, client-go's defaults
}

LeaseRecord Held(const std::string& holder, int transitions = 3) {
  LeaseRecord r;
  r.holder_identity = holder;
  r.lease_duration_seconds = 15;
  r.acquire_time = "2026-11-22T10:00:00.000000Z";
  r.renew_time = "2026-11-22T10:00:30.000000Z";
  r.lease_transitions = transitions;
  r.resource_version = "77";
  // As decoded from the API server's answer, which the next update sends back.
  r.object = R"({"metadata":{"name":"dynamic-scheduler","resourceVersion":"77",)"
             R"("labels":{"team":"infra"}},"spec":{"holderIdentity":")" +
             holder + R"("}})";
  return r;
}

constexpr char kNs[] = "kube-system";
constexpr char kName[] = "dynamic-scheduler";
constexpr char kKey[] = "kube-system/dynamic-scheduler";

// A Lease held by "z" as an operator and a newer API server leave it: labels, annotations, an
// ownerReference and spec fields this code does not know.
constexpr char kDecoratedLease[] =
    R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",)"
    R"("metadata":{"name":"dynamic-scheduler","namespace":"kube-system","resourceVersion":"7",)"
    R"("uid":"u-1","labels":{"team":"infra"},"annotations":{"owner":"sre \"on call\""},)"
    R"("ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"ds","uid":"d-1"}]},)"
    R"("spec":{"holderIdentity":"z","leaseDurationSeconds":15,)"
    R"("acquireTime":"2026-11-22T10:00:00.000000Z","renewTime":"2026-11-22T10:00:30.000000Z",)"
    R"("leaseTransitions":3,"strategy":"OldestEmulationVersion","preferredHolder":"b"}})";

// Checks that `object` (JSON) still has everything kDecoratedLease added, and names `holder`.
void ExpectDecorationsKept(const std::string& object, const std::string& holder) {
  rapidjson::Document d;
  d.Parse(object.c_str(), object.size());
  ASSERT_FALSE(d.HasParseError()) << object;
  ASSERT_TRUE(d.IsObject() && d.HasMember("metadata") && d.HasMember("spec")) << object;
  const auto& meta = d["metadata"];
  const auto& spec = d["spec"];
  ASSERT_TRUE(meta.HasMember("labels") && meta.HasMember("annotations") &&
              meta.HasMember("ownerReferences") && meta.HasMember("uid"))
      << object;
  EXPECT_STREQ(meta["labels"]["team"].GetString(), "infra");
  EXPECT_STREQ(meta["annotations"]["owner"].GetString(), "sre \"on call\"");
  ASSERT_TRUE(meta["ownerReferences"].IsArray() && meta["ownerReferences"].Size() == 1);
  EXPECT_STREQ(meta["ownerReferences"][0]["kind"].GetString(), "Deployment");
  EXPECT_STREQ(meta["uid"].GetString(), "u-1");
  ASSERT_TRUE(spec.HasMember("strategy") && spec.HasMember("preferredHolder")) << object;
  EXPECT_STREQ(spec["strategy"].GetString(), "OldestEmulationVersion");
  EXPECT_STREQ(spec["preferredHolder"].GetString(), "b");
  ASSERT_TRUE(spec.HasMember("holderIdentity")) << object;
  EXPECT_EQ(spec["holderIdentity"].GetString(), holder);
}

TEST(DecideLeaseStep, Table) {
  const TimePoint t0{std::chrono::hours(5)};
  const double wall = 1.8e9;
  const std::string stamp = FormatMicroTime(wall);
  auto opts = Opts("me");
  struct Case {
    const char* what;
    std::optional<LeaseRecord> current;
    std::optional<LeaseRecord> last_seen;  // before the Lease vanished (current: none)
    double seconds_since_observed;
    LeaseAction action;
    int transitions;
    bool keeps_acquire_time;
    double seconds_missing = 0;  // since a read first found the Lease missing
  };
  LeaseRecord released = Held("");
  released.lease_duration_seconds = 1;
  LeaseRecord long_lease = Held("other");
  long_lease.lease_duration_seconds = 60;
  const auto none = std::nullopt;
  const Case cases[] = {
      {"no lease yet: create it", none, none, 0, LeaseAction::kCreate, 0, false},
      {"another holder renewed recently: wait", Held("other"), none, 14.9, LeaseAction::kWait, 0,
       false},
      {"another holder silent for the lease duration: take over", Held("other"), none, 15,
       LeaseAction::kUpdate, 4, false},
      {"the holder's own longer duration is respected", long_lease, none, 30, LeaseAction::kWait, 0,
       false},
      {"released lease: take it at once", released, none, 0, LeaseAction::kUpdate, 4, false},
      {"our own lease: renew, same acquire time and transitions", Held("me"), none, 0,
       LeaseAction::kUpdate, 3, true},
      {"our own lease even when we saw it long ago", Held("me"), none, 100, LeaseAction::kUpdate, 3,
       true},
      {"what was seen before does not matter while the lease exists", Held("other"), Held("me"), 0,
       LeaseAction::kWait, 0, false},
      // kubectl delete lease: the holder we saw keeps writing until its renew deadline.
      {"deleted while another holder's lease ran: wait until it would have expired", none,
       Held("other"), 14.9, LeaseAction::kWait, 0, false, 12.9},
      {"deleted, and the holder we saw has been silent for its duration: create", none,
       Held("other"), 15, LeaseAction::kCreate, 0, false, 13},
      {"deleted: the holder's own longer duration is respected", none, long_lease, 30,
       LeaseAction::kWait, 0, false, 28},
      // Our last read was 8 s older than the deletion: the holder may have renewed unseen.
      {"deleted after reads that lagged: a renew deadline from finding it missing", none,
       Held("other"), 17, LeaseAction::kWait, 0, false, 9.9},
      {"deleted after reads that lagged: create after that", none, Held("other"), 17,
       LeaseAction::kCreate, 0, false, 10},
      {"deleted after a release: create at once", none, released, 0, LeaseAction::kCreate, 0,
       false},
      {"deleted while we held it: create at once", none, Held("me"), 0, LeaseAction::kCreate, 0,
       false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const TimePoint now = t0 + FromSeconds(c.seconds_since_observed);
    LeaseStep s =
        DecideLeaseStep(c.current ? &*c.current : nullptr, c.last_seen ? &*c.last_seen : nullptr,
                        t0, now - FromSeconds(c.seconds_missing), now, wall, opts);
    ASSERT_EQ(s.action, c.action);
    if (s.action == LeaseAction::kWait) continue;
    EXPECT_EQ(s.record.holder_identity, "me");
    EXPECT_EQ(s.record.lease_duration_seconds, 15);
    EXPECT_EQ(s.record.renew_time, stamp);
    EXPECT_EQ(s.record.lease_transitions, c.transitions);
    EXPECT_EQ(s.record.acquire_time, c.keeps_acquire_time ? c.current->acquire_time : stamp);
    EXPECT_EQ(s.record.resource_version, c.current ? c.current->resource_version : "")
        << "an update carries the resourceVersion it read as precondition";
    EXPECT_EQ(s.record.object, c.current ? c.current->object : "")
        << "an update changes the object as read; a create starts a new one";
  }
}

TEST(LeaseCodec, UpdateChangesOnlyTheElectionFields) {
  auto read = DecodeLease(kDecoratedLease);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->object, kDecoratedLease);
  LeaseRecord r = *read;
  r.holder_identity = "me";
  r.lease_duration_seconds = 20;
  r.acquire_time = "";  // absent, as a fresh record would have it
  r.renew_time = "2026-11-22T11:00:00.000000Z";
  r.lease_transitions = 4;
  const std::string body = EncodeLease(kNs, kName, r);
  ExpectDecorationsKept(body, "me");
  rapidjson::Document d;
  d.Parse(body.c_str());
  ASSERT_TRUE(d.IsObject());
  EXPECT_STREQ(d["apiVersion"].GetString(), "coordination.k8s.io/v1");
  EXPECT_STREQ(d["metadata"]["name"].GetString(), "dynamic-scheduler");
  EXPECT_STREQ(d["metadata"]["resourceVersion"].GetString(), "7") << "the precondition";
  const auto& spec = d["spec"];
  EXPECT_EQ(spec["leaseDurationSeconds"].GetInt(), 20);
  EXPECT_FALSE(spec.HasMember("acquireTime"));
  EXPECT_STREQ(spec["renewTime"].GetString(), "2026-11-22T11:00:00.000000Z");
  EXPECT_EQ(spec["leaseTransitions"].GetInt(), 4);
  auto back = DecodeLease(body);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->SameSpec(r));

  r.resource_version.clear();  // a create must not carry a resourceVersion
  d.Parse(EncodeLease(kNs, kName, r).c_str());
  ASSERT_TRUE(d.IsObject());
  EXPECT_FALSE(d["metadata"].HasMember("resourceVersion"));
  EXPECT_STREQ(d["metadata"]["labels"]["team"].GetString(), "infra");

  // Keys that appear twice are written once, so that the server (last one wins) and the decoder
  // (first one wins) read the same holder.
  const char* twice =
      R"({"metadata":{"resourceVersion":"1"},"spec":{"holderIdentity":"x","holderIdentity":"y"}})";
  auto dup = DecodeLease(twice);
  ASSERT_TRUE(dup.ok());
  dup->holder_identity = "me";
  const std::string once = EncodeLease(kNs, kName, *dup);
  EXPECT_EQ(once.find("\"x\""), std::string::npos) << once;
  EXPECT_EQ(once.find("\"y\""), std::string::npos) << once;
}

TEST(LeaseCodec, RoundTripAndErrors) {
  LeaseRecord r = Held("pod-a_1234");
  std::string body = EncodeLease("ns", "name", r);
  // The server answers with the object plus metadata; the decoder reads it back.
  auto back = DecodeLease(body);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->SameSpec(r));
  EXPECT_EQ(back->resource_version, "77");
  EXPECT_EQ(FormatMicroTime(1.5), "1970-01-01T00:00:01.500000Z");
  EXPECT_EQ(FormatMicroTime(1763805845.9999996), "2025-11-22T10:04:06.000000Z")
      << "rounding carries";
  struct Bad {
    const char* body;
    const char* message;
  };
  for (const Bad& b : std::initializer_list<Bad>{
           {"not json", "lease:"},
           {"[]", "not a JSON object"},
           {"{\"spec\":{}}", "metadata missing"},
           {"{\"metadata\":{}}", "resourceVersion missing"},
           {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":[]}", "spec is not an object"},
           {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":5}}",
            "spec.holderIdentity"},
           {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":\"15\"}}",
            "spec.leaseDurationSeconds"}}) {
    auto res = DecodeLease(b.body);
    ASSERT_FALSE(res.ok()) << b.body;
    EXPECT_NE(res.status().message().find(b.message), std::string::npos) << res.status().message();
  }
  auto empty = DecodeLease("{\"metadata\":{\"resourceVersion\":\"9\"}}");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->holder_identity, "") << "a Lease without spec is held by nobody";
}

TEST(ValidateLeaderElection, NamesTheFlag) {
  EXPECT_EQ(ValidateLeaderElection(Opts("a")), "");
  auto o = Opts("a");
  o.renew_deadline_seconds = 15;
  EXPECT_NE(ValidateLeaderElection(o).find("-leader_elect_lease_duration"), std::string::npos);
  o = Opts("a");
  o.retry_period_seconds = 9;
  EXPECT_NE(ValidateLeaderElection(o).find("-leader_elect_renew_deadline"), std::string::npos);
  o = Opts("a");
  o.lease_name = "Bad_Name";
  EXPECT_NE(ValidateLeaderElection(o).find("-leader_elect_name"), std::string::npos);
  o = Opts("a");
  o.lease_namespace = "a.b";
  EXPECT_NE(ValidateLeaderElection(o).find("-leader_elect_namespace"), std::string::npos);
  o = Opts("");
  EXPECT_NE(ValidateLeaderElection(o).find("-leader_elect_identity"), std::string::npos);
  o = Opts("pod\r\nX-Injected: 1");
  EXPECT_NE(ValidateLeaderElection(o).find("control characters"), std::string::npos);
  o = Opts(std::string(300, 'a'));
  EXPECT_NE(ValidateLeaderElection(o).find("at most 253"), std::string::npos);
  EXPECT_NE(DefaultIdentity(), DefaultIdentity()) << "two processes on one host differ";
}

class TwoReplicas : public ::testing::Test {
 protected:
  FakeKubeApi api_;
  FakeClock clock_;
  LeaderElector a_{&api_, &clock_, Opts("a")};
  LeaderElector b_{&api_, &clock_, Opts("b")};
};

TEST_F(TwoReplicas, FirstTakesItSecondWaitsThenTakesOverAfterTheLeaseDuration) {
  EXPECT_TRUE(a_.TryAcquireOrRenew());
  EXPECT_TRUE(a_.IsLeader());
  EXPECT_EQ(a_.Term(), 1u);
  EXPECT_FALSE(b_.TryAcquireOrRenew());
  EXPECT_FALSE(b_.IsLeader());
  EXPECT_EQ(b_.GetView().holder, "a");
  // a renews every 2 s for a minute: b never gets it.
  for (int i = 0; i < 30; ++i) {
    clock_.AdvanceSeconds(2);
    EXPECT_TRUE(a_.TryAcquireOrRenew());
    EXPECT_FALSE(b_.TryAcquireOrRenew());
  }
  EXPECT_EQ(api_.leases()["kube-system/dynamic-scheduler"].lease_transitions, 0);
  // a dies (stops renewing). b saw the last renewal at t; it takes over at t + 15 s, not before;
  // a stopped counting itself leader at t + 10 s.
  double waited = 0;
  while (!b_.TryAcquireOrRenew()) {
    clock_.AdvanceSeconds(0.5);
    waited += 0.5;
    ASSERT_LT(waited, 30);
  }
  EXPECT_GE(waited, 15);
  EXPECT_LE(waited, 15.5);
  EXPECT_FALSE(a_.IsLeader()) << "the renew deadline passed long before the takeover";
  auto lease = api_.leases()["kube-system/dynamic-scheduler"];
  EXPECT_EQ(lease.holder_identity, "b");
  EXPECT_EQ(lease.lease_transitions, 1);
  // a comes back: it reads b's lease, stays standby.
  EXPECT_FALSE(a_.TryAcquireOrRenew());
  EXPECT_FALSE(a_.IsLeader());
}

TEST_F(TwoReplicas, StandbyRunLoopWakesWhenTheLeaseRunsOut) {
  // The whole Run loop on fake time: its waits go through the clock, so this needs no thread.
  ASSERT_TRUE(a_.TryAcquireOrRenew());  // a takes the lease at t0 and then dies
  const TimePoint t0 = clock_.Now();
  std::atomic<bool> stop{false};
  b_.Run(&stop, [&](bool leader) {
    if (leader) stop = true;
  });
  const double waited = ToSeconds(clock_.Now() - t0);
  EXPECT_GE(waited, 15) << "not before the lease duration";
  EXPECT_LE(waited, 15.05) << "woken at expiry, not up to a retry period (2-2.4 s) later";
  EXPECT_FALSE(b_.IsLeader()) << "Run released the lease on stop";
  EXPECT_EQ(api_.leases()["kube-system/dynamic-scheduler"].holder_identity, "");
}

TEST_F(TwoReplicas, ReleaseHandsOverWithinOneRetry) {
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  ASSERT_FALSE(b_.TryAcquireOrRenew());
  clock_.AdvanceSeconds(1);
  a_.Release();
  EXPECT_FALSE(a_.IsLeader());
  EXPECT_EQ(api_.leases()["kube-system/dynamic-scheduler"].holder_identity, "");
  clock_.AdvanceSeconds(2);
  EXPECT_TRUE(b_.TryAcquireOrRenew()) << "a released lease is free at once";
  b_.Release();
  a_.Release();  // not the holder: must not touch b's lease
  EXPECT_EQ(api_.leases()["kube-system/dynamic-scheduler"].holder_identity, "");
}

// kubectl delete lease while a leads: a keeps writing labels until its renew deadline, so b, which
// saw a's last renewal, must not create the Lease before that renewal would have expired.
TEST_F(TwoReplicas, DeletedLeaseIsNotTakenBeforeTheHolderSeenWouldHaveExpired) {
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  clock_.AdvanceSeconds(2);
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  ASSERT_FALSE(b_.TryAcquireOrRenew());  // b sees a's renewal now
  const TimePoint seen = clock_.Now();
  api_.DeleteLease(kNs, kName);
  // a is cut off from the API server from here on (it never tries again), yet counts itself
  // leader until its renew deadline.
  while (!b_.TryAcquireOrRenew()) {
    ASSERT_FALSE(a_.IsLeader() && b_.IsLeader());
    clock_.AdvanceSeconds(0.5);
    ASSERT_LT(ToSeconds(clock_.Now() - seen), 30);
  }
  EXPECT_GE(ToSeconds(clock_.Now() - seen), 15) << "not before a's lease, as b saw it, ran out";
  EXPECT_LE(ToSeconds(clock_.Now() - seen), 15.5);
  EXPECT_FALSE(a_.IsLeader());
  EXPECT_EQ(api_.leases()[kKey].holder_identity, "b");
}

// The same when b's reads lagged (failed, say) while a kept renewing, so that b missed renewals
// made before the deletion: a may write until a renew deadline after its last one, which came
// before b found the Lease missing.
TEST_F(TwoReplicas, DeletedLeaseAfterLaggingReadsWaitsARenewDeadline) {
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  ASSERT_FALSE(b_.TryAcquireOrRenew());  // b's last read: a's lease, now
  const TimePoint seen = clock_.Now();
  for (int i = 0; i < 4; ++i) {  // a renews; b does not read
    clock_.AdvanceSeconds(2);
    ASSERT_TRUE(a_.TryAcquireOrRenew());
  }
  api_.DeleteLease(kNs, kName);
  while (!b_.TryAcquireOrRenew()) {
    ASSERT_FALSE(a_.IsLeader() && b_.IsLeader()) << ToSeconds(clock_.Now() - seen);
    clock_.AdvanceSeconds(0.5);
    ASSERT_LT(ToSeconds(clock_.Now() - seen), 30);
  }
  EXPECT_GE(ToSeconds(clock_.Now() - seen), 18) << "a renew deadline after b found it missing";
  EXPECT_LE(ToSeconds(clock_.Now() - seen), 18.5);
}

TEST_F(TwoReplicas, ReplicasThatSawNoOtherHolderRecreateADeletedLeaseAtOnce) {
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  api_.DeleteLease(kNs, kName);
  clock_.AdvanceSeconds(2);
  EXPECT_TRUE(a_.TryAcquireOrRenew()) << "the holder itself recreates it";
  EXPECT_EQ(a_.Term(), 1u) << "without a new term";
  EXPECT_EQ(api_.leases()[kKey].holder_identity, "a");
  LeaderElector c(&api_, &clock_, Opts("c"));  // never saw a holder
  api_.DeleteLease(kNs, kName);
  EXPECT_TRUE(c.TryAcquireOrRenew());
}

TEST_F(TwoReplicas, StandbyRunLoopWaitsOutADeletedLease) {
  ASSERT_TRUE(a_.TryAcquireOrRenew());  // a takes the lease at t0 and then dies
  const TimePoint t0 = clock_.Now();
  ASSERT_FALSE(b_.TryAcquireOrRenew());
  api_.DeleteLease(kNs, kName);
  std::atomic<bool> stop{false};
  b_.Run(&stop, [&](bool leader) {
    if (leader) stop = true;
  });
  const double waited = ToSeconds(clock_.Now() - t0);
  EXPECT_GE(waited, 15) << "not before a's lease as b saw it ran out";
  EXPECT_LE(waited, 15.05) << "woken when it runs out, not up to a retry period later";
}

// Renewals, takeovers and releases replace the whole object (PUT): whatever they leave out is
// gone. They must send back what they read with only the election fields changed.
TEST_F(TwoReplicas, RenewalTakeoverAndReleaseKeepTheObjectAsRead) {
  ASSERT_TRUE(api_.SetLeaseObject(kNs, kName, kDecoratedLease).ok());
  ASSERT_FALSE(a_.TryAcquireOrRenew());
  clock_.AdvanceSeconds(15);
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  {
    SCOPED_TRACE("takeover");
    ExpectDecorationsKept(api_.leases()[kKey].object, "a");
    EXPECT_EQ(api_.leases()[kKey].lease_transitions, 4);
  }
  clock_.AdvanceSeconds(2);
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  {
    SCOPED_TRACE("renewal");
    ExpectDecorationsKept(api_.leases()[kKey].object, "a");
  }
  a_.Release();
  {
    SCOPED_TRACE("release");
    ExpectDecorationsKept(api_.leases()[kKey].object, "");
  }
  ASSERT_TRUE(b_.TryAcquireOrRenew());
  {
    SCOPED_TRACE("takeover of a released lease");
    ExpectDecorationsKept(api_.leases()[kKey].object, "b");
  }
}

// A FakeClock on which a sleep waits, for real, until the test opens the gate (fake time then
// jumps to its deadline as usual): a Run on another thread is held between two attempts, where
// the test wants it, instead of racing fake time ahead.
class GatedClock : public FakeClock {
 public:
  bool SleepUntil(TimePoint deadline, const std::atomic<bool>* stop) const override {
    {
      MutexLock l(&gate_mu_);
      ++sleepers_;
      gate_cv_.SignalAll();
      while (!open_) gate_cv_.Wait(&gate_mu_);
      --sleepers_;
    }
    return FakeClock::SleepUntil(deadline, stop);
  }
  // Waits (up to 10 s) until a thread sleeps; false if none did.
  bool AwaitSleeper() {
    MutexLock l(&gate_mu_);
    return gate_cv_.WaitFor(&gate_mu_, std::chrono::seconds(10),
                            [this]() REQUIRES(gate_mu_) { return sleepers_ > 0; });
  }
  void Open() {
    MutexLock l(&gate_mu_);
    open_ = true;
    gate_cv_.SignalAll();
  }

 private:
  mutable Mutex gate_mu_;
  mutable CondVar gate_cv_;
  mutable int sleepers_ GUARDED_BY(gate_mu_) = 0;
  bool open_ GUARDED_BY(gate_mu_) = false;
};

// Shutdown: main releases from its own thread while Run is still looping (the evaluation loop may
// be stuck in a label write for 30 s, and Run's stop flag comes only after it).
TEST_F(TwoReplicas, ReleaseFromAnotherThreadWhileRunLoops) {
  GatedClock gated;
  LeaderElector a(&api_, &gated, Opts("a"));
  Mutex mu;
  std::vector<double> release_timeouts;  // guarded by mu
  bool leader_during_release = false;    // guarded by mu
  api_.OnLeaseWrite([&](const LeaseRecord& stored, double timeout) {
    if (!stored.holder_identity.empty()) return;
    MutexLock l(&mu);
    release_timeouts.push_back(timeout);
    leader_during_release = leader_during_release || a.IsLeader();
  });
  std::promise<void> returned;
  auto returned_future = returned.get_future();
  std::vector<bool> announced;  // Run's thread until it returned
  std::atomic<bool> stop{false};
  std::thread run([&] {
    a.Run(&stop, [&](bool leader) { announced.push_back(leader); });
    returned.set_value();
  });
  ASSERT_TRUE(gated.AwaitSleeper());  // a took the lease and waits to renew it
  ASSERT_TRUE(a.IsLeader());

  a.Release();
  EXPECT_FALSE(a.IsLeader()) << "stepped down";
  EXPECT_EQ(api_.leases()[kKey].holder_identity, "");
  {
    MutexLock l(&mu);
    ASSERT_EQ(release_timeouts.size(), 1u);
    EXPECT_LE(release_timeouts[0], 2) << "a release must not hold up shutdown";
    EXPECT_FALSE(leader_during_release) << "stepped down before writing the release";
  }
  gated.Open();  // Run wakes up
  const bool ended = returned_future.wait_for(std::chrono::seconds(3)) == std::future_status::ready;
  EXPECT_TRUE(ended) << "Run returns once released, without its stop flag";
  stop = true;
  run.join();
  EXPECT_EQ(api_.leases()[kKey].holder_identity, "") << "Run did not take it back";
  EXPECT_FALSE(a.IsLeader());
  EXPECT_EQ(a.Term(), 1u);
  EXPECT_EQ(announced, (std::vector<bool>{true, false}));
  api_.OnLeaseWrite(nullptr);
  EXPECT_TRUE(b_.TryAcquireOrRenew()) << "a standby takes it at once";
  b_.Release();
  EXPECT_TRUE(a.TryAcquireOrRenew()) << "asked explicitly, it campaigns again";
}

// The same while a renewal is in flight: it lands first, so the release's precondition is stale;
// and its answer arrives after the release, when it must not make a leader again.
TEST_F(TwoReplicas, ReleaseWhileARenewalIsInFlight) {
  std::promise<void> landed;
  std::promise<void> released;
  std::shared_future<void> released_future = released.get_future().share();
  int writes_by_a = 0;  // Run's thread only
  api_.OnLeaseWrite([&](const LeaseRecord& stored, double) {
    if (stored.holder_identity != "a" || ++writes_by_a != 2) return;
    landed.set_value();  // the first renewal is stored; its answer waits for the release
    released_future.wait();
  });
  std::promise<void> returned;
  auto returned_future = returned.get_future();
  std::atomic<bool> stop{false};
  std::thread run([&] {
    a_.Run(&stop, nullptr);
    returned.set_value();
  });
  ASSERT_EQ(landed.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(a_.IsLeader());

  a_.Release();
  EXPECT_FALSE(a_.IsLeader());
  EXPECT_EQ(api_.leases()[kKey].holder_identity, "")
      << "released despite the renewal landing first";
  released.set_value();  // now the renewal's answer arrives
  const bool ended = returned_future.wait_for(std::chrono::seconds(3)) == std::future_status::ready;
  EXPECT_TRUE(ended) << "Run returns once released";
  stop = true;
  run.join();
  EXPECT_FALSE(a_.IsLeader()) << "a renewal sent before the release does not make a leader";
  EXPECT_EQ(a_.Term(), 1u);
  EXPECT_EQ(api_.leases()[kKey].holder_identity, "");
}

TEST_F(TwoReplicas, LeaderStopsWritingWhenItCannotRenew) {
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  api_.set_lease_down(true);
  for (double t = 0; t < 9.5; t += 2) {
    EXPECT_TRUE(a_.IsLeader()) << "within the renew deadline at " << t;
    EXPECT_FALSE(a_.TryAcquireOrRenew());
    clock_.AdvanceSeconds(2);
  }
  clock_.AdvanceSeconds(0.5);
  EXPECT_FALSE(a_.IsLeader()) << "10 s without a renewal: no more writes, even before Run notices";
  EXPECT_NE(a_.GetView().last_error.find("lease API down"), std::string::npos);
  api_.set_lease_down(false);
  EXPECT_TRUE(a_.TryAcquireOrRenew()) << "nobody took it: renewing is allowed";
  EXPECT_TRUE(a_.IsLeader());
}

// Random interleavings of two replicas, clock steps and API outages; after every step at most
// one replica may consider itself leader. This is the "never two writers" invariant.
TEST_F(TwoReplicas, NeverTwoLeadersUnderRandomSchedules) {
  std::mt19937 rng(12345);
  int handovers = 0;
  std::string last_holder;
  for (int step = 0; step < 20000; ++step) {
    switch (rng() % 8) {
      case 0:
      case 1:
      case 2:
        a_.TryAcquireOrRenew();
        break;
      case 3:
      case 4:
        b_.TryAcquireOrRenew();
        break;
      case 5:
        clock_.AdvanceSeconds(std::uniform_real_distribution<double>(0, 6)(rng));
        break;
      case 6:
        api_.set_lease_down(rng() % 4 == 0);
        break;
      case 7:
        if (rng() % 50 == 0) (rng() % 2 ? a_ : b_).Release();
        break;
    }
    ASSERT_FALSE(a_.IsLeader() && b_.IsLeader()) << "step " << step;
    std::string holder = a_.IsLeader() ? "a" : b_.IsLeader() ? "b" : "";
    if (!holder.empty() && holder != last_holder) {
      ++handovers;
      last_holder = holder;
    }
  }
  EXPECT_GT(handovers, 20) << "the schedule must actually move the lease around";
  EXPECT_GT(a_.Term() + b_.Term(), 20u);
}

}  // namespace
}  // namespace ds
