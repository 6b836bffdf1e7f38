// The two review objects the web port's Kubernetes authentication sends to the API server, and
// their wire forms (kube/access_review.h caches their answers):
//   - authentication.k8s.io/v1 TokenReview: who holds this bearer token?
//   - authorization.k8s.io/v1 SubjectAccessReview: may that user do this verb on this path
//     (nonResourceAttributes), or on this resource (resourceAttributes)?
// Field names as in k8s.io/api authentication/v1 and authorization/v1 types.go. Pure functions of
// values and bytes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

// Who a token belongs to (TokenReview status.user; the SubjectAccessReview's subject).
struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;  // in the order the API server gave them
  std::map<std::string, std::vector<std::string>> extra;

  bool operator==(const UserInfo&) const = default;
};

// A TokenReview's answer. authenticated false is an answer ("this token is nobody's"), not an
// error: the API server could be asked and said no. `error` is the server's status.error, which
// says why (an expired or malformed token, or an authenticator that could not decide); for logs.
struct TokenReviewResult {
  bool authenticated = false;
  UserInfo user;  // meaningful when authenticated
  std::string error;
};

// A SubjectAccessReview's resourceAttributes (authorization/v1 ResourceAttributes): e.g. the
// subresource "proxy" of the Service "dynamic-scheduler" in its namespace.
struct ResourceAttributes {
  std::string namespace_name;
  std::string group;  // "" : the core group
  std::string version;
  std::string resource;  // "services"; empty: not a resource review
  std::string subresource;
  std::string name;

  bool operator==(const ResourceAttributes&) const = default;
};

// What a SubjectAccessReview asks: may `user` do `verb` on the non-resource URL `path`, or, when
// resource.resource is set, on that resource (path then unused).
struct AccessAttributes {
  UserInfo user;
  std::string path;  // nonResourceAttributes.path: the request's path, without its query
  std::string verb;  // the lowercased HTTP method ("get", "post"), or a resource verb ("create")
  ResourceAttributes resource = {};

  bool is_resource() const { return !resource.resource.empty(); }
};

// A SubjectAccessReview's answer. allowed false is an answer, not an error. `denied` true is an
// explicit deny (an authorizer said no); allowed and denied both false is "no authorizer had an
// opinion", which is a no as well. A status with both true is treated as denied, as the API
// server's webhook authorizer does.
struct AccessDecision {
  bool allowed = false;
  bool denied = false;
  std::string reason;            // status.reason: why, when the authorizer says
  std::string evaluation_error;  // status.evaluationError: a partial failure while deciding

  bool Allows() const { return allowed && !denied; }
};

// The TokenReview to POST for `token` (no audiences: the API server's own, as controller-runtime's
// WithAuthenticationAndAuthorization asks). The body carries the token: never log it.
std::string EncodeTokenReview(const std::string& token);
// Decodes the TokenReview the API server answers with (its status). Errors name what was wrong.
StatusOr<TokenReviewResult> DecodeTokenReview(const std::string& body);

// The SubjectAccessReview to POST: spec {nonResourceAttributes {path, verb} or resourceAttributes
// {namespace, verb, group, version, resource, subresource, name}, user, uid, groups, extra}, empty
// fields left out. Deterministic (extra's keys in order, groups as given), so equal
// attributes give equal bytes: AccessReviewer uses the body as its cache key, as the API server's
// webhook authorizer keys its cache by the marshalled spec.
std::string EncodeSubjectAccessReview(const AccessAttributes& a);
// Decodes the SubjectAccessReview the API server answers with (its status).
StatusOr<AccessDecision> DecodeSubjectAccessReview(const std::string& body);

}  // namespace ds
