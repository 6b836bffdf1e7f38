#include "web/access_policy.h"

#include <cctype>

namespace ds {

std::string ResourceVerb(const std::string& method) {
  if (method == "GET" || method == "HEAD") return "get";
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  std::string verb = method;
  for (char& c : verb) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return verb;  // patch, delete, and whatever else is asked
}

bool MatchesWebhookSecret(const std::string& authorization, const std::string& webhook_token) {
  if (webhook_token.empty()) return false;
  const std::string want = "Bearer " + webhook_token;
  // No early exit: the time taken does not tell how much of a guess was right.
  unsigned char diff = authorization.size() == want.size() ? 0 : 1;
  for (size_t i = 0; i < authorization.size(); ++i)
    diff |= static_cast<unsigned char>(authorization[i] ^ (i < want.size() ? want[i] : 0));
  return diff == 0;
}

AccessRequirement RequiredAccess(const WebRequest& req, const std::string& webhook_token,
                                 const WebAccessScope& scope) {
  AccessRequirement r;
  const bool read = req.method == "GET" || req.method == "HEAD";
  if (read && (req.path == "/" || req.path == "/ui/app.js" || req.path == "/ui/app.css")) {
    r.kind = AccessRequirement::Kind::kOpen;
    return r;
  }
  if (req.path == "/webhook" && req.method == "POST" &&
      MatchesWebhookSecret(req.authorization, webhook_token)) {
    r.kind = AccessRequirement::Kind::kSharedSecret;
    return r;
  }
  r.kind = AccessRequirement::Kind::kReview;
  if (read && req.path == "/metrics") {
    r.review.path = "/metrics";
    r.review.verb = "get";
    return r;
  }
  r.review.verb = ResourceVerb(req.method);
  r.review.resource = {.namespace_name = scope.namespace_name,
                       .group = "",
                       .version = "v1",
                       .resource = "services",
                       .subresource = "proxy",
                       .name = scope.service};
  return r;
}

WebResponse DeniedResponse(int status, const std::string& message) {
  WebResponse r;
  r.status = status;
  r.body = message + "\n";
  r.headers.push_back("Cache-Control: no-store");
  if (status == 401) r.headers.push_back("WWW-Authenticate: Bearer");
  if (status == 503) r.headers.push_back("Retry-After: 5");
  if (status == 429) r.headers.push_back("Retry-After: 1");
  return r;
}

}  // namespace ds
