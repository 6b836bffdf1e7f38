#include "test/sim/sim_rbac.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>

namespace sim {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// RBAC's NonResourceURLMatches: "*", the path itself, or a prefix ending in "*".
bool UrlMatches(const std::set<std::string>& urls, const std::string& path) {
  for (const auto& u : urls) {
    if (u == "*" || u == path) return true;
    if (!u.empty() && u.back() == '*' && path.compare(0, u.size() - 1, u, 0, u.size() - 1) == 0)
      return true;
  }
  return false;
}

RbacRule PathRule(std::set<std::string> urls) {
  RbacRule r;
  r.urls = std::move(urls);
  r.verbs = {"get"};
  return r;
}

// The default ClusterRoles kube-apiserver binds to the group system:authenticated
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go), each under a ClusterRoleBinding
// of the same name.
struct DefaultRole {
  const char* name;
  RbacRule rule;
};
const std::vector<DefaultRole>& AuthenticatedRoles() {
  static const std::vector<DefaultRole> roles = [] {
    std::vector<DefaultRole> v;
    v.push_back({"system:discovery",
                 PathRule({"/livez", "/readyz", "/healthz", "/version", "/version/", "/openapi",
                           "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"})});
    v.push_back({"system:public-info-viewer",
                 PathRule({"/livez", "/readyz", "/healthz", "/version", "/version/"})});
    RbacRule self_authz;
    self_authz.groups = {"authorization.k8s.io"};
    self_authz.resources = {"selfsubjectaccessreviews", "selfsubjectrulesreviews"};
    self_authz.verbs = {"create"};
    v.push_back({"system:basic-user", self_authz});
    RbacRule self_authn;
    self_authn.groups = {"authentication.k8s.io"};
    self_authn.resources = {"selfsubjectreviews"};
    self_authn.verbs = {"create"};
    v.push_back({"system:basic-user", self_authn});
    return v;
  }();
  return roles;
}

bool RuleAllows(const RbacRule& r, const RequestAttributes& a) {
  auto has = [](const std::set<std::string>& s, const std::string& v) {
    return s.count("*") || s.count(v);
  };
  if (a.resource.empty())  // a path: only ClusterRoles' nonResourceURLs rules grant it
    return r.ns.empty() && has(r.verbs, a.verb) && UrlMatches(r.urls, a.path);
  // RBAC's ResourceMatches: "*", "pods" (no subresource), "pods/eviction" or "*/eviction".
  auto resource_ok = [&](const std::set<std::string>& s) {
    if (s.count("*")) return true;
    if (a.subresource.empty()) return s.count(a.resource) > 0;
    return s.count(a.resource + "/" + a.subresource) > 0 || s.count("*/" + a.subresource) > 0;
  };
  if (!r.ns.empty() && r.ns != a.ns) return false;  // a Role grants only in its namespace
  if (!has(r.groups, a.group) || !resource_ok(r.resources) || !has(r.verbs, a.verb)) return false;
  // resourceNames never match requests without a name (create, list, watch), as in RBAC.
  return r.names.empty() || (!a.name.empty() && r.names.count(a.name));
}

// RBAC's describeSubject: a service account's username "system:serviceaccount:NS:NAME" is the
// subject `ServiceAccount "NAME/NS"`.
std::string DescribeUser(const std::string& user) {
  const std::string sa = "system:serviceaccount:";
  if (user.rfind(sa, 0) == 0) {
    std::string rest = user.substr(sa.size());
    auto colon = rest.find(':');
    if (colon != std::string::npos)
      return "ServiceAccount \"" + rest.substr(colon + 1) + "/" + rest.substr(0, colon) + "\"";
  }
  return "User \"" + user + "\"";
}

}  // namespace

RequestAttributes Attributes(const std::string& method, const std::string& path, bool watch) {
  RequestAttributes a;
  // The parts of the path without its trailing slashes (RequestInfoFactory's splitPath):
  // "/apis/apps/v1/" is discovery, not a resource named "".
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  std::vector<std::string> parts;
  for (size_t i = 1; i <= trimmed.size();) {
    size_t j = trimmed.find('/', i);
    if (j == std::string::npos) j = trimmed.size();
    parts.push_back(trimmed.substr(i, j - i));
    i = j + 1;
  }
  size_t rest = 0;  // index of the first part after the group version
  if (parts.size() >= 3 && parts[0] == "api" && parts[1] == "v1") {
    rest = 2;
  } else if (parts.size() >= 4 && parts[0] == "apis") {
    a.group = parts[1];
    rest = 3;
  } else {
    a.path = path;  // a non-resource URL: the verb is the method, lowercased
    for (char c : method) a.verb += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return a;
  }
  if (parts.size() > rest + 2 && parts[rest] == "namespaces" && parts.size() >= rest + 3) {
    a.ns = parts[rest + 1];
    rest += 2;
  }
  a.resource = parts[rest];
  if (parts.size() > rest + 1) a.name = parts[rest + 1];
  if (parts.size() > rest + 2) a.subresource = parts[rest + 2];
  if (method == "GET" || method == "HEAD")
    a.verb = !a.name.empty() ? "get" : watch ? "watch" : "list";
  else if (method == "POST")
    a.verb = "create";
  else if (method == "PUT")
    a.verb = "update";
  else if (method == "PATCH")
    a.verb = "patch";
  else if (method == "DELETE")
    a.verb = a.name.empty() ? "deletecollection" : "delete";
  else
    a.verb = "";  // RequestInfoFactory: any other method of a resource request (OPTIONS) has none
  return a;
}

bool LoadRbac(const std::string& json, RbacUsers* out, std::string* error) {
  rapidjson::Document d;
  d.Parse(json.c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("users") || !d["users"].IsObject()) {
    *error = "rbac file: expected {\"users\": {...}}";
    return false;
  }
  for (auto u = d["users"].MemberBegin(); u != d["users"].MemberEnd(); ++u) {
    if (!u->value.IsArray()) {
      *error = std::string("rbac file: rules of ") + u->name.GetString() + " must be a list";
      return false;
    }
    auto& rules = (*out)[u->name.GetString()];
    for (const auto& r : u->value.GetArray()) {
      if (!r.IsObject()) {
        *error = "rbac file: a rule must be an object";
        return false;
      }
      RbacRule rule;
      auto set = [&](const char* key, std::set<std::string>* s) {
        if (r.HasMember(key) && r[key].IsArray())
          for (const auto& v : r[key].GetArray())
            if (v.IsString()) s->insert(v.GetString());
      };
      set("apiGroups", &rule.groups);
      set("resources", &rule.resources);
      set("verbs", &rule.verbs);
      set("resourceNames", &rule.names);
      set("nonResourceURLs", &rule.urls);
      if (r.HasMember("namespace") && r["namespace"].IsString())
        rule.ns = r["namespace"].GetString();
      if (!rule.urls.empty() && !rule.ns.empty()) {
        *error = std::string("rbac file: a rule of ") + u->name.GetString() +
                 ": namespaced rules cannot apply to non-resource URLs";
        return false;
      }
      if (!rule.urls.empty() &&
          (!rule.groups.empty() || !rule.resources.empty() || !rule.names.empty())) {
        *error = std::string("rbac file: a rule of ") + u->name.GetString() +
                 ": rules cannot apply to both regular resources and non-resource URLs";
        return false;
      }
      rules.push_back(std::move(rule));
    }
  }
  return true;
}

bool Allowed(const std::vector<RbacRule>& rules, const RequestAttributes& a) {
  return std::any_of(rules.begin(), rules.end(),
                     [&](const RbacRule& r) { return RuleAllows(r, a); });
}

RbacDecision Authorize(const RbacUsers& users, const std::string& user,
                       const std::vector<std::string>& groups, const RequestAttributes& a) {
  if (Has(groups, "system:masters")) return {true, ""};
  if (!user.empty()) {
    auto it = users.find(user);
    if (it == users.end())
      return {true,
              "RBAC: allowed by ClusterRoleBinding \"sim:unrestricted\" of ClusterRole "
              "\"cluster-admin\" to " +
                  DescribeUser(user)};
    for (const auto& r : it->second) {
      if (!RuleAllows(r, a)) continue;
      const std::string role = "\"sim:" + user + "\"";
      return {true, r.ns.empty() ? "RBAC: allowed by ClusterRoleBinding " + role +
                                       " of ClusterRole " + role + " to " + DescribeUser(user)
                                 : "RBAC: allowed by RoleBinding \"sim:" + user + "/" + r.ns +
                                       "\" of Role " + role + " to " + DescribeUser(user)};
    }
  }
  if (Has(groups, "system:authenticated"))
    for (const auto& d : AuthenticatedRoles())
      if (RuleAllows(d.rule, a))
        return {true, std::string("RBAC: allowed by ClusterRoleBinding \"") + d.name +
                          "\" of ClusterRole \"" + d.name + "\" to Group \"system:authenticated\""};
  return {false, ""};
}

std::string ForbiddenMessage(const std::string& user, const RequestAttributes& a) {
  if (a.resource.empty())  // responsewriters.forbiddenMessage, wrapped by NewForbidden
    return "forbidden: User \"" + user + "\" cannot " + a.verb + " path \"" + a.path + "\"";
  std::string kind = a.group.empty() ? a.resource : a.resource + "." + a.group;
  std::string m = (a.name.empty() ? kind : kind + " \"" + a.name + "\"") +
                  " is forbidden: User \"" + user + "\" cannot " + a.verb + " resource \"" +
                  a.resource + (a.subresource.empty() ? "" : "/" + a.subresource) +
                  "\" in API group \"" + a.group + "\"";
  return m + (a.ns.empty() ? " at the cluster scope" : " in the namespace \"" + a.ns + "\"");
}

}  // namespace sim
