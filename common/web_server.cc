#include "common/web_server.h"

#include <civetweb.h>

#include <cstring>

namespace ds {

StatusOr<std::string> ToListeningPorts(const std::string& addr) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos)
    return Status::InvalidArgument("-webaddr \"" + addr + "\": expected [host]:port, e.g. :9000");
  std::string host = addr.substr(0, colon), port = addr.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535)
    return Status::InvalidArgument("-webaddr \"" + addr + "\": port must be a number 0-65535");
  if (host.empty()) return port;
  if (host.front() == '[') {
    // CivetWeb's own syntax for one IPv6 address is the same, "[::1]:9000" ("+9000" would be
    // every IPv4 and IPv6 address).
    if (host.back() != ']' || host.size() < 3 ||
        host.find_first_not_of("0123456789abcdefABCDEF:.", 1) != host.size() - 1)
      return Status::InvalidArgument("-webaddr \"" + addr + "\": expected [IPv6 address]:port");
    return addr;
  }
  if (host.find_first_not_of("0123456789.") != std::string::npos && host != "localhost")
    return Status::InvalidArgument("-webaddr \"" + addr + "\": host must be an IP address");
  return (host == "localhost" ? std::string("127.0.0.1") : host) + ":" + port;
}

WebServer::~WebServer() { Stop(); }

namespace {
int LogMessage(const ::mg_connection*, const char* message) {
  LOG(WARNING) << "http server: " << message;
  return 1;
}
}  // namespace

Status WebServer::Start(const std::string& addr, Handler handler, int threads) {
  ASSIGN_OR_RETURN(std::string ports, ToListeningPorts(addr));
  mg_init_library(0);
  // Feature 8 is IPv6. Debian's civetweb 1.15 is built without it: say so rather than CivetWeb's
  // "invalid port spec".
  if (ports.front() == '[' && mg_check_feature(8) == 0)
    return Status::InvalidArgument(
        "-webaddr " + addr +
        ": the CivetWeb library this binary uses was built without IPv6 (Debian's is); listen on "
        "an IPv4 address instead, e.g. 127.0.0.1:9000, or :9000 for every IPv4 address");
  handler_ = std::move(handler);
  std::string nthreads = std::to_string(threads);
  const char* options[] = {"listening_ports", ports.c_str(), "num_threads", nthreads.c_str(),
                           "request_timeout_ms",
                           "5000",  // slow clients cannot hold workers long
                           "enable_keep_alive", "yes", "max_request_size", "16384",
                           // CivetWeb writes headers and body apart: with Nagle, a scrape on a
                           // kept-alive connection waited 40 ms for the client's delayed ACK.
                           "tcp_nodelay", "1", nullptr};
  mg_callbacks cb;
  std::memset(&cb, 0, sizeof(cb));
  cb.log_message = LogMessage;
  ctx_ = mg_start(&cb, nullptr, options);
  if (ctx_ == nullptr)
    return Status::InvalidArgument("-webaddr " + addr + ": cannot listen (address in use?)");
  mg_set_request_handler(ctx_, "/", &WebServer::OnRequest, this);
  struct mg_server_port sp[4];
  int n = mg_get_server_ports(ctx_, 4, sp);
  if (n > 0) port_ = sp[0].port;
  return Status::OK();
}

void WebServer::Stop() {
  if (ctx_ != nullptr) {
    mg_stop(ctx_);
    ctx_ = nullptr;
  }
}

int WebServer::OnRequest(::mg_connection* conn, void* self) {
  auto* server = static_cast<WebServer*>(self);
  const mg_request_info* ri = mg_get_request_info(conn);
  WebRequest req;
  req.method = ri->request_method ? ri->request_method : "";
  req.path = ri->local_uri ? ri->local_uri : "";
  req.query = ri->query_string ? ri->query_string : "";
  req.content_length = ri->content_length;
  if (const char* auth = mg_get_header(conn, "Authorization")) req.authorization = auth;
  if (req.method == "POST" && req.content_length <= kMaxRequestBody) {
    // Drain the (bounded) body so the connection can be reused.
    char buf[8192];
    int n;
    while ((n = mg_read(conn, buf, sizeof(buf))) > 0) {
      if (static_cast<long long>(req.body.size()) + n > kMaxRequestBody) {
        req.content_length = kMaxRequestBody + 1;
        break;
      }
      req.body.append(buf, static_cast<size_t>(n));
    }
  }
  WebResponse resp = server->handler_(req);
  std::string head = "HTTP/1.1 " + std::to_string(resp.status) + " " +
                     mg_get_response_code_text(conn, resp.status) +
                     "\r\nContent-Type: " + resp.content_type +
                     "\r\nContent-Length: " + std::to_string(resp.body.size()) + "\r\n";
  for (const auto& h : resp.headers) head += h + "\r\n";
  if (resp.status == 413) head += "Connection: close\r\n";
  head += "\r\n";
  mg_write(conn, head.data(), head.size());
  if (req.method != "HEAD") mg_write(conn, resp.body.data(), resp.body.size());
  return resp.status;
}

}  // namespace ds
