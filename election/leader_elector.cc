#include "election/leader_elector.h"

#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "common/log_fields.h"

namespace ds {
namespace {

// client-go's JitterFactor: a candidate waits retry * [1, 1.2) so that candidates spread out.
constexpr double kJitter = 0.2;

std::string Num(double v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// leaseDurationSeconds is an integer: round a fractional duration up, never down.
int LeaseSeconds(const LeaderElectionOptions& o) {
  return static_cast<int>(std::ceil(o.lease_duration_seconds));
}

// The earliest time this replica may write the lease (DecideLeaseStep's arguments); nullopt when
// no other holder may still be writing (free, released, ours, or never seen held).
std::optional<TimePoint> NotBefore(const LeaseRecord* current, const LeaseRecord* last_seen,
                                   TimePoint observed_at, TimePoint missing_since,
                                   const LeaderElectionOptions& o) {
  const LeaseRecord* seen = current != nullptr ? current : last_seen;
  if (seen == nullptr || seen->holder_identity.empty() || seen->holder_identity == o.identity)
    return std::nullopt;
  // Held by somebody else: valid until it has gone unrenewed for its duration on *our* clock.
  double duration =
      seen->lease_duration_seconds > 0 ? seen->lease_duration_seconds : o.lease_duration_seconds;
  TimePoint until = observed_at + FromSeconds(duration);
  if (current == nullptr) {
    // Deleted under a live holder, which keeps writing until its renew deadline: its lease as we
    // saw it is waited out just as if the object were still there. It may also have renewed
    // after our last read, unseen, just before the deletion; then it stops writing at the latest
    // a renew deadline (ours: replicas share their flags) after the deletion, which came before
    // we found the Lease missing. That bound is the later one only when the record we saw last
    // had been unchanged for more than lease duration - renew deadline by then: the holder's
    // renewals had stalled (it may have come back since), or our reads lagged.
    until = std::max(until, missing_since + FromSeconds(o.renew_deadline_seconds));
  }
  return until;
}

// Kubernetes object names: a DNS subdomain (namespaces: a DNS label, at most 63).
bool IsDnsName(const std::string& s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!alnum(c) && c != '-' && (max == 63 || c != '.')) return false;
  return true;
}

}  // namespace

std::string ValidateLeaderElection(const LeaderElectionOptions& o) {
  if (!IsDnsName(o.lease_namespace, 63))
    return "-leader_elect_namespace \"" + o.lease_namespace +
           "\" is not a valid namespace (lower-case DNS label)";
  if (!IsDnsName(o.lease_name, 253))
    return "-leader_elect_name \"" + o.lease_name +
           "\" is not a valid object name (lower-case DNS subdomain)";
  if (o.identity.empty()) return "-leader_elect_identity must not be empty";
  for (unsigned char c : o.identity)  // it also goes into the User-Agent header
    if (c < 0x20 || c == 0x7f) return "-leader_elect_identity must not contain control characters";
  if (o.identity.size() > 253) return "-leader_elect_identity must be at most 253 characters";
  if (!(o.retry_period_seconds > 0)) return "-leader_elect_retry_period must be > 0";
  if (!(o.renew_deadline_seconds > (1 + kJitter) * o.retry_period_seconds))
    return "-leader_elect_renew_deadline (" + Num(o.renew_deadline_seconds) +
           " s) must be greater than 1.2 x -leader_elect_retry_period (" +
           Num(o.retry_period_seconds) + " s)";
  if (!(o.lease_duration_seconds > o.renew_deadline_seconds))
    return "-leader_elect_lease_duration (" + Num(o.lease_duration_seconds) +
           " s) must be greater than -leader_elect_renew_deadline (" +
           Num(o.renew_deadline_seconds) +
           " s): the margin between them is what keeps two replicas from writing at once";
  if (o.lease_duration_seconds > 86400)
    return "-leader_elect_lease_duration must be at most 86400 s";
  return "";
}

std::string DefaultIdentity() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0')
    snprintf(host, sizeof(host), "unknown");
  std::random_device rd;
  char suffix[16];
  snprintf(suffix, sizeof(suffix), "%08x", static_cast<unsigned>(rd()));
  return std::string(host) + "_" + suffix;
}

LeaseStep DecideLeaseStep(const LeaseRecord* current, const LeaseRecord* last_seen,
                          TimePoint observed_at, TimePoint missing_since, TimePoint now,
                          double now_wall, const LeaderElectionOptions& o) {
  LeaseStep step;
  const std::string stamp = FormatMicroTime(now_wall);
  step.record.holder_identity = o.identity;
  step.record.lease_duration_seconds = LeaseSeconds(o);
  step.record.renew_time = stamp;
  std::optional<TimePoint> not_before =
      NotBefore(current, last_seen, observed_at, missing_since, o);
  if (not_before && now < *not_before) return step;  // kWait
  if (current == nullptr) {
    step.action = LeaseAction::kCreate;
    step.record.acquire_time = stamp;
    return step;
  }
  const bool ours = current->holder_identity == o.identity;
  step.action = LeaseAction::kUpdate;
  step.record.resource_version = current->resource_version;
  step.record.object = current->object;  // a PUT replaces the object: change only our fields
  if (ours && !current->acquire_time.empty()) {
    step.record.acquire_time = current->acquire_time;
    step.record.lease_transitions = current->lease_transitions;
  } else {
    step.record.acquire_time = stamp;
    step.record.lease_transitions =
        ours ? current->lease_transitions : current->lease_transitions + 1;
  }
  return step;
}

LeaderElector::LeaderElector(KubeApi* kube, const Clock* clock, LeaderElectionOptions options)
    : kube_(kube), clock_(clock), options_(std::move(options)) {}

double LeaderElector::RequestTimeout() const {
  // A read and a write must both fit in the renew deadline, with room for one more attempt.
  return std::max(0.5, options_.renew_deadline_seconds / 2.5);
}

bool LeaderElector::RenewedWithinDeadline(TimePoint now) const {
  return leader_ && now - last_renew_ < FromSeconds(options_.renew_deadline_seconds);
}

bool LeaderElector::IsLeader() const {
  MutexLock l(&mu_);
  return RenewedWithinDeadline(clock_->Now());
}

uint64_t LeaderElector::Term() const {
  MutexLock l(&mu_);
  return term_;
}

LeaderElector::View LeaderElector::GetView() const {
  MutexLock l(&mu_);
  View v;
  v.leader = RenewedWithinDeadline(clock_->Now());
  v.identity = options_.identity;
  v.holder = exists_ ? observed_.holder_identity : "";
  v.terms = term_;
  v.last_error = last_error_;
  return v;
}

void LeaderElector::Observe(const LeaseRecord* rec, TimePoint now) {
  if (rec == nullptr) {
    // observed_ and observed_at_ stay: a holder seen before the deletion is waited out.
    if (!missing_) missing_since_ = now;
    exists_ = false;
    missing_ = true;
    return;
  }
  missing_ = false;
  if (!exists_ || !rec->SameSpec(observed_)) observed_at_ = now;  // the holder renewed or changed
  observed_ = *rec;
  exists_ = true;
}

void LeaderElector::StepDown(const std::string& why) {
  if (!leader_) return;
  leader_ = false;
  LOG(WARNING) << "leader election: no longer the leader; label writes stop"
               << Fields("lease", options_.lease_namespace + "/" + options_.lease_name, "term",
                         term_, "reason", why);
}

bool LeaderElector::Held(const LeaseRecord& rec, TimePoint attempt, uint64_t epoch) {
  {
    MutexLock l(&mu_);
    if (epoch == epoch_) {
      Observe(&rec, clock_->Now());
      if (!leader_) {
        leader_ = true;
        ++term_;
        LOG(INFO) << "leader election: now the leader"
                  << Fields("identity", options_.identity, "lease",
                            options_.lease_namespace + "/" + options_.lease_name, "term", term_,
                            "transitions", rec.lease_transitions);
      }
      last_renew_ = attempt;
      last_error_.clear();
      return true;
    }
  }
  // A release began while this write was on its way, and the write landed after it: the lease
  // names us again. Give it up again rather than leave a standby waiting for it to expire.
  LOG(INFO) << "leader election: a lease write sent before the release landed after it; "
               "releasing again";
  WriteReleased(rec, clock_->Now() + FromSeconds(kReleaseSeconds));
  return false;
}

bool LeaderElector::TryAcquireOrRenew() {
  uint64_t epoch;
  {
    MutexLock l(&mu_);
    released_ = false;  // an explicit attempt re-enters the election
    epoch = epoch_;
  }
  return Attempt(epoch);
}

bool LeaderElector::Attempt(uint64_t epoch) {
  const TimePoint attempt = clock_->Now();
  const double timeout = RequestTimeout();
  // Renewing a lease we hold: write straight away with the resourceVersion of our last write; a
  // 409 means somebody else wrote it, and the read below finds out who.
  LeaseRecord renew;
  bool fast = false;
  {
    MutexLock l(&mu_);
    if (epoch != epoch_) return false;  // released since: write nothing
    fast =
        RenewedWithinDeadline(attempt) && exists_ && observed_.holder_identity == options_.identity;
    renew = observed_;
  }
  if (fast) {
    renew.renew_time = FormatMicroTime(clock_->WallSeconds());
    renew.lease_duration_seconds = LeaseSeconds(options_);
    auto res = kube_->WriteLease(options_.lease_namespace, options_.lease_name, renew, timeout);
    if (res.ok()) return Held(*res, attempt, epoch);
    MutexLock l(&mu_);
    last_error_ = res.status().ToString();
  }
  auto got = kube_->GetLease(options_.lease_namespace, options_.lease_name, timeout);
  if (!got.ok() && got.status().code() != StatusCode::kNotFound) {
    MutexLock l(&mu_);
    last_error_ = got.status().ToString();
    return false;  // could not ask: keep the current role until the renew deadline says otherwise
  }
  const TimePoint now = clock_->Now();
  TimePoint observed_at;
  TimePoint missing_since;
  LeaseRecord last_seen;  // what we saw before, when the Lease turns out deleted
  {
    MutexLock l(&mu_);
    Observe(got.ok() ? &*got : nullptr, now);
    observed_at = observed_at_;
    missing_since = missing_since_;
    last_seen = observed_;
  }
  LeaseStep step = DecideLeaseStep(got.ok() ? &*got : nullptr, &last_seen, observed_at,
                                   missing_since, now, clock_->WallSeconds(), options_);
  if (step.action == LeaseAction::kWait) {
    const std::string why =
        got.ok() ? "the lease is held by " + got->holder_identity
                 : "the lease was deleted while held by " + last_seen.holder_identity +
                       "; it is created again once that holder's lease would have expired";
    if (!got.ok() && throttle_.ShouldLog(why, now))
      LOG(INFO) << "leader election: lease gone" << Fields("reason", why);
    MutexLock l(&mu_);
    StepDown(why);
    return false;
  }
  {
    MutexLock l(&mu_);
    if (epoch != epoch_) return false;  // released while we read: write nothing
  }
  auto res = kube_->WriteLease(options_.lease_namespace, options_.lease_name, step.record, timeout);
  if (!res.ok()) {
    MutexLock l(&mu_);
    last_error_ = res.status().ToString();
    return false;  // 409: somebody else was faster; the next read shows who
  }
  return Held(*res, attempt, epoch);
}

void LeaderElector::Release() {
  {
    MutexLock l(&mu_);
    released_ = true;
  }
  GiveUp("released");
}

void LeaderElector::GiveUp(const std::string& why) {
  const TimePoint deadline = clock_->Now() + FromSeconds(kReleaseSeconds);
  LeaseRecord rec;
  {
    MutexLock l(&mu_);
    ++epoch_;  // attempts in flight neither write again nor lead
    StepDown(why);
    if (!exists_ || observed_.holder_identity != options_.identity) return;
    rec = observed_;
  }
  WriteReleased(std::move(rec), deadline);
}

void LeaderElector::WriteReleased(LeaseRecord rec, TimePoint deadline) {
  const std::string lease = options_.lease_namespace + "/" + options_.lease_name;
  Status error = Status::Unavailable("no time left");
  // Three rounds: a renewal in flight may land first (409), and an attempt that sent it may race
  // us to release it again; each 409 is followed by a read that tells whether it is still ours.
  for (int round = 0; round < 3; ++round) {
    double left = ToSeconds(deadline - clock_->Now());
    if (left <= 0) break;
    rec.holder_identity.clear();
    rec.lease_duration_seconds = 1;
    rec.acquire_time = rec.renew_time = FormatMicroTime(clock_->WallSeconds());
    auto res = kube_->WriteLease(options_.lease_namespace, options_.lease_name, rec, left);
    if (res.ok()) {
      {
        MutexLock l(&mu_);
        Observe(&*res, clock_->Now());
      }
      LOG(INFO) << "leader election: released lease" << Fields("lease", lease);
      return;
    }
    error = res.status();
    if (error.code() == StatusCode::kNotFound) return;  // deleted: nothing left to release
    if (error.code() != StatusCode::kConflict) break;
    left = ToSeconds(deadline - clock_->Now());
    if (left <= 0) break;
    auto got = kube_->GetLease(options_.lease_namespace, options_.lease_name, left);
    if (!got.ok()) {
      if (got.status().code() == StatusCode::kNotFound) return;
      error = got.status();
      break;
    }
    {
      MutexLock l(&mu_);
      Observe(&*got, clock_->Now());
    }
    if (got->holder_identity != options_.identity) return;  // released already, or taken over
    rec = *got;
  }
  LOG(WARNING) << "leader election: could not release lease (a standby takes it over when it "
                  "expires)"
               << Fields("lease", lease, "err", error);
}

void LeaderElector::Run(const std::atomic<bool>* stop, const std::function<void(bool)>& on_change) {
  std::uniform_real_distribution<double> jitter(0, kJitter);
  while (!stop->load()) {
    uint64_t epoch;
    {
      MutexLock l(&mu_);
      if (released_) break;
      epoch = epoch_;
    }
    bool held = Attempt(epoch);
    bool leader;
    {
      MutexLock l(&mu_);
      if (!held && leader_ && !RenewedWithinDeadline(clock_->Now()))
        StepDown("no renewal succeeded within the renew deadline: " + last_error_);
      leader = leader_;
    }
    if (!held && !leader) {
      MutexLock l(&mu_);
      // Keyed by the kind of error only: messages carry timings and would never repeat.
      if (!last_error_.empty() &&
          throttle_.ShouldLog(last_error_.substr(0, last_error_.find(':')), clock_->Now()))
        LOG(WARNING) << "leader election: not the leader" << Fields("err", last_error_);
    }
    if (leader != announced_leader_) {
      announced_leader_ = leader;
      if (on_change) on_change(leader);
    }
    double wait = options_.retry_period_seconds * (leader ? 1 : 1 + jitter(rng_));
    {
      MutexLock l(&mu_);
      if (released_) break;  // released during the attempt: no need to sleep first
    }
    if (!leader) {
      // Wake up when the holder's lease runs out (also one seen before the Lease was deleted)
      // rather than up to a retry period later.
      MutexLock l(&mu_);
      if (auto expiry = NotBefore(exists_ ? &observed_ : nullptr, &observed_, observed_at_,
                                  missing_since_, options_)) {
        double until_expiry = ToSeconds(*expiry - clock_->Now());
        if (until_expiry > 0 && until_expiry < wait) wait = until_expiry + 0.01;
      }
    }
    clock_->SleepFor(FromSeconds(wait), stop);
  }
  GiveUp("stopped");
  if (announced_leader_ && on_change) on_change(false);
  announced_leader_ = false;
}

}  // namespace ds
