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
#include <mutex>
#include <random>
#include <string>

#include "common/clock.h"
#include "common/log_throttle.h"
#include "controller/leadership.h"
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
// `current` is the Lease as just read (nullptr: it does not exist); `observed_at` is when this
// replica first saw that exact record (monotonic clock); `now_wall` stamps acquire/renew times.
LeaseStep DecideLeaseStep(const LeaseRecord* current, TimePoint observed_at, TimePoint now,
                          double now_wall, const LeaderElectionOptions& o);

class LeaderElector : public Leadership {
 public:
  // `kube` and `clock` must outlive this object. REQUIRES: ValidateLeaderElection(options) == "".
  LeaderElector(KubeApi* kube, const Clock* clock, LeaderElectionOptions options);

  // One attempt to acquire or renew (client-go's tryAcquireOrRenew). Returns true when this
  // replica holds the lease afterwards. Steps down at once when the lease turns out to be held by
  // somebody else. Call from one thread at a time (Run does).
  bool TryAcquireOrRenew();
  // Tries every retry period (jittered while a candidate) until *stop, then releases the lease if
  // this replica holds it. `on_change(true)` runs when this replica becomes leader, `(false)` when
  // it stops being leader (renew deadline passed, or somebody else holds the lease).
  void Run(const std::atomic<bool>* stop, const std::function<void(bool)>& on_change);
  // Gives the lease up: holder cleared, duration 1 s. Only if this replica holds it.
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
  // Records a successful write of `rec` (we hold it) made at `attempt`.
  void Held(const LeaseRecord& rec, TimePoint attempt);
  void Observe(const LeaseRecord* rec, TimePoint now);  // REQUIRES mu_ held
  void StepDown(const std::string& why);                // REQUIRES mu_ held
  // Leader, and the last successful renewal younger than the renew deadline. REQUIRES mu_ held.
  bool RenewedWithinDeadline(TimePoint now) const;
  double RequestTimeout() const;

  KubeApi* const kube_;
  const Clock* const clock_;
  const LeaderElectionOptions options_;
  std::mt19937_64 rng_{std::random_device{}()};  // Run's thread only
  LogThrottle throttle_{60};                     // Run's thread only

  mutable std::mutex mu_;
  bool exists_ = false;            // GUARDED_BY(mu_): the Lease object exists (as last read)
  LeaseRecord observed_;           // GUARDED_BY(mu_)
  TimePoint observed_at_{};        // GUARDED_BY(mu_)
  bool leader_ = false;            // GUARDED_BY(mu_)
  TimePoint last_renew_{};         // GUARDED_BY(mu_): when the last successful renewal was sent
  uint64_t term_ = 0;              // GUARDED_BY(mu_)
  std::string last_error_;         // GUARDED_BY(mu_)
  bool announced_leader_ = false;  // Run's thread only: what on_change was last told
};

}  // namespace ds
