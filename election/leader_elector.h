// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics: a candidate
// takes the lease only when its holder has not renewed it for leaseDurationSeconds *as measured
// on the candidate's own clock* (from when it last saw the record change, so clock skew between
// machines does not matter); the holder renews every retry period and stops acting as leader when
// no renewal succeeded within the renew deadline, which is shorter than the lease duration. That
// margin is what keeps two replicas from writing at once. On a clean stop the holder releases the
// lease so that a standby takes over within one retry period instead of a lease duration.
#pragma once

#include <atomic>
#include <functional>
#include <random>
#include <string>

#include "common/clock.h"
#include "common/log_throttle.h"
#include "common/mutex.h"
#include "election/leadership.h"
#include "kube/kube_api.h"
#include "kube/lease.h"

namespace ds {

struct LeaderElectionOptions {
  std::string lease_namespace = "default";
  std::string lease_name = "dynamic-scheduler";
  std::string identity;  // unique per replica
  double lease_duration_seconds = 15;
  double renew_deadline_seconds = 10;
  double retry_period_seconds = 2;
};

// "" when the options can work, else what is wrong (names the flag's field).
std::string ValidateLeaderElection(const LeaderElectionOptions& o);

// hostname + "_" + random hex: unique per process, readable in `kubectl get lease`.
std::string DefaultIdentity();

// The pure decision of one acquire-or-renew attempt.
enum class LeaseAction {
  kWait,    // somebody else holds a lease that has not expired: do nothing
  kCreate,  // no Lease object yet: create it holding it ourselves
  kUpdate,  // take it over (expired or released) or renew our own: replace with `record`
};
struct LeaseStep {
  LeaseAction action = LeaseAction::kWait;
  LeaseRecord record;  // what to write for kCreate/kUpdate
};
// `current` is the Lease as just read (nullptr: it does not exist). While it exists, `observed_at`
// is when this replica first saw that exact record. When it does not, `last_seen` is the Lease as
// this replica last saw it (nullptr, or naming no other holder: it never saw one held by somebody
// else), `observed_at` when it first saw that record, and `missing_since` when it first found the
// Lease missing since. A Lease deleted under a live holder (`kubectl delete lease`) is created
// only once that holder's lease would have expired as seen, because the holder keeps writing
// until its renew deadline; and, as the holder may have renewed unseen between this replica's
// last read and the deletion, no sooner than a renew deadline after it found the Lease missing. A
// replica that never saw another holder creates it at once. Times are monotonic; `now_wall` stamps
// acquire/renew times. An update carries current->object, so that it changes only the election
// fields (see EncodeLease).
LeaseStep DecideLeaseStep(const LeaseRecord* current, const LeaseRecord* last_seen,
                          TimePoint observed_at, TimePoint missing_since, TimePoint now,
                          double now_wall, const LeaderElectionOptions& o);

class LeaderElector : public Leadership {
 public:
  // The most Release() takes, every request included: the lease is free well within 2 s of
  // SIGTERM, and a standby takes it within one retry period after that.
  static constexpr double kReleaseSeconds = 1.5;

  // `kube` and `clock` must outlive this object. REQUIRES: ValidateLeaderElection(options) == "".
  LeaderElector(KubeApi* kube, const Clock* clock, LeaderElectionOptions options);

  // One attempt to acquire or renew (client-go's tryAcquireOrRenew). Returns true when this
  // replica holds the lease afterwards. Steps down at once when the lease turns out to be held by
  // somebody else. An explicit call re-enters the election after Release(). Call from one thread
  // at a time, and not while Run runs (Run makes its own attempts).
  bool TryAcquireOrRenew();
  // Tries every retry period (jittered while a candidate) until *stop or Release(), then releases
  // the lease if this replica holds it. `on_change(true)` runs when this replica becomes leader,
  // `(false)` when it stops being leader (renew deadline passed, somebody else holds the lease,
  // released, or Run ends). After Release() Run makes no further attempt: it returns once its
  // attempt in flight is over, or when it next wakes (within 1.2 retry periods); called after
  // Release() it returns at once, until TryAcquireOrRenew() re-enters the election.
  void Run(const std::atomic<bool>* stop, const std::function<void(bool)>& on_change);
  // Gives the lease up and leaves the election, for shutdown. Thread-safe: call it from any thread,
  // also while Run loops on another one and has an attempt in flight. On SIGTERM, call it first,
  // before waiting for the evaluation loop (which may be stuck in a label write for its whole
  // timeout) and before Run's stop flag. In this order it:
  //  1. steps down: IsLeader() is false from here on, so the label writer's gate is shut, and no
  //     lease write of this elector starts any more. An attempt already sent cannot make this
  //     replica leader again; should its write land, that attempt releases the lease again.
  //  2. if the lease as last seen names this replica, writes it released (holder cleared, duration
  //     1 s), so that a standby takes it within one retry period. A renewal in flight that landed
  //     first makes this write fail with 409: it re-reads the lease and releases it again if it
  //     still names this replica. All within kReleaseSeconds; on failure (logged) a standby takes
  //     over when the lease expires.
  // Returns when done. Called again, or when the lease does not name this replica, it writes
  // nothing.
  void Release();

  bool IsLeader() const override;
  uint64_t Term() const override;

  struct View {
    bool leader = false;
    std::string identity;
    std::string holder;  // as last read ("" unknown or released)
    uint64_t terms = 0;
    std::string last_error;
  };
  View GetView() const;
  const LeaderElectionOptions& options() const { return options_; }

 private:
  // One acquire-or-renew attempt begun in release epoch `epoch`: once a release began after
  // that, it writes nothing more and does not become leader.
  bool Attempt(uint64_t epoch) EXCLUDES(mu_);
  // Records a successful write of `rec` (we hold it) made at `attempt` in `epoch`. Returns false,
  // and releases the lease again, when a release began since (the write landed after it).
  bool Held(const LeaseRecord& rec, TimePoint attempt, uint64_t epoch) EXCLUDES(mu_);
  // Steps down, ends the attempts in flight, and releases the lease if ours as last seen.
  void GiveUp(const std::string& why) EXCLUDES(mu_);
  // Writes `rec` (naming us) released by `deadline`, re-reading the lease after a 409.
  void WriteReleased(LeaseRecord rec, TimePoint deadline) EXCLUDES(mu_);
  void Observe(const LeaseRecord* rec, TimePoint now) REQUIRES(mu_);
  void StepDown(const std::string& why) REQUIRES(mu_);
  // Leader, and the last successful renewal younger than the renew deadline.
  bool RenewedWithinDeadline(TimePoint now) const REQUIRES(mu_);
  double RequestTimeout() const;

  KubeApi* const kube_;
  const Clock* const clock_;
  const LeaderElectionOptions options_;
  std::mt19937_64 rng_{std::random_device{}()};  // Run's thread only
  LogThrottle throttle_{60};                     // Run's thread only

  mutable Mutex mu_;
  bool exists_ GUARDED_BY(mu_) = false;  // the Lease object exists (as last read)
  // The Lease as last seen, and when this replica first saw that record. Kept when the Lease
  // turns out deleted, so that its holder's lease is waited out.
  LeaseRecord observed_ GUARDED_BY(mu_);
  TimePoint observed_at_ GUARDED_BY(mu_) = {};
  bool missing_ GUARDED_BY(mu_) = false;          // the last read found no Lease (404)
  TimePoint missing_since_ GUARDED_BY(mu_) = {};  // the first of those reads in a row
  bool leader_ GUARDED_BY(mu_) = false;
  TimePoint last_renew_ GUARDED_BY(mu_) = {};  // when the last successful renewal was sent
  uint64_t term_ GUARDED_BY(mu_) = 0;
  std::string last_error_ GUARDED_BY(mu_);
  uint64_t epoch_ GUARDED_BY(mu_) = 0;     // counts releases (see Attempt)
  bool released_ GUARDED_BY(mu_) = false;  // Release() was called, TryAcquireOrRenew() not since
  bool announced_leader_ = false;          // Run's thread only: what on_change was last told
};

}  // namespace ds
