// CivetWeb behind one adapter: turns a connection into a WebRequest, calls the handler, writes
// the WebResponse, and routes CivetWeb's own log lines into glog.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "controller/status_page.h"

struct mg_context;
struct mg_connection;

namespace ds {

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
