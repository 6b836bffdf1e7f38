// The rebalancer, estimated on the replayed history (issue 26): per hot episode (one mark on one
// node), would the node have qualified (rebalance/qualify.h: `after`, the node selector), and
// which pods would the rebalancer have evicted then: the same evictability rules
// (rebalance/evictable.h), the same relief goal (rebalance/node_relief.h), the same pod choice
// by real usage at that time (rebalance/pod_choice.h, usage from the podUsage history) and the
// same limits (rebalance/eviction_budget.h, one budget across every episode in time order).
//
// What it does not claim: the scheduler is not replayed, so where replacements would have gone
// is not said (a pod is only chosen where its replacement fits on another unmarked node, by the
// nodes and pods given), nor how the load would have changed: the history after an eviction is the
// history without it, so one plan is estimated per episode, at the cycle it qualifies. Only where
// a limit held that plan short of its goal (the cycle's perCycle, shared by the episodes of a
// cycle, the furthest over its goal first; or a limit that held a pod back: the hour, the node's
// cool-down, a window, a workload's allowance) does it go on at the following cycles while the
// mark lasts, as the controller would, from the load the earlier evictions leave (its pods in
// motion). The destinations' room is shared by the plans of a cycle, as the rebalancer's is. A
// node is relieved from the cycle after the one that marked it (mark first). The controller's
// cool-down runs from its eviction's own time, a moment past its cycle's start, so live an
// eviction after a cool-down may come one cycle later than estimated. Pods are where the pod list
// (or -pods_file) puts them (placement history is not kept); a pod created after that cycle did not
// exist then; a pod evicted in an earlier episode is gone. Whether a pod's replacement is steered
// off the node (rebalance.requireSteering: its affinity term or toleration) and the bounce-back
// pause are not judged: both need the cluster as it was then. Pure.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/json_util.h"
#include "common/time_zone.h"
#include "kube/pod_object.h"
#include "rebalance/node_relief.h"
#include "rebalance/placement.h"
#include "rebalance/qualify.h"
#include "rebalance/rebalance_config.h"
#include "replay/right_sizing.h"

namespace ds {

// Said on the page and in replay.json, so nobody reads destinations into the estimate.
inline constexpr const char* kEstimateNote =
    "An estimate: the scheduler is not replayed, so where the replacements would have gone is not "
    "claimed, and the load after an eviction is not known (one plan per hot episode, at the cycle "
    "it qualifies, continued at later cycles only where a limit held it short). Pods are taken "
    "where the pod list (now, or -pods_file) puts them.";

struct EstimateInput {
  double step_seconds = 60;   // the cycle
  NodeMarks marks;            // the replay's marks (end: `to` while still marked)
  std::vector<PodInfo> pods;  // every pod, with its node
  // Every node as a destination (its allocatable and the requests bound to it); `marked` is set
  // here from `marks` at each cycle. A node missing here cannot be relieved (no allocatable).
  std::vector<PlacementNode> nodes;
  std::vector<std::string> selected;     // nodes matching rebalance.nodeSelector; empty: all
  std::vector<UsageSeries> cpu, memory;  // podUsage over the window (cores, bytes)
  // The rules holding `node` at `t` with their values and clear thresholds (the replay knows).
  std::function<std::vector<HoldingRule>(const std::string& node, double t)> holding;
  // Since when each rule holding `node`'s episode starting at `start` held it, with its own
  // relieveAfter (HeldSince): the node qualifies once one has waited its time, and only those
  // that have set the goal (DueHoldingRules). Unset or empty: rebalance.after, every rule.
  std::function<std::vector<HeldSince>(const std::string& node, double start)> held;
};

struct EpisodeEstimate {
  std::string node;
  double start = 0, end = 0;
  double qualified_at = -1;   // -1: never qualified; `qualification` says why
  std::string qualification;  // QualificationName, or "nothing_to_relieve"
  std::string rule;           // the relieved rule
  double load = 0, goal = 0, load_after = 0;
  struct Eviction {
    const PodInfo* pod = nullptr;
    double usage = 0;  // in the load's unit
    double at = 0;     // the cycle: qualified_at, or a later one where perCycle cut a plan short
  };
  std::vector<Eviction> evictions;
  struct Held {
    const PodInfo* pod = nullptr;
    std::string limit;  // LimitName
  };
  // Pods a limit kept from going at some cycle of an episode that ended short of its goal, and
  // that no later cycle of it evicted.
  std::vector<Held> held_back;
  size_t candidates = 0;  // the most pods that could go at one cycle of the episode
};

struct RebalanceEstimate {
  std::vector<EpisodeEstimate> episodes;  // by start
  size_t evictions = 0;
};

// The first cycle at which each episode qualifies (`after` past its start, on the cycle grid from
// the mark's start, before it ends; selected nodes only), as (node, time), time ascending: where
// `EstimateInput::holding` will first be asked, so a caller can ask Prometheus for the holding
// rules' values at just those times (one instant query per rule and distinct time). `selected`
// as EstimateInput's. Pure.
std::vector<std::pair<std::string, double>> FirstQualifyingCycles(
    const NodeMarks& marks, const RebalanceConfig& cfg, double step_seconds,
    const std::vector<std::string>& selected,
    const std::function<std::vector<HeldSince>(const std::string&, double)>& held = {});

// REQUIRES: cfg.enabled; every mark's end is finite (a mark still on ends at the window's end:
// the plans walk the cycles up to it). The returned estimate points into `in.pods`.
RebalanceEstimate EstimateRebalance(const EstimateInput& in, const RebalanceConfig& cfg,
                                    const TimeZone& zone);

// replay.json's `rebalance` block: {"note", "evictions", "episodes": [{"node", "start", "end",
// "qualified_at" (null: never), "qualification", "rule", "load", "goal", "load_after",
// "candidates", "evictions": [{"namespace", "pod", "workload", "usage", "at"}], "held_back":
// [{"namespace", "pod", "limit"}]}]}.
void WriteRebalanceEstimate(JsonWriter& w, const RebalanceEstimate& e);

// The `rebalance` block when the estimate could not be made: {"note", "missing": why} (e.g. the
// pod LIST failed), so a reader is not told "no hot episode" instead.
void WriteEstimateMissing(JsonWriter& w, const std::string& why);

// One line for stdout: how many hot episodes qualified and how many pods would have been
// evicted, saying that destinations are not claimed.
std::string EstimateSummary(const RebalanceEstimate& e);

}  // namespace ds
