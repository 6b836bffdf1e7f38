#include "controller/leader_elector.h"

#include <glog/logging.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

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

LeaseStep DecideLeaseStep(const LeaseRecord* current, TimePoint observed_at, TimePoint now,
                          double now_wall, const LeaderElectionOptions& o) {
  LeaseStep step;
  const std::string stamp = FormatMicroTime(now_wall);
  step.record.holder_identity = o.identity;
  step.record.lease_duration_seconds = LeaseSeconds(o);
  step.record.renew_time = stamp;
  if (current == nullptr) {
    step.action = LeaseAction::kCreate;
    step.record.acquire_time = stamp;
    return step;
  }
  const bool ours = current->holder_identity == o.identity;
  if (!ours && !current->holder_identity.empty()) {
    // Held by somebody else: valid until it has gone unrenewed for its duration on *our* clock.
    double duration = current->lease_duration_seconds > 0 ? current->lease_duration_seconds
                                                          : o.lease_duration_seconds;
    if (now < observed_at + FromSeconds(duration)) return step;  // kWait
  }
  step.action = LeaseAction::kUpdate;
  step.record.resource_version = current->resource_version;
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
  std::lock_guard<std::mutex> l(mu_);
  return RenewedWithinDeadline(clock_->Now());
}

uint64_t LeaderElector::Term() const {
  std::lock_guard<std::mutex> l(mu_);
  return term_;
}

LeaderElector::View LeaderElector::GetView() const {
  std::lock_guard<std::mutex> l(mu_);
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
    exists_ = false;
    observed_ = LeaseRecord();
    observed_at_ = now;
    return;
  }
  if (!exists_ || !rec->SameSpec(observed_)) observed_at_ = now;  // the holder renewed or changed
  observed_ = *rec;
  exists_ = true;
}

void LeaderElector::StepDown(const std::string& why) {
  if (!leader_) return;
  leader_ = false;
  LOG(WARNING) << "leader election: no longer the leader of lease " << options_.lease_namespace
               << "/" << options_.lease_name << " (" << why << "); label writes stop";
}

void LeaderElector::Held(const LeaseRecord& rec, TimePoint attempt) {
  std::lock_guard<std::mutex> l(mu_);
  Observe(&rec, clock_->Now());
  if (!leader_) {
    leader_ = true;
    ++term_;
    LOG(INFO) << "leader election: " << options_.identity << " is now the leader of lease "
              << options_.lease_namespace << "/" << options_.lease_name << " (transitions "
              << rec.lease_transitions << ")";
  }
  last_renew_ = attempt;
  last_error_.clear();
}

bool LeaderElector::TryAcquireOrRenew() {
  const TimePoint attempt = clock_->Now();
  const double timeout = RequestTimeout();
  // Renewing a lease we hold: write straight away with the resourceVersion of our last write; a
  // 409 means somebody else wrote it, and the read below finds out who.
  LeaseRecord renew;
  bool fast = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    fast =
        RenewedWithinDeadline(attempt) && exists_ && observed_.holder_identity == options_.identity;
    renew = observed_;
  }
  if (fast) {
    renew.renew_time = FormatMicroTime(clock_->WallSeconds());
    renew.lease_duration_seconds = LeaseSeconds(options_);
    auto res = kube_->WriteLease(options_.lease_namespace, options_.lease_name, renew, timeout);
    if (res.ok()) {
      Held(*res, attempt);
      return true;
    }
    std::lock_guard<std::mutex> l(mu_);
    last_error_ = res.status().ToString();
  }
  auto got = kube_->GetLease(options_.lease_namespace, options_.lease_name, timeout);
  if (!got.ok() && got.status().code() != StatusCode::kNotFound) {
    std::lock_guard<std::mutex> l(mu_);
    last_error_ = got.status().ToString();
    return false;  // could not ask: keep the current role until the renew deadline says otherwise
  }
  const TimePoint now = clock_->Now();
  TimePoint observed_at;
  {
    std::lock_guard<std::mutex> l(mu_);
    Observe(got.ok() ? &*got : nullptr, now);
    observed_at = observed_at_;
  }
  LeaseStep step = DecideLeaseStep(got.ok() ? &*got : nullptr, observed_at, now,
                                   clock_->WallSeconds(), options_);
  if (step.action == LeaseAction::kWait) {
    std::lock_guard<std::mutex> l(mu_);
    StepDown("the lease is held by " + got->holder_identity);
    return false;
  }
  auto res = kube_->WriteLease(options_.lease_namespace, options_.lease_name, step.record, timeout);
  if (!res.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    last_error_ = res.status().ToString();
    return false;  // 409: somebody else was faster; the next read shows who
  }
  Held(*res, attempt);
  return true;
}

void LeaderElector::Release() {
  LeaseRecord rec;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!leader_ || !exists_ || observed_.holder_identity != options_.identity) return;
    StepDown("released on shutdown");
    rec = observed_;
  }
  rec.holder_identity.clear();
  rec.lease_duration_seconds = 1;
  rec.acquire_time = rec.renew_time = FormatMicroTime(clock_->WallSeconds());
  auto res =
      kube_->WriteLease(options_.lease_namespace, options_.lease_name, rec, RequestTimeout());
  if (res.ok())
    LOG(INFO) << "leader election: released lease " << options_.lease_namespace << "/"
              << options_.lease_name;
  else
    LOG(WARNING)
        << "leader election: could not release the lease (a standby takes over when it expires): "
        << res.status().ToString();
}

void LeaderElector::Run(const std::atomic<bool>* stop, const std::function<void(bool)>& on_change) {
  std::uniform_real_distribution<double> jitter(0, kJitter);
  while (!stop->load()) {
    bool held = TryAcquireOrRenew();
    bool leader;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!held && leader_ && !RenewedWithinDeadline(clock_->Now()))
        StepDown("no renewal succeeded within the renew deadline: " + last_error_);
      leader = leader_;
    }
    if (!held && !leader) {
      std::lock_guard<std::mutex> l(mu_);
      if (!last_error_.empty() && throttle_.ShouldLog(last_error_, clock_->Now()))
        LOG(WARNING) << "leader election: " << last_error_;
    }
    if (leader != announced_leader_) {
      announced_leader_ = leader;
      if (on_change) on_change(leader);
    }
    double wait = options_.retry_period_seconds * (leader ? 1 : 1 + jitter(rng_));
    if (!leader) {
      // Wake up when the holder's lease runs out rather than up to a retry period later.
      std::lock_guard<std::mutex> l(mu_);
      if (exists_ && !observed_.holder_identity.empty() &&
          observed_.holder_identity != options_.identity) {
        double duration = observed_.lease_duration_seconds > 0 ? observed_.lease_duration_seconds
                                                               : options_.lease_duration_seconds;
        double until_expiry = ToSeconds(observed_at_ + FromSeconds(duration) - clock_->Now());
        if (until_expiry > 0 && until_expiry < wait) wait = until_expiry + 0.01;
      }
    }
    clock_->SleepFor(FromSeconds(wait), stop);
  }
  Release();
  if (announced_leader_ && on_change) on_change(false);
  announced_leader_ = false;
}

}  // namespace ds
