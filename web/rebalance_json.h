// GET /rebalance: what the rebalancer saw and did, as JSON (the page polls it while rebalancing is
// on). Without a rebalance: section in the rule file the body is only {"enabled":false}; with one:
// "dryRun"; "nodes", the marked nodes of the last cycle (their qualification, load against the
// goal, the limit that stopped their relief, candidates, picks); "evictions", the recent ones,
// oldest first (Rebalancer::kRecentEvictions); "underused", rebalance.underused's nodes of the
// last cycle; "figures", the effect counts and rates (rebalance/effect.h); "podLists".
#pragma once

#include <string>

#include "web/controller_view.h"

namespace ds {

// Pure: the view in, the body out (ending in a newline). NaN and infinities are written as the
// strings "NaN", "+Inf", "-Inf" (web/json_values.h: WriteNumber).
std::string RenderRebalanceJson(const ControllerView& view);

}  // namespace ds
