// RBAC for the simulator: per user, the rules of the Roles and ClusterRoles bound to it, checked
// the way the API server's RBAC authorizer does (verb, API group, resource, resourceNames,
// namespace; nonResourceURLs for paths). Users without an entry are not restricted. Pure
// functions of values.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace sim {

// One PolicyRule. A rule names resources or nonResourceURLs, never both (RBAC's validation, which
// LoadRbac applies): a resource rule never matches a request for a path and vice versa.
struct RbacRule {
  std::set<std::string> groups, resources, verbs, names;  // "*" matches all; names empty: any
  // nonResourceURLs: "/metrics" (that path), "/debug/*" (a prefix), "*" (every path).
  std::set<std::string> urls;
  std::string ns;  // "" : from a ClusterRole (every namespace and cluster-scoped resources)
};

// The rules per user name, as the -rbac file gives them.
using RbacUsers = std::map<std::string, std::vector<RbacRule>>;

// What a request asks to do. resource.empty(): a request for a path (discovery, /version,
// /metrics), whose verb is the lowercased HTTP method ("get", "post"), as the API server's
// RequestInfoFactory makes it.
struct RequestAttributes {
  std::string verb, group, resource, ns, name;
  std::string subresource;  // "eviction" in .../pods/NAME/eviction; rules name it "pods/eviction"
  std::string path;         // the path of a non-resource request
};

RequestAttributes Attributes(const std::string& method, const std::string& path, bool watch);

// {"users": {"NAME": [{"apiGroups": [...], "resources": [...], "verbs": [...],
//                       "resourceNames": [...], "namespace": "..."},
//                      {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, ...]}}
// A rule with nonResourceURLs may name no apiGroups, resources or resourceNames, nor a
// namespace (RBAC's ValidatePolicyRule: only ClusterRoles grant paths).
bool LoadRbac(const std::string& json, RbacUsers* out, std::string* error);

// Whether one of `rules` allows the request (RBAC's RuleAllows over the rules bound to a user).
bool Allowed(const std::vector<RbacRule>& rules, const RequestAttributes& a);

// An authorizer's answer: allowed or not (RBAC never denies outright, it has no opinion), and
// the reason a SubjectAccessReview reports (RBAC names the binding that allowed it).
struct RbacDecision {
  bool allowed = false;
  std::string reason;
};

// The decision for `user` in `groups` under `users`, as kube-apiserver's authorizers make it:
//   - group "system:masters": allowed (the privileged-group authorizer, reason "");
//   - a user listed in `users`: that user's rules;
//   - any other non-empty user: allowed -- the simulator's unlisted users are its admins;
//   - group "system:authenticated": also the default ClusterRoles bound to it (system:discovery,
//     system:public-info-viewer, system:basic-user): discovery paths, /healthz, /version, and
//     the self-reviews.
// Reasons name bindings as RBAC does: `RBAC: allowed by ClusterRoleBinding "sim:u" of ClusterRole
// "sim:u" to User "u"` (the simulator's binding of a listed user's rules: "sim:" + user name).
RbacDecision Authorize(const RbacUsers& users, const std::string& user,
                       const std::vector<std::string>& groups, const RequestAttributes& a);

// The API server's wording: `leases.coordination.k8s.io "x" is forbidden: User "u" cannot get
// resource "leases" in API group "coordination.k8s.io" in the namespace "ns"`, and for a path
// `forbidden: User "u" cannot post path "/metrics"`.
std::string ForbiddenMessage(const std::string& user, const RequestAttributes& a);

}  // namespace sim
