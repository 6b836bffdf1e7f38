// GET /rebalance: what the rebalancer saw and did, as JSON (the page polls it while rebalancing is
// on). Without a rebalance: section in the rule file the body is only {"enabled":false}; with one:
// "dryRun"; "nodes", the marked nodes of the last cycle (their qualification, load against the
// goal, the limit that stopped their relief, candidates, picks); "evictions", the recent ones,
// oldest first (Rebalancer::kRecentEvictions); "underused", rebalance.underused's nodes of the
// last cycle; "figures", the effect counts and rates (rebalance/effect.h); "podLists".
#pragma once

#include <string>

#include "common/json_util.h"
#include "rebalance/report.h"
#include "web/controller_view.h"

namespace ds {

// Pure: the view in, the body out (ending in a newline). NaN and infinities are written as the
// strings "NaN", "+Inf", "-Inf" (web/json_values.h: WriteNumber).
std::string RenderRebalanceJson(const ControllerView& view);

// One eviction as /rebalance lists it: pod, node, result, to, rule, usage, load, goal, unit, at
// (also the evictions of -once's JSON summary, app/once.h).
void WriteEviction(JsonWriter& w, const EvictionRecord& e);

// One marked node of the last cycle as /rebalance lists it (also /explain's `relief`).
void WriteRebalanceNode(JsonWriter& w, const RebalanceNodeReport& n);

}  // namespace ds
