#include "kube/access_review.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "kube/review_object.h"
#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_kube_api.h"

namespace ds {
namespace {

UserInfo Prometheus() {
  UserInfo u;
  u.username = "system:serviceaccount:monitoring:prometheus";
  u.uid = "0b7b";
  u.groups = {"system:serviceaccounts", "system:serviceaccounts:monitoring",
              "system:authenticated"};
  return u;
}

// ---- BearerToken ----

TEST(BearerToken, TakesTheTokenOfABearerHeaderOnly) {
  struct Case {
    const char* header;
    const char* token;
  } cases[] = {
      {"Bearer abc.def-ghi_", "abc.def-ghi_"},
      {"bearer abc", "abc"},  // the scheme in any case (RFC 7235)
      {"BEARER abc", "abc"},
      {"Bearer   abc  ", "abc"},  // spaces around the token
      {"Bearer\tabc", "abc"},
      {"", ""},
      {"Bearer", ""},
      {"Bearer ", ""},
      {"Bearer a b", ""},  // a token has no space inside
      {"Basic dXNlcjpwYXNz", ""},
      {"Bearerabc", ""},
      {"Token abc", ""},
      {"Bearer ab\x01", ""},  // control characters
  };
  for (const Case& c : cases) EXPECT_EQ(BearerToken(c.header), c.token) << "[" << c.header << "]";
}

// ---- wire forms ----

TEST(ReviewObject, TokenReviewRoundTrip) {
  EXPECT_EQ(EncodeTokenReview("t\"0k"),
            R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",)"
            R"("spec":{"token":"t\"0k"}})");
  auto r = DecodeTokenReview(
      R"({"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","metadata":{},)"
      R"("spec":{"token":"x"},"status":{"authenticated":true,"user":{"username":"alice",)"
      R"("uid":"u1","groups":["devs","system:authenticated"],)"
      R"("extra":{"scopes":["a","b"]}},"audiences":["https://kubernetes.default.svc"]}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->authenticated);
  EXPECT_EQ(r->user.username, "alice");
  EXPECT_EQ(r->user.uid, "u1");
  EXPECT_EQ(r->user.groups, (std::vector<std::string>{"devs", "system:authenticated"}));
  EXPECT_EQ(r->user.extra.at("scopes"), (std::vector<std::string>{"a", "b"}));

  // Not authenticated: the API server leaves authenticated out (omitempty) and says why.
  auto no = DecodeTokenReview(
      R"({"kind":"TokenReview","status":{"user":{},"error":"[invalid bearer token]"}})");
  ASSERT_TRUE(no.ok()) << no.status().ToString();
  EXPECT_FALSE(no->authenticated);
  EXPECT_EQ(no->error, "[invalid bearer token]");
  auto bare = DecodeTokenReview(R"({"kind":"TokenReview"})");
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(bare->authenticated);

  // A garbled answer is an error (the check could not be made), never a "no".
  for (const char* bad :
       {"", "[]", "{", R"({"kind":"Status"})", R"({"status":{"authenticated":"yes"}})",
        R"({"status":{"authenticated":true,"user":{"username":"a","groups":"g"}}})",
        R"({"status":{"authenticated":true,"user":{}}})"}) {
    auto d = DecodeTokenReview(bad);
    EXPECT_FALSE(d.ok()) << bad;
    if (!d.ok()) {
      EXPECT_EQ(d.status().code(), StatusCode::kUnavailable) << bad;
    }
  }
}

TEST(ReviewObject, SubjectAccessReviewRoundTrip) {
  AccessAttributes a{Prometheus(), "/metrics", "get"};
  a.user.extra["authentication.kubernetes.io/pod-name"] = {"prometheus-0"};
  EXPECT_EQ(EncodeSubjectAccessReview(a),
            R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",)"
            R"("spec":{"nonResourceAttributes":{"path":"/metrics","verb":"get"},)"
            R"("user":"system:serviceaccount:monitoring:prometheus","uid":"0b7b",)"
            R"("groups":["system:serviceaccounts","system:serviceaccounts:monitoring",)"
            R"("system:authenticated"],)"
            R"("extra":{"authentication.kubernetes.io/pod-name":["prometheus-0"]}}})");
  // Empty fields are left out, as the API's omitempty does.
  EXPECT_EQ(EncodeSubjectAccessReview({UserInfo{"u", "", {}, {}}, "/", "post"}),
            R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",)"
            R"("spec":{"nonResourceAttributes":{"path":"/","verb":"post"},"user":"u"}})");
  // A resource review: the Service's proxy subresource, empty group left out.
  AccessAttributes proxy{UserInfo{"u", "", {}, {}}, "", "get"};
  proxy.resource = {"ops", "", "v1", "services", "proxy", "dynamic-scheduler"};
  EXPECT_EQ(EncodeSubjectAccessReview(proxy),
            R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",)"
            R"("spec":{"resourceAttributes":{"namespace":"ops","verb":"get","version":"v1",)"
            R"("resource":"services","subresource":"proxy","name":"dynamic-scheduler"},)"
            R"("user":"u"}})");

  auto yes = DecodeSubjectAccessReview(
      R"({"kind":"SubjectAccessReview","status":{"allowed":true,"reason":)"
      R"("RBAC: allowed by ClusterRoleBinding \"m\" of ClusterRole \"m\" to User \"u\""}})");
  ASSERT_TRUE(yes.ok());
  EXPECT_TRUE(yes->Allows());
  auto no =
      DecodeSubjectAccessReview(R"({"kind":"SubjectAccessReview","status":{"allowed":false}})");
  ASSERT_TRUE(no.ok());
  EXPECT_FALSE(no->Allows());
  auto both = DecodeSubjectAccessReview(R"({"status":{"allowed":true,"denied":true}})");
  ASSERT_TRUE(both.ok());
  EXPECT_FALSE(both->Allows()) << "allowed and denied at once is a deny";
  EXPECT_FALSE(DecodeSubjectAccessReview(R"({"status":{"allowed":1}})").ok());
  EXPECT_FALSE(DecodeSubjectAccessReview(R"({"kind":"TokenReview"})").ok());
}

// ---- AccessReviewer ----

struct Fixture {
  FakeKubeApi kube;
  FakeClock clock;
  AccessReviewer reviewer{&kube, &clock};
  Fixture() {
    kube.AddToken("prom-token", Prometheus());
    kube.Grant("system:serviceaccount:monitoring:prometheus", "get", "/metrics");
  }
};

TEST(AccessReviewer, AllowsAnAcceptedTokenWithTheRight) {
  Fixture f;
  auto d = f.reviewer.Check("Bearer prom-token", "/metrics", "get");
  EXPECT_TRUE(d.allow);
  EXPECT_EQ(d.status, 200);
  EXPECT_STREQ(d.reason(), "");
  EXPECT_EQ(d.username, "system:serviceaccount:monitoring:prometheus");
  ASSERT_EQ(f.kube.access_reviews().size(), 1u);
  const AccessAttributes asked = f.kube.access_reviews()[0];
  EXPECT_EQ(asked.path, "/metrics");
  EXPECT_EQ(asked.verb, "get");
  EXPECT_EQ(asked.user, Prometheus()) << "the review asks about the whole user: uid and groups too";
}

TEST(AccessReviewer, NoTokenOrAnotherSchemeIs401WithoutAReview) {
  Fixture f;
  for (const char* header : {"", "Basic dXNlcjpwYXNz", "Bearer", "prom-token"}) {
    auto d = f.reviewer.Check(header, "/metrics", "get");
    EXPECT_FALSE(d.allow) << header;
    EXPECT_EQ(d.status, 401) << header;
    EXPECT_STREQ(d.reason(), "unauthenticated");
  }
  EXPECT_EQ(f.kube.token_reviews(), 0);
  // An overlong token is nobody's: not sent to the API server either.
  EXPECT_EQ(f.reviewer.Check("Bearer " + std::string(9000, 'a'), "/metrics", "get").status, 401);
  EXPECT_EQ(f.kube.token_reviews(), 0);
}

TEST(AccessReviewer, UnknownTokenIs401AndForbiddenPathIs403) {
  Fixture f;
  auto unknown = f.reviewer.Check("Bearer stolen", "/metrics", "get");
  EXPECT_EQ(unknown.status, 401);
  EXPECT_EQ(unknown.detail, "invalid bearer token") << "the API server's status.error, for the log";
  EXPECT_EQ(unknown.message.find("stolen"), std::string::npos) << "never echo the token";
  EXPECT_TRUE(f.kube.access_reviews().empty()) << "nobody's token: nothing to authorize";

  auto state = f.reviewer.Check("Bearer prom-token", "/api/v1/state", "get");
  EXPECT_EQ(state.status, 403);
  EXPECT_STREQ(state.reason(), "forbidden");
  EXPECT_EQ(state.message,
            "forbidden: User \"system:serviceaccount:monitoring:prometheus\" cannot get path "
            "\"/api/v1/state\"");
  // The verb is part of the right: get /metrics does not allow head or post on it.
  EXPECT_EQ(f.reviewer.Check("Bearer prom-token", "/metrics", "head").status, 403);
  EXPECT_EQ(f.reviewer.Check("Bearer prom-token", "/metrics", "post").status, 403);
}

TEST(AccessReviewer, TokenAnswersAreCachedTwoMinutesIfAcceptedTenSecondsIfNot) {
  Fixture f;
  ASSERT_TRUE(f.reviewer.Check("Bearer prom-token", "/metrics", "get").allow);
  f.clock.AdvanceSeconds(119);
  ASSERT_TRUE(f.reviewer.Check("Bearer prom-token", "/metrics", "get").allow);
  EXPECT_EQ(f.kube.token_reviews(), 1);
  // The token is revoked meanwhile: the cached answer still holds until it expires.
  f.kube.RemoveToken("prom-token");
  EXPECT_TRUE(f.reviewer.Check("Bearer prom-token", "/metrics", "get").allow);
  f.clock.AdvanceSeconds(1.5);
  EXPECT_EQ(f.reviewer.Check("Bearer prom-token", "/metrics", "get").status, 401);
  EXPECT_EQ(f.kube.token_reviews(), 2);

  // Not accepted: asked again after 10 s (a token created meanwhile works then).
  EXPECT_EQ(f.reviewer.Check("Bearer new-token", "/metrics", "get").status, 401);
  f.kube.AddToken("new-token", Prometheus());
  f.clock.AdvanceSeconds(9);
  EXPECT_EQ(f.reviewer.Check("Bearer new-token", "/metrics", "get").status, 401);
  EXPECT_EQ(f.kube.token_reviews(), 3);
  f.clock.AdvanceSeconds(1.5);
  EXPECT_TRUE(f.reviewer.Check("Bearer new-token", "/metrics", "get").allow);
  EXPECT_EQ(f.kube.token_reviews(), 4);
}

TEST(AccessReviewer, AccessAnswersAreCachedFiveMinutesIfAllowedThirtySecondsIfNot) {
  Fixture f;
  ASSERT_TRUE(f.reviewer.Check("Bearer prom-token", "/metrics", "get").allow);
  f.kube.RevokeGrants();
  f.clock.AdvanceSeconds(100);  // within the token's 2 min and the access' 5 min
  EXPECT_TRUE(f.reviewer.Check("Bearer prom-token", "/metrics", "get").allow);
  EXPECT_EQ(f.kube.access_reviews().size(), 1u);
  f.clock.AdvanceSeconds(201);  // 301 s: the access answer expired (and the token's)
  EXPECT_EQ(f.reviewer.Check("Bearer prom-token", "/metrics", "get").status, 403);
  EXPECT_EQ(f.kube.access_reviews().size(), 2u);

  // Denied: asked again after 30 s, when a new RoleBinding is seen.
  f.kube.Grant("system:authenticated", "get", "/metrics");
  f.clock.AdvanceSeconds(29);
  EXPECT_EQ(f.reviewer.Check("Bearer prom-token", "/metrics", "get").status, 403);
  EXPECT_EQ(f.kube.access_reviews().size(), 2u);
  f.clock.AdvanceSeconds(1.5);
  EXPECT_TRUE(f.reviewer.Check("Bearer prom-token", "/metrics", "get").allow);
  EXPECT_EQ(f.kube.access_reviews().size(), 3u);
}

TEST(AccessReviewer, AccessIsCachedPerUserPathAndVerb) {
  Fixture f;
  UserInfo alice{"alice", "a1", {"devs", "system:authenticated"}, {}};
  f.kube.AddToken("alice-token", alice);
  f.kube.AddToken("alice-other-token", alice);  // the same user with a second token
  f.kube.Grant("devs", "get", "/api/v1/*");
  EXPECT_TRUE(f.reviewer.Check("Bearer alice-token", "/api/v1/state", "get").allow);
  EXPECT_TRUE(f.reviewer.Check("Bearer alice-other-token", "/api/v1/state", "get").allow);
  EXPECT_EQ(f.kube.access_reviews().size(), 1u) << "the same user asks the same: one review";
  EXPECT_TRUE(f.reviewer.Check("Bearer alice-token", "/api/v1/history", "get").allow);
  EXPECT_EQ(f.reviewer.Check("Bearer alice-token", "/metrics", "get").status, 403);
  EXPECT_TRUE(f.reviewer.Check("Bearer prom-token", "/metrics", "get").allow);
  EXPECT_EQ(f.kube.access_reviews().size(), 4u);
  EXPECT_EQ(f.kube.token_reviews(), 3);
}

TEST(AccessReviewer, ApiErrorsAre503AndNeverCached) {
  Fixture f;
  // The controller's own service account may not create tokenreviews.
  f.kube.FailNextTokenReviews(
      {Status(StatusCode::kPermissionDenied,
              "create tokenreview: tokenreviews.authentication.k8s.io is forbidden: User "
              "\"system:serviceaccount:ds:dynamic-scheduler\" cannot create resource")
           .set_http_status(403),
       Status::Unavailable("create tokenreview: connection refused")});
  for (int i = 0; i < 2; ++i) {
    auto d = f.reviewer.Check("Bearer prom-token", "/metrics", "get");
    EXPECT_FALSE(d.allow);
    EXPECT_EQ(d.status, 503);
    EXPECT_STREQ(d.reason(), "review_failed");
    EXPECT_EQ(d.message.rfind("cannot check credentials: ", 0), 0u) << d.message;
    EXPECT_EQ(d.message.find("dynamic-scheduler"), std::string::npos)
        << "the API error (naming our service account) is for the log, not the caller";
    EXPECT_FALSE(d.detail.empty());
  }
  EXPECT_EQ(f.reviewer.TEST_token_entries(), 0u);
  // At once, without waiting out a TTL, the next request asks again and gets in.
  EXPECT_TRUE(f.reviewer.Check("Bearer prom-token", "/metrics", "get").allow);
  EXPECT_EQ(f.kube.token_reviews(), 3);

  // The same for the access review (the token answer stays cached).
  f.clock.AdvanceSeconds(301);
  f.kube.FailNextAccessReviews({Status::Unavailable("create subjectaccessreview: 503")});
  auto d = f.reviewer.Check("Bearer prom-token", "/metrics", "get");
  EXPECT_EQ(d.status, 503);
  EXPECT_EQ(d.username, "system:serviceaccount:monitoring:prometheus");
  EXPECT_TRUE(f.reviewer.Check("Bearer prom-token", "/metrics", "get").allow);
}

TEST(AccessReviewer, CachesAreBoundedAndEvictTheLeastRecentlyUsed) {
  FakeKubeApi kube;
  FakeClock clock;
  AccessReviewerOptions o;
  o.max_entries = 3;
  AccessReviewer reviewer(&kube, &clock, o);
  for (int i = 0; i < 5; ++i) {
    const std::string t = "t" + std::to_string(i);
    kube.AddToken(t, UserInfo{"user" + std::to_string(i), "", {}, {}});
    kube.Grant("user" + std::to_string(i), "get", "/metrics");
    EXPECT_TRUE(reviewer.Check("Bearer " + t, "/metrics", "get").allow);
    clock.AdvanceSeconds(1);
  }
  EXPECT_EQ(reviewer.TEST_token_entries(), 3u);
  EXPECT_EQ(reviewer.TEST_access_entries(), 3u);
  EXPECT_EQ(kube.token_reviews(), 5);
  // t4, t3, t2 are held; t0 was evicted first and is asked about again.
  EXPECT_TRUE(reviewer.Check("Bearer t4", "/metrics", "get").allow);
  EXPECT_EQ(kube.token_reviews(), 5);
  EXPECT_TRUE(reviewer.Check("Bearer t0", "/metrics", "get").allow);
  EXPECT_EQ(kube.token_reviews(), 6);
  EXPECT_EQ(reviewer.TEST_token_entries(), 3u);
  // Held now: t4 (used just before t0 came), t0, and t3; t2 went. A use keeps an entry: t3, used
  // now, outlives t4 when the next new token comes.
  EXPECT_TRUE(reviewer.Check("Bearer t3", "/metrics", "get").allow);
  EXPECT_EQ(kube.token_reviews(), 6);
  EXPECT_TRUE(reviewer.Check("Bearer t1", "/metrics", "get").allow);  // new: evicts t4
  EXPECT_EQ(kube.token_reviews(), 7);
  EXPECT_TRUE(reviewer.Check("Bearer t3", "/metrics", "get").allow);
  EXPECT_EQ(kube.token_reviews(), 7) << "t3 was kept";
  EXPECT_TRUE(reviewer.Check("Bearer t4", "/metrics", "get").allow);
  EXPECT_EQ(kube.token_reviews(), 8) << "t4 was the least recently used";
}

// A client making up a new token with each request gets its share of reviews, then 429 without an
// API call; another client, and a cached token from the same one, are not held back; the share
// comes back with time.
TEST(AccessReviewer, NewReviewsPerClientAreBounded) {
  Fixture f;
  const std::string attacker = "10.0.0.66", prometheus = "10.0.0.9";
  EXPECT_TRUE(
      f.reviewer.Check("Bearer prom-token", AccessAttributes{{}, "/metrics", "get"}, attacker)
          .allow);  // 2 of its 20: the token and the access
  int unauthenticated = 0, throttled = 0;
  for (int i = 0; i < 40; ++i) {
    auto d = f.reviewer.Check("Bearer made-up-" + std::to_string(i),
                              AccessAttributes{{}, "/metrics", "get"}, attacker);
    if (d.status == 401) ++unauthenticated;
    if (d.status == 429) {
      ++throttled;
      EXPECT_STREQ(d.reason(), "throttled");
    }
  }
  EXPECT_EQ(unauthenticated, 18);
  EXPECT_EQ(throttled, 22);
  EXPECT_EQ(f.kube.token_reviews(), 19) << "no review asked beyond the share";
  // Its cached token still works, and another address is not held back.
  EXPECT_TRUE(
      f.reviewer.Check("Bearer prom-token", AccessAttributes{{}, "/metrics", "get"}, attacker)
          .allow);
  EXPECT_EQ(
      f.reviewer.Check("Bearer made-up-x", AccessAttributes{{}, "/metrics", "get"}, prometheus)
          .status,
      401);
  // Five a second come back.
  f.clock.AdvanceSeconds(1);
  int asked = 0;
  for (int i = 0; i < 10; ++i)
    if (f.reviewer
            .Check("Bearer later-" + std::to_string(i), AccessAttributes{{}, "/metrics", "get"},
                   attacker)
            .status == 401)
      ++asked;
  EXPECT_EQ(asked, 5);
}

// With a slow API server, reviews under way are capped: a request whose token and access are
// cached is answered at once, never waits for a place; one more review is 429 at once.
TEST(AccessReviewer, ReviewsUnderWayAreCapped) {
  Fixture f;
  ASSERT_TRUE(f.reviewer.Check("Bearer prom-token", "/metrics", "get").allow);  // cached now
  std::atomic<bool> release{false};
  std::atomic<int> inside{0};
  f.kube.OnReview([&] {
    ++inside;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  std::vector<std::thread> slow;
  for (int i = 0; i < 2; ++i)
    slow.emplace_back([&, i] {
      f.reviewer.Check("Bearer slow-" + std::to_string(i), AccessAttributes{{}, "/metrics", "get"},
                       "10.0.0." + std::to_string(i + 1));
    });
  while (inside < 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto third =
      f.reviewer.Check("Bearer slow-3", AccessAttributes{{}, "/metrics", "get"}, "10.0.0.3");
  EXPECT_EQ(third.status, 429);
  EXPECT_TRUE(
      f.reviewer.Check("Bearer prom-token", AccessAttributes{{}, "/metrics", "get"}, "10.0.0.9")
          .allow)
      << "cached: no place needed";
  release = true;
  for (auto& t : slow) t.join();
  EXPECT_EQ(
      f.reviewer.Check("Bearer slow-4", AccessAttributes{{}, "/metrics", "get"}, "10.0.0.4").status,
      401)
      << "the places are given back";
}

TEST(AccessReviewer, ManyThreadsAtOnce) {
  Fixture f;
  f.kube.AddToken("other", UserInfo{"other", "", {}, {}});
  std::vector<std::thread> threads;
  std::atomic<int> allowed{0}, forbidden{0}, throttled{0}, other{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      const bool prom = t % 2 == 1;
      for (int i = 0; i < 200; ++i) {
        auto d = f.reviewer.Check(prom ? "Bearer prom-token" : "Bearer other", "/metrics", "get");
        if (d.status == 429) {
          ++throttled;  // a miss while max_concurrent_reviews were under way
        } else if (prom ? d.allow : d.status == 403) {
          ++(prom ? allowed : forbidden);
        } else {
          ++other;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(other.load(), 0) << "each token gets its own answer, or a 429";
  EXPECT_EQ(allowed.load() + forbidden.load() + throttled.load(), 1600);
  EXPECT_GT(allowed.load(), 0);
  EXPECT_GT(forbidden.load(), 0);
  // Once the answers are cached nothing is throttled: both are answered without a review.
  const int reviews = f.kube.token_reviews();
  EXPECT_TRUE(f.reviewer.Check("Bearer prom-token", "/metrics", "get").allow);
  EXPECT_EQ(f.reviewer.Check("Bearer other", "/metrics", "get").status, 403);
  EXPECT_EQ(f.kube.token_reviews(), reviews);
  // Concurrent misses may each have asked, but no more than once per thread.
  EXPECT_LE(f.kube.token_reviews(), 8);
}

}  // namespace
}  // namespace ds
