// -webaddr as CivetWeb understands it, and a real server on the addresses docs/reference.md
// documents.
#include "common/web_server.h"

#include <civetweb.h>
#include <gtest/gtest.h>

#include "common/http_transport.h"

namespace ds {
namespace {

TEST(ToListeningPorts, TheDocumentedForms) {
  struct Case {
    const char* addr;
    const char* want;  // nullptr: refused
  } cases[] = {
      {":9000", "9000"},
      {"127.0.0.1:9000", "127.0.0.1:9000"},
      {"localhost:9000", "127.0.0.1:9000"},
      {"[::1]:9000", "[::1]:9000"},  // not "+[::1]:9000", which CivetWeb refuses
      {"[::]:9000", "[::]:9000"},
      {"[fe80::1]:0", "[fe80::1]:0"},
      {"9000", nullptr},
      {":65536", nullptr},
      {":x", nullptr},
      {"example.com:9000", nullptr},
      {"[::1:9000", nullptr},
      {"[]:9000", nullptr},
      {"[::1]x:9000", nullptr},
      {"[::1; rm]:9000", nullptr},
  };
  for (const Case& c : cases) {
    auto got = ToListeningPorts(c.addr);
    if (c.want == nullptr) {
      EXPECT_FALSE(got.ok()) << c.addr << " -> " << *got;
      continue;
    }
    ASSERT_TRUE(got.ok()) << c.addr << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.addr;
  }
}

// The server answers on each loopback address it was given; IPv6 only where the CivetWeb library
// has it (mg_check_feature(8)), and otherwise a refusal that says why.
TEST(WebServer, ListensOnIpv4AndOnIpv6WhereCivetWebHasIt) {
  for (const char* addr : {"127.0.0.1:0", "[::1]:0"}) {
    WebServer server;
    Status st = server.Start(addr, [](const WebRequest& r) {
      WebResponse w;
      w.body = "hello " + r.path;
      return w;
    });
    if (std::string(addr) == "[::1]:0" && mg_check_feature(8) == 0) {
      EXPECT_FALSE(st.ok());
      EXPECT_NE(st.message().find("built without IPv6"), std::string::npos) << st.ToString();
      continue;
    }
    ASSERT_TRUE(st.ok()) << addr << ": " << st.ToString();
    ASSERT_GT(server.port(), 0);
    const std::string host = std::string(addr).substr(0, std::string(addr).rfind(':'));
    CurlTransport http;
    HttpRequest req;
    req.url = "http://" + host + ":" + std::to_string(server.port()) + "/x";
    auto resp = http.Do(req);
    ASSERT_TRUE(resp.ok()) << req.url << ": " << resp.status().ToString();
    EXPECT_EQ(resp->status, 200);
    EXPECT_EQ(resp->body, "hello /x");
  }
}

}  // namespace
}  // namespace ds
