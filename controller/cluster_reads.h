// The rebalancer's reads of the cluster, made once per cycle before any choice (the descheduler's
// shape: read once, decide pure, act through one evictor): the pods of the nodes to relieve, the
// requests and labels of the destinations, the claims' volumes, the group terms' members and the
// domain guards of each candidate, the pods' usage, which evicted pods are gone, where the
// replacements run, and the other disruptors (workload rollouts, autoscalers). The decisions in
// rebalance/ and controller/rebalancer.cc then only look at what was read. Every read is counted
// (RebalanceTally) and, failing, logged once per problem and five minutes. Call from the cycle's
// thread only.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "common/log_throttle.h"
#include "controller/rebalance_tally.h"
#include "kube/kube_api.h"
#include "kube/workload_object.h"
#include "promql/prometheus_client.h"
#include "rebalance/in_motion.h"
#include "rebalance/placement.h"
#include "rebalance/rebalance_config.h"

namespace ds {

// A destination as its pods' LIST and its GET showed it, plus the replacements sent its way
// since (kRequestsMaxAgeSeconds): what the fit check reads of it.
struct Requested {
  double cpu = 0, memory = 0;                         // requested by its pods
  std::vector<std::pair<std::string, double>> other;  // every other resource; "pods": count
  std::vector<HostPort> host_ports;                   // bound by its pods
  std::vector<ResidentPod> pods;                      // bound to it, for the inter-pod filters
  double listed_wall = 0;
  // Read with the node: all its labels (the node cache keeps only those the controller reads,
  // and a pod's nodeSelector or affinity may name any) and its allocatable beyond cpu and memory.
  Labels labels;
  std::vector<std::pair<std::string, double>> allocatable_other;
  // A pod bound there (listed, or a replacement sent its way): its requests and ports.
  void Add(const PodInfo& pod);
};

// What a cycle's reads gave: the requests bound to each destination (for the fit check), the pods
// of the nodes to relieve (the candidates), and what was read for them. Other pods are not kept.
struct Cluster {
  std::unordered_map<std::string, Requested> places;   // destination -> what the fit check reads
  std::map<std::string, std::vector<PodInfo>> on;      // node to relieve -> its pods
  std::set<std::string> groups;                        // group terms listed (PodGroupTerm::Id)
  std::map<std::string, Labels> node_labels;           // nodes read for their members' domains
  std::map<std::string, StatusOr<ClaimPlace>> claims;  // "namespace/claim" -> its volume's place
  std::set<std::string> guards_failed;  // namespaces whose guards could not be listed this cycle
  // The other disruptors (rebalance/disruptors.h): each candidate's top workload as read
  // ("namespace/Kind/name" of its owner -> the workload judged; nullopt: none to judge), and each
  // namespace's autoscalers. A read that failed is an error here: its pods are not evicted.
  std::map<std::string, StatusOr<std::optional<WorkloadStatus>>> workloads;
  std::map<std::string, StatusOr<std::vector<Autoscaler>>> autoscalers;
};

class ClusterReads {
 public:
  // A destination's requests (one LIST of its pods) are used for this long, plus the requests of
  // the replacements this replica sent its way meanwhile: the least loaded nodes stay the same
  // from cycle to cycle, and listing them all again in every cycle that evicts was most of the
  // step's cost. Pods others schedule there meanwhile are missed for at most this long; the
  // scheduler has the last word on where a replacement goes anyway.
  static constexpr double kRequestsMaxAgeSeconds = 30;
  // Pods per page of a namespace's LIST (replacements are looked for there).
  static constexpr size_t kPodPage = 500;
  // Nodes read in a cycle for the topology domain of group terms' members (LookUpGroups), and
  // in a listing of the domain guards (RefreshGuards).
  static constexpr size_t kGroupNodeReads = 32;
  // Pages (kPodPage pods each) a group term's members may take: a term that counts more pods
  // than that (a broad selector over every namespace) is not judged.
  static constexpr size_t kGroupPages = 20;
  // A namespace's domain guards (placement.h) are listed again after this long: pods with a
  // zone-wide required anti-affinity are few and come with their workloads, and a listing reads
  // every pod of the namespace, page by page.
  static constexpr double kGuardsEverySeconds = 300;

  // All pointers must outlive this.
  ClusterReads(const RebalanceConfig& cfg, KubeApi* kube, PrometheusClient* prom,
               const Clock* clock, RebalanceTally* tally);

  // The pods of the nodes of `relieve`, one LIST per node, and the requests and labels of the
  // `places` (one LIST and one GET each, again once older than kRequestsMaxAgeSeconds). nullopt
  // when one failed: nothing is evicted this cycle.
  std::optional<Cluster> ListNodes(const std::vector<std::string>& relieve,
                                   const std::vector<std::string>& places, double now_wall);
  // What decides where `pod`'s replacement may run beyond the destinations: its claims' volumes
  // (into pod->volume_affinity; an unbound or unreadable one makes it unjudged, named), its
  // namespace's domain guards and its group terms' members (into `placement`); and who else is
  // moving it: its workload's status and its namespace's autoscalers (into `cluster`, each read
  // once a cycle).
  void ReadConstraints(PodInfo* pod, double now_wall, Cluster* cluster, Placement* placement);
  // The usage of the `wanted` pods (podUsage with `$nodes` naming `nodes`); empty on an error.
  std::map<std::string, double> PodUsage(Rule::Resource resource,
                                         const std::unordered_set<std::string>& wanted,
                                         const std::vector<std::string>& nodes);
  // Which of `pods` (evicted, still listed at the last look) are gone from their node: their
  // ids (LeavingPod uid, else namespace/name). False when a lookup failed: the others wait for
  // the next cycle too, rather than each waiting out its own timeout now.
  bool LookUpLeaving(const std::vector<const LeavingPod*>& pods, std::vector<std::string>* gone);
  // The running pods of namespace `ns` with labels `selector` (a replacement's), every page;
  // nullopt when the LIST failed.
  std::optional<std::vector<PodInfo>> ListRunning(const std::string& ns,
                                                  const std::string& selector);
  // A replacement of `pod` is expected on `to`: counted on its cached requests until it is listed.
  void ExpectReplacement(const PodInfo& pod, const std::string& to);
  // Forgets what is too old to use in the next cycle (guards).
  void EndCycle(double now_wall);

 private:
  void ReadVolumes(PodInfo* pod, Cluster* c);
  void LookUpGroups(const PodInfo& pod, Cluster* c, Placement* placement);
  void RefreshGuards(const std::string& ns, double now_wall, Cluster* c, Placement* placement);
  void ReadDisruptors(const PodInfo& pod, Cluster* c);

  // Constant after construction.
  const RebalanceConfig cfg_;
  KubeApi* const kube_;
  PrometheusClient* const prom_;
  const Clock* const clock_;
  RebalanceTally* const tally_;

  // The cycle's thread only.
  struct Guards {
    double listed_wall = 0;
    std::vector<DomainGuard> list;
  };
  std::map<std::string, Guards> guards_;        // by namespace
  std::map<std::string, Labels> guard_nodes_;   // the guards' nodes, as read
  std::map<std::string, Requested> requested_;  // destinations' requests, while fresh enough
  LogThrottle throttle_{300};
};

}  // namespace ds
