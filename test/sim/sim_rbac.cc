#include "test/sim/sim_rbac.h"

#include <rapidjson/document.h>

namespace sim {

RequestAttributes Attributes(const std::string& method, const std::string& path, bool watch) {
  RequestAttributes a;
  std::vector<std::string> parts;
  for (size_t i = 1; i <= path.size();) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  size_t rest = 0;  // index of the first part after the group version
  if (parts.size() >= 3 && parts[0] == "api" && parts[1] == "v1") {
    rest = 2;
  } else if (parts.size() >= 4 && parts[0] == "apis") {
    a.group = parts[1];
    rest = 3;
  } else {
    return a;  // non-resource URL
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
    a.verb = method;
  return a;
}

bool LoadRbac(const std::string& json, std::map<std::string, std::vector<RbacRule>>* out,
              std::string* error) {
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
      if (r.HasMember("namespace") && r["namespace"].IsString())
        rule.ns = r["namespace"].GetString();
      rules.push_back(std::move(rule));
    }
  }
  return true;
}

bool Allowed(const std::vector<RbacRule>& rules, const RequestAttributes& a) {
  if (a.resource.empty()) return true;
  auto has = [](const std::set<std::string>& s, const std::string& v) {
    return s.count("*") || s.count(v);
  };
  // RBAC's ResourceMatches: "*", "pods" (no subresource), "pods/eviction" or "*/eviction".
  auto resource_ok = [&](const std::set<std::string>& s) {
    if (s.count("*")) return true;
    if (a.subresource.empty()) return s.count(a.resource) > 0;
    return s.count(a.resource + "/" + a.subresource) > 0 || s.count("*/" + a.subresource) > 0;
  };
  for (const auto& r : rules) {
    if (!r.ns.empty() && r.ns != a.ns) continue;  // a Role grants only in its namespace
    if (!has(r.groups, a.group) || !resource_ok(r.resources) || !has(r.verbs, a.verb)) continue;
    // resourceNames never match requests without a name (create, list, watch), as in RBAC.
    if (!r.names.empty() && (a.name.empty() || !r.names.count(a.name))) continue;
    return true;
  }
  return false;
}

std::string ForbiddenMessage(const std::string& user, const RequestAttributes& a) {
  std::string kind = a.group.empty() ? a.resource : a.resource + "." + a.group;
  std::string m = (a.name.empty() ? kind : kind + " \"" + a.name + "\"") +
                  " is forbidden: User \"" + user + "\" cannot " + a.verb + " resource \"" +
                  a.resource + (a.subresource.empty() ? "" : "/" + a.subresource) +
                  "\" in API group \"" + a.group + "\"";
  return m + (a.ns.empty() ? " at the cluster scope" : " in the namespace \"" + a.ns + "\"");
}

}  // namespace sim
