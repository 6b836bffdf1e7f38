// `dynamic-scheduler replay --compare other.yaml` (issue 26): the same history replayed with two
// rule files, side by side, for the tuning loop (threshold, clear gap, `for`, herd cap). The
// subcommand replays both and hands the two replay.json documents here; the result is the first
// document with a `compare` block, which report.html (report_html.h) renders side by side:
//
//   "compare": {
//     "files": ["rule.yaml", "other.yaml"],
//     "totals": {"marks": [a, b], "marked_node_seconds": [a, b], "max_marked_at_once": [a, b],
//                "capped_node_seconds": [a, b], "unmatched_series": [a, b], "flaps": [a, b]},
//     "nodes": [{"name": N, "marks": [a, b], "marked_seconds": [a, b]}, ...],
//     "other": {the second document's from, to, step_seconds, rules, nodes and totals}
//   }
//
// `nodes` lists only the nodes the two files mark differently (count or time), the largest
// difference in marked time first. A total the documents lack is null. Pure.
#pragma once

#include <string>

#include "common/status.h"

namespace ds {

// REQUIRES: both documents replay the same window at the same step (else an error says so: a
// comparison over different history would compare the history, not the files).
StatusOr<std::string> AddCompare(const std::string& replay_json, const std::string& file,
                                 const std::string& other_json, const std::string& other_file);

}  // namespace ds
