// Prometheus HTTP API client seam. One instant query per rule per cycle covers all nodes.
#pragma once

#include <memory>
#include <string>

#include "common/http_transport.h"
#include "promql/query_result.h"

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
};

// Checks a Prometheus base URL ("http(s)://host:port[/prefix]") and returns it without a
// trailing slash.
StatusOr<std::string> NormalizePrometheusUrl(const std::string& url);

class HttpPrometheusClient : public PrometheusClient {
 public:
  // REQUIRES: base_url passed NormalizePrometheusUrl. `transport` must outlive this client.
  HttpPrometheusClient(HttpTransport* transport, std::string base_url, double timeout_seconds,
                       std::string bearer_token = "");
  StatusOr<QueryResult> Query(const std::string& expr, const LabelFilter* keep = nullptr,
                              SampleSink* sink = nullptr) override;

 private:
  HttpTransport* const transport_;
  const std::string base_url_;
  const double timeout_seconds_;
  const std::string bearer_token_;
};

}  // namespace ds
