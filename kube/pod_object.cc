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

// One container's requests; false on a quantity that does not parse.
bool ContainerRequests(const rapidjson::Value& c, double* cpu, double* mem) {
  *cpu = *mem = 0;
  const auto* res = JsonMember(c, "resources");
  const auto* req = res != nullptr ? JsonMember(*res, "requests") : nullptr;
  if (req == nullptr || !req->IsObject()) return true;
  if (const auto* q = JsonMember(*req, "cpu"); q != nullptr)
    if (!q->IsString() || !ParseQuantity(q->GetString(), cpu)) return false;
  if (const auto* q = JsonMember(*req, "memory"); q != nullptr)
    if (!q->IsString() || !ParseQuantity(q->GetString(), mem)) return false;
  return true;
}

// The scheduler's effective request of a pod (resourcehelper.PodRequests): the larger of the
// containers' sum (plus the native sidecars, init containers with restartPolicy Always, which
// keep running) and each ordinary init container's request plus the sidecars started before
// it; then the pod overhead on top.
bool EffectiveRequests(const rapidjson::Value& spec, double* cpu, double* mem) {
  double run_cpu = 0, run_mem = 0;
  if (const auto* cs = JsonMember(spec, "containers"); cs != nullptr && cs->IsArray())
    for (const auto& c : cs->GetArray()) {
      double ccpu, cmem;
      if (!ContainerRequests(c, &ccpu, &cmem)) return false;
      run_cpu += ccpu;
      run_mem += cmem;
    }
  double side_cpu = 0, side_mem = 0, init_cpu = 0, init_mem = 0;
  if (const auto* is = JsonMember(spec, "initContainers"); is != nullptr && is->IsArray())
    for (const auto& c : is->GetArray()) {
      double ccpu, cmem;
      if (!ContainerRequests(c, &ccpu, &cmem)) return false;
      if (JsonString(c, "restartPolicy") == "Always") {
        side_cpu += ccpu;
        side_mem += cmem;
        init_cpu = std::max(init_cpu, side_cpu);
        init_mem = std::max(init_mem, side_mem);
      } else {
        init_cpu = std::max(init_cpu, ccpu + side_cpu);
        init_mem = std::max(init_mem, cmem + side_mem);
      }
    }
  *cpu = std::max(run_cpu + side_cpu, init_cpu);
  *mem = std::max(run_mem + side_mem, init_mem);
  if (const auto* over = JsonMember(spec, "overhead"); over != nullptr && over->IsObject()) {
    double ocpu = 0, omem = 0;
    if (const auto* q = JsonMember(*over, "cpu"); q != nullptr)
      if (!q->IsString() || !ParseQuantity(q->GetString(), &ocpu)) return false;
    if (const auto* q = JsonMember(*over, "memory"); q != nullptr)
      if (!q->IsString() || !ParseQuantity(q->GetString(), &omem)) return false;
    *cpu += ocpu;
    *mem += omem;
  }
  return true;
}

Status ParsePodValue(const rapidjson::Value& obj, PodInfo* out) {
  const auto* meta = JsonMember(obj, "metadata");
  if (meta == nullptr || !meta->IsObject()) return Malformed("Pod", "no metadata");
  out->name = JsonString(*meta, "name");
  out->ns = JsonString(*meta, "namespace");
  out->uid = JsonString(*meta, "uid");
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
  if (const auto* l = JsonMember(*meta, "labels"); l != nullptr && l->IsObject())
    for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it)
      if (it->value.IsString())
        out->labels.emplace_back(std::string(it->name.GetString(), it->name.GetStringLength()),
                                 std::string(it->value.GetString(), it->value.GetStringLength()));
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
    if (!EffectiveRequests(*spec, &out->cpu_request, &out->memory_request))
      return Malformed(what, "a container's resources.requests or spec.overhead is not a quantity");
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
