// replay.json and the summary on stdout, from a ReplayResult (replay/replay_engine.h). The shape
// of replay.json is a contract that users' scripts read (docs/replay.md):
//   {"from": RFC3339, "to": RFC3339, "step_seconds": N, "rules": [names],
//    "nodes": {"NAME": {"marks": [{"start": RFC3339, "end": RFC3339 or null, "rules": [names],
//                                  "relieved_at": RFC3339 or null,
//                                  "relieved_after_seconds": N or null, ...}],
//                       "marked_seconds": N, "hot_marked_seconds": N, ...}},
//    "totals": {"marks": N, "marked_node_seconds": N, "max_marked_at_once": N,
//               "capped_node_seconds": N, "unmatched_series": N, "hot_marked_node_seconds": N,
//               "relieved_marks": N, "time_to_relief_median_seconds": N or null,
//               "time_to_relief_p90_seconds": N or null, ...},
//    "workloads": [...], ...}
// Fields may be added; none of these may change meaning.
#pragma once

#include <functional>
#include <string>

#include "common/json_util.h"
#include "replay/replay_engine.h"

namespace ds {

// `workloads` writes the "workloads" array (the right-sizing report, WriteWorkloads in
// replay/right_sizing.h); null: an empty one. `rebalance` writes the value of "rebalance" (the
// rebalancer's estimate, WriteRebalanceEstimate in replay/rebalance_estimate.h); null: no key.
std::string ReplayJson(const ReplayResult& r,
                       const std::function<void(JsonWriter&)>& workloads = nullptr,
                       const std::function<void(JsonWriter&)>& rebalance = nullptr);

// A few lines for people: the window, the totals and the most-marked nodes.
std::string ReplaySummary(const ReplayResult& r);

}  // namespace ds
