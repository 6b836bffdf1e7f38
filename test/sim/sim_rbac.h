// RBAC for the simulator: per user, the rules of the Roles and ClusterRoles bound to it, checked
// the way the API server's RBAC authorizer does (verb, API group, resource, resourceNames,
// namespace). Users without an entry are not restricted. Pure functions of values.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace sim {

struct RbacRule {
  std::set<std::string> groups, resources, verbs, names;  // "*" matches all; names empty: any
  std::string ns;  // "" : from a ClusterRole (every namespace and cluster-scoped resources)
};

// What a request asks to do. resource.empty(): a non-resource URL (discovery, /version), which
// every authenticated user may read (system:discovery).
struct RequestAttributes {
  std::string verb, group, resource, ns, name;
  std::string subresource;  // "eviction" in .../pods/NAME/eviction; rules name it "pods/eviction"
};

RequestAttributes Attributes(const std::string& method, const std::string& path, bool watch);

// {"users": {"NAME": [{"apiGroups": [...], "resources": [...], "verbs": [...],
//                       "resourceNames": [...], "namespace": "..."}, ...]}}
bool LoadRbac(const std::string& json, std::map<std::string, std::vector<RbacRule>>* out,
              std::string* error);

bool Allowed(const std::vector<RbacRule>& rules, const RequestAttributes& a);

// The API server's wording: `leases.coordination.k8s.io "x" is forbidden: User "u" cannot get
// resource "leases" in API group "coordination.k8s.io" in the namespace "ns"`.
std::string ForbiddenMessage(const std::string& user, const RequestAttributes& a);

}  // namespace sim
