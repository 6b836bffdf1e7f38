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

namespace {

std::unique_ptr<FileSecret> SecretOrNull(const std::string& path, const char* what) {
  return path.empty() ? nullptr : std::make_unique<FileSecret>(path, what);
}

}  // namespace

HttpPrometheusClient::HttpPrometheusClient(HttpTransport* transport, std::string base_url,
                                           double timeout_seconds, const HttpAuthConfig& auth)
    : transport_(transport),
      base_url_(std::move(base_url)),
      timeout_seconds_(timeout_seconds),
      extra_headers_(auth.headers),
      basic_auth_user_(auth.basic_auth_user),
      token_(SecretOrNull(auth.bearer_token_file, "Prometheus bearer token file")),
      password_(auth.basic_auth_user.empty()
                    ? nullptr
                    : SecretOrNull(auth.basic_auth_password_file,
                                   "Prometheus basic auth password file")) {}

StatusOr<std::vector<std::string>> HttpPrometheusClient::Headers() {
  std::vector<std::string> h{"Accept: application/json"};
  h.insert(h.end(), extra_headers_.begin(), extra_headers_.end());
  std::string token, password;
  if (token_ != nullptr) {
    ASSIGN_OR_RETURN(token, token_->Get());
  } else if (password_ != nullptr) {
    ASSIGN_OR_RETURN(password, password_->Get());
  }
  if (std::string auth = AuthorizationHeader(token, basic_auth_user_, password); !auth.empty())
    h.push_back(std::move(auth));
  return h;
}

std::string HttpPrometheusClient::CredentialsSent() const {
  if (token_ != nullptr) return "the bearer token";
  if (password_ != nullptr) return "basic auth for user \"" + basic_auth_user_ + "\"";
  return "no credentials";
}

StatusOr<QueryResult> PrometheusClient::QueryAt(const std::string&, double, const LabelFilter*) {
  return Status::Internal("this Prometheus client cannot evaluate a query at a given time");
}

StatusOr<QueryResult> HttpPrometheusClient::Query(const std::string& expr, const LabelFilter* keep,
                                                  SampleSink* sink) {
  return Run(expr, "", keep, sink);
}

StatusOr<QueryResult> HttpPrometheusClient::QueryAt(const std::string& expr, double eval_time,
                                                    const LabelFilter* keep) {
  char time[48];
  std::snprintf(time, sizeof(time), "&time=%.3f", eval_time);
  return Run(expr, time, keep, nullptr);
}

StatusOr<HttpResponse> HttpPrometheusClient::Send(const std::string& path, std::string form,
                                                  double* fetch_seconds, size_t body_bytes_hint) {
  HttpRequest req;
  req.body_bytes_hint = body_bytes_hint;
  req.timeout_seconds = timeout_seconds_ + 1;  // let Prometheus report its own timeout first
  ASSIGN_OR_RETURN(req.headers, Headers());
  if (form.size() <= kMaxGetQueryBytes) {
    req.url = base_url_ + path + "?" + form;
  } else {
    req.method = "POST";
    req.url = base_url_ + path;
    req.body = std::move(form);
    req.headers.push_back("Content-Type: application/x-www-form-urlencoded");
  }
  Stopwatch fetch;
  ASSIGN_OR_RETURN(HttpResponse resp, transport_->Do(req));
  *fetch_seconds = fetch.Seconds();
  // An auth proxy's or Prometheus' own refusal is plain text, not the API's JSON: say what was
  // refused rather than "malformed response".
  if (resp.status == 401 || resp.status == 403)
    return Status::Unavailable("Prometheus answered HTTP " + std::to_string(resp.status) +
                               (resp.status == 401 ? " Unauthorized" : " Forbidden") + " to " +
                               CredentialsSent())
        .set_http_status(resp.status);
  return resp;
}

size_t HttpPrometheusClient::LastBodyBytes(const std::string& key) {
  MutexLock lock(&sizes_mu_);
  auto it = last_body_bytes_.find(key);
  return it == last_body_bytes_.end() ? 0 : it->second;
}

void HttpPrometheusClient::RememberBodyBytes(const std::string& key, size_t bytes) {
  MutexLock lock(&sizes_mu_);
  if (last_body_bytes_.size() >= kMaxRemembered && last_body_bytes_.count(key) == 0)
    last_body_bytes_.clear();
  last_body_bytes_[key] = bytes;
}

StatusOr<QueryResult> HttpPrometheusClient::Run(const std::string& expr,
                                                const std::string& time_param,
                                                const LabelFilter* keep, SampleSink* sink) {
  char timeout[32];
  std::snprintf(timeout, sizeof(timeout), "%.3f", timeout_seconds_);  // float seconds
  double fetch_seconds = 0;
  const size_t hint = LastBodyBytes(expr);
  // A little over the last size: an answer that grew by a few series still fits.
  ASSIGN_OR_RETURN(
      HttpResponse resp,
      Send("/api/v1/query", "query=" + UrlEncode(expr) + "&timeout=" + timeout + time_param,
           &fetch_seconds, hint + hint / 16));
  const size_t body_bytes = resp.body.size();
  RememberBodyBytes(expr, body_bytes);
  Stopwatch decode;
  ASSIGN_OR_RETURN(QueryResult result,
                   DecodeQueryResponse(std::move(resp.body), resp.status, keep, sink));
  result.fetch_seconds = fetch_seconds;
  result.decode_seconds = decode.Seconds();
  result.body_bytes = body_bytes;
  return result;
}

StatusOr<RangeResult> PrometheusClient::QueryRange(const std::string&, double, double, double,
                                                   const LabelFilter*) {
  return Status::Internal("this Prometheus client cannot run range queries");
}

StatusOr<RangeResult> HttpPrometheusClient::QueryRange(const std::string& expr, double start,
                                                       double end, double step,
                                                       const LabelFilter* keep) {
  char params[176];
  // nocache=1, for VictoriaMetrics with its response cache on (its default): a replay's answers
  // are asked for once, and storing them cost it 5-15 % more CPU in bench/replay_bench.py; and
  // with the cache, it moves the points of an answer of more than 50 to multiples of the step,
  // so that steps not on such multiples (-from now-7d) would have no point at all. Prometheus,
  // Thanos and Mimir ignore the parameter.
  std::snprintf(params, sizeof(params), "&start=%.3f&end=%.3f&step=%.3f&timeout=%.3f&nocache=1",
                start, end, step, timeout_seconds_);
  double fetch_seconds = 0;
  // The same query's last range answer sizes this one (a replay asks for chunks of equal
  // length): the body is then received without being copied as it grows.
  const std::string size_key = "range:" + expr;
  const size_t hint = LastBodyBytes(size_key);
  ASSIGN_OR_RETURN(HttpResponse resp,
                   Send("/api/v1/query_range", "query=" + UrlEncode(expr) + params, &fetch_seconds,
                        hint + hint / 16));
  const size_t body_bytes = resp.body.size();
  RememberBodyBytes(size_key, body_bytes);
  Stopwatch decode;
  ASSIGN_OR_RETURN(RangeResult result,
                   DecodeRangeResponse(std::move(resp.body), resp.status, keep));
  result.fetch_seconds = fetch_seconds;
  result.decode_seconds = decode.Seconds();
  result.body_bytes = body_bytes;
  return result;
}

}  // namespace ds
