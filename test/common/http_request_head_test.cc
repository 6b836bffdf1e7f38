// The request-head parser of the web server's event loop: each rule of common/http_request_head.h
// with a case that breaks without it, heads as real clients send them, and the loop's way of
// calling it (again after every read) checked by splitting heads at every byte.
#include "common/http_request_head.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ds {
namespace {

using namespace std::string_literals;  // "...\0..."s keeps its NUL bytes

HeadParse MustComplete(const std::string& data) {
  HeadParse p = ParseRequestHead(data);
  EXPECT_EQ(p.state, HeadState::kComplete) << p.status << " " << p.error << " for: " << data;
  return p;
}

// Heads shaped like those the controller's clients send (their header sets and order, as in each
// client's request code; values such as versions and tokens made up).
const std::string kPrometheusScrape =
    "GET /metrics HTTP/1.1\r\n"
    "Host: 10.0.0.5:9001\r\n"
    "User-Agent: Prometheus/2.53.0\r\n"
    "Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
    "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
    "Accept-Encoding: gzip\r\n"
    "Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.c2ln\r\n"
    "X-Prometheus-Scrape-Timeout-Seconds: 10\r\n"
    "\r\n";
const std::string kAlertmanagerWebhook =
    "POST /webhook HTTP/1.1\r\n"
    "Host: dynamic-scheduler.kube-system.svc:9001\r\n"
    "User-Agent: Alertmanager/0.27.0\r\n"
    "Content-Length: 1043\r\n"
    "Authorization: Bearer s3cr3t-token\r\n"
    "Content-Type: application/json\r\n"
    "Accept-Encoding: gzip\r\n"
    "\r\n";
const std::string kChromiumGet =
    "GET /nodes?rule=cpu-busy&sort=value HTTP/1.1\r\n"
    "Host: localhost:9001\r\n"
    "Connection: keep-alive\r\n"
    "sec-ch-ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \"Not-A.Brand\";v=\"99\"\r\n"
    "sec-ch-ua-mobile: ?0\r\n"
    "sec-ch-ua-platform: \"Linux\"\r\n"
    "Upgrade-Insecure-Requests: 1\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
    "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7\r\n"
    "Sec-Fetch-Site: none\r\n"
    "Sec-Fetch-Mode: navigate\r\n"
    "Sec-Fetch-User: ?1\r\n"
    "Sec-Fetch-Dest: document\r\n"
    "Accept-Encoding: gzip, deflate, br, zstd\r\n"
    "Accept-Language: en-US,en;q=0.9,de;q=0.8\r\n"
    "\r\n";
const std::string kKubeletProbe =
    "GET /healthz HTTP/1.1\r\nHost: 10.0.0.5:9001\r\nUser-Agent: kube-probe/1.30\r\n"
    "Accept: */*\r\nConnection: close\r\n\r\n";
const std::string kCurlPost =
    "POST /rebalance HTTP/1.1\r\n"
    "Host: 127.0.0.1:9001\r\n"
    "User-Agent: curl/8.5.0\r\n"
    "Accept: */*\r\n"
    "Content-Type: application/json\r\n"
    "Content-Length: 2048\r\n"
    "Expect: 100-continue\r\n"
    "\r\n";

TEST(HttpRequestHead, PrometheusScrape) {
  HeadParse p = MustComplete(kPrometheusScrape);
  EXPECT_EQ(p.length, kPrometheusScrape.size());
  EXPECT_EQ(p.head.method, "GET");
  EXPECT_EQ(p.head.path, "/metrics");
  EXPECT_EQ(p.head.query, "");
  EXPECT_EQ(p.head.minor_version, 1);
  EXPECT_EQ(p.head.authorization, "Bearer eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.c2ln");
  EXPECT_EQ(p.head.content_length, -1);
  EXPECT_TRUE(p.head.keep_alive);
  EXPECT_FALSE(p.head.expect_continue);
  EXPECT_EQ(p.head.host, "10.0.0.5:9001");
}

TEST(HttpRequestHead, AlertmanagerWebhookAndItsBody) {
  const std::string body = "{\"version\":\"4\",\"status\":\"firing\"}";
  HeadParse p = MustComplete(kAlertmanagerWebhook + body);
  EXPECT_EQ(p.length, kAlertmanagerWebhook.size()) << "the body starts at length";
  EXPECT_EQ((kAlertmanagerWebhook + body).substr(p.length), body);
  EXPECT_EQ(p.head.method, "POST");
  EXPECT_EQ(p.head.path, "/webhook");
  EXPECT_EQ(p.head.content_length, 1043);
  EXPECT_EQ(p.head.authorization, "Bearer s3cr3t-token");
  EXPECT_TRUE(p.head.keep_alive);
}

TEST(HttpRequestHead, ChromiumGet) {
  HeadParse p = MustComplete(kChromiumGet);
  EXPECT_EQ(p.head.path, "/nodes");
  EXPECT_EQ(p.head.query, "rule=cpu-busy&sort=value");
  EXPECT_TRUE(p.head.keep_alive);
  EXPECT_EQ(p.head.authorization, "");
  EXPECT_EQ(p.head.host, "localhost:9001");
}

TEST(HttpRequestHead, KubeletProbe) {
  HeadParse p = MustComplete(kKubeletProbe);
  EXPECT_EQ(p.length, kKubeletProbe.size());
  EXPECT_EQ(p.head.path, "/healthz");
  EXPECT_FALSE(p.head.keep_alive) << "Connection: close";
}

TEST(HttpRequestHead, CurlPostWithExpectContinue) {
  HeadParse p = MustComplete(kCurlPost);
  EXPECT_TRUE(p.head.expect_continue);
  EXPECT_EQ(p.head.content_length, 2048);
}

// The loop calls the parser again after each read: every proper prefix of a head is incomplete,
// and the whole head, with or without what follows it, gives one and the same result.
TEST(HttpRequestHead, SplitAtEveryByte) {
  const std::string body = "{\"alerts\":[]}";
  for (const std::string& head :
       {kPrometheusScrape, kAlertmanagerWebhook, kChromiumGet, kKubeletProbe, kCurlPost,
        "\r\n\r\nGET /a%20b?x=%41 HTTP/1.0\nConnection: keep-alive\n\n"s}) {
    const HeadParse whole = MustComplete(head);
    for (size_t n = 0; n < head.size(); ++n) {
      HeadParse p = ParseRequestHead(std::string_view(head).substr(0, n));
      ASSERT_EQ(p.state, HeadState::kIncomplete) << "prefix of " << n << " bytes of: " << head;
      EXPECT_EQ(p.length, 0u);
    }
    EXPECT_EQ(ParseRequestHead(head + body), whole);
    EXPECT_EQ(ParseRequestHead(head + head), whole) << "a pipelined request is not looked at";
    EXPECT_EQ(ParseRequestHead(head + "\x16\x03\x01 garbage\r\n\r\n"), whole);
  }
}

TEST(HttpRequestHead, PipelinedRequestsParseOneAfterTheOther) {
  const std::string two = kAlertmanagerWebhook + std::string(1043, 'x') + kKubeletProbe;
  HeadParse first = MustComplete(two);
  const size_t next = first.length + static_cast<size_t>(first.head.content_length);
  HeadParse second = ParseRequestHead(std::string_view(two).substr(next));
  ASSERT_EQ(second.state, HeadState::kComplete);
  EXPECT_EQ(second.head.path, "/healthz");
}

TEST(HttpRequestHead, BareLfLineEndings) {
  HeadParse lf = MustComplete("GET /x?y HTTP/1.1\nHost: h\nAuthorization: Basic YTpi\n\n");
  HeadParse crlf =
      MustComplete("GET /x?y HTTP/1.1\r\nHost: h\r\nAuthorization: Basic YTpi\r\n\r\n");
  EXPECT_EQ(lf.head, crlf.head);
  EXPECT_EQ(lf.length + 4, crlf.length);
  EXPECT_EQ(MustComplete("GET / HTTP/1.1\r\nHost: h\n\r\n").length, 26u) << "mixed";
  EXPECT_EQ(MustComplete("GET / HTTP/1.1\nHost: h\r\n\n").length, 25u);
}

TEST(HttpRequestHead, LeadingEmptyLinesAreSkippedAndCounted) {
  HeadParse p = MustComplete("\r\n\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(p.length, 5u + 27u);
  EXPECT_EQ(p.head.path, "/");
  EXPECT_EQ(ParseRequestHead("\r\n\r\n").state, HeadState::kIncomplete);
  EXPECT_EQ(ParseRequestHead("\r\n\r").state, HeadState::kIncomplete);
}

TEST(HttpRequestHead, AtMostEightLeadingEmptyLines) {
  std::string eight;
  for (int i = 0; i < 8; ++i) eight += i % 2 ? "\n" : "\r\n";
  EXPECT_EQ(MustComplete(eight + "GET / HTTP/1.1\r\nHost: h\r\n\r\n").length, 12u + 27u);
  EXPECT_EQ(ParseRequestHead(eight + "\r").state, HeadState::kIncomplete);
  HeadParse p = ParseRequestHead(eight + "\r\n");
  EXPECT_EQ(p.state, HeadState::kError);
  EXPECT_EQ(p.status, 400);
  EXPECT_NE(p.error.find("more than 8 empty lines"), std::string::npos) << p.error;
  EXPECT_EQ(ParseRequestHead(std::string(20000, '\n')).status, 400);
}

// The loop passes the previous call's `scanned` back: the same results as scanning from the
// start, a byte at a time, in the worst case (dense short lines) too.
TEST(HttpRequestHead, ResumedSearchGivesTheSameResults) {
  std::string dense = "GET / HTTP/1.1\nHost: h\n";
  while (dense.size() < 3000) dense += "X: y\n";
  for (const std::string& data :
       {kPrometheusScrape + "body", kAlertmanagerWebhook, kChromiumGet, kKubeletProbe,
        "GET / HTTP/1.1\r\nHost: h\n\r\n"s, "GET / HTTP/1.1\nHost: h\r\n\n"s,
        "\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"s, dense + "\r\n", dense + "\n",
        "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n"s, dense + std::string(400, 'x')}) {
    size_t resume = 0;
    for (size_t n = 0; n <= data.size(); ++n) {
      const std::string_view prefix = std::string_view(data).substr(0, n);
      HeadParse resumed = ParseRequestHead(prefix, 16384, resume);
      ASSERT_EQ(resumed, ParseRequestHead(prefix)) << n << " bytes of: " << data.substr(0, 80);
      if (resumed.state != HeadState::kIncomplete) break;
      EXPECT_LE(resumed.scanned, n);
      resume = resumed.scanned;
    }
  }
}

TEST(HttpRequestHead, MethodKeptAsSent) {
  EXPECT_EQ(MustComplete("get / HTTP/1.1\r\nHost: h\r\n\r\n").head.method, "get");
  EXPECT_EQ(MustComplete("M-SEARCH / HTTP/1.1\r\nHost: h\r\n\r\n").head.method, "M-SEARCH");
}

TEST(HttpRequestHead, AbsoluteFormTakesThePathAndTheHost) {
  HeadParse p = MustComplete(
      "GET http://proxy.example:8080/api/v1/state?x=1 HTTP/1.1\r\n"
      "Host: other\r\n\r\n");
  EXPECT_EQ(p.head.path, "/api/v1/state");
  EXPECT_EQ(p.head.query, "x=1");
  EXPECT_EQ(p.head.host, "proxy.example:8080") << "RFC 9112 3.2.2: the target's authority wins";
  EXPECT_EQ(MustComplete("GET HTTPS://h HTTP/1.1\r\nHost: h\r\n\r\n").head.path, "/");
  p = MustComplete("GET http://[::1]:9001?q HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(p.head.path, "/");
  EXPECT_EQ(p.head.query, "q");
}

TEST(HttpRequestHead, PathIsDecodedOnceAndNotNormalised) {
  HeadParse p = MustComplete(
      "GET /api/v1/st%61te%20x/%2Fa/../b/./c//d+e?q=a%20b+c&d=%zz HTTP/1.1\r\n"
      "Host: h\r\n\r\n");
  EXPECT_EQ(p.head.path, "/api/v1/state x//a/../b/./c//d+e");
  EXPECT_EQ(p.head.query, "q=a%20b+c&d=%zz") << "the query stays encoded, and is not checked";
  EXPECT_EQ(MustComplete("GET /a?b?c HTTP/1.1\r\nHost: h\r\n\r\n").head.query, "b?c");
  EXPECT_EQ(MustComplete("GET /%c3%a9 HTTP/1.1\r\nHost: h\r\n\r\n").head.path, "/\xc3\xa9");
}

TEST(HttpRequestHead, ValueTrimmedOfOwsInsideKept) {
  HeadParse p = MustComplete(
      "GET / HTTP/1.1\r\nHost:h\r\nAuthorization: \t Bearer  a\tb \t\r\n"
      "X-Utf8: caf\xc3\xa9\r\nX-Empty:\r\n\r\n");
  EXPECT_EQ(p.head.authorization, "Bearer  a\tb");
  EXPECT_EQ(p.head.host, "h");
}

TEST(HttpRequestHead, ContentLength) {
  auto cl = [](const std::string& fields) {
    return MustComplete("POST /webhook HTTP/1.1\r\nHost: h\r\n" + fields + "\r\n")
        .head.content_length;
  };
  EXPECT_EQ(cl(""), -1);
  EXPECT_EQ(cl("Content-Length: 0\r\n"), 0);
  EXPECT_EQ(cl("content-LENGTH:42\r\n"), 42) << "names are case-insensitive";
  EXPECT_EQ(cl("Content-Length: 007\r\n"), 7);
  EXPECT_EQ(cl("Content-Length: 42, 42\r\n"), 42) << "a list of one value";
  EXPECT_EQ(cl("Content-Length: 42\r\nContent-Length: 42\r\n"), 42);
  EXPECT_EQ(cl("Content-Length: 9223372036854775807\r\n"), 9223372036854775807LL);
}

TEST(HttpRequestHead, ConnectionAndKeepAlive) {
  auto keep = [](const std::string& version, const std::string& fields) {
    return MustComplete("GET / " + version + "\r\nHost: h\r\n" + fields + "\r\n").head.keep_alive;
  };
  EXPECT_TRUE(keep("HTTP/1.1", ""));
  EXPECT_FALSE(keep("HTTP/1.1", "Connection: close\r\n"));
  EXPECT_FALSE(keep("HTTP/1.1", "connection: CLOSE\r\n"));
  EXPECT_FALSE(keep("HTTP/1.1", "Connection: Upgrade, close\r\n"));
  EXPECT_FALSE(keep("HTTP/1.1", "Connection: keep-alive\r\nConnection: close\r\n"));
  EXPECT_FALSE(keep("HTTP/1.1", "Connection: ,, close ,\r\n")) << "empty elements ignored";
  EXPECT_TRUE(keep("HTTP/1.1", "Connection: closed\r\n"));
  EXPECT_FALSE(keep("HTTP/1.0", ""));
  EXPECT_TRUE(keep("HTTP/1.0", "Connection: Keep-Alive\r\n"));
  EXPECT_FALSE(keep("HTTP/1.0", "Connection: keep-alive, close\r\n"));
  EXPECT_EQ(MustComplete("GET / HTTP/1.0\r\n\r\n").head.minor_version, 0)
      << "HTTP/1.0 needs no Host";
}

TEST(HttpRequestHead, ExpectContinue) {
  auto expect = [](const std::string& version, const std::string& fields) {
    return MustComplete("POST / " + version + "\r\nHost: h\r\nContent-Length: 5\r\n" + fields +
                        "\r\n")
        .head.expect_continue;
  };
  EXPECT_FALSE(expect("HTTP/1.1", ""));
  EXPECT_TRUE(expect("HTTP/1.1", "Expect: 100-continue\r\n"));
  EXPECT_TRUE(expect("HTTP/1.1", "EXPECT: 100-Continue\r\n"));
  EXPECT_FALSE(expect("HTTP/1.1", "Expect: something-else\r\n")) << "ignored, no 417";
  EXPECT_FALSE(expect("HTTP/1.0", "Expect: 100-continue\r\n")) << "RFC 9110 10.1.1";
}

TEST(HttpRequestHead, HundredFieldsAreEnough) {
  std::string head = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (int i = 1; i < 100; ++i) head += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(MustComplete(head + "\r\n").state, HeadState::kComplete);
  HeadParse p = ParseRequestHead(head + "X-100: v\r\n\r\n");
  EXPECT_EQ(p.state, HeadState::kError);
  EXPECT_EQ(p.status, 431);
}

struct ErrorCase {
  const char* rule;
  std::string data;
  int status;
  const char* error;  // a part of the error
};

// One case per rule: each is accepted by a parser without that rule.
const std::vector<ErrorCase> kErrorCases = {
    // The request line.
    {"double space", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "two spaces"},
    {"trailing space", "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400, "a space after the target"},
    {"tab separator", "GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n", 400, "method is not a token"},
    {"leading space", " GET / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "starts with a space"},
    {"method not a token", "G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "method is not a token"},
    {"HTTP/0.9 line", "GET /\r\n\r\n", 400, "expected METHOD SP target"},
    {"no space at all", "GET\r\n\r\n", 400, "expected METHOD SP target"},
    {"empty target", "GET  HTTP/1.1\r\nHost: h\r\n\r\n", 400, "two spaces"},
    {"no version", "GET / \r\nHost: h\r\n\r\n", 400, "bad HTTP version"},
    {"lower-case version", "GET / http/1.1\r\nHost: h\r\n\r\n", 400, "bad HTTP version"},
    {"garbled version", "GET / HTTP/1.1x\r\nHost: h\r\n\r\n", 400, "bad HTTP version"},
    {"version without number", "GET / HTTP/\r\nHost: h\r\n\r\n", 400, "bad HTTP version"},
    {"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "HTTP version not supported"},
    {"HTTP/2.0", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505, "HTTP/1.0 and HTTP/1.1"},
    {"HTTP/3", "GET / HTTP/3\r\nHost: h\r\n\r\n", 505, "HTTP version not supported"},
    {"HTTP/1.2", "GET / HTTP/1.2\r\nHost: h\r\n\r\n", 505, "HTTP version not supported"},
    {"HTTP/0.9 as version", "GET / HTTP/0.9\r\n\r\n", 505, "HTTP version not supported"},
    // The target.
    {"asterisk-form", "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", 400, "asterisk-form"},
    {"authority-form", "CONNECT example.com:443 HTTP/1.1\r\nHost: h\r\n\r\n", 400, "not a path"},
    {"relative path", "GET metrics HTTP/1.1\r\nHost: h\r\n\r\n", 400, "not a path"},
    {"other scheme", "GET ftp://h/x HTTP/1.1\r\nHost: h\r\n\r\n", 400, "not a path"},
    {"absolute-form without host", "GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "without a host"},
    {"absolute-form with userinfo", "GET http://u:p@h/x HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "userinfo"},
    {"absolute-form bad host", "GET http://h\"/x HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "malformed host"},
    {"fragment", "GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n", 400, "fragment"},
    {"non-ASCII target", "GET /caf\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n", 400, "visible ASCII"},
    {"DEL in target", "GET /a\x7f HTTP/1.1\r\nHost: h\r\n\r\n", 400, "visible ASCII"},
    {"malformed escape", "GET /a%zz HTTP/1.1\r\nHost: h\r\n\r\n", 400, "percent-encoding"},
    {"short escape", "GET /a%4 HTTP/1.1\r\nHost: h\r\n\r\n", 400, "percent-encoding"},
    {"escape at the end", "GET /a% HTTP/1.1\r\nHost: h\r\n\r\n", 400, "percent-encoding"},
    {"encoded NUL", "GET /a%00b HTTP/1.1\r\nHost: h\r\n\r\n", 400, "NUL"},
    {"encoded LF", "GET /a%0Ab HTTP/1.1\r\nHost: h\r\n\r\n", 400, "control character"},
    // Line ends and NUL.
    {"bare CR at start", "\rGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "CR not followed by LF"},
    {"bare CR in method", "GE\rT / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "CR not followed by LF"},
    {"bare CR in target", "GET /a\rb HTTP/1.1\r\nHost: h\r\n\r\n", 400, "CR not followed by LF"},
    {"CR CR LF", "GET / HTTP/1.1\r\nHost: h\r\r\n\r\n", 400, "CR not followed by LF"},
    {"bare CR in name", "GET / HTTP/1.1\r\nHost: h\r\nX\rY: a\r\n\r\n", 400,
     "CR not followed by LF"},
    {"bare CR in value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", 400,
     "CR not followed by LF"},
    {"bare CR as line end", "GET / HTTP/1.1\r\nHost: h\rX: a\r\n\r\n", 400,
     "CR not followed by LF"},
    {"NUL in method", "GE\0T / HTTP/1.1\r\nHost: h\r\n\r\n"s, 400, "NUL"},
    {"NUL in target", "GET /\0 HTTP/1.1\r\nHost: h\r\n\r\n"s, 400, "NUL"},
    {"NUL in name", "GET / HTTP/1.1\r\nHost: h\r\nX\0: a\r\n\r\n"s, 400, "NUL"},
    {"NUL in value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n"s, 400, "NUL"},
    // Header fields.
    {"obs-fold", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", 400, "obs-fold"},
    {"obs-fold with tab", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n\tb\r\n\r\n", 400, "obs-fold"},
    {"first field indented", "GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400, "obs-fold"},
    {"space before colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400, "whitespace between"},
    {"tab before colon", "GET / HTTP/1.1\r\nHost\t: h\r\n\r\n", 400, "whitespace between"},
    {"no colon", "GET / HTTP/1.1\r\nHost: h\r\nX-Foo\r\n\r\n", 400, "without a colon"},
    {"empty name", "GET / HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", 400, "empty header name"},
    {"name not a token", "GET / HTTP/1.1\r\nHost: h\r\nX(y): v\r\n\r\n", 400, "not a token"},
    {"control in value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\x01z\r\n\r\n", 400,
     "control character"},
    {"DEL in value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f\r\n\r\n", 400, "control character"},
    {"ESC in value", "GET / HTTP/1.1\r\nHost: h\r\nX: \x1b[31m\r\n\r\n", 400, "control character"},
    {"Connection not tokens", "GET / HTTP/1.1\r\nHost: h\r\nConnection: clo se\r\n\r\n", 400,
     "Connection"},
    // Host and Authorization.
    {"HTTP/1.1 without Host", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", 400, "missing Host"},
    {"two Host", "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", 400, "more than one Host"},
    {"Host with space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "malformed Host"},
    {"Host with slash", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400, "malformed Host"},
    {"two Authorization",
     "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: a\r\nauthorization: b\r\n\r\n", 400,
     "more than one Authorization"},
    // Content-Length and Transfer-Encoding.
    {"CL negative", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400,
     "malformed Content-Length"},
    {"CL plus", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n", 400,
     "malformed Content-Length"},
    {"CL hex", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n", 400,
     "malformed Content-Length"},
    {"CL inner space", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4 2\r\n\r\n", 400,
     "malformed Content-Length"},
    {"CL empty", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n", 400,
     "malformed Content-Length"},
    {"CL empty element", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 42,\r\n\r\n", 400,
     "malformed Content-Length"},
    {"CL list differs", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 42, 43\r\n\r\n", 400,
     "conflicting Content-Length"},
    {"CL repeated differs",
     "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 42\r\nContent-Length: 43\r\n\r\n", 400,
     "conflicting Content-Length"},
    {"CL overflow", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 9223372036854775808\r\n\r\n",
     400, "too large"},
    {"CL far overflow",
     "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400,
     "too large"},
    {"TE", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", 501,
     "Transfer-Encoding is not supported; send Content-Length"},
    {"TE any case", "POST / HTTP/1.1\r\nHost: h\r\ntransfer-encoding: gzip, chunked\r\n\r\n", 501,
     "Transfer-Encoding is not supported"},
    {"TE and CL",
     "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400,
     "Transfer-Encoding together with Content-Length"},
    {"CL and TE",
     "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
     "Transfer-Encoding together with Content-Length"},
    // Not HTTP.
    {"TLS handshake", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"s, 400, "TLS handshake"},
};

TEST(HttpRequestHead, EachRuleRefusesItsCase) {
  for (const ErrorCase& c : kErrorCases) {
    HeadParse p = ParseRequestHead(c.data);
    EXPECT_EQ(p.state, HeadState::kError) << c.rule;
    EXPECT_EQ(p.status, c.status) << c.rule << ": " << p.error;
    EXPECT_NE(p.error.find(c.error), std::string::npos) << c.rule << ": " << p.error;
    EXPECT_EQ(p.length, 0u) << c.rule;
    EXPECT_EQ(p.error.find('\n'), std::string::npos) << c.rule << ": one line";
    // Errors are final: more bytes do not change them.
    EXPECT_EQ(ParseRequestHead(c.data + "GET / HTTP/1.1\r\nHost: h\r\n\r\n"), p) << c.rule;
  }
}

TEST(HttpRequestHead, ErrorsQuoteNoHeaderValue) {
  HeadParse p =
      ParseRequestHead("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer hunter2\x01\r\n\r\n");
  ASSERT_EQ(p.state, HeadState::kError);
  EXPECT_EQ(p.error.find("hunter2"), std::string::npos);
}

// Errors that need no blank line: the loop answers them at once instead of waiting for the head
// deadline.
TEST(HttpRequestHead, EarlyErrors) {
  EXPECT_EQ(ParseRequestHead("PRI * HTTP/2.0\r\n").status, 505) << "the HTTP/2 preface";
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.2\n").status, 505);
  EXPECT_EQ(ParseRequestHead("GET  / HTTP/1.1\r\n").status, 400);
  EXPECT_EQ(ParseRequestHead("\x16\x03\x01"s).status, 400) << "TLS to the plain port";
  EXPECT_EQ(ParseRequestHead("GE\0"s).status, 400);
  EXPECT_EQ(ParseRequestHead("\r\rGET").status, 400);
  EXPECT_EQ(ParseRequestHead("GE\rT").status, 400);
  // Still incomplete: nothing wrong yet.
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\n").state, HeadState::kIncomplete);
  EXPECT_EQ(ParseRequestHead("GET /whatever HTTP/1.").state, HeadState::kIncomplete);
  EXPECT_EQ(ParseRequestHead("GET\r").state, HeadState::kIncomplete) << "the CR may end the line";
  EXPECT_EQ(ParseRequestHead("").state, HeadState::kIncomplete);
}

TEST(HttpRequestHead, SizeLimits) {
  const std::string head = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";  // 27 bytes
  EXPECT_EQ(ParseRequestHead(head, 27).state, HeadState::kComplete) << "exactly the limit";
  EXPECT_EQ(ParseRequestHead(head + "body", 27).state, HeadState::kComplete)
      << "the body does not count";
  HeadParse p = ParseRequestHead(head, 26);
  EXPECT_EQ(p.state, HeadState::kError);
  EXPECT_EQ(p.status, 431);
  EXPECT_EQ(ParseRequestHead(head.substr(0, 26), 26).state, HeadState::kIncomplete);
  EXPECT_EQ(ParseRequestHead(head.substr(0, 26), 25).status, 431);

  // The default limit, 16 KiB.
  std::string big = "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(16384, 'a');
  EXPECT_EQ(ParseRequestHead(big.substr(0, 16384)).state, HeadState::kIncomplete);
  EXPECT_EQ(ParseRequestHead(big).status, 431);

  // A request line that does not end: 414.
  const std::string long_target = "GET /" + std::string(16384, 'a');
  EXPECT_EQ(ParseRequestHead(long_target.substr(0, 16384)).state, HeadState::kIncomplete);
  EXPECT_EQ(ParseRequestHead(long_target).status, 414);
  EXPECT_EQ(ParseRequestHead(long_target + " HTTP/1.1\r\nHost: h\r\n\r\n").status, 414);
  EXPECT_EQ(ParseRequestHead(std::string(20000, 'G')).status, 414);
}

}  // namespace
}  // namespace ds
