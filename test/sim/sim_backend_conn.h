// One HTTP/1.1 exchange between the simulated API server and a Service's backend, over TCP or
// TLS, with the settings of kube-apiserver's proxy transport (kubernetes
// pkg/controlplane/apiserver/config.go CreateProxyTransport, and apimachinery's
// utilnet.SetTransportDefaults): dial timeout 30 s, TLS handshake timeout 10 s, the backend's
// certificate not verified ("Proxying to pods and services is IP-based... don't expect to be able
// to verify the hostname": InsecureSkipVerify) and no SNI (Go sends none for an IP address).
// Failures are worded as Go's errors are, since the API server puts them in its answer
// ("dial tcp 10.0.0.7:8080: connect: connection refused").
//
// Differences from Go's transport, none visible to a client of the API server: HTTP/1.1 only (Go
// would speak HTTP/2 to a TLS backend that offers it), one connection per request (no pool), no
// "Accept-Encoding: gzip" added to a request that has none (Go adds it and decompresses the
// answer itself, so the client sees the same body either way).
//
// Not thread-safe: one per request, on the request's thread.
#pragma once

#include <functional>
#include <string>

#include "test/sim/sim_proxy_rules.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace sim {

struct BackendResponseHead {
  int status = 0;
  HeaderList headers;  // as received, names as sent
  enum class Framing { kNone, kLength, kChunked, kUntilClose };
  Framing framing = Framing::kNone;
  long long length = 0;  // kLength
};

class BackendConnection {
 public:
  BackendConnection() = default;
  ~BackendConnection();
  BackendConnection(const BackendConnection&) = delete;
  BackendConnection& operator=(const BackendConnection&) = delete;

  // Dials ip:port and, when `tls`, makes the TLS handshake. False with *error on failure.
  bool Connect(const std::string& ip, int port, bool tls, std::string* error);
  // Writes all of `bytes`. False with *error on failure.
  bool Send(const std::string& bytes, std::string* error);
  // Reads the status line and the headers of the final answer (interim 1xx ones but 101 are
  // skipped) and works out how the body is framed (RFC 9112 §6.3: none for HEAD, 1xx, 204 and
  // 304; chunked; Content-Length; else until the backend closes).
  bool ReadHead(bool head_request, BackendResponseHead* head, std::string* error);
  // Reads the body, handing each piece to `sink` as it arrives (sink returns false: stop, as
  // when the client went away). False with *error when the body breaks off.
  bool ReadBody(const BackendResponseHead& head,
                const std::function<bool(const char*, size_t)>& sink, std::string* error);

 private:
  // Up to n bytes into buf, what is buffered first: > 0 read, 0 at the end of the stream, < 0
  // an error (*error set).
  long Read(char* buf, size_t n, std::string* error);
  // The same from the connection itself.
  long ReadSocket(char* buf, size_t n, std::string* error);
  // One line (without CRLF or LF) into *line; false at the end of the stream or on an error.
  bool ReadLine(std::string* line, std::string* error);
  // One status line and its headers into *head (status and headers only).
  bool ReadOneHead(BackendResponseHead* head, std::string* error);

  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  std::string peer_;      // "ip:port" for error messages
  std::string buffered_;  // read from the connection but not consumed
};

}  // namespace sim
