#include "app/web_guard.h"

#include <gtest/gtest.h>

#include <string>

#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_kube_api.h"
#include "test/fakes/web_request.h"

namespace ds {
namespace {

WebRequest Req(const std::string& method, const std::string& path,
               const std::string& authorization = "") {
  return MakeWebRequest(method, path, authorization);
}

struct Fixture {
  FakeKubeApi kube;
  FakeClock clock;
  WebGuard guard{&kube, &clock, "hook-secret", WebAccessScope{"ops", "dynamic-scheduler"}};
  Fixture() {
    kube.AddToken("viewer", UserInfo{"viewer", "", {"system:authenticated"}, {}});
    kube.GrantResource("viewer", "get", "ops", "services/proxy", "dynamic-scheduler");
    kube.Grant("viewer", "get", "/metrics");
    // What every authenticated user has (system:discovery): it opens nothing here.
    kube.Grant("system:authenticated", "get", "/api/*");
    kube.AddToken("am", UserInfo{"system:serviceaccount:monitoring:alertmanager", "", {}, {}});
    kube.GrantResource("system:serviceaccount:monitoring:alertmanager", "create", "ops",
                       "services/proxy", "dynamic-scheduler");
    kube.AddToken("other",
                  UserInfo{"system:serviceaccount:apps:web", "", {"system:authenticated"}, {}});
    // The proxy of another Service, or this one's in another namespace, is not this port.
    kube.GrantResource("system:serviceaccount:apps:web", "get", "apps", "services/proxy");
    kube.GrantResource("system:serviceaccount:apps:web", "get", "ops", "services/proxy", "web");
  }
};

TEST(WebGuard, LetsThePageInAndAsksForATokenForItsData) {
  Fixture f;
  for (const char* path : {"/", "/ui/app.js", "/ui/app.css"}) {
    auto v = f.guard.Admit(Req("GET", path));
    EXPECT_TRUE(v.pass) << path;
    EXPECT_FALSE(v.verified) << path;
  }
  EXPECT_EQ(f.kube.token_reviews(), 0);
  auto state = f.guard.Admit(Req("GET", "/api/v1/state"));
  EXPECT_FALSE(state.pass);
  EXPECT_EQ(state.denied.status, 401);
  EXPECT_EQ(state.denied.headers.back(), "WWW-Authenticate: Bearer");
  auto ok = f.guard.Admit(Req("GET", "/api/v1/state", "Bearer viewer"));
  EXPECT_TRUE(ok.pass);
  EXPECT_TRUE(ok.verified);
  // Any service account may get /api/* (system:discovery): that must not open the page's data.
  auto other = f.guard.Admit(Req("GET", "/api/v1/state", "Bearer other"));
  EXPECT_FALSE(other.pass);
  EXPECT_EQ(other.denied.status, 403);
  EXPECT_NE(other.denied.body.find("cannot get resource \"services/proxy\" in API group \"\" in "
                                   "the namespace \"ops\""),
            std::string::npos)
      << other.denied.body;
}

TEST(WebGuard, CountsEachReason) {
  Fixture f;
  EXPECT_EQ(f.guard.Admit(Req("GET", "/metrics")).denied.status, 401);
  EXPECT_EQ(f.guard.Admit(Req("GET", "/metrics", "Bearer nobody")).denied.status, 401);
  EXPECT_EQ(f.guard.Admit(Req("GET", "/nodes", "Bearer other")).denied.status, 403);
  f.kube.FailNextTokenReviews({Status::Unavailable("connection refused")});
  auto failed = f.guard.Admit(Req("GET", "/metrics", "Bearer am"));
  EXPECT_EQ(failed.denied.status, 503);
  EXPECT_TRUE(f.guard.Admit(Req("GET", "/metrics", "Bearer viewer")).pass);
  const WebAccessCounters c = f.guard.Counters();
  EXPECT_EQ(c.unauthenticated, 2u);
  EXPECT_EQ(c.forbidden, 1u);
  EXPECT_EQ(c.review_failed, 1u);
}

TEST(WebGuard, WebhookWithTheSharedSecretOrAnAllowedToken) {
  Fixture f;
  auto secret = f.guard.Admit(Req("POST", "/webhook", "Bearer hook-secret"));
  EXPECT_TRUE(secret.pass);
  EXPECT_FALSE(secret.verified) << "the routes check the secret themselves";
  EXPECT_EQ(f.kube.token_reviews(), 0) << "the secret is not sent to the API server";

  auto am = f.guard.Admit(Req("POST", "/webhook", "Bearer am"));
  EXPECT_TRUE(am.pass);
  EXPECT_TRUE(am.verified);
  ASSERT_EQ(f.kube.access_reviews().size(), 1u);
  EXPECT_EQ(f.kube.access_reviews()[0].verb, "create");
  EXPECT_EQ(f.kube.access_reviews()[0].resource.name, "dynamic-scheduler");

  EXPECT_EQ(f.guard.Admit(Req("POST", "/webhook", "Bearer viewer")).denied.status, 403);
  EXPECT_EQ(f.guard.Admit(Req("POST", "/webhook", "Bearer wrong-secret")).denied.status, 401);
}

}  // namespace
}  // namespace ds
