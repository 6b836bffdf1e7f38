// Which requests on the web port need what, under -web_auth=kubernetes. Pure: the checks
// themselves (TokenReview, SubjectAccessReview and their caches) are kube/access_review.h's, and
// app/web_guard.h runs them before the routes (web/routes.h), which stay as they are.
//
//   - The page's own files (GET or HEAD of /, /ui/app.js, /ui/app.css) are open: they carry no
//     data, and the page must load before it can ask for a token. Every other request, on any
//     path, with any method (404s and 405s included, so that nothing answers an anonymous caller
//     but those three files), needs a bearer token the API server accepts and a
//     SubjectAccessReview that allows it.
//   - GET /metrics is reviewed as the non-resource URL /metrics with verb get, as
//     controller-runtime's secure metrics serving and kube-rbac-proxy review it, so the
//     ClusterRole Prometheus already has for them (nonResourceURLs: ["/metrics"], verbs: ["get"];
//     kube-prometheus grants it to prometheus-k8s) lets it scrape here too.
//   - Everything else is reviewed as the subresource "proxy" of the controller's Service in its
//     namespace (resourceAttributes {namespace, resource: services, subresource: proxy, name}),
//     with the verb the API server's service proxy checks for the same method (GET and HEAD get,
//     POST create, PUT update, PATCH patch, DELETE delete). Not the request's own path as a
//     non-resource URL: the API server's default ClusterRole system:discovery lets every
//     authenticated user get /api/* (its own discovery paths), which would have opened
//     /api/v1/state and /api/v1/history to any service account in the cluster. And the one
//     permission means the same on both ways in: a user who may get services/proxy of this Service
//     may reach the port through `kubectl proxy` / the API server's service proxy (where the API
//     server checks exactly that, and this port sees no token), and directly with a token.
//   - POST /webhook with the -webhook_token_file secret as its bearer token (Alertmanager's
//     http_config.authorization) passes without a review, as before: the secret is the webhook's
//     own credential. Any other webhook request is reviewed (verb post) like the rest.
//   - The nodes an Alertmanager webhook names (web/routes.h `alerted`) may be relieved at once
//     only when its caller is known: the shared secret, or a token the API server accepts whose
//     user may post /webhook. A reviewed caller is as accountable as the secret's holder (its
//     name is in the API server's audit log of the reviews), so it gets the same power.
#pragma once

#include <cstdint>
#include <string>

#include "common/web_server.h"
#include "kube/review_object.h"

namespace ds {

struct AccessRequirement {
  enum class Kind {
    kOpen,          // the page's own files: no credentials
    kSharedSecret,  // POST /webhook carrying -webhook_token_file's secret: already authenticated
    kReview,        // a token the API server accepts, and a SubjectAccessReview allowing verb+path
  };
  Kind kind = Kind::kReview;
  AccessAttributes review;  // kReview: what the SubjectAccessReview asks (its user left empty)
};

// Where the port's reviews point: the controller's Service (-web_auth_service) in its namespace.
struct WebAccessScope {
  std::string namespace_name;
  std::string service = "dynamic-scheduler";
};

// What `req` needs under -web_auth=kubernetes. `webhook_token`: -webhook_token_file's secret, ""
// when there is none. Pure.
AccessRequirement RequiredAccess(const WebRequest& req, const std::string& webhook_token,
                                 const WebAccessScope& scope);

// The resource verb the API server checks for an HTTP method ("GET" and "HEAD" -> "get", "POST"
// -> "create"; kube-apiserver's RequestInfoFactory); an unknown method lowercased.
std::string ResourceVerb(const std::string& method);

// True when `authorization` is "Bearer <webhook_token>" exactly (Alertmanager's
// http_config.authorization), compared in constant time; false for an empty webhook_token.
bool MatchesWebhookSecret(const std::string& authorization, const std::string& webhook_token);

// The answer to a request the guard turned away: `status` (401, 403 or 503) and `message` as a
// one-line text body, never cached by a proxy or browser; a 401 carries "WWW-Authenticate:
// Bearer" (RFC 6750), and a 503 or 429 Retry-After, since the check may succeed in a moment.
WebResponse DeniedResponse(int status, const std::string& message);

// Requests the guard turned away since start, by reason (the metric
// dynamic_scheduler_web_requests_denied_total's label).
struct WebAccessCounters {
  uint64_t unauthenticated = 0;  // 401: no bearer token, or one the API server does not accept
  uint64_t forbidden = 0;        // 403: the SubjectAccessReview did not allow it
  uint64_t review_failed = 0;    // 503: the API server could not be asked
  uint64_t throttled = 0;        // 429: the client's share of new reviews is spent
};

}  // namespace ds
