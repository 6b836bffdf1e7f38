#include "promql/prometheus_client.h"

#include <cstdio>
#include <utility>

#include "common/clock.h"
#include "promql/response_decoder.h"

namespace ds {

StatusOr<std::string> NormalizePrometheusUrl(const std::string& url) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    return Status::InvalidArgument("Prometheus URL \"" + url +
                                   "\" must start with http:// or https://");
  // Strip trailing slashes only after the scheme: "http://" must not shrink to "http:" and pass.
  const size_t host = url.find("://") + 3;
  std::string u = url;
  while (u.size() > host && u.back() == '/') u.pop_back();
  if (u.size() <= host)
    return Status::InvalidArgument("Prometheus URL \"" + url + "\" has no host");
  return u;
}

HttpPrometheusClient::HttpPrometheusClient(HttpTransport* transport, std::string base_url,
                                           double timeout_seconds, std::string bearer_token)
    : transport_(transport),
      base_url_(std::move(base_url)),
      timeout_seconds_(timeout_seconds),
      bearer_token_(std::move(bearer_token)) {}

StatusOr<QueryResult> HttpPrometheusClient::Query(const std::string& expr, const LabelFilter* keep,
                                                  SampleSink* sink) {
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

  Stopwatch fetch;
  ASSIGN_OR_RETURN(HttpResponse resp, transport_->Do(req));
  const double fetch_seconds = fetch.Seconds();
  const size_t body_bytes = resp.body.size();
  Stopwatch decode;
  ASSIGN_OR_RETURN(QueryResult result,
                   DecodeQueryResponse(std::move(resp.body), resp.status, keep, sink));
  result.fetch_seconds = fetch_seconds;
  result.decode_seconds = decode.Seconds();
  result.body_bytes = body_bytes;
  return result;
}

}  // namespace ds
