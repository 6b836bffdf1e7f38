#include "web/routes.h"

#include <algorithm>

#include "common/json_util.h"
#include "web/access_policy.h"
#include "web/explain_json.h"
#include "web/metrics.h"
#include "web/nodes_json.h"
#include "web/rebalance_json.h"
#include "web/state_json.h"
#include "web/web_assets.h"

namespace ds {
namespace {

WebResponse Text(int status, std::string body) {
  WebResponse r;
  r.status = status;
  r.body = std::move(body) + "\n";
  return r;
}

WebResponse Webhook(const WebRequest& req, const std::function<void()>& trigger,
                    const std::string& webhook_token,
                    const std::function<void(std::vector<Labels>)>& alerted, bool caller_verified) {
  if (req.method != "POST") {
    WebResponse r = Text(405, "method not allowed; use POST");
    r.headers.push_back("Allow: POST");
    return r;
  }
  if (!caller_verified && !webhook_token.empty() &&
      !MatchesWebhookSecret(req.authorization, webhook_token)) {
    WebResponse r = Text(401, "unauthorized: the webhook needs its bearer token");
    r.headers.push_back("WWW-Authenticate: Bearer");
    return r;
  }
  // Only an authenticated alert may name nodes to relieve at once: without a token anyone who
  // reaches the port could make any marked node evictable. It still triggers a cycle.
  if (alerted && (caller_verified || !webhook_token.empty())) alerted(FiringAlerts(req.body));
  trigger();
  return Text(202, "evaluation triggered");
}

bool IsGetPath(const std::string& path) {
  static const char* kGetPaths[] = {
      "/status",    "/healthz",    "/nodes",        "/metrics",        "/rebalance", "/",
      "/ui/app.js", "/ui/app.css", "/api/v1/state", "/api/v1/history", "/explain"};
  for (const char* p : kGetPaths)
    if (path == p) return true;
  return false;
}

// "; rule cpu-peak warming up: 3 of 8 days of history (no verdicts until all are in)" for each
// predict rule still fetching its history after a start; "" when none is.
std::string WarmUpNotes(const CycleReport& c) {
  std::string notes;
  for (const RuleReport& r : c.rules)
    if (r.WarmingUp())
      notes += "; rule " + r.name + " warming up: " + WarmingUp(r) +
               " of history (no verdicts until all are in)";
  return notes;
}

WebResponse Readiness(const ControllerView& view) {
  std::string why = NotReadyReason(view);
  if (!why.empty()) return Text(503, why);
  // Still ready: the running rules keep working. But whoever looks should learn that the
  // file they changed is not what runs, and which rules cannot judge yet.
  std::string note =
      view.reload.last_ok
          ? ""
          : "; rule file change refused (the running rules are kept): " + view.reload.last_error;
  note += WarmUpNotes(view.last_cycle);
  // Labelling goes on, so still ready; but the rebalancer cannot do its part until someone acts.
  if (view.rebalance && !view.rebalance->problem.empty())
    note += "; rebalancer: " + view.rebalance->problem;
  if (view.leader_election && !view.is_leader)
    return Text(200,
                "ok: standby, the lease is held by " +
                    (view.leader_holder.empty() ? std::string("nobody yet") : view.leader_holder) +
                    note);
  return Text(200, "ok" + note);
}

WebResponse Liveness(const ControllerView& view) {
  // Judged on the loop's progress, not on whole cycles: a long write phase (hundreds of
  // changes against a slow API server) is alive and must not be killed mid-write.
  if (view.seconds_since_progress > 3 * view.interval_seconds + 60)
    return Text(503, "evaluation loop stalled: no progress for " +
                         std::to_string(static_cast<long>(view.seconds_since_progress)) + " s");
  return Text(200, "ok");
}

WebResponse Asset(const WebAsset& a) {
  WebResponse r;
  r.content_type = a.content_type;
  r.body = a.body;
  // The page runs only its own script and talks only to this server: a node name that got
  // past the page's escaping still could not load or send anything.
  r.headers.push_back(
      "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; "
      "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
      "frame-ancestors 'none'");
  r.headers.push_back("X-Content-Type-Options: nosniff");
  return r;
}

// The `nodes` parameter of a query ("nodes=a,b,c"), percent-decoded; false with `error` set for a
// malformed or oversized one. Other parameters are ignored.
bool NodesParameter(const std::string& query, std::vector<std::string>* nodes, std::string* error) {
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t end = query.find('&', pos);
    if (end == std::string::npos) end = query.size();
    const std::string_view param(query.data() + pos, end - pos);
    pos = end + 1;
    if (!param.starts_with("nodes=")) continue;
    std::string name;
    auto flush = [&]() {
      if (!name.empty()) nodes->push_back(std::move(name));
      name.clear();
    };
    for (size_t k = 6; k < param.size(); ++k) {
      const char c = param[k];
      if (c == ',') {
        flush();
      } else if (c == '%') {
        unsigned v = 0;
        for (int d = 1; d <= 2; ++d) {
          const char h = k + d < param.size() ? param[k + d] : '\0';
          const int x = h >= '0' && h <= '9'   ? h - '0'
                        : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                               : -1;
          if (x < 0) {
            *error = "malformed percent-encoding in nodes=";
            return false;
          }
          v = v * 16 + static_cast<unsigned>(x);
        }
        name.push_back(static_cast<char>(v));
        k += 2;
      } else {
        name.push_back(c);
      }
    }
    flush();
  }
  if (nodes->size() > ValueHistory::kMaxNodesPerRequest) {
    *error = "too many nodes: at most " + std::to_string(ValueHistory::kMaxNodesPerRequest) +
             " per request";
    return false;
  }
  return true;
}

WebResponse History(const WebRequest& req, const ControllerView& view) {
  if (view.history == nullptr) return Text(404, "no history is kept");
  std::vector<std::string> nodes;
  std::string error;
  if (!NodesParameter(req.query, &nodes, &error)) return Text(400, error);
  WebResponse r;
  r.content_type = "application/json";
  r.body = view.history->RenderJson(nodes);
  r.headers.push_back("Cache-Control: no-store");
  return r;
}

// /api/v1/state, /nodes, /rebalance or /metrics: the rendered body.
WebResponse Rendered(const std::string& path, const ControllerView& view) {
  WebResponse r;
  if (path == "/api/v1/state") {
    r.content_type = "application/json";
    r.body = RenderStateJson(view);
    r.headers.push_back("Cache-Control: no-store");
  } else if (path == "/nodes") {
    r.content_type = "application/json";
    r.body = RenderNodesJson(view);
  } else if (path == "/rebalance") {
    r.content_type = "application/json";
    r.body = RenderRebalanceJson(view);
  } else {
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = RenderMetrics(view);
  }
  return r;
}

}  // namespace

std::string NotReadyReason(const ControllerView& v) {
  if (!v.cache_synced)
    return "node cache not synced" + (v.cache_error.empty() ? std::string() : ": " + v.cache_error);
  // A cache that stopped hearing from the API server decides on a frozen view of the nodes.
  if (v.cache_stale)
    return "node cache stale: no successful list or watch event for " +
           std::to_string(static_cast<long>(v.cache_seconds_since_progress)) + " s" +
           (v.cache_error.empty() ? std::string() : ": " + v.cache_error);
  if (v.seconds_since_cycle < 0) return "no evaluation cycle has run yet";
  if (v.last_cycle.standby) return "";  // a standby queries nothing; its cache is what it serves
  // Readiness wants fresh decisions, so it looks at whole cycles; liveness (/healthz) only asks
  // whether the loop still moves.
  if (v.seconds_since_cycle > 3 * v.interval_seconds + 60)
    return "evaluation loop stalled: last cycle ended " +
           std::to_string(static_cast<long>(v.seconds_since_cycle)) + " s ago";
  if (v.last_cycle.all_queries_failed) {
    // Rules still fetching their history (predict, after a start) are not an outage.
    if (!v.last_cycle.rules.empty() &&
        std::all_of(v.last_cycle.rules.begin(), v.last_cycle.rules.end(),
                    [](const RuleReport& r) { return r.WarmingUp(); }))
      return "no rule can judge yet" + WarmUpNotes(v.last_cycle) + ": " +
             v.last_cycle.rules.front().error;
    std::string err = v.last_cycle.rules.empty() ? "" : v.last_cycle.rules.front().error;
    return std::string("every rule's query failed in the last cycle (Prometheus unreachable?)") +
           (v.last_cycle.releasing ? ", releasing the marks (onPrometheusDown: release)" : "") +
           ": " + err;
  }
  return "";
}

std::vector<Labels> FiringAlerts(const std::string& body) {
  std::vector<Labels> out;
  rapidjson::Document d;
  d.Parse<rapidjson::kParseIterativeFlag>(body.c_str(), body.size());
  if (d.HasParseError() || !d.IsObject()) return out;
  const auto* alerts = JsonMember(d, "alerts");
  if (alerts == nullptr || !alerts->IsArray()) return out;
  for (const auto& a : alerts->GetArray()) {
    if (out.size() == kMaxAlerts) break;
    if (!a.IsObject()) continue;
    const auto* status = JsonMember(a, "status");
    if (status != nullptr && (!status->IsString() || std::string(status->GetString()) != "firing"))
      continue;  // resolved: nothing to relieve
    const auto* labels = JsonMember(a, "labels");
    if (labels == nullptr || !labels->IsObject()) continue;
    Labels l;
    for (const auto& m : labels->GetObject())
      if (m.value.IsString())
        l.emplace_back(std::string(m.name.GetString(), m.name.GetStringLength()),
                       std::string(m.value.GetString(), m.value.GetStringLength()));
    out.push_back(std::move(l));
  }
  return out;
}

WebResponse HandleProbe(const WebRequest& req, const ControllerView& view) {
  if (req.path != "/healthz" && req.path != "/status")
    return Text(404, "not found; the probe listener serves /healthz and /status");
  if (req.method != "GET" && req.method != "HEAD") {
    WebResponse r = Text(405, "method not allowed; use GET");
    r.headers.push_back("Allow: GET, HEAD");
    return r;
  }
  return req.path == "/status" ? Readiness(view) : Liveness(view);
}

WebResponse HandleRequest(const WebRequest& req, const ControllerView& view,
                          const std::function<void()>& trigger, const std::string& webhook_token,
                          const std::function<void(std::vector<Labels>)>& alerted,
                          bool caller_verified) {
  if (req.content_length > kMaxRequestBody) return Text(413, "request body too large");
  if (req.path == "/webhook") return Webhook(req, trigger, webhook_token, alerted, caller_verified);
  if (!IsGetPath(req.path))
    return Text(404,
                "not found; endpoints: / /api/v1/state /api/v1/history /status /healthz /nodes "
                "/metrics /rebalance /explain /webhook");
  if (req.method != "GET" && req.method != "HEAD") {
    WebResponse r = Text(405, "method not allowed; use GET");
    r.headers.push_back("Allow: GET, HEAD");
    return r;
  }
  if (req.path == "/status") return Readiness(view);
  if (req.path == "/healthz") return Liveness(view);
  if (req.path == "/api/v1/history") return History(req, view);
  if (req.path == "/explain") {
    const ExplainAnswer a = RenderExplain(req.query, view);
    WebResponse r;
    r.status = a.status;
    r.content_type = "application/json";
    r.body = a.body;
    r.headers.push_back("Cache-Control: no-store");
    return r;
  }
  if (const WebAsset* a = FindWebAsset(req.path)) return Asset(*a);
  return Rendered(req.path, view);
}

}  // namespace ds
