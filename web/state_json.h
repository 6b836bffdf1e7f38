// GET /api/v1/state: the web page's data, one document per poll (every 3 s while the page is
// visible): every managed node with its value per rule, state, mark and since when; the rules and
// their thresholds; the newest mark changes with their reasons, newest first; readiness (the
// reason /status gives, web/routes.h: NotReadyReason), leader, outage and reload state.
#pragma once

#include <string>

#include "web/controller_view.h"

namespace ds {

// The web page's data, as JSON (the body, ending in a newline). Nodes are arrays, [name, mark,
// state, since, [values]] (see "nodeFields"): `mark` is the node's value under our label key (""
// none; another value is someone else's), `state` the last cycle's verdict (hot, cold, unknown,
// capped, held; "new" for a node the cycle did not see), `since` epoch seconds since when its
// rules hold it (null: they do not), `values` one per rule in the order of "rules" (null: no
// value). About 53 bytes a node. Pure.
std::string RenderStateJson(const ControllerView& view);

// A node's verdict of the last cycle as the JSON endpoints name it: hot, cold, unknown, capped,
// held.
const char* NodeStateName(NodeTable::State s);

}  // namespace ds
