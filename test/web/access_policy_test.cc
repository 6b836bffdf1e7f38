#include "web/access_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/fakes/web_request.h"
#include "web/routes.h"

namespace ds {
namespace {

WebRequest Req(const std::string& method, const std::string& path,
               const std::string& authorization = "") {
  return MakeWebRequest(method, path, authorization);
}

using Kind = AccessRequirement::Kind;

TEST(AccessPolicy, WhatEachRequestNeeds) {
  struct Case {
    const char* method;
    const char* path;
    const char* authorization;
    Kind kind;
    const char* verb;  // of the review
    bool resource;     // services/proxy of the Service (else the URL /metrics)
  } cases[] = {
      // The page's own files: open (they carry no data; the page then asks for a token).
      {"GET", "/", "", Kind::kOpen, "", false},
      {"HEAD", "/", "", Kind::kOpen, "", false},
      {"GET", "/ui/app.js", "", Kind::kOpen, "", false},
      {"GET", "/ui/app.css", "Bearer whatever", Kind::kOpen, "", false},
      // /metrics: the URL, as controller-runtime and kube-rbac-proxy review it.
      {"GET", "/metrics", "Bearer t", Kind::kReview, "get", false},
      {"HEAD", "/metrics", "Bearer t", Kind::kReview, "get", false},
      // Everything else: the Service's proxy subresource, with the service proxy's verbs. Not
      // the URL: system:discovery grants get /api/* to every authenticated user.
      {"GET", "/api/v1/state", "", Kind::kReview, "get", true},
      {"GET", "/api/v1/history", "", Kind::kReview, "get", true},
      {"HEAD", "/api/v1/state", "", Kind::kReview, "get", true},
      {"GET", "/nodes", "", Kind::kReview, "get", true},
      {"GET", "/rebalance", "", Kind::kReview, "get", true},
      {"GET", "/status", "", Kind::kReview, "get", true},  // the probes: -probeaddr
      {"GET", "/healthz", "", Kind::kReview, "get", true},
      {"POST", "/webhook", "", Kind::kReview, "create", true},
      {"POST", "/webhook", "Bearer not-the-secret", Kind::kReview, "create", true},
      // The webhook's shared secret still lets it in without a review, with POST only.
      {"POST", "/webhook", "Bearer s3cret", Kind::kSharedSecret, "", false},
      {"GET", "/webhook", "Bearer s3cret", Kind::kReview, "get", true},
      {"POST", "/webhook", "bearer s3cret", Kind::kReview, "create", true},  // exactly as set
      // Other methods on the open files, unknown paths and near-misses of the open paths are
      // reviewed as what they are: nothing but the three files answers an anonymous caller.
      {"POST", "/", "", Kind::kReview, "create", true},
      {"DELETE", "/ui/app.js", "", Kind::kReview, "delete", true},
      {"PUT", "/nodes", "", Kind::kReview, "update", true},
      {"GET", "/ui/app.js/", "", Kind::kReview, "get", true},
      {"GET", "//", "", Kind::kReview, "get", true},
      {"GET", "/ui/../metrics", "", Kind::kReview, "get", true},
      {"GET", "/metrics/", "", Kind::kReview, "get", true},
      {"POST", "/metrics", "", Kind::kReview, "create", true},
      {"GET", "/nope", "", Kind::kReview, "get", true},
      {"OPTIONS", "/metrics", "", Kind::kReview, "options", true},
  };
  const WebAccessScope scope{"ops", "ds-web"};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.method) + " " + c.path + " [" + c.authorization + "]");
    WebRequest req = Req(c.method, c.path, c.authorization);
    req.query = "nodes=a,b";  // never part of the reviewed path
    const AccessRequirement r = RequiredAccess(req, "s3cret", scope);
    EXPECT_EQ(r.kind, c.kind);
    if (c.kind != Kind::kReview) continue;
    EXPECT_EQ(r.review.verb, c.verb);
    EXPECT_EQ(r.review.is_resource(), c.resource);
    if (c.resource) {
      EXPECT_EQ(r.review.resource,
                (ResourceAttributes{"ops", "", "v1", "services", "proxy", "ds-web"}));
      EXPECT_EQ(r.review.path, "");
    } else {
      EXPECT_EQ(r.review.path, "/metrics");
    }
  }
  // Without a webhook secret, every webhook is reviewed.
  EXPECT_EQ(RequiredAccess(Req("POST", "/webhook", "Bearer "), "", scope).kind, Kind::kReview);
  EXPECT_EQ(RequiredAccess(Req("POST", "/webhook", "Bearer s3cret"), "", scope).kind,
            Kind::kReview);
}

TEST(AccessPolicy, WebhookSecretComparesExactly) {
  EXPECT_TRUE(MatchesWebhookSecret("Bearer s3cret", "s3cret"));
  EXPECT_FALSE(MatchesWebhookSecret("Bearer s3cre", "s3cret"));
  EXPECT_FALSE(MatchesWebhookSecret("Bearer s3crett", "s3cret"));
  EXPECT_FALSE(MatchesWebhookSecret("s3cret", "s3cret"));
  EXPECT_FALSE(MatchesWebhookSecret("Bearer ", ""));
  EXPECT_FALSE(MatchesWebhookSecret("", ""));
}

TEST(AccessPolicy, DeniedResponses) {
  WebResponse r401 = DeniedResponse(401, "unauthorized: send a token");
  EXPECT_EQ(r401.status, 401);
  EXPECT_EQ(r401.body, "unauthorized: send a token\n");
  EXPECT_EQ(r401.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(r401.headers,
            (std::vector<std::string>{"Cache-Control: no-store", "WWW-Authenticate: Bearer"}));
  EXPECT_EQ(DeniedResponse(403, "forbidden").headers,
            (std::vector<std::string>{"Cache-Control: no-store"}));
  EXPECT_EQ(DeniedResponse(503, "cannot check credentials").headers,
            (std::vector<std::string>{"Cache-Control: no-store", "Retry-After: 5"}));
}

TEST(AccessPolicy, AVerifiedWebhookNeedsNoSecretAndMayNameNodes) {
  ControllerView view;
  int triggered = 0;
  std::vector<Labels> named;
  auto trigger = [&] { ++triggered; };
  auto alerted = [&](std::vector<Labels> a) { named = std::move(a); };
  WebRequest req = Req("POST", "/webhook", "Bearer a-kubernetes-token");
  req.body = R"({"alerts":[{"status":"firing","labels":{"node":"n1"}}]})";

  // Not verified, a secret configured: the secret is needed.
  EXPECT_EQ(HandleRequest(req, view, trigger, "s3cret", alerted).status, 401);
  // Not verified, no secret: triggers a cycle, names no node.
  EXPECT_EQ(HandleRequest(req, view, trigger, "", alerted).status, 202);
  EXPECT_TRUE(named.empty());
  // Verified by the API server's reviews: with or without a secret configured, accepted and the
  // nodes it names are relieved.
  for (const char* secret : {"", "s3cret"}) {
    named.clear();
    EXPECT_EQ(HandleRequest(req, view, trigger, secret, alerted, /*caller_verified=*/true).status,
              202);
    ASSERT_EQ(named.size(), 1u) << secret;
    EXPECT_EQ(named[0], (Labels{{"node", "n1"}}));
  }
  EXPECT_EQ(triggered, 3);
}

}  // namespace
}  // namespace ds
