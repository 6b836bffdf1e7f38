// The API server's review APIs, as the simulator serves them: authentication.k8s.io/v1
// TokenReview and SelfSubjectReview, authorization.k8s.io/v1 SubjectAccessReview and
// SelfSubjectAccessReview. A web port behind Kubernetes authentication (controller-runtime's
// secure metrics serving, kube-rbac-proxy) asks the first who holds a bearer token and the
// second whether that user may do a verb on a path. Request body in, response body or error out:
// pure functions of values (the token table and the RBAC rules come in as arguments).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "test/sim/sim_rbac.h"
#include "test/sim/sim_store.h"

namespace sim {

// Who a request or a token is (authentication's user.Info; a TokenReview's status.user).
struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
};

// The user the API server's authenticators make of `username` with `groups` configured for it:
// those groups; for a service account's username "system:serviceaccount:NS:NAME" first
// "system:serviceaccounts" and "system:serviceaccounts:NS" (serviceaccount.UserInfo); and
// "system:authenticated" last (group.AuthenticatedGroupAdder). No group twice.
UserInfo AuthenticatedUser(const std::string& username, const std::string& uid,
                           const std::vector<std::string>& groups);

// Who holds a bearer token; nullopt when no one does.
using TokenLookup = std::function<std::optional<UserInfo>(const std::string& token)>;

// POST /apis/authentication.k8s.io/v1/tokenreviews. On success (ok()), *out is the TokenReview
// with its status (the API server answers 201): for a known token {authenticated: true, user,
// audiences}; for an unknown one {user: {}, error: "invalid bearer token"} -- `authenticated` is
// omitempty and absent. Errors as the API server words them: 400 for a body that is no
// TokenReview and for an empty spec.token ("token is required for TokenReview in
// authentication").
ApiError TokenReview(const std::string& body, const TokenLookup& lookup, std::string* out);

// POST /apis/authentication.k8s.io/v1/selfsubjectreviews (kubectl auth whoami): the caller.
ApiError SelfSubjectReview(const std::string& body, const UserInfo& caller, std::string* out);

// POST /apis/authorization.k8s.io/v1/subjectaccessreviews: may spec.user (in spec.groups) do
// what spec.resourceAttributes or spec.nonResourceAttributes say? Decided by Authorize (see
// sim_rbac.h) under `users`. *out is the review with status {allowed, reason?}. A spec without
// exactly one of the two attribute kinds, or without user and groups: 422 Invalid with the
// fields' causes, as ValidateSubjectAccessReviewSpec words them.
ApiError SubjectAccessReview(const std::string& body, const RbacUsers& users, std::string* out);

// POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews (kubectl auth can-i): the same
// question for the caller.
ApiError SelfSubjectAccessReview(const std::string& body, const UserInfo& caller,
                                 const RbacUsers& users, std::string* out);

}  // namespace sim
