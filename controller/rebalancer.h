// Relief for nodes that are already hot: after each cycle's writes, the leader evicts a few pods
// from nodes that carry our mark (rules.yaml `rebalance:`, off when absent). The mark is on the
// node before any of its pods is evicted -- the node cache has observed it -- so the scheduler
// steers the replacements elsewhere, and it stays while evictions are in flight and for
// `holdAfterEviction` after (HoldsMark), so they do not land right back on the node.
// The descheduler's shape: read once, decide pure, act through one evictor. This class
// orchestrates a cycle; its parts each own their state:
//   reads       controller/cluster_reads.h: every read of the cluster, before any choice
//   candidates  controller/candidates.h: which pods may move, and where (pure on what was read)
//   evictor     controller/evictor.h: the budget and its durable ledger, the write-ahead, the
//               POST, the pods in motion, every Event
//   drainer     controller/drainer.h: the mirror mode (rebalance.underused)
// and the steps, in order:
//   in motion   which evicted pods are gone (their usage still counts for the rule's settle time)
//   qualify     marked long enough, or named by an alert (rebalance/qualify.h); the goal
//               (rebalance/relief_plan.h) less what is already moving (rebalance/in_motion.h)
//   budget      windows and every eviction limit, checked before anything is listed
//   pods        the pods of the nodes to relieve and of the kDestinations least loaded unmarked
//               nodes (their requests, for the fit check)
//   usage       the per-pod usage query, kept only for those pods (rebalance/pod_usage.h)
//   choose      the fewest, largest pods (for memory: the kubelet's next victims) that bring the
//               node below its clear threshold and fit elsewhere (rebalance/relief_plan.h)
//   evict       through the evictor
//   effect      evictions, bounce-backs and relief (rebalance/effect.h)
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/label_selector.h"
#include "common/mutex.h"
#include "common/time_zone.h"
#include "config/rule_config.h"
#include "controller/candidates.h"
#include "controller/cluster_reads.h"
#include "controller/drainer.h"
#include "controller/evictor.h"
#include "controller/rebalance_tally.h"
#include "kube/kube_api.h"
#include "promql/prometheus_client.h"
#include "rebalance/decision.h"
#include "rebalance/effect.h"
#include "rebalance/node_relief.h"
#include "rebalance/relief_plan.h"
#include "rebalance/report.h"

namespace ds {

// Records one relieved node's decisions as the cycle makes them (rebalance/decision.h), each
// with the pod's measured usage in the rule's terms and its place in the plan's order.
struct DecisionNotes {
  NodeDecisions* node = nullptr;
  const Relief* relief = nullptr;
  const std::map<std::string, double>* used = nullptr;  // the pods' usage (cores or bytes)
  const PodChoice* plan = nullptr;                      // set by Plan: the order

  void Add(const PodInfo& pod, DecisionStage stage, std::string reason, std::string to = "");
  // The plan's order, and each candidate it left with its reason.
  void Plan(const PodChoice& choice);
};

// What the rebalancer needs beyond rule.yaml: where its ledger lives (the controller's
// namespace) and the evaluation interval (-s), which a rule's settle time counts in.
struct RebalancerOptions {
  LedgerPlace ledger;
  double interval_seconds = 10;
};

class Rebalancer {
 public:
  static constexpr size_t kRecentEvictions = RebalanceTally::kRecentEvictions;
  static constexpr size_t kDestinations = Candidates::kDestinations;
  static constexpr double kRequestsMaxAgeSeconds = ClusterReads::kRequestsMaxAgeSeconds;
  static constexpr double kInFlightLimitSeconds = Evictor::kInFlightLimitSeconds;
  static constexpr const char* kUnderusedRule = Evictor::kUnderusedRule;

  // All pointers must outlive the Rebalancer. `zone` gives the windows' local time.
  Rebalancer(const RuleConfig& rules, KubeApi* kube, PrometheusClient* prom, const Clock* clock,
             TimeZone zone, RebalancerOptions options);

  // Before the cycle plans its marks: in the first cycle and in a new term, the pods still in
  // motion are read from the ledger, so HoldsMark knows those another replica evicted. Call from
  // the reconciler's thread only.
  void BeginCycle(uint64_t term);

  // Must the mark on `node` stay now although it cooled? While its evictions are in flight, and
  // for holdAfterEviction after the last one: this replica's, or the one its ownership record
  // names (`recorded_eviction_wall`, written by whichever replica led then). The reconciler asks
  // before planning, from its own thread.
  bool HoldsMark(const std::string& node, double recorded_eviction_wall) const;

  // Relieves the nodes of `nodes` that qualify; `alerted` names nodes an Alertmanager webhook
  // reported (they qualify at once). Every write and eviction goes through `io` (REQUIRES:
  // io.writer, io.records, io.stop). Call from the reconciler's thread only.
  // `reference_hot`: the nodes rebalance.referenceQuery calls hot this cycle (for the discovery
  // rate; empty without the query).
  void Relieve(const std::vector<ReliefInput>& nodes, const std::set<std::string>& alerted,
               const ReliefWrites& io, const std::vector<std::string>& reference_hot = {});

  // Thread-safe copies for /metrics and /rebalance.
  RebalanceReport Report() const { return tally_.Report(); }
  RebalanceCounters Counters() const { return tally_.Counters(); }

  // How long after a pod of a node relieved by `rule` is gone its usage may still be in the
  // rule's value (rebalance.settle, else from the rule's query: in_motion.h SettleSeconds).
  double SettleSeconds(const std::string& rule) const;

 private:
  struct Hot {  // a hot node to relieve this cycle
    const ReliefInput* in = nullptr;
    Relief relief;        // its load less what is already leaving (in_motion.h)
    double measured = 0;  // the rule's value as measured, in its own terms (for Events and logs)
  };

  // The stages of Relieve, in order.
  void TrackInMotion(double now);
  void FollowReplacements(double now);
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
                  std::map<std::string, size_t>* acted, std::set<std::string>* tried,
                  std::map<std::string, NodeDecisions>* decided);
  // Evicts `choice`'s picks off node `name` through the one evictor, in order; `used`: the pods'
  // measured usage of the relieved resource. `in_order` (memory in the kubelet's order): a pick
  // that cannot go stops the rest. false: the evictions must stop (stopping, or no longer leader).
  bool EvictPicks(const Hot& hot, const std::string& name, const PodChoice& choice,
                  const std::map<std::string, double>& used, bool in_order, double now,
                  const ReliefWrites& io, RebalanceNodeReport* rep,
                  std::map<std::string, size_t>* acted, DecisionNotes* notes);
  // Memory relief moves the kubelet's next victims only (unless rebalance.evictWithinRequests):
  // the candidates of `name` that may go, in the kubelet's order up to the first pod that cannot
  // move; empty, with the reason in *why, when that first pod is one that cannot move or is
  // within its request.
  std::vector<UsedPod> KubeletVictims(const std::vector<PodInfo>& pods,
                                      const std::vector<UsedPod>& candidates,
                                      const std::map<std::string, double>& used, double now,
                                      const ReliefWrites& io, const std::string& name,
                                      std::string* why);
  // The kubelet's next victim on `node` cannot move, so nothing else moves: counted, logged, and
  // an Event on its owner.
  void VictimStays(const PodInfo& pod, const std::string& node, double now, const ReliefWrites& io);
  // An Event on each evicted pod's owner once the eviction's effectWindow ended: relieved after
  // how long, and where its replacement runs (EffectTracker::TakeOutcomes); logged too.
  void AnnounceOutcomes(const ReliefWrites& io);

  // Constant after construction.
  const RebalanceConfig cfg_;
  const Mark mark_;
  const TimeZone zone_;
  const Clock* const clock_;
  std::optional<LabelSelector> selector_;  // rebalance.nodeSelector; empty: every node
  std::map<std::string, double> settle_;   // rule -> its settle time (SettleSeconds)

  // The parts (each documents its own thread rules: the cycle's thread).
  RebalanceTally tally_;  // thread-safe
  ClusterReads reads_;
  Evictor evictor_;
  Candidates candidates_;
  Drainer drainer_;

  // The cycle's thread only.
  EffectTracker effect_;
  std::set<std::string> was_marked_;        // marked last cycle: an episode ends when it goes
  std::set<std::string> replaced_seen_;     // pods counted as a replacement once
  uint64_t term_ = 0;                       // the leadership term of the last cycle
  std::map<std::string, double> retry_at_;  // node -> when to try again after nothing was evicted
  // Each marked node's decisions, of the last cycle that listed its pods (/explain).
  std::map<std::string, NodeDecisions> decided_;
};

}  // namespace ds
