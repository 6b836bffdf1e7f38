#include "controller/candidates.h"

#include <glog/logging.h>

#include <algorithm>

#include "common/log_fields.h"
#include "rebalance/disruptors.h"
#include "rebalance/evictable.h"
#include "rebalance/steering.h"

namespace ds {

namespace {

// The name of whoever else is disrupting `pod` (rebalance/disruptors.h), or null: nobody. What
// could not be read counts as a disruptor of its own: not knowing is no licence to evict.
const char* OtherDisruptorOf(const PodInfo& pod, const NodeInfo& node, const Cluster& c) {
  static const std::vector<Autoscaler> kNone;
  const std::vector<Autoscaler>* hpas = &kNone;
  if (auto a = c.autoscalers.find(pod.ns); a != c.autoscalers.end()) {
    if (!a->second.ok()) return "disruptors_unread";
    hpas = &*a->second;
  }
  const WorkloadStatus* workload = nullptr;
  if (auto first = WorkloadToRead(pod)) {
    auto w = c.workloads.find(pod.ns + "/" + first->kind + "/" + first->name);
    if (w != c.workloads.end()) {
      if (!w->second.ok()) return "disruptors_unread";
      if (w->second->has_value()) workload = &**w->second;
    }
  }
  const Disruptor d = OtherDisruptor(pod, node, workload, *hpas);
  return d == Disruptor::kNone ? nullptr : DisruptorName(d);
}

}  // namespace

bool RefusesNewPods(const NodeInfo& n) {
  return std::any_of(n.taints.begin(), n.taints.end(), [](const Taint& t) {
    return t.effect == "NoSchedule" || t.effect == "NoExecute";
  });
}

Candidates::Candidates(const RebalanceConfig& cfg, const Mark& mark, ClusterReads* reads,
                       Evictor* evictor, const Clock* clock, RebalanceTally* tally)
    : cfg_(cfg), mark_(mark), reads_(reads), evictor_(evictor), clock_(clock), tally_(tally) {
  // Asked of every node each cycle that looks for destinations: worked out once.
  for (size_t below = 0; below < mark_.LevelCount(); ++below)  // the hot mark, or a cooler level
    our_values_.push_back(mark_.Below(below).value);
  if (cfg_.underused.enabled) our_values_.push_back(cfg_.underused.value);
}

bool Candidates::Ours(const NodeInfo& node) const {
  // Our taint, at any level (mark: taint or both).
  if (mark_.UsesTaint() && std::any_of(node.taints.begin(), node.taints.end(),
                                       [&](const Taint& t) { return t.key == mark_.taint.key; }))
    return true;
  const std::string* v = FindLabel(node.labels, mark_.key);
  return v != nullptr && std::find(our_values_.begin(), our_values_.end(), *v) != our_values_.end();
}

std::vector<const ReliefInput*> Candidates::Destinations(
    const std::vector<ReliefInput>& nodes, int resource,
    const std::set<std::string>& exclude) const {
  // Tainted nodes (a dedicated pool, NotReady) are left out: an idle pool that takes every
  // slot would make every pod "fit nowhere". So are nodes with any of our values (a level of the
  // mark, underused): replacements are steered away from them. (Another value under our key is an
  // operator's: the affinity term does not avoid it.)
  // Index 2: memory by bytes available, the most available first.
  auto load = [resource](const ReliefInput* in) {
    return resource == 2 ? -in->available_memory : in->load[resource];
  };
  std::vector<const ReliefInput*> free;
  for (const ReliefInput& in : nodes)
    if (!in.marked && !Ours(*in.node) && !in.node->unschedulable && !RefusesNewPods(*in.node) &&
        std::isfinite(load(&in)) && !exclude.count(in.node->name))
      free.push_back(&in);
  const size_t keep = std::min(free.size(), kDestinations);
  std::partial_sort(free.begin(), free.begin() + static_cast<std::ptrdiff_t>(keep), free.end(),
                    [&](const ReliefInput* a, const ReliefInput* b) {
                      if (load(a) != load(b)) return load(a) < load(b);
                      return a->node->name < b->node->name;
                    });
  free.resize(keep);
  return free;
}

Placement Candidates::PlacementOn(const std::vector<const ReliefInput*>& dest, Cluster* cluster) {
  std::vector<PlacementNode> places;
  places.reserve(dest.size());
  for (const ReliefInput* in : dest) {
    PlacementNode p;
    p.name = in->node->name;
    const Requested& r = cluster->places[p.name];
    p.labels = r.labels;
    p.allocatable_other = r.allocatable_other;
    p.requested_other = r.other;
    p.host_ports = r.host_ports;
    p.pods = r.pods;
    p.unschedulable = in->node->unschedulable;
    p.taints = in->node->taints;
    p.allocatable_cpu = in->node->allocatable_cpu;
    p.allocatable_memory = in->node->allocatable_memory;
    p.requested_cpu = r.cpu;
    p.requested_memory = r.memory;
    // The real load the rules measured (percent of allocatable; NaN when none measures it).
    p.used_cpu = in->load[0] / 100 * p.allocatable_cpu;
    p.used_memory = in->load[1] / 100 * p.allocatable_memory;
    p.available_memory = in->available_memory;
    p.available_floor = in->available_floor;
    p.balance_ceiling[0] = in->balance_ceiling[0];
    p.balance_ceiling[1] = in->balance_ceiling[1];
    places.push_back(std::move(p));
  }
  return Placement(std::move(places));
}

Avoid Candidates::HotMarkOn(const NodeInfo& node) const {
  Avoid a;
  const std::string* v = FindLabel(node.labels, mark_.key);
  if (mark_.UsesLabel()) a.value = v != nullptr ? *v : mark_.value;  // mark: taint: no label
  // (A node is relieved only once the cache has seen its whole mark: with mark: taint, the taint.)
  if (mark_.UsesTaint())
    for (const Taint& t : node.taints)
      if (t.key == mark_.taint.key) a.taint = &t;
  return a;
}

std::vector<const PodInfo*> Candidates::Read(std::vector<PodInfo>* pods, double now,
                                             Cluster* cluster, Placement* placement) {
  std::vector<const PodInfo*> read;
  for (PodInfo& p : *pods) {
    if (CheckEvictable(p, cfg_.pods, now) != Keep::kNone) continue;
    reads_->ReadConstraints(&p, now, cluster, placement);
    read.push_back(&p);
  }
  return read;
}

std::vector<const PodInfo*> Candidates::Filter(const std::vector<PodInfo>& pods,
                                               const NodeInfo& node, const Avoid& avoid, double now,
                                               const ReliefWrites& io, const Cluster& cluster,
                                               Placement* placement, Skipped* skipped,
                                               std::vector<PodDecision>* decisions) {
  Skipped local;
  Skipped& sk = skipped != nullptr ? *skipped : local;
  // Each pod left out, by the check that left it out: /explain reads these (rebalance/decision.h).
  auto left_out = [&](const PodInfo& p, DecisionStage stage, const std::string& reason,
                      std::string detail = "") {
    if (decisions == nullptr) return;
    PodDecision d;
    d.stage = stage;
    d.pod = p.Key();
    d.uid = p.uid;
    d.workload = p.Workload();
    d.reason = reason;
    d.detail = std::move(detail);
    decisions->push_back(std::move(d));
  };
  std::vector<const PodInfo*> evictable;
  for (const PodInfo& p : pods) {
    if (Keep k = CheckEvictable(p, cfg_.pods, now); k != Keep::kNone) {
      tally_->Count(&RebalanceCounters::kept, KeepName(k));
      left_out(p, DecisionStage::kEvictable, KeepName(k));
      continue;
    }
    evictable.push_back(&p);
  }
  std::vector<const PodInfo*> out;
  for (const PodInfo* pp : evictable) {
    const PodInfo& p = *pp;
    // Evicted already, its eviction not seen through yet (no answer came, a move in the
    // background): counted as leaving its node, so no candidate again.
    if (evictor_->StillListed(p)) {
      tally_->Count(&RebalanceCounters::skips, "in_flight");
      left_out(p, DecisionStage::kInMotion, "in_flight");
      ++sk.limited;
      continue;
    }
    // Where its replacement may run depends on what the fit check does not judge: never a guess.
    if (!p.unjudged.empty()) {
      tally_->Count(&RebalanceCounters::skips, "constraint");
      left_out(p, DecisionStage::kConstraints, "constraint", p.unjudged.front());
      ++sk.constraint;
      if (throttle_.ShouldLog("constraint/" + p.Workload(), clock_->Now()))
        LOG(INFO) << "rebalance: not evicted: where its replacement may run depends on a "
                     "constraint the fit check does not judge"
                  << Fields("pod", p.Key(), "constraint", p.unjudged.front());
      continue;
    }
    if (auto pause = paused_.find(p.Workload()); pause != paused_.end() && now < pause->second) {
      tally_->Count(&RebalanceCounters::skips, "bounced_back");
      left_out(p, DecisionStage::kBounceBack, "bounced_back");
      ++sk.limited;  // for now: the pause ends
      continue;
    }
    if (cfg_.require_steering &&
        SteeredAway(p, mark_.key, avoid.value, avoid.taint) == Steer::kNone) {
      // Pinned to the node (or with no room elsewhere): no term added would let it move.
      if (!placement->FitsSomewhere(p, node.name)) {
        tally_->Count(&RebalanceCounters::skips, "no_fit");
        left_out(p, DecisionStage::kSteering, "no_fit");
        ++sk.no_fit;
        continue;
      }
      tally_->Count(&RebalanceCounters::skips, "would_return");
      left_out(p, DecisionStage::kSteering, "would_return",
               SteeringAdvice(mark_.key, avoid.value, avoid.taint));
      ++sk.would_return;
      AdviseSteering(p, node, avoid, now, io);
      continue;
    }
    // A pod a limit forbids now (its workload's or namespace's) is no candidate: the plan is
    // made of pods that can move, and with none the usage query is not sent at all.
    if (Limit lim = evictor_->Check(p); lim != Limit::kNone) {
      tally_->Count(&RebalanceCounters::skips, LimitName(lim));
      left_out(p, DecisionStage::kLimits, LimitName(lim));
      ++sk.limited;
      continue;
    }
    // Someone else is moving it, its node or its workload: for now (their move ends).
    if (const char* other = OtherDisruptorOf(p, node, cluster)) {
      tally_->Count(&RebalanceCounters::skips, other);
      left_out(p, DecisionStage::kDisruptors, other);
      ++sk.limited;
      ++sk.disrupted[other];
      continue;
    }
    out.push_back(&p);
  }
  return out;
}

void Candidates::AdviseSteering(const PodInfo& pod, const NodeInfo& node, const Avoid& avoid,
                                double now, const ReliefWrites& io) {
  const std::string& value = avoid.value;
  // Once per workload (a bare pod: per pod) and hour: the advice is for its owner, not a stream.
  // Keyed by the value too: a workload on a hot and on an underused node is told about each.
  // (Entries older than an hour go once a cycle, in Relieve.)
  const std::string who = (pod.Workload().empty() ? pod.Key() : pod.Workload()) + "=" + value;
  if (!advised_.emplace(who, now).second) return;
  const std::string advice = SteeringAdvice(mark_.key, value, avoid.taint);
  LOG(WARNING) << "rebalance: not evicted: nothing keeps its replacement off the marked node "
                  "(would_return)"
               << Fields("pod", pod.Key(), "node", node.name, "mark",
                         value.empty() ? "our taint" : mark_.key + "=" + value, "advice", advice);
  if (cfg_.dry_run) return;  // a dry run plans and reports: it writes nothing, Events included
  evictor_->WarnOnPod(
      pod, node.name, "RebalanceWouldReturn", "Skip",
      "Not evicted from node " + node.name +
          ": its replacement would be scheduled back onto it. To let the rebalancer move "
          "it, " +
          advice,
      now, io);
}

void Candidates::EndCycle(double now) {
  for (auto it = advised_.begin(); it != advised_.end();)
    it = now - it->second >= kAdviceEverySeconds || now < it->second ? advised_.erase(it)
                                                                     : std::next(it);
  // A pause set "in the future" (the wall clock stepped back since) is not made longer by the step.
  for (auto it = paused_.begin(); it != paused_.end();)
    it = now >= it->second || it->second - now > cfg_.bounce_back_pause_seconds ? paused_.erase(it)
                                                                                : std::next(it);
}

}  // namespace ds
