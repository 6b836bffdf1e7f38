#include "test/sim/sim_service_location.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/json_util.h"
#include "test/sim/sim_validation.h"

namespace sim {
namespace {

using rapidjson::Value;

// strconv.ParseInt(s, 10, 64) succeeds: an optional sign, then decimal digits, in range.
bool ParseInt64(const std::string& s, long long* out) {
  size_t i = s.empty() || (s[0] != '+' && s[0] != '-') ? 0 : 1;
  if (i == s.size()) return false;
  for (size_t j = i; j < s.size(); ++j)
    if (s[j] < '0' || s[j] > '9') return false;
  errno = 0;
  *out = std::strtoll(s.c_str(), nullptr, 10);
  return errno == 0;
}

ApiError Unavailable(const std::string& message) { return Err(503, "ServiceUnavailable", message); }

}  // namespace

bool SplitSchemeNamePort(const std::string& id, std::string* scheme, std::string* name,
                         std::string* port) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t colon = id.find(':', start);
    parts.push_back(
        id.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  scheme->clear();
  port->clear();
  if (parts.size() == 1) {
    *name = parts[0];
  } else if (parts.size() == 2) {
    *name = parts[0];
    *port = parts[1];
  } else if (parts.size() == 3) {
    *scheme = parts[0];
    *name = parts[1];
    *port = parts[2];
  } else {
    return false;
  }
  return !name->empty() && (scheme->empty() || *scheme == "http" || *scheme == "https");
}

ApiError ResolveServiceEndpoint(const std::string& ns, const std::string& id,
                                const ObjectLookup& service, const ObjectLookup& endpoints,
                                const PodIpsLookup& pod_ips,
                                const std::function<size_t(size_t n)>& random,
                                ServiceEndpoint* out) {
  std::string scheme, name, port;
  if (!SplitSchemeNamePort(id, &scheme, &name, &port))
    return Err(400, "BadRequest", "invalid service request \"" + id + "\"");
  if (long long number = 0; ParseInt64(port, &number)) {
    std::string json;
    if (ApiError e = service(name, &json); !e.ok()) return e;
    rapidjson::Document svc;
    svc.Parse(json.c_str());
    const Value* spec = ds::JsonMember(svc, "spec");
    const Value* ports = spec != nullptr ? ds::JsonMember(*spec, "ports") : nullptr;
    bool found = false;
    if (ports != nullptr && ports->IsArray())
      for (const auto& p : ports->GetArray())
        if (const Value* n = p.IsObject() ? ds::JsonMember(p, "port") : nullptr;
            n != nullptr && n->IsInt64() && n->GetInt64() == number) {
          port = ds::JsonString(p, "name");  // the declared port's name
          found = true;
          break;
        }
    if (!found)
      return Unavailable("no service port " + std::to_string(number) + " found for service \"" +
                         name + "\"");
  }
  std::string json;
  if (ApiError e = endpoints(name, &json); !e.ok()) return e;
  rapidjson::Document eps;
  eps.Parse(json.c_str());
  const Value* subsets = ds::JsonMember(eps, "subsets");
  if (subsets == nullptr || !subsets->IsArray() || subsets->Empty())
    return Unavailable("no endpoints available for service \"" + name + "\"");
  const size_t n_subsets = subsets->Size();
  const size_t first_subset = random(n_subsets);
  for (size_t si = 0; si < n_subsets; ++si) {
    const Value& ss = (*subsets)[static_cast<rapidjson::SizeType>((first_subset + si) % n_subsets)];
    const Value* addrs = ss.IsObject() ? ds::JsonMember(ss, "addresses") : nullptr;
    const Value* ports = ss.IsObject() ? ds::JsonMember(ss, "ports") : nullptr;
    if (addrs == nullptr || !addrs->IsArray() || addrs->Empty() || ports == nullptr ||
        !ports->IsArray())
      continue;
    for (const auto& p : ports->GetArray()) {
      if (!p.IsObject() || ds::JsonString(p, "name") != port) continue;
      const size_t n_addrs = addrs->Size();
      const size_t first_addr = random(n_addrs);
      for (size_t ai = 0; ai < n_addrs; ++ai) {
        const Value& addr = (*addrs)[static_cast<rapidjson::SizeType>((first_addr + ai) % n_addrs)];
        if (!addr.IsObject()) continue;
        // isValidAddress: the address must be a Pod's of this namespace that still has it.
        const Value* ref = ds::JsonMember(addr, "targetRef");
        if (ref == nullptr || !ref->IsObject() || ds::JsonString(*ref, "namespace") != ns) continue;
        const std::string ip = ds::JsonString(addr, "ip");
        const auto ips = pod_ips(ds::JsonString(*ref, "name"));
        if (std::find(ips.begin(), ips.end(), ip) == ips.end()) continue;
        const Value* number = ds::JsonMember(p, "port");
        out->scheme = scheme;
        out->ip = ip;
        out->port = number != nullptr && number->IsInt() ? number->GetInt() : 0;
        return {};
      }
    }
  }
  return Unavailable("no endpoints available for service \"" + id + "\"");
}

}  // namespace sim
