#include "promql/prometheus_client.h"

#include "promql/fast_vector_decoder.h"

#include <chrono>
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
  auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(HttpResponse resp, transport_->Do(req));
  auto t1 = std::chrono::steady_clock::now();
  if (resp.status >= 500 && resp.body.find("\"status\"") == std::string::npos)
    return Status::Unavailable("Prometheus answered HTTP " + std::to_string(resp.status))
        .set_http_status(resp.status);
  size_t bytes = resp.body.size();
  if (sink != nullptr && resp.status == 200) {
    size_t n = 0;
    bool scanned = ScanVector(resp.body, keep, [&](const LabelViews& labels, double value, double) {
      sink->Add(labels, value);
      ++n;
    });
    if (scanned) {
      QueryResult r;
      r.result_type = "vector";
      r.sample_count = n;
      r.fetch_seconds = std::chrono::duration<double>(t1 - t0).count();
      r.decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      r.body_bytes = bytes;
      return r;
    }
    sink->Reset();
  }
  auto result = DecodeQueryResponse(std::move(resp.body), resp.status, keep);
  if (result.ok() && sink != nullptr) {
    LabelViews views;
    for (const auto& s : result->samples) {
      views.clear();
      for (const auto& [k, v] : s.metric) views.emplace_back(k, v);
      sink->Add(views, s.value);
    }
    result->sample_count = result->samples.size();
    result->samples.clear();
  }
  if (result.ok()) {
    result->fetch_seconds = std::chrono::duration<double>(t1 - t0).count();
    result->decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    result->body_bytes = bytes;
  }
  return result;
}

}  // namespace ds
