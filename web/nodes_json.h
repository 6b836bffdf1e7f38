// GET /nodes: the nodes carrying the mark, as JSON. The original dynamic-scheduler's fields
// ("type", "num", "node_names") first, then why each node is marked: "nodes", each with the rules
// that hold it (value, operator, thresholds, since when, stale) and, with graded marks, its level;
// also the unmanaged nodes carrying our label (in taint mode our taint; "managed": false: no rule
// of ours judges them). Then "mark_limit" and "capped", the hot nodes the herd cap left unmarked
// (rules/herd_cap.h), with their rules; "cycle" and "evaluated_at" say which cycle the rules are
// from.
#pragma once

#include <string>

#include "web/controller_view.h"

namespace ds {

// Pure: the view in, the body out (ending in a newline). NaN and infinities are written as the
// strings "NaN", "+Inf", "-Inf" (web/json_values.h: WriteNumber).
std::string RenderNodesJson(const ControllerView& view);

}  // namespace ds
