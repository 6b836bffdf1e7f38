// -web_auth=kubernetes in front of the web port's routes: what the request needs
// (web/access_policy.h), checked with the API server's reviews (kube/access_review.h), before
// HandleRequest (web/routes.h) sees it; the routes stay pure. Counts and logs what it turns away.
#pragma once

#include <atomic>
#include <string>

#include "common/clock.h"
#include "common/log_throttle.h"
#include "common/web_server.h"
#include "kube/access_review.h"
#include "kube/kube_api.h"
#include "web/access_policy.h"

namespace ds {

class WebGuard {
 public:
  // `kube` and `clock` must outlive the guard. `webhook_token`: -webhook_token_file's secret ("":
  // none), which still lets POST /webhook in without a review.
  WebGuard(KubeApi* kube, const Clock* clock, std::string webhook_token, WebAccessScope scope,
           AccessReviewerOptions options = {});

  struct Verdict {
    bool pass = false;
    // pass only: the API server vouched for the caller (a review allowed it), so a webhook may
    // name nodes without the shared secret (HandleRequest's caller_verified).
    bool verified = false;
    WebResponse denied;  // !pass: the answer to send (401, 403 or 503)
  };

  // Whether `req` may go on to the routes. A denial is counted, and logged at most once a minute
  // per client address and reason (with the user, when known; never the token). Thread-safe: the
  // web port's workers call it at once; a review on a cache miss runs on the calling worker.
  Verdict Admit(const WebRequest& req);

  // Denials since start (for /metrics). Thread-safe.
  WebAccessCounters Counters() const;

 private:
  void Count(const AccessReviewer::Decision& d);

  const Clock* const clock_;
  const std::string webhook_token_;
  const WebAccessScope scope_;
  AccessReviewer reviewer_;
  LogThrottle denial_log_{60};
  std::atomic<uint64_t> unauthenticated_{0}, forbidden_{0}, review_failed_{0}, throttled_{0};
};

}  // namespace ds
