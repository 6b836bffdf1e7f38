#include "test/sim/sim_hpa.h"

#include <rapidjson/document.h>
#include <rapidjson/pointer.h>

#include <ctime>

#include "common/json_util.h"
#include "test/sim/sim_json.h"
#include "test/sim/sim_validation.h"

namespace sim {
namespace {

using rapidjson::Document;
using rapidjson::Value;

const Resource kHpas{"horizontalpodautoscalers", "autoscaling"};

std::string Key(const std::string& ns, const std::string& name) { return ns + "/" + name; }

// One scaling policy of the default behavior.
Value Policy(const char* type, int value, Document::AllocatorType& a) {
  Value p(rapidjson::kObjectType);
  p.AddMember("type", Value(type, a), a);
  p.AddMember("value", value, a);
  p.AddMember("periodSeconds", 15, a);
  return p;
}

// The defaults of pkg/apis/autoscaling/v2/defaults.go: minReplicas 1, CPU at 80% utilization
// when no metric is given, and the scale-up and scale-down behavior.
void SetDefaults(Value& spec, Document::AllocatorType& a) {
  if (!spec.HasMember("minReplicas")) spec.AddMember("minReplicas", 1, a);
  const Value* metrics = ds::JsonMember(spec, "metrics");
  if (metrics == nullptr || !metrics->IsArray() || metrics->Empty()) {
    Value target(rapidjson::kObjectType), resource(rapidjson::kObjectType),
        metric(rapidjson::kObjectType), list(rapidjson::kArrayType);
    target.AddMember("type", "Utilization", a);
    target.AddMember("averageUtilization", 80, a);
    resource.AddMember("name", "cpu", a);
    resource.AddMember("target", target, a);
    metric.AddMember("type", "Resource", a);
    metric.AddMember("resource", resource, a);
    list.PushBack(metric, a);
    SetMember(spec, "metrics", std::move(list), a);
  }
  Value& behavior = ObjectMember(spec, "behavior", a);
  Value& up = ObjectMember(behavior, "scaleUp", a);
  if (!up.HasMember("stabilizationWindowSeconds")) up.AddMember("stabilizationWindowSeconds", 0, a);
  if (!up.HasMember("selectPolicy")) up.AddMember("selectPolicy", "Max", a);
  if (!up.HasMember("policies")) {
    Value ps(rapidjson::kArrayType);
    ps.PushBack(Policy("Pods", 4, a), a);
    ps.PushBack(Policy("Percent", 100, a), a);
    up.AddMember("policies", ps, a);
  }
  Value& down = ObjectMember(behavior, "scaleDown", a);
  if (!down.HasMember("selectPolicy")) down.AddMember("selectPolicy", "Max", a);
  if (!down.HasMember("policies")) {
    Value ps(rapidjson::kArrayType);
    ps.PushBack(Policy("Percent", 100, a), a);
    down.AddMember("policies", ps, a);
  }
}

// ValidateHorizontalPodAutoscalerSpec's checks of the fields a test sets.
void ValidateSpec(const Value* spec, FieldErrors* fe) {
  static const Value kEmpty(rapidjson::kObjectType);
  if (spec == nullptr || !spec->IsObject()) spec = &kEmpty;
  const Value* ref = ds::JsonMember(*spec, "scaleTargetRef");
  if (ref == nullptr || !ref->IsObject()) ref = &kEmpty;
  if (ds::JsonString(*ref, "kind").empty()) fe->Required("spec.scaleTargetRef.kind");
  if (ds::JsonString(*ref, "name").empty()) fe->Required("spec.scaleTargetRef.name");
  const Value* min = ds::JsonMember(*spec, "minReplicas");
  const Value* max = ds::JsonMember(*spec, "maxReplicas");
  const int64_t min_v = min && min->IsInt64() ? min->GetInt64() : 1;
  const int64_t max_v = max && max->IsInt64() ? max->GetInt64() : 0;
  if (min_v < 1)
    fe->Invalid("spec.minReplicas", std::to_string(min_v), "must be greater than or equal to 1");
  if (max_v < 1)
    fe->Invalid("spec.maxReplicas", std::to_string(max_v), "must be greater than or equal to 1");
  else if (max_v < min_v)
    fe->Invalid("spec.maxReplicas", std::to_string(max_v),
                "must be greater than or equal to `minReplicas`");
}

}  // namespace

void HpaStore::Put(const std::string& key, Document* doc) {
  auto& a = doc->GetAllocator();
  SetMember((*doc)["metadata"], "resourceVersion",
            Value(std::to_string(cluster_->NextRv()).c_str(), a), a);
  hpas_[key] = ds::JsonToString(*doc);
}

ApiError HpaStore::Create(const std::string& ns, const std::string& body, std::string* out) {
  Document doc;
  doc.Parse(body.c_str());
  if (doc.HasParseError() || !doc.IsObject())
    return Err(400, "BadRequest",
               "the body of the request could not be decoded as a HorizontalPodAutoscaler");
  auto& a = doc.GetAllocator();
  Value& meta = ObjectMember(doc, "metadata", a);
  const std::string name = ds::JsonString(meta, "name");
  const std::string obj_ns = ds::JsonString(meta, "namespace");
  if (!obj_ns.empty() && obj_ns != ns)
    return Err(400, "BadRequest",
               "the namespace of the provided object does not match the namespace sent on the "
               "request");
  FieldErrors fe;
  ValidateName(name, &fe);
  ValidateLabels(&meta, &fe);
  ValidateSpec(ds::JsonMember(doc, "spec"), &fe);
  if (!fe.errs.empty())
    return fe.ToError("HorizontalPodAutoscaler", "HorizontalPodAutoscaler.autoscaling",
                      "autoscaling", name);
  ds::MutexLock l(&mu_);
  const std::string key = Key(ns, name);
  if (hpas_.count(key)) return kHpas.Exists(name);
  doc.RemoveMember("kind");
  doc.RemoveMember("apiVersion");
  doc.AddMember("kind", "HorizontalPodAutoscaler", a);
  doc.AddMember("apiVersion", "autoscaling/v2", a);
  Value& m = doc["metadata"];
  SetMember(m, "namespace", Value(ns.c_str(), a), a);
  SetMember(m, "uid", Value(("sim-hpa-" + std::to_string(++uid_counter_) + "-" + name).c_str(), a),
            a);
  SetMember(m, "creationTimestamp", Value(NowTimestamp().c_str(), a), a);
  SetMember(m, "generation", Value(1), a);
  SetDefaults(doc["spec"], a);
  // The strategy's PrepareForCreate drops the status; v2 always serialises desiredReplicas.
  Value status(rapidjson::kObjectType);
  status.AddMember("desiredReplicas", 0, a);
  SetMember(doc, "status", std::move(status), a);
  Put(key, &doc);
  *out = hpas_[key];
  return {};
}

ApiError HpaStore::Get(const std::string& ns, const std::string& name, std::string* out) const {
  ds::MutexLock l(&mu_);
  auto it = hpas_.find(Key(ns, name));
  if (it == hpas_.end()) return kHpas.NotFound(name);
  *out = it->second;
  return {};
}

ApiError HpaStore::Delete(const std::string& ns, const std::string& name, std::string* out) {
  ds::MutexLock l(&mu_);
  auto it = hpas_.find(Key(ns, name));
  if (it == hpas_.end()) return kHpas.NotFound(name);
  *out = it->second;
  hpas_.erase(it);
  cluster_->NextRv();
  return {};
}

std::vector<std::string> HpaStore::List(const std::string& ns, const ds::LabelSelector& labels,
                                        const FieldSelector& fields, uint64_t* list_rv) const {
  ds::MutexLock l(&mu_);
  *list_rv = cluster_->CurrentRv();
  std::vector<std::string> out;
  for (const auto& [key, json] : hpas_) {
    PodKeys keys;
    keys.fields["metadata.namespace"] = key.substr(0, key.find('/'));
    keys.fields["metadata.name"] = key.substr(key.find('/') + 1);
    if (!ns.empty() && keys.fields["metadata.namespace"] != ns) continue;
    if (!fields.Matches(keys)) continue;
    Document d;
    d.Parse(json.c_str());
    if (const Value* lv = rapidjson::Pointer("/metadata/labels").Get(d); lv && lv->IsObject())
      for (auto it = lv->MemberBegin(); it != lv->MemberEnd(); ++it)
        keys.labels.emplace_back(it->name.GetString(),
                                 it->value.IsString() ? it->value.GetString() : "");
    if (labels.Matches(keys.labels)) out.push_back(json);
  }
  return out;
}

ApiError HpaStore::ReplaceStatus(const std::string& ns, const std::string& name,
                                 const std::string& body, std::string* out) {
  Document in;
  in.Parse(body.c_str());
  if (in.HasParseError() || !in.IsObject())
    return Err(400, "BadRequest",
               "the body of the request could not be decoded as a HorizontalPodAutoscaler");
  const Value* meta = ds::JsonMember(in, "metadata");
  const std::string body_name = meta && meta->IsObject() ? ds::JsonString(*meta, "name") : "";
  if (body_name != name)
    return Err(400, "BadRequest",
               "the name of the object (" + body_name + ") does not match the name on the URL (" +
                   name + ")");
  ds::MutexLock l(&mu_);
  auto it = hpas_.find(Key(ns, name));
  if (it == hpas_.end()) return kHpas.NotFound(name);
  Document cur;
  cur.Parse(it->second.c_str());
  const std::string rv = meta ? ds::JsonString(*meta, "resourceVersion") : "";
  if (!rv.empty() && rv != ds::JsonString(cur["metadata"], "resourceVersion"))
    return kHpas.Conflict(name,
                          "the object has been modified; please apply your changes to the latest "
                          "version and try again");
  auto& a = cur.GetAllocator();
  const Value* st = ds::JsonMember(in, "status");
  SetMember(cur, "status", st && st->IsObject() ? Value(*st, a) : Value(rapidjson::kObjectType), a);
  if (!cur["status"].HasMember("desiredReplicas")) cur["status"].AddMember("desiredReplicas", 0, a);
  Put(it->first, &cur);
  *out = it->second;
  return {};
}

ApiError HpaStore::PatchStatus(const std::string& ns, const std::string& name, PatchType type,
                               const std::string& patch, std::string* out) {
  Document p;
  p.Parse(patch.c_str());
  if (p.HasParseError())
    return Err(400, "BadRequest", "error decoding patch: " + ds::JsonParseError(p));
  ds::MutexLock l(&mu_);
  auto it = hpas_.find(Key(ns, name));
  if (it == hpas_.end()) return kHpas.NotFound(name);
  Document cur;
  cur.Parse(it->second.c_str());
  auto& a = cur.GetAllocator();
  Document patched;
  patched.CopyFrom(cur, patched.GetAllocator());
  if (type == PatchType::kJson) {
    if (std::string err = ApplyJsonPatch(patched, p); !err.empty()) return Err(422, "Invalid", err);
  } else {
    if (!p.IsObject()) return Err(400, "BadRequest", "a merge patch must be a JSON object");
    MergePatch(patched, p, patched.GetAllocator());
  }
  const std::string rv = rapidjson::Pointer("/metadata/resourceVersion").Get(patched) != nullptr
                             ? ds::JsonString(patched["metadata"], "resourceVersion")
                             : "";
  if (!rv.empty() && rv != ds::JsonString(cur["metadata"], "resourceVersion"))
    return kHpas.Conflict(name,
                          "the object has been modified; please apply your changes to the latest "
                          "version and try again");
  // The status subresource keeps only the status of what the patch made.
  const Value* old_st = ds::JsonMember(cur, "status");
  const std::string before = old_st != nullptr ? ds::JsonToString(*old_st) : "";
  const Value* st = ds::JsonMember(patched, "status");
  SetMember(cur, "status", st && st->IsObject() ? Value(*st, a) : Value(rapidjson::kObjectType), a);
  if (!cur["status"].HasMember("desiredReplicas")) cur["status"].AddMember("desiredReplicas", 0, a);
  if (ds::JsonToString(cur["status"]) == before) {
    *out = it->second;  // nothing changed: not stored, no new resourceVersion
    return {};
  }
  Put(it->first, &cur);
  *out = it->second;
  return {};
}

ApiError HpaStore::SetFromAdmin(const std::string& body, std::string* out) {
  Document d;
  d.Parse(body.c_str());
  if (d.HasParseError() || !d.IsObject()) return Err(400, "BadRequest", "invalid JSON body");
  const std::string ns = ds::JsonString(d, "namespace", "default");
  const std::string name = ds::JsonString(d, "name");
  auto num = [&](const char* k) -> const Value* {
    const Value* v = ds::JsonMember(d, k);
    return v && v->IsInt() ? v : nullptr;
  };
  bool exists;
  {
    ds::MutexLock l(&mu_);
    exists = hpas_.count(Key(ns, name)) > 0;
  }
  if (!exists) {
    Document obj;
    obj.SetObject();
    auto& a = obj.GetAllocator();
    Value meta(rapidjson::kObjectType), spec(rapidjson::kObjectType);
    meta.AddMember("name", Value(name.c_str(), a), a);
    if (const Value* t = ds::JsonMember(d, "target"); t && t->IsObject()) {
      Value ref(*t, a);
      if (!ref.HasMember("apiVersion")) ref.AddMember("apiVersion", "apps/v1", a);
      spec.AddMember("scaleTargetRef", ref, a);
    }
    for (const char* k : {"minReplicas", "maxReplicas"})
      if (const Value* v = num(k)) spec.AddMember(Value(k, a), Value(v->GetInt()), a);
    obj.AddMember("metadata", meta, a);
    obj.AddMember("spec", spec, a);
    std::string created;
    if (ApiError e = Create(ns, ds::JsonToString(obj), &created); !e.ok()) return e;
  }
  ds::MutexLock l(&mu_);
  auto it = hpas_.find(Key(ns, name));
  if (it == hpas_.end()) return kHpas.NotFound(name);  // deleted meanwhile
  Document cur;
  cur.Parse(it->second.c_str());
  auto& a = cur.GetAllocator();
  Value& spec = ObjectMember(cur, "spec", a);
  if (const Value* t = ds::JsonMember(d, "target"); t && t->IsObject() && exists)
    MergePatch(ObjectMember(spec, "scaleTargetRef", a), *t, a);
  for (const char* k : {"minReplicas", "maxReplicas"})
    if (const Value* v = num(k); v && exists) SetMember(spec, k, Value(v->GetInt()), a);
  Value& st = ObjectMember(cur, "status", a);
  const Value* current = num("currentReplicas");
  const Value* desired = num("desiredReplicas");
  if (current) SetMember(st, "currentReplicas", Value(current->GetInt()), a);
  if (desired) SetMember(st, "desiredReplicas", Value(desired->GetInt()), a);
  if (current || desired) {
    // What the autoscaler writes with a decision: the generation it saw and, when the replica
    // count moves, when it last scaled.
    const Value* gen = rapidjson::Pointer("/metadata/generation").Get(cur);
    SetMember(st, "observedGeneration", Value(gen && gen->IsInt64() ? gen->GetInt64() : 1), a);
    if (current && desired && current->GetInt() != desired->GetInt())
      SetMember(st, "lastScaleTime", Value(NowTimestamp().c_str(), a), a);
  }
  Put(it->first, &cur);
  *out = it->second;
  return {};
}

}  // namespace sim
