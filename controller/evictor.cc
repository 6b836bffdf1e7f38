#include "controller/evictor.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/log_fields.h"
#include "common/value_format.h"
#include "rebalance/eviction_text.h"

namespace ds {

namespace {

const char* ResultName(EvictionResult::Kind k) {
  switch (k) {
    case EvictionResult::Kind::kEvicted:
      return "evicted";
    case EvictionResult::Kind::kInBackground:
      return "evicting_in_background";
    case EvictionResult::Kind::kBlockedByBudget:
      return "blocked_by_pdb";
    case EvictionResult::Kind::kMultipleBudgets:
      return "multiple_pdbs";
    case EvictionResult::Kind::kGone:
      return "gone";
    case EvictionResult::Kind::kError:
      return "error";
  }
  return "error";
}

}  // namespace

Labels EvictionAnnotations(const EvictionRecord& rec, bool drain) {
  Labels a;
  a.emplace_back(kEvictionReasonAnnotation, EvictionReason(rec, drain));
  a.emplace_back(kEvictionRequesterAnnotation, "dynamic-scheduler");
  if (!drain) {
    a.emplace_back(kEvictionRuleAnnotation, rec.rule);
    a.emplace_back(kEvictionValueAnnotation, FormatValue(rec.load, rec.unit));
    a.emplace_back(kEvictionGoalAnnotation, FormatValue(rec.goal, rec.unit));
  }
  if (!rec.to.empty()) a.emplace_back(kEvictionDestinationAnnotation, rec.to);
  return a;
}

std::string ReplacementSelector(const PodInfo& pod) {
  // The owner's stable hash label when there is one (a Deployment's ReplicaSet, a StatefulSet's
  // or DaemonSet's revision): labels an application changes at run time (a leader role) would
  // hide the replacement.
  for (const char* stable : {"pod-template-hash", "controller-revision-hash"})
    if (const std::string* v = FindLabel(pod.labels, stable)) return std::string(stable) + "=" + *v;
  std::string selector;
  for (const auto& [k, v] : pod.labels) selector += (selector.empty() ? "" : ",") + k + "=" + v;
  return selector;
}

Evictor::Evictor(const RebalanceConfig& cfg, KubeApi* kube, const Clock* clock, LedgerPlace ledger,
                 double max_settle_seconds, RebalanceTally* tally)
    : cfg_(cfg),
      kube_(kube),
      clock_(clock),
      max_settle_(max_settle_seconds),
      tally_(tally),
      ledger_(kube, std::move(ledger), 10, cfg.keep_decisions),
      budget_(cfg.limits) {}

bool Evictor::StartCycle(double now_wall, int weekday, int minute_of_day, uint64_t term) {
  budget_.StartCycle(now_wall, weekday, minute_of_day);
  events_.NewCycle();
  return ReadLedger(now_wall, term);
}

bool Evictor::ReadLedger(double now_wall, uint64_t term) {
  if (cfg_.dry_run) return true;  // a dry run writes no ledger; its budget is this process's
  if (ledger_read_ && term == term_) return true;
  ledger_read_ = false;  // a new term: what another replica evicted meanwhile counts too
  term_ = term;
  auto ledger = ledger_.Read(now_wall);
  if (!ledger.ok()) {
    tally_->Count(&RebalanceCounters::skips, "ledger_unreadable");
    if (throttle_.ShouldLog("ledger-read", clock_->Now()))
      LOG(WARNING) << "rebalance: the eviction ledger could not be read; nothing is evicted until "
                      "it can be, so that its limits hold"
                   << Fields("lease", ledger_.place().ns + "/" + ledger_.place().name, "err",
                             ledger.status());
    return false;
  }
  Restore(*ledger, now_wall);
  ledger_read_ = true;
  // The evictions on record, this replica's and its predecessors' (/explain after a restart).
  const std::deque<EvictionRecord> trail = ledger_.Trail();
  if (!trail.empty()) {
    const size_t keep = std::max(RebalanceTally::kRecentEvictions, cfg_.keep_decisions);
    tally_->Edit([&](RebalanceReport* r) { r->recent = MergeTrail(r->recent, trail, keep); });
  }
  return true;
}

void Evictor::FlushTrail(const std::function<bool()>& gate) {
  if (cfg_.dry_run) return;
  Status st = ledger_.Flush(clock_->WallSeconds(), gate);
  if (!st.ok() && st.code() != StatusCode::kCancelled &&
      throttle_.ShouldLog("trail-write", clock_->Now()))
    LOG(WARNING) << "rebalance: writing the decision trail failed; the results of this cycle's "
                    "evictions go with the next write"
                 << Fields("lease", ledger_.place().ns + "/" + ledger_.place().name, "err", st);
}

void Evictor::Restore(const std::vector<LedgerEntry>& ledger, double now_wall) {
  budget_.Restore(ledger);
  // What this replica knew of pods still leaving stays (the ledger has them too, and their
  // gone_wall); the rest come from the ledger as still listed, to be looked up.
  std::map<std::string, LeavingPod> known;
  for (LeavingPod& p : leaving_) known.emplace(p.uid.empty() ? p.pod : p.uid, std::move(p));
  leaving_.clear();
  awaited_.clear();
  for (const LedgerEntry& e : ledger) {
    const double age = now_wall - e.at_wall;
    // Past kInFlightLimitSeconds a pod counts as gone (ToLookUp): one evicted that long ago is
    // not looked up again, and a new leader does not know when it went.
    if (age < kInFlightLimitSeconds) {
      const std::string id = e.uid.empty() ? e.pod : e.uid;
      // Once per pod, the latest entry (the ledger is oldest first).
      leaving_.erase(std::remove_if(leaving_.begin(), leaving_.end(),
                                    [&](const LeavingPod& p) {
                                      return (p.uid.empty() ? p.pod : p.uid) == id;
                                    }),
                     leaving_.end());
      auto k = known.find(id);
      if (k != known.end()) {
        leaving_.push_back(k->second);
      } else {
        leaving_.push_back(LeavingPod{e.node, e.pod, e.uid, e.cpu, e.memory, e.at_wall, 0});
      }
    }
    double& last = last_eviction_[e.node];
    last = std::max(last, e.at_wall);
    if (age < cfg_.effect_window_seconds && !e.workload.empty() && !e.selector.empty())
      awaited_.push_back(AwaitedReplacement{e.workload, e.node, e.selector, e.at_wall, e.drain});
  }
  LOG(INFO) << "rebalance: limits and pods in motion read from the eviction ledger"
            << Fields("lease", ledger_.place().ns + "/" + ledger_.place().name, "evictions",
                      ledger.size(), "in_motion", leaving_.size());
}

Limit Evictor::NodeLimit(const std::string& node, double recorded_eviction_wall,
                         double now_wall) const {
  PodInfo probe;
  probe.node = node;
  Limit lim = budget_.Check(probe);
  // An eviction an earlier term recorded on the node: its cool-down holds here too.
  if (lim == Limit::kNone && now_wall - recorded_eviction_wall < cfg_.limits.node_cooldown_seconds)
    lim = Limit::kNodeCooldown;
  return lim;
}

size_t Evictor::RoomThisCycle() const {
  return cfg_.limits.per_cycle > budget_.evicted_this_cycle()
             ? cfg_.limits.per_cycle - budget_.evicted_this_cycle()
             : 0;
}

size_t Evictor::InFlight(const std::string& node, double now_wall) const {
  size_t n = 0;
  for (const LeavingPod& p : leaving_)
    n += p.node == node && p.gone_wall <= 0 && now_wall - p.evicted_wall < kInFlightLimitSeconds;
  return n;
}

double Evictor::LastEviction(const std::string& node) const {
  auto it = last_eviction_.find(node);
  return it == last_eviction_.end() ? 0 : it->second;
}

bool Evictor::StillListed(const PodInfo& pod) const {
  const std::string id = pod.Id();
  return std::any_of(leaving_.begin(), leaving_.end(), [&](const LeavingPod& p) {
    return p.gone_wall <= 0 && (p.uid.empty() ? p.pod : p.uid) == id;
  });
}

void Evictor::Gone(const std::string& id, double now_wall) {
  for (LeavingPod& p : leaving_)
    if ((p.uid.empty() ? p.pod : p.uid) == id && p.gone_wall <= 0) p.gone_wall = now_wall;
}

std::vector<const LeavingPod*> Evictor::ToLookUp(double now_wall) {
  for (LeavingPod& p : leaving_) {
    if (p.gone_wall > 0 || now_wall - p.evicted_wall < kInFlightLimitSeconds) continue;
    // Still there after any sensible grace period (stuck on an unreachable node, or the eviction
    // never happened): it holds the mark no longer, is not looked up again, and its usage counts
    // as gone from now on.
    LOG(WARNING) << "rebalance: a pod evicted long ago may still be there; it no longer holds "
                    "the node's mark"
                 << Fields("pod", p.pod, "node", p.node, "evicted_s_ago", kInFlightLimitSeconds);
    p.gone_wall = now_wall;
  }
  // Forgotten once its usage can no longer be in any rule's value.
  leaving_.erase(
      std::remove_if(leaving_.begin(), leaving_.end(),
                     [&](const LeavingPod& p) { return !StillLeaving(p, max_settle_, now_wall); }),
      leaving_.end());
  for (auto it = last_eviction_.begin(); it != last_eviction_.end();)
    it = now_wall - it->second >= std::max(cfg_.hold_after_eviction_seconds, kLedgerSpanSeconds)
             ? last_eviction_.erase(it)
             : std::next(it);
  std::vector<const LeavingPod*> out;
  for (const LeavingPod& p : leaving_)
    if (p.gone_wall <= 0) out.push_back(&p);
  return out;
}

void Evictor::Replaced(size_t i) {
  budget_.Replaced(awaited_[i].workload);
  awaited_.erase(awaited_.begin() + static_cast<std::ptrdiff_t>(i));
}

void Evictor::ExpireAwaited(double now_wall) {
  awaited_.erase(std::remove_if(awaited_.begin(), awaited_.end(),
                                [&](const AwaitedReplacement& e) {
                                  return now_wall - e.at_wall >= cfg_.effect_window_seconds;
                                }),
                 awaited_.end());
}

void Evictor::TakeBack(const PodInfo& pod, double at_wall, const std::function<bool()>& gate) {
  Status st = ledger_.Remove(pod.Key(), at_wall, clock_->WallSeconds(), gate);
  if (st.ok()) return;
  // The entry stays: the next leader counts an eviction that did not happen (one too many).
  tally_->Count(&RebalanceCounters::skips, "ledger_takeback_failed");
  if (throttle_.ShouldLog("ledger-remove", clock_->Now()))
    LOG(WARNING) << "rebalance: taking a refused eviction back out of the eviction ledger failed; "
                    "it counts against the limits until it is an hour old"
                 << Fields("pod", pod.Key(), "err", st);
}

void Evictor::Charge(const PodInfo& pod, const std::string& node, double at_wall, double cpu,
                     double memory) {
  budget_.Record(pod);
  // Once per pod: one evicted again (its first answer never came) is still one pod leaving.
  leaving_.erase(std::remove_if(leaving_.begin(), leaving_.end(),
                                [&](const LeavingPod& p) {
                                  return (p.uid.empty() ? p.pod : p.uid) == pod.Id();
                                }),
                 leaving_.end());
  leaving_.push_back(LeavingPod{node, pod.Key(), pod.uid, cpu, memory, at_wall, 0});
  last_eviction_[node] = at_wall;
}

WriteEnd Evictor::WriteRecord(const std::string& node, bool drain, double at_wall,
                              const ReliefWrites& io, double* previous) {
  if (drain)
    return io.records->WriteDrain(node, cfg_.underused.value, at_wall, io.hooks, io.stop, previous);
  return io.records->Write(node, at_wall, io.hooks, io.stop, previous);
}

Evictor::Outcome Evictor::Evict(const PodInfo& pod, EvictionRecord rec, double cpu, double memory,
                                const ReliefWrites& io) {
  Outcome out;
  const std::string name = rec.node;
  const bool drain = rec.rule == kUnderusedRule;
  if (Limit lim = budget_.Check(pod); lim != Limit::kNone) {
    tally_->Count(&RebalanceCounters::skips, LimitName(lim));
    out.result = LimitName(lim);
    return out;
  }
  if (!cfg_.dry_run && !ledger_read_) {  // its limits would not hold: StartCycle said why
    tally_->Count(&RebalanceCounters::skips, "ledger_unreadable");
    out.result = "ledger_unreadable";
    return out;
  }
  if (cfg_.dry_run) {
    // Paced by the same limits as real evictions, so the report is what would happen.
    budget_.Record(pod);
    rec.result = "dry_run";
    out.moved = out.evicted = true;
    LOG(INFO) << "rebalance (dry run): would evict a pod; its replacement fits on the destination"
              << EvictionLogFields(rec, drain);
  } else {
    const auto& gate = io.hooks.gate;
    if (gate && !gate()) return Outcome{false, false, false, ""};
    // Write-ahead, in the order a crash must find them: the ledger (the limits and the pods in
    // motion of the next leader), then the node's record (its held mark and cool-down).
    // A selector of all a pod's labels can be long; the ledger keeps a short one only (the next
    // leader then does not follow that replacement: its workload's perWorkload expires instead).
    std::string selector = ReplacementSelector(pod);
    if (selector.size() > kLedgerMaxSelector) selector.clear();
    LedgerEntry entry;
    entry.at_wall = rec.at_wall;
    entry.node = name;
    entry.pod = pod.Key();
    entry.uid = pod.uid;
    entry.workload = pod.Workload();
    entry.selector = std::move(selector);
    entry.cpu = cpu;
    entry.memory = memory;
    entry.drain = drain;
    EvictionRecord requested = rec;
    requested.result = kRequestedResult;
    ledger_.Note(requested);  // written with the entry: the trail says it was sent
    // Each way out below says in the trail what became of the note (a write that timed out may
    // have landed with it): the trail never claims an eviction that was not sent.
    auto settle = [&](const std::string& result) {
      rec.result = result;
      ledger_.Note(rec);
    };
    if (Status st = ledger_.Append(entry, rec.at_wall, gate); !st.ok()) {
      if (st.code() == StatusCode::kCancelled) {  // nothing was written
        ledger_.Forget(rec.pod, rec.at_wall);
        return Outcome{!gate || gate(), false, false, ""};
      }
      tally_->Count(&RebalanceCounters::skips, "ledger_failed");
      out.result = "ledger_failed";
      settle(out.result);
      if (throttle_.ShouldLog("ledger-write", clock_->Now()))
        LOG(WARNING) << "rebalance: writing the eviction ledger failed; the pod is not evicted"
                     << Fields("pod", rec.pod, "err", st);
      return out;
    }
    double previous = 0;
    if (WriteRecord(name, drain, rec.at_wall, io, &previous) != WriteEnd::kWritten) {
      // The write logged why; the pod waits for a cycle whose record write lands.
      tally_->Count(&RebalanceCounters::skips, "record_failed");
      out.result = "record_failed";
      settle(out.result);  // written with the take-back
      TakeBack(pod, rec.at_wall, gate);
      out.open = !gate || gate();
      return out;
    }
    const EvictionResult res =
        kube_->EvictPod(pod.ns, pod.name, pod.uid, EvictionAnnotations(rec, drain), gate);
    out.moved = Answered(pod, res, &rec, cpu, memory, io);
    ledger_.Note(rec);  // its result: with the take-back below, else FlushTrail
    out.evicted = rec.result == "evicted" || rec.result == "evicting_in_background";
    if (!out.moved) {
      // Nothing was evicted: the intents are taken back, so neither the limits nor the node's
      // cool-down and held mark are charged for it. A failed write errs toward holding.
      WriteRecord(name, drain, previous, io);
      TakeBack(pod, rec.at_wall, gate);
    }
  }
  if (out.evicted) {
    problem_.clear();  // evictions go through
    if (!cfg_.dry_run && !pod.Workload().empty() && !pod.labels.empty())
      awaited_.push_back(
          AwaitedReplacement{pod.Workload(), name, ReplacementSelector(pod), rec.at_wall, drain});
  }
  tally_->Count(&RebalanceCounters::evictions, rec.result);
  out.result = rec.result;
  tally_->Remember(std::move(rec));
  return out;
}

bool Evictor::Answered(const PodInfo& pod, const EvictionResult& res, EvictionRecord* rec,
                       double cpu, double memory, const ReliefWrites& io) {
  const std::string& name = rec->node;
  const bool drain = rec->rule == kUnderusedRule;
  rec->result = ResultName(res.kind);
  switch (res.kind) {
    case EvictionResult::Kind::kEvicted:
      Charge(pod, name, rec->at_wall, cpu, memory);
      Announce(pod, *rec, io);
      LOG(INFO) << "rebalance: evicted a pod; its replacement fits on the destination"
                << EvictionLogFields(*rec, drain);
      return true;
    case EvictionResult::Kind::kInBackground:
      // A 429 that started the move (KubeVirt's live migration): no refusal, the pod leaves once
      // its move is done. In flight like any eviction, and charged to every limit.
      Charge(pod, name, rec->at_wall, cpu, memory);
      Announce(pod, *rec, io);
      LOG(INFO) << "rebalance: the eviction started a move in the background; the pod leaves "
                   "once it is done"
                << EvictionLogFields(*rec, drain);
      return true;
    case EvictionResult::Kind::kMultipleBudgets:
      if (multiple_budgets_logged_.size() > 10000) multiple_budgets_logged_.clear();
      if (multiple_budgets_logged_.insert(pod.Key()).second)
        LOG(WARNING) << "rebalance: the pod is selected by more than one PodDisruptionBudget; "
                        "the API server refuses to evict it"
                     << Fields("pod", rec->pod, "err", res.status);
      return false;
    case EvictionResult::Kind::kBlockedByBudget:
      VLOG(1) << "rebalance: a PodDisruptionBudget allows no disruption of the pod"
              << Fields("v", 1, "pod", rec->pod);
      return false;
    case EvictionResult::Kind::kGone:
      return false;
    case EvictionResult::Kind::kError:
      break;
  }
  const int http = res.status.http_status();
  if (http == 409) {  // the UID precondition: the pod of that name is another one now
    rec->result = ResultName(EvictionResult::Kind::kGone);
    return false;
  }
  if (http >= 400 && http < 500) {
    // A definite answer that refused it (RBAC, API priority and fairness, a bad request): nothing
    // was evicted, so nothing is charged. A 403 is the rebalancer's RBAC missing (a separate
    // overlay, easy to miss): said loudly, as it will not go away by itself.
    rec->result = http == 403 ? "forbidden" : "refused";
    if (res.AuthorizationDenied()) {
      Forbidden(pod, *rec, res.status, io);
    } else if (throttle_.ShouldLog("evict-refused-" + std::to_string(http), clock_->Now())) {
      LOG(WARNING) << "rebalance: the API server refused an eviction"
                   << Fields("pod", rec->pod, "code", http, "err", res.status);
    }
    return false;
  }
  // Not sent, or abandoned while the answer was awaited (the gate closed): this replica no longer
  // leads, and the intents written ahead hold the node and the limits for whoever leads next.
  if (res.status.code() == StatusCode::kCancelled) return true;
  // An answer that never came (a timeout) or a 5xx may still have evicted the pod: it is charged
  // to every limit and holds the mark like an eviction, so a retry cannot exceed the limits.
  Charge(pod, name, rec->at_wall, cpu, memory);
  if (throttle_.ShouldLog("evict-error", clock_->Now()))
    LOG(WARNING) << "rebalance: evicting a pod failed"
                 << Fields("pod", rec->pod, "err", res.status);
  return true;
}

void Evictor::Post(const EventInfo& e, const ReliefWrites& io) {
  const std::string object = e.kind + "/" + e.object_namespace + "/" + e.name;
  if (!events_.Admit(object, clock_->Now())) {
    tally_->Count(&RebalanceCounters::events_suppressed);
    return;
  }
  Status st = kube_->CreateEvent(e, io.hooks.gate);
  if (st.ok()) return;
  tally_->Count(&RebalanceCounters::event_errors);
  if (throttle_.ShouldLog("event", clock_->Now()))
    LOG(WARNING) << "rebalance: an event could not be written"
                 << Fields("object", object, "reason", e.reason, "err", st);
}

void Evictor::WarnOnPod(const PodInfo& pod, const std::string& node, const char* reason,
                        const char* action, std::string message, double at_wall,
                        const ReliefWrites& io) {
  EventInfo e;
  e.kind = "Pod";
  e.name = pod.name;
  e.object_namespace = pod.ns;
  e.uid = pod.uid;
  e.type = "Warning";
  e.reason = reason;
  e.action = action;
  e.at_wall = at_wall;
  e.related_kind = "Node";
  e.related_name = node;
  e.message = std::move(message);
  Post(e, io);
}

void Evictor::EventOnOwner(const PodInfo& pod, const std::string& type, const char* reason,
                           const char* action, std::string message, double at_wall,
                           const std::string& related_node, const ReliefWrites& io) {
  if (pod.owner_kind.empty()) return;
  EventInfo e;
  e.kind = pod.owner_kind;
  e.name = pod.owner_name;
  e.object_namespace = pod.ns;
  e.api_version = pod.owner_api_version;
  e.type = type;
  e.reason = reason;
  e.action = action;
  e.at_wall = at_wall;
  e.related_kind = "Node";
  e.related_name = related_node;
  e.message = std::move(message);
  Post(e, io);
}

void Evictor::Forbidden(const PodInfo& pod, const EvictionRecord& rec, const Status& st,
                        const ReliefWrites& io) {
  // It will not go away by itself (the rebalancer's RBAC is a separate overlay, easy to miss):
  // /status says so until an eviction goes through, and a log line and an Event on the pod say
  // it every 5 minutes.
  problem_ =
      "evictions are forbidden (403): the rebalancer needs RBAC to create pods/eviction "
      "(deploy/overlays/rebalance)";
  problem_at_ = rec.at_wall;
  if (!throttle_.ShouldLog("evict-forbidden", clock_->Now())) return;
  LOG(ERROR) << "rebalance: " << problem_ << Fields("pod", rec.pod, "err", st);
  WarnOnPod(pod, rec.node, "RebalanceEvictionForbidden", "Evict",
            "Not evicted from node " + rec.node + ": " + problem_, rec.at_wall, io);
}

std::string Evictor::Problem(double now_wall) {
  // A 403 not seen again for kProblemSeconds: perhaps the RBAC was fixed while no node was hot.
  if (!problem_.empty() && std::abs(now_wall - problem_at_) > kProblemSeconds) problem_.clear();
  return problem_;
}

void Evictor::Announce(const PodInfo& evicted, const EvictionRecord& r, const ReliefWrites& io) {
  const bool drain = r.rule == kUnderusedRule;
  const auto slash = r.pod.find('/');
  EventInfo pod;
  pod.kind = "Pod";
  pod.name = r.pod.substr(slash + 1);
  pod.object_namespace = r.pod.substr(0, slash);
  pod.uid = r.pod_uid;
  pod.reason = drain ? "UnderusedDrain" : "RebalanceEviction";
  pod.action = "Evict";
  pod.at_wall = r.at_wall;
  // Each names the other as `related`: the pod's Event says which node it left, the node's which
  // pod went.
  pod.related_kind = "Node";
  pod.related_name = r.node;
  std::ostringstream pm, nm;
  pm.precision(4);
  nm.precision(4);
  const std::string why = EvictionReason(r, drain);
  if (drain) {
    pm << "Evicted to drain node " << r.node << " (" << why << ")";
    nm << "Evicted " << r.pod << " to drain the node: " << why;
  } else {
    pm << "Evicted to relieve node " << r.node << " (" << why << "; this pod used "
       << FormatValue(r.usage, r.unit) << (r.unit == ValueUnit::kPercent ? " of it)" : ")");
    nm << "Evicted " << r.pod << " (" << FormatValue(r.usage, r.unit)
       << (r.unit == ValueUnit::kPercent ? " of the node" : "") << ") to relieve it: " << why;
  }
  pm << "; its replacement should fit on " << r.to;
  pod.message = pm.str();
  EventInfo node;
  node.kind = "Node";
  node.name = r.node;
  node.uid = r.node_uid;
  node.reason = pod.reason;
  node.action = pod.action;
  node.at_wall = r.at_wall;
  node.related_kind = "Pod";
  node.related_name = pod.name;
  node.related_namespace = pod.object_namespace;
  node.message = nm.str();
  Post(pod, io);
  Post(node, io);
  // Its owner (a ReplicaSet, StatefulSet, ...) outlives the pod and its Events: the same words
  // there, under a reason of its own (the pod's and the node's Events keep theirs).
  if (!drain)
    EventOnOwner(evicted, "Normal", "RebalanceEvictedPod", "Evict",
                 "Evicted " + r.pod + " from node " + r.node + " (" + why +
                     "); its replacement should fit on " + r.to,
                 r.at_wall, r.node, io);
}

}  // namespace ds
