// The effect simulation: a cluster of nodes and pods in simulated time, the workload of
// workload.h, kube-scheduler's default profile (test/sched/scheduler_model.h), the kubelet's
// memory.available eviction, and one scenario's policy on top: nothing, our marks (the project's
// Decider and PlanChanges), our rebalancer (its pure parts: Qualifies, HoldsMark, ReliefFor,
// CheckEvictable, EvictionBudget, Placement, ChoosePods, EffectTracker) or a request-based
// LowNodeUtilization descheduler. Pure: no clock, no I/O, no threads; one seed, one history.
//
// Time advances in fixed steps (params.step). Within a step, in this order: evicted pods whose
// grace period ended leave their nodes (Scenario::lag), new nodes join (params.join, once), the
// workload's events due (rollouts,
// scaling, bursts, jobs), the scheduler binds pending pods, usage is computed, the kubelet evicts
// on memory pressure, the controller runs (every rule interval), then the descheduler (every
// descheduler interval), and the step's figures are taken.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "bench/effect/params.h"
#include "bench/effect/workload.h"
#include "rebalance/effect.h"
#include "rebalance/eviction_budget.h"
#include "rebalance/pool_mean.h"
#include "rules/cycle_judge.h"
#include "rules/decider.h"
#include "test/sched/scheduler_model.h"

namespace effect {

struct Scenario {
  std::string name;
  bool controller = false;     // the Decider and the planner mark nodes
  bool marks_visible = false;  // the mark is a node label the pods' affinity term sees...
  bool taint = false;          // ...or a PreferNoSchedule taint (taint mode), no affinity term
  int affinity_weight = 0;     // weight of the pods' preferred `status NotIn [presure]` term
  bool rebalance = false;      // our rebalancer evicts from marked nodes
  bool descheduler = false;    // LowNodeUtilization, by requests
  // The rules of controller.reliefRuleFile instead of ruleFile (marks-relief: a memory.available
  // rule, operator "<" in bytes, drives the rebalancer).
  bool relief_rules = false;
  bool early_rules = false;  // controller.earlyRuleFile's (marks-early)
  // marks-placed (a proposal, not the controller's behaviour yet): the rebalancer predicts where
  // kube-scheduler will bind a candidate's replacement (by requests, as it binds) and keeps a pod
  // over its memory request whose working set would not fit there by use.
  bool predict_placement = false;
  // marks-lag, marks-lag-motion: the rules see the node's usage as a mean over
  // controller.valueWindow (a rate(...[5m])), and a pod the rebalancer evicts keeps running for
  // controller.terminationGrace.
  bool lag = false;
  // marks-lag-motion, marks-motion: the rebalancer takes what is already leaving a node off its
  // load before the plan (rebalance/in_motion.h, DiscountLeaving), as the controller does; a node
  // whose load is then at or below its goal is not relieved.
  bool in_motion = false;
  // marks-lag-decay (a proposal, not in_motion.h's behaviour): a pod gone from its node counts
  // with the share of the value's window that still holds it, 1 - (now - gone) / window, instead
  // of in full until the settle time ends: what a mean over the window shows of it.
  bool in_motion_decay = false;
  // marks-balance: the rules of controller.balanceRuleFile (a `relativeTo: mean` cpu rule with
  // `resource: cpu`), relieved towards the pool's mean as the controller does (pool_mean.h).
  bool balance_rules = false;
  // marks-sized (issue 42, a lever measured before it is built): marks-relief, and each node
  // carries kSizeLabel, its memory available in GiB rounded down to a power of two (with
  // hysteresis: SizeLevel), and the pods of each workload whose working set's P95 is over twice its
  // memory request prefer nodes with more than that P95 available (`kSizeLabel Gt P95 in GiB`).
  bool sized = false;
  bool sized_all = false;  // marks-sized-all: the term on every workload, whatever its P95
  // marks-sized-requests (the ceiling of issue 42's in-place resize, and of any right-sizing):
  // marks-relief with those workloads' memory request raised to their P95 working set, so the
  // scheduler's own accounting sees their size; no numeric mark.
  bool sized_requests = false;
};

// The numeric mark of marks-sized, and its levels in GiB.
inline constexpr const char* kSizeLabel = "dynamic-scheduler.io/memory-available-gib";
// The label's next value for a node with `available_gib` whose label is `current` (-1: none):
// the largest power of two at or below the available GiB (0 below 1 GiB, at most 64); down at once
// (the label must never promise room the node no longer has), up only once the node has 25 % more
// than the next level, so a node near a boundary does not flap.
int SizeLevel(double available_gib, int current);

// REQUIRES: `name` is one of KnownScenarios().
Scenario ScenarioNamed(const std::string& name, const EffectParams& p);

// Where a pod came from: what created it (the breach details tell the causes apart).
enum class PodOrigin : uint8_t {
  kStart,       // running when the simulation starts
  kRollout,     // a rollout replaced its predecessor
  kScaleUp,     // a new replica slot
  kJob,         // a short job
  kRebalancer,  // the replacement of a pod the policy (rebalancer, descheduler) evicted
  kKubelet,     // the replacement of a pod the kubelet killed
};
const char* OriginName(PodOrigin o);

// One memory.available breach, as it began: what the node and, at a binding, the pod bound to it
// were like. The figures keep them to find out why the kubelet still kills.
struct BreachDetail {
  double at = 0;  // simulated seconds
  uint32_t node = 0;
  bool at_bind = false;
  bool marked = false;          // our mark stood on the node when the step began
  bool available_rule = false;  // ...held by a rule on the bytes available (marks-relief)
  double available_before = 0;  // memory.available the step before, bytes
  double memory_percent_before = 0;
  // At a binding: the pods bound to the node this step, and the one with the largest working set.
  size_t bound = 0;
  PodOrigin origin = PodOrigin::kStart;
  double request = 0, working_set = 0;  // bytes
  // Nodes where that pod would have fitted by requests and left memory.available above the
  // kubelet's threshold (not counting the breached node), and how many of those were unmarked
  // and untainted: whether any placement could have avoided the breach.
  size_t safe_nodes = 0, safe_unmarked = 0;
  size_t feasible_unmarked = 0;  // unmarked untainted nodes that fitted it by requests
};

// params.join's figures (EFFECT.md, "A new worker joins: balance"): the spread of the nodes'
// usage across the cluster around the join, and where the load went.
struct JoinFigures {
  // The last step before the join, the join's step (the new nodes empty but for pods bound to
  // them in that very step), the first steps 1 h and 6 h after it, and the last step.
  enum Moment { kBefore, kJoin, kHour, kSixHours, kEnd, kMoments };
  static const char* MomentName(int m);
  double at = -1;  // simulated seconds of the join's step; -1: no join (yet)
  // At each moment, over every node (the joined ones from the join on): the standard deviation
  // of the nodes' cpu % and memory %, and the mean cpu %. NaN: the moment was not reached.
  double sd_cpu[kMoments], sd_memory[kMoments], mean_cpu[kMoments];
  size_t evictions_before = 0;  // the policy's evictions before the join's step...
  size_t evictions_hour = 0;    // ...and up to the first step 1 h after it
  size_t joined_pods_end = 0;   // pods on the joined nodes at the end
  double joined_cpu_end = 0, joined_memory_end = 0;  // their mean cpu % and memory % then
  JoinFigures();
};

struct Figures {
  double node_minutes_cpu = 0;              // node-minutes with cpu over params.measure_cpu
  double node_minutes_memory = 0;           // ...memory over params.measure_memory
  size_t memory_breaches = 0;               // a node's memory.available fell below evictionHard...
  size_t breaches_at_bind = 0;              // ...in the step a pod was bound to it
  size_t kubelet_evictions = 0;             // pods the kubelet killed for it (no grace, no PDB)...
  size_t kubelet_victims_over_request = 0;  // ...using more memory than they request
  size_t kubelet_victims_within_request = 0;  // ...within their request (all pods were)
  size_t evictions = 0;                       // by the policy (rebalancer or descheduler)
  size_t bounce_backs = 0;  // replacements of those bound back onto the node within effectWindow
  double pending_pod_minutes = 0;
  size_t pending_max = 0, pending_end = 0;
  size_t pods_bound = 0;
  size_t label_writes = 0;
  size_t size_label_writes = 0;   // marks-sized: its numeric label's changes
  size_t capped_node_cycles = 0;  // hot nodes the herd cap left unmarked, summed over cycles
  double marked_node_minutes = 0;
  size_t marked_max = 0;  // the most nodes marked at once (the herd cap bounds it)
  double spread_cpu = 0, spread_memory = 0;  // time average of the std dev of node usage (%)
  // Node-minutes with cpu % over the mean of every node's plus params.measure_cpu_over_mean: the
  // nodes that stand out, what a balance rule is about (fixed, so scenarios compare alike).
  double node_minutes_over_mean = 0;
  // Replacements of the policy's evictions bound to a node whose cpu % stood over the mean plus
  // measure_cpu_over_mean in the step they were bound: moves that made a node stand out.
  size_t landed_over_mean = 0;
  // ...the mean cpu % of its new node each of those used, and requested.
  double landed_over_mean_pod_cpu = 0, landed_over_mean_pod_request = 0;
  // Replacements of our rebalancer's evictions bound, and of those, bound to the node its plan
  // reserved for them (ChoosePods' destination): kube-scheduler binds by requests and scores,
  // not by the plan, so the plan's ceiling holds only where the two agree.
  size_t replacements_bound = 0, replacements_as_planned = 0;
  JoinFigures join;
  ds::EffectFigures effect;  // the rebalancer's figures (scenarios with the controller)
  // Per episode of a node (its mark to its clearing) with at least one eviction, how many, for
  // the episodes whose mark went before the end; effect.evictions / effect.episodes_evicted
  // counts every episode.
  std::vector<uint32_t> episode_evictions;
  // Node-cycles the rebalancer left alone because what was already leaving the node (in_motion.h)
  // brought its load to its goal (marks-lag-motion).
  size_t in_motion_skips = 0;
  // Evictions from a node whose load, less what was already leaving it, was at or below its
  // goal: the ones the discount would have left out (0 where it is applied).
  size_t evictions_while_leaving = 0;
  size_t terminating_max = 0;                // the most evicted pods terminating at once
  std::vector<BreachDetail> breach_details;  // one per breach, in time order
  double series_seconds = 600;
  std::vector<int> hot_series;  // nodes over either measure threshold, one value per period
  // The standard deviation of the nodes' cpu % and memory %, its mean over each period.
  std::vector<double> spread_cpu_series, spread_memory_series;
};

class Simulation {
 public:
  // `check`: verify the invariants every step (tests); violations() lists what failed.
  Simulation(const EffectParams& p, Scenario s, bool check = false);
  ~Simulation();

  // Advances one step. Returns false once the simulated time is over (nothing is done then).
  bool Step();
  void Run() {
    while (Step()) {
    }
  }

  const Figures& figures() const { return figures_; }

  // Each node as the last step left it: the values its rules saw (cpu through the rate lag) and
  // whether it carries our mark. effect-sim --trace writes them for the check against the real
  // controller (test/integration/test_effect_check.py), which replays them through Prometheus.
  struct NodeView {
    std::string name;
    double cpu_seen = 0, cpu = 0, memory = 0;  // % of allocatable
    bool marked = false;
    size_t pods = 0;  // bound to it, terminating ones included
  };
  std::vector<NodeView> NodeViews() const;
  const std::vector<std::string>& violations() const { return violations_; }
  // Test hook: every deployment with a pod on `node` bursts (cpu x workload.bursts.factor) until
  // `until` (simulated seconds), so that one node runs hot on purpose.
  void TEST_BurstNode(size_t node, double until);
  double now() const { return now_; }
  size_t live_pods() const { return live_pods_; }

 private:
  struct Pod {
    uint32_t deployment = 0, slot = 0;
    int32_t node = -1;  // -1: pending
    uint32_t at = 0;    // index in its node's pod list
    uint64_t id = 0;
    double started = 0;                    // for the leak and the pod's age
    double cpu_base = 0, memory_base = 0;  // request x the pod's own multiplier
    PodOrigin origin = PodOrigin::kStart;
    double bound_at = -1;       // simulated time of its binding
    int32_t evicted_from = -1;  // a replacement of a pod the policy evicted from this node...
    double evicted_at = 0;      // ...at this time
    double leaves_at = -1;      // evicted, terminating: leaves its node then (no replica slot)
    int32_t planned_to = -1;    // our rebalancer's replacement: the node its plan reserved
    bool alive = false;
  };
  struct Event {
    double at = 0;
    uint64_t seq = 0;
    enum Kind { kRollout, kScale, kBurst, kJobArrival, kJobEnd } kind = kRollout;
    uint32_t deployment = 0;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  struct Node;
  struct Controller;

  void InitNode(size_t k);  // nodes_[k] and its scheduler view, empty, of params.nodes' shape
  void Join();              // params.join's nodes join, empty
  void Schedule(double at, Event::Kind kind, uint32_t d);
  void HandleEvents();
  void SetReplicas(uint32_t d, size_t n, PodOrigin origin);
  uint32_t CreatePod(uint32_t d, uint32_t slot, double started, PodOrigin origin);
  void DeletePod(uint32_t pod);              // the pod's slot is left empty
  void Unbind(uint32_t pod);                 // off its node
  bool Evict(uint32_t pod, bool by_policy);  // true: terminating, still on its node
  void FinishTermination(uint32_t pod);      // a terminating pod leaves its node
  void FinishTerminations();                 // ...every one whose grace period is over
  void Bind(uint32_t pod, uint32_t node);
  void BindPending();
  void ComputeUsage();
  void KubeletEvictions();
  BreachDetail DescribeBreach(size_t node) const;
  void RunController();
  void WriteSizeLabels();  // marks-sized
  int ChooseFor(uint32_t deployment);
  std::vector<int32_t> owner_pods_;  // ChooseFor's counts, all 0 between calls
  void Rebalance(const std::vector<ds::NodeDecision>& decisions, const std::vector<bool>& cold);
  // Per rule, a relative rule's pool this cycle (Reconciler::BalancePools); null for the others.
  std::vector<std::shared_ptr<const ds::PoolMean>> BalancePools() const;
  void RunDescheduler();
  void Measure();
  void CheckInvariants();
  double MemoryUse(const Pod& pod) const;     // its working set now, bytes
  double MemoryAvailable(size_t node) const;  // bytes, as the kubelet's memory.available
  double MemorySeen(size_t node) const;       // memory %, as the rules see it
  ds::PodInfo Info(uint32_t pod) const;
  void SetMark(uint32_t node, bool on);

  const EffectParams p_;
  const Scenario s_;
  const bool check_;
  const double end_;
  Rng rng_;  // the workload's events only: the same for every scenario
  double now_ = 0;
  uint64_t steps_ = 0, seq_ = 0, pod_ids_ = 0, jobs_ = 0;

  std::vector<Deployment> deployments_;
  std::vector<std::vector<int64_t>> slots_;  // deployment -> slot -> pod index, -1 empty
  std::vector<sim::SchedPod> specs_;         // deployment -> what the scheduler sees
  std::vector<uint32_t> active_;             // deployments with replicas
  std::vector<double> cpu_factor_, memory_factor_;
  std::vector<Pod> pods_;
  std::vector<uint32_t> free_pods_;
  std::deque<uint32_t> pending_;
  std::vector<uint32_t> terminating_;  // evicted pods still on their node (Scenario::lag)
  size_t live_pods_ = 0;
  bool retry_ = true;  // a pod came or went, or a taint went, since the last binding pass
  double next_pending_retry_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;

  std::vector<sim::SchedNode> sched_nodes_;
  std::vector<sim::NodeRequests> requested_;
  std::vector<Node> nodes_;

  size_t first_joined_ = 0;  // the first joined node's index (params.join); 0: none joined yet
  // (pod, node) of the policy evictions' replacements bound this step.
  std::vector<std::pair<uint32_t, uint32_t>> landed_;

  std::unique_ptr<Controller> ctl_;
  std::deque<std::pair<double, uint32_t>> eviction_log_;  // (time, node) of the last hour
  size_t evictions_this_cycle_ = 0;

  Figures figures_;
  double series_hot_ = 0;
  double series_spread_[2] = {0, 0};  // cpu, memory: the sums of this period's steps
  size_t series_steps_ = 0;
  std::vector<std::string> violations_;
};

}  // namespace effect
