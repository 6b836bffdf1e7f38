// The controller's HTTP listener: its own event loop (epoll), because CivetWeb 1.15 gives each
// connection a worker that blocks on its reads until request_timeout_ms: 40 clients that send half
// a request each held all 8 workers and /healthz answered after 23.7 s (issue 43). Here a
// connection costs a buffer, not a thread, until its request head is complete; then the request
// goes to a small pool of workers that run the (pure) handler, and the loop writes the answer.
// What a hostile or broken client can take is bounded: connections in total and per client
// address (the excess is answered 503 and closed at once, never queued), the time to send a
// request head, the time a kept-alive connection may idle, the requests per connection, the
// requests waiting for a worker, in all and per client (503 beyond), the bytes of request bodies
// held at once, the time to take an answer. A connection is accepted only once its first bytes
// arrive (TCP_DEFER_ACCEPT), and they are read at once. The process ignores SIGPIPE (Start).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

struct WebRequest {
  std::string method;
  std::string path;
  long long content_length = -1;  // -1 when unknown
  std::string body;               // read only for POST, up to kMaxRequestBody
  std::string authorization;      // the Authorization header, "" when absent
  std::string query = {};         // after '?', still percent-encoded; "" when absent
  std::string client = {};        // the client's address ("10.1.2.3"), for logs
};

struct WebResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::string> headers;  // extra "Name: value" lines
};

// POST bodies above this are not read; the handler sees content_length > kMaxRequestBody.
inline constexpr long long kMaxRequestBody = 1 << 20;

struct WebServerOptions {
  // Open connections in total and from one client address. A connection over the client's cap is
  // answered 503 with "Connection: close" (over TLS: just closed) at once. Over the total, the
  // connection that has waited longest for its request to be complete is closed to make room,
  // and only when every connection is being answered is the new one refused. Connections here are
  // cheap (a few KiB until a request is complete), so the total is far above any honest load: it
  // bounds memory and file descriptors, and is lowered to what RLIMIT_NOFILE allows.
  int max_connections = 2048;
  int max_connections_per_client = 64;
  // A request's head (request line and headers) must be complete within this many seconds of the
  // connection's first byte being awaited; a body within the same time again. Far below the
  // kubelet's probe period: a client that trickles a request cannot hold anything long.
  double header_timeout_seconds = 3;
  // A kept-alive connection between requests: closed after this long idle, and after
  // max_requests_per_connection answers (so one client cannot keep one connection for ever).
  double idle_timeout_seconds = 30;
  int max_requests_per_connection = 1000;
  // An answer must be taken by the client within this long (bytes moving, not all of it).
  double write_timeout_seconds = 10;
  // Threads that run the handler, and complete requests that may wait for one (503 beyond), in
  // all and from one client address.
  int workers = 4;
  int max_queued_requests = 256;
  int max_queued_per_client = 16;
  // Request bodies held at once, before any handler has looked at them (503 beyond).
  size_t max_buffered_body_bytes = 16 << 20;
  // A client over max_connections_per_client: its own oldest incomplete connection is closed to
  // make room (the probe listener, whose client is the node's address, shared with every
  // hostNetwork pod on it), rather than the new one refused.
  bool evict_within_client = false;
  // TLS from a mounted certificate (PEM files, both or neither); looked at every
  // tls_reload_seconds and re-read when they changed, so a rotated Secret needs no restart.
  std::string tls_cert_file, tls_key_file;
  double tls_reload_seconds = 10;
};

// How the listener is doing, for /metrics: what it holds and what it turned away.
struct WebServerStats {
  long long connections = 0;         // open now
  long long accepted_total = 0;      // connections taken in
  long long refused_total = 0;       // over max_connections or max_connections_per_client
  long long evicted_total = 0;       // incomplete connections closed to make room for new ones
  long long busy_total = 0;          // complete requests answered 503: max_queued_requests
  long long timed_out_total = 0;     // closed for a head, body or answer that came too slowly
  long long bad_requests_total = 0;  // heads that could not be parsed (4xx/5xx, closed)
  long long tls_failures_total = 0;  // handshakes or records that failed
};

class WebServer {
 public:
  using Handler = std::function<WebResponse(const WebRequest&)>;
  WebServer();
  ~WebServer();
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  // addr: ":9000", "127.0.0.1:9000", "[::1]:9000" or "127.0.0.1:0" (any free port). `handler`
  // runs on the worker threads, several at once.
  Status Start(const std::string& addr, Handler handler, WebServerOptions options = {});
  // Closes the listener and every connection; waits for handlers running now.
  void Stop();
  int port() const { return port_; }
  WebServerStats stats() const;

 private:
  struct Loop;
  struct Counters;
  std::unique_ptr<Counters> counters_;  // outlives every loop: stats() may run during Stop()
  std::unique_ptr<Loop> loop_;
  int port_ = 0;
};

// -webaddr (or -probeaddr) parsed: an IP address (empty: every IPv4 address) and a port.
struct ListenAddress {
  std::string host;  // "", "127.0.0.1", "::1"
  int port = 0;
  bool ipv6 = false;
};
StatusOr<ListenAddress> ParseListenAddress(const std::string& addr);

}  // namespace ds
