// The libcurl transport against a real local HTTP server (the controller's WebServer): the
// send_if precondition is asked after connecting and, when it says no, nothing reaches the server.
#include "common/http_transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/web_server.h"

namespace ds {
namespace {

WebServerOptions TwoWorkers() {
  WebServerOptions o;
  o.workers = 2;
  return o;
}

class TransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_
                    .Start(
                        "127.0.0.1:0",
                        [this](const WebRequest& r) {
                          ++hits_;
                          if (r.path == "/slow") {  // a hung API server, bounded for the test
                            for (int i = 0; i < 300 && !release_slow_; ++i)
                              std::this_thread::sleep_for(std::chrono::milliseconds(10));
                          }
                          WebResponse resp;
                          resp.body = r.method + " " + r.path;
                          return resp;
                        },
                        TwoWorkers())
                    .ok());
    url_ = "http://127.0.0.1:" + std::to_string(server_.port()) + "/status";
  }
  void TearDown() override { release_slow_ = true; }
  WebServer server_;
  std::atomic<bool> release_slow_{false};
  std::atomic<int> hits_{0};
  std::string url_;
  CurlTransport transport_;
};

TEST_F(TransportTest, SendIfFalseSendsNothing) {
  HttpRequest req;
  req.method = "POST";
  req.url = url_;
  req.body = "{}";
  int asked = 0;
  req.send_if = [&] {
    ++asked;
    return false;
  };
  auto res = transport_.Do(req);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), StatusCode::kCancelled);
  EXPECT_NE(res.status().message().find("not sent"), std::string::npos) << res.status().message();
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(hits_.load(), 0) << "the server never saw the request";
  // The handle goes back to the pool and works for the next request.
  req.send_if = [&] {
    ++asked;
    return true;
  };
  req.method = "GET";
  req.body.clear();
  res = transport_.Do(req);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->status, 200);
  EXPECT_GE(asked, 2) << "asked before sending, and again while waiting";
  EXPECT_EQ(hits_.load(), 1);
}

TEST_F(TransportTest, PreconditionEndingWhileWaitingAbandonsTheRequest) {
  HttpRequest req;
  req.method = "PATCH";
  req.url = "http://127.0.0.1:" + std::to_string(server_.port()) + "/slow";
  req.body = "{}";
  std::atomic<bool> leader{true};
  std::thread stepdown([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    leader = false;  // e.g. SIGTERM: the controller must not wait out the hung PATCH
  });
  req.send_if = [&] { return leader.load(); };
  auto start = std::chrono::steady_clock::now();
  auto res = transport_.Do(req);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stepdown.join();
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), StatusCode::kCancelled);
  EXPECT_NE(res.status().message().find("abandoned"), std::string::npos) << res.status().message();
  EXPECT_EQ(hits_.load(), 1) << "it had been sent";
  EXPECT_LT(took, 2.0) << "abandoned within a progress tick, not after the server's 3 s";
}

TEST_F(TransportTest, NoPreconditionByDefault) {
  HttpRequest req;
  req.url = url_;
  auto res = transport_.Do(req);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->body, "GET /status");
}

// The hint is reserved when the body starts: one allocation for a body of the expected size
// (the same query's last answer), where growing by doubling copies it and leaves holes behind.
TEST_F(TransportTest, TheBodySizeHintIsReservedUpFront) {
  HttpRequest req;
  req.url = url_;
  req.body_bytes_hint = 100000;
  auto res = transport_.Do(req);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->body, "GET /status");
  EXPECT_GE(res->body.capacity(), 100000u);
  // Never more than the body may have. (Fresh results: a string moved into one that has a
  // buffer keeps that buffer.)
  req.max_body_bytes = 1000;
  auto capped = transport_.Do(req);
  ASSERT_TRUE(capped.ok()) << capped.status().ToString();
  EXPECT_GE(capped->body.capacity(), 1000u);
  EXPECT_LT(capped->body.capacity(), 100000u);
  // No hint, no reservation.
  req.body_bytes_hint = 0;
  req.max_body_bytes = 64u << 20;
  auto plain = transport_.Do(req);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_LT(plain->body.capacity(), 1000u);
}

TEST(RouteToServerName, VerifiesTheNameConnectsToTheAddressKeepsTheHost) {
  struct Case {
    const char* url;
    const char* name;
    const char* want_url;  // nullptr: no route
    const char* want_connect_to;
    const char* want_host;
  };
  const Case cases[] = {
      {"https://127.0.0.1:6443/api/v1/nodes?watch=1", "kubernetes.default.svc",
       "https://kubernetes.default.svc:6443/api/v1/nodes?watch=1",
       "kubernetes.default.svc:6443:127.0.0.1:6443", "Host: 127.0.0.1:6443"},
      // No port: 443 for the connection, none in the URL or Host header.
      {"https://api.internal/apis", "k8s.example", "https://k8s.example/apis",
       "k8s.example:443:api.internal:443", "Host: api.internal"},
      {"https://[fd00::1]:6443", "k8s", "https://k8s:6443", "k8s:6443:[fd00::1]:6443",
       "Host: [fd00::1]:6443"},
      {"https://10.0.0.1:6443/", "fd00::2", "https://[fd00::2]:6443/",
       "[fd00::2]:6443:10.0.0.1:6443", "Host: 10.0.0.1:6443"},
      {"http://127.0.0.1:8080/api", "k8s", nullptr, nullptr, nullptr},  // no TLS to verify
      {"https://127.0.0.1:6443/api", "", nullptr, nullptr, nullptr},
      {"https://u@h:6443/", "k8s", nullptr, nullptr, nullptr},
      {"https:///api", "k8s", nullptr, nullptr, nullptr},
  };
  for (const auto& c : cases) {
    auto r = RouteToServerName(c.url, c.name);
    if (c.want_url == nullptr) {
      EXPECT_FALSE(r.has_value()) << c.url;
      continue;
    }
    ASSERT_TRUE(r.has_value()) << c.url;
    EXPECT_EQ(r->url, c.want_url);
    EXPECT_EQ(r->connect_to, c.want_connect_to);
    EXPECT_EQ(r->host_header, c.want_host);
  }
}

}  // namespace
}  // namespace ds
