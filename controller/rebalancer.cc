#include "controller/rebalancer.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "rebalance/evictable.h"
#include "rebalance/eviction_text.h"
#include "rebalance/placement.h"
#include "rebalance/pod_usage.h"
#include "rebalance/relief_plan.h"

namespace ds {

// What a cycle's pod LISTs gave: the requests bound to each node (for the fit check) and the pods
// of the nodes to relieve (the candidates). Other pods are not kept.
struct Rebalancer::Cluster {
  std::unordered_map<std::string, Requested> places;   // destination -> what the fit check reads
  std::map<std::string, std::vector<PodInfo>> on;      // node to relieve -> its pods
  std::set<std::string> groups;                        // group terms listed (PodGroupTerm::Id)
  std::map<std::string, Labels> node_labels;           // nodes read for their members' domains
  std::map<std::string, StatusOr<ClaimPlace>> claims;  // "namespace/claim" -> its volume's place
  std::set<std::string> guards_failed;  // namespaces whose guards could not be listed this cycle
};

namespace {

const char* ResultName(EvictionResult::Kind k) {
  switch (k) {
    case EvictionResult::Kind::kEvicted:
      return "evicted";
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

// Nothing new is scheduled onto it: a dedicated pool, or NotReady.
bool Tainted(const NodeInfo& n) {
  return std::any_of(n.taints.begin(), n.taints.end(), [](const Taint& t) {
    return t.effect == "NoSchedule" || t.effect == "NoExecute";
  });
}

// A pod that holds resources on its node: bound and not finished.
bool Holds(const PodInfo& p) {
  return !p.node.empty() && p.phase != "Succeeded" && p.phase != "Failed";
}

}  // namespace

Rebalancer::Rebalancer(const RuleConfig& rules, KubeApi* kube, PrometheusClient* prom,
                       const Clock* clock, TimeZone zone)
    : cfg_(rules.rebalance),
      mark_(rules.mark),
      kube_(kube),
      prom_(prom),
      clock_(clock),
      zone_(std::move(zone)),
      budget_(rules.rebalance.limits),
      effect_(rules.rebalance.effect_window_seconds) {
  if (!cfg_.node_selector.empty()) {
    auto sel = LabelSelector::Parse(cfg_.node_selector);  // validated with rule.yaml
    if (sel.ok()) selector_ = std::move(*sel);
  }
  report_.enabled = true;
  report_.dry_run = cfg_.dry_run;
  // Asked of every node each cycle that looks for destinations: worked out once.
  for (size_t below = 0; below < mark_.LevelCount(); ++below)  // the hot mark, or a cooler level
    our_values_.push_back(mark_.Below(below).value);
  if (cfg_.underused.enabled) our_values_.push_back(cfg_.underused.value);
}

bool Rebalancer::HoldsMark(const std::string& node, double recorded_eviction_wall) const {
  RebalanceNode n;
  n.last_eviction_wall = recorded_eviction_wall;
  const double now = clock_->WallSeconds();
  if (auto it = state_.find(node); it != state_.end()) {
    for (const auto& [pod, f] : it->second.in_flight)
      n.evictions_in_flight += now - f.since_wall < kInFlightLimitSeconds;
    n.last_eviction_wall = std::max(n.last_eviction_wall, it->second.last_eviction_wall);
  }
  return ds::HoldsMark(n, cfg_, now);
}

void Rebalancer::Count(std::map<std::string, uint64_t> RebalanceCounters::*which,
                       const std::string& key, uint64_t n) {
  MutexLock l(&mu_);
  (counters_.*which)[key] += n;
}

void Rebalancer::Remember(EvictionRecord r) {
  MutexLock l(&mu_);
  report_.recent.push_back(std::move(r));
  while (report_.recent.size() > kRecentEvictions) report_.recent.pop_front();
}

void Rebalancer::Requested::Add(const PodInfo& pod) {
  cpu += pod.cpu_request;
  memory += pod.memory_request;
  AddOtherRequests(pod, &other);
  host_ports.insert(host_ports.end(), pod.host_ports.begin(), pod.host_ports.end());
  pods.push_back(ResidentOf(pod));
}

std::optional<Rebalancer::Cluster> Rebalancer::ListNodes(const std::vector<std::string>& relieve,
                                                         const std::vector<std::string>& places,
                                                         double now) {
  Cluster c;
  // Listed too long ago, or "in the future" after the wall clock stepped back: listed again.
  for (auto it = requested_.begin(); it != requested_.end();) {
    const double age = now - it->second.listed_wall;
    it = age >= kRequestsMaxAgeSeconds || age < 0 ? requested_.erase(it) : std::next(it);
  }
  std::vector<std::string> all = relieve;
  for (const std::string& node : places) {
    if (auto r = requested_.find(node); r != requested_.end()) {
      c.places[node] = r->second;
    } else {
      all.push_back(node);
    }
  }
  for (const std::string& node : all) {
    // One node's pods: the API server answers from its watch cache's spec.nodeName index.
    auto page = kube_->ListPods("spec.nodeName=" + node, 0, "");
    {
      MutexLock l(&mu_);
      ++report_.pod_lists;
      if (!page.ok()) ++counters_.list_errors;
    }
    if (!page.ok()) {
      if (throttle_.ShouldLog("list-pods", clock_->Now()))
        LOG(WARNING) << "rebalance: listing a node's pods failed, nothing is evicted this cycle"
                     << Fields("node", node, "err", page.status());
      return std::nullopt;
    }
    const bool relieved = std::find(relieve.begin(), relieve.end(), node) != relieve.end();
    if (relieved) {
      for (PodInfo& p : page->items)
        if (p.node == node && Holds(p)) c.on[node].push_back(std::move(p));
      requested_.erase(node);  // its evictions change it: listed again if it is a destination
      continue;
    }
    Requested req;
    for (const PodInfo& p : page->items)
      if (p.node == node && Holds(p)) req.Add(p);
    // A destination: read whole, for its labels. Unread, a pod's nodeSelector could not be judged
    // on it, and a guess would be wrong one way or the other: nothing is evicted this cycle.
    auto whole = kube_->GetNode(node);
    if (!whole.ok()) {
      {
        MutexLock l(&mu_);
        ++counters_.list_errors;
      }
      if (throttle_.ShouldLog("get-node", clock_->Now()))
        LOG(WARNING) << "rebalance: reading a node failed, nothing is evicted this cycle"
                     << Fields("node", node, "err", whole.status());
      return std::nullopt;
    }
    req.listed_wall = now;
    req.labels = std::move(whole->labels);
    req.allocatable_other = std::move(whole->allocatable_other);
    c.places[node] = req;
    requested_[node] = std::move(req);
  }
  return c;
}

void Rebalancer::LookUpGroups(const PodInfo& pod, Cluster* c, Placement* placement) {
  // A member's node's labels: a destination's were read whole; any other is read once a cycle,
  // up to kGroupNodeReads. Null when it cannot be read (the term is then not judged).
  auto labels_of = [&](const std::string& node) -> const Labels* {
    if (auto known = c->node_labels.find(node); known != c->node_labels.end())
      return &known->second;
    if (auto d = c->places.find(node); d != c->places.end()) return &d->second.labels;
    if (c->node_labels.size() >= kGroupNodeReads) return nullptr;
    auto read = kube_->GetNode(node);
    if (!read.ok()) return nullptr;
    return &c->node_labels.emplace(node, std::move(read->labels)).first->second;
  };
  GroupLookup found;
  for (const auto* terms : {&pod.pod_affinity, &pod.pod_anti_affinity, &pod.spread})
    for (const PodGroupTerm& t : *terms) {
      if (HostnameKey(t.topology_key) || t.none || t.all || !c->groups.insert(t.Id()).second)
        continue;
      std::vector<GroupMember> members;
      bool listed = true;
      // Every namespace: one LIST ("" is all of them); else one per namespace.
      const std::vector<std::string> spaces =
          t.namespaces.empty() ? std::vector<std::string>{""} : t.namespaces;
      size_t pages = 0;
      for (size_t i = 0; listed && i < spaces.size(); ++i) {
        std::string cont;
        do {
          // A group that large (a broad selector over every namespace) is not judged: no fit.
          if (++pages > kGroupPages) {
            listed = false;
            break;
          }
          auto page = kube_->ListPods("", kPodPage, cont, spaces[i], t.selector.text());
          {
            MutexLock l(&mu_);
            ++report_.pod_lists;
            if (!page.ok()) ++counters_.list_errors;
          }
          listed = page.ok();
          for (size_t k = 0; listed && k < page->items.size(); ++k) {
            const PodInfo& m = page->items[k];
            if (!Holds(m) || !t.Counts(m.ns, m.labels)) continue;
            const Labels* labels = labels_of(m.node);
            const std::string* domain =
                labels != nullptr ? FindLabel(*labels, t.topology_key) : nullptr;
            listed = labels != nullptr;
            members.push_back(GroupMember{m.uid, domain != nullptr ? *domain : "", m.terminating});
          }
          if (listed) cont = page->continue_token;
        } while (listed && !cont.empty());
      }
      if (listed) {
        found.emplace(t.Id(), std::move(members));
      } else if (throttle_.ShouldLog("group/" + t.Id(), clock_->Now())) {
        LOG(WARNING) << "rebalance: the pods a term counts could not all be listed with their "
                        "nodes; the pod is not evicted this cycle"
                     << Fields("pod", pod.Key(), "topology_key", t.topology_key, "selector",
                               t.selector.text());
      }
    }
  placement->AddGroups(std::move(found));
}

void Rebalancer::RefreshGuards(const std::string& ns, double now, Cluster* c,
                               Placement* placement) {
  if (c->guards_failed.count(ns)) return;  // once a cycle: not a LIST per pod in a brownout
  auto cached = guards_.find(ns);
  if (cached != guards_.end()) {
    const double age = now - cached->second.listed_wall;
    if (age >= 0 && age < kGuardsEverySeconds) {
      placement->AddGuards(ns, cached->second.list);
      return;
    }
  }
  std::vector<std::pair<PodGroupTerm, std::string>> found;  // a term, its pod's node
  std::string cont;
  do {
    auto page = kube_->ListPods("", kPodPage, cont, ns);
    {
      MutexLock l(&mu_);
      ++report_.pod_lists;
      if (!page.ok()) ++counters_.list_errors;
    }
    if (!page.ok()) {
      guards_.erase(ns);
      c->guards_failed.insert(ns);
      if (throttle_.ShouldLog("guards", clock_->Now()))
        LOG(WARNING) << "rebalance: listing a namespace's pods for zone-wide anti-affinity "
                        "failed; its pods are not evicted this cycle"
                     << Fields("namespace", ns, "err", page.status());
      return;
    }
    for (const PodInfo& p : page->items)
      if (Holds(p))
        for (const PodGroupTerm& t : p.pod_anti_affinity)
          if (!HostnameKey(t.topology_key)) found.emplace_back(t, p.node);
    cont = page->continue_token;
  } while (!cont.empty());
  Guards g;
  g.listed_wall = now;
  size_t reads = 0;
  for (auto& [term, node] : found) {
    auto known = guard_nodes_.find(node);
    if (known == guard_nodes_.end() && reads < kGroupNodeReads) {
      ++reads;
      if (auto read = kube_->GetNode(node); read.ok())
        known = guard_nodes_.emplace(node, std::move(read->labels)).first;
    }
    DomainGuard guard{std::move(term), "", known != guard_nodes_.end()};
    if (guard.known) {
      const std::string* v = FindLabel(known->second, guard.term.topology_key);
      if (v == nullptr) continue;  // its node has no such key: in no domain, keeps no node out
      guard.domain = *v;
    }
    g.list.push_back(std::move(guard));
  }
  // Bounded: the nodes of guards listed since the namespace's last listing (zones do not move).
  if (guard_nodes_.size() > 10000) guard_nodes_.clear();
  placement->AddGuards(ns, g.list);
  guards_[ns] = std::move(g);
}

std::map<std::string, double> Rebalancer::PodUsage(Rule::Resource resource,
                                                   const std::unordered_set<std::string>& wanted,
                                                   const std::vector<std::string>& nodes) {
  const std::string query = ExpandNodes(
      resource == Rule::Resource::kCpu ? cfg_.cpu_usage_query : cfg_.memory_usage_query, nodes);
  static const LabelFilter kKeep = {"namespace", "pod"};
  PodUsageSink sink(&wanted);
  auto res = prom_->Query(query, &kKeep, &sink);
  if (!res.ok()) {
    {
      MutexLock l(&mu_);
      ++counters_.usage_errors;
    }
    if (throttle_.ShouldLog("pod-usage", clock_->Now()))
      LOG(WARNING) << "rebalance: the pod usage query failed, nothing is evicted"
                   << Fields("err", res.status());
    return {};
  }
  return {sink.usage().begin(), sink.usage().end()};
}

std::string Rebalancer::ReplacementSelector(const PodInfo& pod) {
  // The owner's stable hash label when there is one (a Deployment's ReplicaSet, a StatefulSet's
  // or DaemonSet's revision): labels an application changes at run time (a leader role) would
  // hide the replacement.
  for (const char* stable : {"pod-template-hash", "controller-revision-hash"})
    if (const std::string* v = FindLabel(pod.labels, stable)) return std::string(stable) + "=" + *v;
  std::string selector;
  for (const auto& [k, v] : pod.labels) selector += (selector.empty() ? "" : ",") + k + "=" + v;
  return selector;
}

// Replacements of evicted pods, wherever they run: while an eviction of the last effectWindow has
// not seen its replacement, one LIST per cycle of the pods with the evicted pod's labels (a
// ReplicaSet's or StatefulSet's replacement has the same), in its namespace: the API server
// filters, so the answer is a few pods however large the namespace. One bound back onto the node
// its pod left is a bounce-back.
void Rebalancer::FollowReplacements(double now) {
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [&](const Pending& e) {
                                  return now - e.at_wall >= cfg_.effect_window_seconds;
                                }),
                 pending_.end());
  std::set<std::pair<std::string, std::string>> lists;  // namespace, label selector
  for (const Pending& e : pending_)
    lists.emplace(e.workload.substr(0, e.workload.find('/')), e.selector);
  for (const auto& entry : lists) {
    const std::string& ns = entry.first;
    const std::string& selector = entry.second;
    if (selector.empty()) continue;
    std::string cont;
    do {
      auto page = kube_->ListPods("", kPodPage, cont, ns, selector);
      {
        MutexLock l(&mu_);
        ++report_.pod_lists;
        if (!page.ok()) ++counters_.list_errors;
      }
      if (!page.ok()) break;  // next cycle
      for (const PodInfo& p : page->items) {
        const std::string id = p.Id();  // a StatefulSet reuses names
        if (p.phase != "Running" || p.terminating || p.node.empty() || replaced_seen_.count(id))
          continue;
        // The oldest eviction of its workload that it can replace: creationTimestamp has whole
        // seconds, the eviction's time does not.
        auto e = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& x) {
          return x.workload == p.Workload() && x.selector == selector &&
                 p.created_wall >= std::floor(x.at_wall);
        });
        if (e == pending_.end()) continue;
        replaced_seen_.insert(id);
        budget_.Replaced(p.Workload());
        if (!e->drain) effect_.OnPodBound(p.Workload(), p.node, now);
        if (p.node == e->node) {
          LOG(WARNING) << "rebalance: a replacement was scheduled right back onto the node its "
                          "pod was evicted from (a bounce-back); rebalance.bounceBackPause "
                          "keeps its workload from eviction for paused_s"
                       << Fields("pod", p.Key(), "node", p.node, "workload", p.Workload(),
                                 "paused_s", cfg_.bounce_back_pause_seconds);
          if (cfg_.bounce_back_pause_seconds > 0)
            paused_[p.Workload()] = now + cfg_.bounce_back_pause_seconds;
        }
        pending_.erase(e);
      }
      cont = page->continue_token;
    } while (!cont.empty());
  }
  // Bounded: once nothing is awaited, or (in a cluster that never stops rebalancing) at a size
  // far beyond the replacements of an hour's evictions.
  if (pending_.empty() || replaced_seen_.size() > 10000) replaced_seen_.clear();
}

void Rebalancer::TrackInFlight(double now) {
  // Evictions in flight: each evicted pod until it is gone from its node, one LIST by name and
  // node per pod (the API server answers from its cache with at most that pod), not the node's
  // pods: on a node with a hundred pods, a hundred objects less per pod in flight.
  for (auto it = state_.begin(); it != state_.end();) {
    NodeState& s = it->second;
    if (s.in_flight.empty()) {
      it = now - s.last_eviction_wall >= cfg_.hold_after_eviction_seconds ? state_.erase(it)
                                                                          : std::next(it);
      continue;
    }
    for (auto f = s.in_flight.begin(); f != s.in_flight.end();) {
      // Still there after any sensible grace period (stuck on an unreachable node, or the
      // eviction never happened): it holds the mark no longer, and is not looked up again.
      if (now - f->second.since_wall >= kInFlightLimitSeconds) {
        LOG(WARNING) << "rebalance: a pod evicted long ago may still be there; it no longer "
                        "holds the node's mark"
                     << Fields("pod", f->second.ns + "/" + f->second.name, "node", it->first,
                               "evicted_s_ago", kInFlightLimitSeconds);
        f = s.in_flight.erase(f);
        continue;
      }
      auto page = kube_->ListPods("metadata.name=" + f->second.name + ",spec.nodeName=" + it->first,
                                  0, "", f->second.ns);
      {
        MutexLock l(&mu_);
        ++report_.pod_lists;
        if (!page.ok()) ++counters_.list_errors;
      }
      if (!page.ok()) {
        // The API server is in trouble: the others wait for the next cycle too, rather than
        // each waiting out its own timeout now.
        if (throttle_.ShouldLog("in-flight", clock_->Now()))
          LOG(WARNING) << "rebalance: looking up the evicted pods failed; they hold their nodes' "
                          "marks until the next cycle"
                       << Fields("err", page.status());
        return;
      }
      // The same pod: a StatefulSet's replacement has its name, and may be back on this node.
      const bool listed =
          std::any_of(page->items.begin(), page->items.end(),
                      [&](const PodInfo& p) { return p.node == it->first && p.Id() == f->first; });
      f = listed ? std::next(f) : s.in_flight.erase(f);
    }
    ++it;
  }
}

void Rebalancer::TrackEpisodes(const std::vector<ReliefInput>& nodes, double now,
                               const std::vector<std::string>& reference_hot) {
  // Episodes: a node qualifies, is relieved, cools, and its mark goes.
  std::set<std::string> marked;
  for (const ReliefInput& in : nodes) {
    if (!in.marked) continue;
    marked.insert(in.node->name);
    if (in.cold) effect_.OnCleared(in.node->name, now);
  }
  for (const std::string& n : was_marked_)
    if (!marked.count(n)) effect_.OnUnmarked(n);
  was_marked_ = marked;
  effect_.OnCycle(now, reference_hot, marked);
}

Limit Rebalancer::NodeLimit(const std::string& node, double recorded_eviction_wall, double now) {
  PodInfo probe;
  probe.node = node;
  Limit lim = budget_.Check(probe);
  // An eviction an earlier term recorded on the node: its cool-down holds here too.
  if (lim == Limit::kNone && now - recorded_eviction_wall < cfg_.limits.node_cooldown_seconds)
    lim = Limit::kNodeCooldown;
  return lim;
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
    rn.last_eviction_wall = in.recorded_eviction_wall;
    rn.due_wall = ReliefDueWall(in.held, cfg_);
    if (auto s = state_.find(r.name); s != state_.end()) {
      rn.evictions_in_flight = s->second.in_flight.size();
      rn.last_eviction_wall = std::max(rn.last_eviction_wall, s->second.last_eviction_wall);
    }
    r.held = ds::HoldsMark(rn, cfg_, now);
    const Qualification q = Qualifies(rn, cfg_, now);
    r.qualification = QualificationName(q);
    auto relief = ReliefGoal(r.name, in.holding, in.held, cfg_, now, rn.alerted,
                             in.node->allocatable_cpu, in.node->allocatable_memory);
    if (relief) {
      r.rule = relief->rule;
      r.load = relief->Value(relief->load.load);  // in the rule's terms: bytes available, too
      r.goal = relief->Value(relief->load.goal);
      r.load_after = r.load;
      r.unit = relief->unit();
    } else if (q == Qualification::kYes) {
      r.qualification = "nothing_to_relieve";  // cooled, or no rule with a resource holds it
    }
    if (q == Qualification::kYes && relief) {
      effect_.OnQualified(r.name, now);
      if (Limit lim = NodeLimit(r.name, in.recorded_eviction_wall, now); lim != Limit::kNone) {
        r.limit = LimitName(lim);
        Count(&RebalanceCounters::skips, r.limit);
      } else if (auto w = retry_at_.find(r.name); w != retry_at_.end() && now < w->second) {
        r.limit = "retry_wait";  // nothing could be evicted last time: not listed every cycle
        Count(&RebalanceCounters::skips, r.limit);
      } else {
        relieve.emplace(r.name, Hot{&in, std::move(*relief)});
      }
    }
    reports->push_back(std::move(r));
  }
  return relieve;
}

bool Rebalancer::Ours(const NodeInfo& node) const {
  // Our taint, at any level (mark: taint or both).
  if (mark_.UsesTaint() && std::any_of(node.taints.begin(), node.taints.end(),
                                       [&](const Taint& t) { return t.key == mark_.taint.key; }))
    return true;
  const std::string* v = FindLabel(node.labels, mark_.key);
  return v != nullptr && std::find(our_values_.begin(), our_values_.end(), *v) != our_values_.end();
}

std::vector<const ReliefInput*> Rebalancer::Destinations(const std::vector<ReliefInput>& nodes,
                                                         int resource,
                                                         const std::set<std::string>& exclude) {
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
    if (!in.marked && !Ours(*in.node) && !in.node->unschedulable && !Tainted(*in.node) &&
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

Placement Rebalancer::PlacementOn(const std::vector<const ReliefInput*>& dest, Cluster* cluster) {
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
    places.push_back(std::move(p));
  }
  return Placement(std::move(places));
}

Rebalancer::Avoid Rebalancer::HotMarkOn(const NodeInfo& node) const {
  Avoid a;
  const std::string* v = FindLabel(node.labels, mark_.key);
  if (mark_.UsesLabel()) a.value = v != nullptr ? *v : mark_.value;  // mark: taint: no label
  // (A node is relieved only once the cache has seen its whole mark: with mark: taint, the taint.)
  if (mark_.UsesTaint())
    for (const Taint& t : node.taints)
      if (t.key == mark_.taint.key) a.taint = &t;
  return a;
}

void Rebalancer::ReadVolumes(PodInfo* pod, Cluster* c) {
  if (pod->claims.empty() || pod->volume_affinity.size() == pod->claims.size()) return;
  pod->volume_affinity.clear();
  for (const std::string& claim : pod->claims) {
    const std::string key = pod->ns + "/" + claim;
    auto it = c->claims.find(key);
    if (it == c->claims.end()) {
      it = c->claims.emplace(key, kube_->GetClaimPlace(pod->ns, claim)).first;
      if (!it->second.ok()) {
        MutexLock l(&mu_);
        ++counters_.list_errors;
      }
    }
    const StatusOr<ClaimPlace>& place = it->second;
    if (!place.ok() || place->volume.empty()) {
      // Unbound, its volume could be made anywhere or nowhere; unread, its zone is unknown.
      pod->unjudged.push_back("persistentVolumeClaim " + claim + " (" +
                              (place.ok() ? "not bound" : place.status().ToString()) + ")");
      return;
    }
    pod->volume_affinity.push_back(place->node_affinity);
  }
}

std::vector<const PodInfo*> Rebalancer::Evictable(std::vector<PodInfo>* pods, const NodeInfo& node,
                                                  const Avoid& avoid, double now,
                                                  const ReliefWrites& io, Cluster* cluster,
                                                  Placement* placement, Skipped* skipped) {
  Skipped local;
  Skipped& sk = skipped != nullptr ? *skipped : local;
  std::vector<const PodInfo*> out;
  for (PodInfo& p : *pods) {
    if (Keep k = CheckEvictable(p, cfg_.pods, now); k != Keep::kNone) {
      Count(&RebalanceCounters::kept, KeepName(k));
      continue;
    }
    ReadVolumes(&p, cluster);
    // Where its replacement may run depends on what the fit check does not judge: never a guess.
    if (!p.unjudged.empty()) {
      Count(&RebalanceCounters::skips, "constraint");
      ++sk.constraint;
      if (throttle_.ShouldLog("constraint/" + p.Workload(), clock_->Now()))
        LOG(INFO) << "rebalance: not evicted: where its replacement may run depends on a "
                     "constraint the fit check does not judge"
                  << Fields("pod", p.Key(), "constraint", p.unjudged.front());
      continue;
    }
    if (auto pause = paused_.find(p.Workload()); pause != paused_.end() && now < pause->second) {
      Count(&RebalanceCounters::skips, "bounced_back");
      ++sk.limited;  // for now: the pause ends
      continue;
    }
    RefreshGuards(p.ns, now, cluster, placement);
    LookUpGroups(p, cluster, placement);
    if (cfg_.require_steering &&
        SteeredAway(p, mark_.key, avoid.value, avoid.taint) == Steer::kNone) {
      // Pinned to the node (or with no room elsewhere): no term added would let it move.
      if (!placement->FitsSomewhere(p, node.name)) {
        Count(&RebalanceCounters::skips, "no_fit");
        ++sk.no_fit;
        continue;
      }
      Count(&RebalanceCounters::skips, "would_return");
      ++sk.would_return;
      AdviseSteering(p, node, avoid, now, io);
      continue;
    }
    // A pod a limit forbids now (its workload's or namespace's) is no candidate: the plan is
    // made of pods that can move, and with none the usage query is not sent at all.
    if (Limit lim = budget_.Check(p); lim != Limit::kNone) {
      Count(&RebalanceCounters::skips, LimitName(lim));
      ++sk.limited;
      continue;
    }
    out.push_back(&p);
  }
  return out;
}

void Rebalancer::AdviseSteering(const PodInfo& pod, const NodeInfo& node, const Avoid& avoid,
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
  WarnOnPod(pod, node.name, "RebalanceWouldReturn", "Skip",
            "Not evicted from node " + node.name +
                ": its replacement would be scheduled back onto it. To let the rebalancer move "
                "it, " +
                advice,
            now, io);
}

void Rebalancer::WarnOnPod(const PodInfo& pod, const std::string& node, const char* reason,
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
  if (!kube_->CreateEvent(e, io.hooks.gate).ok()) {
    MutexLock l(&mu_);
    ++counters_.event_errors;
  }
}

size_t Rebalancer::RoomThisCycle() const {
  return cfg_.limits.per_cycle > budget_.evicted_this_cycle()
             ? cfg_.limits.per_cycle - budget_.evicted_this_cycle()
             : 0;
}

void Rebalancer::Charge(const PodInfo& pod, const std::string& node, double now) {
  budget_.Record(pod);
  NodeState& s = state_[node];
  s.in_flight.emplace(pod.Id(), InFlight{pod.ns, pod.name, now});
  s.last_eviction_wall = now;
}

void Rebalancer::ExpectReplacement(const PodInfo& pod, const std::string& to) {
  if (auto r = requested_.find(to); r != requested_.end()) {
    r->second.Add(pod);
    r->second.pods.back().predicted = true;  // expected there: no company for an affinity
  }
}

WriteEnd Rebalancer::WriteRecord(const std::string& node, bool drain, double at_wall,
                                 const ReliefWrites& io, double* previous) {
  if (drain)
    return io.records->WriteDrain(node, cfg_.underused.value, at_wall, io.hooks, io.stop, previous);
  return io.records->Write(node, at_wall, io.hooks, io.stop, previous);
}

bool Rebalancer::WriteAhead(const EvictionRecord& rec, const ReliefWrites& io, double* previous) {
  if (io.records == nullptr) return true;
  if (WriteRecord(rec.node, rec.rule == kUnderusedRule, rec.at_wall, io, previous) ==
      WriteEnd::kWritten)
    return true;
  // The write logged why; the pod waits for a cycle whose record write lands.
  Count(&RebalanceCounters::skips, "record_failed");
  return false;
}

bool Rebalancer::Answered(const PodInfo& pod, const EvictionResult& res, EvictionRecord* rec,
                          const ReliefWrites& io) {
  const std::string& name = rec->node;
  rec->result = ResultName(res.kind);
  switch (res.kind) {
    case EvictionResult::Kind::kEvicted:
      problem_.clear();  // evictions go through
      Charge(pod, name, rec->at_wall);
      ExpectReplacement(pod, rec->to);
      // Its replacement is looked for, drains included: seeing it running releases the
      // workload's perWorkload limit. The effect figures are about hot nodes only.
      if (!pod.Workload().empty() && !pod.labels.empty())
        pending_.push_back(Pending{pod.Workload(), name, ReplacementSelector(pod), rec->at_wall,
                                   rec->rule == kUnderusedRule});
      if (rec->rule != kUnderusedRule)
        effect_.OnEviction(name, pod.Workload(), rec->at_wall, pod.Key(), pod.owner_api_version);
      Announce(*rec, io);
      LOG(INFO) << "rebalance: evicted a pod; its replacement fits on the destination"
                << EvictionLogFields(*rec, rec->rule == kUnderusedRule);
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
  // leads, and the record written ahead holds the node for whoever leads next.
  if (res.status.code() == StatusCode::kCancelled) return true;
  // An answer that never came (a timeout) or a 5xx may still have evicted the pod: it is charged
  // to every limit and holds the mark like an eviction, so a retry cannot exceed the limits.
  Charge(pod, name, rec->at_wall);
  ExpectReplacement(pod, rec->to);
  if (throttle_.ShouldLog("evict-error", clock_->Now()))
    LOG(WARNING) << "rebalance: evicting a pod failed"
                 << Fields("pod", rec->pod, "err", res.status);
  return true;
}

bool Rebalancer::EvictOne(const PodInfo& pod, EvictionRecord rec, const ReliefWrites& io,
                          std::map<std::string, size_t>* acted) {
  const std::string& name = rec.node;
  if (Limit lim = budget_.Check(pod); lim != Limit::kNone) {
    Count(&RebalanceCounters::skips, LimitName(lim));
    return true;
  }
  if (cfg_.dry_run) {
    // Paced by the same limits as real evictions, so the report is what would happen.
    budget_.Record(pod);
    ExpectReplacement(pod, rec.to);
    rec.result = "dry_run";
    LOG(INFO) << "rebalance (dry run): would evict a pod; its replacement fits on the destination"
              << EvictionLogFields(rec, rec.rule == kUnderusedRule);
  } else {
    const Gate& gate = io.hooks.gate;
    if (gate && !gate()) return false;  // not the leader of this term any more, or stopping
    double previous = 0;
    if (!WriteAhead(rec, io, &previous)) return !gate || gate();
    const EvictionResult res = kube_->EvictPod(pod.ns, pod.name, pod.uid, gate);
    if (!Answered(pod, res, &rec, io) && io.records != nullptr) {
      // Nothing was evicted: the intent is taken back, so the node's cool-down and the hold of
      // its mark are not charged for it. Should this write fail, the record errs toward holding.
      WriteRecord(name, rec.rule == kUnderusedRule, previous, io);
    }
  }
  if (rec.result == "evicted" || rec.result == "dry_run") ++(*acted)[name];
  Count(&RebalanceCounters::evictions, rec.result);
  Remember(std::move(rec));
  return true;
}

std::vector<std::string> Rebalancer::HotOrder(std::map<std::string, Hot>* relieve) {
  // The nodes furthest over their goal first, as many as this cycle's evictions allow: each is
  // listed and queried, so the work per cycle is bounded by the limits, not by the hot nodes.
  std::vector<std::string> order;
  for (const auto& [name, entry] : *relieve) order.push_back(name);
  std::sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    // A node short of available bytes first: the kubelet evicts there next, at once.
    const Relief& p = relieve->at(a).relief;
    const Relief& q = relieve->at(b).relief;
    if (p.available_bytes != q.available_bytes) return p.available_bytes;
    return p.load.load - p.load.goal > q.load.load - q.load.goal;
  });
  if (order.size() > cfg_.limits.per_cycle) {
    for (size_t i = cfg_.limits.per_cycle; i < order.size(); ++i) {
      relieve->erase(order[i]);
      Count(&RebalanceCounters::skips, LimitName(Limit::kCycle));
    }
    order.resize(cfg_.limits.per_cycle);
  }
  return order;
}

bool Rebalancer::RelieveHot(const std::vector<ReliefInput>& nodes,
                            std::map<std::string, Hot> relieve, double now, const ReliefWrites& io,
                            std::vector<RebalanceNodeReport>* reports,
                            std::map<std::string, size_t>* acted, std::set<std::string>* tried) {
  const std::vector<std::string> order = HotOrder(&relieve);
  if (relieve.empty()) return true;
  // Where replacements could go: the unmarked, schedulable nodes with the lowest real load of
  // the resource to relieve (kDestinations of them), with the requests bound to each.
  const Relief& first = relieve.at(order.front()).relief;
  const int ri = first.available_bytes ? 2 : first.resource == Rule::Resource::kCpu ? 0 : 1;
  const std::vector<const ReliefInput*> dest = Destinations(nodes, ri, {});
  std::vector<std::string> dest_names;
  for (const ReliefInput* in : dest) dest_names.push_back(in->node->name);
  auto cluster = ListNodes(order, dest_names, now);
  if (!cluster) return true;
  Placement placement = PlacementOn(dest, &*cluster);
  placement.RequireGuards();
  // The evictable pods of each node, then one usage query per resource for all of them.
  std::map<std::string, std::vector<const PodInfo*>> evictable;
  std::unordered_set<std::string> wanted[2];  // by resource: cpu, memory
  std::map<std::string, Skipped> skipped;
  for (auto& [name, entry] : relieve) {
    const NodeInfo& node = *entry.in->node;
    evictable[name] = Evictable(&cluster->on[name], node, HotMarkOn(node), now, io, &*cluster,
                                &placement, &skipped[name]);
    for (const PodInfo* p : evictable[name])
      wanted[entry.relief.resource == Rule::Resource::kCpu ? 0 : 1].insert(p->Key());
  }
  std::map<std::string, double> usage[2];
  if (!wanted[0].empty()) usage[0] = PodUsage(Rule::Resource::kCpu, wanted[0], order);
  if (!wanted[1].empty()) usage[1] = PodUsage(Rule::Resource::kMemory, wanted[1], order);
  for (const std::string& name : order) {
    const Hot& hot = relieve.at(name);
    const Relief& relief = hot.relief;
    auto rep = std::find_if(reports->begin(), reports->end(),
                            [&](const RebalanceNodeReport& r) { return r.name == name; });
    const auto& used = usage[relief.resource == Rule::Resource::kCpu ? 0 : 1];
    std::vector<UsedPod> candidates;
    for (const PodInfo* p : evictable[name])
      if (auto u = used.find(p->Key()); u != used.end())
        candidates.push_back(UsedPod{p, u->second});
    rep->candidates = candidates.size();
    rep->would_return = skipped[name].would_return;
    rep->constraint = skipped[name].constraint;
    const size_t room = RoomThisCycle();
    if (room == 0) continue;  // the cycle's evictions went to other nodes: no retry wait
    tried->insert(name);
    // A replacement must also fit by real usage where the node's is known (relief_plan.h), so
    // that its new node does not turn hot in its turn.
    PodChoice choice = PlanRelief(relief, candidates, room, &placement);
    rep->picks = choice.picks.size();
    rep->no_fit = choice.no_fit + skipped[name].no_fit;
    rep->load_after = relief.Value(choice.load_after);
    if (choice.no_fit > 0) Count(&RebalanceCounters::skips, "no_fit", choice.no_fit);
    for (const PodChoice::Pick& pick : choice.picks) {
      EvictionRecord rec;
      rec.pod = pick.pod->Key();
      rec.node = name;
      rec.to = pick.to;
      rec.rule = relief.rule;
      rec.usage = pick.usage;  // bytes (its working set) for a bytes-available rule
      rec.load = relief.Value(relief.load.load);
      rec.goal = relief.Value(relief.load.goal);
      rec.unit = relief.unit();
      rec.at_wall = now;
      rec.pod_uid = pick.pod->uid;
      rec.node_uid = hot.in->node->uid;
      if (!EvictOne(*pick.pod, std::move(rec), io, acted)) return false;
    }
  }
  return true;
}

// The mirror mode's view of each node this cycle, and where to find its input again.
struct Rebalancer::UnderuseCycle {
  std::vector<UnderuseNode> in;
  std::map<std::string, const ReliefInput*> by_name;
  std::map<std::string, bool> eligible;
  UnderusePlan plan;
  std::vector<UnderusedNodeReport> reports;

  // The report of `node` (each node the plan names has one; the last, were there two).
  UnderusedNodeReport* ReportOf(const std::string& node) {
    UnderusedNodeReport* found = nullptr;
    for (auto& r : reports)
      if (r.name == node) found = &r;
    return found;
  }
};

Rebalancer::UnderuseCycle Rebalancer::UnderuseInputs(const std::vector<ReliefInput>& nodes,
                                                     double now) {
  const UnderusedConfig& uc = cfg_.underused;
  UnderuseCycle c;
  c.in.reserve(nodes.size());
  for (const ReliefInput& r : nodes) {
    UnderuseNode u;
    u.name = r.node->name;
    u.load[0] = r.load[0];
    u.load[1] = r.load[1];
    const std::string* v = FindLabel(r.node->labels, mark_.key);
    u.ours = v != nullptr && *v == uc.value;
    u.taken = v != nullptr && !u.ours;
    // Never a node the cycle calls hot: the two modes do not act on one node (the hot mark is
    // written this cycle, over the underused one, and the node is relieved, not drained).
    u.eligible = (!selector_ || selector_->Matches(r.node->labels)) && !r.node->unschedulable &&
                 !Tainted(*r.node) && !r.hot;
    u.drained = u.ours && drained_.count(u.name) > 0;
    c.by_name.emplace(u.name, &r);
    c.eligible.emplace(u.name, u.eligible);
    c.in.push_back(std::move(u));
  }
  c.plan = underuse_.Step(c.in, uc, now);
  return c;
}

void Rebalancer::WriteUnderusedMark(const UnderuseCycle& c, const std::string& node, bool set,
                                    double now, const ReliefWrites& io) {
  const UnderusedConfig& uc = cfg_.underused;
  NodeEdit edit;
  edit.label.op = set ? NodeEdit::Op::kSet : NodeEdit::Op::kRemove;
  edit.label.key = mark_.key;
  edit.label.value = uc.value;  // a removal only if the value is still ours
  // The drain record goes with the mark it belongs to (in the same JSON Patch, which fails if the
  // node changed since it was read: then the next cycle looks again).
  if (!set && FindLabel(c.by_name.at(node)->node->annotations, kLastDrainAnnotation) != nullptr)
    edit.annotation = {NodeEdit::Op::kRemove, kLastDrainAnnotation, ""};
  if (cfg_.dry_run) {
    LOG(INFO) << "rebalance (dry run): would " << DescribeNodeEdit(edit) << Fields("node", node);
    return;
  }
  NodeWrite w{node, edit, set ? "below every bound of rebalance.underused" : "no longer underused"};
  const EditOutcome res = io.writer->WriteEdit(w, io.hooks, io.stop);
  if (res.end == WriteEnd::kRetryLater && res.status.code() == StatusCode::kCancelled) return;
  const bool written = res.end == WriteEnd::kWritten;
  {
    MutexLock l(&mu_);
    ++counters_.underused_marks[!written ? "failed" : set ? "set" : "removed"];
  }
  if (!written) {
    if (throttle_.ShouldLog("underused-" + node, clock_->Now()))
      LOG(WARNING) << "rebalance: could not " << DescribeNodeEdit(edit)
                   << Fields("node", node, "err", res.status);
    return;
  }
  const ReliefInput* r = c.by_name.at(node);
  std::ostringstream msg;
  msg.precision(4);
  msg << (set ? "Marked " : "Unmarked ") << mark_.key << "=" << uc.value << ": ";
  const char* names[2] = {"CPU", "memory"};
  bool first = true;
  for (int k = 0; k < 2; ++k) {
    if (std::isnan(uc.below[k])) continue;
    msg << (first ? "" : ", ") << names[k] << " at " << r->load[k] << " % of allocatable"
        << (set ? " (below " : " (bound ") << uc.below[k] << " %)";
    first = false;
  }
  if (set)
    msg << " for " << uc.for_seconds << " s or more; its pods will be moved elsewhere so that "
        << "the node can be removed";
  else if (!c.eligible.at(node))
    msg << "; no longer a node to drain (hot, cordoned, tainted, or rebalance.nodeSelector)";
  LOG(INFO) << (set ? "rebalance: marked underused" : "rebalance: unmarked underused")
            << Fields("node", node, "reason", msg.str());
  EventInfo e;
  e.kind = "Node";
  e.name = node;
  e.uid = r->node->uid;
  e.reason = set ? "MarkedUnderused" : "UnmarkedUnderused";
  e.action = set ? "Mark" : "Unmark";
  e.at_wall = now;
  e.message = msg.str();
  if (Status st = kube_->CreateEvent(e, io.hooks.gate); !st.ok()) {
    MutexLock l(&mu_);
    ++counters_.event_errors;
  }
}

void Rebalancer::ForgetDrains(const std::vector<ReliefInput>& nodes, double now,
                              const ReliefWrites& io) {
  for (const ReliefInput& r : nodes) {
    const double drained = RecordedDrain(*r.node);
    if (drained <= 0 || now - drained < cfg_.limits.node_cooldown_seconds) continue;
    const std::string* v = FindLabel(r.node->labels, mark_.key);
    if (v != nullptr && *v == cfg_.underused.value) continue;  // still ours: it goes with the mark
    NodeEdit edit;
    edit.annotation = {NodeEdit::Op::kRemove, kLastDrainAnnotation, ""};
    if (cfg_.dry_run) {
      LOG(INFO) << "rebalance (dry run): would " << DescribeNodeEdit(edit)
                << Fields("node", r.node->name);
      continue;
    }
    const EditOutcome res = io.writer->WriteEdit(
        NodeWrite{r.node->name, edit, "its underused mark is gone", true}, io.hooks, io.stop);
    if (res.end != WriteEnd::kWritten && throttle_.ShouldLog("forget-drain", clock_->Now()))
      LOG(WARNING) << "rebalance: could not remove a drain record"
                   << Fields("node", r.node->name, "err", res.status);
  }
}

void Rebalancer::ReportUnderused(UnderuseCycle* c) {
  auto report = [&](const std::string& n, const char* state) {
    const ReliefInput* r = c->by_name.at(n);
    UnderusedNodeReport u;
    u.name = n;
    u.state = state;
    u.load[0] = r->load[0];
    u.load[1] = r->load[1];
    if (auto s = c->plan.below_since.find(n); s != c->plan.below_since.end())
      u.below_since_wall = s->second;
    c->reports.push_back(std::move(u));
  };
  for (const std::string& n : c->plan.drain) report(n, drained_.count(n) ? "drained" : "draining");
  for (const std::string& n : c->plan.mark) report(n, "marked");
  for (const std::string& n : c->plan.unmark) report(n, "unmarked");
  for (const std::string& n : c->plan.capped) report(n, "capped");
}

std::vector<std::string> Rebalancer::DrainOrder(UnderuseCycle* c, bool relieving, double now) {
  // Draining: relief of hot nodes comes first; a drain waits for a cycle that relieved none.
  // In dry-run the nodes that would be marked are planned too (they are never marked there).
  std::vector<std::string> drain = c->plan.drain;
  if (cfg_.dry_run) drain.insert(drain.end(), c->plan.mark.begin(), c->plan.mark.end());
  std::vector<std::string> order;
  for (const std::string& n : drain) {
    UnderusedNodeReport* rep = c->ReportOf(n);
    if (relieving) {
      rep->limit = "hot_nodes_first";
    } else if (Limit lim = NodeLimit(n, RecordedDrain(*c->by_name.at(n)->node), now);
               lim != Limit::kNone) {
      rep->limit = LimitName(lim);
      Count(&RebalanceCounters::skips, rep->limit);
    } else if (auto w = retry_at_.find(n); w != retry_at_.end() && now < w->second) {
      rep->limit = "retry_wait";
      // A drained node is looked at again now and then (pods may land on it); that is no skip.
      if (!drained_.count(n)) Count(&RebalanceCounters::skips, rep->limit);
    } else if (order.size() < cfg_.limits.per_cycle) {
      order.push_back(n);
    } else {
      rep->limit = LimitName(Limit::kCycle);  // more nodes than this cycle's evictions
    }
  }
  return order;
}

void Rebalancer::Drain(const std::vector<ReliefInput>& nodes, UnderuseCycle* c,
                       const std::vector<std::string>& order, double now, const ReliefWrites& io,
                       std::map<std::string, size_t>* acted, std::set<std::string>* tried) {
  const UnderusedConfig& uc = cfg_.underused;
  const int ri = std::isnan(uc.below[0]) ? 1 : 0;
  // Not onto nodes that idle too (waiting out `for`, capped, being marked): their pods would
  // only move again when their turn comes. Consolidation means the busier nodes take them.
  std::set<std::string> exclude(c->plan.mark.begin(), c->plan.mark.end());
  for (const auto& [name, since] : c->plan.below_since) exclude.insert(name);
  const std::vector<const ReliefInput*> dest = Destinations(nodes, ri, exclude);
  std::vector<std::string> dest_names;
  for (const ReliefInput* d : dest) dest_names.push_back(d->node->name);
  auto cluster = ListNodes(order, dest_names, now);
  if (!cluster) return;
  Placement placement = PlacementOn(dest, &*cluster);
  placement.RequireGuards();
  for (const std::string& n : order) {
    const size_t room = RoomThisCycle();
    if (room == 0) return;
    tried->insert(n);
    const ReliefInput* r = c->by_name.at(n);
    Skipped skipped;
    // The underused mark has no taint; in a dry run it is not on the node, but would be.
    const std::vector<const PodInfo*> movable =
        Evictable(&cluster->on[n], *r->node, Avoid{uc.value, nullptr}, now, io, &*cluster,
                  &placement, &skipped);
    // Drained: nothing it may ever move is left. Pods a limit holds back for now still count, and
    // so do pods that would come back, fit nowhere, or whose fit is not judged: they are still on
    // the node, which is not empty, and a drained node would free its maxNodes place for the next
    // one.
    if (movable.empty() && skipped.limited == 0 && skipped.would_return == 0 &&
        skipped.constraint == 0 && skipped.no_fit == 0)
      drained_.insert(n);
    else
      drained_.erase(n);
    PodChoice choice = ChooseDrain(n, movable, room, &placement);
    if (choice.no_fit > 0) Count(&RebalanceCounters::skips, "no_fit", choice.no_fit);
    for (auto& rep : c->reports)
      if (rep.name == n) rep.picks = choice.picks.size();
    for (const PodChoice::Pick& pick : choice.picks) {
      EvictionRecord rec;
      rec.pod = pick.pod->Key();
      rec.node = n;
      rec.to = pick.to;
      rec.rule = kUnderusedRule;
      rec.load = std::max(std::isfinite(r->load[0]) ? r->load[0] : 0,
                          std::isfinite(r->load[1]) ? r->load[1] : 0);
      rec.goal = uc.below[ri];
      rec.at_wall = now;
      rec.pod_uid = pick.pod->uid;
      rec.node_uid = r->node->uid;
      // False: no longer the leader, or stopping: nothing more this cycle.
      if (!EvictOne(*pick.pod, std::move(rec), io, acted)) return;
    }
  }
}

void Rebalancer::Underuse(const std::vector<ReliefInput>& nodes, bool relieving, double now,
                          const ReliefWrites& io, std::map<std::string, size_t>* acted,
                          std::set<std::string>* tried) {
  UnderuseCycle c = UnderuseInputs(nodes, now);
  // The marks first: a node is drained only once the node cache has seen its mark (a later
  // cycle), so the scheduler already steers the replacements elsewhere.
  for (const std::string& n : c.plan.unmark) {
    WriteUnderusedMark(c, n, false, now, io);
    drained_.erase(n);
  }
  // Only nodes that still carry the underused mark: one deleted, or whose mark the hot one
  // replaced, must count against maxNodes again if it is ever marked anew.
  std::set<std::string> ours;
  for (const UnderuseNode& u : c.in)
    if (u.ours) ours.insert(u.name);
  for (auto it = drained_.begin(); it != drained_.end();)
    it = ours.count(*it) ? std::next(it) : drained_.erase(it);
  for (const std::string& n : c.plan.mark) WriteUnderusedMark(c, n, true, now, io);
  ForgetDrains(nodes, now, io);

  ReportUnderused(&c);
  const std::vector<std::string> order = DrainOrder(&c, relieving, now);
  if (!order.empty()) Drain(nodes, &c, order, now, io, acted, tried);
  MutexLock l(&mu_);
  report_.underused = std::move(c.reports);
}

void Rebalancer::Relieve(const std::vector<ReliefInput>& nodes,
                         const std::set<std::string>& alerted, const ReliefWrites& io,
                         const std::vector<std::string>& reference_hot) {
  const double now = clock_->WallSeconds();
  int weekday = 0, minute = 0;
  zone_.LocalWeekdayMinute(now, &weekday, &minute);
  budget_.StartCycle(now, weekday, minute);
  TrackInFlight(now);
  FollowReplacements(now);
  TrackEpisodes(nodes, now, reference_hot);
  AnnounceOutcomes(io);

  // Which nodes to relieve, and how far; the limits are checked before any pod is listed.
  std::vector<RebalanceNodeReport> reports;
  std::map<std::string, Hot> relieve = QualifyHot(nodes, alerted, now, &reports);
  const bool relieving = !relieve.empty();
  std::map<std::string, size_t> acted;  // evictions (or dry-run plans) per node this cycle
  std::set<std::string> tried;          // nodes that had room for an eviction this cycle
  const bool open = RelieveHot(nodes, std::move(relieve), now, io, &reports, &acted, &tried);
  if (cfg_.underused.enabled && open) Underuse(nodes, relieving, now, io, &acted, &tried);

  // A node that was listed and queried but gave nothing to evict (nothing fits, PDBs, no usage,
  // an error) waits its cool-down before the next try, so that a node nothing can relieve does
  // not cost LISTs and a usage query every cycle.
  for (auto it = retry_at_.begin(); it != retry_at_.end();)
    it = now >= it->second ? retry_at_.erase(it) : std::next(it);
  for (const std::string& name : tried)
    if (!acted.count(name)) retry_at_[name] = now + cfg_.limits.node_cooldown_seconds;
  for (auto it = advised_.begin(); it != advised_.end();)
    it = now - it->second >= kAdviceEverySeconds || now < it->second ? advised_.erase(it)
                                                                     : std::next(it);
  // A pause set "in the future" (the wall clock stepped back since) is not made longer by the step.
  for (auto it = paused_.begin(); it != paused_.end();)
    it = now >= it->second || it->second - now > cfg_.bounce_back_pause_seconds ? paused_.erase(it)
                                                                                : std::next(it);
  for (auto it = guards_.begin(); it != guards_.end();) {  // listed again when next needed
    const double age = now - it->second.listed_wall;
    it = age >= kGuardsEverySeconds || age < 0 ? guards_.erase(it) : std::next(it);
  }
  // A 403 not seen again for kProblemSeconds: perhaps the RBAC was fixed while no node was hot.
  if (!problem_.empty() && std::abs(now - problem_at_) > kProblemSeconds) problem_.clear();
  MutexLock l(&mu_);
  report_.problem = problem_;
  report_.nodes = std::move(reports);
  report_.figures = effect_.Figures();
  report_.paused = paused_;
}

void Rebalancer::Forbidden(const PodInfo& pod, const EvictionRecord& rec, const Status& st,
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
    if (!kube_->CreateEvent(e, io.hooks.gate).ok()) {
      MutexLock l(&mu_);
      ++counters_.event_errors;
    }
  }
}

void Rebalancer::Announce(const EvictionRecord& r, const ReliefWrites& io) {
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
  for (const EventInfo* e : {&pod, &node}) {
    Status st = kube_->CreateEvent(*e, io.hooks.gate);
    if (st.ok()) continue;
    {
      MutexLock l(&mu_);
      ++counters_.event_errors;
    }
    if (throttle_.ShouldLog("event", clock_->Now()))
      LOG(WARNING) << "rebalance: an event could not be written"
                   << Fields(e == &node ? "node" : "pod", e == &node ? r.node : r.pod, "err", st);
  }
}

RebalanceReport Rebalancer::Report() const {
  MutexLock l(&mu_);
  return report_;
}

RebalanceCounters Rebalancer::Counters() const {
  MutexLock l(&mu_);
  return counters_;
}

}  // namespace ds
