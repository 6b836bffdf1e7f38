// The libcurl transport against a real local HTTP server (CivetWeb through WebServer): the
// send_if precondition is asked after connecting and, when it says no, nothing reaches the server.
#include "common/http_transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/web_server.h"

namespace ds {
namespace {

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
                        2)
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

}  // namespace
}  // namespace ds
