// GET /explain: why a pod moved or stayed, and why a node is (not) relieved, from what the cycle
// decided (rebalance/decision.h records, the rebalancer's report, the cycle's node table) -- never
// worked out again here, so the answer is the cycle's own. `kubectl dynamic-scheduler explain`
// (app/plugin.h) shows the same JSON as text. Pure: the view in, the body out.
//
//   ?pod=NAMESPACE/NAME[&node=NAME]  the pod's decision in the last cycle that listed its node's
//                                    pods, else its last eviction (kept across restarts), else
//                                    its node's state (`node`: where it runs, which the kubectl
//                                    plugin reads from the pod itself)
//   ?node=NAME                       the node's rules, mark, relief and its pods' decisions
#pragma once

#include <string>

#include "web/controller_view.h"

namespace ds {

struct ExplainAnswer {
  int status = 200;  // 400: a bad query; 404: a node the controller does not know
  std::string body;  // JSON (an error's too: {"error": "..."})
};

// `query`: the request's raw query string.
ExplainAnswer RenderExplain(const std::string& query, const ControllerView& view);

}  // namespace ds
