#include "promql/prometheus_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test/fakes/fake_http_transport.h"

namespace ds {
namespace {

constexpr char kBase[] = "http://prom:9090";

// Three series with more labels than node matching keeps.
constexpr char kVector[] =
    R"({"status":"success","data":{"resultType":"vector","result":[)"
    R"({"metric":{"__name__":"cpu","node":"n1","job":"j"},"value":[1795303219.437,"10"]},)"
    R"({"metric":{"__name__":"cpu","node":"n2","job":"j"},"value":[1795303219.437,"20.5"]},)"
    R"({"metric":{"__name__":"cpu","node":"n3","job":"j"},"value":[1795303219.437,"NaN"]}]}})";

// The same series followed by "warnings": the fast scanner streams all three before it meets
// the member it does not handle and declines.
constexpr char kVectorWithWarnings[] =
    R"({"status":"success","data":{"resultType":"vector","result":[)"
    R"({"metric":{"__name__":"cpu","node":"n1","job":"j"},"value":[1795303219.437,"10"]},)"
    R"({"metric":{"__name__":"cpu","node":"n2","job":"j"},"value":[1795303219.437,"20.5"]},)"
    R"({"metric":{"__name__":"cpu","node":"n3","job":"j"},"value":[1795303219.437,"NaN"]}]},)"
    R"("warnings":["remote_read: connection refused"]})";

// Keeps what reaches it; Reset forgets, as the SampleSink contract says.
class RecordingSink : public SampleSink {
 public:
  void Reset() override {
    names.clear();
    values.clear();
    ++resets;
  }
  void Add(const LabelViews& labels, double value) override {
    std::string all;
    for (const auto& [k, v] : labels) all += std::string(k) + "=" + std::string(v) + ";";
    names.push_back(all);
    values.push_back(value);
  }
  std::vector<std::string> names;  // "k=v;" per label, in order
  std::vector<double> values;
  int resets = 0;
};

TEST(HttpPrometheusClient, GetCarriesEncodedQueryAndTimeout) {
  FakeHttpTransport t;
  t.AddResponse(200, kVector);
  HttpPrometheusClient client(&t, kBase, 10);
  auto r = client.Query(R"(rate(x{a="b c"}[5m]) > 0.5)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(t.request_count(), 1u);
  auto req = t.last_request();
  EXPECT_EQ(req.request.method, "GET");
  EXPECT_EQ(req.request.url,
            "http://prom:9090/api/v1/query?query=rate%28x%7Ba%3D%22b%20c%22%7D%5B5m%5D%29"
            "%20%3E%200.5&timeout=10.000");
  EXPECT_EQ(req.request.body, "");
  EXPECT_EQ(req.Header("Accept"), "application/json");
  EXPECT_FALSE(req.Header("Content-Type").has_value());
}

TEST(HttpPrometheusClient, QueryAtCarriesTheEvaluationTime) {
  FakeHttpTransport t;
  t.AddResponse(200, kVector);
  HttpPrometheusClient client(&t, kBase, 10);
  LabelFilter keep{"node"};
  auto r = client.QueryAt("up", 1795651199.999, &keep);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->samples.empty()) << "decoded like any answer";
  EXPECT_EQ(t.last_request().request.url,
            "http://prom:9090/api/v1/query?query=up&timeout=10.000&time=1795651199.999");
}

TEST(HttpPrometheusClient, LongQueryIsPostedAsForm) {
  // The form is "query=<encoded>&timeout=10.000": 21 bytes around the encoded query.
  const size_t fits = kMaxGetQueryBytes - 21;
  struct Case {
    std::string expr;
    bool post;
  };
  std::vector<Case> cases = {
      {std::string(fits, 'a'), false},
      {std::string(fits + 1, 'a'), true},
      // Short as typed, but each space grows to "%20": the encoded length is what counts.
      {std::string(kMaxGetQueryBytes / 3, ' '), true},
  };
  for (const auto& c : cases) {
    FakeHttpTransport t;
    t.AddResponse(200, kVector);
    HttpPrometheusClient client(&t, kBase, 10);
    ASSERT_TRUE(client.Query(c.expr).ok());
    auto req = t.last_request();
    std::string form = "query=" + UrlEncode(c.expr) + "&timeout=10.000";
    if (c.post) {
      EXPECT_EQ(req.request.method, "POST") << c.expr.size();
      EXPECT_EQ(req.request.url, "http://prom:9090/api/v1/query");
      EXPECT_EQ(req.request.body, form);
      EXPECT_EQ(req.Header("Content-Type"), "application/x-www-form-urlencoded");
    } else {
      EXPECT_EQ(req.request.method, "GET") << c.expr.size();
      EXPECT_EQ(req.request.url, "http://prom:9090/api/v1/query?" + form);
      EXPECT_EQ(req.request.body, "");
    }
  }
}

// A scratch folder for credential files, removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir()
      : dir_(std::filesystem::temp_directory_path() /
             ("prom-client-" + std::to_string(getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::trunc) << text;
    return p;
  }

 private:
  std::filesystem::path dir_;
};

TEST(HttpPrometheusClient, BearerTokenOnlyWhenConfigured) {
  ScratchDir dir;
  FakeHttpTransport t;
  t.AddResponse(200, kVector);
  t.AddResponse(200, kVector);
  HttpAuthConfig auth;
  auth.bearer_token_file = dir.Write("token", "s3cret\n");
  HttpPrometheusClient anonymous(&t, kBase, 10);
  HttpPrometheusClient with_token(&t, kBase, 10, auth);
  ASSERT_TRUE(anonymous.Query("up").ok());
  ASSERT_TRUE(with_token.Query("up").ok());
  auto reqs = t.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_FALSE(reqs[0].Header("Authorization").has_value());
  EXPECT_EQ(reqs[1].Header("Authorization"), "Bearer s3cret");
}

TEST(HttpPrometheusClient, RotatedTokenIsUsedFromTheNextQuery) {
  ScratchDir dir;
  FakeHttpTransport t;
  for (int i = 0; i < 3; ++i) t.AddResponse(200, kVector);
  HttpAuthConfig auth;
  auth.bearer_token_file = dir.Write("token", "token-1\n");
  HttpPrometheusClient client(&t, kBase, 10, auth);
  ASSERT_TRUE(client.Query("up").ok());
  ASSERT_TRUE(client.Query("up").ok());
  dir.Write("token", "token-2\n");
  ASSERT_TRUE(client.Query("up").ok());
  auto reqs = t.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].Header("Authorization"), "Bearer token-1");
  EXPECT_EQ(reqs[1].Header("Authorization"), "Bearer token-1");
  EXPECT_EQ(reqs[2].Header("Authorization"), "Bearer token-2");
}

TEST(HttpPrometheusClient, BasicAuthAndHeadersOnEveryRequest) {
  ScratchDir dir;
  FakeHttpTransport t;
  t.AddResponse(200, kVector);
  t.AddResponse(200, kVector);
  HttpAuthConfig auth;
  auth.basic_auth_user = "Aladdin";
  auth.basic_auth_password_file = dir.Write("password", "open sesame\n");
  auth.headers = {"X-Scope-OrgID: team-a", "X-Extra: 1"};
  HttpPrometheusClient client(&t, kBase, 10, auth);
  ASSERT_TRUE(client.Query("up").ok());
  dir.Write("password", "changed\n");
  // Long enough to be POSTed: the headers go with the form too.
  ASSERT_TRUE(client.Query("up + " + std::string(kMaxGetQueryBytes, ' ') + "1").ok());
  auto reqs = t.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].Header("Authorization"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  EXPECT_EQ(reqs[1].request.method, "POST");
  EXPECT_EQ(reqs[1].Header("Authorization"), "Basic QWxhZGRpbjpjaGFuZ2Vk") << "Aladdin:changed";
  for (const auto& r : reqs) {
    EXPECT_EQ(r.Header("X-Scope-OrgID"), "team-a");
    EXPECT_EQ(r.Header("X-Extra"), "1");
    EXPECT_EQ(r.Header("Accept"), "application/json");
  }
}

TEST(HttpPrometheusClient, UnreadableSecretFailsTheQueryWithoutSendingIt) {
  ScratchDir dir;
  FakeHttpTransport t;
  HttpAuthConfig auth;
  auth.bearer_token_file = dir.Write("token", "t");
  std::filesystem::remove(auth.bearer_token_file);
  HttpPrometheusClient client(&t, kBase, 10, auth);
  auto r = client.Query("up");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << "unknown verdicts, no label removed";
  EXPECT_NE(r.status().message().find(auth.bearer_token_file), std::string::npos)
      << r.status().message();
  EXPECT_EQ(t.request_count(), 0u) << "nothing sent without the credentials";
}

TEST(HttpPrometheusClient, RefusedCredentialsAreNamedNotTheSecret) {
  ScratchDir dir;
  FakeHttpTransport t;
  t.AddResponse(401, "Unauthorized\n");
  t.AddResponse(403, "forbidden\n");
  t.AddResponse(401, "Unauthorized\n");
  HttpAuthConfig basic;
  basic.basic_auth_user = "ds";
  basic.basic_auth_password_file = dir.Write("password", "hunter2");
  HttpAuthConfig token;
  token.bearer_token_file = dir.Write("token", "tok-secret");
  HttpPrometheusClient with_basic(&t, kBase, 10, basic);
  HttpPrometheusClient with_token(&t, kBase, 10, token);
  HttpPrometheusClient anonymous(&t, kBase, 10);
  auto a = with_basic.Query("up");
  auto b = with_token.Query("up");
  auto c = anonymous.Query("up");
  ASSERT_FALSE(a.ok());
  ASSERT_FALSE(b.ok());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(a.status().message(),
            "Prometheus answered HTTP 401 Unauthorized to basic auth for user \"ds\"");
  EXPECT_EQ(b.status().message(), "Prometheus answered HTTP 403 Forbidden to the bearer token");
  EXPECT_EQ(c.status().message(), "Prometheus answered HTTP 401 Unauthorized to no credentials");
  EXPECT_EQ(a.status().code(), StatusCode::kUnavailable);
}

TEST(HttpPrometheusClient, RequestTimeoutIsQueryTimeoutPlusOne) {
  FakeHttpTransport t;
  t.AddResponse(200, kVector);
  HttpPrometheusClient client(&t, kBase, 2.5);
  ASSERT_TRUE(client.Query("up").ok());
  auto req = t.last_request();
  EXPECT_DOUBLE_EQ(req.request.timeout_seconds, 3.5);
  EXPECT_NE(req.request.url.find("&timeout=2.500"), std::string::npos) << req.request.url;
}

TEST(HttpPrometheusClient, ServerErrorWithoutStatusJsonIsUnavailable) {
  for (int http : {500, 502, 503, 504}) {
    for (const char* body : {"<html>bad gateway</html>", ""}) {
      FakeHttpTransport t;
      t.AddResponse(http, body);
      HttpPrometheusClient client(&t, kBase, 10);
      auto r = client.Query("up");
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
      EXPECT_EQ(r.status().http_status(), http);
      EXPECT_NE(r.status().message().find("HTTP " + std::to_string(http)), std::string::npos)
          << r.status().ToString();
    }
  }
}

TEST(HttpPrometheusClient, PrometheusErrorJsonMapsToCode) {
  struct Case {
    int http;
    std::string body;
    StatusCode code;
  };
  std::vector<Case> cases = {
      {400, R"({"status":"error","errorType":"bad_data","error":"parse error"})",
       StatusCode::kInvalidArgument},
      {503, R"({"status":"error","errorType":"timeout","error":"query timed out"})",
       StatusCode::kUnavailable},
      {422, R"({"status":"error","errorType":"execution","error":"duplicate series"})",
       StatusCode::kUnavailable},
  };
  for (const auto& c : cases) {
    FakeHttpTransport t;
    t.AddResponse(c.http, c.body);
    HttpPrometheusClient client(&t, kBase, 10);
    RecordingSink sink;
    auto r = client.Query("up", nullptr, &sink);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
    EXPECT_EQ(r.status().http_status(), c.http);
    EXPECT_TRUE(sink.names.empty());
  }
}

TEST(HttpPrometheusClient, TransportErrorPropagates) {
  FakeHttpTransport t;
  t.AddError(Status::Unavailable("GET http://prom:9090/api/v1/query: Connection refused"));
  HttpPrometheusClient client(&t, kBase, 10);
  auto r = client.Query("up");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "GET http://prom:9090/api/v1/query: Connection refused");
  EXPECT_EQ(r.status().http_status(), 0);
}

TEST(HttpPrometheusClient, SinkGetsEachSampleOnceOnTheFastPath) {
  FakeHttpTransport t;
  t.AddResponse(200, kVector);
  HttpPrometheusClient client(&t, kBase, 10);
  LabelFilter keep = {"node"};
  RecordingSink sink;
  auto r = client.Query("cpu", &keep, &sink);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(sink.resets, 0) << "a plain vector streams straight through";
  EXPECT_EQ(sink.names, (std::vector<std::string>{"node=n1;", "node=n2;", "node=n3;"}));
  ASSERT_EQ(sink.values.size(), 3u);
  EXPECT_EQ(sink.values[0], 10);
  EXPECT_EQ(sink.values[1], 20.5);
  EXPECT_TRUE(std::isnan(sink.values[2]));
  EXPECT_EQ(r->result_type, "vector");
  EXPECT_TRUE(r->samples.empty());
  EXPECT_EQ(r->sample_count, 3u);
  EXPECT_EQ(r->body_bytes, std::string(kVector).size());
}

TEST(HttpPrometheusClient, SinkGetsEachSampleOnceThroughTheFallback) {
  LabelFilter keep = {"node"};
  {
    FakeHttpTransport t;
    t.AddResponse(200, kVectorWithWarnings);
    HttpPrometheusClient client(&t, kBase, 10);
    RecordingSink sink;
    auto r = client.Query("cpu", &keep, &sink);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_GE(sink.resets, 1) << "the fast path fed the sink before it declined";
    EXPECT_EQ(sink.names, (std::vector<std::string>{"node=n1;", "node=n2;", "node=n3;"}));
    EXPECT_EQ(r->warnings.size(), 1u);
    EXPECT_TRUE(r->samples.empty());
    EXPECT_EQ(r->sample_count, 3u);
  }
  {
    FakeHttpTransport t;
    t.AddResponse(200, R"({"status":"success","data":{"resultType":"scalar","result":[1,"7"]}})");
    HttpPrometheusClient client(&t, kBase, 10);
    RecordingSink sink;
    auto r = client.Query("scalar(up)", &keep, &sink);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(sink.names, (std::vector<std::string>{""}));
    EXPECT_EQ(sink.values, (std::vector<double>{7}));
    EXPECT_EQ(r->result_type, "scalar");
    EXPECT_EQ(r->sample_count, 1u);
  }
}

TEST(HttpPrometheusClient, WithoutSinkSamplesAreReturned) {
  FakeHttpTransport t;
  t.AddResponse(200, kVector);
  t.AddResponse(200, kVectorWithWarnings);
  HttpPrometheusClient client(&t, kBase, 10);
  LabelFilter keep = {"node"};
  for (int i = 0; i < 2; ++i) {
    auto r = client.Query("cpu", &keep);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->samples.size(), 3u);
    EXPECT_EQ(r->samples[1].metric, (Labels{{"node", "n2"}}));
    EXPECT_EQ(r->samples[1].value, 20.5);
    EXPECT_DOUBLE_EQ(r->samples[1].timestamp, 1795303219.437);
  }
}

// Each instant query's answer is expected to be about as large as its last one (the rules ask
// the same queries every cycle): the transport reserves that much up front.
TEST(HttpPrometheusClient, EachQueryHintsItsLastAnswersSize) {
  FakeHttpTransport t;
  for (int i = 0; i < 3; ++i) t.AddResponse(200, kVector);
  HttpPrometheusClient client(&t, kBase, 10);
  ASSERT_TRUE(client.Query("cpu").ok());
  EXPECT_EQ(t.last_request().request.body_bytes_hint, 0u);  // nothing known yet
  ASSERT_TRUE(client.Query("cpu").ok());
  const size_t n = std::string(kVector).size();
  EXPECT_EQ(t.last_request().request.body_bytes_hint, n + n / 16);
  ASSERT_TRUE(client.Query("memory").ok());  // another query: its own size, none yet
  EXPECT_EQ(t.last_request().request.body_bytes_hint, 0u);
}

TEST(NormalizePrometheusUrl, Cases) {
  struct Case {
    std::string in;
    std::string want;  // "" = kInvalidArgument
  };
  std::vector<Case> cases = {
      {"http://prom:9090", "http://prom:9090"},
      {"http://prom:9090/", "http://prom:9090"},
      {"https://prom.example/prefix//", "https://prom.example/prefix"},
      {"prom:9090", ""},
      {"ftp://prom", ""},
      {"http://", ""},
      {"https:///", ""},
      {"", ""},
  };
  for (const auto& c : cases) {
    auto r = NormalizePrometheusUrl(c.in);
    if (c.want.empty()) {
      ASSERT_FALSE(r.ok()) << c.in;
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.in;
    } else {
      ASSERT_TRUE(r.ok()) << c.in << ": " << r.status().ToString();
      EXPECT_EQ(*r, c.want);
    }
  }
}

}  // namespace
}  // namespace ds
