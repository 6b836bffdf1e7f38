// The web port's listener against real sockets: the addresses docs/reference.md documents, and
// each bound of common/web_server.h held against a client that tries to get past it (idle and
// trickling connections, too many at once, too many requests, a slow reader), over plain HTTP and
// TLS.
#include "common/web_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "common/http_transport.h"

namespace ds {
namespace {

TEST(ParseListenAddress, TheDocumentedForms) {
  struct Case {
    const char* addr;
    const char* host;  // nullptr: refused
    int port;
    bool ipv6;
  } cases[] = {
      {":9000", "", 9000, false},
      {"127.0.0.1:9000", "127.0.0.1", 9000, false},
      {"localhost:9000", "127.0.0.1", 9000, false},
      {"[::1]:9000", "::1", 9000, true},
      {"[::]:9000", "::", 9000, true},
      {"[fe80::1]:0", "fe80::1", 0, true},
      {"9000", nullptr, 0, false},
      {":65536", nullptr, 0, false},
      {":x", nullptr, 0, false},
      {"example.com:9000", nullptr, 0, false},
      {"1.2.3:9000", nullptr, 0, false},
      {"[::1:9000", nullptr, 0, false},
      {"[]:9000", nullptr, 0, false},
      {"[::1]x:9000", nullptr, 0, false},
      {"[::1; rm]:9000", nullptr, 0, false},
  };
  for (const Case& c : cases) {
    auto got = ParseListenAddress(c.addr);
    if (c.host == nullptr) {
      EXPECT_FALSE(got.ok()) << c.addr << " -> " << got->host;
      continue;
    }
    ASSERT_TRUE(got.ok()) << c.addr << ": " << got.status().ToString();
    EXPECT_EQ(got->host, c.host) << c.addr;
    EXPECT_EQ(got->port, c.port) << c.addr;
    EXPECT_EQ(got->ipv6, c.ipv6) << c.addr;
  }
}

WebResponse Hello(const WebRequest& r) {
  WebResponse w;
  w.body = "hello " + r.method + " " + r.path + (r.query.empty() ? "" : "?" + r.query) +
           (r.body.empty() ? "" : " body=" + r.body);
  return w;
}

// Hello, once *release is true: a handler that keeps its worker busy meanwhile.
WebServer::Handler HeldUntil(const std::atomic<bool>* release) {
  return [release](const WebRequest& r) {
    while (!*release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return Hello(r);
  };
}

// The server answers on each loopback address it was given, IPv4 and IPv6.
TEST(WebServer, ListensOnIpv4AndIpv6) {
  for (const char* addr : {"127.0.0.1:0", "[::1]:0"}) {
    WebServer server;
    Status st = server.Start(addr, Hello);
    if (!st.ok() && std::string(addr) == "[::1]:0" &&
        st.message().find("Cannot assign") != std::string::npos)
      continue;  // a machine without IPv6 on loopback
    ASSERT_TRUE(st.ok()) << addr << ": " << st.ToString();
    ASSERT_GT(server.port(), 0);
    const std::string host = std::string(addr).substr(0, std::string(addr).rfind(':'));
    CurlTransport http;
    HttpRequest req;
    req.url = "http://" + host + ":" + std::to_string(server.port()) + "/x?a=%20b";
    auto resp = http.Do(req);
    ASSERT_TRUE(resp.ok()) << req.url << ": " << resp.status().ToString();
    EXPECT_EQ(resp->status, 200);
    EXPECT_EQ(resp->body, "hello GET /x?a=%20b");
  }
}

TEST(WebServer, AnAddressInUseIsAClearError) {
  WebServer a, b;
  ASSERT_TRUE(a.Start("127.0.0.1:0", Hello).ok());
  Status st = b.Start("127.0.0.1:" + std::to_string(a.port()), Hello);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot listen"), std::string::npos) << st.ToString();
}

// A raw client: connects from `from` (a loopback address: every 127.x.y.z is this machine, so
// tests can be several clients) to the server.
int Connect(int port, const char* from = "127.0.0.1", int fd = -1) {
  if (fd < 0) fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  inet_pton(AF_INET, from, &src.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(src)) != 0) {
    close(fd);
    return -1;
  }
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void Send(int fd, const std::string& s) {
  ASSERT_EQ(send(fd, s.data(), s.size(), 0), ssize_t(s.size()));
}

// Everything the server sends until it closes or `timeout_s` passes; `closed` says which.
std::string ReadAll(int fd, double timeout_s, bool* closed = nullptr) {
  std::string out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  if (closed) *closed = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          end - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return out;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) return out;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      if (closed) *closed = true;
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

// One answer on a kept-alive connection: reads until a whole response (head + Content-Length).
std::string ReadOne(int fd, double timeout_s = 5) {
  std::string out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    size_t head_end = out.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      size_t cl = out.find("Content-Length: ");
      size_t len = cl == std::string::npos ? 0 : std::strtoul(out.c_str() + cl + 16, nullptr, 10);
      if (out.size() >= head_end + 4 + len) return out;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// What issue 43 measured on CivetWeb: clients that send half a request and wait held every
// worker, and a probe waited 23.7 s. Here they hold nothing but a buffer until the head's
// deadline, which closes them.
TEST(WebServer, HalfSentRequestsHoldNoWorkerAndAreClosedAtTheHeadDeadline) {
  WebServerOptions o;
  o.workers = 1;
  o.header_timeout_seconds = 1;
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Hello, o).ok());
  std::vector<int> idle;
  for (int i = 0; i < 40; ++i) {
    int fd = Connect(server.port(), ("127.0.1." + std::to_string(i + 1)).c_str());
    ASSERT_GE(fd, 0);
    Send(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n");
    idle.push_back(fd);
  }
  const auto t0 = std::chrono::steady_clock::now();
  int fd = Connect(server.port());
  Send(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got = ReadOne(fd);
  EXPECT_LT(SecondsSince(t0), 0.5);
  EXPECT_NE(got.find("hello GET /healthz"), std::string::npos) << got;
  close(fd);
  // The trickling clients are told 408 and closed once their head's time is up.
  bool closed = false;
  std::string late = ReadAll(idle[0], 3, &closed);
  EXPECT_TRUE(closed);
  EXPECT_NE(late.find("408"), std::string::npos) << late;
  EXPECT_NEAR(SecondsSince(t0), 1.0, 0.5);
  for (int i : idle) close(i);
}

TEST(WebServer, ConnectionsOverAClientsCapAreRefusedAtOnce) {
  WebServerOptions o;
  o.max_connections_per_client = 3;
  o.header_timeout_seconds = 10;
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Hello, o).ok());
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(Connect(server.port(), "127.0.2.1"));
    Send(held.back(), "GET / HTTP/1.1\r\n");  // accept() sees a connection once it has bytes
  }
  // The fourth from the same address: 503 at once, not queued behind the others.
  const auto t0 = std::chrono::steady_clock::now();
  int fourth = Connect(server.port(), "127.0.2.1");
  Send(fourth, "GET / HTTP/1.1\r\n");
  bool closed = false;
  std::string got = ReadAll(fourth, 2, &closed);
  EXPECT_LT(SecondsSince(t0), 0.5);
  EXPECT_TRUE(closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  EXPECT_NE(got.find("Retry-After: 1"), std::string::npos) << got;
  close(fourth);
  // Another address is served.
  int other = Connect(server.port(), "127.0.2.2");
  Send(other, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(ReadOne(other).find("hello GET /a"), std::string::npos);
  EXPECT_EQ(server.stats().refused_total, 1);
  EXPECT_EQ(server.stats().connections, 4);
  close(other);
  for (int h : held) close(h);
}

// A connection that sends nothing is never handed to the server (TCP_DEFER_ACCEPT): it takes no
// slot, and the clients that ask are served.
TEST(WebServer, ConnectionsThatSendNothingTakeNoSlot) {
  WebServerOptions o;
  o.max_connections_per_client = 2;
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Hello, o).ok());
  std::vector<int> silent;
  for (int i = 0; i < 20; ++i) silent.push_back(Connect(server.port(), "127.0.2.7"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(server.stats().accepted_total, 0);
  int asks = Connect(server.port(), "127.0.2.7");
  Send(asks, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(ReadOne(asks).find("hello GET /a"), std::string::npos);
  EXPECT_EQ(server.stats().refused_total, 0);
  close(asks);
  for (int fd : silent) close(fd);
}

// Over the total, the connection that has waited longest for its request to be complete makes
// room: idle and trickling clients yield to one with a request.
TEST(WebServer, OverTheTotalTheOldestIncompleteConnectionMakesRoom) {
  WebServerOptions o;
  o.max_connections = 4;
  o.header_timeout_seconds = 10;
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Hello, o).ok());
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(Connect(server.port(), ("127.0.3." + std::to_string(i + 1)).c_str()));
    Send(held.back(), "GET /x HTTP/1.1\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // an order to evict in
  }
  int fresh = Connect(server.port(), "127.0.3.9");
  Send(fresh, "GET /fresh HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(ReadOne(fresh).find("hello GET /fresh"), std::string::npos);
  bool closed = false;
  ReadAll(held[0], 1, &closed);
  EXPECT_TRUE(closed) << "the oldest made room";
  ReadAll(held[1], 0.2, &closed);
  EXPECT_FALSE(closed) << "only the oldest";
  EXPECT_EQ(server.stats().evicted_total, 1);
  EXPECT_EQ(server.stats().refused_total, 0);
  close(fresh);
  for (int h : held) close(h);
}

// The probe listener's client is the node's address, which every hostNetwork pod on the node
// shares: there a client over its cap closes its own oldest incomplete connection, so a pod that
// holds connections open cannot lock the kubelet's probes out.
TEST(WebServer, WithinAClientItsOldestIncompleteConnectionCanMakeRoom) {
  WebServerOptions o;
  o.max_connections_per_client = 4;
  o.evict_within_client = true;
  o.header_timeout_seconds = 10;
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Hello, o).ok());
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(Connect(server.port()));
    Send(held.back(), "GET /healthz HTTP/1.1\r\n");
  }
  for (int round = 0; round < 10; ++round) {  // each probe makes room for itself
    int probe = Connect(server.port());
    Send(probe, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_NE(ReadOne(probe).find("hello GET /healthz"), std::string::npos) << round;
    close(probe);
    held.push_back(Connect(server.port()));
    Send(held.back(), "GET /healthz HTTP/1.1\r\n");
  }
  EXPECT_EQ(server.stats().refused_total, 0);
  EXPECT_GE(server.stats().evicted_total, 10);
  for (int h : held) close(h);
}

TEST(WebServer, KeepAliveIsBoundedInTimeAndRequests) {
  WebServerOptions o;
  o.idle_timeout_seconds = 0.5;
  o.max_requests_per_connection = 3;
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Hello, o).ok());
  int fd = Connect(server.port());
  for (int i = 1; i <= 3; ++i) {
    Send(fd, "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string got = ReadOne(fd);
    EXPECT_NE(got.find("hello GET /" + std::to_string(i)), std::string::npos) << got;
    EXPECT_EQ(got.find("Connection: close") != std::string::npos, i == 3) << got;
  }
  bool closed = false;
  ReadAll(fd, 2, &closed);
  EXPECT_TRUE(closed);
  close(fd);
  // Idle between requests: closed after idle_timeout, quietly (no 408 for a client not asking).
  fd = Connect(server.port());
  Send(fd, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
  ReadOne(fd);
  const auto t0 = std::chrono::steady_clock::now();
  std::string rest = ReadAll(fd, 3, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(rest, "");
  EXPECT_NEAR(SecondsSince(t0), 0.5, 0.4);
  close(fd);
}

TEST(WebServer, PipelinedRequestsAreAnsweredInOrder) {
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Hello).ok());
  int fd = Connect(server.port());
  Send(fd,
       "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nPOST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n"
       "abcGET /3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  bool closed = false;
  std::string got = ReadAll(fd, 3, &closed);
  EXPECT_TRUE(closed);
  size_t a = got.find("hello GET /1"), b = got.find("hello POST /2 body=abc"),
         c = got.find("hello GET /3");
  ASSERT_NE(a, std::string::npos) << got;
  ASSERT_NE(b, std::string::npos) << got;
  ASSERT_NE(c, std::string::npos) << got;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  close(fd);
}

TEST(WebServer, BadHeadsAndLargeBodiesAreAnsweredAndClosed) {
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Hello).ok());
  struct Case {
    std::string request;
    const char* status;
  } cases[] = {
      {"GET /x HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", "HTTP/1.1 400"},
      {"GET /x HTTP/1.1\r\n\r\n", "HTTP/1.1 400"},  // HTTP/1.1 without Host
      {"GET /x HTTP/2.0\r\n\r\n", "HTTP/1.1 505"},
      {"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 501"},
      {"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(kMaxRequestBody + 1) +
           "\r\n\r\n",
       "HTTP/1.1 413"},
      {"GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n\r\n", "HTTP/1.1 414"},
      {"GET / HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n", "HTTP/1.1 431"},
  };
  for (const Case& c : cases) {
    int fd = Connect(server.port());
    Send(fd, c.request);
    bool closed = false;
    std::string got = ReadAll(fd, 3, &closed);
    EXPECT_EQ(got.rfind(c.status, 0), 0u) << c.request.substr(0, 60) << " -> " << got;
    EXPECT_TRUE(closed) << c.request.substr(0, 60);
    close(fd);
  }
  EXPECT_GE(server.stats().bad_requests_total, 4);
}

TEST(WebServer, HeadAnswersCarryNoBodyAndAClientThatClosedItsSideIsAnswered) {
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Hello).ok());
  int fd = Connect(server.port());
  Send(fd, "HEAD /x HTTP/1.0\r\n\r\n");
  shutdown(fd, SHUT_WR);  // as `printf ... | nc` does
  bool closed = false;
  std::string got = ReadAll(fd, 3, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_NE(got.find("Content-Length: 13"), std::string::npos) << got;
  EXPECT_EQ(got.substr(got.size() - 4), "\r\n\r\n") << got;
  close(fd);
}

// A 413 to a client still sending its body reaches it: the server reads and drops the rest before
// it closes (closing with unread bytes would send a reset, and the client could lose the answer).
TEST(WebServer, AnAnswerThatClosesReachesAClientStillSending) {
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Hello).ok());
  for (int i = 0; i < 3; ++i) {
    int fd = Connect(server.port());
    const size_t body = 64 << 20;  // more than the socket buffers hold
    Send(fd, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body) +
                 "\r\n\r\n");
    // As urllib and many clients do: the whole body first, the answer after. A send that fails
    // (the server reset the connection) is where such a client gives up without an answer.
    const std::string chunk(65536, 'x');
    bool all_sent = true;
    for (size_t sent = 0; sent < body && all_sent; sent += chunk.size())
      all_sent = send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) == ssize_t(chunk.size());
    EXPECT_TRUE(all_sent) << "round " << i << ": " << strerror(errno);
    bool closed = false;
    std::string got = ReadAll(fd, 5, &closed);
    EXPECT_EQ(got.rfind("HTTP/1.1 413", 0), 0u) << "round " << i << ": " << got;
    close(fd);
  }
}

// Complete requests beyond the workers and the queue are answered 503 at once, not queued.
TEST(WebServer, RequestsBeyondTheQueueAreBusy) {
  std::atomic<bool> release{false};
  WebServerOptions o;
  o.workers = 1;
  o.max_queued_requests = 1;
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", HeldUntil(&release), o).ok());
  int a = Connect(server.port()), b = Connect(server.port()), c = Connect(server.port());
  Send(a, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Send(b, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Send(c, "GET /c HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got = ReadOne(c, 2);
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  release = true;
  EXPECT_NE(ReadOne(a).find("hello GET /a"), std::string::npos);
  EXPECT_NE(ReadOne(b).find("hello GET /b"), std::string::npos);
  EXPECT_EQ(server.stats().busy_total, 1);
  close(a);
  close(b);
  close(c);
}

// A client that trickles its head a byte at a time does not buy time with each byte: the head's
// deadline runs from its first byte.
TEST(WebServer, ATrickledHeadGetsNoMoreThanTheHeadDeadline) {
  WebServerOptions o;
  o.header_timeout_seconds = 1;
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Hello, o).ok());
  int fd = Connect(server.port());
  const std::string head = "GET /slow HTTP/1.1\r\nHost: x\r\nX-Padding: ";
  const auto t0 = std::chrono::steady_clock::now();
  bool closed = false;
  std::string got;
  for (size_t i = 0; !closed && SecondsSince(t0) < 5; ++i) {
    (void)!send(fd, &head[i % head.size()], 1, MSG_NOSIGNAL);
    got += ReadAll(fd, 0.2, &closed);
  }
  EXPECT_TRUE(closed);
  EXPECT_NE(got.find("408"), std::string::npos) << got;
  EXPECT_LT(SecondsSince(t0), 1.8);
  close(fd);
}

// A client that asks for a large answer and does not read it is closed once it has taken nothing
// for write_timeout_seconds.
TEST(WebServer, AReaderThatTakesNothingIsClosed) {
  WebServerOptions o;
  o.write_timeout_seconds = 0.5;
  WebServer server;
  ASSERT_TRUE(server
                  .Start(
                      "127.0.0.1:0",
                      [](const WebRequest&) {
                        WebResponse w;
                        w.body.assign(64 << 20, 'x');  // far more than the socket buffers hold
                        return w;
                      },
                      o)
                  .ok());
  int fd = Connect(server.port());
  Send(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  // The count goes up, then the connection is closed: wait for both.
  for (int i = 0;
       i < 50 && (server.stats().timed_out_total == 0 || server.stats().connections != 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(server.stats().timed_out_total, 1);
  EXPECT_EQ(server.stats().connections, 0);
  close(fd);
}

// Closes `fd` with a reset (SO_LINGER 0), as a client that gives up does.
void Reset(int fd) {
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close(fd);
}

// An answer computed for a connection that has closed since is dropped: not sent to the next
// connection that got the same descriptor number. And a request still queued when its connection
// closes is not run at all.
TEST(WebServer, AnswersOfClosedConnectionsGoNowhere) {
  std::atomic<bool> release{false};
  std::atomic<int> ran_queued{0};
  WebServerOptions o;
  o.workers = 1;
  WebServer server;
  ASSERT_TRUE(server
                  .Start(
                      "127.0.0.1:0",
                      [&](const WebRequest& r) {
                        if (r.path == "/block")
                          while (!release)
                            std::this_thread::sleep_for(std::chrono::milliseconds(5));
                        if (r.path == "/queued") ++ran_queued;
                        return Hello(r);
                      },
                      o)
                  .ok());
  int a = Connect(server.port());
  Send(a, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // running on the one worker
  int q = Connect(server.port());
  Send(q, "GET /queued HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // queued behind it
  // The next clients' sockets exist before a and q go, so that the numbers freed go to the
  // server's side: it accepts the next connections under a's and q's descriptor numbers.
  std::vector<int> next;
  for (int i = 0; i < 4; ++i) next.push_back(socket(AF_INET, SOCK_STREAM, 0));
  Reset(q);
  Reset(a);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server has closed both
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(Connect(server.port(), "127.0.0.1", next[i]), next[i]);
    Send(next[i], "GET /n" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // accepted in this order
  }
  release = true;
  for (int i = 0; i < 4; ++i) {
    std::string got = ReadOne(next[i]);
    EXPECT_NE(got.find("hello GET /n" + std::to_string(i)), std::string::npos) << got;
    EXPECT_EQ(got.find("/block"), std::string::npos) << got;
    close(next[i]);
  }
  EXPECT_EQ(ran_queued, 0);
}

// Bodies held before any handler has seen them share a budget: beyond it, 503 at once.
TEST(WebServer, RequestBodiesHeldAtOnceAreBounded) {
  WebServerOptions o;
  o.max_buffered_body_bytes = 100000;
  o.header_timeout_seconds = 10;
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Hello, o).ok());
  int a = Connect(server.port()), b = Connect(server.port());
  Send(a, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 80000\r\n\r\nstart");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Send(b, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 80000\r\n\r\nstart");
  std::string got = ReadOne(b, 2);
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  // a finishes its body and is answered; then the budget is free again.
  Send(a, std::string(80000 - 5, 'x'));
  EXPECT_NE(ReadOne(a).find("hello POST /webhook"), std::string::npos);
  int c = Connect(server.port());
  Send(c, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_NE(ReadOne(c).find("body=abc"), std::string::npos);
  close(a);
  close(b);
  close(c);
}

// One client may have only max_queued_per_client requests waiting for the workers: another
// client's request still gets its place.
TEST(WebServer, OneClientsRequestsDoNotFillTheQueue) {
  std::atomic<bool> release{false};
  WebServerOptions o;
  o.workers = 1;
  o.max_queued_per_client = 2;
  WebServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", HeldUntil(&release), o).ok());
  std::vector<int> mine;
  for (int i = 0; i < 4; ++i) {
    mine.push_back(Connect(server.port(), "127.0.4.1"));
    Send(mine.back(), "GET /m HTTP/1.1\r\nHost: x\r\n\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(ReadOne(mine[2], 2).rfind("HTTP/1.1 503", 0), 0u);
  EXPECT_EQ(ReadOne(mine[3], 2).rfind("HTTP/1.1 503", 0), 0u);
  int other = Connect(server.port(), "127.0.4.2");
  Send(other, "GET /other HTTP/1.1\r\nHost: x\r\n\r\n");
  release = true;
  EXPECT_NE(ReadOne(other).find("hello GET /other"), std::string::npos);
  EXPECT_NE(ReadOne(mine[0]).find("hello GET /m"), std::string::npos);
  EXPECT_NE(ReadOne(mine[1]).find("hello GET /m"), std::string::npos);
  for (int m : mine) close(m);
  close(other);
}

// A TLS client that sends `request` and resets the connection without waiting for the answer.
void TlsRequestThenReset(int port, const std::string& request) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  int fd = Connect(port);
  SSL_set_fd(ssl, fd);
  if (SSL_connect(ssl) == 1) SSL_write(ssl, request.data(), static_cast<int>(request.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the answer is being written
  Reset(fd);
  SSL_free(ssl);
  SSL_CTX_free(ctx);
}

// TLS from PEM files made by the openssl command, and a certificate replaced on disk is served
// without a restart.
TEST(WebServer, ServesTlsAndReloadsARotatedCertificate) {
  char dir_tmpl[] = "/tmp/ds_web_tls_XXXXXX";
  ASSERT_NE(mkdtemp(dir_tmpl), nullptr);
  const std::string dir = dir_tmpl;
  auto make_cert = [&](const std::string& cn) {
    const std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
        "-subj /CN=" +
        cn + " -addext subjectAltName=IP:127.0.0.1 -keyout " + dir + "/tls.key.new -out " + dir +
        "/tls.crt.new 2>/dev/null && mv " + dir + "/tls.key.new " + dir + "/tls.key && mv " + dir +
        "/tls.crt.new " + dir + "/tls.crt";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  };
  make_cert("first");
  WebServerOptions o;
  o.tls_cert_file = dir + "/tls.crt";
  o.tls_key_file = dir + "/tls.key";
  o.tls_reload_seconds = 0.2;
  WebServer server;
  ASSERT_TRUE(server
                  .Start(
                      "127.0.0.1:0",
                      [](const WebRequest& r) {
                        if (r.path != "/big") return Hello(r);
                        WebResponse w;
                        w.body.assign(16 << 20, 'x');  // still being written when the reset comes
                        return w;
                      },
                      o)
                  .ok());
  auto issuer = [&]() {
    const std::string cmd =
        "echo | openssl s_client -connect 127.0.0.1:" + std::to_string(server.port()) +
        " 2>/dev/null | openssl x509 -noout -subject 2>/dev/null";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    char buf[256];
    while (fgets(buf, sizeof(buf), p)) out += buf;
    pclose(p);
    return out;
  };
  EXPECT_NE(issuer().find("CN = first"), std::string::npos);
  TlsOptions tls;
  {
    std::ifstream f(dir + "/tls.crt");
    tls.ca_pem.assign(std::istreambuf_iterator<char>(f), {});
  }
  CurlTransport https(tls);
  HttpRequest req;
  req.url = "https://127.0.0.1:" + std::to_string(server.port()) + "/secure";
  auto resp = https.Do(req);
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->body, "hello GET /secure");
  // Plain HTTP to a TLS port gets nowhere, and the port keeps serving.
  int fd = Connect(server.port());
  Send(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  bool closed = false;
  ReadAll(fd, 3, &closed);
  EXPECT_TRUE(closed);
  close(fd);
  // A TLS client that sends a request and resets: the answer's write fails (with SIGPIPE, were it
  // not ignored: the process would end here), and a bad request over TLS is answered and closed.
  for (int i = 0; i < 20; ++i) {
    TlsRequestThenReset(server.port(), "GET /secure HTTP/1.1\r\nHost: x\r\n\r\n");
    TlsRequestThenReset(server.port(), "BAD\r\n\r\n");
    TlsRequestThenReset(server.port(), "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  for (int i = 0; i < 20; ++i) {
    int fd = Connect(server.port());
    Send(fd, std::string("\x16\x03\x01\x00\x05hello", 10));  // half a ClientHello, then a reset
    Reset(fd);
  }
  resp = https.Do(req);
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->body, "hello GET /secure");
  make_cert("second");
  bool rotated = false;
  for (int i = 0; i < 50 && !rotated; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rotated = issuer().find("CN = second") != std::string::npos;
  }
  EXPECT_TRUE(rotated);
  EXPECT_GE(server.stats().tls_failures_total, 1);
  std::system(("rm -rf " + dir).c_str());
}

TEST(WebServer, TlsFilesThatDoNotLoadAreAnErrorAtStart) {
  WebServerOptions o;
  o.tls_cert_file = "/nonexistent/tls.crt";
  o.tls_key_file = "/nonexistent/tls.key";
  WebServer server;
  Status st = server.Start("127.0.0.1:0", Hello, o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent/tls.crt"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace ds
