#include "promql/prometheus_client.h"

#include <cstdio>

namespace ds {

// Above this encoded length a GET risks proxies' URL limits (8 KiB is common); POST the form.
constexpr size_t kMaxGetQueryBytes = 4000;

StatusOr<std::string> NormalizePrometheusUrl(const std::string& url) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    return Status::InvalidArgument("Prometheus URL \"" + url +
                                   "\" must start with http:// or https://");
  std::string u = url;
  while (!u.empty() && u.back() == '/') u.pop_back();
  if (u.size() <= u.find("://") + 3)
    return Status::InvalidArgument("Prometheus URL \"" + url + "\" has no host");
  return u;
}

HttpPrometheusClient::HttpPrometheusClient(HttpTransport* transport, std::string base_url,
                                           double timeout_seconds, std::string bearer_token)
    : transport_(transport),
      base_url_(std::move(base_url)),
      timeout_seconds_(timeout_seconds),
      bearer_token_(std::move(bearer_token)) {}

StatusOr<QueryResult> HttpPrometheusClient::Query(const std::string& expr) {
  char timeout[32];
  std::snprintf(timeout, sizeof(timeout), "%.3f", timeout_seconds_);  // float seconds
  std::string form = "query=" + UrlEncode(expr) + "&timeout=" + timeout;
  HttpRequest req;
  req.timeout_seconds = timeout_seconds_ + 1;  // let Prometheus report its own timeout first
  req.headers.push_back("Accept: application/json");
  if (!bearer_token_.empty()) req.headers.push_back("Authorization: Bearer " + bearer_token_);
  if (form.size() <= kMaxGetQueryBytes) {
    req.url = base_url_ + "/api/v1/query?" + form;
  } else {
    req.method = "POST";
    req.url = base_url_ + "/api/v1/query";
    req.body = std::move(form);
    req.headers.push_back("Content-Type: application/x-www-form-urlencoded");
  }
  ASSIGN_OR_RETURN(HttpResponse resp, transport_->Do(req));
  if (resp.status >= 500 && resp.body.find("\"status\"") == std::string::npos)
    return Status::Unavailable("Prometheus answered HTTP " + std::to_string(resp.status))
        .set_http_status(resp.status);
  return DecodeQueryResponse(std::move(resp.body), resp.status);
}

}  // namespace ds
