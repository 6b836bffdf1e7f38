#include "promql/response_decoder.h"

#include <utility>

#include "promql/fast_vector_decoder.h"
#include "promql/reference_decoder.h"

namespace ds {

StatusOr<QueryResult> DecodeQueryResponse(std::string body, int http_status,
                                          const LabelFilter* keep, SampleSink* sink) {
  // A load balancer's or proxy's error page: its bytes say nothing a JSON parse could add.
  if (http_status >= 500 && body.find("\"status\"") == std::string::npos)
    return Status::Unavailable("Prometheus answered HTTP " + std::to_string(http_status))
        .set_http_status(http_status);

  // Fast path: only a 200 can carry a successful vector.
  if (http_status == 200) {
    if (sink != nullptr) {
      size_t n = 0;
      auto add = [sink, &n](const LabelViews& labels, double value, double timestamp) {
        sink->AddAt(labels, value, timestamp);
        ++n;
      };
      if (ScanVector(body, keep, add)) {
        QueryResult r;
        r.result_type = "vector";
        r.sample_count = n;
        return r;
      }
      sink->Reset();  // the scanner may have fed part of the body before declining
    } else {
      QueryResult r;
      if (FastDecodeVector(body, keep, &r)) return r;
    }
  }

  ASSIGN_OR_RETURN(QueryResult result,
                   DecodeQueryResponseReference(std::move(body), http_status, keep));
  if (sink != nullptr) DrainToSink(&result, sink);
  return result;
}

}  // namespace ds
