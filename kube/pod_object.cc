#include "kube/pod_object.h"

#include <rapidjson/document.h>

#include <algorithm>

#include "common/json_util.h"
#include "common/quantity.h"
#include "common/rfc3339.h"

namespace ds {
namespace {

Status Malformed(const std::string& what, const std::string& why) {
  return Status::Unavailable("malformed " + what + ": " + why);
}

const char* const kMirrorAnnotation = "kubernetes.io/config.mirror";
const char* const kOwnPodAnnotation = "dynamic-scheduler.io/evict";

// Sums the requests of one container list into cpu/mem; returns false on a bad quantity.
bool Requests(const rapidjson::Value* containers, bool take_max, double* cpu, double* mem) {
  if (containers == nullptr || !containers->IsArray()) return true;
  for (const auto& c : containers->GetArray()) {
    const auto* res = JsonMember(c, "resources");
    const auto* req = res != nullptr ? JsonMember(*res, "requests") : nullptr;
    if (req == nullptr || !req->IsObject()) continue;
    double ccpu = 0, cmem = 0;
    if (const auto* q = JsonMember(*req, "cpu"); q != nullptr) {
      if (!q->IsString() || !ParseQuantity(q->GetString(), &ccpu)) return false;
    }
    if (const auto* q = JsonMember(*req, "memory"); q != nullptr) {
      if (!q->IsString() || !ParseQuantity(q->GetString(), &cmem)) return false;
    }
    if (take_max) {
      *cpu = std::max(*cpu, ccpu);
      *mem = std::max(*mem, cmem);
    } else {
      *cpu += ccpu;
      *mem += cmem;
    }
  }
  return true;
}

Status ParsePodValue(const rapidjson::Value& obj, PodInfo* out) {
  const auto* meta = JsonMember(obj, "metadata");
  if (meta == nullptr || !meta->IsObject()) return Malformed("Pod", "no metadata");
  out->name = JsonString(*meta, "name");
  out->ns = JsonString(*meta, "namespace");
  if (out->name.empty() || out->ns.empty())
    return Malformed("Pod", "no metadata.name or metadata.namespace");
  const std::string what = "Pod " + out->ns + "/" + out->name;
  if (std::string t = JsonString(*meta, "creationTimestamp"); !t.empty())
    if (!ParseRfc3339(t, &out->created_wall))
      return Malformed(what, "bad metadata.creationTimestamp \"" + t + "\"");
  out->terminating = JsonMember(*meta, "deletionTimestamp") != nullptr &&
                     !JsonMember(*meta, "deletionTimestamp")->IsNull();
  if (const auto* owners = JsonMember(*meta, "ownerReferences");
      owners != nullptr && owners->IsArray()) {
    for (const auto& o : owners->GetArray()) {
      const auto* c = JsonMember(o, "controller");
      if (c != nullptr && c->IsBool() && c->GetBool()) {
        out->owner_kind = JsonString(o, "kind");
        out->owner_name = JsonString(o, "name");
      }
    }
  }
  if (const auto* ann = JsonMember(*meta, "annotations"); ann != nullptr && ann->IsObject()) {
    out->mirror = JsonMember(*ann, kMirrorAnnotation) != nullptr;
    if (const auto* v = JsonMember(*ann, kOwnPodAnnotation); v != nullptr && v->IsString())
      out->annotations.emplace_back(kOwnPodAnnotation, v->GetString());
  }
  if (const auto* spec = JsonMember(obj, "spec"); spec != nullptr && spec->IsObject()) {
    out->node = JsonString(*spec, "nodeName");
    if (const auto* p = JsonMember(*spec, "priority"); p != nullptr && p->IsInt())
      out->priority = p->GetInt();
    out->priority_class = JsonString(*spec, "priorityClassName");
    if (const auto* sel = JsonMember(*spec, "nodeSelector"); sel != nullptr && sel->IsObject())
      for (auto it = sel->MemberBegin(); it != sel->MemberEnd(); ++it)
        if (it->value.IsString())
          out->node_selector.emplace_back(it->name.GetString(), it->value.GetString());
    if (const auto* tols = JsonMember(*spec, "tolerations"); tols != nullptr && tols->IsArray())
      for (const auto& t : tols->GetArray())
        out->tolerations.push_back(Toleration{JsonString(t, "key"),
                                              JsonString(t, "operator", "Equal"),
                                              JsonString(t, "value"), JsonString(t, "effect")});
    if (const auto* vols = JsonMember(*spec, "volumes"); vols != nullptr && vols->IsArray())
      for (const auto& v : vols->GetArray())
        if (JsonMember(v, "emptyDir") != nullptr || JsonMember(v, "hostPath") != nullptr)
          out->local_storage = true;
    // The scheduler's effective request: the larger of the containers' sum and the largest init
    // container (they run one at a time, before the others).
    double cpu = 0, mem = 0, icpu = 0, imem = 0;
    if (!Requests(JsonMember(*spec, "containers"), false, &cpu, &mem) ||
        !Requests(JsonMember(*spec, "initContainers"), true, &icpu, &imem))
      return Malformed(what, "a container's resources.requests is not a quantity");
    out->cpu_request = std::max(cpu, icpu);
    out->memory_request = std::max(mem, imem);
  }
  if (const auto* status = JsonMember(obj, "status"); status != nullptr && status->IsObject()) {
    out->phase = JsonString(*status, "phase");
    if (const auto* conds = JsonMember(*status, "conditions"); conds != nullptr && conds->IsArray())
      for (const auto& c : conds->GetArray())
        if (JsonString(c, "type") == "Ready") out->ready = JsonString(c, "status") == "True";
  }
  return Status::OK();
}

}  // namespace

StatusOr<PodInfo> DecodePod(std::string body) {
  rapidjson::Document doc;
  doc.ParseInsitu(body.data());
  if (doc.HasParseError()) return Malformed("Pod", JsonParseError(doc));
  if (!doc.IsObject()) return Malformed("Pod", "not an object");
  PodInfo p;
  RETURN_NOT_OK(ParsePodValue(doc, &p));
  return p;
}

StatusOr<PodListPage> DecodePodList(std::string body) {
  rapidjson::Document doc;
  doc.ParseInsitu(body.data());
  if (doc.HasParseError()) return Malformed("PodList", JsonParseError(doc));
  if (!doc.IsObject()) return Malformed("PodList", "not an object");
  PodListPage page;
  if (const auto* meta = JsonMember(doc, "metadata")) {
    page.resource_version = JsonString(*meta, "resourceVersion");
    page.continue_token = JsonString(*meta, "continue");
  }
  const auto* items = JsonMember(doc, "items");
  if (items == nullptr || !(items->IsArray() || items->IsNull()))
    return Malformed("PodList", "no items array");
  if (items->IsArray()) {
    page.items.reserve(items->Size());
    for (const auto& it : items->GetArray()) {
      PodInfo p;
      RETURN_NOT_OK(ParsePodValue(it, &p));
      page.items.push_back(std::move(p));
    }
  }
  return page;
}

}  // namespace ds
