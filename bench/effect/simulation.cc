#include "bench/effect/simulation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_set>

#include "bench/effect/descheduler.h"
#include "rebalance/evictable.h"
#include "rebalance/in_motion.h"
#include "rebalance/kubelet_order.h"
#include "rebalance/node_relief.h"
#include "rebalance/placement.h"
#include "rebalance/pod_choice.h"
#include "rebalance/qualify.h"
#include "rebalance/relief_plan.h"
#include "rebalance/steering.h"
#include "rules/herd_cap.h"
#include "rules/planner.h"

namespace effect {
namespace {

constexpr double kSecondsPerDay = 86400;
// Simulated time 0 is this wall time (Monday 2026-11-23 00:00 UTC): the rebalancer's windows and
// record times are wall times, and 0 means "never" to it.
constexpr double kEpoch = 1795392000;
// The rebalancer offers an evicted pod's replacement the least loaded unmarked nodes, this many
// (controller/rebalancer.h kDestinations).
constexpr size_t kDestinations = 8;
// kubelet's evictionPressureTransitionPeriod default: the MemoryPressure condition, and the
// node.kubernetes.io/memory-pressure:NoSchedule taint it brings, stay this long after the last
// breach.
constexpr double kPressureTransition = 300;
const char* kPressureTaint = "node.kubernetes.io/memory-pressure";

ds::TimePoint Mono(double t) { return ds::TimePoint{} + ds::FromSeconds(t + 1e6); }

// The parameters a scenario runs with: marks-relief's rules come from controller.reliefRuleFile,
// marks-early's from controller.earlyRuleFile, marks-balance's from controller.balanceRuleFile.
EffectParams ForScenario(const EffectParams& p, const Scenario& s) {
  EffectParams out = p;
  if (s.relief_rules && p.has_relief_rules) out.rules = p.relief_rules;
  if (s.early_rules && p.has_early_rules) out.rules = p.early_rules;
  if (s.balance_rules && p.has_balance_rules) out.rules = p.balance_rules;
  return out;
}

}  // namespace

Scenario ScenarioNamed(const std::string& name, const EffectParams& p) {
  Scenario s;
  s.name = name;
  if (name.rfind("marks-w", 0) == 0) {
    s.controller = s.marks_visible = true;
    s.affinity_weight = std::stoi(name.substr(7));
  } else if (name == "marks-taint") {
    // Taint mode: the pods carry no affinity term; TaintToleration scores marked nodes lower.
    s.controller = s.marks_visible = s.taint = true;
  } else if (name == "lownodeutil") {
    s.descheduler = true;
  } else if (name == "evict-usage") {
    s.controller = s.rebalance = true;  // marks the scheduler never sees
  } else if (name == "marks-rebalance" || name == "marks-relief" || name == "marks-early" ||
             name == "marks-placed" || name == "marks-lag" || name == "marks-lag-motion" ||
             name == "marks-motion" || name == "marks-lag-decay") {
    s.controller = s.marks_visible = s.rebalance = true;
    s.lag = name == "marks-lag" || name == "marks-lag-motion" || name == "marks-lag-decay";
    s.in_motion = name == "marks-lag-motion" || name == "marks-motion" || name == "marks-lag-decay";
    s.in_motion_decay = name == "marks-lag-decay";
    s.affinity_weight = p.affinity_weight;
    s.relief_rules = name == "marks-relief" || name == "marks-placed";
    s.predict_placement = name == "marks-placed";
    s.early_rules = name == "marks-early";
  } else if (name == "marks-sized" || name == "marks-sized-all" || name == "marks-sized-requests") {
    s.controller = s.marks_visible = s.rebalance = s.relief_rules = true;
    s.sized = name == "marks-sized" || name == "marks-sized-all";
    s.sized_all = name == "marks-sized-all";
    s.sized_requests = name == "marks-sized-requests";
    s.affinity_weight = p.affinity_weight;
  } else if (name == "marks-balance") {
    // Balance as the controller runs it now: marks, the rebalancer with its discount of what is
    // already leaving (in_motion.h), and a relative rule whose goal follows the pool's mean.
    s.controller = s.marks_visible = s.rebalance = s.in_motion = s.balance_rules = true;
    s.affinity_weight = p.affinity_weight;
  }
  return s;
}

JoinFigures::JoinFigures() {
  for (int m = 0; m < kMoments; ++m)
    sd_cpu[m] = sd_memory[m] = mean_cpu[m] = std::numeric_limits<double>::quiet_NaN();
}

const char* JoinFigures::MomentName(int m) {
  switch (m) {
    case kBefore:
      return "before";
    case kJoin:
      return "join";
    case kHour:
      return "1h";
    case kSixHours:
      return "6h";
    case kEnd:
      return "end";
  }
  return "?";
}

struct Simulation::Node {
  std::vector<uint32_t> pods;
  double alloc_cpu = 0, alloc_memory = 0;  // cores, bytes
  double cpu = 0, memory = 0;              // real usage now (cores, bytes; cpu capped)
  double memory_before = 0;                // ...the step before
  double cpu_seen = -1;     // cpu % as the rule sees it: rate() over a window lags the usage
  double memory_seen = -1;  // memory %, likewise (Scenario::lag; else the usage as it is)
  // Scenario::lag: the last valueWindow of steps' cpu and memory % (a ring) and their sums.
  std::vector<double> window_cpu, window_memory;
  size_t window_at = 0, window_filled = 0;
  double window_sum_cpu = 0, window_sum_memory = 0;
  // Pods evicted from it, terminating or gone less than their settle time ago (in_motion.h).
  std::vector<ds::LeavingPod> leaving;
  size_t terminating = 0;          // of those, still on the node
  uint32_t episode_evictions = 0;  // in its current episode (its mark to its clearing)
  bool breached = false;
  double pressure_until = -1;
  bool marked = false;  // our mark: a label (marks_visible) or only the controller's view
  double marked_since = 0;
  bool has_record = false;
  std::vector<size_t> recorded;
  double last_eviction_wall = 0;
  double retry_at = 0;
  double last_bind = -1;           // when a pod was last bound to it
  std::vector<double> hold_since;  // per rule: since when it holds the node (simulated s), -1
  double CpuPercent() const { return 100 * cpu / alloc_cpu; }
  double MemoryPercent() const { return 100 * memory / alloc_memory; }
};

struct Simulation::Controller {
  Controller(const EffectParams& p, double grace)
      : judge(p.rules.rules, ds::FromSeconds(grace),
              ds::HerdCap{p.rules.max_marked_fraction, p.rules.max_marked},
              ds::OutagePolicy{p.rules.release_on_outage, p.rules.release_after_seconds}),
        budget(p.rules.rebalance.limits),
        effect(p.rules.rebalance.effect_window_seconds) {}
  ds::CycleJudge judge;  // the controller's own cycle judgement (rules/cycle_judge.h)
  ds::EvictionBudget budget;
  ds::EffectTracker effect;
  uint64_t every = 1;                       // steps per cycle
  std::vector<std::vector<double>> values;  // per rule, per node
  std::set<std::string> was_marked;
  // Per rule: how long a pod gone from a node still shows in its value (in_motion.h), and the
  // longest of them, after which a leaving pod is forgotten.
  std::vector<double> settle;
  double settle_max = 0;
  double interval = 0;  // seconds
};

namespace {

// The query a simulated rule stands for, for in_motion.h's SettleSeconds (the rule files say
// only "simulated"): its value's window as a range selector where it has one; the bytes
// available (push.sh's gauge) and, without Scenario::lag, memory % have none: gauges, whose gone
// pods count for one interval.
std::string SimulatedQuery(const ds::Rule& r, const EffectParams& p, bool lag) {
  auto window = [](double seconds) { return "[" + std::to_string(std::llround(seconds)) + "s]"; };
  if (SeesBytesAvailable(r)) return "min by (node) (k8s_node_memory_available_bytes)";
  if (r.resource == ds::Rule::Resource::kCpu) {
    const double w = lag ? p.value_window_seconds : p.cpu_rate_window_seconds;
    return w > 0 ? "rate(node_cpu_seconds_total" + window(w) + ")" : "node_cpu_usage";
  }
  return lag && p.value_window_seconds > 0
             ? "avg_over_time(node_memory_working_set_bytes" + window(p.value_window_seconds) + ")"
             : "node_memory_working_set_bytes";
}

}  // namespace

Simulation::Simulation(const EffectParams& p, Scenario s, bool check)
    : p_(ForScenario(p, s)),
      s_(std::move(s)),
      check_(check),
      end_(p.days * kSecondsPerDay),
      rng_(p.seed) {
  figures_.series_seconds = 600;
  const NodeParams& np = p_.nodes;
  nodes_.resize(np.count);
  sched_nodes_.resize(np.count);
  requested_.resize(np.count);
  for (size_t i = 0; i < np.count; ++i) InitNode(i);
  if (s_.controller) {
    const ds::RuleConfig& rc = p_.rules;
    const double interval = rc.interval_seconds > 0 ? rc.interval_seconds : p_.step_seconds;
    const double grace =
        rc.missing_data_grace_seconds > 0 ? rc.missing_data_grace_seconds : 3 * interval;
    ctl_ = std::make_unique<Controller>(p_, grace);
    ctl_->every =
        std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(interval / p_.step_seconds)));
    ctl_->values.assign(rc.rules.size(), std::vector<double>(np.count, NAN));
    ctl_->interval = interval;
    for (const ds::Rule& r : rc.rules) {
      ctl_->settle.push_back(ds::SettleSeconds(SimulatedQuery(r, p_, s_.lag), interval));
      ctl_->settle_max = std::max(ctl_->settle_max, ctl_->settle.back());
    }
  }

  deployments_ = GenerateDeployments(p_.workload, np.count, &rng_);
  const WorkloadParams& w = p_.workload;
  for (uint32_t d = 0; d < deployments_.size(); ++d) {
    const size_t n = deployments_[d].replicas;
    deployments_[d].replicas = 0;
    SetReplicas(d, n, PodOrigin::kStart);
    // Running pods of different ages: the leaks start part of the way.
    for (int64_t pod : slots_[d]) {
      Rng age(Mix(p_.seed ^ Mix(pods_[pod].id + 0x5eed)));
      pods_[pod].started = -kSecondsPerDay * age.Uniform();
    }
    Schedule(rng_.Exponential(w.rollouts_per_day / kSecondsPerDay), Event::kRollout, d);
    Schedule(rng_.Exponential(w.scales_per_day / kSecondsPerDay), Event::kScale, d);
    Schedule(rng_.Exponential(w.bursts_per_day / kSecondsPerDay), Event::kBurst, d);
  }
  Schedule(rng_.Exponential(w.jobs_per_node_hour * static_cast<double>(np.count) / 3600),
           Event::kJobArrival, 0);
}

Simulation::~Simulation() = default;

void Simulation::InitNode(size_t k) {
  const NodeParams& np = p_.nodes;
  char name[32];
  std::snprintf(name, sizeof name, "node-%04zu", k);
  sched_nodes_[k].name = name;
  sched_nodes_[k].cpu_milli = static_cast<int64_t>(std::llround(np.cpu * 1000));
  sched_nodes_[k].memory = static_cast<int64_t>(np.AllocatableMemory());
  sched_nodes_[k].pods = np.pods;
  nodes_[k].alloc_cpu = np.cpu;
  nodes_[k].alloc_memory = np.AllocatableMemory();
}

// New workers of the cluster's shape, empty and schedulable, named after the others. Pending pods
// may bind to them in this very step (the scheduler's queue is flushed on a node's arrival). The
// controller's next cycle (this step's, when one is due) sees them with their first values, and
// the Decider starts each fresh, as for any node new to its cache.
void Simulation::Join() {
  const size_t from = nodes_.size(), to = from + p_.join.nodes;
  nodes_.resize(to);
  sched_nodes_.resize(to);
  requested_.resize(to);
  for (size_t k = from; k < to; ++k) InitNode(k);
  if (ctl_)
    for (std::vector<double>& v : ctl_->values) v.resize(to, NAN);
  first_joined_ = from;
  figures_.join.at = now_;
  retry_ = true;
}

void Simulation::Schedule(double at, Event::Kind kind, uint32_t d) {
  if (std::isfinite(at) && at < end_) events_.push(Event{at, seq_++, kind, d});
}

uint32_t Simulation::CreatePod(uint32_t d, uint32_t slot, double started, PodOrigin origin) {
  uint32_t i;
  if (!free_pods_.empty()) {
    i = free_pods_.back();
    free_pods_.pop_back();
  } else {
    i = static_cast<uint32_t>(pods_.size());
    pods_.emplace_back();
  }
  Pod& pod = pods_[i];
  pod = Pod{};
  pod.deployment = d;
  pod.slot = slot;
  pod.id = ++pod_ids_;
  pod.started = started;
  pod.origin = origin;
  pod.alive = true;
  const Deployment& dep = deployments_[d];
  const double jitter = p_.workload.pod_jitter;
  pod.cpu_base = dep.cpu_request * PodMultiplier(p_.seed, d, slot, 0, jitter);
  pod.memory_base = dep.memory_request * PodMultiplier(p_.seed, d, slot, 1, jitter);
  slots_[d][slot] = i;
  pending_.push_back(i);
  retry_ = true;
  ++live_pods_;
  return i;
}

void Simulation::Unbind(uint32_t i) {
  Pod& pod = pods_[i];
  Node& n = nodes_[static_cast<size_t>(pod.node)];
  const uint32_t last = n.pods.back();
  n.pods[pod.at] = last;
  pods_[last].at = pod.at;
  n.pods.pop_back();
  requested_[static_cast<size_t>(pod.node)].Remove(specs_[pod.deployment]);
  retry_ = true;
}

void Simulation::DeletePod(uint32_t i) {
  Pod& pod = pods_[i];
  if (pod.node >= 0) {
    Unbind(i);
  } else {
    pending_.erase(std::find(pending_.begin(), pending_.end(), i));
  }
  slots_[pod.deployment][pod.slot] = -1;
  pod.alive = false;
  free_pods_.push_back(i);
  --live_pods_;
}

// The pod's owner replaces it at once, in the same slot; a policy eviction is remembered on the
// replacement, to count a bounce-back when it lands on the same node. With Scenario::lag a pod
// the policy evicts terminates gracefully: it stays on its node, using what it used and holding
// its requests (the scheduler counts a terminating pod's), for terminationGrace, out of its slot
// (its replacement is created now, as a ReplicaSet does once the deletion timestamp is set).
// Returns whether the pod is terminating (still on its node).
bool Simulation::Evict(uint32_t i, bool by_policy) {
  const uint32_t d = pods_[i].deployment, slot = pods_[i].slot;
  const int32_t from = pods_[i].node;
  const bool graceful = by_policy && s_.lag && p_.termination_grace_seconds > 0 && from >= 0;
  if (graceful) {
    pods_[i].leaves_at = now_ + p_.termination_grace_seconds;
    slots_[d][slot] = -1;
    terminating_.push_back(i);
    --live_pods_;  // no replica any more
    ++nodes_[static_cast<size_t>(from)].terminating;
    figures_.terminating_max = std::max(figures_.terminating_max, terminating_.size());
  } else {
    DeletePod(i);
  }
  const uint32_t r =
      CreatePod(d, slot, now_, by_policy ? PodOrigin::kRebalancer : PodOrigin::kKubelet);
  if (by_policy) {
    pods_[r].evicted_from = from;
    pods_[r].evicted_at = now_;
  }
  return graceful;
}

// Gone from its node: the rebalancer's record of it (in_motion.h) says since when.
void Simulation::FinishTermination(uint32_t i) {
  Pod& pod = pods_[i];
  Node& n = nodes_[static_cast<size_t>(pod.node)];
  const std::string uid = std::to_string(pod.id);
  for (ds::LeavingPod& l : n.leaving)
    if (l.uid == uid && l.gone_wall <= 0) l.gone_wall = kEpoch + now_;
  --n.terminating;
  Unbind(i);
  terminating_.erase(std::find(terminating_.begin(), terminating_.end(), i));
  pod.alive = false;
  free_pods_.push_back(i);
}

void Simulation::FinishTerminations() {
  for (size_t j = 0; j < terminating_.size();) {
    const uint32_t i = terminating_[j];
    if (pods_[i].leaves_at <= now_) {
      FinishTermination(i);  // erases terminating_[j]
    } else {
      ++j;
    }
  }
}

void Simulation::SetReplicas(uint32_t d, size_t n, PodOrigin origin) {
  if (d >= slots_.size()) {
    slots_.resize(d + 1);
    specs_.resize(d + 1);
    cpu_factor_.resize(d + 1);
    memory_factor_.resize(d + 1);
    const Deployment& dep = deployments_[d];
    sim::SchedPod& spec = specs_[d];
    spec.cpu_milli = static_cast<int64_t>(std::llround(dep.cpu_request * 1000));
    spec.memory = static_cast<int64_t>(dep.memory_request);
    spec.cpu_set = spec.memory_set = true;
    if (s_.marks_visible && s_.affinity_weight > 0)
      spec.preferred.push_back(
          {s_.affinity_weight, {{p_.rules.mark.key, "NotIn", {p_.rules.mark.value}}}});
    // marks-sized: the term `replay` would suggest from the workload's P95 working set (here the
    // model's: its request x usage ratio at the daily peak x a pod's 95th-percentile multiplier,
    // without leaks), for the workloads the page would advise (P95 over twice the request).
    const double p95 = dep.memory_request * dep.memory_ratio *
                       (1 + p_.workload.memory_daily_amplitude) *
                       std::exp(1.645 * p_.workload.pod_jitter);
    if (s_.sized_requests && p95 > 2 * dep.memory_request)
      spec.memory = static_cast<int64_t>(std::ceil(p95 / (1024.0 * 1024)) * 1024 * 1024);
    if (s_.sized && (s_.sized_all || p95 > 2 * dep.memory_request))
      // Half the mark's weight: the rebalancer evicts a pod only if the terms that avoid our mark
      // outweigh all its other preferred terms (rebalance/steering.h); at equal weights every
      // pod with this term was would_return (marks-sized-all evicted nothing).
      spec.preferred.push_back(
          {std::max(1, s_.affinity_weight / 2),
           {{kSizeLabel,
             "Gt",
             {std::to_string(static_cast<int64_t>(p95 / (1024.0 * 1024 * 1024)))}}}});
  }
  Deployment& dep = deployments_[d];
  if (dep.replicas == 0 && n > 0) active_.push_back(d);
  if (n == 0 && dep.replicas > 0) active_.erase(std::find(active_.begin(), active_.end(), d));
  auto& slots = slots_[d];
  // Scaling down removes the highest slots, as a ReplicaSet removes its newest pods.
  for (size_t s = n; s < slots.size(); ++s)
    if (slots[s] >= 0) DeletePod(static_cast<uint32_t>(slots[s]));
  slots.resize(n, -1);
  for (size_t s = dep.replicas; s < n; ++s) CreatePod(d, static_cast<uint32_t>(s), now_, origin);
  dep.replicas = n;
}

void Simulation::HandleEvents() {
  const WorkloadParams& w = p_.workload;
  while (!events_.empty() && events_.top().at <= now_) {
    const Event e = events_.top();
    events_.pop();
    Deployment& dep = deployments_[e.deployment];
    switch (e.kind) {
      case Event::kRollout:
        // Every pod replaced at once (maxUnavailable 100 %): the new pods start without leaks.
        for (size_t s = 0; s < slots_[e.deployment].size(); ++s)
          if (int64_t pod = slots_[e.deployment][s]; pod >= 0) {
            DeletePod(static_cast<uint32_t>(pod));
            CreatePod(e.deployment, static_cast<uint32_t>(s), now_, PodOrigin::kRollout);
          }
        Schedule(now_ + rng_.Exponential(w.rollouts_per_day / kSecondsPerDay), Event::kRollout,
                 e.deployment);
        break;
      case Event::kScale: {
        const double f = 1 + w.scale_change * (2 * rng_.Uniform() - 1);
        const double n =
            std::clamp(std::round(static_cast<double>(dep.replicas) * f), 1.0, w.max_replicas);
        SetReplicas(e.deployment, static_cast<size_t>(n), PodOrigin::kScaleUp);
        Schedule(now_ + rng_.Exponential(w.scales_per_day / kSecondsPerDay), Event::kScale,
                 e.deployment);
        break;
      }
      case Event::kBurst:
        dep.burst_until = now_ + w.burst_seconds;
        Schedule(now_ + rng_.Exponential(w.bursts_per_day / kSecondsPerDay), Event::kBurst,
                 e.deployment);
        break;
      case Event::kJobArrival: {
        deployments_.push_back(GenerateJob(w, ++jobs_, &rng_));
        const uint32_t d = static_cast<uint32_t>(deployments_.size() - 1);
        deployments_[d].replicas = 0;
        SetReplicas(d, 1, PodOrigin::kJob);
        Schedule(now_ + deployments_[d].job_seconds, Event::kJobEnd, d);
        Schedule(now_ + rng_.Exponential(w.jobs_per_node_hour *
                                         static_cast<double>(p_.nodes.count) / 3600),
                 Event::kJobArrival, 0);
        break;
      }
      case Event::kJobEnd:
        // A job's time counts from its arrival, Pending included: the model stays simple.
        SetReplicas(e.deployment, 0, PodOrigin::kJob);
        break;
    }
  }
}

void Simulation::Bind(uint32_t i, uint32_t node) {
  Pod& pod = pods_[i];
  Node& n = nodes_[node];
  pod.node = static_cast<int32_t>(node);
  pod.bound_at = now_;
  n.last_bind = now_;
  pod.at = static_cast<uint32_t>(n.pods.size());
  n.pods.push_back(i);
  requested_[node].Add(specs_[pod.deployment]);
  ++figures_.pods_bound;
  if (pod.evicted_from < 0) return;
  landed_.emplace_back(i, node);
  if (pod.planned_to >= 0) {
    ++figures_.replacements_bound;
    figures_.replacements_as_planned += pod.planned_to == static_cast<int32_t>(node);
  }
  const std::string workload = Info(i).Workload();
  const double window = p_.rules.rebalance.effect_window_seconds;
  if (pod.evicted_from == static_cast<int32_t>(node) && now_ - pod.evicted_at < window)
    ++figures_.bounce_backs;
  if (ctl_ && s_.rebalance) {
    ctl_->effect.OnPodBound(workload, sched_nodes_[node].name, kEpoch + now_);
    ctl_->budget.Replaced(workload);
  }
  pod.evicted_from = -1;
}

// Where kube-scheduler binds a new pod of deployment `d` now; with params.default_spread, its
// system-default spreading counts the deployment's running pods per node (a Job's pods have none).
int Simulation::ChooseFor(uint32_t d) {
  if (!p_.default_spread || deployments_[d].job)
    return sim::ChooseNode(sched_nodes_, requested_, specs_[d]);
  owner_pods_.resize(nodes_.size(), 0);
  auto count = [&](int32_t step) {
    for (int64_t slot : slots_[d]) {
      if (slot < 0) continue;
      const Pod& p = pods_[static_cast<size_t>(slot)];
      if (p.node >= 0 && p.leaves_at < 0) owner_pods_[static_cast<size_t>(p.node)] += step;
    }
  };
  count(1);
  const int node = sim::ChooseNode(sched_nodes_, requested_, specs_[d], &owner_pods_);
  count(-1);
  return node;
}

// The scheduling queue in arrival order. Pods that fit nowhere wait until a pod arrives or leaves
// or a taint goes, or a minute has passed (the scheduler's unschedulable queue is flushed on
// cluster events and periodically).
void Simulation::BindPending() {
  if (pending_.empty() || (!retry_ && now_ < next_pending_retry_)) return;
  retry_ = false;
  next_pending_retry_ = now_ + 60;
  std::deque<uint32_t> waiting;
  while (!pending_.empty()) {
    const uint32_t i = pending_.front();
    pending_.pop_front();
    const int node = ChooseFor(pods_[i].deployment);
    if (node < 0) {
      waiting.push_back(i);
    } else {
      Bind(i, static_cast<uint32_t>(node));
    }
  }
  pending_.swap(waiting);
}

void Simulation::ComputeUsage() {
  const WorkloadParams& w = p_.workload;
  for (uint32_t d : active_) {
    cpu_factor_[d] = CpuFactor(w, deployments_[d], now_);
    memory_factor_[d] = MemoryFactor(w, deployments_[d], now_);
  }
  const double step = p_.step_seconds;
  const double alpha = p_.cpu_rate_window_seconds > 0
                           ? 1 - std::exp(-step / (p_.cpu_rate_window_seconds / 2))
                           : 1;  // an average over the window lags by about half of it
  // Scenario::lag: the mean over the last valueWindow of steps, this one included, as
  // rate(...[5m]) over a counter gives it (fewer steps until that many have passed).
  const size_t window =
      std::max<size_t>(1, static_cast<size_t>(std::llround(p_.value_window_seconds / step)));
  for (Node& n : nodes_) {
    double cpu = 0, memory = 0;
    for (uint32_t i : n.pods) {
      const Pod& pod = pods_[i];
      cpu += pod.cpu_base * cpu_factor_[pod.deployment];
      memory += MemoryUse(pod);
    }
    n.cpu = std::min(cpu, n.alloc_cpu);  // cores are shared: the excess is throttled
    n.memory_before = n.memory;
    n.memory = memory;
    if (!s_.lag) {
      n.cpu_seen =
          n.cpu_seen < 0 ? n.CpuPercent() : n.cpu_seen + alpha * (n.CpuPercent() - n.cpu_seen);
      continue;
    }
    if (n.window_cpu.size() != window) {
      n.window_cpu.assign(window, 0);
      n.window_memory.assign(window, 0);
    }
    if (n.window_filled == window) {
      n.window_sum_cpu -= n.window_cpu[n.window_at];
      n.window_sum_memory -= n.window_memory[n.window_at];
    } else {
      ++n.window_filled;
    }
    n.window_cpu[n.window_at] = n.CpuPercent();
    n.window_memory[n.window_at] = n.MemoryPercent();
    n.window_sum_cpu += n.window_cpu[n.window_at];
    n.window_sum_memory += n.window_memory[n.window_at];
    n.window_at = (n.window_at + 1) % window;
    n.cpu_seen = n.window_sum_cpu / static_cast<double>(n.window_filled);
    n.memory_seen = n.window_sum_memory / static_cast<double>(n.window_filled);
  }
}

// memory.available below evictionHard: the kubelet kills one pod per housekeeping pass (10 s),
// at once (a hard threshold has no grace period, and no PodDisruptionBudget is asked), in its
// order under memory pressure (rebalance/kubelet_order.h, shared with the rebalancer; the model's
// pods have one priority). The owner replaces the pod at once and the scheduler places the
// replacement by its requests. The node carries the memory-pressure taint meanwhile.
void Simulation::KubeletEvictions() {
  for (size_t k = 0; k < nodes_.size(); ++k) {
    Node& n = nodes_[k];
    const bool breach = n.memory > n.alloc_memory;
    if (breach && !n.breached) {
      ++figures_.memory_breaches;
      // A pod bound this very step whose working set alone exceeds what was available: no rule
      // on the node's state could have acted before it (the model's pods start at full size).
      if (n.last_bind == now_) ++figures_.breaches_at_bind;
      figures_.breach_details.push_back(DescribeBreach(k));
    }
    n.breached = breach;
    if (breach) n.pressure_until = now_ + kPressureTransition;
    auto& taints = sched_nodes_[k].taints;
    // Only the kubelet's taint: our PreferNoSchedule taint (marks-taint) may be there too.
    auto pressure = std::find_if(taints.begin(), taints.end(),
                                 [](const sim::Taint& t) { return t.key == kPressureTaint; });
    const bool tainted = pressure != taints.end();
    if (now_ < n.pressure_until && !tainted) taints.push_back({kPressureTaint, "", "NoSchedule"});
    if (now_ >= n.pressure_until && tainted) {
      taints.erase(pressure);
      retry_ = true;
    }
    if (!breach || n.pods.empty()) continue;
    auto rank = [&](uint32_t i) {
      const Pod& pod = pods_[i];
      return ds::KubeletMemoryRank{MemoryUse(pod), deployments_[pod.deployment].memory_request, 0};
    };
    uint32_t victim = n.pods[0];
    ds::KubeletMemoryRank first = rank(victim);
    for (uint32_t i : n.pods) {
      const ds::KubeletMemoryRank r = rank(i);
      if (ds::KubeletEvictsBefore(r, first)) {
        first = r;
        victim = i;
      }
    }
    ++figures_.kubelet_evictions;
    ++(first.working_set > first.request ? figures_.kubelet_victims_over_request
                                         : figures_.kubelet_victims_within_request);
    if (pods_[victim].leaves_at >= 0) {
      FinishTermination(victim);  // terminating already: killed now, its replacement exists
    } else {
      Evict(victim, false);
    }
  }
}

BreachDetail Simulation::DescribeBreach(size_t k) const {
  const Node& n = nodes_[k];
  BreachDetail b;
  b.at = now_;
  b.node = static_cast<uint32_t>(k);
  b.at_bind = n.last_bind == now_;
  b.marked = n.marked;  // the controller runs after the kubelet within a step
  for (size_t r = 0; r < p_.rules.rules.size() && r < n.hold_since.size(); ++r)
    b.available_rule |= SeesBytesAvailable(p_.rules.rules[r]) && n.hold_since[r] >= 0;
  b.available_before = n.alloc_memory + p_.nodes.eviction_hard - n.memory_before;
  b.memory_percent_before = 100 * n.memory_before / n.alloc_memory;
  if (!b.at_bind) return b;
  const Pod* big = nullptr;
  for (uint32_t i : n.pods) {
    const Pod& pod = pods_[i];
    if (pod.bound_at != now_) continue;
    ++b.bound;
    if (!big || MemoryUse(pod) > MemoryUse(*big)) big = &pod;
  }
  if (!big) return b;
  b.origin = big->origin;
  b.request = deployments_[big->deployment].memory_request;
  b.working_set = MemoryUse(*big);
  const sim::SchedPod& spec = specs_[big->deployment];
  for (size_t j = 0; j < nodes_.size(); ++j) {
    if (j == k) continue;
    const sim::NodeRequests& r = requested_[j];
    if (r.cpu + spec.cpu_milli > sched_nodes_[j].cpu_milli ||
        r.memory + spec.memory > sched_nodes_[j].memory || r.pods + 1 > sched_nodes_[j].pods)
      continue;
    const bool free = !nodes_[j].marked &&
                      std::none_of(sched_nodes_[j].taints.begin(), sched_nodes_[j].taints.end(),
                                   [](const sim::Taint& t) { return t.effect == "NoSchedule"; });
    b.feasible_unmarked += free;
    if (MemoryAvailable(j) - b.working_set < p_.nodes.eviction_hard) continue;
    ++b.safe_nodes;
    b.safe_unmarked += free;
  }
  return b;
}

const char* OriginName(PodOrigin o) {
  switch (o) {
    case PodOrigin::kStart:
      return "start";
    case PodOrigin::kRollout:
      return "rollout";
    case PodOrigin::kScaleUp:
      return "scale-up";
    case PodOrigin::kJob:
      return "job";
    case PodOrigin::kRebalancer:
      return "rebalancer replacement";
    case PodOrigin::kKubelet:
      return "kubelet-kill replacement";
  }
  return "?";
}

int SizeLevel(double available_gib, int current) {
  auto level = [](double gib) {
    int l = 0;
    for (int p = 1; p <= 64; p *= 2)
      if (gib >= p) l = p;
    return l;
  };
  const int now = level(available_gib);
  if (current < 0 || now < current) return now;
  if (now > current && level(available_gib / 1.25) > current) return level(available_gib / 1.25);
  return current;
}

// marks-sized's numeric mark, written (as the node writer would: only changes) each cycle.
void Simulation::WriteSizeLabels() {
  for (size_t k = 0; k < nodes_.size(); ++k) {
    auto& labels = sched_nodes_[k].labels;
    auto it = labels.find(kSizeLabel);
    const int current = it == labels.end() ? -1 : std::stoi(it->second);
    const int next = SizeLevel(MemoryAvailable(k) / (1024.0 * 1024 * 1024), current);
    if (next == current) continue;
    labels[kSizeLabel] = std::to_string(next);
    ++figures_.size_label_writes;
  }
}

// The kubelet's memory.available: capacity minus the node's working set, which is the system's
// reserved memory (assumed in use) and the pods'.
double Simulation::MemoryAvailable(size_t k) const {
  return nodes_[k].alloc_memory + p_.nodes.eviction_hard - nodes_[k].memory;
}

double Simulation::MemoryUse(const Pod& pod) const {
  const Deployment& dep = deployments_[pod.deployment];
  double working_set = pod.memory_base * memory_factor_[pod.deployment];
  // workload.memoryRampUp: a pod created during the run grows from its request (or its full
  // working set, if smaller) to its full working set over this long after its binding, as a heap
  // or a cache fills; pods running at the start are grown.
  const double ramp = p_.workload.memory_ramp_seconds;
  if (ramp > 0 && pod.origin != PodOrigin::kStart && pod.bound_at >= 0 &&
      now_ - pod.bound_at < ramp) {
    const double from = std::min(working_set, dep.memory_request);
    working_set = from + (working_set - from) * (now_ - pod.bound_at) / ramp;
  }
  return working_set + dep.leak_per_second * (now_ - pod.started);
}

ds::PodInfo Simulation::Info(uint32_t i) const {
  const Pod& pod = pods_[i];
  const Deployment& dep = deployments_[pod.deployment];
  ds::PodInfo info;
  info.ns = dep.ns;
  info.name = dep.name + "-" + std::to_string(pod.id);
  info.uid = std::to_string(pod.id);
  if (pod.node >= 0) info.node = sched_nodes_[static_cast<size_t>(pod.node)].name;
  info.owner_kind = dep.job ? "Job" : "ReplicaSet";
  info.owner_name = dep.name;
  info.phase = pod.node >= 0 ? "Running" : "Pending";
  info.terminating = pod.leaves_at >= 0;
  info.ready = pod.node >= 0;
  info.labels = {{"app", dep.name}};
  info.created_wall = kEpoch + pod.started;
  info.cpu_request = static_cast<double>(specs_[pod.deployment].cpu_milli) / 1000;
  info.memory_request = static_cast<double>(specs_[pod.deployment].memory);
  // Its template's node affinity: what keeps a replacement off our mark (rebalance/steering.h).
  for (const sim::PreferredTerm& t : specs_[pod.deployment].preferred) {
    ds::PreferredSchedulingTerm pt;
    pt.weight = t.weight;
    for (const sim::NodeSelectorRequirement& r : t.term)
      pt.preference.match_expressions.push_back({r.key, r.op, r.values});
    info.preferred_affinity.push_back(std::move(pt));
  }
  return info;
}

std::vector<Simulation::NodeView> Simulation::NodeViews() const {
  std::vector<NodeView> out(nodes_.size());
  for (size_t k = 0; k < nodes_.size(); ++k)
    out[k] = {sched_nodes_[k].name,      nodes_[k].cpu_seen, nodes_[k].CpuPercent(),
              nodes_[k].MemoryPercent(), nodes_[k].marked,   nodes_[k].pods.size()};
  return out;
}

double Simulation::MemorySeen(size_t k) const {
  return s_.lag ? nodes_[k].memory_seen : nodes_[k].MemoryPercent();
}

void Simulation::TEST_BurstNode(size_t node, double until) {
  for (uint32_t i : nodes_[node].pods) deployments_[pods_[i].deployment].burst_until = until;
}

void Simulation::SetMark(uint32_t k, bool on) {
  Node& n = nodes_[k];
  n.marked = on;
  if (on) n.marked_since = now_;
  if (!s_.marks_visible) return;
  if (s_.taint) {
    const ds::Taint& ours = p_.rules.mark.taint;
    auto& taints = sched_nodes_[k].taints;
    std::erase_if(taints, [&](const sim::Taint& t) { return t.key == ours.key; });
    if (on) taints.push_back({ours.key, ours.value, ds::Mark::kTaintEffect});
    return;
  }
  auto& labels = sched_nodes_[k].labels;
  if (on) {
    labels[p_.rules.mark.key] = p_.rules.mark.value;
  } else {
    labels.erase(p_.rules.mark.key);
  }
}

// One reconcile cycle, as controller/reconciler.cc runs it: the rule values of every node, the
// Decider's verdicts, the rebalancer's hold on cooled nodes, the herd cap, the planner's changes
// (written at once: a PATCH takes milliseconds), then the rebalancer.
void Simulation::RunController() {
  Controller& c = *ctl_;
  const std::vector<ds::Rule>& rules = p_.rules.rules;
  for (size_t r = 0; r < rules.size(); ++r)
    for (size_t k = 0; k < nodes_.size(); ++k)
      c.values[r][k] = SeesBytesAvailable(rules[r])                    ? MemoryAvailable(k)
                       : rules[r].resource == ds::Rule::Resource::kCpu ? nodes_[k].cpu_seen
                                                                       : MemorySeen(k);
  std::vector<ds::NodeInput> in(nodes_.size());
  std::vector<ds::PlanNode> plan(nodes_.size());
  for (size_t k = 0; k < nodes_.size(); ++k) {
    in[k].name = sched_nodes_[k].name;
    in[k].labelled = nodes_[k].marked;
    plan[k].name = sched_nodes_[k].name;
    plan[k].marked = nodes_[k].marked;
    plan[k].has_record = nodes_[k].has_record;
    if (nodes_[k].has_record) {
      in[k].owners = &nodes_[k].recorded;
      plan[k].recorded = &nodes_[k].recorded;
    }
  }
  std::vector<ds::RuleInput> ri(rules.size());
  for (size_t r = 0; r < rules.size(); ++r) ri[r].values = &c.values[r];
  // The rebalancer's hold, as the controller's: a node it relieved keeps its mark while its
  // evictions settle (the simulation has no graded levels; Prometheus never fails here).
  auto hold = [&](std::vector<ds::NodeDecision>* d) {
    if (!s_.rebalance) return;
    for (size_t k = 0; k < d->size(); ++k) {
      if ((*d)[k].verdict != ds::Verdict::kCold || !nodes_[k].marked) continue;
      ds::RebalanceNode rn;
      rn.last_eviction_wall = nodes_[k].last_eviction_wall;
      rn.evictions_in_flight = nodes_[k].terminating;
      if (ds::HoldsMark(rn, p_.rules.rebalance, kEpoch + now_))
        (*d)[k].verdict = ds::Verdict::kUnknown;
    }
  };
  const ds::CycleJudgement judged = c.judge.Judge(Mono(now_), in, plan, ri, false, hold);
  const std::vector<ds::NodeDecision>& decisions = judged.decisions;
  const std::vector<bool>& cold = judged.cold;
  figures_.capped_node_cycles += judged.cap.capped.size();
  for (size_t k = 0; k < decisions.size(); ++k) {
    std::vector<double>& since = nodes_[k].hold_since;
    std::vector<bool> holds(rules.size(), false);
    for (const ds::Hold& h : decisions[k].holds) holds[h.rule] = !h.stale;
    since.resize(rules.size(), -1);
    for (size_t r = 0; r < rules.size(); ++r)
      since[r] = !holds[r] ? -1 : since[r] >= 0 ? since[r] : now_;
  }
  for (const ds::LabelChange& ch : judged.changes) {
    Node& n = nodes_[ch.node];
    ++figures_.label_writes;
    switch (ch.kind) {
      case ds::ChangeKind::kMark:
        SetMark(static_cast<uint32_t>(ch.node), true);
        [[fallthrough]];
      case ds::ChangeKind::kRecord:
        n.has_record = true;
        n.recorded = ds::HoldingRules(decisions[ch.node]);
        break;
      case ds::ChangeKind::kUnmark:
        SetMark(static_cast<uint32_t>(ch.node), false);
        [[fallthrough]];
      case ds::ChangeKind::kForget:
        n.has_record = false;
        n.recorded.clear();
        n.last_eviction_wall = 0;  // the record held it
        break;
    }
  }
  if (s_.sized) WriteSizeLabels();  // marks-sized, marks-sized-all
  if (s_.rebalance) Rebalance(decisions, cold);
  std::vector<std::string> hot;
  std::set<std::string> marked;
  for (size_t k = 0; k < nodes_.size(); ++k) {
    if (nodes_[k].CpuPercent() > p_.measure_cpu || nodes_[k].MemoryPercent() > p_.measure_memory)
      hot.push_back(sched_nodes_[k].name);
    if (nodes_[k].marked) marked.insert(sched_nodes_[k].name);
  }
  c.effect.OnCycle(kEpoch + now_, hot, marked);
}

// Rebalancer::Relieve (controller/rebalancer.cc) without its I/O: the same pure calls in the
// same order. Evicted pods leave at once, or with Scenario::lag after terminationGrace; each one
// is kept on its node's list of leaving pods (in_motion.h) until its rule's settle time after it
// left, and with Scenario::in_motion its usage is taken off the node's load before the plan.
void Simulation::Rebalance(const std::vector<ds::NodeDecision>& decisions,
                           const std::vector<bool>& cold) {
  Controller& c = *ctl_;
  const ds::RebalanceConfig& cfg = p_.rules.rebalance;
  const double now = kEpoch + now_;
  const int64_t days = static_cast<int64_t>(std::floor(now / kSecondsPerDay));
  const int weekday = static_cast<int>((days + 4) % 7);  // 1970-01-01 was a Thursday
  const int minute = static_cast<int>((now - static_cast<double>(days) * kSecondsPerDay) / 60);
  c.budget.StartCycle(now, weekday, minute);
  evictions_this_cycle_ = 0;

  std::set<std::string> marked;
  for (size_t k = 0; k < nodes_.size(); ++k) {
    Node& n = nodes_[k];
    if (!n.leaving.empty())
      std::erase_if(n.leaving, [&](const ds::LeavingPod& l) {
        return !ds::StillLeaving(l, c.settle_max, now);
      });
    if (!n.marked) {
      // Its episode ended with the mark (evictions come only while it is marked).
      if (n.episode_evictions > 0) figures_.episode_evictions.push_back(n.episode_evictions);
      n.episode_evictions = 0;
      continue;
    }
    marked.insert(sched_nodes_[k].name);
    if (cold[k]) c.effect.OnCleared(sched_nodes_[k].name, now);
  }
  for (const std::string& n : c.was_marked)
    if (!marked.count(n)) c.effect.OnUnmarked(n);
  c.was_marked = marked;

  struct Target {
    size_t node;
    ds::Relief relief;
    bool moving_will_do;  // what is already leaving brings the load to its goal
  };
  std::vector<Target> relieve;
  // Built at the first node that qualifies: most cycles have none, and a pool maps every node.
  std::vector<std::shared_ptr<const ds::PoolMean>> pools;
  for (size_t k = 0; k < nodes_.size(); ++k) {
    Node& n = nodes_[k];
    if (!n.marked) continue;
    ds::RebalanceNode rn;
    rn.observed_marked = true;
    rn.marked_since_wall = kEpoch + n.marked_since;
    rn.last_eviction_wall = n.last_eviction_wall;
    // Each holding rule's urgency (relieveAfter) from when it began to hold, as the controller
    // reads it from the ownership record.
    std::vector<ds::HeldSince> held;
    for (const ds::Hold& h : decisions[k].holds)
      if (!h.stale && n.hold_since[h.rule] >= 0)
        held.push_back({kEpoch + n.hold_since[h.rule], p_.rules.rules[h.rule].relieve_after_seconds,
                        p_.rules.rules[h.rule].name});
    rn.due_wall = ds::ReliefDueWall(held, cfg);
    if (ds::Qualifies(rn, cfg, now) != ds::Qualification::kYes) continue;
    if (pools.empty()) pools = BalancePools();
    std::vector<ds::HoldingRule> holding;
    for (const ds::Hold& h : decisions[k].holds) {
      if (h.stale) continue;
      const ds::Rule& rule = p_.rules.rules[h.rule];
      // Its own wait too, as the controller passes it: a rule that has just begun to hold waits
      // it from now (rebalance/qualify.h DueHoldingRules). The clear threshold the value was
      // judged by (a relative rule's: this cycle's mean plus its clear offset), and the rule's
      // pool, so that the plan follows the mean (Reconciler::Relieve).
      holding.push_back({rule.name, rule.resource, h.value, h.clear_threshold,
                         rule.AvailableBytes(), rule.relieve_after_seconds, pools[h.rule]});
    }
    auto relief =
        ds::ReliefFor(sched_nodes_[k].name, ds::DueHoldingRules(holding, held, cfg, now, false),
                      n.alloc_cpu, n.alloc_memory, cfg.target);
    if (!relief) continue;
    c.effect.OnQualified(sched_nodes_[k].name, now);
    ds::PodInfo probe;
    probe.node = sched_nodes_[k].name;
    if (c.budget.Check(probe) != ds::Limit::kNone || now < n.retry_at) continue;
    // What is already moving off the node (in_motion.h), by the settle time of the rule that
    // sets the goal: computed in every scenario for the figures, applied in marks-lag-motion.
    size_t rule = 0;
    while (rule + 1 < p_.rules.rules.size() && p_.rules.rules[rule].name != relief->rule) ++rule;
    ds::Relief discounted = *relief;
    if (s_.in_motion_decay) {
      // The proposal: a pod gone counts only with the share of the window that still holds it.
      const double window = std::max(c.settle[rule] - c.interval, p_.step_seconds);
      std::vector<ds::LeavingPod> decayed = n.leaving;
      for (ds::LeavingPod& l : decayed) {
        const double w =
            l.gone_wall <= 0 ? 1 : std::clamp(1 - (now - l.gone_wall) / window, 0.0, 1.0);
        l.cpu *= w;
        l.memory *= w;
      }
      ds::DiscountLeaving(&discounted, decayed, c.settle[rule], now);
    } else {
      ds::DiscountLeaving(&discounted, n.leaving, c.settle[rule], now);
    }
    const bool moving_will_do = discounted.load.load <= discounted.load.goal;
    if (s_.in_motion) {
      if (moving_will_do) {
        ++figures_.in_motion_skips;
        continue;
      }
      *relief = discounted;
    }
    relieve.push_back({k, std::move(*relief), moving_will_do});
  }
  if (relieve.empty()) return;
  std::sort(relieve.begin(), relieve.end(), [](const Target& a, const Target& b) {
    return a.relief.load.load - a.relief.load.goal > b.relief.load.load - b.relief.load.goal;
  });
  if (relieve.size() > cfg.limits.per_cycle) relieve.resize(cfg.limits.per_cycle);

  const bool cpu = relieve.front().relief.resource == ds::Rule::Resource::kCpu;
  // A bytes-available rule's value on each destination and the floor a replacement must leave
  // available there (placement.h), as Reconciler::Relieve fills them: the first such rule's clear
  // threshold, or for a relative one its mean less its threshold offset (a destination must not
  // turn hot by the same rule). Every simulated node has a value for it.
  const ds::Rule* bytes_rule = nullptr;
  double bytes_floor = 0;
  for (size_t r = 0; r < p_.rules.rules.size() && !bytes_rule; ++r) {
    if (!p_.rules.rules[r].AvailableBytes()) continue;
    bytes_rule = &p_.rules.rules[r];
    bytes_floor =
        pools[r] ? pools[r]->sum / static_cast<double>(pools[r]->count) - pools[r]->threshold_offset
                 : bytes_rule->clear_threshold;
  }
  std::vector<size_t> free;
  for (size_t k = 0; k < nodes_.size(); ++k)
    if (!nodes_[k].marked &&
        std::none_of(sched_nodes_[k].taints.begin(), sched_nodes_[k].taints.end(),
                     [](const sim::Taint& t) { return t.key == kPressureTaint; }))
      free.push_back(k);
  auto load = [&](size_t k) { return cpu ? nodes_[k].cpu_seen : MemorySeen(k); };
  const size_t keep = std::min(free.size(), kDestinations);
  std::partial_sort(
      free.begin(), free.begin() + static_cast<std::ptrdiff_t>(keep), free.end(),
      [&](size_t a, size_t b) { return load(a) != load(b) ? load(a) < load(b) : a < b; });
  free.resize(keep);
  std::vector<ds::PlacementNode> places;
  for (size_t k : free) {
    ds::PlacementNode pn;
    pn.name = sched_nodes_[k].name;
    pn.allocatable_cpu = nodes_[k].alloc_cpu;
    pn.allocatable_memory = nodes_[k].alloc_memory;
    pn.requested_cpu = static_cast<double>(requested_[k].cpu) / 1000;
    pn.requested_memory = static_cast<double>(requested_[k].memory);
    pn.allocatable_other = {{"pods", static_cast<double>(sched_nodes_[k].pods)}};
    pn.requested_other = {{"pods", static_cast<double>(nodes_[k].pods.size())}};
    // Real usage as the rules see it, as the controller fills it from the rule values: a pod
    // must fit there by use too, not only by requests (placement.h).
    if (nodes_[k].cpu_seen >= 0) pn.used_cpu = nodes_[k].cpu_seen / 100 * nodes_[k].alloc_cpu;
    pn.used_memory =
        s_.lag ? nodes_[k].memory_seen / 100 * nodes_[k].alloc_memory : nodes_[k].memory;
    if (bytes_rule) {
      pn.available_memory = MemoryAvailable(k);
      pn.available_floor = bytes_floor;
    }
    places.push_back(std::move(pn));
  }
  ds::Placement placement(std::move(places));
  std::set<size_t> tried, acted;
  for (const Target& t : relieve) {
    const size_t room = cfg.limits.per_cycle > c.budget.evicted_this_cycle()
                            ? cfg.limits.per_cycle - c.budget.evicted_this_cycle()
                            : 0;
    if (room == 0) continue;
    tried.insert(t.node);
    std::vector<ds::PodInfo> infos;
    std::vector<uint32_t> ids;
    for (uint32_t i : nodes_[t.node].pods) {
      ds::PodInfo info = Info(i);
      if (ds::CheckEvictable(info, cfg.pods, now) != ds::Keep::kNone) continue;
      // Steer or skip, where the scheduler sees the mark (a label: the simulated rebalancer runs
      // without taints). evict-usage is the baseline without marks, which evicts regardless.
      if (cfg.require_steering && s_.marks_visible &&
          ds::SteeredAway(info, p_.rules.mark.key, p_.rules.mark.value, nullptr) ==
              ds::Steer::kNone)
        continue;
      if (c.budget.Check(info) != ds::Limit::kNone) continue;
      // marks-placed: the replacement goes where the scheduler puts it by requests, not to the
      // destinations below; a pod using more than it requests must fit there by use too.
      const Pod& pod = pods_[i];
      if (s_.predict_placement && MemoryUse(pod) > deployments_[pod.deployment].memory_request) {
        const int to = ChooseFor(pod.deployment);
        const double floor = bytes_rule ? bytes_floor : p_.nodes.eviction_hard;
        if (to < 0 || MemoryAvailable(static_cast<size_t>(to)) - MemoryUse(pod) < floor) continue;
      }
      infos.push_back(std::move(info));
      ids.push_back(i);
    }
    std::vector<ds::UsedPod> candidates;
    for (size_t j = 0; j < infos.size(); ++j) {
      const Pod& pod = pods_[ids[j]];
      const double usage = t.relief.resource == ds::Rule::Resource::kCpu
                               ? pod.cpu_base * cpu_factor_[pod.deployment]
                               : MemoryUse(pod);
      candidates.push_back(ds::UsedPod{&infos[j], usage});
    }
    // The controller's plan (relief_plan.h): a relative rule's pool makes the goal and the
    // destinations' ceiling follow the mean. Not in the kubelet's order only: the simulated
    // rebalancer does not restate KubeletVictims (bench/effect/README.md).
    ds::PodChoice choice = ds::PlanRelief(t.relief, candidates, room, &placement);
    for (const ds::PodChoice::Pick& pick : choice.picks) {
      if (c.budget.Check(*pick.pod) != ds::Limit::kNone || cfg.dry_run) continue;
      c.budget.Record(*pick.pod);
      const uint32_t id = ids[static_cast<size_t>(pick.pod - infos.data())];
      c.effect.OnEviction(sched_nodes_[t.node].name, pick.pod->Workload(), now);
      Node& from = nodes_[t.node];
      from.last_eviction_wall = now;
      acted.insert(t.node);
      ++figures_.evictions;
      ++evictions_this_cycle_;
      ++from.episode_evictions;
      figures_.evictions_while_leaving += t.moving_will_do;
      eviction_log_.emplace_back(now_, static_cast<uint32_t>(t.node));
      // As the controller records it: the relieved resource as measured, the other its request.
      const Pod& pod = pods_[id];  // Evict may move pods_: read it before
      ds::LeavingPod l;
      l.node = sched_nodes_[t.node].name;
      l.pod = pick.pod->ns + "/" + pick.pod->name;
      l.uid = pick.pod->uid;
      l.cpu = t.relief.resource == ds::Rule::Resource::kCpu
                  ? pod.cpu_base * cpu_factor_[pod.deployment]
                  : pick.pod->cpu_request;
      l.memory = t.relief.resource == ds::Rule::Resource::kMemory ? MemoryUse(pod)
                                                                  : pick.pod->memory_request;
      l.evicted_wall = now;
      const uint32_t d = pod.deployment, slot = pod.slot;
      l.gone_wall = Evict(id, true) ? 0 : now;  // gone at once without a grace period
      from.leaving.push_back(std::move(l));
      // Where the plan reserved room for the replacement (the names are node-NNNN).
      pods_[static_cast<size_t>(slots_[d][slot])].planned_to =
          static_cast<int32_t>(std::stoul(pick.to.substr(5)));
    }
  }
  for (size_t k : tried)
    if (!acted.count(k)) nodes_[k].retry_at = now + cfg.limits.node_cooldown_seconds;
}

std::vector<std::shared_ptr<const ds::PoolMean>> Simulation::BalancePools() const {
  const Controller& c = *ctl_;
  const std::vector<ds::Rule>& rules = p_.rules.rules;
  const std::vector<ds::EffectiveThresholds>& eff = c.judge.decider().thresholds();
  std::vector<std::shared_ptr<const ds::PoolMean>> pools(rules.size());
  for (size_t r = 0; r < rules.size() && r < eff.size(); ++r) {
    if (!eff[r].known) continue;
    // Every node with a finite value (no nodeSelector here), as the controller lists them.
    pools[r] = ds::MakePoolMean(
        rules[r], eff[r].mean, eff[r].count, c.values[r],
        [&](size_t k) {
          return std::pair<std::string, double>(sched_nodes_[k].name,
                                                rules[r].resource == ds::Rule::Resource::kCpu
                                                    ? nodes_[k].alloc_cpu
                                                    : nodes_[k].alloc_memory);
        },
        true);
  }
  return pools;
}

void Simulation::RunDescheduler() {
  std::vector<DeschedNode> in(nodes_.size());
  for (size_t k = 0; k < nodes_.size(); ++k) {
    in[k].cpu = static_cast<double>(sched_nodes_[k].cpu_milli);
    in[k].memory = static_cast<double>(sched_nodes_[k].memory);
    in[k].pods = static_cast<double>(sched_nodes_[k].pods);
    for (uint32_t i : nodes_[k].pods) {
      if (pods_[i].leaves_at >= 0) continue;  // terminating already
      const sim::SchedPod& spec = specs_[pods_[i].deployment];
      in[k].pod_requests.push_back(
          {static_cast<double>(spec.cpu_milli), static_cast<double>(spec.memory), i});
    }
  }
  for (uint64_t pod : LowNodeUtilization(in, p_.descheduler)) {
    ++figures_.evictions;
    eviction_log_.emplace_back(now_, static_cast<uint32_t>(pods_[pod].node));
    Evict(static_cast<uint32_t>(pod), true);
  }
}

void Simulation::Measure() {
  const double minutes = p_.step_seconds / 60;
  size_t hot = 0, marked = 0;
  double sum[2] = {0, 0}, sq[2] = {0, 0};
  for (const Node& n : nodes_) {
    const double c = n.CpuPercent(), m = n.MemoryPercent();
    const bool hc = c > p_.measure_cpu, hm = m > p_.measure_memory;
    figures_.node_minutes_cpu += hc ? minutes : 0;
    figures_.node_minutes_memory += hm ? minutes : 0;
    figures_.marked_node_minutes += n.marked ? minutes : 0;
    marked += n.marked ? 1 : 0;
    hot += hc || hm;
    sum[0] += c;
    sq[0] += c * c;
    sum[1] += m;
    sq[1] += m * m;
  }
  const double k = static_cast<double>(nodes_.size());
  const double steps = static_cast<double>(steps_);
  auto sd = [&](int r) {
    return std::sqrt(std::max(0.0, sq[r] / k - (sum[r] / k) * (sum[r] / k)));
  };
  // Running means over the steps so far.
  figures_.spread_cpu += (sd(0) - figures_.spread_cpu) / steps;
  figures_.spread_memory += (sd(1) - figures_.spread_memory) / steps;
  // The nodes that stand out from the mean, and the policy's replacements that made one do so.
  const double over_mean = sum[0] / k + p_.measure_cpu_over_mean;
  for (const Node& n : nodes_)
    figures_.node_minutes_over_mean += n.CpuPercent() > over_mean ? minutes : 0;
  for (const auto& [pod, node] : landed_) {
    const Node& n = nodes_[node];
    const Pod& p = pods_[pod];
    // Killed by the kubelet since its binding (its index may hold its replacement now): not here.
    if (!p.alive || p.node != static_cast<int32_t>(node) || !(n.CpuPercent() > over_mean)) continue;
    const double share = 100 * p.cpu_base * cpu_factor_[p.deployment] / n.alloc_cpu;
    const double request = 100 * deployments_[p.deployment].cpu_request / n.alloc_cpu;
    const double count = static_cast<double>(++figures_.landed_over_mean);
    figures_.landed_over_mean_pod_cpu += (share - figures_.landed_over_mean_pod_cpu) / count;
    figures_.landed_over_mean_pod_request +=
        (request - figures_.landed_over_mean_pod_request) / count;
  }
  landed_.clear();
  // Around the join: the last step before it (overwritten until it comes), its step, the first
  // steps 1 h and 6 h after it, and the last step (overwritten until the end).
  JoinFigures& j = figures_.join;
  auto moment = [&](int m) {
    j.sd_cpu[m] = sd(0);
    j.sd_memory[m] = sd(1);
    j.mean_cpu[m] = sum[0] / k;
  };
  if (p_.join.nodes > 0) {
    if (j.at < 0) {
      moment(JoinFigures::kBefore);
      j.evictions_before = figures_.evictions;
    }
    if (j.at == now_) moment(JoinFigures::kJoin);
    if (j.at >= 0 && now_ >= j.at + 3600 && std::isnan(j.sd_cpu[JoinFigures::kHour])) {
      moment(JoinFigures::kHour);
      j.evictions_hour = figures_.evictions;
    }
    if (j.at >= 0 && now_ >= j.at + 6 * 3600 && std::isnan(j.sd_cpu[JoinFigures::kSixHours]))
      moment(JoinFigures::kSixHours);
    moment(JoinFigures::kEnd);
    if (j.at >= 0) {
      j.joined_pods_end = 0;
      double cpu = 0, memory = 0;
      for (size_t i = first_joined_; i < nodes_.size(); ++i) {
        j.joined_pods_end += nodes_[i].pods.size();
        cpu += nodes_[i].CpuPercent();
        memory += nodes_[i].MemoryPercent();
      }
      const double joined = static_cast<double>(nodes_.size() - first_joined_);
      j.joined_cpu_end = cpu / joined;
      j.joined_memory_end = memory / joined;
    }
  }
  figures_.pending_pod_minutes += static_cast<double>(pending_.size()) * minutes;
  figures_.pending_max = std::max(figures_.pending_max, pending_.size());
  figures_.pending_end = pending_.size();
  figures_.marked_max = std::max(figures_.marked_max, marked);
  series_hot_ = std::max(series_hot_, static_cast<double>(hot));
  const double period = figures_.series_seconds;
  series_spread_[0] += sd(0);
  series_spread_[1] += sd(1);
  ++series_steps_;
  if (std::floor((now_ + p_.step_seconds) / period) > std::floor(now_ / period)) {
    figures_.hot_series.push_back(static_cast<int>(series_hot_));
    series_hot_ = 0;
    const double n = static_cast<double>(series_steps_);
    figures_.spread_cpu_series.push_back(series_spread_[0] / n);
    figures_.spread_memory_series.push_back(series_spread_[1] / n);
    series_spread_[0] = series_spread_[1] = 0;
    series_steps_ = 0;
  }
  if (ctl_) figures_.effect = ctl_->effect.Figures();
}

void Simulation::CheckInvariants() {
  auto fail = [&](const std::string& what) {
    if (violations_.size() < 20) violations_.push_back("t=" + std::to_string(now_) + " s: " + what);
  };
  // Pods are conserved: every slot of every deployment holds one live pod, bound or pending.
  size_t bound = 0, slots = 0;
  for (const Node& n : nodes_) bound += n.pods.size();
  bound -= terminating_.size();  // evicted, still on their nodes, out of their slots
  for (uint32_t i : terminating_)
    if (pods_[i].leaves_at < now_ || pods_[i].node < 0 || !pods_[i].alive)
      fail("a terminating pod outlived its grace period or left its node");
  for (uint32_t d : active_)
    for (int64_t pod : slots_[d]) {
      ++slots;
      if (pod < 0 || !pods_[static_cast<size_t>(pod)].alive) fail("a replica slot has no pod");
    }
  if (bound + pending_.size() != live_pods_ || slots != live_pods_)
    fail("pods not conserved: bound " + std::to_string(bound) + " + pending " +
         std::to_string(pending_.size()) + ", live " + std::to_string(live_pods_) + ", replicas " +
         std::to_string(slots));
  // The scheduler never binds beyond allocatable, by requests.
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const sim::NodeRequests& r = requested_[k];
    if (r.cpu > sched_nodes_[k].cpu_milli || r.memory > sched_nodes_[k].memory ||
        r.pods > sched_nodes_[k].pods || r.pods != static_cast<int64_t>(nodes_[k].pods.size()))
      fail(sched_nodes_[k].name + " is over its allocatable by requests");
  }
  // The herd cap holds (it is never lowered during a run, so no mark predates it).
  size_t marked = 0;
  for (const Node& n : nodes_) marked += n.marked ? 1 : 0;
  const ds::HerdCap cap{p_.rules.max_marked_fraction, p_.rules.max_marked};
  if (marked > cap.Limit(nodes_.size()))
    fail(std::to_string(marked) + " nodes marked, over the herd cap of " +
         std::to_string(cap.Limit(nodes_.size())));
  // The scheduler sees exactly the marks the controller set: the label, or in taint mode our
  // PreferNoSchedule taint and no label.
  if (s_.marks_visible)
    for (size_t k = 0; k < nodes_.size(); ++k) {
      const auto& taints = sched_nodes_[k].taints;
      const bool label = sched_nodes_[k].labels.count(p_.rules.mark.key) > 0;
      const bool taint = std::any_of(taints.begin(), taints.end(), [&](const sim::Taint& t) {
        return t.key == p_.rules.mark.taint.key && t.effect == ds::Mark::kTaintEffect;
      });
      if ((s_.taint ? taint : label) != nodes_[k].marked || (s_.taint && label))
        fail(sched_nodes_[k].name + ": the mark the scheduler sees is not the controller's");
    }
  // The rebalancer keeps its limits: per cycle, per hour, per node per hour.
  while (!eviction_log_.empty() && eviction_log_.front().first <= now_ - 3600)
    eviction_log_.pop_front();
  if (s_.rebalance) {
    const ds::EvictionLimits& lim = p_.rules.rebalance.limits;
    if (evictions_this_cycle_ > lim.per_cycle) fail("more evictions in a cycle than perCycle");
    if (eviction_log_.size() > lim.per_hour) fail("more evictions in an hour than perHour");
    std::map<uint32_t, size_t> per_node;
    for (const auto& [at, node] : eviction_log_)
      if (++per_node[node] > lim.per_node_per_hour)
        fail("more evictions from a node in an hour than perNodePerHour");
  }
}

bool Simulation::Step() {
  if (now_ >= end_) return false;
  if (!terminating_.empty()) FinishTerminations();
  if (p_.join.nodes > 0 && figures_.join.at < 0 && now_ >= p_.join.at_seconds) Join();
  HandleEvents();
  BindPending();
  ComputeUsage();
  KubeletEvictions();
  evictions_this_cycle_ = 0;
  if (ctl_ && steps_ % ctl_->every == 0) RunController();
  const uint64_t desched_every = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::llround(p_.descheduler.interval_seconds / p_.step_seconds)));
  if (s_.descheduler && steps_ > 0 && steps_ % desched_every == 0) RunDescheduler();
  ++steps_;
  Measure();
  if (check_) CheckInvariants();
  now_ += p_.step_seconds;
  return true;
}

}  // namespace effect
