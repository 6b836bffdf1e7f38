#include "controller/cluster_reads.h"

#include <glog/logging.h>

#include <algorithm>

#include "common/log_fields.h"
#include "rebalance/disruptors.h"
#include "rebalance/pod_usage.h"

namespace ds {

namespace {

// A pod that holds resources on its node: bound and not finished.
bool Holds(const PodInfo& p) {
  return !p.node.empty() && p.phase != "Succeeded" && p.phase != "Failed";
}

}  // namespace

ClusterReads::ClusterReads(const RebalanceConfig& cfg, KubeApi* kube, PrometheusClient* prom,
                           const Clock* clock, RebalanceTally* tally)
    : cfg_(cfg), kube_(kube), prom_(prom), clock_(clock), tally_(tally) {}

void Requested::Add(const PodInfo& pod) {
  cpu += pod.cpu_request;
  memory += pod.memory_request;
  AddOtherRequests(pod, &other);
  host_ports.insert(host_ports.end(), pod.host_ports.begin(), pod.host_ports.end());
  pods.push_back(ResidentOf(pod));
}

std::optional<Cluster> ClusterReads::ListNodes(const std::vector<std::string>& relieve,
                                               const std::vector<std::string>& places, double now) {
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
    tally_->CountPodList(page.ok());
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
      tally_->Count(&RebalanceCounters::list_errors);
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

void ClusterReads::LookUpGroups(const PodInfo& pod, Cluster* c, Placement* placement) {
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
          tally_->CountPodList(page.ok());
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

void ClusterReads::RefreshGuards(const std::string& ns, double now, Cluster* c,
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
    tally_->CountPodList(page.ok());
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

std::map<std::string, double> ClusterReads::PodUsage(Rule::Resource resource,
                                                     const std::unordered_set<std::string>& wanted,
                                                     const std::vector<std::string>& nodes) {
  const std::string query = ExpandNodes(
      resource == Rule::Resource::kCpu ? cfg_.cpu_usage_query : cfg_.memory_usage_query, nodes);
  static const LabelFilter kKeep = {"namespace", "pod"};
  PodUsageSink sink(&wanted);
  auto res = prom_->Query(query, &kKeep, &sink);
  if (!res.ok()) {
    tally_->Count(&RebalanceCounters::usage_errors);
    if (throttle_.ShouldLog("pod-usage", clock_->Now()))
      LOG(WARNING) << "rebalance: the pod usage query failed, nothing is evicted"
                   << Fields("err", res.status());
    return {};
  }
  return {sink.usage().begin(), sink.usage().end()};
}

void ClusterReads::ReadVolumes(PodInfo* pod, Cluster* c) {
  if (pod->claims.empty() || pod->volume_affinity.size() == pod->claims.size()) return;
  pod->volume_affinity.clear();
  for (const std::string& claim : pod->claims) {
    const std::string key = pod->ns + "/" + claim;
    auto it = c->claims.find(key);
    if (it == c->claims.end()) {
      it = c->claims.emplace(key, kube_->GetClaimPlace(pod->ns, claim)).first;
      if (!it->second.ok()) tally_->Count(&RebalanceCounters::list_errors);
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

void ClusterReads::ReadConstraints(PodInfo* pod, double now_wall, Cluster* cluster,
                                   Placement* placement) {
  ReadVolumes(pod, cluster);
  RefreshGuards(pod->ns, now_wall, cluster, placement);
  LookUpGroups(*pod, cluster, placement);
  ReadDisruptors(*pod, cluster);
}

void ClusterReads::ReadDisruptors(const PodInfo& pod, Cluster* c) {
  if (!c->autoscalers.count(pod.ns)) {
    auto list = kube_->ListAutoscalers(pod.ns);
    // A cluster without autoscaling/v2 (before 1.23) answers 404: no autoscalers to judge.
    if (!list.ok() && list.status().code() == StatusCode::kNotFound)
      list = std::vector<Autoscaler>{};
    if (!list.ok()) {
      tally_->Count(&RebalanceCounters::list_errors);
      if (throttle_.ShouldLog("hpa", clock_->Now()))
        LOG(WARNING) << "rebalance: listing a namespace's HorizontalPodAutoscalers failed; its "
                        "pods are not evicted this cycle (RBAC: list "
                        "horizontalpodautoscalers.autoscaling, deploy/overlays/rebalance)"
                     << Fields("namespace", pod.ns, "err", list.status());
    }
    c->autoscalers.emplace(pod.ns, std::move(list));
  }
  const std::optional<WorkloadRef> first = WorkloadToRead(pod);
  if (!first) return;  // a bare pod, or an owner whose status is not judged
  const std::string key = pod.ns + "/" + first->kind + "/" + first->name;
  if (c->workloads.count(key)) return;
  // The owner, then (a ReplicaSet's) its Deployment: the top one is the workload judged.
  StatusOr<std::optional<WorkloadStatus>> judged = std::optional<WorkloadStatus>();
  std::optional<WorkloadRef> next = first;
  while (next) {
    auto read = kube_->GetWorkload(pod.ns, next->kind, next->name);
    if (!read.ok() && read.status().code() == StatusCode::kNotFound) break;  // gone: none
    if (!read.ok()) {
      tally_->Count(&RebalanceCounters::list_errors);
      if (throttle_.ShouldLog("workload", clock_->Now()))
        LOG(WARNING) << "rebalance: reading a pod's workload failed; its pods are not evicted "
                        "this cycle (RBAC: get deployments, replicasets, statefulsets and "
                        "daemonsets.apps, deploy/overlays/rebalance)"
                     << Fields("workload", pod.ns + "/" + next->kind + "/" + next->name, "err",
                               read.status());
      judged = read.status();
      break;
    }
    next = OwnerToRead(*read);
    judged = std::optional<WorkloadStatus>(std::move(*read));
  }
  c->workloads.emplace(key, std::move(judged));
}

bool ClusterReads::LookUpLeaving(const std::vector<const LeavingPod*>& pods,
                                 std::vector<std::string>* gone) {
  // One LIST by name and node per pod (the API server answers from its cache with at most that
  // pod), not the node's pods: on a node with a hundred pods, a hundred objects less per pod.
  for (const LeavingPod* p : pods) {
    const size_t slash = p->pod.find('/');
    auto page =
        kube_->ListPods("metadata.name=" + p->pod.substr(slash + 1) + ",spec.nodeName=" + p->node,
                        0, "", p->pod.substr(0, slash));
    tally_->CountPodList(page.ok());
    if (!page.ok()) {
      if (throttle_.ShouldLog("in-flight", clock_->Now()))
        LOG(WARNING) << "rebalance: looking up the evicted pods failed; they count as still "
                        "leaving until the next cycle"
                     << Fields("err", page.status());
      return false;
    }
    // The same pod: a StatefulSet's replacement has its name, and may be back on this node.
    const std::string id = p->uid.empty() ? p->pod : p->uid;
    // A pod that finished (Succeeded, Failed) holds nothing on its node any more: gone.
    const bool listed = std::any_of(page->items.begin(), page->items.end(), [&](const PodInfo& x) {
      return x.node == p->node && x.Id() == id && Holds(x);
    });
    if (!listed) gone->push_back(id);
  }
  return true;
}

std::optional<std::vector<PodInfo>> ClusterReads::ListRunning(const std::string& ns,
                                                              const std::string& selector) {
  std::vector<PodInfo> out;
  std::string cont;
  do {
    auto page = kube_->ListPods("", kPodPage, cont, ns, selector);
    tally_->CountPodList(page.ok());
    if (!page.ok()) return std::nullopt;
    for (PodInfo& p : page->items)
      if (p.phase == "Running" && !p.terminating && !p.node.empty()) out.push_back(std::move(p));
    cont = page->continue_token;
  } while (!cont.empty());
  return out;
}

void ClusterReads::ExpectReplacement(const PodInfo& pod, const std::string& to) {
  if (auto r = requested_.find(to); r != requested_.end()) {
    r->second.Add(pod);
    r->second.pods.back().predicted = true;  // expected there: no company for an affinity
  }
}

void ClusterReads::EndCycle(double now_wall) {
  for (auto it = guards_.begin(); it != guards_.end();) {  // listed again when next needed
    const double age = now_wall - it->second.listed_wall;
    it = age >= kGuardsEverySeconds || age < 0 ? guards_.erase(it) : std::next(it);
  }
}

}  // namespace ds
