// The review APIs of the simulator's HTTP front: routing, the caller's read-only flag, and the
// token table. What the reviews answer is decided in sim_auth.cc.
#include <civetweb.h>

#include "test/sim/sim_auth.h"
#include "test/sim/sim_http.h"
#include "test/sim/sim_server.h"
#include "test/sim/sim_validation.h"

namespace sim {

bool Server::HandleReviews(mg_connection* conn, const std::string& method, const std::string& path,
                           const User& user, const UserInfo& caller) {
  enum class Review { kToken, kSelfSubject, kAccess, kSelfAccess };
  struct Route {
    const char* path;
    Review review;
    const char* resource;  // for a read-only caller's 403
    const char* group;
  };
  static const Route kRoutes[] = {
      {"/apis/authentication.k8s.io/v1/tokenreviews", Review::kToken, "tokenreviews",
       "authentication.k8s.io"},
      {"/apis/authentication.k8s.io/v1/selfsubjectreviews", Review::kSelfSubject,
       "selfsubjectreviews", "authentication.k8s.io"},
      {"/apis/authorization.k8s.io/v1/subjectaccessreviews", Review::kAccess,
       "subjectaccessreviews", "authorization.k8s.io"},
      {"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", Review::kSelfAccess,
       "selfsubjectaccessreviews", "authorization.k8s.io"},
  };
  const Route* route = nullptr;
  for (const Route& r : kRoutes)
    if (path == r.path) route = &r;
  if (route == nullptr) return false;
  if (method != "POST") {  // the reviews are create-only
    SendError(conn,
              ApiError{405, "MethodNotAllowed",
                       "the server does not allow this method on the requested resource", ""});
    return true;
  }
  // A read-only user may look (get, list, watch) but not create -- except its own reviews,
  // which system:basic-user grants every authenticated user.
  const bool self = route->review == Review::kSelfSubject || route->review == Review::kSelfAccess;
  if (user.read_only && !self) {
    RequestAttributes a;
    a.verb = "create";
    a.group = route->group;
    a.resource = route->resource;
    SendError(conn, Err(403, "Forbidden", ForbiddenMessage(user.name, a),
                        Details("", route->group, route->resource)));
    return true;
  }
  const std::string body = ReadBody(conn);
  std::string out;
  ApiError e;
  switch (route->review) {
    case Review::kToken:
      e = TokenReview(
          body,
          [this](const std::string& token) -> std::optional<UserInfo> {
            ds::MutexLock l(&token_mu_);
            auto it = tokens_.find(token);
            if (it == tokens_.end()) return std::nullopt;
            return AuthenticatedUser(it->second.name, it->second.uid, it->second.groups);
          },
          &out);
      break;
    case Review::kSelfSubject:
      e = SelfSubjectReview(body, caller, &out);
      break;
    case Review::kAccess:
      e = SubjectAccessReview(body, options_.rbac, &out);
      break;
    case Review::kSelfAccess:
      e = SelfSubjectAccessReview(body, caller, options_.rbac, &out);
      break;
  }
  if (!e.ok())
    SendError(conn, e);
  else
    Send(conn, 201, out);
  return true;
}

}  // namespace sim
