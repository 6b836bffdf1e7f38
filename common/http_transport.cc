#include "common/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>

namespace ds {
namespace {

std::once_flag g_curl_init;

struct Exchange {
  char error[CURL_ERROR_SIZE] = {0};  // libcurl's detailed message (TLS problems, ...)
  const HttpRequest* req = nullptr;
  CURL* curl = nullptr;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  const std::function<bool(std::string_view)>* on_data = nullptr;  // stream mode
  const std::function<bool()>* cancelled = nullptr;                // stream mode: true stops
  bool too_large = false;
  bool stopped_by_reader = false;
  bool was_cancelled = false;
  bool not_sent = false;  // send_if said no
  bool sent = false;      // send_if said yes: the request is leaving
};

int PrereqCallback(void* user, char*, char*, int, int) {
  auto* ex = static_cast<Exchange*>(user);
  if (ex->req->send_if && !ex->req->send_if()) {
    ex->not_sent = true;
    return CURL_PREREQFUNC_ABORT;
  }
  ex->sent = true;
  return CURL_PREREQFUNC_OK;
}

size_t HeaderCallback(char* data, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  std::string_view line(data, size * n);
  // A new status line (redirect, 100-continue) starts a new header block.
  if (line.rfind("HTTP/", 0) == 0) ex->headers.clear();
  auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    ex->headers.emplace_back(std::move(name), std::string(value));
  }
  return size * n;
}

size_t WriteCallback(char* data, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  size_t len = size * n;
  if (ex->on_data != nullptr) {
    long code = 0;
    curl_easy_getinfo(ex->curl, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200 && code < 300) {
      if (!(*ex->on_data)(std::string_view(data, len))) {
        ex->stopped_by_reader = true;
        return 0;  // abort the transfer
      }
      return len;
    }
    // Error answers are small Status objects; keep a bounded copy.
    if (ex->body.size() < (1u << 20)) ex->body.append(data, std::min<size_t>(len, 1u << 20));
    return len;
  }
  if (ex->body.size() + len > ex->req->max_body_bytes) {
    ex->too_large = true;
    return 0;
  }
  if (ex->body.empty() && ex->req->body_bytes_hint > 0)
    ex->body.reserve(std::min(ex->req->body_bytes_hint, ex->req->max_body_bytes));
  ex->body.append(data, len);
  return len;
}

int ProgressCallback(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* ex = static_cast<Exchange*>(user);
  if (ex->cancelled != nullptr && *ex->cancelled && (*ex->cancelled)()) {
    ex->was_cancelled = true;
    return 1;
  }
  // Once sent, the precondition is asked again while the answer is awaited (before that, the
  // pre-request callback decides, and a "no" there means nothing left).
  // Once the answer has started (a status line arrived) the outcome is known: let it finish, so
  // that an applied write is reported as applied.
  long code = 0;
  if (ex->sent && ex->req->send_if &&
      curl_easy_getinfo(ex->curl, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 0 &&
      !ex->req->send_if()) {
    ex->was_cancelled = true;
    return 1;
  }
  return 0;
}

void SetBlob(CURL* c, CURLoption opt, const std::string& pem) {
  curl_blob blob;
  blob.data = const_cast<char*>(pem.data());
  blob.len = pem.size();
  blob.flags = CURL_BLOB_COPY;
  curl_easy_setopt(c, opt, &blob);
}

}  // namespace

std::string HttpResponse::Header(std::string_view lower_name) const {
  for (const auto& [k, v] : headers)
    if (k == lower_name) return v;
  return "";
}

std::string UrlEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3);
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::optional<ServerNameRoute> RouteToServerName(std::string_view url,
                                                 std::string_view server_name) {
  constexpr std::string_view kHttps = "https://";
  if (server_name.empty() || url.substr(0, kHttps.size()) != kHttps) return std::nullopt;
  const std::string_view rest = url.substr(kHttps.size());
  const size_t end = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, end);
  const std::string_view tail = end == std::string_view::npos ? "" : rest.substr(end);
  if (authority.empty() || authority.find('@') != std::string_view::npos) return std::nullopt;
  std::string_view host = authority, port;
  if (authority.front() == '[') {  // an IPv6 literal keeps its brackets in every form used here
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(0, close + 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return std::nullopt;
    if (!after.empty()) port = after.substr(1);
  } else if (const size_t colon = authority.find(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return std::nullopt;
  std::string name(server_name);
  if (name.find(':') != std::string::npos && name.front() != '[') name = "[" + name + "]";
  const std::string p = port.empty() ? "443" : std::string(port);
  ServerNameRoute r;
  r.url = std::string(kHttps) + name + (port.empty() ? "" : ":" + p) + std::string(tail);
  r.connect_to = name + ":" + p + ":" + std::string(host) + ":" + p;
  r.host_header = "Host: " + std::string(authority);
  return r;
}

namespace {

// A proxy URL as libcurl takes it. client-go's socks5 hands the server's name to the proxy to
// resolve; libcurl's socks5:// would resolve it here, its socks5h:// does what client-go does.
std::string CurlProxyUrl(const std::string& proxy_url) {
  const std::string socks5 = "socks5://";
  if (proxy_url.size() >= socks5.size() && proxy_url.compare(0, socks5.size(), socks5) == 0)
    return "socks5h://" + proxy_url.substr(socks5.size());
  return proxy_url;
}

}  // namespace

CurlTransport::CurlTransport(TlsOptions tls, std::string proxy_url)
    : tls_(std::move(tls)), proxy_url_(CurlProxyUrl(proxy_url)) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_ALL); });
}

CurlTransport::~CurlTransport() {
  for (void* h : free_handles_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* CurlTransport::Acquire() {
  {
    MutexLock l(&mu_);
    if (!free_handles_.empty()) {
      void* h = free_handles_.back();
      free_handles_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void CurlTransport::Release(void* handle) {
  MutexLock l(&mu_);
  free_handles_.push_back(handle);
}

namespace {

// Runs one exchange on handle c. Returns the curl code; fills ex.
CURLcode Perform(CURL* c, const TlsOptions& tls, const std::string& proxy, const HttpRequest& req,
                 Exchange* ex) {
  curl_easy_reset(c);  // keeps the connection and TLS session caches
  const std::optional<ServerNameRoute> route = RouteToServerName(req.url, tls.server_name);
  curl_easy_setopt(c, CURLOPT_URL, route ? route->url.c_str() : req.url.c_str());
  curl_slist* connect_to = nullptr;
  if (route) {
    connect_to = curl_slist_append(connect_to, route->connect_to.c_str());
    curl_easy_setopt(c, CURLOPT_CONNECT_TO, connect_to);
  }
  if (!proxy.empty()) {
    curl_easy_setopt(c, CURLOPT_PROXY, proxy.c_str());
    curl_easy_setopt(c, CURLOPT_NOPROXY, "");  // the configured proxy for every host, as client-go
  }
  // The request's headers (Authorization among them) go to the server only, never in a CONNECT
  // to the proxy (libcurl's default since 7.42.1; stated, since a token must not leak there).
  curl_easy_setopt(c, CURLOPT_HEADEROPT, CURLHEADER_SEPARATE);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  if (req.method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (!req.body.empty() || req.method == "POST" || req.method == "PATCH" || req.method == "PUT") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  }
  curl_slist* hdrs = nullptr;
  for (const auto& h : req.headers) hdrs = curl_slist_append(hdrs, h.c_str());
  if (route) hdrs = curl_slist_append(hdrs, route->host_header.c_str());
  // curl adds "Expect: 100-continue" to larger bodies, costing a round trip.
  hdrs = curl_slist_append(hdrs, "Expect:");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  if (req.accept_compressed) curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  if (req.timeout_seconds > 0)
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout_seconds * 1000));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(req.connect_timeout_seconds * 1000));
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  if (req.idle_timeout_seconds > 0) {
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, std::lround(req.idle_timeout_seconds)));
  }
  if (!tls.ca_pem.empty()) SetBlob(c, CURLOPT_CAINFO_BLOB, tls.ca_pem);
  if (!tls.client_cert_pem.empty()) {
    SetBlob(c, CURLOPT_SSLCERT_BLOB, tls.client_cert_pem);
    curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    SetBlob(c, CURLOPT_SSLKEY_BLOB, tls.client_key_pem);
    curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if (tls.insecure_skip_verify) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  ex->curl = c;
  ex->req = &req;
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ex->error);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, HeaderCallback);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, ex);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteCallback);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, ex);
  if (req.send_if) {
    curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, PrereqCallback);
    curl_easy_setopt(c, CURLOPT_PREREQDATA, ex);
  }
  if (ex->cancelled != nullptr || req.send_if) {
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, ProgressCallback);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, ex);
  }
  CURLcode rc = curl_easy_perform(c);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(c, CURLOPT_CONNECT_TO, nullptr);
  curl_slist_free_all(hdrs);
  curl_slist_free_all(connect_to);
  return rc;
}

Status TransportError(CURLcode rc, const HttpRequest& req, const char* detail) {
  // The URL may carry a query but never credentials (tokens travel in headers).
  std::string where = req.method + " " + req.url.substr(0, req.url.find('?'));
  std::string why = detail != nullptr && detail[0] != '\0' ? detail : curl_easy_strerror(rc);
  return Status::Unavailable(where + ": " + why);
}

}  // namespace

StatusOr<HttpResponse> CurlTransport::Do(const HttpRequest& req) {
  CURL* c = static_cast<CURL*>(Acquire());
  if (c == nullptr) return Status::Internal("curl_easy_init failed");
  Exchange ex;
  CURLcode rc = Perform(c, tls_, proxy_url_, req, &ex);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  if (ex.was_cancelled) {
    curl_easy_cleanup(c);  // an abandoned transfer leaves its connection mid-exchange
  } else {
    Release(c);
  }
  if (ex.not_sent)
    return Status::Cancelled(req.method + " " + req.url.substr(0, req.url.find('?')) +
                             ": not sent (its precondition no longer holds)");
  if (ex.was_cancelled)
    return Status::Cancelled(req.method + " " + req.url.substr(0, req.url.find('?')) +
                             ": abandoned while waiting for the answer (its precondition ended)");
  if (ex.too_large)
    return Status::Unavailable(req.method + " " + req.url.substr(0, req.url.find('?')) +
                               ": response body exceeds " + std::to_string(req.max_body_bytes) +
                               " bytes");
  if (rc != CURLE_OK) return TransportError(rc, req, ex.error);
  HttpResponse resp;
  resp.status = static_cast<int>(code);
  resp.body = std::move(ex.body);
  resp.headers = std::move(ex.headers);
  return resp;
}

StatusOr<StreamResult> CurlTransport::Stream(const HttpRequest& req,
                                             const std::function<bool(std::string_view)>& on_data,
                                             const std::function<bool()>& cancelled) {
  CURL* c = static_cast<CURL*>(Acquire());
  if (c == nullptr) return Status::Internal("curl_easy_init failed");
  Exchange ex;
  ex.on_data = &on_data;
  ex.cancelled = &cancelled;
  CURLcode rc = Perform(c, tls_, proxy_url_, req, &ex);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  if (rc != CURLE_OK) {
    // An aborted transfer leaves the connection unusable; do not return it to the pool.
    curl_easy_cleanup(c);
  } else {
    Release(c);
  }
  if (ex.was_cancelled) return Status::Cancelled("stream cancelled");
  if (rc != CURLE_OK && !ex.stopped_by_reader) return TransportError(rc, req, ex.error);
  StreamResult r;
  r.status = static_cast<int>(code);
  r.error_body = std::move(ex.body);
  r.headers = std::move(ex.headers);
  return r;
}

}  // namespace ds
