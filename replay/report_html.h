// report.html of `dynamic-scheduler replay` (issue 26): one self-contained page (no script, no
// CDN, no file beside it; the style is inlined) rendered from the replay's result, the replay.json
// document, so that the page shows exactly what the scripts read. Pure: JSON in, HTML out.
//
// It shows marked nodes over time per rule (inline SVG), the nodes table (marks, marked time,
// flaps, herd-cap hits, longest mark), the workloads table (the top 20 of right_sizing.h), the
// rebalancer's estimate (rebalance_estimate.h) when the document has one, and the two rule files
// side by side when it has a `compare` block (compare.h). Every name is HTML-escaped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ds {

// A mark removed and set again on the same node within this long is a flap.
inline constexpr double kFlapSeconds = 600;
// Rows of the workloads table; replay.json holds them all.
inline constexpr size_t kReportWorkloads = 20;

// One node's figures, derived from its marks in replay.json.
struct NodeStats {
  std::string name;
  size_t marks = 0;
  double marked_seconds = 0;   // replay.json's marked_seconds
  size_t flaps = 0;            // marks that started within kFlapSeconds of the previous one's end
  double longest_seconds = 0;  // a mark still on at `to` counts until `to`
  // The node's `cap_hits` in replay.json (steps at which the herd cap held back its mark); -1:
  // the document does not say.
  double cap_hits = -1;
};

// The marked nodes' figures, most marked time first. Errors name what is malformed.
StatusOr<std::vector<NodeStats>> NodeStatsOf(const std::string& replay_json);

// The page. Errors name what is malformed in the document (a missing `from`, a mark without a
// start, ...); a document that passes renders whatever its size.
StatusOr<std::string> RenderReportHtml(const std::string& replay_json);

// "<" -> "&lt;" and the rest of & < > " ': safe in text and in quoted attributes.
std::string HtmlEscape(std::string_view s);

// replay/report.css, embedded at build time (cmake/embed_report_css.cmake).
std::string_view ReportCss();

}  // namespace ds
