#include "kube/workload_object.h"

#include <rapidjson/document.h>

#include <limits>

#include "common/json_util.h"

namespace ds {
namespace {

Status Malformed(const std::string& what, const std::string& why) {
  return Status::Unavailable("malformed " + what + ": " + why);
}

// Reads the integer member `name` of `obj` (absent or null: left as it is) into *out; false when
// it is there but not an integer in range (the caller's error names the field).
template <typename Int>
bool ReadInt(const rapidjson::Value* obj, const char* name, Int* out) {
  const rapidjson::Value* v = obj != nullptr ? JsonMember(*obj, name) : nullptr;
  if (v == nullptr || v->IsNull()) return true;
  if (!v->IsInt64()) return false;
  const int64_t i = v->GetInt64();
  if (i < std::numeric_limits<Int>::min() || i > std::numeric_limits<Int>::max()) return false;
  *out = static_cast<Int>(i);
  return true;
}

// Like ReadInt, for an optional field (spec.replicas, a partition): set only when present.
bool ReadOptional(const rapidjson::Value* obj, const char* name, std::optional<int32_t>* out) {
  const rapidjson::Value* v = obj != nullptr ? JsonMember(*obj, name) : nullptr;
  if (v == nullptr || v->IsNull()) return true;
  int32_t i = 0;
  if (!ReadInt(obj, name, &i)) return false;
  *out = i;
  return true;
}

// The integer fields of one object (spec or status) under `prefix`, each into its member.
struct IntField {
  const char* name;
  int32_t* out;
};

std::string ReadInts(const rapidjson::Value* obj, const char* prefix,
                     std::initializer_list<IntField> fields) {
  for (const IntField& f : fields)
    if (!ReadInt(obj, f.name, f.out)) return std::string(prefix) + "." + f.name;
  return "";
}

const rapidjson::Value* Object(const rapidjson::Value& v, const char* name) {
  const rapidjson::Value* m = JsonMember(v, name);
  return m != nullptr && m->IsObject() ? m : nullptr;
}

Status ParseWorkload(const rapidjson::Value& doc, const std::string& kind, WorkloadStatus* w) {
  if (WorkloadResource(kind).empty()) return Malformed(kind, "not a workload kind we read");
  w->kind = kind;
  if (std::string k = JsonString(doc, "kind"); !k.empty() && k != kind)
    return Malformed(kind, "kind is " + k);
  const rapidjson::Value* meta = Object(doc, "metadata");
  if (meta == nullptr) return Malformed(kind, "no metadata");
  w->name = JsonString(*meta, "name");
  w->ns = JsonString(*meta, "namespace");
  w->uid = JsonString(*meta, "uid");
  if (w->name.empty()) return Malformed(kind, "no metadata.name");
  const std::string what = kind + " " + w->ns + "/" + w->name;
  if (!ReadInt(meta, "generation", &w->generation))
    return Malformed(what, "metadata.generation is not an integer");
  if (const auto* owners = JsonMember(*meta, "ownerReferences");
      owners != nullptr && owners->IsArray())
    for (const auto& o : owners->GetArray()) {
      const auto* c = JsonMember(o, "controller");
      if (c != nullptr && c->IsBool() && c->GetBool()) {
        w->owner_kind = JsonString(o, "kind");
        w->owner_name = JsonString(o, "name");
        w->owner_api_version = JsonString(o, "apiVersion");
      }
    }

  const rapidjson::Value* spec = Object(doc, "spec");
  const rapidjson::Value* status = Object(doc, "status");
  if (kind != "DaemonSet" && !ReadOptional(spec, "replicas", &w->spec_replicas))
    return Malformed(what, "spec.replicas is not an integer");
  if (!ReadInt(status, "observedGeneration", &w->observed_generation))
    return Malformed(what, "status.observedGeneration is not an integer");
  std::string bad;
  if (kind == "DaemonSet") {
    bad = ReadInts(status, "status",
                   {{"desiredNumberScheduled", &w->desired_number_scheduled},
                    {"updatedNumberScheduled", &w->updated_number_scheduled},
                    {"numberAvailable", &w->number_available}});
  } else {
    bad = ReadInts(status, "status",
                   {{"replicas", &w->replicas},
                    {"updatedReplicas", &w->updated_replicas},
                    {"readyReplicas", &w->ready_replicas},
                    {"availableReplicas", &w->available_replicas}});
  }
  if (!bad.empty()) return Malformed(what, bad + " is not an integer");

  if (kind == "StatefulSet" || kind == "DaemonSet") {
    if (const rapidjson::Value* strategy =
            spec != nullptr ? Object(*spec, "updateStrategy") : nullptr) {
      if (std::string t = JsonString(*strategy, "type"); !t.empty()) w->update_strategy = t;
      if (const rapidjson::Value* ru = Object(*strategy, "rollingUpdate");
          ru != nullptr && kind == "StatefulSet") {
        w->rolling_update_set = true;
        if (!ReadOptional(ru, "partition", &w->partition))
          return Malformed(what, "spec.updateStrategy.rollingUpdate.partition is not an integer");
      }
    }
  }
  if (kind == "StatefulSet" && status != nullptr) {
    w->current_revision = JsonString(*status, "currentRevision");
    w->update_revision = JsonString(*status, "updateRevision");
  }
  if (kind == "Deployment" && status != nullptr)
    if (const auto* conds = JsonMember(*status, "conditions"); conds != nullptr && conds->IsArray())
      for (const auto& c : conds->GetArray())
        if (JsonString(c, "type") == "Progressing" &&
            JsonString(c, "reason") == "ProgressDeadlineExceeded")
          w->progress_deadline_exceeded = true;
  return Status::OK();
}

Status ParseAutoscaler(const rapidjson::Value& item, Autoscaler* a) {
  const rapidjson::Value* meta = Object(item, "metadata");
  if (meta == nullptr) return Malformed("HorizontalPodAutoscaler", "no metadata");
  a->name = JsonString(*meta, "name");
  a->ns = JsonString(*meta, "namespace");
  if (a->name.empty()) return Malformed("HorizontalPodAutoscaler", "no metadata.name");
  const std::string what = "HorizontalPodAutoscaler " + a->ns + "/" + a->name;
  const rapidjson::Value* spec = Object(item, "spec");
  const rapidjson::Value* ref = spec != nullptr ? Object(*spec, "scaleTargetRef") : nullptr;
  if (ref == nullptr) return Malformed(what, "no spec.scaleTargetRef");
  a->target_kind = JsonString(*ref, "kind");
  a->target_name = JsonString(*ref, "name");
  a->target_api_version = JsonString(*ref, "apiVersion");
  if (a->target_kind.empty() || a->target_name.empty())
    return Malformed(what, "no spec.scaleTargetRef.kind or spec.scaleTargetRef.name");
  const std::string bad = ReadInts(
      Object(item, "status"), "status",
      {{"currentReplicas", &a->current_replicas}, {"desiredReplicas", &a->desired_replicas}});
  if (!bad.empty()) return Malformed(what, bad + " is not an integer");
  return Status::OK();
}

}  // namespace

std::string WorkloadResource(const std::string& kind) {
  if (kind == "Deployment") return "deployments";
  if (kind == "ReplicaSet") return "replicasets";
  if (kind == "StatefulSet") return "statefulsets";
  if (kind == "DaemonSet") return "daemonsets";
  return "";
}

StatusOr<WorkloadStatus> DecodeWorkload(std::string body, const std::string& kind) {
  rapidjson::Document doc;
  doc.ParseInsitu(body.data());
  if (doc.HasParseError()) return Malformed(kind, JsonParseError(doc));
  if (!doc.IsObject()) return Malformed(kind, "not an object");
  WorkloadStatus w;
  RETURN_NOT_OK(ParseWorkload(doc, kind, &w));
  return w;
}

StatusOr<std::vector<Autoscaler>> DecodeAutoscalerList(std::string body) {
  rapidjson::Document doc;
  doc.ParseInsitu(body.data());
  const char* what = "HorizontalPodAutoscalerList";
  if (doc.HasParseError()) return Malformed(what, JsonParseError(doc));
  if (!doc.IsObject()) return Malformed(what, "not an object");
  const auto* items = JsonMember(doc, "items");
  if (items == nullptr || !(items->IsArray() || items->IsNull()))
    return Malformed(what, "no items array");
  std::vector<Autoscaler> out;
  if (items->IsArray()) {
    out.reserve(items->Size());
    for (const auto& it : items->GetArray()) {
      Autoscaler a;
      RETURN_NOT_OK(ParseAutoscaler(it, &a));
      out.push_back(std::move(a));
    }
  }
  return out;
}

}  // namespace ds
