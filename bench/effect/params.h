// The effect simulation's parameter file (YAML): the cluster, the workload, the controller's
// rule.yaml (read by the controller's own parser), the comparison descheduler and the sweep.
// Every distribution of the workload is an assumption unless bench/effect/README.md cites a
// source for it. Example: bench/effect/params.yaml.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/rule_config.h"

namespace effect {

// A log-normal distribution by its median and the standard deviation of its logarithm: usage to
// request ratios, requests and lifetimes are all positive and right-skewed.
struct LogNormal {
  double median = 1;
  double sigma = 0;
};

struct WorkloadParams {
  double pods_per_node = 30;  // deployments are created until their replicas reach this density
  LogNormal replicas{3, 1.0};
  double max_replicas = 50;
  LogNormal cpu_request{0.25, 0.9};                  // cores
  LogNormal memory_request{512.0 * (1 << 20), 0.9};  // bytes
  LogNormal cpu_usage_ratio{0.6, 0.7};               // real usage / request, per deployment
  LogNormal memory_usage_ratio{0.8, 0.35};
  double pod_jitter = 0.15;  // sigma of one pod's ratio around its deployment's
  // Daily peak: usage x (1 + amplitude * cos(2 pi (t - peak - phase) / 1 day)), the phase of
  // each deployment normal around 0 with this spread.
  double cpu_daily_amplitude = 0.5;
  double memory_daily_amplitude = 0.1;
  double peak_seconds = 14 * 3600;  // time of day of the average peak (UTC)
  double phase_spread_seconds = 3 * 3600;
  double bursts_per_day = 1;  // per deployment: its cpu usage is multiplied for a while
  double burst_factor = 3;
  double burst_seconds = 900;
  double leak_share = 0.05;     // share of deployments whose pods leak memory...
  double leak_per_hour = 0.02;  // ...this share of their memory request per hour of age
  // A new pod's working set grows from its request to its full size over this long after it is
  // bound (0: full size at once). A model choice, not a measured one (bench/effect/README.md).
  double memory_ramp_seconds = 0;
  double rollouts_per_day = 0.5;  // per deployment: every pod replaced
  double scales_per_day = 1;      // per deployment: replicas x uniform(1 - change, 1 + change)
  double scale_change = 0.3;
  double jobs_per_node_hour = 0.5;  // short jobs (one pod each), cluster-wide rate per node
  LogNormal job_seconds{600, 1.0};
};

struct NodeParams {
  size_t count = 1000;
  double cpu = 16;                           // allocatable cores
  double memory = 64.0 * (1LL << 30);        // capacity, bytes
  double system_reserved = 1.0 * (1 << 30);  // used by the system, outside the pods
  double eviction_hard = 100.0 * (1 << 20);  // kubelet's memory.available threshold
  int64_t pods = 110;
  // allocatable = capacity - reserved - evictionHard, so memory.available falls below the
  // threshold exactly when the pods' working set exceeds the allocatable memory.
  double AllocatableMemory() const { return memory - system_reserved - eviction_hard; }
};

struct DeschedulerParams {
  double interval_seconds = 300;
  double thresholds[3] = {20, 20, 20};         // cpu, memory, pods (% of allocatable requested)
  double target_thresholds[3] = {50, 50, 50};  // ...above these a node is overutilized
};

// New workers join the cluster (EFFECT.md, "A new worker joins: balance"): at `at_seconds` of
// simulated time, `nodes` empty nodes of the cluster's shape (NodeParams) are added, as a cluster
// autoscaler or an operator adds them. The workload does not grow with them (its job rate stays
// per node of the first cluster): the new capacity is spare, and the question is how soon load
// spreads onto it. Off (0 nodes) unless the parameter file or the balance runs ask for it.
struct JoinParams {
  double at_seconds = 0;
  size_t nodes = 0;
};

// The balance runs (effect-sim --balance): `scenarios` on one cluster that `join` grows, once
// per seed, so that each scenario meets the same workload and the same join.
struct BalanceParams {
  size_t nodes = 0;  // before the join; 0: nodes.count
  double days = 0;   // 0: days
  JoinParams join;
  std::vector<std::string> scenarios;
  std::vector<double> seeds;  // empty: seed
};

struct SweepParams {
  size_t nodes = 200;  // the sweep runs on a smaller cluster...
  double days = 2;     // ...for a shorter time
  std::vector<double> threshold, clear_gap, affinity_weight, per_hour;
  std::vector<double> max_marked_fraction;  // the herd cap (1 = off)
  std::vector<double> seeds;  // the main scenarios again, on other workloads of the same shape
  // marks-relief's memory.available threshold (bytes; the clear threshold keeps its gap)
  std::vector<double> relief_threshold;
  // marks-early's mark-only memory.available threshold (bytes; the clear threshold keeps its gap)
  std::vector<double> early_threshold;
};

struct EffectParams {
  std::string source;
  uint64_t seed = 1;
  double days = 7;
  double step_seconds = 10;
  NodeParams nodes;
  WorkloadParams workload;
  ds::RuleConfig rules;  // from controller.ruleFile
  // From controller.reliefRuleFile: the rules of the marks-relief scenario (a memory.available
  // rule, operator "<" in bytes, drives the rebalancer).
  ds::RuleConfig relief_rules;
  bool has_relief_rules = false;
  // From controller.earlyRuleFile: the rules of the marks-early scenario (mark early, relieve
  // late: a mark-only rule on memory.available high enough to keep new pods off nodes that cannot
  // take a large pod's working set, beside the relief rule).
  ds::RuleConfig early_rules;
  bool has_early_rules = false;
  // From controller.balanceRuleFile: the rules of the marks-balance scenario (a `relativeTo: mean`
  // cpu rule with `resource: cpu`: a node over the pool's mean plus an offset is relieved towards
  // the mean, rebalance/pool_mean.h).
  ds::RuleConfig balance_rules;
  bool has_balance_rules = false;
  double cpu_rate_window_seconds = 300;  // rate(...[5m]) lags the cpu usage the rules see
  // The lagging scenarios (marks-lag, marks-lag-motion; Scenario::lag): each rule's cpu and memory
  // percent is the mean of the node's usage over the last valueWindow of steps, as
  // `rate(...[5m])` over a counter (or avg_over_time over a gauge) gives it, instead of the
  // exponential average above; the kubelet's memory.available (push.sh's) and the real usage
  // stay instantaneous. And a pod the rebalancer evicts keeps running, and using its cpu, memory
  // and requests, for terminationGrace before it leaves its node (its replacement is created at
  // once, as a ReplicaSet does on the deletion timestamp).
  double value_window_seconds = 300;
  double termination_grace_seconds = 30;
  int affinity_weight = 100;  // of the pods' preferred NotIn term (marks scenarios)
  // kube-scheduler's system-default PodTopologySpread on the hostname for a ReplicaSet's pods
  // (test/sched ChooseNode's owner_pods): off by default, as the runs of bench/EFFECT.md were made
  // without it; `effect-sim --default-spread` turns it on (issue 42's measurements).
  bool default_spread = false;
  double measure_cpu = 80, measure_memory = 85;  // "hot" for the figures, fixed across the sweep
  // "Stands out" for the figures: cpu % over the mean of every node's cpu % plus this many points
  // (measure.cpuOverMean), the balance figures' counterpart of measure_cpu.
  double measure_cpu_over_mean = 20;
  JoinParams join;  // top-level `join:`; off by default
  DeschedulerParams descheduler;
  std::vector<std::string> scenarios;
  SweepParams sweep;
  BalanceParams balance;
};

// Whether the simulation gives the rule each node's memory.available in bytes: a rule that drives
// the rebalancer on it (`resource: memory`, operator "<"), or one that only marks on it (no
// `resource`, `unit: bytes`, operator "<": it steers new pods, the rebalancer ignores it).
bool SeesBytesAvailable(const ds::Rule& r);

// The scenario names ParseEffectParams accepts.
const std::vector<std::string>& KnownScenarios();

// Parses the parameter file's text. `dir` is where relative paths (controller.ruleFile) start.
// Errors have the form "<source>:<line>:<col>: <field>: <problem>"; nothing throws.
ds::StatusOr<EffectParams> ParseEffectParams(const std::string& yaml_text,
                                             const std::string& source, const std::string& dir);

// Reads and parses a file.
ds::StatusOr<EffectParams> LoadEffectParams(const std::string& path);

}  // namespace effect
