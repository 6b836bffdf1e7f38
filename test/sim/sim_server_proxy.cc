// The services/proxy subresource:
// /api/v1/namespaces/NS/services/{[scheme:]name[:port]}/proxy[/path] passes a request on to one
// ready endpoint of the Service and its answer back, as kube-apiserver does (kubernetes
// pkg/registry/core/service/proxy.go, ProxyREST.Connect).
//
// By the time a request gets here Dispatch has authenticated it and, for the users the -rbac
// file lists, authorized it as the API server's RequestInfo sees it: resource "services",
// subresource "proxy", the name the whole id ("https:web:8443", so RBAC resourceNames must spell
// it so), the verb the method's (GET and HEAD get, POST create, PUT update, PATCH patch, DELETE
// delete). Then, in the API server's order (apiserver/pkg/endpoints/handlers/rest.go
// ConnectResource; the rules of each step are in the header named):
//   1. a dryRun parameter is a 400 `dryRun is not supported`; a method other than GET, HEAD,
//      POST, PUT, PATCH, DELETE and OPTIONS (proxyMethods) a 405;
//   2. the endpoint is chosen (sim_service_location.h) -- 400, 404, 503 there;
//   3. an empty path of a GET or HEAD is a 301 to the path with a '/' (sim_proxy_rules.h);
//   4. the request goes to the endpoint with its method, path, raw query, headers and body, but
//      without the Authorization header, which the authentication filter deleted, and with
//      X-Forwarded-For and X-Forwarded-Uri (sim_proxy_rules.h), over TLS without verifying the
//      certificate for the scheme "https" (sim_backend_conn.h);
//   5. a backend that cannot be reached or answers garbage is a 503 ServiceUnavailable
//      `error trying to reach service: <Go's error>`: proxy/transport.go wraps every round-trip
//      error in errors.NewServiceUnavailable, and the proxy's error responder writes that Status;
//   6. otherwise the backend's status, headers (without the hop-by-hop and CORS ones, a Location
//      rewritten through the proxy) and body go back as they come, streamed (Go's ReverseProxy
//      flushes as the body arrives), after the Cache-Control the API server sets on every
//      answer (filters.WithCacheControl; Go's ReverseProxy adds the backend's own after it); a
//      text/html body has the URLs of its tags rewritten through the proxy (RewriteHtml).
// Not done: the rewriting of a gzip- or deflate-encoded HTML body (passed on unchanged),
// connection upgrades (WebSocket, SPDY: answered as plain requests), interim 1xx answers (skipped;
// Go's ReverseProxy passes them on before the final one), and the per-connection bandwidth limit
// (off by default).
#include <civetweb.h>

#include <algorithm>
#include <ctime>
#include <iterator>
#include <random>

#include "test/sim/sim_backend_conn.h"
#include "test/sim/sim_http.h"
#include "test/sim/sim_proxy_rules.h"
#include "test/sim/sim_rbac.h"
#include "test/sim/sim_server.h"
#include "test/sim/sim_service_location.h"
#include "test/sim/sim_services.h"
#include "test/sim/sim_validation.h"

namespace sim {
namespace {

// The id and what follows ".../proxy" in /api/v1/namespaces/NS/services/ID/proxy[/...]; false
// for any other path.
bool ParseProxyPath(const std::string& path, std::string* ns, std::string* id, std::string* rest) {
  static const std::string kNs = "/api/v1/namespaces/";
  if (path.rfind(kNs, 0) != 0) return false;
  const size_t ns_end = path.find('/', kNs.size());
  if (ns_end == std::string::npos || ns_end == kNs.size()) return false;
  static const std::string kServices = "/services/";
  if (path.compare(ns_end, kServices.size(), kServices) != 0) return false;
  const size_t id_start = ns_end + kServices.size();
  const size_t id_end = path.find('/', id_start);
  if (id_end == std::string::npos || id_end == id_start) return false;
  static const std::string kProxy = "/proxy";
  if (path.compare(id_end, kProxy.size(), kProxy) != 0) return false;
  const size_t rest_start = id_end + kProxy.size();
  if (rest_start < path.size() && path[rest_start] != '/') return false;  // ".../proxyfoo"
  *ns = path.substr(kNs.size(), ns_end - kNs.size());
  *id = path.substr(id_start, id_end - id_start);
  *rest = path.substr(rest_start);
  return true;
}

// RFC 7231 IMF-fixdate, the Date Go's server adds to an answer that has none.
std::string HttpDate() {
  const time_t t = time(nullptr);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[64];
  strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

// Whether the query has the key at all, with a value or without (isDryRun: len(Query()[k]) != 0).
bool HasQueryKey(const std::string& query, const std::string& key) {
  for (size_t start = 0; start <= query.size();) {
    size_t amp = query.find('&', start);
    if (amp == std::string::npos) amp = query.size();
    const std::string pair = query.substr(start, amp - start);
    if (pair.substr(0, pair.find('=')) == key) return true;
    start = amp + 1;
  }
  return false;
}

// The first value of header `name` (canonical) in `headers`, "" when absent (Header.Get).
std::string FirstHeader(const HeaderList& headers, const std::string& name) {
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return "";
}

size_t RandomBelow(size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return n <= 1 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng);
}

}  // namespace

bool Server::HandleServiceProxy(mg_connection* conn, const std::string& method,
                                const std::string& path, const std::string& query,
                                const User& user) {
  std::string ns, id, rest;
  if (services_ == nullptr || !ParseProxyPath(path, &ns, &id, &rest)) return false;
  static const char* const kMethods[] = {"GET",    "POST", "PUT",    "PATCH",
                                         "DELETE", "HEAD", "OPTIONS"};
  if (std::find(std::begin(kMethods), std::end(kMethods), method) == std::end(kMethods)) {
    SendError(conn,
              ApiError{405, "MethodNotAllowed",
                       "the server does not allow this method on the requested resource", ""});
    return true;
  }
  if (method != "GET" && method != "HEAD" && user.read_only) {  // the simulator's viewer token
    SendError(conn, ApiError{403, "Forbidden",
                             ForbiddenMessage(user.name, Attributes(method, path, false)), ""});
    return true;
  }
  if (HasQueryKey(query, "dryRun")) {
    SendError(conn, ApiError{400, "BadRequest", "dryRun is not supported", ""});
    return true;
  }

  ServiceEndpoint endpoint;
  const ApiError located = ResolveServiceEndpoint(
      ns, id,
      [&](const std::string& name, std::string* json) {
        return services_->Get(ServiceStore::Kind::kService, ns, name, json);
      },
      [&](const std::string& name, std::string* json) {
        return services_->Get(ServiceStore::Kind::kEndpoints, ns, name, json);
      },
      [&](const std::string& name) {
        std::vector<std::string> ips;
        std::string json;
        if (pods_ == nullptr || !pods_->GetPod(ns, name, &json).ok()) return ips;
        rapidjson::Document pod;
        pod.Parse(json.c_str());
        const rapidjson::Value* st = ds::JsonMember(pod, "status");
        const rapidjson::Value* list = st != nullptr ? ds::JsonMember(*st, "podIPs") : nullptr;
        if (list != nullptr && list->IsArray())
          for (const auto& ip : list->GetArray())
            if (ip.IsObject()) ips.push_back(ds::JsonString(ip, "ip"));
        return ips;
      },
      RandomBelow, &endpoint);
  if (!located.ok()) {
    SendError(conn, located);
    return true;
  }

  const ProxyPath where = ProxyPathFor(method, path, rest, query);
  const auto* policy = static_cast<const ConnectionPolicy*>(mg_get_user_data(mg_get_context(conn)));
  const bool keep_alive = policy != nullptr && policy->keep_alive;
  if (!where.redirect.empty()) {  // http.ResponseWriter.WriteHeader(301): no body, no type
    const std::string out =
        "HTTP/1.1 301 Moved Permanently\r\nCache-Control: no-cache, private\r\n"
        "Location: " +
        where.redirect + "\r\nDate: " + HttpDate() + "\r\nContent-Length: 0\r\n" +
        (keep_alive ? "" : "Connection: close\r\n") + "\r\n";
    mg_write(conn, out.data(), out.size());
    return true;
  }
  const mg_request_info* ri = mg_get_request_info(conn);
  HeaderList incoming;
  std::string host;
  for (int i = 0; i < ri->num_headers; ++i) {
    incoming.emplace_back(ri->http_headers[i].name, ri->http_headers[i].value);
    if (CanonicalHeaderKey(ri->http_headers[i].name) == "Host" && host.empty())
      host = ri->http_headers[i].value;
  }
  const std::string backend_host =
      (endpoint.ip.find(':') != std::string::npos ? "[" + endpoint.ip + "]" : endpoint.ip) + ":" +
      std::to_string(endpoint.port);
  // Go's request writer: Host (the client's: UseLocationHost is false for services), then
  // User-Agent, then Content-Length when there is a body or the method expects one
  // (transferWriter.shouldSendContentLength), then the rest sorted by name.
  const std::string body = ReadBody(conn);
  std::string request = method + " " +
                        (where.backend_path.empty() ? "/" : EscapePath(where.backend_path)) +
                        (query.empty() ? "" : "?" + query) +
                        " HTTP/1.1\r\nHost: " + (host.empty() ? backend_host : host) + "\r\n";
  const HeaderList headers = BackendRequestHeaders(incoming, ri->remote_addr, where.forwarded_uri);
  size_t at = 0;
  if (!headers.empty() && headers[0].first == "User-Agent")
    request += "User-Agent: " + headers[at++].second + "\r\n";
  if (!body.empty() || (method != "GET" && method != "HEAD"))
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  for (; at < headers.size(); ++at)
    request += headers[at].first + ": " + headers[at].second + "\r\n";
  request += "\r\n" + body;

  BackendConnection backend;
  BackendResponseHead head;
  std::string error;
  if (!backend.Connect(endpoint.ip, endpoint.port, endpoint.scheme == "https", &error) ||
      !backend.Send(request, &error) || !backend.ReadHead(method == "HEAD", &head, &error)) {
    SendError(conn, Err(503, "ServiceUnavailable", "error trying to reach service: " + error));
    return true;
  }

  // The answer: the API server's Cache-Control first, the backend's headers after it, the Date
  // Go's server adds when there is none, and the framing of Go's server: the backend's
  // Content-Length when it sent one, else chunked.
  HeaderList answer = ClientResponseHeaders(head.headers, backend_host, host, where.prepend);
  auto head_of = [&](const HeaderList& headers, const std::string& framing) {
    std::string out = "HTTP/1.1 " + std::to_string(head.status) + " " +
                      mg_get_response_code_text(conn, head.status) +
                      "\r\nCache-Control: no-cache, private\r\n";
    bool has_date = false;
    for (const auto& [k, v] : headers) {
      out += k + ": " + v + "\r\n";
      has_date = has_date || k == "Date";
    }
    if (!has_date) out += "Date: " + HttpDate() + "\r\n";
    return out + framing + (keep_alive ? "" : "Connection: close\r\n") + "\r\n";
  };
  // transport.go: an answer without a Location whose type is text/html has the URLs in its tags
  // rewritten (rewriteResponse), which needs the whole body; its Content-Length goes. Go
  // decompresses a gzip or deflate body to do it and compresses it again: such a body is passed
  // on unchanged here. Any other encoding Go passes on unchanged too.
  const std::string type = FirstHeader(answer, "Content-Type");
  if (FirstHeader(answer, "Location").empty() &&
      Trim(type.substr(0, type.find(';'))) == "text/html" &&
      FirstHeader(answer, "Content-Encoding").empty()) {
    std::string html;
    if (!backend.ReadBody(
            head, [&](const char* data, size_t n) { return html.append(data, n), true; }, &error)) {
      // rewriteHTML's read error comes back from the round trip as a plain error: a 500 without
      // a reason (ErrorToAPIStatus), after nothing was written.
      SendError(conn, Err(500, "", error));
      return true;
    }
    html = RewriteHtml(html, backend_host, host, where.prepend);
    answer.erase(std::remove_if(answer.begin(), answer.end(),
                                [](const auto& h) { return h.first == "Content-Length"; }),
                 answer.end());
    const bool body_allowed =
        method != "HEAD" && head.status != 204 && head.status != 304 && head.status / 100 != 1;
    const std::string out = head_of(
        answer, body_allowed ? "Content-Length: " + std::to_string(html.size()) + "\r\n" : "");
    mg_write(conn, out.data(), out.size());
    if (body_allowed) mg_write(conn, html.data(), html.size());
    return true;
  }
  const bool chunked = head.framing == BackendResponseHead::Framing::kChunked ||
                       head.framing == BackendResponseHead::Framing::kUntilClose;
  const std::string out =
      head_of(answer, chunked ? "Transfer-Encoding: chunked\r\n" +
                                    std::string(keep_alive ? "Connection: close\r\n" : "")
                              : "");
  mg_write(conn, out.data(), out.size());
  const bool ok = backend.ReadBody(
      head,
      [&](const char* data, size_t n) {
        return chunked ? mg_send_chunk(conn, data, static_cast<unsigned>(n)) > 0
                       : mg_write(conn, data, n) > 0;
      },
      &error);
  // A body that broke off ends the answer without its last chunk, as Go's ReverseProxy aborts
  // the connection: the client sees a truncated answer, not a complete one.
  if (ok && chunked) mg_send_chunk(conn, "", 0);
  return true;
}

}  // namespace sim
