// Relief for nodes that are already hot: after each cycle's writes, the leader evicts a few pods
// from nodes that carry our mark (rules.yaml `rebalance:`, off when absent). The mark is on the
// node before any of its pods is evicted -- the node cache has observed it -- so the scheduler
// steers the replacements elsewhere, and it stays while evictions are in flight and for
// `holdAfterEviction` after (HoldsMark), so they do not land right back on the node.
// The choices are rebalance/ (pure); this class does the I/O around them:
//   qualify   marked long enough, or named by an alert (rebalance/qualify.h)
//   budget    windows and every eviction limit, checked before anything is listed
//   pods      in a cycle that can evict, the pods of the nodes to relieve (as many as the
//             cycle's limit) and of the kDestinations least loaded unmarked nodes (their requests,
//             for the fit check): one LIST per node, never the whole cluster's
//   usage     the per-pod usage query, kept only for those pods (rebalance/pod_usage.h)
//   choose    the fewest, largest pods that bring the node below its clear threshold and fit
//             elsewhere (rebalance/pod_choice.h, placement.h, node_relief.h)
//   evict     POST .../pods/NAME/eviction, never DELETE; or only reported, in dry-run; an
//             Event on the pod and on the node for each
//   effect    evictions, bounce-backs and relief (rebalance/effect.h)
//   underused the mirror mode (rebalance.underused): nodes below every bound for long enough get
//             our key with the underused value (rebalance/underuse.h), and once the node cache
//             has seen that mark their pods are moved, in a cycle that relieves no hot node and
//             within the same limits, so a cluster autoscaler can remove them
#pragma once

#include <atomic>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "common/label_selector.h"
#include "common/log_throttle.h"
#include "common/mutex.h"
#include "common/time_zone.h"
#include "config/rule_config.h"
#include "controller/eviction_records.h"
#include "controller/node_writer.h"
#include "kube/kube_api.h"
#include "kube/node_cache.h"
#include "promql/prometheus_client.h"
#include "rebalance/effect.h"
#include "rebalance/eviction_budget.h"
#include "rebalance/node_relief.h"
#include "rebalance/placement.h"
#include "rebalance/qualify.h"
#include "rebalance/report.h"
#include "rebalance/steering.h"
#include "rebalance/underuse.h"

namespace ds {

// One node of the cycle, as the reconciler saw it.
struct ReliefInput {
  const NodeInfo* node = nullptr;
  bool marked = false;           // our mark is on it in the node cache
  double marked_since_wall = 0;  // the earliest `since` of its ownership record; 0: unknown
  bool cold = false;             // the cycle's verdict: every rule at or below its clear threshold
  bool hot = false;  // the cycle's verdict: a rule holds it (our hot mark is on it or is being set)
  double recorded_eviction_wall = 0;  // the record's lastEviction (an earlier term's), 0: none
  // The node's real load this cycle, percent of allocatable CPU and memory, from the first rule
  // that measures each (NaN: unknown). Replacements are looked for on the least loaded nodes.
  double load[2] = {std::nan(""), std::nan("")};
  std::vector<HoldingRule> holding;  // the rules holding it, with fresh values
  // Memory bytes available and the least to keep (value and clear threshold of the first
  // bytes-available rule with a value for it; NaN: none): a replacement's fit (placement.h).
  double available_memory = std::nan(""), available_floor = std::nan("");
  std::vector<HeldSince> held;  // the holding rules' since and own waits (ReliefDueWall)
};

// What the cycle lends the rebalancer for one Relieve: its term's gate, and the writers every
// node write goes through (controller/node_writer.h): the underused marks, and each eviction's
// time in the node's record.
struct ReliefWrites {
  NodeWriter* writer = nullptr;
  EvictionRecords* records = nullptr;  // null: evictions are not recorded (tests, benchmarks)
  // gate: asked before each eviction, Event and write (leader in the cycle's term, not
  // stopping); on_written: the cache takes each write through; on_progress: liveness.
  WriteHooks hooks;
  const std::atomic<bool>* stop = nullptr;
};

class Rebalancer {
 public:
  static constexpr size_t kRecentEvictions = 100;
  // Where a replacement may go is judged on this many nodes: the unmarked, schedulable ones with
  // the lowest real load. A pod that fits on none of them is not evicted (the scheduler might have
  // found room elsewhere: erring on the side of not moving it).
  static constexpr size_t kDestinations = 8;
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
  // An evicted pod still listed this long after its eviction holds the node's mark no longer.
  static constexpr double kInFlightLimitSeconds = 600;
  // RebalanceReport::problem stays this long after it was last seen (or until an eviction goes
  // through).
  static constexpr double kProblemSeconds = 900;
  // A workload is told how to let its pods move (a `would_return` Event) at most this often.
  static constexpr double kAdviceEverySeconds = 3600;
  // The `rule` of an eviction that drains an underused node.
  static constexpr const char* kUnderusedRule = "underused";

  using Gate = std::function<bool()>;

  // All pointers must outlive the Rebalancer. `zone` gives the windows' local time.
  Rebalancer(const RuleConfig& rules, KubeApi* kube, PrometheusClient* prom, const Clock* clock,
             TimeZone zone);

  // Must the mark on `node` stay now although it cooled? While its evictions are in flight, and
  // for holdAfterEviction after the last one: this replica's, or the one its ownership record
  // names (`recorded_eviction_wall`, written by whichever replica led then). The reconciler asks
  // before planning, from its own thread.
  bool HoldsMark(const std::string& node, double recorded_eviction_wall) const;

  // Relieves the nodes of `nodes` that qualify; `alerted` names nodes an Alertmanager webhook
  // reported (they qualify at once). Every write and eviction goes through `io` (REQUIRES:
  // io.writer, io.stop). Call from the reconciler's thread only.
  // `reference_hot`: the nodes rebalance.referenceQuery calls hot this cycle (for the discovery
  // rate; empty without the query).
  void Relieve(const std::vector<ReliefInput>& nodes, const std::set<std::string>& alerted,
               const ReliefWrites& io, const std::vector<std::string>& reference_hot = {});

  // Thread-safe copies for /metrics and /rebalance.
  RebalanceReport Report() const;
  RebalanceCounters Counters() const;

 private:
  struct InFlight {
    std::string ns, name;  // looked up by name: one small LIST, not the node's pods
    double since_wall = 0;
  };
  struct NodeState {
    std::map<std::string, InFlight> in_flight;  // pods (uid) evicted, still listed
    double last_eviction_wall = 0;
  };
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
  struct Cluster;  // what a cycle's pod LISTs gave (and its group terms' lists)
  struct Hot {     // a hot node to relieve this cycle
    const ReliefInput* in = nullptr;
    Relief relief;
  };

  // The stages of Relieve, in order.
  void TrackInFlight(double now);
  void TrackEpisodes(const std::vector<ReliefInput>& nodes, double now,
                     const std::vector<std::string>& reference_hot);
  std::map<std::string, Hot> QualifyHot(const std::vector<ReliefInput>& nodes,
                                        const std::set<std::string>& alerted, double now,
                                        std::vector<RebalanceNodeReport>* reports);
  // The nodes of `relieve` to relieve this cycle, in order; the others (perCycle) are dropped.
  std::vector<std::string> HotOrder(std::map<std::string, Hot>* relieve);
  // False when the gate closed (no longer the leader, stopping): nothing more this cycle.
  bool RelieveHot(const std::vector<ReliefInput>& nodes, std::map<std::string, Hot> relieve,
                  double now, const ReliefWrites& io, std::vector<RebalanceNodeReport>* reports,
                  std::map<std::string, size_t>* acted, std::set<std::string>* tried);
  // The mirror mode: its marks, then (when `relieving` is false) its drains.
  void Underuse(const std::vector<ReliefInput>& nodes, bool relieving, double now,
                const ReliefWrites& io, std::map<std::string, size_t>* acted,
                std::set<std::string>* tried);
  // Its steps, in order: the plan (rebalance/underuse.h) from this cycle's nodes; each mark set
  // or removed, with its log line and Event; the report of every node the plan names; the nodes
  // to drain this cycle, within the limits (the others' reports say which limit); the drains.
  struct UnderuseCycle;
  UnderuseCycle UnderuseInputs(const std::vector<ReliefInput>& nodes, double now);
  void WriteUnderusedMark(const UnderuseCycle& c, const std::string& node, bool set, double now,
                          const ReliefWrites& io);
  void ReportUnderused(UnderuseCycle* c);
  // A drain record (kLastDrainAnnotation) whose underused mark is gone (the hot mark replaced it,
  // or an operator's value) is removed once the node's cool-down is over: the mark's removal,
  // which takes it along, will not come.
  void ForgetDrains(const std::vector<ReliefInput>& nodes, double now, const ReliefWrites& io);
  std::vector<std::string> DrainOrder(UnderuseCycle* c, bool relieving, double now);
  void Drain(const std::vector<ReliefInput>& nodes, UnderuseCycle* c,
             const std::vector<std::string>& order, double now, const ReliefWrites& io,
             std::map<std::string, size_t>* acted, std::set<std::string>* tried);

  // The limit that stops every eviction from `node` now (kNone: none).
  Limit NodeLimit(const std::string& node, double recorded_eviction_wall, double now);
  // Our key with one of our values (a level of the mark, underused), or our taint.
  bool Ours(const NodeInfo& node) const;
  // Up to kDestinations nodes where replacements may go: without either of our values,
  // schedulable, untainted, with a known load of `resource` (0 cpu, 1 memory percent; 2 memory
  // bytes available, the most available counting as least loaded), the least loaded first; not
  // those in `exclude`.
  std::vector<const ReliefInput*> Destinations(const std::vector<ReliefInput>& nodes, int resource,
                                               const std::set<std::string>& exclude);
  static Placement PlacementOn(const std::vector<const ReliefInput*>& dest, Cluster* cluster);
  // What the replacements of a node's pods must avoid: our key's value and our taint.
  struct Avoid {
    std::string value;             // empty: no label of ours (mark: taint)
    const Taint* taint = nullptr;  // points into the node; null: none
  };
  // A hot node's: the value on it (a level of the mark), and our taint if it carries it.
  Avoid HotMarkOn(const NodeInfo& node) const;
  // Why pods of a node were left out, besides evictable.h: `limited` only for now (a limit, a
  // bounce-back pause), the others for as long as the pod stays as it is.
  struct Skipped {
    size_t limited = 0, would_return = 0, constraint = 0, no_fit = 0;
  };
  // The pods of `pods`, on `node`, that may be evicted now: evictable.h; no constraint the fit
  // check does not judge (PodInfo::unjudged); their workload not paused after a bounce-back;
  // their replacement steered off the node (steering.h), with rebalance.requireSteering (a pod
  // that fits on no other node is no_fit then, not would_return: no term would let it move); and
  // no limit forbids them. Looks up their group terms (LookUpGroups) into `placement`.
  // Reads their claims' volumes first (ReadVolumes).
  std::vector<const PodInfo*> Evictable(std::vector<PodInfo>* pods, const NodeInfo& node,
                                        const Avoid& avoid, double now, const ReliefWrites& io,
                                        Cluster* cluster, Placement* placement, Skipped* skipped);
  // Where each of `pod`'s claims' volumes can be used (each claim read once a cycle) into
  // pod->volume_affinity; a claim not bound or not readable makes the pod unjudged, named.
  void ReadVolumes(PodInfo* pod, Cluster* cluster);
  // The members of `pod`'s group terms whose key is not the hostname (placement.h), each term
  // listed once a cycle, into `placement`: the API server filters the pods by the term's selector,
  // in each of its namespaces (every one: one LIST), and each member's node gives the value of
  // the key (a destination read whole, else a GET, at most kGroupNodeReads a cycle). A term that
  // could not be listed stays out, and its pod fits nowhere.
  void LookUpGroups(const PodInfo& pod, Cluster* cluster, Placement* placement);
  // The domain guards of namespace `ns` into `placement`, listed again when the last listing is
  // older than kGuardsEverySeconds (or failed, or the wall clock stepped back): the namespace's
  // pods, page by page, keeping the required anti-affinity terms whose key is not the hostname,
  // their nodes read for the key's value. Not listed: nothing is added (the pod fits nowhere).
  // A listing that fails is not tried again in the same cycle (`cluster`).
  void RefreshGuards(const std::string& ns, double now, Cluster* cluster, Placement* placement);
  // The log line and Warning Event that say what to add to a `would_return` pod's template.
  void AdviseSteering(const PodInfo& pod, const NodeInfo& node, const Avoid& avoid, double now,
                      const ReliefWrites& io);
  size_t RoomThisCycle() const;
  // A replacement of `pod` is expected on `to`: counted on its cached requests until it is listed.
  void ExpectReplacement(const PodInfo& pod, const std::string& to);
  // One chosen pod: its limits, then the eviction (or its dry-run report) and its bookkeeping.
  // False when the gate closed before it was sent.
  bool EvictOne(const PodInfo& pod, EvictionRecord rec, const ReliefWrites& io,
                std::map<std::string, size_t>* acted);
  // Write-ahead: the eviction's time goes into the node's record (eviction_records.h) before the
  // eviction is sent, and it is sent only if that write landed: a crash, a lost lease or a failed
  // write in between errs toward a held mark and a cool-down on the next leader, never toward a
  // second eviction. *previous: the record's lastEviction before, to take the intent back.
  // A drain's time goes into the node's last-drain annotation (eviction_records.h) the same way.
  bool WriteAhead(const EvictionRecord& rec, const ReliefWrites& io, double* previous);
  // The eviction's record: the node's held-by record, or for a drain its last-drain annotation.
  WriteEnd WriteRecord(const std::string& node, bool drain, double at_wall, const ReliefWrites& io,
                       double* previous = nullptr);
  // The answer to an eviction: its result in *rec, its bookkeeping, and whether the pod may have
  // been evicted (false only for a definite no: a PDB, a 4xx, the pod gone).
  bool Answered(const PodInfo& pod, const EvictionResult& res, EvictionRecord* rec,
                const ReliefWrites& io);
  // A Warning Event on `pod`, naming `node`: something about it an operator must act on.
  void WarnOnPod(const PodInfo& pod, const std::string& node, const char* reason,
                 const char* action, std::string message, double at_wall, const ReliefWrites& io);
  // A 403 on an eviction: /status's note, a log line and a Warning Event on the pod.
  void Forbidden(const PodInfo& pod, const EvictionRecord& rec, const Status& st,
                 const ReliefWrites& io);
  // An eviction that happened, or may have: charged to every limit, holding the node's mark.
  void Charge(const PodInfo& pod, const std::string& node, double now);

  // The pods of the nodes to relieve, one LIST per node, and the requests and labels of the
  // candidate destinations (one LIST and one GET each, again once older than
  // kRequestsMaxAgeSeconds).
  std::optional<Cluster> ListNodes(const std::vector<std::string>& relieve,
                                   const std::vector<std::string>& places, double now);
  // The usage of the `wanted` pods (podUsage with `$nodes` naming `nodes`); empty on an error.
  std::map<std::string, double> PodUsage(Rule::Resource resource,
                                         const std::unordered_set<std::string>& wanted,
                                         const std::vector<std::string>& nodes);
  void FollowReplacements(double now);
  // The label selector its replacement will match too.
  static std::string ReplacementSelector(const PodInfo& pod);
  void Count(std::map<std::string, uint64_t> RebalanceCounters::*which, const std::string& key,
             uint64_t n = 1);
  void Remember(EvictionRecord r);
  // Events on the pod and on the node (kube/event.h), with the rule, its load and its goal.
  void Announce(const EvictionRecord& r, const ReliefWrites& io);
  // An Event on each evicted pod's owner once the eviction's effectWindow ended: relieved after
  // how long, and where its replacement runs (EffectTracker::TakeOutcomes); logged too.
  void AnnounceOutcomes(const ReliefWrites& io);

  const RebalanceConfig cfg_;
  const Mark mark_;
  struct Guards {
    double listed_wall = 0;
    std::vector<DomainGuard> list;
  };
  std::map<std::string, Guards> guards_;       // by namespace
  std::map<std::string, Labels> guard_nodes_;  // the guards' nodes, as read
  std::vector<std::string> our_values_;  // every level's value of mark_, and underused's: Ours()
  KubeApi* const kube_;
  PrometheusClient* const prom_;
  const Clock* const clock_;
  const TimeZone zone_;
  std::optional<LabelSelector> selector_;  // rebalance.nodeSelector; empty: every node
  EvictionBudget budget_;
  EffectTracker effect_;
  UnderuseTracker underuse_;
  std::set<std::string> drained_;  // underused nodes whose last drain found nothing to move
  LogThrottle throttle_{300};
  std::map<std::string, NodeState> state_;  // nodes evicted from, while they matter
  std::set<std::string> was_marked_;        // marked last cycle: an episode ends when it goes
  // Evictions (and drains) of the last effectWindow whose replacement has not been seen running.
  struct Pending {
    std::string workload, node;
    std::string selector;  // the evicted pod's labels, which its replacement has too
    double at_wall = 0;
    bool drain = false;  // of the mirror mode: releases perWorkload, not in the effect figures
  };
  std::vector<Pending> pending_;
  std::set<std::string> replaced_seen_;  // pods counted as a replacement once
  std::set<std::string> multiple_budgets_logged_;
  std::map<std::string, double> retry_at_;  // node -> when to try again after nothing was evicted
  std::map<std::string, Requested> requested_;  // destinations' requests, while fresh enough
  std::map<std::string, double> paused_;        // workload -> until when: its replacement came back
  std::map<std::string, double> advised_;  // workload -> when its would_return Event was posted
  std::string problem_;                    // RebalanceReport::problem
  double problem_at_ = 0;                  // when it was last seen

  mutable Mutex mu_;
  RebalanceReport report_ GUARDED_BY(mu_);
  RebalanceCounters counters_ GUARDED_BY(mu_);
};

}  // namespace ds
