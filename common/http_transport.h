// The HTTP seam shared by the Prometheus and Kubernetes clients. CurlTransport is the only file
// that includes <curl/curl.h>; tests substitute a fake that records requests.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"

namespace ds {

struct TlsOptions {
  std::string ca_pem;           // PEM bundle to verify the server; empty: system CAs
  std::string client_cert_pem;  // client certificate (PEM), optional
  std::string client_key_pem;   // its key (PEM), required with client_cert_pem
  bool insecure_skip_verify = false;
  // The name the server's certificate must carry (and the TLS SNI) instead of the URL's host,
  // which stays where connections go and what the Host header says: kubeconfig's
  // tls-server-name. Empty: the URL's host. Applies to https:// URLs only.
  std::string server_name;
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  double timeout_seconds = 30;  // whole exchange; 0 = no limit (watch streams)
  double connect_timeout_seconds = 10;
  // Abort when (on average) less than one byte arrives per second for this long, waiting for the
  // answer included; 0 = never. Catches a peer that hangs without closing the connection.
  double idle_timeout_seconds = 0;
  size_t max_body_bytes = 64u << 20;  // larger responses fail instead of exhausting memory
  bool accept_compressed = false;     // ask for gzip (smaller bodies, more CPU)
  // The size the answer is expected to have (the same query's last answer, say), reserved when
  // its first bytes arrive. Grown by doubling instead, a megabyte body is copied some seven
  // times, and each smaller buffer it leaves behind is a hole in the heap of the thread that
  // received it. 0: no hint. Never more than max_body_bytes is reserved.
  size_t body_bytes_hint = 0;
  // Asked once the connection is up (TLS handshake done), immediately before the request is sent;
  // false aborts without sending anything (kCancelled). A leader's label writes use it so that
  // a write cannot leave after leadership ended during a slow connect. It is asked again (at
  // least once a second) while the answer is awaited: false then abandons the request with
  // kCancelled, which frees the caller (a shutdown must not wait out a hung PATCH) but cannot
  // unsend it: the server may still apply it.
  std::function<bool()> send_if;
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  // Value of the first header with this (lower-case) name, or "" if absent.
  std::string Header(std::string_view lower_name) const;
};

// Outcome of a streamed request. For a non-2xx answer the body is collected in error_body
// (bounded) instead of being handed to the data callback.
struct StreamResult {
  int status = 0;
  std::string error_body;
  std::vector<std::pair<std::string, std::string>> headers;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Performs one exchange. A non-2xx answer is still a value (callers map it to a Status);
  // an error Status means no HTTP answer (connect, TLS, timeout, body too large).
  // Thread-safe.
  virtual StatusOr<HttpResponse> Do(const HttpRequest& req) = 0;
  // Streams a 2xx body to on_data piece by piece as it arrives. Stops early, with an OK result,
  // when on_data returns false; stops with kCancelled when cancelled() turns true (polled at
  // least once a second even while the stream is idle). Thread-safe.
  virtual StatusOr<StreamResult> Stream(const HttpRequest& req,
                                        const std::function<bool(std::string_view)>& on_data,
                                        const std::function<bool()>& cancelled) = 0;
};

// libcurl implementation. Keeps a pool of easy handles so connections and TLS sessions are
// reused across requests from any thread.
class CurlTransport : public HttpTransport {
 public:
  // `proxy_url`: every request goes through this proxy (http://, https:// or socks5://, where
  // the proxy resolves the server's name, as client-go's socks5 does); the environment's
  // *_proxy and NO_PROXY variables are then not consulted. Empty: libcurl's default, which
  // honours those variables. REQUIRES: proxy_url is empty or has one of those schemes.
  explicit CurlTransport(TlsOptions tls = {}, std::string proxy_url = "");
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  StatusOr<HttpResponse> Do(const HttpRequest& req) override;
  StatusOr<StreamResult> Stream(const HttpRequest& req,
                                const std::function<bool(std::string_view)>& on_data,
                                const std::function<bool()>& cancelled) override;

 private:
  void* Acquire();
  void Release(void* handle);

  const TlsOptions tls_;
  const std::string proxy_url_;  // as libcurl takes it (socks5h:// for socks5://)
  Mutex mu_;
  std::vector<void*> free_handles_ GUARDED_BY(mu_);
};

// How a request reaches `url` while its server's certificate is verified against another name
// (TlsOptions::server_name): libcurl verifies (and sends as SNI) the URL's host, so the URL names
// server_name and a CURLOPT_CONNECT_TO entry sends its connections to the original host and port;
// the Host header keeps the original authority, as client-go sends it.
struct ServerNameRoute {
  std::string url;          // `url` with its host replaced by the server name
  std::string connect_to;   // "server_name:port:host:port"
  std::string host_header;  // "Host: <the original host[:port]>"
};
// The route for an https:// URL, or nullopt for any other URL (http://: no TLS; one with
// user info or without a host: left alone). Pure.
std::optional<ServerNameRoute> RouteToServerName(std::string_view url,
                                                 std::string_view server_name);

// Percent-encodes a string for a URL query component.
std::string UrlEncode(std::string_view s);

}  // namespace ds
