#include "test/sim/sim_volumes.h"

#include <rapidjson/document.h>

#include <ctime>

#include "common/json_util.h"
#include "test/sim/sim_json.h"
#include "test/sim/sim_validation.h"

namespace sim {
namespace {

using rapidjson::Document;
using rapidjson::Value;

const Resource kClaims{"persistentvolumeclaims", ""};
const Resource kVolumes{"persistentvolumes", ""};
constexpr char kBindCompleted[] = "pv.kubernetes.io/bind-completed";

// The volume sources a PersistentVolumeSpec may carry (exactly one).
const char* const kVolumeSources[] = {"awsElasticBlockStore",
                                      "azureDisk",
                                      "azureFile",
                                      "cephfs",
                                      "cinder",
                                      "csi",
                                      "fc",
                                      "flexVolume",
                                      "flocker",
                                      "gcePersistentDisk",
                                      "glusterfs",
                                      "hostPath",
                                      "iscsi",
                                      "local",
                                      "nfs",
                                      "photonPersistentDisk",
                                      "portworxVolume",
                                      "quobyte",
                                      "rbd",
                                      "scaleIO",
                                      "storageos",
                                      "vsphereVolume"};

// Parses a body and runs the checks both kinds share; *name is metadata.name.
ApiError Parse(const std::string& kind, const std::string& ns, const std::string& body,
               Document* doc, std::string* name, FieldErrors* fe) {
  doc->Parse(body.c_str());
  if (doc->HasParseError() || !doc->IsObject())
    return Err(400, "BadRequest", "the body of the request could not be decoded as a " + kind);
  const Value* meta = ds::JsonMember(*doc, "metadata");
  *name = meta && meta->IsObject() ? ds::JsonString(*meta, "name") : "";
  const std::string obj_ns = meta && meta->IsObject() ? ds::JsonString(*meta, "namespace") : "";
  if (!ns.empty() && !obj_ns.empty() && obj_ns != ns)
    return Err(400, "BadRequest",
               "the namespace of the provided object does not match the namespace sent on the "
               "request");
  ValidateName(*name, fe);
  ValidateLabels(meta, fe);
  return {};
}

bool HasStorage(const Value* list) {
  return list != nullptr && list->IsObject() && list->HasMember("storage");
}

bool NonEmptyArray(const Value* v) { return v != nullptr && v->IsArray() && !v->Empty(); }

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

}  // namespace

const std::vector<std::string>& VolumeStore::SelectableFields() {
  static const std::vector<std::string> kFields = {"metadata.name", "metadata.namespace"};
  return kFields;
}

void VolumeStore::Put(std::map<std::string, Stored>* objects, const std::string& key, Document* d) {
  auto& a = d->GetAllocator();
  SetMember((*d)["metadata"], "resourceVersion",
            Value(std::to_string(cluster_->NextRv()).c_str(), a), a);
  Stored& s = (*objects)[key];
  s.json = ds::JsonToString(*d);
  s.keys = KeysOf(*d);
}

ApiError VolumeStore::CreateClaim(const std::string& ns, const std::string& body,
                                  std::string* out) {
  Document doc;
  std::string name;
  FieldErrors fe;
  if (ApiError e = Parse("PersistentVolumeClaim", ns, body, &doc, &name, &fe); !e.ok()) return e;
  const Value* spec = ds::JsonMember(doc, "spec");
  const bool has_spec = spec != nullptr && spec->IsObject();
  if (!has_spec || !NonEmptyArray(ds::JsonMember(*spec, "accessModes")))
    fe.Required("spec.accessModes", "at least 1 access mode is required");
  const Value* res = has_spec ? ds::JsonMember(*spec, "resources") : nullptr;
  if (!HasStorage(res != nullptr && res->IsObject() ? ds::JsonMember(*res, "requests") : nullptr))
    fe.Required("spec.resources[storage]");
  if (!fe.errs.empty())
    return fe.ToError("persistentvolumeclaims", "PersistentVolumeClaim", "", name);
  ds::MutexLock l(&mu_);
  const std::string key = ns + "/" + name;
  if (claims_.count(key)) return kClaims.Exists(name);
  auto& a = doc.GetAllocator();
  doc.RemoveMember("kind");
  doc.RemoveMember("apiVersion");
  doc.RemoveMember("status");
  doc.AddMember("kind", "PersistentVolumeClaim", a);
  doc.AddMember("apiVersion", "v1", a);
  Value& m = doc["metadata"];
  SetMember(m, "namespace", Value(ns.c_str(), a), a);
  SetMember(m, "uid", Value(("sim-pvc-" + std::to_string(++uid_counter_) + "-" + name).c_str(), a),
            a);
  SetMember(m, "creationTimestamp", Value(NowTimestamp().c_str(), a), a);
  Value status(rapidjson::kObjectType);
  status.AddMember("phase", "Pending", a);
  doc.AddMember("status", status, a);
  Put(&claims_, key, &doc);
  SyncLocked();
  *out = claims_[key].json;
  return {};
}

ApiError VolumeStore::CreateVolume(const std::string& body, std::string* out) {
  Document doc;
  std::string name;
  FieldErrors fe;
  if (ApiError e = Parse("PersistentVolume", "", body, &doc, &name, &fe); !e.ok()) return e;
  const Value* spec = ds::JsonMember(doc, "spec");
  const bool has_spec = spec != nullptr && spec->IsObject();
  if (!has_spec || !NonEmptyArray(ds::JsonMember(*spec, "accessModes")))
    fe.Required("spec.accessModes");
  if (!has_spec || !HasStorage(ds::JsonMember(*spec, "capacity"))) fe.Required("spec.capacity");
  int sources = 0;
  for (const char* s : kVolumeSources)
    if (has_spec && spec->HasMember(s)) ++sources;
  if (sources == 0) fe.Required("spec", "must specify a volume type");
  if (sources > 1)
    fe.errs.push_back(
        {"FieldValueForbidden", "spec", "Forbidden: may not specify more than 1 volume type"});
  if (!fe.errs.empty()) return fe.ToError("persistentvolumes", "PersistentVolume", "", name);
  ds::MutexLock l(&mu_);
  if (volumes_.count(name)) return kVolumes.Exists(name);
  auto& a = doc.GetAllocator();
  doc.RemoveMember("kind");
  doc.RemoveMember("apiVersion");
  doc.RemoveMember("status");
  doc.AddMember("kind", "PersistentVolume", a);
  doc.AddMember("apiVersion", "v1", a);
  Value& m = doc["metadata"];
  m.RemoveMember("namespace");
  SetMember(m, "uid", Value(("sim-pv-" + std::to_string(++uid_counter_) + "-" + name).c_str(), a),
            a);
  SetMember(m, "creationTimestamp", Value(NowTimestamp().c_str(), a), a);
  Value status(rapidjson::kObjectType);
  status.AddMember("phase", "Available", a);
  doc.AddMember("status", status, a);
  Put(&volumes_, name, &doc);
  SyncLocked();
  *out = volumes_[name].json;
  return {};
}

ApiError VolumeStore::GetClaim(const std::string& ns, const std::string& name,
                               std::string* out) const {
  ds::MutexLock l(&mu_);
  auto it = claims_.find(ns + "/" + name);
  if (it == claims_.end()) return kClaims.NotFound(name);
  *out = it->second.json;
  return {};
}

ApiError VolumeStore::GetVolume(const std::string& name, std::string* out) const {
  ds::MutexLock l(&mu_);
  auto it = volumes_.find(name);
  if (it == volumes_.end()) return kVolumes.NotFound(name);
  *out = it->second.json;
  return {};
}

ApiError VolumeStore::DeleteClaim(const std::string& ns, const std::string& name,
                                  std::string* out) {
  ds::MutexLock l(&mu_);
  auto it = claims_.find(ns + "/" + name);
  if (it == claims_.end()) return kClaims.NotFound(name);
  *out = it->second.json;
  claims_.erase(it);
  cluster_->NextRv();  // the deletion is a write
  SyncLocked();
  return {};
}

ApiError VolumeStore::DeleteVolume(const std::string& name, std::string* out) {
  ds::MutexLock l(&mu_);
  auto it = volumes_.find(name);
  if (it == volumes_.end()) return kVolumes.NotFound(name);
  *out = it->second.json;
  volumes_.erase(it);
  cluster_->NextRv();
  SyncLocked();
  return {};
}

std::vector<std::string> VolumeStore::ListClaims(const std::string& ns,
                                                 const ds::LabelSelector& labels,
                                                 const FieldSelector& fields,
                                                 uint64_t* list_rv) const {
  ds::MutexLock l(&mu_);
  *list_rv = cluster_->CurrentRv();
  std::vector<std::string> out;
  for (const auto& [key, s] : claims_)
    if ((ns.empty() || s.keys.fields.at("metadata.namespace") == ns) &&
        labels.Matches(s.keys.labels) && fields.Matches(s.keys))
      out.push_back(s.json);
  return out;
}

std::vector<std::string> VolumeStore::ListVolumes(const ds::LabelSelector& labels,
                                                  const FieldSelector& fields,
                                                  uint64_t* list_rv) const {
  ds::MutexLock l(&mu_);
  *list_rv = cluster_->CurrentRv();
  std::vector<std::string> out;
  for (const auto& [name, s] : volumes_)
    if (labels.Matches(s.keys.labels) && fields.Matches(s.keys)) out.push_back(s.json);
  return out;
}

SchedVolumes VolumeStore::Snapshot() const {
  ds::MutexLock l(&mu_);
  SchedVolumes out;
  for (const auto& [key, s] : claims_) {
    Document d;
    d.Parse(s.json.c_str());
    AddClaimFromJson(d, &out);
  }
  for (const auto& [name, s] : volumes_) {
    Document d;
    d.Parse(s.json.c_str());
    AddVolumeFromJson(d, &out);
  }
  return out;
}

void VolumeStore::SyncLocked() {
  std::map<std::string, std::string> bound_to;  // volume name -> claim key, for volumes
  for (auto& [key, s] : claims_) {
    Document d;
    d.Parse(s.json.c_str());
    auto& a = d.GetAllocator();
    const std::string volume = ds::JsonString(d["spec"], "volumeName");
    Value& meta = d["metadata"];
    Value& status = ObjectMember(d, "status", a);
    const std::string was = ds::JsonString(status, "phase");
    std::string phase = "Pending";
    auto pv = volume.empty() ? volumes_.end() : volumes_.find(volume);
    if (pv != volumes_.end()) {
      phase = "Bound";
      bound_to[volume] = key;
      Document vd;
      vd.Parse(pv->second.json.c_str());
      Value& ann = ObjectMember(meta, "annotations", a);
      if (!ann.HasMember(kBindCompleted)) ann.AddMember(kBindCompleted, "yes", a);
      if (const Value* modes = ds::JsonMember(vd["spec"], "accessModes"))
        SetMember(status, "accessModes", Value(*modes, a), a);
      if (const Value* cap = ds::JsonMember(vd["spec"], "capacity"))
        SetMember(status, "capacity", Value(*cap, a), a);
    } else if (!volume.empty() && (was == "Bound" || was == "Lost")) {
      phase = "Lost";  // its volume went away
    }
    SetMember(status, "phase", Value(phase.c_str(), a), a);
    if (std::string json = ds::JsonToString(d); json != s.json) {
      Put(&claims_, key, &d);  // same key: replaces in place
    }
  }
  for (auto& [name, s] : volumes_) {
    Document d;
    d.Parse(s.json.c_str());
    auto& a = d.GetAllocator();
    Value& spec = ObjectMember(d, "spec", a);
    Value& status = ObjectMember(d, "status", a);
    const std::string was = ds::JsonString(status, "phase");
    std::string phase = "Available";
    if (auto b = bound_to.find(name); b != bound_to.end()) {
      phase = "Bound";
      if (!spec.HasMember("claimRef")) {
        Document cd;
        cd.Parse(claims_[b->second].json.c_str());
        const Value& cm = cd["metadata"];
        Value ref(rapidjson::kObjectType);
        ref.AddMember("kind", "PersistentVolumeClaim", a);
        ref.AddMember("namespace", Value(ds::JsonString(cm, "namespace").c_str(), a), a);
        ref.AddMember("name", Value(ds::JsonString(cm, "name").c_str(), a), a);
        ref.AddMember("uid", Value(ds::JsonString(cm, "uid").c_str(), a), a);
        ref.AddMember("apiVersion", "v1", a);
        spec.AddMember("claimRef", ref, a);
      }
    } else if (was == "Bound" || was == "Released") {
      phase = "Released";  // its claim went away (the Retain policy keeps the volume)
    }
    SetMember(status, "phase", Value(phase.c_str(), a), a);
    if (std::string json = ds::JsonToString(d); json != s.json) Put(&volumes_, name, &d);
  }
}

}  // namespace sim
