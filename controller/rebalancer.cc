#include "controller/rebalancer.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_set>

#include "common/log_fields.h"
#include "rebalance/disruptors.h"
#include "rebalance/in_motion.h"
#include "rebalance/kubelet_order.h"
#include "rebalance/qualify.h"
#include "rebalance/relief_plan.h"

namespace ds {

namespace {

// Each rule's settle time, and the longest (how long the evictor keeps a pod that is gone).
std::map<std::string, double> SettleTimes(const RuleConfig& rules, double interval) {
  std::map<std::string, double> out;
  for (const Rule& r : rules.rules) {
    const double every = r.interval_seconds > 0 ? r.interval_seconds : interval;
    out[r.name] = rules.rebalance.settle_seconds >= 0 ? rules.rebalance.settle_seconds
                                                      : SettleSeconds(r.query, every);
  }
  return out;
}

double Longest(const std::map<std::string, double>& settle) {
  double m = 0;
  for (const auto& [rule, s] : settle) m = std::max(m, s);
  return m;
}

std::optional<LabelSelector> SelectorOf(const RebalanceConfig& cfg) {
  if (cfg.node_selector.empty()) return std::nullopt;
  auto sel = LabelSelector::Parse(cfg.node_selector);  // validated with rule.yaml
  if (!sel.ok()) return std::nullopt;
  return std::move(*sel);
}

}  // namespace

Rebalancer::Rebalancer(const RuleConfig& rules, KubeApi* kube, PrometheusClient* prom,
                       const Clock* clock, TimeZone zone, RebalancerOptions options)
    : cfg_(rules.rebalance),
      mark_(rules.mark),
      zone_(std::move(zone)),
      clock_(clock),
      selector_(SelectorOf(rules.rebalance)),
      settle_(SettleTimes(rules, options.interval_seconds)),
      reads_(rules.rebalance, kube, prom, clock, &tally_),
      evictor_(rules.rebalance, kube, clock, std::move(options.ledger), Longest(settle_), &tally_),
      candidates_(rules.rebalance, rules.mark, &reads_, &evictor_, clock, &tally_),
      drainer_(rules.rebalance, rules.mark, selector_, &reads_, &candidates_, &evictor_, clock,
               &tally_),
      effect_(rules.rebalance.effect_window_seconds, options.interval_seconds) {
  // /rebalance and -once's summary keep their last kRecentEvictions whatever the trail keeps.
  tally_.SetKeep(std::max(Rebalancer::kRecentEvictions, cfg_.keep_decisions));
  tally_.Edit([&](RebalanceReport* r) {
    r->enabled = true;
    r->dry_run = cfg_.dry_run;
  });
}

double Rebalancer::SettleSeconds(const std::string& rule) const {
  auto it = settle_.find(rule);
  if (it != settle_.end()) return it->second;
  return cfg_.settle_seconds >= 0 ? cfg_.settle_seconds : Longest(settle_);
}

void Rebalancer::BeginCycle(uint64_t term) {
  evictor_.ReadLedger(clock_->WallSeconds(), term);  // unread: Relieve says so, and tries again
}

bool Rebalancer::HoldsMark(const std::string& node, double recorded_eviction_wall) const {
  const double now = clock_->WallSeconds();
  RebalanceNode n;
  n.evictions_in_flight = evictor_.InFlight(node, now);
  n.last_eviction_wall = std::max(recorded_eviction_wall, evictor_.LastEviction(node));
  return ds::HoldsMark(n, cfg_, now);
}

void Rebalancer::TrackInMotion(double now) {
  // Each evicted pod until it is gone from its node; then its usage still counts for the settle
  // time of the rule that relieves its node (rebalance/in_motion.h).
  std::vector<std::string> gone;
  reads_.LookUpLeaving(evictor_.ToLookUp(now), &gone);  // a failed lookup: the rest next cycle
  for (const std::string& id : gone) evictor_.Gone(id, now);
}

// Replacements of evicted pods, wherever they run: while an eviction of the last effectWindow has
// not seen its replacement, one LIST per cycle of the pods with the evicted pod's labels (a
// ReplicaSet's or StatefulSet's replacement has the same), in its namespace: the API server
// filters, so the answer is a few pods however large the namespace. One bound back onto the node
// its pod left is a bounce-back.
void Rebalancer::FollowReplacements(double now) {
  evictor_.ExpireAwaited(now);
  std::set<std::pair<std::string, std::string>> lists;  // namespace, label selector
  for (const AwaitedReplacement& e : evictor_.awaited())
    if (!e.selector.empty()) lists.emplace(e.workload.substr(0, e.workload.find('/')), e.selector);
  for (const auto& list : lists) {
    // (Named, not bound: a lambda below uses the selector, and clang 14 cannot capture bindings.)
    const std::string& ns = list.first;
    const std::string& selector = list.second;
    auto running = reads_.ListRunning(ns, selector);
    if (!running) continue;  // next cycle
    for (const PodInfo& p : *running) {
      const std::string id = p.Id();  // a StatefulSet reuses names
      if (replaced_seen_.count(id)) continue;
      // The oldest eviction of its workload that it can replace: creationTimestamp has whole
      // seconds, the eviction's time does not.
      const auto& awaited = evictor_.awaited();
      auto e = std::find_if(awaited.begin(), awaited.end(), [&](const AwaitedReplacement& x) {
        return x.workload == p.Workload() && x.selector == selector &&
               p.created_wall >= std::floor(x.at_wall);
      });
      if (e == awaited.end()) continue;
      replaced_seen_.insert(id);
      if (!e->drain) effect_.OnPodBound(p.Workload(), p.node, now);
      if (p.node == e->node) {
        LOG(WARNING) << "rebalance: a replacement was scheduled right back onto the node its "
                        "pod was evicted from (a bounce-back); rebalance.bounceBackPause "
                        "keeps its workload from eviction for paused_s"
                     << Fields("pod", p.Key(), "node", p.node, "workload", p.Workload(), "paused_s",
                               cfg_.bounce_back_pause_seconds);
        if (cfg_.bounce_back_pause_seconds > 0)
          candidates_.Pause(p.Workload(), now + cfg_.bounce_back_pause_seconds);
      }
      evictor_.Replaced(static_cast<size_t>(e - awaited.begin()));
    }
  }
  // Bounded: once nothing is awaited, or (in a cluster that never stops rebalancing) at a size
  // far beyond the replacements of an hour's evictions.
  if (evictor_.awaited().empty() || replaced_seen_.size() > 10000) replaced_seen_.clear();
}

void Rebalancer::TrackEpisodes(const std::vector<ReliefInput>& nodes, double now,
                               const std::vector<std::string>& reference_hot) {
  // Episodes: a node qualifies, is relieved, cools, and its mark goes.
  std::set<std::string> marked, cooled;
  for (const ReliefInput& in : nodes) {
    if (!in.marked) continue;
    marked.insert(in.node->name);
    if (!in.cold) continue;
    cooled.insert(in.node->name);
    effect_.OnCleared(in.node->name, now);
  }
  for (const std::string& n : was_marked_)
    if (!marked.count(n)) effect_.OnUnmarked(n);
  was_marked_ = marked;
  effect_.OnCycle(now, reference_hot, marked, cooled);
}

std::map<std::string, Rebalancer::Hot> Rebalancer::QualifyHot(
    const std::vector<ReliefInput>& nodes, const std::set<std::string>& alerted, double now,
    std::vector<RebalanceNodeReport>* reports) {
  std::map<std::string, Hot> relieve;
  for (const ReliefInput& in : nodes) {
    if (!in.marked) continue;
    RebalanceNodeReport r;
    r.name = in.node->name;
    RebalanceNode rn;
    rn.observed_marked = true;
    rn.marked_since_wall = in.marked_since_wall > 0 ? in.marked_since_wall : now;
    rn.alerted = alerted.count(r.name) > 0;
    rn.selected = !selector_ || selector_->Matches(in.node->labels);
    rn.due_wall = ReliefDueWall(in.held, cfg_);
    rn.evictions_in_flight = evictor_.InFlight(r.name, now);
    rn.last_eviction_wall = std::max(in.recorded_eviction_wall, evictor_.LastEviction(r.name));
    r.held = ds::HoldsMark(rn, cfg_, now);
    const Qualification q = Qualifies(rn, cfg_, now);
    r.qualification = QualificationName(q);
    auto relief = ReliefGoal(r.name, in.holding, in.held, cfg_, now, rn.alerted,
                             in.node->allocatable_cpu, in.node->allocatable_memory);
    if (relief) {
      r.rule = relief->rule;
      r.load = relief->Value(relief->load.load);  // in the rule's terms: bytes available, too
      r.goal = relief->Value(relief->load.goal);
      r.unit = relief->unit();
      // What is already moving off the node will bring its value down without us: only the
      // rest is relieved (a pod still terminating, or gone less than the settle time ago).
      const double settle = SettleSeconds(relief->rule);
      r.leaving = DiscountLeaving(&*relief, evictor_.leaving(), settle, now);
      bool terminating = false;
      for (const LeavingPod& p : evictor_.leaving()) {
        if (p.node != r.name || !StillLeaving(p, settle, now)) continue;
        ++r.leaving_pods;
        terminating |= p.gone_wall <= 0;
        r.leaving_until_wall = std::max(r.leaving_until_wall, p.gone_wall + settle);
      }
      if (terminating) r.leaving_until_wall = 0;  // until gone, and its settle time after
      r.load_after = relief->Value(relief->load.load);
    } else if (q == Qualification::kYes) {
      r.qualification = "nothing_to_relieve";  // cooled, or no rule with a resource holds it
    }
    if (q == Qualification::kYes && relief && relief->load.load <= relief->load.goal) {
      effect_.OnQualified(r.name, now, in.marked_since_wall);
      r.qualification = "in_motion";  // what is already leaving reaches the goal
      tally_.Count(&RebalanceCounters::skips, "in_motion");
    } else if (q == Qualification::kYes && relief && NodeBeingRemoved(*in.node)) {
      // A cluster-autoscaler or Karpenter drains it: its pods all go with it anyway.
      effect_.OnQualified(r.name, now, in.marked_since_wall);
      r.limit = DisruptorName(Disruptor::kNodeRemoval);
      tally_.Count(&RebalanceCounters::skips, r.limit);
    } else if (q == Qualification::kYes && relief) {
      effect_.OnQualified(r.name, now, in.marked_since_wall);
      if (Limit lim = evictor_.NodeLimit(r.name, in.recorded_eviction_wall, now);
          lim != Limit::kNone) {
        r.limit = LimitName(lim);
        tally_.Count(&RebalanceCounters::skips, r.limit);
      } else if (auto w = retry_at_.find(r.name); w != retry_at_.end() && now < w->second) {
        r.limit = "retry_wait";  // nothing could be evicted last time: not listed every cycle
        tally_.Count(&RebalanceCounters::skips, r.limit);
      } else {
        relieve.emplace(r.name, Hot{&in, std::move(*relief), r.load});
      }
    }
    reports->push_back(std::move(r));
  }
  return relieve;
}

std::vector<std::string> Rebalancer::HotOrder(std::map<std::string, Hot>* relieve) {
  // The nodes furthest over their goal first, as many as this cycle's evictions allow: each is
  // listed and queried, so the work per cycle is bounded by the limits, not by the hot nodes.
  std::vector<std::string> order;
  for (const auto& [name, entry] : *relieve) order.push_back(name);
  std::sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return RelievedBefore(relieve->at(a).relief, relieve->at(b).relief);
  });
  if (order.size() > cfg_.limits.per_cycle) {
    for (size_t i = cfg_.limits.per_cycle; i < order.size(); ++i) {
      relieve->erase(order[i]);
      tally_.Count(&RebalanceCounters::skips, LimitName(Limit::kCycle));
    }
    order.resize(cfg_.limits.per_cycle);
  }
  return order;
}

std::vector<UsedPod> Rebalancer::KubeletVictims(const std::vector<PodInfo>& pods,
                                                const std::vector<UsedPod>& candidates,
                                                const std::map<std::string, double>& used,
                                                double now, const ReliefWrites& io,
                                                const std::string& name, std::string* why) {
  // The kubelet's order over every pod of the node with a known working set, not only the
  // candidates: the first is the one it kills next.
  std::vector<std::pair<KubeletMemoryRank, const PodInfo*>> ranked;
  for (const PodInfo& p : pods) {
    if (p.terminating || evictor_.StillListed(p)) continue;  // leaving already
    if (auto u = used.find(p.Key()); u != used.end())
      ranked.push_back({KubeletMemoryRank{u->second, p.KubeletMemoryRequest(), p.priority}, &p});
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    if (KubeletEvictsBefore(a.first, b.first)) return true;
    if (KubeletEvictsBefore(b.first, a.first)) return false;
    return a.second->Key() < b.second->Key();
  });
  std::vector<UsedPod> out;
  for (const auto& ranked_pod : ranked) {
    const KubeletMemoryRank& rank = ranked_pod.first;
    const PodInfo* pod = ranked_pod.second;
    auto c = std::find_if(candidates.begin(), candidates.end(),
                          [&](const UsedPod& u) { return u.pod == pod; });
    const bool within = !(rank.working_set > rank.request);
    if (c != candidates.end() && !within) {
      out.push_back(*c);
      continue;
    }
    if (!out.empty()) break;  // the victims before it may go; it, and those after, stay
    if (within) {
      *why = "within_requests";
      tally_.Count(&RebalanceCounters::skips, *why);
    } else {
      *why = "kubelet_victim_stays";
      VictimStays(*pod, name, now, io);
    }
    break;
  }
  return out;
}

void Rebalancer::VictimStays(const PodInfo& pod, const std::string& node, double now,
                             const ReliefWrites& io) {
  tally_.Count(&RebalanceCounters::skips, "kubelet_victim_stays");
  // Its owner can change what keeps it (a PodDisruptionBudget, the steering term, its request);
  // a DaemonSet's or a static pod's cannot be moved by anyone: only the log line says it.
  LOG(INFO) << "rebalance: not relieved further: the pod the kubelet would kill next cannot move, "
               "and moving another one instead would not spare it"
            << Fields("node", node, "pod", pod.Key());
  if (cfg_.dry_run || pod.owner_kind.empty() || pod.owner_kind == "DaemonSet" || pod.mirror) return;
  evictor_.EventOnOwner(pod, "Warning", "RebalanceKubeletVictimStays", "Skip",
                        "Pod " + pod.Key() + " uses more memory than it requests on node " + node +
                            ", which is short of memory, and is the one the kubelet would evict "
                            "next; the rebalancer cannot move it (no steering term, a "
                            "PodDisruptionBudget, no room elsewhere, too young or a limit) and "
                            "moves no other pod in its place",
                        now, node, io);
}

bool Rebalancer::RelieveHot(const std::vector<ReliefInput>& nodes,
                            std::map<std::string, Hot> relieve, double now, const ReliefWrites& io,
                            std::vector<RebalanceNodeReport>* reports,
                            std::map<std::string, size_t>* acted, std::set<std::string>* tried,
                            std::map<std::string, NodeDecisions>* decided) {
  std::vector<std::string> qualified;
  for (const auto& [name, hot] : relieve) qualified.push_back(name);
  const std::vector<std::string> order = HotOrder(&relieve);
  for (RebalanceNodeReport& r : *reports)  // left for a later cycle: said so (/explain)
    if (!relieve.count(r.name) && std::binary_search(qualified.begin(), qualified.end(), r.name))
      r.limit = LimitName(Limit::kCycle);
  if (relieve.empty()) return true;
  // Where replacements could go: the unmarked, schedulable nodes with the lowest real load of
  // the resource to relieve (kDestinations of them), with the requests bound to each.
  const Relief& first = relieve.at(order.front()).relief;
  const int ri = first.available_bytes ? 2 : first.resource == Rule::Resource::kCpu ? 0 : 1;
  const std::vector<const ReliefInput*> dest = candidates_.Destinations(nodes, ri, {});
  std::vector<std::string> dest_names;
  for (const ReliefInput* in : dest) dest_names.push_back(in->node->name);
  auto cluster = reads_.ListNodes(order, dest_names, now);
  if (!cluster) return true;
  Placement placement = Candidates::PlacementOn(dest, &*cluster);
  placement.RequireGuards();
  // Read, before any choice: what decides the fit and the disruptors of each pod that may go at
  // all, then one usage query per resource for those pods (for memory relief in the kubelet's
  // order, every pod of the node: its next victim may be one that cannot go).
  std::unordered_set<std::string> wanted[2];  // by resource: cpu, memory
  for (auto& [name, entry] : relieve) {
    std::vector<PodInfo>& pods = cluster->on[name];
    const std::vector<const PodInfo*> read = candidates_.Read(&pods, now, &*cluster, &placement);
    const bool memory = entry.relief.resource != Rule::Resource::kCpu;
    if (memory && !cfg_.evict_within_requests) {
      for (const PodInfo& p : pods) wanted[1].insert(p.Key());
    } else {
      for (const PodInfo* p : read) wanted[memory].insert(p->Key());
    }
  }
  std::map<std::string, double> usage[2];
  if (!wanted[0].empty()) usage[0] = reads_.PodUsage(Rule::Resource::kCpu, wanted[0], order);
  if (!wanted[1].empty()) usage[1] = reads_.PodUsage(Rule::Resource::kMemory, wanted[1], order);
  // Then decide on what was read: the pods of each node that may go now.
  std::map<std::string, std::vector<const PodInfo*>> evictable;
  std::map<std::string, Skipped> skipped;
  for (auto& [name, entry] : relieve) {
    const NodeInfo& node = *entry.in->node;
    NodeDecisions& nd = (*decided)[name];
    nd.node = name;
    nd.rule = entry.relief.rule;
    nd.at_wall = now;
    nd.load = entry.measured;
    nd.goal = entry.relief.Value(entry.relief.load.goal);
    nd.unit = entry.relief.unit();
    nd.destinations = dest_names;
    evictable[name] = candidates_.Filter(cluster->on[name], node, candidates_.HotMarkOn(node), now,
                                         io, *cluster, &placement, &skipped[name], &nd.pods);
  }
  for (const std::string& name : order) {
    const Hot& hot = relieve.at(name);
    const Relief& relief = hot.relief;
    auto rep = std::find_if(reports->begin(), reports->end(),
                            [&](const RebalanceNodeReport& r) { return r.name == name; });
    const bool cpu = relief.resource == Rule::Resource::kCpu;
    const auto& used = usage[cpu ? 0 : 1];
    DecisionNotes notes{&decided->at(name), &relief, &used};
    std::vector<UsedPod> candidates;
    for (const PodInfo* p : evictable[name]) {
      if (auto u = used.find(p->Key()); u != used.end())
        candidates.push_back(UsedPod{p, u->second});
      else
        notes.Add(*p, DecisionStage::kUsage, "no_usage");
    }
    rep->would_return = skipped[name].would_return;
    rep->constraint = skipped[name].constraint;
    rep->disrupted = skipped[name].disrupted;
    if (!cpu && !cfg_.evict_within_requests) {
      std::string why;
      std::vector<UsedPod> victims =
          KubeletVictims(cluster->on[name], candidates, used, now, io, name, &why);
      if (!why.empty() && victims.empty()) rep->limit = why;
      for (const UsedPod& c : candidates)
        if (std::none_of(victims.begin(), victims.end(),
                         [&](const UsedPod& v) { return v.pod == c.pod; }))
          notes.Add(*c.pod, DecisionStage::kKubeletOrder,
                    why.empty() ? "kubelet_victim_stays" : why);
      candidates = std::move(victims);
    }
    rep->candidates = candidates.size();
    const size_t room = evictor_.RoomThisCycle();
    if (room == 0) {  // the cycle's evictions went to other nodes: no retry wait
      for (const UsedPod& c : candidates) notes.Add(*c.pod, DecisionStage::kPlan, "no_room");
      continue;
    }
    tried->insert(name);
    // A replacement must also fit by real usage where the node's is known (relief_plan.h), so
    // that its new node does not turn hot in its turn.
    const bool in_order = !cpu && !cfg_.evict_within_requests;
    PodChoice choice = PlanRelief(relief, candidates, room, &placement, in_order);
    // The kubelet's next victim that fits nowhere (or would take the node below its floor) stops
    // the plan there: said as when it is no candidate at all.
    if (in_order && !choice.reached && choice.picks.size() < candidates.size() &&
        (choice.no_fit > 0 || choice.over_floor > 0)) {
      rep->limit = "kubelet_victim_stays";
      VictimStays(*candidates[choice.picks.size()].pod, name, now, io);
    }
    notes.Plan(choice);
    rep->picks = choice.picks.size();
    rep->no_fit = choice.no_fit + skipped[name].no_fit;
    rep->load_after = relief.Value(choice.load_after);
    if (choice.no_fit > 0) tally_.Count(&RebalanceCounters::skips, "no_fit", choice.no_fit);
    if (choice.stands_out > 0)
      tally_.Count(&RebalanceCounters::skips, "stands_out", choice.stands_out);
    if (!EvictPicks(hot, name, choice, used, in_order, now, io, &*rep, acted, &notes)) {
      // The nodes after it were not relieved: their earlier decisions stand (/explain).
      for (auto later = std::find(order.begin(), order.end(), name) + 1; later != order.end();
           ++later)
        decided->erase(*later);
      return false;
    }
  }
  return true;
}

bool Rebalancer::EvictPicks(const Hot& hot, const std::string& name, const PodChoice& choice,
                            const std::map<std::string, double>& used, bool in_order, double now,
                            const ReliefWrites& io, RebalanceNodeReport* rep,
                            std::map<std::string, size_t>* acted, DecisionNotes* notes) {
  const Relief& relief = hot.relief;
  const bool cpu = relief.resource == Rule::Resource::kCpu;
  for (size_t i = 0; i < choice.picks.size(); ++i) {
    const PodChoice::Pick& pick = choice.picks[i];
    const PodInfo& pod = *pick.pod;
    EvictionRecord rec;
    rec.pod = pod.Key();
    rec.node = name;
    rec.to = pick.to;
    rec.rule = relief.rule;
    rec.usage = pick.usage;   // bytes (its working set) for a bytes-available rule
    rec.load = hot.measured;  // as the rule measured it: what the Event and the log say
    rec.goal = relief.Value(relief.load.goal);
    rec.unit = relief.unit();
    rec.at_wall = now;
    rec.pod_uid = pod.uid;
    rec.node_uid = hot.in->node->uid;
    // What it takes off the node: the relieved resource as measured, the other its request.
    const double measured = used.at(pod.Key());
    const double pod_cpu = cpu ? measured : pod.cpu_request;
    const double pod_memory = cpu ? pod.memory_request : measured;
    const Evictor::Outcome o = evictor_.Evict(pod, std::move(rec), pod_cpu, pod_memory, io);
    if (!o.result.empty()) notes->Add(pod, DecisionStage::kEviction, o.result, pick.to);
    if (o.moved) reads_.ExpectReplacement(pod, pick.to);
    if (!o.open) {  // the gate closed: this pick (if it was not sent) and the rest were not asked
      for (size_t j = o.result.empty() ? i : i + 1; j < choice.picks.size(); ++j)
        notes->Add(*choice.picks[j].pod, DecisionStage::kEviction, "stopped", choice.picks[j].to);
    }
    if (o.evicted) {
      ++(*acted)[name];
      if (!cfg_.dry_run)
        effect_.OnEviction(name, pod.Workload(), now, pod.Key(), pod.owner_api_version);
    }
    if (!o.open) return false;
    if (in_order && !o.moved) {  // refused (a PodDisruptionBudget, a limit): the next may not go
      rep->limit = "kubelet_victim_stays";
      VictimStays(pod, name, now, io);
      for (size_t j = i + 1; j < choice.picks.size(); ++j)
        notes->Add(*choice.picks[j].pod, DecisionStage::kKubeletOrder, "kubelet_victim_stays");
      break;
    }
  }
  return true;
}

void Rebalancer::Relieve(const std::vector<ReliefInput>& nodes,
                         const std::set<std::string>& alerted, const ReliefWrites& io,
                         const std::vector<std::string>& reference_hot) {
  // Every eviction is written ahead; there is no mode without it (tests use the real records).
  CHECK(io.writer != nullptr && io.records != nullptr && io.stop != nullptr);
  const double now = clock_->WallSeconds();
  int weekday = 0, minute = 0;
  zone_.LocalWeekdayMinute(now, &weekday, &minute);
  // The ledger first (at the first cycle and in a new term): the limits and the pods in motion
  // as whichever replica led left them. Unread, nothing is evicted this cycle.
  const bool ledger = evictor_.StartCycle(now, weekday, minute, io.term);
  // A new term rebuilt the awaited replacements from the ledger: they are matched afresh.
  if (io.term != term_) replaced_seen_.clear();
  term_ = io.term;
  TrackInMotion(now);
  FollowReplacements(now);
  TrackEpisodes(nodes, now, reference_hot);
  AnnounceOutcomes(io);

  // Which nodes to relieve, and how far; the limits are checked before any pod is listed.
  std::vector<RebalanceNodeReport> reports;
  std::map<std::string, Hot> relieve = QualifyHot(nodes, alerted, now, &reports);
  if (!ledger) {
    for (auto& r : reports)
      if (relieve.count(r.name)) r.limit = "ledger_unreadable";
    relieve.clear();
  }
  const bool relieving = !relieve.empty();
  std::map<std::string, size_t> acted;  // evictions (or dry-run plans) per node this cycle
  std::set<std::string> tried;          // nodes that had room for an eviction this cycle
  std::map<std::string, NodeDecisions> decided;
  const bool open =
      RelieveHot(nodes, std::move(relieve), now, io, &reports, &acted, &tried, &decided);
  // A node's decisions stand until a later cycle lists its pods again, or its mark goes. The
  // report's copy is made only when they changed (most cycles relieve nothing).
  bool changed = !decided.empty();
  for (auto& [name, d] : decided) decided_[name] = std::move(d);
  for (auto it = decided_.begin(); it != decided_.end();) {
    if (was_marked_.count(it->first)) {
      ++it;
    } else {
      it = decided_.erase(it);
      changed = true;
    }
  }
  std::shared_ptr<const std::map<std::string, NodeDecisions>> decisions;
  if (changed) decisions = std::make_shared<const std::map<std::string, NodeDecisions>>(decided_);
  if (cfg_.underused.enabled && open)
    drainer_.Underuse(nodes, relieving, now, retry_at_, io, &acted, &tried);

  // A node that was listed and queried but gave nothing to evict (nothing fits, PDBs, no usage,
  // an error) waits its cool-down before the next try, so that a node nothing can relieve does
  // not cost LISTs and a usage query every cycle.
  for (auto it = retry_at_.begin(); it != retry_at_.end();)
    it = now >= it->second ? retry_at_.erase(it) : std::next(it);
  for (const std::string& name : tried)
    if (!acted.count(name)) retry_at_[name] = now + cfg_.limits.node_cooldown_seconds;
  evictor_.FlushTrail(io.hooks.gate);  // no write unless an eviction's result is unwritten
  candidates_.EndCycle(now);
  reads_.EndCycle(now);
  const std::string problem = evictor_.Problem(now);
  const EffectFigures figures = effect_.Figures();
  tally_.Edit([&](RebalanceReport* r) {
    r->problem = problem;
    r->nodes = std::move(reports);
    r->figures = figures;
    r->paused = candidates_.paused();
    if (changed) r->decisions = std::move(decisions);
  });
}

void DecisionNotes::Add(const PodInfo& pod, DecisionStage stage, std::string reason,
                        std::string to) {
  PodDecision d;
  d.stage = stage;
  d.pod = pod.Key();
  d.uid = pod.uid;
  d.workload = pod.Workload();
  d.reason = std::move(reason);
  d.to = std::move(to);
  d.unit = relief->unit();
  if (auto u = used->find(d.pod); u != used->end())
    d.usage = relief->available_bytes ? u->second : relief->Share(u->second);
  if (plan != nullptr)
    if (auto r = std::find(plan->ranked.begin(), plan->ranked.end(), &pod); r != plan->ranked.end())
      d.order = static_cast<size_t>(r - plan->ranked.begin()) + 1;
  node->pods.push_back(std::move(d));
}

void DecisionNotes::Plan(const PodChoice& choice) {
  plan = &choice;
  for (const auto& [pod, why] : choice.left) {
    const std::string reason = why;
    // The plan stops at the kubelet's next victim that cannot go, and leaves a pod whose usage
    // is not a number: said as those checks say it.
    const DecisionStage stage = reason == "kubelet_victim_stays" ? DecisionStage::kKubeletOrder
                                : reason == "no_usage"           ? DecisionStage::kUsage
                                                                 : DecisionStage::kPlan;
    Add(*pod, stage, reason);
  }
}

void Rebalancer::AnnounceOutcomes(const ReliefWrites& io) {
  for (const EvictionOutcome& o : effect_.TakeOutcomes()) {
    std::ostringstream msg;
    const bool relieved = o.relieved_after >= 0;
    msg << "Evicted " << o.pod << " from node " << o.node << ": ";
    if (relieved)
      msg << "node relieved after " << static_cast<long>(o.relieved_after / 60) << "m"
          << static_cast<long>(o.relieved_after) % 60 << "s";
    else
      msg << "node not relieved within effectWindow ("
          << static_cast<long>(cfg_.effect_window_seconds) << " s)";
    msg << (o.replacement_node.empty() ? "; no replacement seen"
                                       : "; replacement on " + o.replacement_node);
    LogFields f = Fields("pod", o.pod, "node", o.node, "replacement_node", o.replacement_node);
    if (relieved) f.Add("relieved_after_s", o.relieved_after);
    LOG(INFO) << (relieved ? "rebalance: outcome: node relieved"
                           : "rebalance: outcome: node not relieved within effectWindow")
              << f;
    // On the pod's owner: the pod is gone, and its workload is what the outcome is about.
    const size_t a = o.workload.find('/'), b = o.workload.find('/', a + 1);
    if (o.workload.empty() || a == std::string::npos || b == std::string::npos) continue;
    EventInfo e;
    e.object_namespace = o.workload.substr(0, a);
    e.kind = o.workload.substr(a + 1, b - a - 1);
    e.name = o.workload.substr(b + 1);
    e.api_version = o.owner_api_version;
    e.reason = relieved ? "RebalanceRelieved" : "RebalanceNotRelieved";
    e.action = "Evict";
    e.at_wall = clock_->WallSeconds();
    e.related_kind = "Node";
    e.related_name = o.node;
    e.message = msg.str();
    evictor_.Post(e, io);
  }
}

}  // namespace ds
