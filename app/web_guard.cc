#include "app/web_guard.h"

#include <glog/logging.h>

#include "common/log_fields.h"

namespace ds {

WebGuard::WebGuard(KubeApi* kube, const Clock* clock, std::string webhook_token,
                   WebAccessScope scope, AccessReviewerOptions options)
    : clock_(clock),
      webhook_token_(std::move(webhook_token)),
      scope_(std::move(scope)),
      reviewer_(kube, clock, options) {}

WebGuard::Verdict WebGuard::Admit(const WebRequest& req) {
  Verdict v;
  const AccessRequirement need = RequiredAccess(req, webhook_token_, scope_);
  if (need.kind != AccessRequirement::Kind::kReview) {
    v.pass = true;
    return v;
  }
  const AccessReviewer::Decision d = reviewer_.Check(req.authorization, need.review, req.client);
  if (d.allow) {
    v.pass = true;
    v.verified = true;
    return v;
  }
  Count(d);
  v.denied = DeniedResponse(d.status, d.message);
  if (denial_log_.ShouldLog(req.client + " " + d.reason(), clock_->Now()))
    LOG(WARNING) << "web: " << req.method << " " << req.path << " refused (" << d.status << " "
                 << d.reason() << "; further refusals of this client for this reason are not "
                 << "logged for a minute)"
                 << Fields("client", req.client, "user", d.username, "verb", need.review.verb,
                           "path", req.path, "reason", d.reason(), "why", d.detail);
  return v;
}

void WebGuard::Count(const AccessReviewer::Decision& d) {
  switch (d.status) {
    case 401:
      ++unauthenticated_;
      break;
    case 403:
      ++forbidden_;
      break;
    case 429:
      ++throttled_;
      break;
    default:
      ++review_failed_;
      break;
  }
}

WebAccessCounters WebGuard::Counters() const {
  WebAccessCounters c;
  c.unauthenticated = unauthenticated_.load();
  c.forbidden = forbidden_.load();
  c.review_failed = review_failed_.load();
  c.throttled = throttled_.load();
  return c;
}

}  // namespace ds
