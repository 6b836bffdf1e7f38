// The HTTP endpoints as pure functions: a request and a view of the controller in, a response
// out. The listener is WebServer (common/web_server.h); nothing under web/ touches sockets
// or clocks. This file routes, checks the webhook's token and judges readiness and liveness; the
// other bodies are rendered in the files named below:
//   GET  /         the live web page (web/web_assets.h; with /ui/app.js and /ui/app.css),
//                  which polls /api/v1/state and, with rebalancing, /rebalance
//   GET  /api/v1/state  the page's data (web/state_json.h)
//   GET  /api/v1/history?nodes=a,b  the last hour of the named nodes' values and the last hours
//                  of the cluster, for the page's charts (web/value_history.h); 400 for a
//                  malformed or oversized nodes= list
//   GET  /status   200 "ok" when ready (a standby says whose lease it waits for), else 503 and a
//                  one-line reason (readiness)
//   GET  /healthz  200 "ok" while the evaluation loop is ticking (liveness)
//   GET  /nodes    nodes carrying the mark, and why (web/nodes_json.h)
//   GET  /metrics  Prometheus text format (web/metrics.h)
//   GET  /rebalance  the rebalancer: the marked nodes of the last cycle, recent evictions, effect
//                  (web/rebalance_json.h)
//   POST /webhook  Alertmanager webhook: triggers an evaluation at once (202)
// Any other path is 404; a known path with the wrong method 405 (with Allow); a request body
// over kMaxRequestBody 413.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/labels.h"
#include "common/web_server.h"
#include "web/controller_view.h"

namespace ds {

// Routes one request. `trigger` is called for a valid webhook POST.
// With a `webhook_token`, POST /webhook needs "Authorization: Bearer <token>" (Alertmanager's
// http_config.authorization) and answers 401 otherwise.
// `alerted` (optional) receives the label sets of the webhook's firing alerts first: the
// rebalancer relieves the nodes they name at once (an alert reacts faster than `after`). Only
// from a known caller: with a `webhook_token`, or `caller_verified`; an unauthenticated webhook
// triggers a cycle and names no node.
// `caller_verified`: the request passed -web_auth=kubernetes' review before it got here
// (web/access_policy.h); the webhook then needs no shared secret, and may name nodes.
WebResponse HandleRequest(const WebRequest& req, const ControllerView& view,
                          const std::function<void()>& trigger,
                          const std::string& webhook_token = "",
                          const std::function<void(std::vector<Labels>)>& alerted = {},
                          bool caller_verified = false);
// The probe listener's routes (-probeaddr): GET/HEAD /healthz and /status as on the web port,
// 404 for anything else. Nothing there names a node, so it needs no authentication.
WebResponse HandleProbe(const WebRequest& req, const ControllerView& view);
// The label sets of the firing alerts of an Alertmanager webhook body (at most kMaxAlerts);
// empty for anything else. Pure.
std::vector<Labels> FiringAlerts(const std::string& body);

// Why the controller is not ready (GET /status answers 503 with it), or "" when it is. The state
// JSON shows the same reason ("ready", "notReady"), so the page and the probe never disagree.
std::string NotReadyReason(const ControllerView& view);

}  // namespace ds
