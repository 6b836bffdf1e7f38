#include "test/sim/sim_services.h"

#include <arpa/inet.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "common/json_util.h"
#include "test/sim/sim_json.h"
#include "test/sim/sim_validation.h"

namespace sim {
namespace {

using rapidjson::Document;
using rapidjson::Value;
using Allocator = Document::AllocatorType;

const Resource kServices{"services", ""};
const Resource kEndpoints{"endpoints", ""};

const Resource& ResourceOf(ServiceStore::Kind kind) {
  return kind == ServiceStore::Kind::kService ? kServices : kEndpoints;
}
const char* KindName(ServiceStore::Kind kind) {
  return kind == ServiceStore::Kind::kService ? "Service" : "Endpoints";
}

PodKeys KeysOf(const Value& obj) {
  PodKeys k;
  const Value& meta = obj["metadata"];
  k.fields["metadata.name"] = ds::JsonString(meta, "name");
  k.fields["metadata.namespace"] = ds::JsonString(meta, "namespace");
  if (const Value* l = ds::JsonMember(meta, "labels"); l && l->IsObject())
    for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it)
      if (it->value.IsString()) k.labels.emplace_back(it->name.GetString(), it->value.GetString());
  return k;
}

// --- validation (k8s.io/apimachinery/pkg/util/validation and pkg/apis/core/validation) ---

bool IsDns1123Label(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

bool IsDns1035Label(const std::string& s) {
  return IsDns1123Label(s) && s.front() >= 'a' && s.front() <= 'z';
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

// ValidateDNS1123Label's messages.
void Dns1123Label(const std::string& field, const std::string& value, FieldErrors* fe) {
  if (value.size() > 63) fe->Invalid(field, Quote(value), "must be no more than 63 characters");
  if (!IsDns1123Label(value.substr(0, 63)) || value.empty())
    fe->Invalid(field, Quote(value),
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
                "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
}

void Duplicate(const std::string& field, const std::string& value, FieldErrors* fe) {
  fe->errs.push_back({"FieldValueDuplicate", field, "Duplicate value: " + Quote(value)});
}

void NotSupported(const std::string& field, const std::string& value,
                  const std::vector<std::string>& supported, FieldErrors* fe) {
  std::string list;
  for (const auto& s : supported) list += (list.empty() ? "" : ", ") + Quote(s);
  fe->errs.push_back({"FieldValueNotSupported", field,
                      "Unsupported value: " + Quote(value) + ": supported values: " + list});
}

// IsValidPortNum.
void PortNumber(const std::string& field, const Value* v, FieldErrors* fe) {
  if (v == nullptr || !v->IsInt()) {
    fe->Required(field);
    return;
  }
  if (v->GetInt() < 1 || v->GetInt() > 65535)
    fe->Invalid(field, std::to_string(v->GetInt()), "must be between 1 and 65535, inclusive");
}

void Protocol(const std::string& field, const Value& port, FieldErrors* fe) {
  const std::string p = ds::JsonString(port, "protocol");
  if (p != "TCP" && p != "UDP" && p != "SCTP") NotSupported(field, p, {"SCTP", "TCP", "UDP"}, fe);
}

// ValidateEndpointIP: Endpoints (and EndpointSlices) may not point at addresses that mean "this
// host" or the node's own link: unspecified, loopback, link-local, link-local multicast.
void EndpointIp(const std::string& field, const std::string& ip, FieldErrors* fe) {
  unsigned char b[16];
  const std::string why_loopback = "may not be in the loopback range (127.0.0.0/8, ::1/128)";
  const std::string why_link = "may not be in the link-local range (169.254.0.0/16, fe80::/10)";
  const std::string why_mcast =
      "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)";
  if (inet_pton(AF_INET, ip.c_str(), b) == 1) {
    if (b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0)
      fe->Invalid(field, Quote(ip), "may not be unspecified (" + ip + ")");
    if (b[0] == 127) fe->Invalid(field, Quote(ip), why_loopback);
    if (b[0] == 169 && b[1] == 254) fe->Invalid(field, Quote(ip), why_link);
    if (b[0] == 224 && b[1] == 0 && b[2] == 0) fe->Invalid(field, Quote(ip), why_mcast);
    return;
  }
  if (inet_pton(AF_INET6, ip.c_str(), b) == 1) {
    static const unsigned char kZero[16] = {};
    const bool zero15 = std::memcmp(b, kZero, 15) == 0;
    if (zero15 && b[15] == 0) fe->Invalid(field, Quote(ip), "may not be unspecified (" + ip + ")");
    if (zero15 && b[15] == 1) fe->Invalid(field, Quote(ip), why_loopback);
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) fe->Invalid(field, Quote(ip), why_link);
    if (b[0] == 0xff && (b[1] & 0x0f) == 0x02) fe->Invalid(field, Quote(ip), why_mcast);
    return;
  }
  fe->Invalid(field, Quote(ip), "must be a valid IP address");
}

void ValidateService(const Value& doc, FieldErrors* fe) {
  const Value& spec = doc["spec"];
  const std::string type = ds::JsonString(spec, "type");
  if (type != "ClusterIP" && type != "NodePort" && type != "LoadBalancer" && type != "ExternalName")
    NotSupported("spec.type", type, {"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"}, fe);
  const bool headless = ds::JsonString(spec, "clusterIP") == "None";
  const Value* ports = ds::JsonMember(spec, "ports");
  const size_t n = ports != nullptr && ports->IsArray() ? ports->Size() : 0;
  if (n == 0 && !headless && type != "ExternalName") fe->Required("spec.ports");
  if (type == "ExternalName" && ds::JsonString(spec, "externalName").empty())
    fe->Required("spec.externalName");
  std::set<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    const Value& p = (*ports)[static_cast<rapidjson::SizeType>(i)];
    const std::string at = "spec.ports[" + std::to_string(i) + "]";
    if (!p.IsObject()) {
      fe->Invalid(at, "null", "must be an object");
      continue;
    }
    const std::string name = ds::JsonString(p, "name");
    if (n > 1 && name.empty()) {
      fe->Required(at + ".name");
    } else if (!name.empty()) {
      Dns1123Label(at + ".name", name, fe);
      if (!names.insert(name).second) Duplicate(at + ".name", name, fe);
    }
    PortNumber(at + ".port", ds::JsonMember(p, "port"), fe);
    Protocol(at + ".protocol", p, fe);
    if (const Value* t = ds::JsonMember(p, "targetPort"); t && t->IsInt())
      PortNumber(at + ".targetPort", t, fe);
  }
}

void ValidateEndpoints(const Value& doc, FieldErrors* fe) {
  const Value* subsets = ds::JsonMember(doc, "subsets");
  if (subsets == nullptr || !subsets->IsArray()) return;
  for (rapidjson::SizeType i = 0; i < subsets->Size(); ++i) {
    const Value& ss = (*subsets)[i];
    const std::string at = "subsets[" + std::to_string(i) + "]";
    if (!ss.IsObject()) {
      fe->Invalid(at, "null", "must be an object");
      continue;
    }
    const Value* ready = ds::JsonMember(ss, "addresses");
    const Value* not_ready = ds::JsonMember(ss, "notReadyAddresses");
    auto count = [](const Value* v) { return v != nullptr && v->IsArray() ? v->Size() : 0; };
    if (count(ready) == 0 && count(not_ready) == 0)
      fe->Required(at, "must specify `addresses` or `notReadyAddresses`");
    const std::pair<const Value*, const char*> lists[] = {{ready, "addresses"},
                                                          {not_ready, "notReadyAddresses"}};
    for (const auto& [list, key] : lists)
      for (rapidjson::SizeType j = 0; j < count(list); ++j) {
        const Value& addr = (*list)[j];
        const std::string f = at + "." + key + "[" + std::to_string(j) + "]";
        EndpointIp(f + ".ip", addr.IsObject() ? ds::JsonString(addr, "ip") : "", fe);
        if (const std::string h = addr.IsObject() ? ds::JsonString(addr, "hostname") : "";
            !h.empty())
          Dns1123Label(f + ".hostname", h, fe);
      }
    const Value* ports = ds::JsonMember(ss, "ports");
    for (rapidjson::SizeType j = 0; j < count(ports); ++j) {
      const Value& p = (*ports)[j];
      const std::string f = at + ".ports[" + std::to_string(j) + "]";
      if (!p.IsObject()) continue;
      const std::string name = ds::JsonString(p, "name");
      if (ports->Size() > 1 && name.empty())
        fe->Required(f + ".name");
      else if (!name.empty())
        Dns1123Label(f + ".name", name, fe);
      PortNumber(f + ".port", ds::JsonMember(p, "port"), fe);
      Protocol(f + ".protocol", p, fe);
    }
  }
}

// --- defaults (pkg/apis/core/v1/defaults.go SetDefaults_Service, SetDefaults_Endpoints) ---

void DefaultPorts(Value* ports, bool target_port, Allocator& a) {
  if (ports == nullptr || !ports->IsArray()) return;
  for (auto& p : ports->GetArray()) {
    if (!p.IsObject()) continue;
    if (ds::JsonString(p, "protocol").empty()) SetMember(p, "protocol", Value("TCP"), a);
    if (target_port && !p.HasMember("targetPort") && p.HasMember("port"))
      p.AddMember("targetPort", Value(p["port"], a), a);
  }
}

void DefaultService(Value& spec, Allocator& a) {
  if (ds::JsonString(spec, "type").empty()) SetMember(spec, "type", Value("ClusterIP"), a);
  if (ds::JsonString(spec, "sessionAffinity").empty())
    SetMember(spec, "sessionAffinity", Value("None"), a);
  DefaultPorts(ds::JsonMember(spec, "ports") ? &spec["ports"] : nullptr, true, a);
  if (ds::JsonString(spec, "type") != "ExternalName") {
    if (ds::JsonString(spec, "internalTrafficPolicy").empty())
      SetMember(spec, "internalTrafficPolicy", Value("Cluster"), a);
  }
}

// --- strategic merge patch, for the lists of these two kinds ---

// The patchMergeKey of the lists a strategic merge patch merges rather than replaces
// (k8s.io/api/core/v1/types.go: ServiceSpec.Ports, ObjectMeta.OwnerReferences); every other list
// of a Service or an Endpoints (subsets, addresses) is replaced whole.
const char* MergeKey(const std::string& path) {
  if (path == "spec.ports") return "port";
  if (path == "metadata.ownerReferences") return "uid";
  return nullptr;
}

bool IsDirective(const Value& name) {
  return name.GetStringLength() > 0 && name.GetString()[0] == '$';
}

// A copy of `v` without the directives ($patch, $setElementOrder/..., $retainKeys) of its maps.
Value WithoutDirectives(const Value& v, Allocator& a) {
  if (v.IsObject()) {
    Value out(rapidjson::kObjectType);
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it)
      if (!IsDirective(it->name))
        out.AddMember(Value(it->name, a), WithoutDirectives(it->value, a), a);
    return out;
  }
  if (v.IsArray()) {
    Value out(rapidjson::kArrayType);
    for (const auto& e : v.GetArray()) out.PushBack(WithoutDirectives(e, a), a);
    return out;
  }
  return Value(v, a);
}

void StrategicMerge(Value& target, const Value& patch, const std::string& path, Allocator& a);

// Merges list `patch` into list `target` by `key` (strategicpatch's mergeSlice): items with the
// same key merge, `{"$patch": "delete", key: K}` removes K, `{"$patch": "replace"}` makes the
// patch's items the whole list, new items are appended, and `order` ($setElementOrder) puts the
// items it names first, in its order.
void MergeList(Value& target, const Value& patch, const char* key, const Value* order,
               const std::string& path, Allocator& a) {
  if (!target.IsArray()) target.SetArray();
  for (const auto& p : patch.GetArray())
    if (p.IsObject() && ds::JsonString(p, "$patch") == "replace") {
      target.SetArray();
      for (const auto& q : patch.GetArray())
        if (!(q.IsObject() && q.HasMember("$patch"))) target.PushBack(WithoutDirectives(q, a), a);
      return;
    }
  for (const auto& p : patch.GetArray()) {
    const Value* k = p.IsObject() ? ds::JsonMember(p, key) : nullptr;
    Value* match = nullptr;
    rapidjson::SizeType at = 0;
    for (rapidjson::SizeType i = 0; k != nullptr && i < target.Size(); ++i)
      if (const Value* tk = target[i].IsObject() ? ds::JsonMember(target[i], key) : nullptr;
          tk != nullptr && *tk == *k) {
        match = &target[i];
        at = i;
        break;
      }
    if (p.IsObject() && ds::JsonString(p, "$patch") == "delete") {
      if (match != nullptr) target.Erase(target.Begin() + at);
    } else if (match != nullptr) {
      StrategicMerge(*match, p, path, a);
    } else {
      target.PushBack(WithoutDirectives(p, a), a);
    }
  }
  if (order == nullptr || !order->IsArray()) return;
  Value sorted(rapidjson::kArrayType), rest(rapidjson::kArrayType);
  std::vector<bool> taken(target.Size(), false);
  for (const auto& o : order->GetArray()) {
    const Value* ok = o.IsObject() ? ds::JsonMember(o, key) : nullptr;
    for (rapidjson::SizeType i = 0; ok != nullptr && i < target.Size(); ++i)
      if (const Value* tk = target[i].IsObject() ? ds::JsonMember(target[i], key) : nullptr;
          !taken[i] && tk != nullptr && *tk == *ok) {
        taken[i] = true;
        sorted.PushBack(Value(target[i], a), a);
      }
  }
  for (rapidjson::SizeType i = 0; i < target.Size(); ++i)
    if (!taken[i]) sorted.PushBack(Value(target[i], a), a);
  target = sorted;
}

// strategicpatch's mergeMap for one map: null deletes, maps merge, lists with a merge key merge
// by it, other values (and lists) replace; `$patch: replace` replaces the map, `$retainKeys`
// drops the keys it does not list, `$deleteFromPrimitiveList/F` removes values from list F.
void StrategicMerge(Value& target, const Value& patch, const std::string& path, Allocator& a) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, a);
    return;
  }
  if (ds::JsonString(patch, "$patch") == "replace") {
    target = WithoutDirectives(patch, a);
    return;
  }
  if (!target.IsObject()) target.SetObject();
  const std::string prefix = path.empty() ? "" : path + ".";
  for (auto it = patch.MemberBegin(); it != patch.MemberEnd(); ++it) {
    const std::string name = it->name.GetString();
    if (name.rfind("$deleteFromPrimitiveList/", 0) == 0 && it->value.IsArray()) {
      auto list = target.FindMember(name.substr(name.find('/') + 1).c_str());
      if (list == target.MemberEnd() || !list->value.IsArray()) continue;
      for (const auto& gone : it->value.GetArray())
        for (auto e = list->value.Begin(); e != list->value.End();)
          e = *e == gone ? list->value.Erase(e) : e + 1;
      continue;
    }
    if (IsDirective(it->name)) continue;
    auto existing = target.FindMember(it->name);
    if (it->value.IsNull()) {
      if (existing != target.MemberEnd()) target.RemoveMember(existing);
      continue;
    }
    const char* key = MergeKey(prefix + name);
    if (it->value.IsArray() && key != nullptr) {
      if (existing == target.MemberEnd()) {
        target.AddMember(Value(it->name, a), Value(rapidjson::kArrayType), a);
        existing = target.FindMember(it->name);
      }
      MergeList(existing->value, it->value, key,
                ds::JsonMember(patch, ("$setElementOrder/" + name).c_str()), prefix + name, a);
    } else if (it->value.IsObject() && existing != target.MemberEnd() &&
               existing->value.IsObject()) {
      StrategicMerge(existing->value, it->value, prefix + name, a);
    } else if (existing != target.MemberEnd()) {
      existing->value = WithoutDirectives(it->value, a);
    } else {
      target.AddMember(Value(it->name, a), WithoutDirectives(it->value, a), a);
    }
  }
  if (const Value* retain = ds::JsonMember(patch, "$retainKeys"); retain && retain->IsArray())
    for (auto m = target.MemberBegin(); m != target.MemberEnd();) {
      const bool kept =
          std::any_of(retain->Begin(), retain->End(), [&](const Value& k) { return k == m->name; });
      m = kept ? m + 1 : target.RemoveMember(m);
    }
}

// kind, apiVersion and metadata first, as the API server writes an object.
void KindFirst(Document* doc) {
  auto& a = doc->GetAllocator();
  Value out(rapidjson::kObjectType);
  for (const char* k : {"kind", "apiVersion", "metadata"})
    if (auto it = doc->FindMember(k); it != doc->MemberEnd())
      out.AddMember(Value(k, a), it->value, a);  // moves the value out, leaving a null
  for (auto it = doc->MemberBegin(); it != doc->MemberEnd(); ++it)
    if (!it->value.IsNull()) out.AddMember(Value(it->name, a), it->value, a);
  static_cast<Value&>(*doc) = out;
}

const std::string kModified =
    "the object has been modified; please apply your changes to the latest version and try again";

}  // namespace

const std::vector<std::string>& ServiceStore::SelectableFields() {
  static const std::vector<std::string> kFields = {"metadata.name", "metadata.namespace"};
  return kFields;
}

std::string ServiceStore::AllocateClusterIp() {
  // 10.96.0.0/12 holds 2^20 addresses; the simulator never comes near them.
  const uint32_t ip = (10u << 24) | (96u << 16) | next_ip_++;
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
         std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
}

ApiError ServiceStore::Put(Kind kind, const std::string& key, Document* doc, const Value* old,
                           std::string* out) {
  auto& a = doc->GetAllocator();
  const std::string ns = key.substr(0, key.find('/'));
  const std::string name = key.substr(key.find('/') + 1);
  // Every top-level member first: adding one may move the others, and the references below
  // must stay valid.
  doc->RemoveMember("kind");
  doc->RemoveMember("apiVersion");
  doc->AddMember("kind", Value(KindName(kind), a), a);
  doc->AddMember("apiVersion", "v1", a);
  ObjectMember(*doc, "metadata", a);
  if (kind == Kind::kService) {
    ObjectMember(*doc, "spec", a);
    // The status belongs to the status subresource: dropped on create, kept on update.
    doc->RemoveMember("status");
    const Value* old_status = old != nullptr ? ds::JsonMember(*old, "status") : nullptr;
    Value status(rapidjson::kObjectType);
    if (old_status != nullptr && old_status->IsObject())
      status.CopyFrom(*old_status, a);
    else
      status.AddMember("loadBalancer", Value(rapidjson::kObjectType), a);
    doc->AddMember("status", status, a);
  }
  Value& meta = (*doc)["metadata"];
  SetMember(meta, "namespace", Value(ns.c_str(), a), a);
  if (old != nullptr) {  // what the server set at creation stays
    const Value& om = (*old)["metadata"];
    for (const char* k : {"uid", "creationTimestamp"})
      SetMember(meta, k, Value(ds::JsonString(om, k).c_str(), a), a);
  } else {
    const std::string uid = std::string("sim-") + (kind == Kind::kService ? "svc" : "ep") + "-" +
                            std::to_string(++uid_counter_) + "-" + name;
    SetMember(meta, "uid", Value(uid.c_str(), a), a);
    SetMember(meta, "creationTimestamp", Value(NowTimestamp().c_str(), a), a);
  }
  FieldErrors fe;
  ValidateLabels(&meta, &fe);
  if (kind == Kind::kEndpoints) {
    if (Value* subsets = ds::JsonMember(*doc, "subsets") ? &(*doc)["subsets"] : nullptr;
        subsets != nullptr && subsets->IsArray())
      for (auto& ss : subsets->GetArray())
        if (ss.IsObject())
          DefaultPorts(ds::JsonMember(ss, "ports") ? &ss["ports"] : nullptr, false, a);
    ValidateEndpoints(*doc, &fe);
    if (!fe.errs.empty()) return fe.ToError("Endpoints", "Endpoints", "", name);
  } else {
    Value& spec = (*doc)["spec"];
    DefaultService(spec, a);
    // The allocated clusterIP: kept when the update leaves it out (PatchAllocatedValues), never
    // changed.
    const std::string old_ip = old != nullptr ? ds::JsonString((*old)["spec"], "clusterIP") : "";
    std::string ip = ds::JsonString(spec, "clusterIP");
    if (ip.empty() && !old_ip.empty()) ip = old_ip;
    if (!old_ip.empty() && ip != old_ip)
      fe.Invalid("spec.clusterIPs[0]", "[]string{" + Quote(ip) + "}", "may not change once set");
    ValidateService(*doc, &fe);
    if (!fe.errs.empty()) return fe.ToError("Service", "Service", "", name);
    if (ds::JsonString(spec, "type") != "ExternalName") {
      if (ip.empty()) ip = AllocateClusterIp();
      SetMember(spec, "clusterIP", Value(ip.c_str(), a), a);
      Value ips(rapidjson::kArrayType);
      ips.PushBack(Value(ip.c_str(), a), a);
      SetMember(spec, "clusterIPs", std::move(ips), a);
      Value families(rapidjson::kArrayType);
      families.PushBack("IPv4", a);
      SetMember(spec, "ipFamilies", std::move(families), a);
      if (ds::JsonString(spec, "ipFamilyPolicy").empty())
        SetMember(spec, "ipFamilyPolicy", Value("SingleStack"), a);
    }
  }
  if (old != nullptr) {  // an update that changes nothing is not stored
    Document same;
    same.CopyFrom(*doc, same.GetAllocator());
    SetMember(
        same["metadata"], "resourceVersion",
        Value(ds::JsonString((*old)["metadata"], "resourceVersion").c_str(), same.GetAllocator()),
        same.GetAllocator());
    if (same == *old) {
      *out = ds::JsonToString(*old);
      return {};
    }
  }
  SetMember(meta, "resourceVersion", Value(std::to_string(cluster_->NextRv()).c_str(), a), a);
  KindFirst(doc);
  Stored& s = Objects(kind)[key];
  s.json = ds::JsonToString(*doc);
  s.keys = KeysOf(*doc);
  *out = s.json;
  return {};
}

namespace {

// Parses a body of `kind` for namespace `ns`; *name is its metadata.name (validated).
ApiError ParseBody(ServiceStore::Kind kind, const std::string& ns, const std::string& body,
                   Document* doc, std::string* name) {
  doc->Parse(body.c_str());
  if (doc->HasParseError() || !doc->IsObject())
    return Err(400, "BadRequest",
               std::string("the body of the request could not be decoded as a ") + KindName(kind));
  const Value* meta = ds::JsonMember(*doc, "metadata");
  *name = meta && meta->IsObject() ? ds::JsonString(*meta, "name") : "";
  const std::string obj_ns = meta && meta->IsObject() ? ds::JsonString(*meta, "namespace") : "";
  if (!obj_ns.empty() && obj_ns != ns)
    return Err(400, "BadRequest",
               "the namespace of the provided object does not match the namespace sent on the "
               "request");
  FieldErrors fe;
  if (name->empty()) {
    fe.Required("metadata.name", "name or generateName is required");
  } else if (kind == ServiceStore::Kind::kService && !IsDns1035Label(*name)) {
    fe.Invalid("metadata.name", Quote(*name),
               "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
               "with an alphabetic character, and end with an alphanumeric character (e.g. "
               "'my-name',  or 'abc-123', regex used for validation is "
               "'[a-z]([-a-z0-9]*[a-z0-9])?')");
  } else {
    ValidateName(*name, &fe);
  }
  if (!fe.errs.empty())
    return kind == ServiceStore::Kind::kService ? fe.ToError("Service", "Service", "", *name)
                                                : fe.ToError("Endpoints", "Endpoints", "", *name);
  return {};
}

}  // namespace

ApiError ServiceStore::Create(Kind kind, const std::string& ns, const std::string& body,
                              std::string* out) {
  Document doc;
  std::string name;
  if (ApiError e = ParseBody(kind, ns, body, &doc, &name); !e.ok()) return e;
  ds::MutexLock l(&mu_);
  const std::string key = ns + "/" + name;
  if (Objects(kind).count(key)) return ResourceOf(kind).Exists(name);
  doc.RemoveMember("status");
  if (Value* meta = &doc["metadata"]; meta->IsObject()) meta->RemoveMember("resourceVersion");
  return Put(kind, key, &doc, nullptr, out);
}

ApiError ServiceStore::Get(Kind kind, const std::string& ns, const std::string& name,
                           std::string* out) const {
  ds::MutexLock l(&mu_);
  const auto& objects = Objects(kind);
  auto it = objects.find(ns + "/" + name);
  if (it == objects.end()) return ResourceOf(kind).NotFound(name);
  *out = it->second.json;
  return {};
}

ApiError ServiceStore::Replace(Kind kind, const std::string& ns, const std::string& name,
                               const std::string& body, std::string* out, bool* created) {
  *created = false;
  Document doc;
  std::string body_name;
  if (ApiError e = ParseBody(kind, ns, body, &doc, &body_name); !e.ok()) return e;
  if (body_name != name)
    return Err(400, "BadRequest",
               "the name of the object (" + body_name + ") does not match the name on the URL (" +
                   name + ")");
  ds::MutexLock l(&mu_);
  const std::string key = ns + "/" + name;
  auto it = Objects(kind).find(key);
  if (it == Objects(kind).end()) {
    if (kind == Kind::kService) return kServices.NotFound(name);
    *created = true;
    doc["metadata"].RemoveMember("resourceVersion");
    return Put(kind, key, &doc, nullptr, out);
  }
  Document old;
  old.Parse(it->second.json.c_str());
  const std::string rv = ds::JsonString(doc["metadata"], "resourceVersion");
  if (!rv.empty() && rv != ds::JsonString(old["metadata"], "resourceVersion"))
    return ResourceOf(kind).Conflict(name, kModified);
  return Put(kind, key, &doc, &old, out);
}

ApiError ServiceStore::Patch(Kind kind, const std::string& ns, const std::string& name,
                             PatchType type, const std::string& patch, std::string* out,
                             bool* changed) {
  *changed = false;
  Document p;
  p.Parse(patch.c_str());
  if (p.HasParseError())
    return Err(400, "BadRequest", "error decoding patch: " + ds::JsonParseError(p));
  ds::MutexLock l(&mu_);
  const std::string key = ns + "/" + name;
  auto it = Objects(kind).find(key);
  if (it == Objects(kind).end()) return ResourceOf(kind).NotFound(name);
  Document old, doc;
  old.Parse(it->second.json.c_str());
  doc.CopyFrom(old, doc.GetAllocator());
  if (type == PatchType::kJson) {
    // As for Nodes (sim_store.cc): a JSON patch that does not apply is the generic 422.
    if (!ApplyJsonPatch(doc, p).empty())
      return ApiError(422, "Invalid",
                      "the server rejected our request due to an error in our request", "", "{}");
  } else if (!p.IsObject()) {
    return Err(400, "BadRequest", "a merge patch must be a JSON object");
  } else if (type == PatchType::kStrategic) {
    StrategicMerge(doc, p, "", doc.GetAllocator());
  } else {
    MergePatch(doc, p, doc.GetAllocator());
  }
  if (!doc.IsObject() || !doc.HasMember("metadata") || !doc["metadata"].IsObject())
    return Err(422, "Invalid", std::string(KindName(kind)) + " \"" + name + "\" is invalid");
  // metadata.resourceVersion in a patch is a precondition.
  const std::string rv = ds::JsonString(doc["metadata"], "resourceVersion");
  if (!rv.empty() && rv != ds::JsonString(old["metadata"], "resourceVersion"))
    return ResourceOf(kind).Conflict(name, kModified);
  if (ds::JsonString(doc["metadata"], "name") != name)
    return Err(400, "BadRequest",
               "the name of the object (" + ds::JsonString(doc["metadata"], "name") +
                   ") does not match the name on the URL (" + name + ")");
  const std::string before = it->second.json;
  if (ApiError e = Put(kind, key, &doc, &old, out); !e.ok()) return e;
  *changed = *out != before;
  return {};
}

ApiError ServiceStore::Delete(Kind kind, const std::string& ns, const std::string& name,
                              std::string* out) {
  ds::MutexLock l(&mu_);
  const std::string key = ns + "/" + name;
  auto it = Objects(kind).find(key);
  if (it == Objects(kind).end()) return ResourceOf(kind).NotFound(name);
  *out = it->second.json;
  Objects(kind).erase(it);
  cluster_->NextRv();  // the deletion is a write
  // The Service registry's afterDelete deletes the Service's Endpoints, "for fear that the
  // endpoints controller might lag" and a new Service of that name would find old ones.
  if (kind == Kind::kService && endpoints_.erase(key) > 0) cluster_->NextRv();
  return {};
}

std::vector<std::string> ServiceStore::List(Kind kind, const std::string& ns,
                                            const ds::LabelSelector& labels,
                                            const FieldSelector& fields, uint64_t* list_rv) const {
  ds::MutexLock l(&mu_);
  *list_rv = cluster_->CurrentRv();
  std::vector<std::string> out;
  for (const auto& [key, s] : Objects(kind))
    if ((ns.empty() || s.keys.fields.at("metadata.namespace") == ns) &&
        labels.Matches(s.keys.labels) && fields.Matches(s.keys))
      out.push_back(s.json);
  return out;
}

}  // namespace sim
