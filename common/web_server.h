// CivetWeb behind one adapter: turns a connection into a WebRequest, calls the handler, writes
// the WebResponse, and routes CivetWeb's own log lines into glog.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

struct mg_context;
struct mg_connection;

namespace ds {

struct WebRequest {
  std::string method;
  std::string path;
  long long content_length = -1;  // -1 when unknown
  std::string body;               // read only for POST, up to kMaxRequestBody
  std::string authorization;      // the Authorization header, "" when absent
  std::string query = {};         // after '?', still percent-encoded; "" when absent
};

struct WebResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::string> headers;  // extra "Name: value" lines
};

// POST bodies above this are not read; the handler sees content_length > kMaxRequestBody.
inline constexpr long long kMaxRequestBody = 1 << 20;

class WebServer {
 public:
  using Handler = std::function<WebResponse(const WebRequest&)>;
  WebServer() = default;
  ~WebServer();
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  // addr: ":9000", "127.0.0.1:9000", "[::1]:9000" or "127.0.0.1:0" (any free port).
  Status Start(const std::string& addr, Handler handler, int threads = 8);
  void Stop();
  int port() const { return port_; }

 private:
  static int OnRequest(::mg_connection* conn, void* self);
  mg_context* ctx_ = nullptr;
  Handler handler_;
  int port_ = 0;
};

// Converts -webaddr to CivetWeb's listening_ports syntax; error for anything else.
StatusOr<std::string> ToListeningPorts(const std::string& addr);

}  // namespace ds
