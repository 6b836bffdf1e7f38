// Prometheus HTTP API client seam. One instant query per rule per cycle covers all nodes.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/file_secret.h"
#include "common/http_auth.h"
#include "common/http_transport.h"
#include "common/mutex.h"
#include "common/sample.h"
#include "common/status.h"
#include "promql/query_result.h"
#include "promql/range_query.h"

namespace ds {

class PrometheusClient {
 public:
  virtual ~PrometheusClient() = default;
  // Runs an instant query at the current time. Errors: kUnavailable (unreachable, timeout,
  // 5xx, malformed answer), kInvalidArgument (Prometheus rejected the query). Thread-safe.
  // `keep` (optional) limits which series labels are decoded. With a `sink`, every sample goes
  // to the sink exactly once (after any Reset) and the result's `samples` stay empty.
  virtual StatusOr<QueryResult> Query(const std::string& expr, const LabelFilter* keep = nullptr,
                                      SampleSink* sink = nullptr) = 0;
  // The same, evaluated at `eval_time` (Unix seconds) instead of now: a rule's `predict:` asks
  // for finished days (rules/prediction.h). Errors as Query's; kInternal from a client that
  // cannot choose the evaluation time (the default).
  virtual StatusOr<QueryResult> QueryAt(const std::string& expr, double eval_time,
                                        const LabelFilter* keep = nullptr);
  // A range query: `expr` at start, start + step, ... <= end (Unix seconds), one request (the
  // caller keeps within kMaxPointsPerSeries: PlanRangeChunks). Errors as Query's; kInternal from a
  // client that has no history (the default).
  virtual StatusOr<RangeResult> QueryRange(const std::string& expr, double start, double end,
                                           double step, const LabelFilter* keep = nullptr);
};

// Checks a Prometheus base URL ("http(s)://host:port[/prefix]") and returns it without a
// trailing slash. kInvalidArgument without a scheme or a host.
StatusOr<std::string> NormalizePrometheusUrl(const std::string& url);

// Above this many bytes of encoded form ("query=...&timeout=...") a GET risks proxies' URL
// limits (8 KiB is common), so the form is POSTed instead.
inline constexpr size_t kMaxGetQueryBytes = 4000;

// Sends GET <base>/api/v1/query?query=<expr>&timeout=<seconds> (POST of the same form when it is
// longer than kMaxGetQueryBytes) through the transport, with the transport's timeout one second
// longer than the query's so that Prometheus reports its own timeout first, and decodes the
// answer with DecodeQueryResponse (promql/response_decoder.h). Transport errors are returned
// as they come. Fills fetch_seconds, decode_seconds (real elapsed time) and body_bytes.
//
// Every request carries auth.headers and, from auth's bearer token file or basic auth user and
// password file, an Authorization header; the files are re-read when they change (FileSecret),
// so a rotated token is used from the next query on. A file that cannot be read fails the query
// (kUnavailable naming the file): the rules' verdicts turn unknown, which removes no label. A 401
// or 403 answer is kUnavailable saying which credentials were refused. (auth's TLS files are the
// transport's business.)
class HttpPrometheusClient : public PrometheusClient {
 public:
  // REQUIRES: base_url passed NormalizePrometheusUrl; auth.headers passed CheckHeaderLine.
  // `transport` must outlive this client.
  HttpPrometheusClient(HttpTransport* transport, std::string base_url, double timeout_seconds,
                       const HttpAuthConfig& auth = {});
  StatusOr<QueryResult> Query(const std::string& expr, const LabelFilter* keep = nullptr,
                              SampleSink* sink = nullptr) override;
  // Adds `&time=<eval_time>` (seconds with milliseconds) to the form.
  StatusOr<QueryResult> QueryAt(const std::string& expr, double eval_time,
                                const LabelFilter* keep = nullptr) override;
  // GET (or POST) <base>/api/v1/query_range with start, end, step, timeout and nocache=1
  // (VictoriaMetrics' response cache: not filled, and the steps asked for answered); decoded by
  // DecodeRangeResponse. Same headers, credentials and errors as Query.
  StatusOr<RangeResult> QueryRange(const std::string& expr, double start, double end, double step,
                                   const LabelFilter* keep = nullptr) override;

 private:
  // Sends `form` to <base><path> (GET, or POST above kMaxGetQueryBytes) with the headers and
  // timeout every query has; a 401/403 becomes kUnavailable naming the credentials refused.
  // Sets *fetch_seconds.
  // `body_bytes_hint`: HttpRequest's.
  StatusOr<HttpResponse> Send(const std::string& path, std::string form, double* fetch_seconds,
                              size_t body_bytes_hint = 0);
  // `time_param`: "" (now) or "&time=...".
  StatusOr<QueryResult> Run(const std::string& expr, const std::string& time_param,
                            const LabelFilter* keep, SampleSink* sink);
  // The headers every request carries, credentials included.
  StatusOr<std::vector<std::string>> Headers();
  // What a 401/403 answer refused, for its message (never the secret itself).
  std::string CredentialsSent() const;

  HttpTransport* const transport_;
  const std::string base_url_;
  const double timeout_seconds_;
  const std::vector<std::string> extra_headers_;
  const std::string basic_auth_user_;
  const std::unique_ptr<FileSecret> token_;     // null without a bearer token file
  const std::unique_ptr<FileSecret> password_;  // null without basic auth
  // Per instant query (keyed by its expression) and per range query ("range:" and its
  // expression), the size of its last answer: the next answer's size hint. The rules ask the same
  // queries every cycle, and at 10,000 nodes an answer is about a megabyte; a replay's range
  // answers are several. Bounded by kMaxRemembered (a reload that renames queries leaves old ones;
  // the map then starts over).
  size_t LastBodyBytes(const std::string& key);
  void RememberBodyBytes(const std::string& key, size_t bytes);
  static constexpr size_t kMaxRemembered = 256;
  Mutex sizes_mu_;
  std::unordered_map<std::string, size_t> last_body_bytes_ GUARDED_BY(sizes_mu_);
};

}  // namespace ds
