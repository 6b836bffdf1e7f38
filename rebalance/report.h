// What the rebalancer did and decided, as values: its last cycle's nodes, its recent evictions,
// its effect figures and its counters. controller/rebalancer.h fills them; /rebalance, /metrics
// and the web page (web/) read them, without the rebalancer's I/O.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/value_format.h"
#include "rebalance/decision.h"
#include "rebalance/effect.h"

namespace ds {

// One eviction the rebalancer attempted, planned or skipped at the API.
struct EvictionRecord {
  std::string pod, node, to, rule, result;
  double usage = 0;  // the pod's share of the node's load, in `unit`
  double load = 0, goal = 0;
  double at_wall = 0;
  std::string pod_uid, node_uid;  // for the Events
  // What usage, load and goal are in: percent (of allocatable; usage the pod's share), or bytes
  // for a bytes-available rule (load and goal bytes available, usage the pod's working set).
  ValueUnit unit = ValueUnit::kPercent;
};

struct RebalanceNodeReport {
  std::string name, qualification, rule, limit;
  double load = 0, goal = 0, load_after = 0;
  size_t candidates = 0, picks = 0, no_fit = 0;
  // Pods not evicted because their replacement would come back (rebalance.requireSteering), or
  // because a constraint decides where it may run that the fit check does not judge.
  size_t would_return = 0, constraint = 0;
  // Pods left to another disruptor (rebalance/disruptors.h), by its name: a rollout, a
  // scale-down, a drain, safe-to-evict "false", an eviction in the background.
  std::map<std::string, size_t> disrupted = {};
  bool held = false;  // the mark stays for the evictions
  // What is already moving off it (rebalance/in_motion.h): the usage of its evicted pods still
  // terminating or gone less than the rule's settle time ago, in the rule's unit (taken off
  // `load` before the plan), how many pods, and until when the last of them counts (0: until a
  // pod still terminating is gone, and its settle time after).
  double leaving = 0;
  size_t leaving_pods = 0;
  double leaving_until_wall = 0;
  ValueUnit unit = ValueUnit::kPercent;  // of load, goal, load_after (EvictionRecord::unit)
};

// A node of the mirror mode in the last cycle: marked, draining, unmarked or capped.
struct UnderusedNodeReport {
  std::string name, state, limit;
  double load[2] = {std::nan(""), std::nan("")};  // cpu, memory percent
  double below_since_wall = 0;                    // 0: not below its bounds now
  size_t picks = 0;
};

struct RebalanceReport {
  bool enabled = false, dry_run = false;
  std::vector<RebalanceNodeReport> nodes;      // the marked nodes of the last cycle
  std::vector<UnderusedNodeReport> underused;  // rebalance.underused: its nodes of the last cycle
  std::deque<EvictionRecord> recent;     // the last Rebalancer::kRecentEvictions, oldest first
  std::map<std::string, double> paused;  // workload -> until when (rebalance.bounceBackPause)
  // Each marked node's pods as the last cycle that listed them decided them (/explain); shared,
  // as a report is copied for every request. Null before the first relief.
  std::shared_ptr<const std::map<std::string, NodeDecisions>> decisions;
  EffectFigures figures;
  size_t pod_lists = 0;  // pod LISTs since start
  // What keeps every eviction from going through until an operator acts (RBAC's 403), for
  // /status; cleared by the next eviction that goes through, or 15 minutes after the last 403.
  // Empty: nothing.
  std::string problem;
};

struct RebalanceCounters {
  std::map<std::string, uint64_t> evictions;  // by result: evicted, blocked_by_pdb, dry_run, ...
  std::map<std::string, uint64_t> skips;      // by reason: no_fit and the limits' names
  std::map<std::string, uint64_t> kept;       // pods never evicted, by reason (evictable.h)
  uint64_t list_errors = 0, usage_errors = 0, event_errors = 0;
  uint64_t events_suppressed = 0;  // held back by the EventLimiter (per object, per cycle)
  std::map<std::string, uint64_t> underused_marks;  // set, removed, failed
};

}  // namespace ds
