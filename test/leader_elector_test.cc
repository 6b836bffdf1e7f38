// Leader election: the pure acquire/renew decision as a table, then two electors sharing one
// fake API server and one fake clock, driven through random interleavings and outages while the
// test checks after every step that at most one of them may write.
#include "controller/leader_elector.h"

#include <gtest/gtest.h>

#include <random>

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
  return r;
}

TEST(DecideLeaseStep, Table) {
  const TimePoint t0{std::chrono::hours(5)};
  const double wall = 1.8e9;
  const std::string stamp = FormatMicroTime(wall);
  auto opts = Opts("me");
  struct Case {
    const char* what;
    std::optional<LeaseRecord> current;
    double seconds_since_observed;
    LeaseAction action;
    int transitions;
    bool keeps_acquire_time;
  };
  LeaseRecord released = Held("");
  released.lease_duration_seconds = 1;
  LeaseRecord long_lease = Held("other");
  long_lease.lease_duration_seconds = 60;
  const Case cases[] = {
      {"no lease yet: create it", std::nullopt, 0, LeaseAction::kCreate, 0, false},
      {"another holder renewed recently: wait", Held("other"), 14.9, LeaseAction::kWait, 0, false},
      {"another holder silent for the lease duration: take over", Held("other"), 15,
       LeaseAction::kUpdate, 4, false},
      {"the holder's own longer duration is respected", long_lease, 30, LeaseAction::kWait, 0,
       false},
      {"released lease: take it at once", released, 0, LeaseAction::kUpdate, 4, false},
      {"our own lease: renew, same acquire time and transitions", Held("me"), 0,
       LeaseAction::kUpdate, 3, true},
      {"our own lease even when we saw it long ago", Held("me"), 100, LeaseAction::kUpdate, 3,
       true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    LeaseStep s = DecideLeaseStep(c.current ? &*c.current : nullptr, t0,
                                  t0 + FromSeconds(c.seconds_since_observed), wall, opts);
    ASSERT_EQ(s.action, c.action);
    if (s.action == LeaseAction::kWait) continue;
    EXPECT_EQ(s.record.holder_identity, "me");
    EXPECT_EQ(s.record.lease_duration_seconds, 15);
    EXPECT_EQ(s.record.renew_time, stamp);
    EXPECT_EQ(s.record.lease_transitions, c.transitions);
    EXPECT_EQ(s.record.acquire_time, c.keeps_acquire_time ? c.current->acquire_time : stamp);
    EXPECT_EQ(s.record.resource_version, c.current ? c.current->resource_version : "")
        << "an update carries the resourceVersion it read as precondition";
  }
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
