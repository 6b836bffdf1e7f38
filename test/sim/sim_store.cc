#include "test/sim/sim_store.h"

#include <rapidjson/document.h>
#include <rapidjson/pointer.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <set>

#include "common/json_util.h"

namespace sim {
namespace {

using rapidjson::Document;
using rapidjson::Value;

std::string Now() {
  time_t t = time(nullptr);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

ApiError Err(int code, std::string reason, std::string message) {
  return ApiError{code, std::move(reason), std::move(message), ""};
}

ApiError NotFound(const std::string& name) {
  return Err(404, "NotFound", "nodes \"" + name + "\" not found");
}

ApiError Conflict(const std::string& name) {
  return Err(409, "Conflict",
             "Operation cannot be fulfilled on nodes \"" + name +
                 "\": the object has been modified; please apply your changes to the "
                 "latest version and try again");
}

ds::Labels LabelsOf(const Value& obj) {
  ds::Labels out;
  const Value* meta = ds::JsonMember(obj, "metadata");
  if (meta == nullptr) return out;
  const Value* l = ds::JsonMember(*meta, "labels");
  if (l == nullptr || !l->IsObject()) return out;
  for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it)
    out.emplace_back(it->name.GetString(), it->value.IsString() ? it->value.GetString() : "");
  return out;
}

// Validation the API server applies to a Node on every write: 422 Invalid with causes.
// spec.taints as the API server's ValidateNodeSpec checks them: a qualified key, a label-value
// value, one of the three effects, and one taint per key and effect.
ApiError ValidateTaints(const Value& obj, const std::string& name) {
  const Value* spec = ds::JsonMember(obj, "spec");
  const Value* taints =
      spec != nullptr && spec->IsObject() ? ds::JsonMember(*spec, "taints") : nullptr;
  if (taints == nullptr || taints->IsNull()) return {};
  auto invalid = [&](const std::string& what) {
    return Err(422, "Invalid", "Node \"" + name + "\" is invalid: " + what);
  };
  if (!taints->IsArray()) return invalid("spec.taints: must be a list");
  std::set<std::pair<std::string, std::string>> seen;
  for (rapidjson::SizeType i = 0; i < taints->Size(); ++i) {
    const Value& t = (*taints)[i];
    const std::string field = "spec.taints[" + std::to_string(i) + "]";
    if (!t.IsObject()) return invalid(field + ": must be an object");
    const std::string key = ds::JsonString(t, "key"), effect = ds::JsonString(t, "effect");
    if (std::string why = ds::ValidateLabelKey(key); !why.empty())
      return invalid(field + ".key: Invalid value: \"" + key + "\": " + why);
    if (std::string why = ds::ValidateLabelValue(ds::JsonString(t, "value")); !why.empty())
      return invalid(field + ".value: Invalid value: \"" + ds::JsonString(t, "value") +
                     "\": " + why);
    if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute")
      return invalid(field + ".effect: " +
                     (effect.empty() ? std::string("Required value")
                                     : "Unsupported value: \"" + effect +
                                           "\": supported values: \"NoSchedule\", "
                                           "\"PreferNoSchedule\", \"NoExecute\""));
    if (!seen.insert({key, effect}).second)
      return invalid(field + ": Duplicate value: taints must be unique by key and effect pair");
  }
  return {};
}

ApiError Validate(const Value& obj, const std::string& name) {
  if (!obj.IsObject()) return Err(400, "BadRequest", "the object is not a JSON object");
  const Value* meta = ds::JsonMember(obj, "metadata");
  if (meta == nullptr || !meta->IsObject())
    return Err(422, "Invalid", "Node \"" + name + "\" is invalid: metadata: Required value");
  if (ApiError e = ValidateTaints(obj, name); !e.ok()) return e;
  const Value* l = ds::JsonMember(*meta, "labels");
  if (l == nullptr || l->IsNull()) return {};
  if (!l->IsObject())
    return Err(422, "Invalid",
               "Node \"" + name + "\" is invalid: metadata.labels: must be an object");
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartArray();
  std::string first;
  for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it) {
    std::string key = it->name.GetString();
    std::string why = ds::ValidateLabelKey(key);
    std::string field = "metadata.labels";
    if (why.empty()) {
      if (!it->value.IsString())
        why = "label value must be a string";
      else
        why = ds::ValidateLabelValue(it->value.GetString());
      field = "metadata.labels";
    }
    if (why.empty()) continue;
    std::string msg = "Invalid value: \"" + key + "\": " + why;
    if (first.empty()) first = field + ": " + msg;
    w.StartObject();
    w.Key("reason");
    w.String("FieldValueInvalid");
    w.Key("message");
    ds::WriteString(w, msg);
    w.Key("field");
    ds::WriteString(w, field);
    w.EndObject();
  }
  w.EndArray();
  if (first.empty()) return {};
  ApiError e = Err(422, "Invalid", "Node \"" + name + "\" is invalid: " + first);
  e.causes_json = sb.GetString();
  return e;
}

std::string Unescape(const std::string& token) {
  std::string out;
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size()) {
      out += token[i + 1] == '1' ? '/' : '~';
      ++i;
    } else {
      out += token[i];
    }
  }
  return out;
}

// Resolves a JSON pointer's parent; *last gets the final token. Null when a step is missing.
Value* Parent(Value& root, const std::string& path, std::string* last) {
  if (path.empty() || path[0] != '/') return nullptr;
  std::vector<std::string> tokens;
  size_t start = 1;
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      tokens.push_back(Unescape(path.substr(start, i - start)));
      start = i + 1;
    }
  }
  *last = tokens.back();
  Value* cur = &root;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (cur->IsObject()) {
      auto it = cur->FindMember(tokens[i].c_str());
      if (it == cur->MemberEnd()) return nullptr;
      cur = &it->value;
    } else if (cur->IsArray()) {
      size_t idx = std::strtoul(tokens[i].c_str(), nullptr, 10);
      if (idx >= cur->Size()) return nullptr;
      cur = &(*cur)[static_cast<rapidjson::SizeType>(idx)];
    } else {
      return nullptr;
    }
  }
  return cur;
}

// RFC 6902 add/remove/replace/test. Returns an error message or "".
std::string JsonPatch(Document& doc, const Value& ops) {
  auto& a = doc.GetAllocator();
  if (!ops.IsArray()) return "a JSON patch must be an array of operations";
  for (const auto& op : ops.GetArray()) {
    std::string kind = ds::JsonString(op, "op"), path = ds::JsonString(op, "path");
    std::string last;
    Value* parent = Parent(doc, path, &last);
    if (parent == nullptr) return "path " + path + " does not exist";
    const Value* value = ds::JsonMember(op, "value");
    if (parent->IsObject()) {
      auto it = parent->FindMember(last.c_str());
      bool exists = it != parent->MemberEnd();
      if (kind == "test") {
        if (!exists || value == nullptr || it->value != *value)
          return "testing value " + path + " failed";
      } else if (kind == "remove") {
        if (!exists) return "unable to remove nonexistent key: " + last;
        parent->RemoveMember(it);
      } else if (kind == "add" || kind == "replace") {
        if (value == nullptr) return "missing value for " + kind;
        if (kind == "replace" && !exists)
          return "replace operation does not apply: doc is missing key: " + path;
        Value v(*value, a);
        if (exists)
          it->value = v;
        else
          parent->AddMember(Value(last.c_str(), a), v, a);
      } else {
        return "unsupported op \"" + kind + "\"";
      }
    } else if (parent->IsArray()) {
      bool append = last == "-";
      size_t idx = append ? parent->Size() : std::strtoul(last.c_str(), nullptr, 10);
      if (kind == "add") {
        if (value == nullptr || idx > parent->Size()) return "bad add on array at " + path;
        Value v(*value, a);
        parent->PushBack(v, a);
        for (size_t i = parent->Size() - 1; i > idx; --i) (*parent)[i].Swap((*parent)[i - 1]);
      } else if (idx >= parent->Size()) {
        return "array index out of range at " + path;
      } else if (kind == "remove") {
        parent->Erase(parent->Begin() + idx);
      } else if (kind == "replace") {
        if (value == nullptr) return "missing value";
        (*parent)[idx].CopyFrom(*value, a);
      } else if (kind == "test") {
        if (value == nullptr || (*parent)[idx] != *value)
          return "testing value " + path + " failed";
      } else {
        return "unsupported op \"" + kind + "\"";
      }
    } else {
      return "path " + path + " does not exist";
    }
  }
  return "";
}

void SetMeta(Document& doc, const char* key, const std::string& value) {
  auto& a = doc.GetAllocator();
  Value& meta = doc["metadata"];
  auto it = meta.FindMember(key);
  if (it != meta.MemberEnd())
    it->value.SetString(value.c_str(), a);
  else
    meta.AddMember(Value(key, a), Value(value.c_str(), a), a);
}

std::string NodeJson(size_t i, bool master, const std::string& name) {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  std::string ip = "10." + std::to_string(i / 65536 % 256) + "." + std::to_string(i / 256 % 256) +
                   "." + std::to_string(i % 256);
  w.StartObject();
  w.Key("kind");
  w.String("Node");
  w.Key("apiVersion");
  w.String("v1");
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  ds::WriteString(w, name);
  w.Key("uid");
  ds::WriteString(w, "0000-sim-" + std::to_string(i));
  w.Key("creationTimestamp");
  ds::WriteString(w, Now());
  w.Key("labels");
  w.StartObject();
  w.Key("beta.kubernetes.io/arch");
  w.String("amd64");
  w.Key("beta.kubernetes.io/os");
  w.String("linux");
  w.Key("kubernetes.io/arch");
  w.String("amd64");
  w.Key("kubernetes.io/hostname");
  ds::WriteString(w, name);
  w.Key("kubernetes.io/os");
  w.String("linux");
  w.Key("node.kubernetes.io/instance-type");
  w.String("m5.xlarge");
  w.Key("topology.kubernetes.io/region");
  w.String("sim-1");
  w.Key("topology.kubernetes.io/zone");
  ds::WriteString(w, "sim-1" + std::string(1, static_cast<char>('a' + i % 3)));
  if (master) {
    w.Key("node-role.kubernetes.io/control-plane");
    w.String("");
  }
  w.EndObject();
  w.Key("annotations");
  w.StartObject();
  w.Key("node.alpha.kubernetes.io/ttl");
  w.String("0");
  w.Key("volumes.kubernetes.io/controller-managed-attach-detach");
  w.String("true");
  w.EndObject();
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  w.Key("podCIDR");
  ds::WriteString(w, "10.244." + std::to_string(i % 256) + ".0/24");
  if (master) {
    w.Key("taints");
    w.StartArray();
    w.StartObject();
    w.Key("key");
    w.String("node-role.kubernetes.io/control-plane");
    w.Key("effect");
    w.String("NoSchedule");
    w.EndObject();
    w.EndArray();
  }
  w.EndObject();
  w.Key("status");
  w.StartObject();
  w.Key("capacity");
  w.StartObject();
  w.Key("cpu");
  w.String("4");
  w.Key("memory");
  w.String("16116152Ki");
  w.Key("pods");
  w.String("110");
  w.Key("ephemeral-storage");
  w.String("101430960Ki");
  w.EndObject();
  w.Key("allocatable");
  w.StartObject();
  w.Key("cpu");
  w.String("3920m");
  w.Key("memory");
  w.String("15001040Ki");
  w.Key("pods");
  w.String("110");
  w.EndObject();
  w.Key("conditions");
  w.StartArray();
  const char* conds[][2] = {{"MemoryPressure", "False"},
                            {"DiskPressure", "False"},
                            {"PIDPressure", "False"},
                            {"Ready", "True"}};
  std::string now = Now();
  for (auto& c : conds) {
    w.StartObject();
    w.Key("type");
    w.String(c[0]);
    w.Key("status");
    w.String(c[1]);
    w.Key("lastHeartbeatTime");
    ds::WriteString(w, now);
    w.Key("lastTransitionTime");
    ds::WriteString(w, now);
    w.Key("reason");
    ds::WriteString(w, std::string("Kubelet") + (c[1][0] == 'T' ? "Ready" : "HasSufficient"));
    w.Key("message");
    w.String("kubelet is posting ready status");
    w.EndObject();
  }
  w.EndArray();
  w.Key("addresses");
  w.StartArray();
  w.StartObject();
  w.Key("type");
  w.String("InternalIP");
  w.Key("address");
  ds::WriteString(w, ip);
  w.EndObject();
  w.StartObject();
  w.Key("type");
  w.String("Hostname");
  w.Key("address");
  ds::WriteString(w, name);
  w.EndObject();
  w.EndArray();
  w.Key("nodeInfo");
  w.StartObject();
  char id[40];
  snprintf(id, sizeof(id), "%08zx-5e1f-4c3a-9b7d-%012zx", i, i * 7919);
  w.Key("machineID");
  ds::WriteString(w, std::string(id).substr(0, 8) + std::string(24, '0'));
  w.Key("systemUUID");
  w.String(id);
  w.Key("bootID");
  w.String(id);
  w.Key("kernelVersion");
  w.String("6.1.0-18-amd64");
  w.Key("kubeletVersion");
  w.String("v1.30.0");
  w.Key("kubeProxyVersion");
  w.String("v1.30.0");
  w.Key("containerRuntimeVersion");
  w.String("containerd://1.7.13");
  w.Key("osImage");
  w.String("Debian GNU/Linux 12 (bookworm)");
  w.Key("architecture");
  w.String("amd64");
  w.Key("operatingSystem");
  w.String("linux");
  w.EndObject();
  w.Key("images");
  w.StartArray();
  static const char* kImages[] = {"registry.k8s.io/kube-proxy:v1.30.0",
                                  "docker.io/calico/node:v3.27.0",
                                  "docker.io/calico/cni:v3.27.0",
                                  "registry.k8s.io/pause:3.9",
                                  "quay.io/prometheus/node-exporter:v1.7.0",
                                  "docker.io/library/nginx:1.25",
                                  "registry.k8s.io/coredns/coredns:v1.11.1",
                                  "docker.io/library/redis:7.2"};
  for (size_t k = 0; k < 8; ++k) {
    w.StartObject();
    w.Key("names");
    w.StartArray();
    ds::WriteString(w, std::string(kImages[k]));
    ds::WriteString(w,
                    std::string(kImages[k]).substr(0, std::string(kImages[k]).find(':')) +
                        "@sha256:6c8d3e1bc0a4b4c9f2e6a7d8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8");
    w.EndArray();
    w.Key("sizeBytes");
    w.Uint64(20000000 + k * 7340033);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return sb.GetString();
}

// --- Leases ---

std::string LeaseRef(const std::string& name) {
  return "leases.coordination.k8s.io \"" + name + "\"";
}

// metav1.MicroTime's wire form: RFC 3339 with exactly six fractional digits ("...05.000000Z").
bool IsMicroTime(const std::string& s) {
  struct tm tm {};
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr || rest != s.c_str() + 19 || *rest != '.') return false;
  ++rest;
  for (int i = 0; i < 6; ++i, ++rest)
    if (*rest < '0' || *rest > '9') return false;
  std::string zone = rest;
  if (zone == "Z") return true;
  return zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':';
}

// What the API server checks on a Lease write: decoding (400) and validation (422).
ApiError ValidateLease(const Value& obj, const std::string& name) {
  auto bad = [](std::string m) {
    return Err(400, "BadRequest", "Lease in version \"v1\" cannot be handled as a Lease: " + m);
  };
  auto invalid = [&](std::string m) {
    return Err(422, "Invalid", "Lease.coordination.k8s.io \"" + name + "\" is invalid: " + m);
  };
  const Value* meta = ds::JsonMember(obj, "metadata");
  if (meta == nullptr || !meta->IsObject())
    return invalid("metadata.name: Required value: name or generateName is required");
  const Value* spec = ds::JsonMember(obj, "spec");
  if (spec == nullptr || spec->IsNull()) return {};
  if (!spec->IsObject()) return bad("spec: expected an object");
  if (const Value* h = ds::JsonMember(*spec, "holderIdentity"); h && !h->IsNull() && !h->IsString())
    return bad("spec.holderIdentity: expected a string");
  for (const char* k : {"leaseDurationSeconds", "leaseTransitions"}) {
    const Value* v = ds::JsonMember(*spec, k);
    if (v == nullptr || v->IsNull()) continue;
    if (!v->IsInt()) return bad(std::string("spec.") + k + ": expected an int32");
    bool duration = std::string(k) == "leaseDurationSeconds";
    if (duration ? v->GetInt() <= 0 : v->GetInt() < 0)
      return invalid(
          std::string("spec.") + k + ": Invalid value: " + std::to_string(v->GetInt()) +
          (duration ? ": must be greater than 0" : ": must be greater than or equal to 0"));
  }
  for (const char* k : {"acquireTime", "renewTime"}) {
    const Value* v = ds::JsonMember(*spec, k);
    if (v == nullptr || v->IsNull()) continue;
    if (!v->IsString() || !IsMicroTime(v->GetString()))
      return bad(std::string("spec.") + k + ": parsing time " +
                 (v->IsString() ? "\"" + std::string(v->GetString()) + "\"" : "(not a string)") +
                 " as \"2006-01-02T15:04:05.000000Z07:00\"");
  }
  return {};
}

}  // namespace

// RFC 7386 merge; strategic merge behaves the same for Node labels, annotations and (replaced
// whole) lists such as spec.taints.
void MergePatch(Value& target, const Value& patch, Document::AllocatorType& a) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, a);
    return;
  }
  if (!target.IsObject()) target.SetObject();
  for (auto it = patch.MemberBegin(); it != patch.MemberEnd(); ++it) {
    std::string key = it->name.GetString();
    if (key.rfind("$", 0) == 0) continue;  // strategic-merge directives: not needed for Nodes
    auto existing = target.FindMember(it->name);
    if (it->value.IsNull()) {
      if (existing != target.MemberEnd()) target.RemoveMember(existing);
    } else if (existing != target.MemberEnd()) {
      MergePatch(existing->value, it->value, a);
    } else {
      Value k(it->name, a);
      Value v(rapidjson::kObjectType);
      MergePatch(v, it->value, a);
      target.AddMember(k, v, a);
    }
  }
}

std::string ApplyJsonPatch(rapidjson::Document& doc, const rapidjson::Value& ops) {
  return JsonPatch(doc, ops);
}

std::string StatusJson(const ApiError& e) {
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  w.Key("kind");
  w.String("Status");
  w.Key("apiVersion");
  w.String("v1");
  w.Key("metadata");
  w.StartObject();
  w.EndObject();
  w.Key("status");
  w.String(e.code == 0 || e.code / 100 == 2 ? "Success" : "Failure");
  if (!e.message.empty()) {
    w.Key("message");
    ds::WriteString(w, e.message);
  }
  if (!e.reason.empty()) {
    w.Key("reason");
    ds::WriteString(w, e.reason);
  }
  if (!e.details_json.empty()) {
    w.Key("details");
    w.RawValue(e.details_json.c_str(), e.details_json.size(), rapidjson::kObjectType);
  } else if (!e.causes_json.empty()) {
    w.Key("details");
    w.StartObject();
    w.Key("kind");
    w.String("nodes");
    w.Key("causes");
    w.RawValue(e.causes_json.c_str(), e.causes_json.size(), rapidjson::kArrayType);
    w.EndObject();
  }
  w.Key("code");
  w.Int(e.code == 0 ? 200 : e.code);
  w.EndObject();
  return sb.GetString();
}

uint64_t Store::CurrentRv() const {
  ds::MutexLock l(&mu_);
  return rv_;
}

uint64_t Store::NextRv() {
  ds::MutexLock l(&mu_);
  return ++rv_;
}

uint64_t Store::compacted_rv() const {
  ds::MutexLock l(&mu_);
  return compacted_rv_;
}

size_t Store::size() const {
  ds::MutexLock l(&mu_);
  return nodes_.size();
}

void Store::Populate(size_t count, size_t control_plane, const std::string& prefix) {
  for (size_t i = 1; i <= count; ++i) {
    char name[64];
    snprintf(name, sizeof(name), "%s-%05zu", prefix.c_str(), i);
    std::string out;
    Create(NodeJson(i, i <= control_plane, name), &out);
  }
}

ApiError Store::Commit(const std::string& name, const std::string& type, std::string json,
                       const ds::Labels* old_labels, std::string* out) {
  Document doc;
  doc.Parse(json.c_str());
  uint64_t rv = ++rv_;
  SetMeta(doc, "resourceVersion", std::to_string(rv));
  json = ds::JsonToString(doc);
  Event ev{rv, type, name, json, old_labels ? *old_labels : ds::Labels{}, LabelsOf(doc)};
  if (type == "DELETED") {
    nodes_.erase(name);
  } else {
    StoredNode& n = nodes_[name];
    n.json = json;
    n.labels = ev.new_labels;
    n.rv = rv;
  }
  events_.push_back(std::move(ev));
  while (events_.size() > window_) {
    compacted_rv_ = events_.front().rv;
    events_.pop_front();
  }
  *out = std::move(json);
  cv_.SignalAll();
  return {};
}

std::vector<std::string> Store::List(const ds::LabelSelector& sel, size_t limit,
                                     const std::string& after, std::string* next, uint64_t* list_rv,
                                     size_t* remaining) const {
  ds::MutexLock l(&mu_);
  std::vector<std::string> out;
  *list_rv = rv_;
  next->clear();
  *remaining = 0;
  auto it = after.empty() ? nodes_.begin() : nodes_.upper_bound(after);
  for (; it != nodes_.end(); ++it) {
    if (!sel.Matches(it->second.labels)) continue;
    if (limit > 0 && out.size() == limit) {
      *next = std::prev(it)->first;
      for (; it != nodes_.end(); ++it)
        if (sel.Matches(it->second.labels)) ++*remaining;
      break;
    }
    out.push_back(it->second.json);
  }
  return out;
}

ApiError Store::Get(const std::string& name, std::string* json) const {
  ds::MutexLock l(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NotFound(name);
  *json = it->second.json;
  return {};
}

ApiError Store::Create(const std::string& body, std::string* out) {
  Document doc;
  doc.Parse(body.c_str());
  if (doc.HasParseError() || !doc.IsObject()) return Err(400, "BadRequest", "invalid JSON body");
  std::string name = ds::JsonMember(doc, "metadata") ? ds::JsonString(doc["metadata"], "name") : "";
  if (name.empty())
    return Err(422, "Invalid",
               "Node \"\" is invalid: metadata.name: Required value: name is required");
  if (ApiError e = Validate(doc, name); !e.ok()) return e;
  ds::MutexLock l(&mu_);
  if (nodes_.count(name)) return Err(409, "AlreadyExists", "nodes \"" + name + "\" already exists");
  auto& a = doc.GetAllocator();
  doc.AddMember("kind", "Node", a);
  doc.AddMember("apiVersion", "v1", a);
  if (!doc["metadata"].HasMember("creationTimestamp")) SetMeta(doc, "creationTimestamp", Now());
  if (!doc["metadata"].HasMember("uid")) SetMeta(doc, "uid", "sim-" + name);
  return Commit(name, "ADDED", ds::JsonToString(doc), nullptr, out);
}

ApiError Store::Replace(const std::string& name, const std::string& body, std::string* out) {
  Document doc;
  doc.Parse(body.c_str());
  if (doc.HasParseError() || !doc.IsObject()) return Err(400, "BadRequest", "invalid JSON body");
  if (ApiError e = Validate(doc, name); !e.ok()) return e;
  ds::MutexLock l(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NotFound(name);
  std::string rv = ds::JsonString(doc["metadata"], "resourceVersion");
  if (!rv.empty() && rv != std::to_string(it->second.rv)) return Conflict(name);
  if (ds::JsonString(doc["metadata"], "name") != name)
    return Err(400, "BadRequest",
               "the name of the object (" + ds::JsonString(doc["metadata"], "name") +
                   ") does not match the name on the URL (" + name + ")");
  ds::Labels old = it->second.labels;
  return Commit(name, "MODIFIED", ds::JsonToString(doc), &old, out);
}

ApiError Store::Patch(const std::string& name, PatchType type, const std::string& body,
                      std::string* out, bool* changed) {
  *changed = false;
  Document patch;
  patch.Parse(body.c_str());
  if (patch.HasParseError())
    return Err(400, "BadRequest", "error decoding patch: " + ds::JsonParseError(patch));
  ds::MutexLock l(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NotFound(name);
  Document doc;
  doc.Parse(it->second.json.c_str());
  if (type == PatchType::kJson) {
    // kube-apiserver answers a JSON patch that does not apply (a failed `test`, a missing path)
    // with errors.NewGenericServerResponse(422, ...): reason Invalid, the generic message and an
    // empty details object -- the patch library's own words are not in the Status (patch.go).
    if (!JsonPatch(doc, patch).empty())
      return ApiError(422, "Invalid",
                      "the server rejected our request due to an error in our request", "", "{}");
  } else {
    if (!patch.IsObject()) return Err(400, "BadRequest", "a merge patch must be a JSON object");
    // metadata.resourceVersion in a patch is a precondition.
    if (const Value* m = ds::JsonMember(patch, "metadata")) {
      std::string rv = ds::JsonString(*m, "resourceVersion");
      if (!rv.empty() && rv != std::to_string(it->second.rv)) return Conflict(name);
    }
    MergePatch(doc, patch, doc.GetAllocator());
  }
  if (!doc.IsObject() || !doc.HasMember("metadata") ||
      ds::JsonString(doc["metadata"], "name") != name)
    return Err(422, "Invalid",
               "Node \"" + name + "\" is invalid: metadata.name: field is immutable");
  if (ApiError e = Validate(doc, name); !e.ok()) return e;
  SetMeta(doc, "resourceVersion", std::to_string(it->second.rv));
  std::string json = ds::JsonToString(doc);
  if (json == it->second.json) {
    *out = json;  // nothing changed: not stored, no new resourceVersion, no event
    return {};
  }
  *changed = true;
  ds::Labels old = it->second.labels;
  return Commit(name, "MODIFIED", std::move(json), &old, out);
}

ApiError Store::Delete(const std::string& name, std::string* out) {
  ds::MutexLock l(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NotFound(name);
  ds::Labels old = it->second.labels;
  return Commit(name, "DELETED", it->second.json, &old, out);
}

uint64_t Store::EventsAfter(uint64_t from, int timeout_ms, std::vector<Event>* out, bool* expired) {
  ds::MutexLock l(&mu_);
  *expired = false;
  // A node event after `from`, not merely a newer resourceVersion: rv_ is the cluster's, moved
  // by every Lease, Pod and Event write too, and a watch woken by those would find nothing to
  // send and ask again at once -- a busy loop for as long as no node changes.
  auto ready = [&]() REQUIRES(mu_) {
    return from < compacted_rv_ || (!events_.empty() && events_.back().rv > from);
  };
  if (!ready()) cv_.WaitFor(&mu_, std::chrono::milliseconds(timeout_ms), ready);
  if (from < compacted_rv_) {
    *expired = true;
    return rv_;
  }
  // Events are in rv order; find the first after `from`.
  auto it = std::upper_bound(events_.begin(), events_.end(), from,
                             [](uint64_t v, const Event& e) { return v < e.rv; });
  for (; it != events_.end(); ++it) out->push_back(*it);
  return rv_;
}

void Store::WakeAll() { cv_.SignalAll(); }

void Store::Compact() {
  ds::MutexLock l(&mu_);
  // The cluster-wide resourceVersion moves with writes to any resource; advance it as another
  // resource's write would, so every client's last-seen version is now older than the window.
  ++rv_;
  events_.clear();
  compacted_rv_ = rv_;
  cv_.SignalAll();
}

void Store::Heartbeat() {
  ds::MutexLock l(&mu_);
  std::string now = Now();
  std::vector<std::string> names;
  for (const auto& [name, n] : nodes_) names.push_back(name);
  for (const auto& name : names) {
    Document doc;
    doc.Parse(nodes_[name].json.c_str());
    Value* conds = rapidjson::Pointer("/status/conditions").Get(doc);
    if (conds == nullptr || !conds->IsArray()) continue;
    for (auto& c : conds->GetArray())
      if (c.HasMember("lastHeartbeatTime"))
        c["lastHeartbeatTime"].SetString(now.c_str(), doc.GetAllocator());
    ds::Labels old = nodes_[name].labels;
    std::string out;
    Commit(name, "MODIFIED", ds::JsonToString(doc), &old, &out);
  }
}

ApiError Store::GetLease(const std::string& ns, const std::string& name, std::string* out) const {
  ds::MutexLock l(&mu_);
  auto it = leases_.find(ns + "/" + name);
  if (it == leases_.end()) return Err(404, "NotFound", LeaseRef(name) + " not found");
  *out = it->second.first;
  return {};
}

std::vector<std::string> Store::ListLeases(const std::string& ns, uint64_t* list_rv) const {
  ds::MutexLock l(&mu_);
  std::vector<std::string> out;
  for (const auto& [key, lease] : leases_)
    if (ns.empty() || key.compare(0, ns.size() + 1, ns + "/") == 0) out.push_back(lease.first);
  *list_rv = rv_;
  return out;
}

namespace {
// Parses a Lease body for `ns`, checking what a create and a replace both need.
ApiError ParseLease(const std::string& ns, const std::string& body, const std::string& url_name,
                    Document* doc, std::string* name) {
  doc->Parse(body.c_str());
  if (doc->HasParseError() || !doc->IsObject()) return Err(400, "BadRequest", "invalid JSON body");
  const Value* meta = ds::JsonMember(*doc, "metadata");
  *name = meta != nullptr && meta->IsObject() ? ds::JsonString(*meta, "name") : "";
  if (name->empty() && url_name.empty())
    return Err(422, "Invalid",
               "Lease.coordination.k8s.io \"\" is invalid: metadata.name: Required value: name or "
               "generateName is required");
  if (!url_name.empty() && *name != url_name)
    return Err(400, "BadRequest",
               "the name of the object (" + *name + ") does not match the name on the URL (" +
                   url_name + ")");
  std::string obj_ns =
      meta != nullptr && meta->IsObject() ? ds::JsonString(*meta, "namespace") : "";
  if (!obj_ns.empty() && obj_ns != ns)
    return Err(
        400, "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request");
  return ValidateLease(*doc, *name);
}

// Fills in what the server owns (kind, namespace, uid, creation time, resourceVersion) and stores
// the serialized object with its resourceVersion in *slot.
void StoreLease(Document* doc, const std::string& ns, const std::string& uid,
                const std::string& created, uint64_t rv, std::pair<std::string, uint64_t>* slot) {
  auto& a = doc->GetAllocator();
  doc->RemoveMember("kind");
  doc->RemoveMember("apiVersion");
  doc->AddMember("kind", "Lease", a);
  doc->AddMember("apiVersion", "coordination.k8s.io/v1", a);
  SetMeta(*doc, "namespace", ns);
  SetMeta(*doc, "uid", uid);
  SetMeta(*doc, "creationTimestamp", created);
  SetMeta(*doc, "resourceVersion", std::to_string(rv));
  *slot = {ds::JsonToString(*doc), rv};
}
}  // namespace

ApiError Store::CreateLease(const std::string& ns, const std::string& body, std::string* out) {
  Document doc;
  std::string name;
  if (ApiError e = ParseLease(ns, body, "", &doc, &name); !e.ok()) return e;
  ds::MutexLock l(&mu_);
  auto& slot = leases_[ns + "/" + name];
  if (!slot.first.empty()) return Err(409, "AlreadyExists", LeaseRef(name) + " already exists");
  StoreLease(&doc, ns, "sim-lease-" + ns + "-" + name, Now(), ++rv_, &slot);
  *out = slot.first;
  return {};
}

ApiError Store::ReplaceLease(const std::string& ns, const std::string& name,
                             const std::string& body, std::string* out) {
  Document doc;
  std::string body_name;
  if (ApiError e = ParseLease(ns, body, name, &doc, &body_name); !e.ok()) return e;
  ds::MutexLock l(&mu_);
  auto it = leases_.find(ns + "/" + name);
  if (it == leases_.end()) return Err(404, "NotFound", LeaseRef(name) + " not found");
  std::string rv = ds::JsonString(doc["metadata"], "resourceVersion");
  if (rv.empty())
    return Err(422, "Invalid",
               "Lease.coordination.k8s.io \"" + name +
                   "\" is invalid: metadata.resourceVersion: "
                   "Invalid value: 0x0: must be specified for an update");
  if (rv != std::to_string(it->second.second))
    return Err(409, "Conflict",
               "Operation cannot be fulfilled on " + LeaseRef(name) +
                   ": the object has been modified; please apply your changes to the latest "
                   "version and try again");
  Document old;
  old.Parse(it->second.first.c_str());
  StoreLease(&doc, ns, ds::JsonString(old["metadata"], "uid"),
             ds::JsonString(old["metadata"], "creationTimestamp"), ++rv_, &it->second);
  *out = it->second.first;
  return {};
}

ApiError Store::DeleteLease(const std::string& ns, const std::string& name, std::string* out) {
  ds::MutexLock l(&mu_);
  auto it = leases_.find(ns + "/" + name);
  if (it == leases_.end()) return Err(404, "NotFound", LeaseRef(name) + " not found");
  *out = it->second.first;
  leases_.erase(it);
  ++rv_;
  return {};
}

}  // namespace sim
