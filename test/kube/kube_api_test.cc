#include "kube/kube_api.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_http_transport.h"
#include "test/fakes/fake_kube_api.h"
#include "test/fakes/make_event.h"

namespace ds {
namespace {

constexpr char kServer[] = "https://api:6443";
constexpr char kNodeN1[] =
    R"({"kind":"Node","metadata":{"name":"n1","resourceVersion":"7","labels":{"k":"v"}}})";
constexpr char kLease[] =
    R"({"kind":"Lease","metadata":{"name":"ds-leader","namespace":"kube-system",)"
    R"("resourceVersion":"6"},)"
    R"("spec":{"holderIdentity":"me","leaseDurationSeconds":15,"leaseTransitions":1}})";

RestConfig Config() {
  RestConfig c;
  c.server = kServer;
  c.token = "t0ken";
  return c;
}

std::string KubeStatus(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":")" + message +
         R"(","reason":")" + reason + R"(","code":)" + std::to_string(code) + "}";
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// ---- ListNodes ----

TEST(HttpKubeApi, ListNodesUrlAndHeaders) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock, 12, "ds-test/1");
  t.AddResponse(200, R"({"kind":"NodeList","metadata":{"resourceVersion":"42","continue":"c2"},)"
                     R"("items":[{"metadata":{"name":"n1","resourceVersion":"41"}}]})");
  auto page = api.ListNodes("env=prod,tier in (a b)", 500, "tok/en+=");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->resource_version, "42");
  EXPECT_EQ(page->continue_token, "c2");
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->items[0].name, "n1");

  auto req = t.last_request();
  EXPECT_EQ(req.request.method, "GET");
  EXPECT_EQ(req.request.url,
            "https://api:6443/api/v1/nodes?limit=500"
            "&labelSelector=env%3Dprod%2Ctier%20in%20%28a%20b%29&continue=tok%2Fen%2B%3D");
  EXPECT_EQ(req.Header("Accept"), "application/json");
  EXPECT_EQ(req.Header("User-Agent"), "ds-test/1");
  EXPECT_TRUE(req.request.accept_compressed) << "a page of full Node objects is large";
  EXPECT_DOUBLE_EQ(req.request.timeout_seconds, 12);

  // Without selector and continue token neither parameter appears.
  t.AddResponse(200, R"({"metadata":{"resourceVersion":"42"},"items":[]})");
  ASSERT_TRUE(api.ListNodes("", 10, "").ok());
  EXPECT_EQ(t.last_request().request.url, "https://api:6443/api/v1/nodes?limit=10");
}

TEST(HttpKubeApi, ListPodsPagesTheClusterAndListsOneNodeWhole) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  const char* kEmpty = R"({"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[]})";
  t.AddResponse(200, kEmpty);
  ASSERT_TRUE(api.ListPods("", 500, "c/1").ok());
  EXPECT_EQ(t.last_request().request.url,
            "https://api:6443/api/v1/pods?resourceVersion=0&limit=500&continue=c%2F1");
  // One node's pods, whole: no limit parameter at all (limit=0 would be read as "no limit" by
  // the API server too, but says nothing a reader can trust).
  t.AddResponse(200, kEmpty);
  ASSERT_TRUE(api.ListPods("spec.nodeName=node-1", 0, "").ok());
  EXPECT_EQ(t.last_request().request.url,
            "https://api:6443/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3Dnode-1");
}

TEST(HttpKubeApi, EvictPodPostsAPolicyV1EvictionWithTheUidAsAPrecondition) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.AddResponse(201, R"({"kind":"Status","apiVersion":"v1","status":"Success","code":201})");
  EXPECT_EQ(api.EvictPod("shop", "big", "uid-1", {{"dynamic-scheduler.io/rule", "cpu"}}).kind,
            EvictionResult::Kind::kEvicted);
  auto req = t.last_request().request;
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, "https://api:6443/api/v1/namespaces/shop/pods/big/eviction");
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(req.body.c_str()).HasParseError()) << req.body;
  EXPECT_STREQ(d["apiVersion"].GetString(), "policy/v1");
  EXPECT_STREQ(d["kind"].GetString(), "Eviction");
  EXPECT_STREQ(d["metadata"]["name"].GetString(), "big");
  EXPECT_STREQ(d["deleteOptions"]["preconditions"]["uid"].GetString(), "uid-1");
  // Why it is asked for: on the Eviction's metadata, which admission and the audit log see.
  EXPECT_STREQ(d["metadata"]["annotations"]["dynamic-scheduler.io/rule"].GetString(), "cpu");
  // A pod re-created under that name since: the API server's precondition answers 409.
  t.AddResponse(409, KubeStatus(409, "Conflict", "Precondition failed: UID in precondition"));
  EvictionResult r = api.EvictPod("shop", "big", "uid-1", {});
  EXPECT_EQ(r.kind, EvictionResult::Kind::kError);
  EXPECT_EQ(r.status.http_status(), 409);
}

TEST(HttpKubeApi, CreateEventPostsAnEventsV1EventInTheObjectsNamespace) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.AddResponse(201, "{}");
  EventInfo e = MakeEvent("Node", "node-1", "", "RebalanceEviction", "Evicted shop/big", "Normal",
                          1795435200.5, "n-uid");
  e.action = "Evict";
  ASSERT_TRUE(api.CreateEvent(e).ok());
  auto req = t.last_request().request;
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, "https://api:6443/apis/events.k8s.io/v1/namespaces/default/events")
      << "a cluster-scoped object's events live in default, as the kubelet's";
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(req.body.c_str()).HasParseError()) << req.body;
  EXPECT_STREQ(d["apiVersion"].GetString(), "events.k8s.io/v1");
  EXPECT_EQ(std::string(d["metadata"]["name"].GetString()).rfind("node-1.18eaaacd5f08e5", 0), 0u)
      << d["metadata"]["name"].GetString();
  EXPECT_STREQ(d["regarding"]["kind"].GetString(), "Node");
  EXPECT_FALSE(d["regarding"].HasMember("namespace"));
  EXPECT_STREQ(d["reportingController"].GetString(), "dynamic-scheduler");
  EXPECT_EQ(std::string(d["reportingInstance"].GetString()).rfind("dynamic-scheduler-", 0), 0u);

  t.AddResponse(403, KubeStatus(403, "Forbidden", "events.events.k8s.io is forbidden"));
  EventInfo pod = MakeEvent("Pod", "big", "shop", "RebalanceEviction", "m", "Normal", 1, "");
  Status st = api.CreateEvent(pod);
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.ToString();
  EXPECT_EQ(t.last_request().request.url,
            "https://api:6443/apis/events.k8s.io/v1/namespaces/shop/events");
}

TEST(HttpKubeApi, PatchEventSeriesSendsAStrategicMergePatchOfTheSeries) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.AddResponse(200, "{}");
  EventInfo e = MakeEvent("Node", "node-1", "", "Marked", "m", "Normal", 1795435200, "n-uid");
  e.event_name = "node-1.abc";
  e.series_count = 3;
  e.series_last_wall = 1795435260.25;
  ASSERT_TRUE(api.PatchEventSeries(e).ok());
  auto req = t.last_request().request;
  EXPECT_EQ(req.method, "PATCH");
  EXPECT_EQ(req.url, "https://api:6443/apis/events.k8s.io/v1/namespaces/default/events/node-1.abc");
  EXPECT_NE(std::find(req.headers.begin(), req.headers.end(),
                      "Content-Type: application/strategic-merge-patch+json"),
            req.headers.end());
  EXPECT_EQ(req.body, R"({"series":{"count":3,"lastObservedTime":"2026-11-23T12:01:00.250000Z"}})");
  t.AddResponse(404, KubeStatus(404, "NotFound", "events.events.k8s.io \"node-1.abc\" not found"));
  EXPECT_EQ(api.PatchEventSeries(e).code(), StatusCode::kNotFound) << "the caller creates it";
}

TEST(HttpKubeApi, ReviewTokenPostsATokenReviewAndReadsItsStatus) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock, /*request_timeout_seconds=*/30);
  t.AddResponse(201, R"({"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1",)"
                     R"("metadata":{"creationTimestamp":null},"spec":{"token":"caller-tok"},)"
                     R"("status":{"authenticated":true,"user":{"username":"alice","uid":"u1",)"
                     R"("groups":["devs","system:authenticated"]}}})");
  auto r = api.ReviewToken("caller-tok");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->authenticated);
  EXPECT_EQ(r->user.username, "alice");
  EXPECT_EQ(r->user.groups, (std::vector<std::string>{"devs", "system:authenticated"}));

  auto req = t.last_request();
  EXPECT_EQ(req.request.method, "POST");
  EXPECT_EQ(req.request.url, "https://api:6443/apis/authentication.k8s.io/v1/tokenreviews");
  EXPECT_EQ(req.Header("Content-Type"), "application/json");
  EXPECT_EQ(req.Header("Authorization"), "Bearer t0ken")
      << "the controller's own credentials create the review; the caller's token is its body";
  EXPECT_DOUBLE_EQ(req.request.timeout_seconds, kReviewTimeoutSeconds)
      << "a web worker waits on it: not the 30 s of a LIST";
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(req.request.body.c_str()).HasParseError()) << req.request.body;
  EXPECT_STREQ(d["apiVersion"].GetString(), "authentication.k8s.io/v1");
  EXPECT_STREQ(d["kind"].GetString(), "TokenReview");
  EXPECT_STREQ(d["spec"]["token"].GetString(), "caller-tok");
  EXPECT_FALSE(d["spec"].HasMember("audiences")) << "the API server's own audience";

  // 200 is accepted as well; "not authenticated" is an answer.
  t.AddResponse(200, R"({"kind":"TokenReview","status":{"user":{},"error":"token expired"}})");
  auto no = api.ReviewToken("old");
  ASSERT_TRUE(no.ok()) << no.status().ToString();
  EXPECT_FALSE(no->authenticated);
  EXPECT_EQ(no->error, "token expired");

  // Our own service account without RBAC for tokenreviews: an error, not a "no".
  t.AddResponse(403, KubeStatus(403, "Forbidden",
                                "tokenreviews.authentication.k8s.io is forbidden: User "
                                "\\\"system:serviceaccount:ds:ds\\\" cannot create resource"));
  auto denied = api.ReviewToken("x");
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().http_status(), 403);
  EXPECT_EQ(denied.status().message().find("create tokenreview"), 0u) << denied.status().ToString();
  t.AddError(Status::Unavailable("connect: connection refused"));
  EXPECT_EQ(api.ReviewToken("x").status().code(), StatusCode::kUnavailable);
}

TEST(HttpKubeApi, ReviewAccessPostsANonResourceSubjectAccessReview) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock, /*request_timeout_seconds=*/5);
  t.AddResponse(201, R"({"kind":"SubjectAccessReview","status":{"allowed":true,)"
                     R"("reason":"RBAC: allowed by ClusterRoleBinding \"r\""}})");
  AccessAttributes a;
  a.user = UserInfo{"alice", "u1", {"devs", "system:authenticated"}, {{"scopes", {"s1"}}}};
  a.path = "/api/v1/state";
  a.verb = "get";
  auto r = api.ReviewAccess(a);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->Allows());
  EXPECT_EQ(r->reason, "RBAC: allowed by ClusterRoleBinding \"r\"");

  auto req = t.last_request();
  EXPECT_EQ(req.request.method, "POST");
  EXPECT_EQ(req.request.url, "https://api:6443/apis/authorization.k8s.io/v1/subjectaccessreviews");
  EXPECT_DOUBLE_EQ(req.request.timeout_seconds, 5) << "the shorter of the two";
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(req.request.body.c_str()).HasParseError()) << req.request.body;
  EXPECT_STREQ(d["apiVersion"].GetString(), "authorization.k8s.io/v1");
  EXPECT_STREQ(d["kind"].GetString(), "SubjectAccessReview");
  const auto& spec = d["spec"];
  EXPECT_STREQ(spec["nonResourceAttributes"]["path"].GetString(), "/api/v1/state");
  EXPECT_STREQ(spec["nonResourceAttributes"]["verb"].GetString(), "get");
  EXPECT_FALSE(spec.HasMember("resourceAttributes"));
  EXPECT_STREQ(spec["user"].GetString(), "alice");
  EXPECT_STREQ(spec["uid"].GetString(), "u1");
  ASSERT_EQ(spec["groups"].Size(), 2u);
  EXPECT_STREQ(spec["groups"][1].GetString(), "system:authenticated");
  EXPECT_STREQ(spec["extra"]["scopes"][0].GetString(), "s1");

  t.AddResponse(201, R"({"kind":"SubjectAccessReview","status":{"allowed":false}})");
  auto no = api.ReviewAccess(a);
  ASSERT_TRUE(no.ok());
  EXPECT_FALSE(no->Allows());
  t.AddResponse(500, KubeStatus(500, "InternalError", "etcd timeout"));
  EXPECT_EQ(api.ReviewAccess(a).status().code(), StatusCode::kUnavailable);
}

TEST(HttpKubeApi, ListNodesErrorComesFromStatusBody) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.AddResponse(403, KubeStatus(403, "Forbidden", "nodes is forbidden"));
  auto page = api.ListNodes("", 500, "");
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(page.status().http_status(), 403);
  EXPECT_NE(page.status().message().find("nodes is forbidden"), std::string::npos);
}

// ---- Authentication ----

TEST(HttpKubeApi, AuthorizationHeader) {
  struct Case {
    std::string token, username, password;
    std::optional<std::string> want;
  };
  std::vector<Case> cases = {
      {"t0ken", "", "", "Bearer t0ken"},
      {"", "admin", "secret", "Basic YWRtaW46c2VjcmV0"},
      {"t0ken", "admin", "secret", "Bearer t0ken"},  // a token wins over basic auth
      {"", "", "", std::nullopt},
  };
  for (const auto& c : cases) {
    FakeHttpTransport t;
    FakeClock clock;
    RestConfig config = Config();
    config.token = c.token;
    config.username = c.username;
    config.password = c.password;
    HttpKubeApi api(&t, config, &clock);
    t.AddResponse(200, R"({"metadata":{"resourceVersion":"1"},"items":[]})");
    ASSERT_TRUE(api.ListNodes("", 1, "").ok());
    EXPECT_EQ(t.last_request().Header("Authorization"), c.want) << c.token << c.username;
  }
}

// An exec plugin's token is sent; a 401 reruns the plugin and sends the request once more --
// once: a second 401 is the answer, not a loop of plugin runs.
TEST(HttpKubeApi, ExecCredentialRefreshedOnceAfter401) {
  FakeHttpTransport t;
  FakeClock clock;
  RestConfig config = Config();
  config.token = "";
  HttpKubeApi api(&t, config, &clock);
  int runs = 0;
  api.SetExecCredentialSource([&]() -> StatusOr<ExecCredential> {
    ExecCredential c;
    c.token = "exec-" + std::to_string(++runs);
    return c;
  });
  const std::string list = R"({"metadata":{"resourceVersion":"1"},"items":[]})";
  t.AddResponse(200, list);
  ASSERT_TRUE(api.ListNodes("", 1, "").ok());
  EXPECT_EQ(t.last_request().Header("Authorization"), "Bearer exec-1");

  t.AddResponse(401, KubeStatus(401, "Unauthorized", "Unauthorized"));
  t.AddResponse(200, R"({"kind":"Node","metadata":{"name":"n1","resourceVersion":"8"}})");
  NodeEdit edit;
  edit.label = {NodeEdit::Op::kSet, "status", "presure"};
  auto patched = api.PatchNode("n1", edit);
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  auto reqs = t.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[1].Header("Authorization"), "Bearer exec-1");
  EXPECT_EQ(reqs[2].Header("Authorization"), "Bearer exec-2");
  EXPECT_EQ(reqs[2].request.method, "PATCH");
  EXPECT_EQ(reqs[2].request.body, reqs[1].request.body);
  EXPECT_EQ(reqs[2].Header("Content-Type"), reqs[1].Header("Content-Type"));
  EXPECT_EQ(runs, 2);

  t.AddResponse(401, KubeStatus(401, "Unauthorized", "Unauthorized"));
  t.AddResponse(401, KubeStatus(401, "Unauthorized", "Unauthorized"));
  auto denied = api.ListNodes("", 1, "");
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(t.request_count(), 5u) << "one retry, no loop";
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(api.exec_runs(), 3);

  // A watch refused with 401 is retried the same way.
  t.AddResponse(401, KubeStatus(401, "Unauthorized", "Unauthorized"));
  t.AddResponse(200, "");
  EXPECT_TRUE(api.WatchNodes(
                     "", "1", 10, [](WatchEvent&&) {}, [] { return false; })
                  .ok());
  EXPECT_EQ(t.last_request().Header("Authorization"), "Bearer exec-4");
}

TEST(HttpKubeApi, ExecPluginFailureFailsTheRequestUnsent) {
  FakeHttpTransport t;
  FakeClock clock;
  RestConfig config = Config();
  config.token = "";
  HttpKubeApi api(&t, config, &clock);
  api.SetExecCredentialSource(
      []() -> StatusOr<ExecCredential> { return Status::Unavailable("plugin \"aws\": exit 1"); });
  auto r = api.ListNodes("", 1, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("plugin \"aws\": exit 1"), std::string::npos);
  EXPECT_EQ(t.request_count(), 0u);
}

// A plugin that answers with a client certificate gets a transport that presents it (and keeps
// the kubeconfig's CA); the same certificate reuses that transport.
TEST(HttpKubeApi, ExecClientCertificateGetsItsOwnTransport) {
  FakeHttpTransport unused;
  FakeClock clock;
  RestConfig config = Config();
  config.token = "";
  config.tls.ca_pem = "CA";
  HttpKubeApi api(&unused, config, &clock);
  std::vector<TlsOptions> made;
  FakeHttpTransport* cert_transport = nullptr;
  int runs = 0;
  api.SetExecCredentialSource(
      [&]() -> StatusOr<ExecCredential> {
        ExecCredential c;
        c.client_cert_pem = "-----BEGIN CERTIFICATE-----" + std::to_string(++runs);
        c.client_key_pem = "-----BEGIN PRIVATE KEY-----";
        return c;
      },
      [&](const TlsOptions& tls) -> std::unique_ptr<HttpTransport> {
        made.push_back(tls);
        auto t = std::make_unique<FakeHttpTransport>();
        t->SetHandler([](const HttpRequest&) -> StatusOr<HttpResponse> {
          HttpResponse r;
          r.status = 200;
          r.body = R"({"metadata":{"resourceVersion":"1"},"items":[]})";
          return r;
        });
        cert_transport = t.get();
        return t;
      });
  ASSERT_TRUE(api.ListNodes("", 1, "").ok());
  ASSERT_TRUE(api.ListNodes("", 1, "").ok());
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0].client_cert_pem, "-----BEGIN CERTIFICATE-----1");
  EXPECT_EQ(made[0].client_key_pem, "-----BEGIN PRIVATE KEY-----");
  EXPECT_EQ(made[0].ca_pem, "CA");
  ASSERT_NE(cert_transport, nullptr);
  EXPECT_EQ(cert_transport->request_count(), 2u);
  EXPECT_FALSE(cert_transport->last_request().Header("Authorization").has_value());
  EXPECT_EQ(unused.request_count(), 0u);
}

TEST(HttpKubeApi, TokenFileIsReReadAfterSixtySeconds) {
  const std::string path = testing::TempDir() + "/kube_api_test_token";
  WriteFile(path, "first\n");
  FakeHttpTransport t;
  t.SetHandler([](const HttpRequest&) -> StatusOr<HttpResponse> {
    HttpResponse r;
    r.status = 200;
    r.body = R"({"metadata":{"resourceVersion":"1"},"items":[]})";
    return r;
  });
  FakeClock clock;
  RestConfig config = Config();
  config.token = "";
  config.token_file = path;
  HttpKubeApi api(&t, config, &clock);
  auto auth = [&] {
    EXPECT_TRUE(api.ListNodes("", 1, "").ok());
    return t.last_request().Header("Authorization").value_or("(none)");
  };

  EXPECT_EQ(auth(), "Bearer first") << "trailing newline trimmed";
  WriteFile(path, "second\n");  // the kubelet rotated the token
  clock.AdvanceSeconds(59);
  EXPECT_EQ(auth(), "Bearer first") << "not re-read within a minute";
  clock.AdvanceSeconds(2);
  EXPECT_EQ(auth(), "Bearer second") << "re-read once a minute has passed";

  WriteFile(path, "");  // mid-rotation the file can be briefly empty
  clock.AdvanceSeconds(61);
  EXPECT_EQ(auth(), "Bearer second") << "an empty file keeps the old token";
  WriteFile(path, "third");
  clock.AdvanceSeconds(61);
  EXPECT_EQ(auth(), "Bearer third");
  std::remove(path.c_str());
}

// ---- WatchNodes ----

std::string Event(const std::string& type, const std::string& name, const std::string& rv) {
  if (type == "BOOKMARK")
    return R"({"type":"BOOKMARK","object":{"kind":"Node","metadata":{"resourceVersion":")" + rv +
           "\"}}}\n";
  return R"({"type":")" + type + R"(","object":{"kind":"Node","metadata":{"name":")" + name +
         R"(","resourceVersion":")" + rv + R"(","labels":{"zone":"a"}}}})" + "\n";
}

struct WatchRun {
  Status status;
  std::vector<WatchEvent> events;
};

WatchRun Watch(
    HttpKubeApi* api, const std::function<bool()>& cancelled = [] { return false; }) {
  WatchRun run;
  run.status = api->WatchNodes(
      "", "100", 300, [&](WatchEvent&& ev) { run.events.push_back(std::move(ev)); }, cancelled);
  return run;
}

TEST(HttpKubeApi, WatchNodesUrlAndTimeouts) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  api.SetWatchIdleTimeout(20);
  t.AddResponse(200, "");
  Status st = api.WatchNodes(
      "role=worker", "12/3", 300, [](WatchEvent&&) {}, [] { return false; });
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto req = t.last_request();
  EXPECT_TRUE(req.streamed);
  EXPECT_EQ(req.request.method, "GET");
  EXPECT_EQ(req.request.url,
            "https://api:6443/api/v1/nodes?watch=1&allowWatchBookmarks=true"
            "&resourceVersion=12%2F3&timeoutSeconds=300&labelSelector=role%3Dworker");
  EXPECT_EQ(req.Header("Authorization"), "Bearer t0ken");
  EXPECT_DOUBLE_EQ(req.request.timeout_seconds, 360) << "the server's timeout plus a minute";
  EXPECT_DOUBLE_EQ(req.request.idle_timeout_seconds, 20);
}

TEST(HttpKubeApi, WatchEventsDecodedAcrossChunkBoundaries) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.SetStreamChunkBytes(7);  // every event is cut mid-line, some several times
  t.AddResponse(200, Event("ADDED", "n1", "101") + Event("MODIFIED", "n1", "102") +
                         Event("BOOKMARK", "", "150") + Event("DELETED", "n2", "151"));
  WatchRun run = Watch(&api);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  ASSERT_EQ(run.events.size(), 4u);
  EXPECT_EQ(run.events[0].type, WatchEventType::kAdded);
  EXPECT_EQ(run.events[0].node.name, "n1");
  EXPECT_EQ(run.events[0].node.labels, (Labels{{"zone", "a"}}));
  EXPECT_EQ(run.events[1].type, WatchEventType::kModified);
  EXPECT_EQ(run.events[1].node.resource_version, "102");
  EXPECT_EQ(run.events[2].type, WatchEventType::kBookmark);
  EXPECT_EQ(run.events[2].node.resource_version, "150");
  EXPECT_EQ(run.events[3].type, WatchEventType::kDeleted);
  EXPECT_EQ(run.events[3].node.name, "n2");
}

TEST(HttpKubeApi, WatchErrorEventExpiredEndsWatch) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.SetStreamChunkBytes(7);
  t.AddResponse(200, Event("ADDED", "n1", "101") + R"({"type":"ERROR","object":)" +
                         KubeStatus(410, "Expired", "too old resource version: 100 (140)") + "}\n" +
                         Event("ADDED", "n9", "200"));
  WatchRun run = Watch(&api);
  EXPECT_EQ(run.status.code(), StatusCode::kExpired) << run.status.ToString();
  ASSERT_EQ(run.events.size(), 1u) << "events before the ERROR are delivered, none after";
  EXPECT_EQ(run.events[0].node.name, "n1");
}

TEST(HttpKubeApi, WatchPartialLastLineIsUnavailable) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.SetStreamChunkBytes(7);
  std::string cut = Event("MODIFIED", "n2", "102");
  t.AddResponse(200, Event("ADDED", "n1", "101") + cut.substr(0, cut.size() / 2));
  WatchRun run = Watch(&api);
  EXPECT_EQ(run.status.code(), StatusCode::kUnavailable) << run.status.ToString();
  ASSERT_EQ(run.events.size(), 1u);
  EXPECT_EQ(run.events[0].node.name, "n1");
}

TEST(HttpKubeApi, WatchNon200StatusComesFromBody) {
  struct Case {
    int http;
    std::string reason;
    StatusCode code;
  };
  std::vector<Case> cases = {
      {410, "Expired", StatusCode::kExpired},
      {403, "Forbidden", StatusCode::kPermissionDenied},
      {429, "TooManyRequests", StatusCode::kTooManyRequests},
  };
  for (const auto& c : cases) {
    FakeHttpTransport t;
    FakeClock clock;
    HttpKubeApi api(&t, Config(), &clock);
    t.AddResponse(c.http, KubeStatus(c.http, c.reason, "watch refused"), {{"retry-after", "3"}});
    WatchRun run = Watch(&api);
    EXPECT_EQ(run.status.code(), c.code) << run.status.ToString();
    EXPECT_EQ(run.status.http_status(), c.http);
    EXPECT_NE(run.status.message().find("watch refused"), std::string::npos);
    EXPECT_EQ(run.status.retry_after_seconds(), 3);
    EXPECT_TRUE(run.events.empty());
  }
}

TEST(HttpKubeApi, WatchCancelled) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.SetStreamChunkBytes(7);
  t.AddResponse(200, Event("ADDED", "n1", "101") + Event("ADDED", "n2", "102"));
  int polls = 0;
  WatchRun run = Watch(&api, [&] { return ++polls > 3; });
  EXPECT_EQ(run.status.code(), StatusCode::kCancelled) << run.status.ToString();
  EXPECT_TRUE(run.events.empty()) << "cancelled before the first line was complete";
}

// ---- PatchNode ----

TEST(HttpKubeApi, PatchSetsAndRemovesWithMergePatch) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock, 9);
  t.AddResponse(200, kNodeN1);
  t.AddResponse(200, R"({"metadata":{"name":"n1","resourceVersion":"8"}})");
  NodeEdit set_edit;
  set_edit.label = {NodeEdit::Op::kSet, "k", "v"};
  auto set = api.PatchNode("n1", set_edit);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->name, "n1");
  EXPECT_EQ(set->labels, (Labels{{"k", "v"}})) << "the node comes from the PATCH response";
  NodeEdit remove_edit;
  remove_edit.label = {NodeEdit::Op::kRemove, "k", "v"};
  auto removed = api.PatchNode("n1", remove_edit);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_TRUE(removed->labels.empty());

  auto reqs = t.sent_requests();
  ASSERT_EQ(reqs.size(), 2u);
  for (const auto& r : reqs) {
    EXPECT_EQ(r.request.method, "PATCH");
    EXPECT_EQ(r.request.url, "https://api:6443/api/v1/nodes/n1");
    EXPECT_DOUBLE_EQ(r.request.timeout_seconds, 9);
    EXPECT_FALSE(r.had_send_if);
  }
  EXPECT_EQ(reqs[0].Header("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(reqs[0].request.body, R"({"metadata":{"labels":{"k":"v"}}})");
  EXPECT_EQ(reqs[1].Header("Content-Type"), "application/json-patch+json");
  EXPECT_EQ(reqs[1].request.body, R"([{"op":"test","path":"/metadata/labels/k","value":"v"},)"
                                  R"({"op":"remove","path":"/metadata/labels/k"}])")
      << "a removal only if the value is still ours";
}

TEST(HttpKubeApi, FailedTestIs422InvalidArgument) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  // What kube-apiserver answers when a JSON Patch test fails.
  t.AddResponse(422, KubeStatus(422, "Invalid",
                                "the server rejected our request due to an error "
                                "in our request"));
  NodeEdit e;
  e.label = {NodeEdit::Op::kRemove, "k", "v"};
  auto r = api.PatchNode("n1", e);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().http_status(), 422);
  EXPECT_FALSE(r.status().IsRetryable());
}

// Taint mode reads a node afresh after a 409: GET /api/v1/nodes/NAME, decoded with its taints
// and resourceVersion; a node deleted meanwhile is kNotFound.
TEST(HttpKubeApi, GetNodeReadsOneNode) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.AddResponse(200, R"({"kind":"Node","metadata":{"name":"n/1","resourceVersion":"77"},)"
                     R"("spec":{"taints":[{"key":"gpu","effect":"NoSchedule"}]}})");
  auto n = api.GetNode("n/1");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->resource_version, "77");
  EXPECT_EQ(n->taints, (std::vector<Taint>{{"gpu", "", "NoSchedule"}}));
  EXPECT_EQ(t.last_request().request.method, "GET");
  EXPECT_EQ(t.last_request().request.url, std::string(kServer) + "/api/v1/nodes/n%2F1");
  t.AddResponse(404, KubeStatus(404, "NotFound", "nodes \"n1\" not found"));
  EXPECT_EQ(api.GetNode("n1").status().code(), StatusCode::kNotFound);
}

TEST(HttpKubeApi, GetWorkloadReadsTheAppsObjectOfItsKind) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock, 9);
  t.AddResponse(200, R"({"kind":"StatefulSet","apiVersion":"apps/v1","metadata":{"name":"db/0",)"
                     R"("namespace":"shop","generation":2},"spec":{"replicas":3},)"
                     R"("status":{"observedGeneration":2,"replicas":3,"readyReplicas":2}})");
  auto w = api.GetWorkload("shop", "StatefulSet", "db/0");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->Key(), "shop/StatefulSet/db/0");
  EXPECT_TRUE(w->RolloutInProgress()) << "1 pod not ready";
  EXPECT_EQ(t.last_request().request.method, "GET");
  EXPECT_EQ(t.last_request().request.url,
            std::string(kServer) + "/apis/apps/v1/namespaces/shop/statefulsets/db%2F0");
  EXPECT_DOUBLE_EQ(t.last_request().request.timeout_seconds, 9);
  EXPECT_EQ(t.last_request().Header("Authorization"), "Bearer t0ken");

  for (const auto& [kind, resource] :
       std::vector<std::pair<std::string, std::string>>{{"Deployment", "deployments"},
                                                        {"ReplicaSet", "replicasets"},
                                                        {"DaemonSet", "daemonsets"}}) {
    t.AddResponse(200, R"({"kind":")" + kind + R"(","metadata":{"name":"w","namespace":"a"}})");
    auto got = api.GetWorkload("a", kind, "w");
    ASSERT_TRUE(got.ok()) << kind << ": " << got.status().ToString();
    EXPECT_EQ(got->kind, kind);
    EXPECT_EQ(t.last_request().request.url,
              std::string(kServer) + "/apis/apps/v1/namespaces/a/" + resource + "/w");
  }

  // Errors map as GetNode's do: 404 is kNotFound, 403 (no RBAC on apps) says who refused.
  t.AddResponse(404, KubeStatus(404, "NotFound", R"(deployments.apps \"gone\" not found)"));
  auto gone = api.GetWorkload("a", "Deployment", "gone");
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound) << gone.status().ToString();
  EXPECT_NE(gone.status().message().find("get Deployment a/gone"), std::string::npos)
      << gone.status().ToString();
  t.AddResponse(403, KubeStatus(403, "Forbidden", "forbidden"));
  EXPECT_EQ(api.GetWorkload("a", "Deployment", "w").status().http_status(), 403);
  // A body that is not the kind asked for is malformed, not a workload of another kind.
  t.AddResponse(200, R"({"kind":"DaemonSet","metadata":{"name":"w","namespace":"a"}})");
  EXPECT_FALSE(api.GetWorkload("a", "Deployment", "w").ok());

  // A kind that is not an apps workload is refused before anything is sent.
  const size_t sent = t.request_count();
  EXPECT_EQ(api.GetWorkload("a", "Job", "w").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.request_count(), sent);
}

TEST(HttpKubeApi, ListAutoscalersListsTheNamespacesHpas) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.AddResponse(200, R"({"kind":"HorizontalPodAutoscalerList","apiVersion":"autoscaling/v2",)"
                     R"("metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"web",)"
                     R"("namespace":"shop"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1",)"
                     R"("kind":"Deployment","name":"web"},"maxReplicas":9},)"
                     R"("status":{"currentReplicas":5,"desiredReplicas":3}}]})");
  auto list = api.ListAutoscalers("shop");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_TRUE((*list)[0].ScalingDown());
  EXPECT_EQ(t.last_request().request.url,
            std::string(kServer) + "/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers");
  t.AddResponse(503, KubeStatus(503, "ServiceUnavailable", "etcd"), {{"retry-after", "3"}});
  auto down = api.ListAutoscalers("shop");
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable) << down.status().ToString();
  EXPECT_DOUBLE_EQ(down.status().retry_after_seconds(), 3);
}

// The fake serves what a test puts in, records each read, and fails on request.
TEST(FakeKubeApi, ServesWorkloadsAndAutoscalers) {
  FakeKubeApi api;
  WorkloadStatus d;
  d.kind = "Deployment";
  d.ns = "shop";
  d.name = "web";
  api.AddWorkload(d);
  Autoscaler a;
  a.ns = "shop";
  a.name = "web";
  a.target_kind = "Deployment";
  a.target_name = "web";
  api.AddAutoscaler(a);
  a.ns = "other";
  api.AddAutoscaler(a);

  ASSERT_TRUE(api.GetWorkload("shop", "Deployment", "web").ok());
  EXPECT_EQ(api.GetWorkload("shop", "Deployment", "api").status().code(), StatusCode::kNotFound);
  api.FailNextWorkloadGets({Status::Unavailable("apps down")});
  EXPECT_EQ(api.GetWorkload("shop", "Deployment", "web").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(api.workload_gets(),
            (std::vector<std::string>{"shop/Deployment/web", "shop/Deployment/api",
                                      "shop/Deployment/web"}));
  EXPECT_EQ(api.GetWorkload("shop", "Job", "x").status().code(), StatusCode::kInvalidArgument);

  auto list = api.ListAutoscalers("shop");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].ns, "shop");
  api.FailNextAutoscalerLists({Status::Unavailable("down")});
  EXPECT_FALSE(api.ListAutoscalers("shop").ok());
  api.RemoveAutoscaler("shop", "web");
  EXPECT_TRUE(api.ListAutoscalers("shop")->empty());
  EXPECT_EQ(api.autoscaler_lists(), (std::vector<std::string>{"shop", "shop", "shop"}));
}

TEST(HttpKubeApi, PatchLabelValueWithQuotesStaysValidJson) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.AddResponse(200, kNodeN1);
  const std::string key = "example.com/we\"ird";
  const std::string value = "a\"b\\c\n}";
  NodeEdit e;
  e.label = {NodeEdit::Op::kSet, key, value};
  ASSERT_TRUE(api.PatchNode("n1", e).ok());
  const std::string body = t.last_request().request.body;
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  ASSERT_FALSE(doc.HasParseError()) << body;
  const auto& labels = doc["metadata"]["labels"];
  ASSERT_TRUE(labels.IsObject()) << body;
  ASSERT_EQ(labels.MemberCount(), 1u) << body;
  EXPECT_EQ(std::string(labels.MemberBegin()->name.GetString()), key);
  EXPECT_EQ(std::string(labels.MemberBegin()->value.GetString()), value);
}

TEST(HttpKubeApi, PatchNotSentWhenSendIfSaysNo) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.AddResponse(200, kNodeN1);
  NodeEdit e;
  e.label = {NodeEdit::Op::kSet, "k", "v"};
  int asked = 0;
  auto r = api.PatchNode("n1", e, [&] {
    ++asked;
    return false;
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(asked, 1);
  EXPECT_TRUE(t.sent_requests().empty());
  ASSERT_EQ(t.request_count(), 1u);
  EXPECT_TRUE(t.last_request().had_send_if) << "the gate reached the transport";
  EXPECT_FALSE(t.last_request().send_if_result);
  EXPECT_EQ(t.pending(), 1u) << "no answer consumed";

  ASSERT_TRUE(api.PatchNode("n1", e, [] { return true; }).ok());
  EXPECT_EQ(t.sent_requests().size(), 1u);
}

TEST(HttpKubeApi, PatchErrors) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  NodeEdit e;
  e.label = {NodeEdit::Op::kSet, "k", "v"};
  t.AddResponse(404, KubeStatus(404, "NotFound", "nodes \\\"gone\\\" not found"));
  auto missing = api.PatchNode("gone", e);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  EXPECT_EQ(missing.status().http_status(), 404);

  t.AddResponse(429, KubeStatus(429, "TooManyRequests", "slow down"), {{"retry-after", "7"}});
  auto throttled = api.PatchNode("n1", e);
  EXPECT_EQ(throttled.status().code(), StatusCode::kTooManyRequests);
  EXPECT_EQ(throttled.status().retry_after_seconds(), 7);

  t.AddError(Status::Unavailable("PATCH https://api:6443/api/v1/nodes/n1: timeout"));
  auto lost = api.PatchNode("n1", e);
  EXPECT_EQ(lost.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(lost.status().http_status(), 0);
}

// ---- Lease ----

TEST(HttpKubeApi, GetLease) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.AddResponse(200, kLease);
  auto lease = api.GetLease("kube-system", "ds-leader", 4);
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  EXPECT_EQ(lease->holder_identity, "me");
  EXPECT_EQ(lease->resource_version, "6");
  auto req = t.last_request();
  EXPECT_EQ(req.request.method, "GET");
  EXPECT_EQ(req.request.url,
            "https://api:6443/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ds-leader");
  EXPECT_DOUBLE_EQ(req.request.timeout_seconds, 4) << "the caller's timeout, not the default";

  t.AddResponse(404, KubeStatus(404, "NotFound", "leases \\\"ds-leader\\\" not found"));
  EXPECT_EQ(api.GetLease("kube-system", "ds-leader", 4).status().code(), StatusCode::kNotFound);
}

TEST(HttpKubeApi, WriteLeaseCreatesOrReplaces) {
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  LeaseRecord record;
  record.holder_identity = "me";
  record.lease_duration_seconds = 15;

  t.AddResponse(201, kLease);
  auto created = api.WriteLease("kube-system", "ds-leader", record, 4);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->resource_version, "6");
  auto post = t.last_request();
  EXPECT_EQ(post.request.method, "POST");
  EXPECT_EQ(post.request.url,
            "https://api:6443/apis/coordination.k8s.io/v1/namespaces/kube-system/leases");
  EXPECT_EQ(post.Header("Content-Type"), "application/json");
  EXPECT_EQ(post.request.body, EncodeLease("kube-system", "ds-leader", record));
  EXPECT_DOUBLE_EQ(post.request.timeout_seconds, 4);

  record.resource_version = "6";
  t.AddResponse(200, kLease);
  ASSERT_TRUE(api.WriteLease("kube-system", "ds-leader", record, 4).ok());
  auto put = t.last_request();
  EXPECT_EQ(put.request.method, "PUT");
  EXPECT_EQ(put.request.url,
            "https://api:6443/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ds-leader");
  EXPECT_NE(put.request.body.find(R"("resourceVersion":"6")"), std::string::npos)
      << "the precondition travels in the body";

  t.AddResponse(409, KubeStatus(409, "Conflict", "the object has been modified"));
  auto conflict = api.WriteLease("kube-system", "ds-leader", record, 4);
  EXPECT_EQ(conflict.status().code(), StatusCode::kConflict) << conflict.status().ToString();
  EXPECT_EQ(conflict.status().http_status(), 409);
}

// A PUT replaces the object: it must carry back what the GET returned (labels, annotations,
// ownerReferences, spec fields newer than this code), with only the election fields changed.
TEST(HttpKubeApi, ALeaseWithAnOverlongNumberIsRefusedBeforeParsing) {
  // RapidJSON's full-precision parser reads out of bounds on such a number (UBSan caught it in
  // the fuzzer); no Lease the API server writes holds one.
  const std::string meta = R"({"metadata":{"name":"l","resourceVersion":"1"},"spec":)";
  auto r = DecodeLease(meta + R"({"holderIdentity":"a","x":-0.)" + std::string(600, '0') + "16}}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "lease: a number longer than 40 characters");
  // Short, but its digits reach below 1e-300: the same parser indexes its table out of bounds.
  auto tiny =
      DecodeLease(meta + R"({"holderIdentity":"a","x":0.8888888888888888888888888880E-335}})");
  ASSERT_FALSE(tiny.ok());
  EXPECT_EQ(tiny.status().message(), "lease: a number beyond 1e300 or 1e-300");
  auto huge = DecodeLease(meta + R"({"holderIdentity":"a","x":12E300}})");
  EXPECT_FALSE(huge.ok());
  // Digits inside a string are no number, escaped quotes included.
  auto ok = DecodeLease(meta + R"({"holderIdentity":"a\")" + std::string(600, '1') +
                        R"(","leaseDurationSeconds":15}})");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->lease_duration_seconds, 15);
}

TEST(HttpKubeApi, WriteLeasePutsTheObjectAsRead) {
  constexpr char kDecorated[] =
      R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"ds-leader",)"
      R"("namespace":"kube-system","resourceVersion":"6","labels":{"team":"infra"},)"
      R"("annotations":{"a":"b"},"ownerReferences":[{"kind":"Deployment","name":"ds"}]},)"
      R"("spec":{"holderIdentity":"other","leaseDurationSeconds":15,"leaseTransitions":1,)"
      R"("strategy":"OldestEmulationVersion","preferredHolder":"me"}})";
  FakeHttpTransport t;
  FakeClock clock;
  HttpKubeApi api(&t, Config(), &clock);
  t.AddResponse(200, kDecorated);
  auto read = api.GetLease("kube-system", "ds-leader", 4);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->object, kDecorated) << "the record keeps the object as read";
  LeaseRecord record = *read;
  record.holder_identity = "me";
  record.renew_time = "2026-11-22T10:00:00.000000Z";
  record.lease_transitions = 2;
  t.AddResponse(200, kDecorated);
  ASSERT_TRUE(api.WriteLease("kube-system", "ds-leader", record, 4).ok());
  auto put = t.last_request();
  EXPECT_EQ(put.request.method, "PUT");
  rapidjson::Document d;
  d.Parse(put.request.body.c_str());
  ASSERT_TRUE(d.IsObject()) << put.request.body;
  const auto& meta = d["metadata"];
  const auto& spec = d["spec"];
  EXPECT_STREQ(meta["resourceVersion"].GetString(), "6");
  ASSERT_TRUE(meta.HasMember("labels") && meta.HasMember("annotations") &&
              meta.HasMember("ownerReferences"))
      << put.request.body;
  EXPECT_STREQ(meta["labels"]["team"].GetString(), "infra");
  EXPECT_STREQ(meta["annotations"]["a"].GetString(), "b");
  EXPECT_STREQ(meta["ownerReferences"][0]["name"].GetString(), "ds");
  ASSERT_TRUE(spec.HasMember("strategy") && spec.HasMember("preferredHolder")) << put.request.body;
  EXPECT_STREQ(spec["strategy"].GetString(), "OldestEmulationVersion");
  EXPECT_STREQ(spec["preferredHolder"].GetString(), "me");
  EXPECT_STREQ(spec["holderIdentity"].GetString(), "me");
  EXPECT_STREQ(spec["renewTime"].GetString(), "2026-11-22T10:00:00.000000Z");
  EXPECT_EQ(spec["leaseTransitions"].GetInt(), 2);
  EXPECT_EQ(spec["leaseDurationSeconds"].GetInt(), 15);
}

}  // namespace
}  // namespace ds
