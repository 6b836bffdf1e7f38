// The apps/v1 objects of the simulator's workload emulations (PodStore::Workload and
// PodStore::Deployment): rendered as kube-apiserver serves them, with the status the apps
// controllers of kube-controller-manager would write (pkg/controller/replicaset,
// deployment/sync.go calculateStatus, statefulset, daemon), which is what `kubectl rollout
// status` (k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go) reads.
#include <rapidjson/document.h>
#include <rapidjson/pointer.h>

#include <algorithm>

#include "common/json_util.h"
#include "test/sim/sim_pods.h"
#include "test/sim/sim_validation.h"

namespace sim {
namespace {

using rapidjson::Document;
using rapidjson::Value;

std::string Key(const std::string& ns, const std::string& name) { return ns + "/" + name; }

const Resource kDeployments{"deployments", "apps"};
const Resource kReplicaSets{"replicasets", "apps"};
const Resource kStatefulSets{"statefulsets", "apps"};
const Resource kDaemonSets{"daemonsets", "apps"};

// The kind a resource's objects are, "" for a resource not served here.
std::string KindOf(const std::string& resource) {
  return resource == "deployments"    ? "Deployment"
         : resource == "replicasets"  ? "ReplicaSet"
         : resource == "statefulsets" ? "StatefulSet"
         : resource == "daemonsets"   ? "DaemonSet"
                                      : "";
}

const Resource* ResourceOf(const std::string& resource) {
  return resource == "deployments"    ? &kDeployments
         : resource == "replicasets"  ? &kReplicaSets
         : resource == "statefulsets" ? &kStatefulSets
         : resource == "daemonsets"   ? &kDaemonSets
                                      : nullptr;
}

// A template's labels, plus `extra` ("" key: none).
void WriteLabels(ds::JsonWriter& w, const Value* labels, const char* extra_key,
                 const std::string& extra_value) {
  w.StartObject();
  if (labels != nullptr && labels->IsObject())
    for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it) {
      if (*extra_key && it->name == extra_key) continue;
      w.Key(it->name.GetString());
      it->value.Accept(w);
    }
  if (*extra_key) {
    w.Key(extra_key);
    ds::WriteString(w, extra_value);
  }
  w.EndObject();
}

// The metadata every object has, without closing the object (labels, annotations and
// ownerReferences follow).
void StartMeta(ds::JsonWriter& w, const std::string& kind, const std::string& ns,
               const std::string& name, const std::string& uid, uint64_t rv, int64_t generation,
               const std::string& created) {
  w.Key("kind");
  ds::WriteString(w, kind);
  w.Key("apiVersion");
  w.String("apps/v1");
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  ds::WriteString(w, name);
  w.Key("namespace");
  ds::WriteString(w, ns);
  w.Key("uid");
  ds::WriteString(w, uid);
  w.Key("resourceVersion");
  ds::WriteString(w, std::to_string(rv));
  w.Key("generation");
  w.Int64(generation);
  w.Key("creationTimestamp");
  ds::WriteString(w, created);
}

void IntIfSet(ds::JsonWriter& w, const char* key, int v) {  // Go's omitempty
  if (v == 0) return;
  w.Key(key);
  w.Int(v);
}

void WriteCondition(ds::JsonWriter& w, const char* type, bool ok, const std::string& at,
                    const std::string& reason, const std::string& message) {
  w.StartObject();
  w.Key("type");
  w.String(type);
  w.Key("status");
  w.String(ok ? "True" : "False");
  w.Key("lastUpdateTime");
  ds::WriteString(w, at);
  w.Key("lastTransitionTime");
  ds::WriteString(w, at);
  w.Key("reason");
  ds::WriteString(w, reason);
  w.Key("message");
  ds::WriteString(w, message);
  w.EndObject();
}

}  // namespace

std::string PodStore::RenderWorkload(const std::string& wkey, const Workload& wl,
                                     uint64_t rv) const {
  Document t;
  t.Parse(wl.template_json.c_str());
  const Value* tlabels = rapidjson::Pointer("/metadata/labels").Get(t);
  const Value* tspec = ds::JsonMember(t, "spec");
  int active = 0, ready = 0;
  CountPods(wkey, &active, &ready);
  const bool deployed = !wl.deployment.empty();
  const bool rolling = wl.rollout.active;
  const int64_t observed = rolling && !wl.rollout.observed ? wl.generation - 1 : wl.generation;
  // While the new generation is not observed, the status is the old one's: all updated.
  const bool updating = rolling && wl.rollout.observed;
  const int updated = updating ? std::min(wl.rollout.updated, active) : active;
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  auto write_template = [&](const char* extra_key, const std::string& extra_value) {
    w.Key("template");
    w.StartObject();
    w.Key("metadata");
    w.StartObject();
    w.Key("labels");
    WriteLabels(w, tlabels, extra_key, extra_value);
    if (const Value* an = rapidjson::Pointer("/metadata/annotations").Get(t)) {
      w.Key("annotations");
      an->Accept(w);
    }
    w.EndObject();
    w.Key("spec");
    if (tspec != nullptr) {
      tspec->Accept(w);
    } else {
      w.StartObject();
      w.EndObject();
    }
    w.EndObject();
  };
  auto write_selector = [&](const char* extra_key, const std::string& extra_value) {
    w.Key("selector");
    w.StartObject();
    w.Key("matchLabels");
    WriteLabels(w, tlabels, extra_key, extra_value);
    w.EndObject();
  };
  const char* hash_key = deployed ? "pod-template-hash" : "";
  w.StartObject();
  StartMeta(w, wl.kind, wl.ns, wl.name, wl.uid, rv, wl.generation, wl.created_at);
  w.Key("labels");
  WriteLabels(w, tlabels, hash_key, wl.hash);
  if (deployed) {
    // What the Deployment controller puts on its ReplicaSets.
    w.Key("annotations");
    w.StartObject();
    w.Key("deployment.kubernetes.io/desired-replicas");
    ds::WriteString(w, std::to_string(wl.replicas));
    w.Key("deployment.kubernetes.io/max-replicas");
    ds::WriteString(w, std::to_string(wl.replicas + (wl.replicas + 3) / 4));
    w.Key("deployment.kubernetes.io/revision");
    w.String("1");
    w.EndObject();
    w.Key("ownerReferences");
    w.StartArray();
    w.StartObject();
    w.Key("apiVersion");
    w.String("apps/v1");
    w.Key("kind");
    w.String("Deployment");
    w.Key("name");
    ds::WriteString(w, wl.deployment);
    w.Key("uid");
    ds::WriteString(w, deployments_.at(Key(wl.ns, wl.deployment)).uid);
    w.Key("controller");
    w.Bool(true);
    w.Key("blockOwnerDeletion");
    w.Bool(true);
    w.EndObject();
    w.EndArray();
  }
  w.EndObject();  // metadata
  w.Key("spec");
  w.StartObject();
  if (wl.kind == "ReplicaSet") {
    w.Key("replicas");
    w.Int(wl.replicas);
    write_selector(hash_key, wl.hash);
    write_template(hash_key, wl.hash);
  } else if (wl.kind == "StatefulSet") {
    w.Key("replicas");
    w.Int(wl.replicas);
    write_selector("", "");
    write_template("", "");
    w.Key("serviceName");
    ds::WriteString(w, wl.name);
    w.Key("podManagementPolicy");
    w.String("Parallel");  // the emulation starts all pods at once
    w.Key("updateStrategy");
    w.StartObject();
    w.Key("type");
    w.String("RollingUpdate");
    w.Key("rollingUpdate");
    w.StartObject();
    w.Key("partition");
    w.Int(0);
    w.EndObject();
    w.EndObject();
    w.Key("revisionHistoryLimit");
    w.Int(10);
    w.Key("persistentVolumeClaimRetentionPolicy");
    w.StartObject();
    w.Key("whenDeleted");
    w.String("Retain");
    w.Key("whenScaled");
    w.String("Retain");
    w.EndObject();
  } else {  // DaemonSet
    write_selector("", "");
    write_template("", "");
    w.Key("updateStrategy");
    w.StartObject();
    w.Key("type");
    w.String("RollingUpdate");
    w.Key("rollingUpdate");
    w.StartObject();
    w.Key("maxUnavailable");
    w.Int(1);
    w.Key("maxSurge");
    w.Int(0);
    w.EndObject();
    w.EndObject();
    w.Key("revisionHistoryLimit");
    w.Int(10);
  }
  w.EndObject();  // spec
  w.Key("status");
  w.StartObject();
  if (wl.kind == "ReplicaSet") {
    w.Key("replicas");
    w.Int(active);
    IntIfSet(w, "fullyLabeledReplicas", active);
    IntIfSet(w, "readyReplicas", ready);
    IntIfSet(w, "availableReplicas", ready);
    w.Key("observedGeneration");
    w.Int64(wl.generation);
  } else if (wl.kind == "StatefulSet") {
    const std::string current = wl.name + "-" + wl.hash;
    // A rollout's new revision: any other name does.
    const std::string update =
        updating ? wl.name + "-" + wl.hash.substr(5) + wl.hash.substr(0, 5) : current;
    w.Key("observedGeneration");
    w.Int64(observed);
    w.Key("replicas");
    w.Int(active);
    IntIfSet(w, "readyReplicas", ready);
    IntIfSet(w, "currentReplicas", active - (updating ? updated : 0));
    IntIfSet(w, "updatedReplicas", updated);
    w.Key("currentRevision");
    ds::WriteString(w, current);
    w.Key("updateRevision");
    ds::WriteString(w, update);
    w.Key("collisionCount");
    w.Int(0);
    w.Key("availableReplicas");
    w.Int(ready);
  } else {
    w.Key("currentNumberScheduled");
    w.Int(active);
    w.Key("numberMisscheduled");
    w.Int(0);
    w.Key("desiredNumberScheduled");
    w.Int(wl.replicas);
    w.Key("numberReady");
    w.Int(ready);
    w.Key("observedGeneration");
    w.Int64(observed);
    IntIfSet(w, "updatedNumberScheduled", updated);
    IntIfSet(w, "numberAvailable", ready);
    IntIfSet(w, "numberUnavailable", std::max(0, wl.replicas - ready));
  }
  w.EndObject();  // status
  w.EndObject();
  return sb.GetString();
}

std::string PodStore::RenderDeployment(const Deployment& dep, uint64_t rv) const {
  // Its ReplicaSets; the newest applied one is the "new" ReplicaSet whose template the
  // Deployment has.
  const Workload* newest = nullptr;
  int replicas = 0, ready = 0, spec_sum = 0, newest_active = 0;
  for (const auto& [k, wl] : workloads_) {
    if (wl.ns != dep.ns || wl.deployment != dep.name) continue;
    int a = 0, r = 0;
    CountPods(k, &a, &r);
    replicas += a;
    ready += r;
    spec_sum += wl.replicas;
    if (newest == nullptr || wl.applied > newest->applied) {
      newest = &wl;
      newest_active = a;
    }
  }
  Document t;
  t.Parse(newest != nullptr ? newest->template_json.c_str() : "{}");
  const Value* tlabels = rapidjson::Pointer("/metadata/labels").Get(t);
  const int desired = newest != nullptr ? newest->replicas : 0;
  const bool rolling = dep.rollout.active;
  const int64_t observed = rolling && !dep.rollout.observed ? dep.generation - 1 : dep.generation;
  const int updated =
      rolling && dep.rollout.observed ? std::min(dep.rollout.updated, replicas) : newest_active;
  const int max_unavailable = desired * 25 / 100;  // 25%, rounded down
  const bool available = ready >= desired - max_unavailable;
  const bool complete = !rolling && updated == desired && replicas == desired && ready == desired;
  const std::string rs_name = newest != nullptr ? newest->name : dep.name;
  rapidjson::StringBuffer sb;
  ds::JsonWriter w(sb);
  w.StartObject();
  StartMeta(w, "Deployment", dep.ns, dep.name, dep.uid, rv, dep.generation, dep.created_at);
  w.Key("labels");
  WriteLabels(w, tlabels, "", "");
  w.Key("annotations");
  w.StartObject();
  w.Key("deployment.kubernetes.io/revision");
  w.String("1");
  w.EndObject();
  w.EndObject();  // metadata
  w.Key("spec");
  w.StartObject();
  w.Key("replicas");
  w.Int(desired);
  w.Key("selector");
  w.StartObject();
  w.Key("matchLabels");
  WriteLabels(w, tlabels, "", "");
  w.EndObject();
  w.Key("template");
  w.StartObject();
  w.Key("metadata");
  w.StartObject();
  w.Key("labels");
  WriteLabels(w, tlabels, "", "");
  w.EndObject();
  w.Key("spec");
  if (const Value* s = ds::JsonMember(t, "spec")) {
    s->Accept(w);
  } else {
    w.StartObject();
    w.EndObject();
  }
  w.EndObject();
  w.Key("strategy");
  w.StartObject();
  w.Key("type");
  w.String("RollingUpdate");
  w.Key("rollingUpdate");
  w.StartObject();
  w.Key("maxUnavailable");
  w.String("25%");
  w.Key("maxSurge");
  w.String("25%");
  w.EndObject();
  w.EndObject();
  w.Key("revisionHistoryLimit");
  w.Int(10);
  w.Key("progressDeadlineSeconds");
  w.Int(600);
  w.EndObject();  // spec
  w.Key("status");
  w.StartObject();
  w.Key("observedGeneration");
  w.Int64(observed);
  IntIfSet(w, "replicas", replicas);
  IntIfSet(w, "updatedReplicas", updated);
  IntIfSet(w, "readyReplicas", ready);
  IntIfSet(w, "availableReplicas", ready);
  IntIfSet(w, "unavailableReplicas", std::max(0, spec_sum - ready));
  w.Key("conditions");
  w.StartArray();
  WriteCondition(w, "Available", available, dep.created_at,
                 available ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
                 available ? "Deployment has minimum availability."
                           : "Deployment does not have minimum availability.");
  WriteCondition(w, "Progressing", true, dep.created_at,
                 complete ? "NewReplicaSetAvailable" : "ReplicaSetUpdated",
                 "ReplicaSet \"" + rs_name +
                     (complete ? "\" has successfully progressed." : "\" is progressing."));
  w.EndArray();
  w.EndObject();  // status
  w.EndObject();
  return sb.GetString();
}

void PodStore::RecomputeApps() {
  if (dirty_.empty()) return;
  // An object whose JSON at its old resourceVersion changed takes the next one.
  for (const auto& key : dirty_) {
    auto it = workloads_.find(key);
    if (it == workloads_.end()) continue;
    Workload& wl = it->second;
    if (RenderWorkload(key, wl, wl.rv) == wl.json) continue;
    wl.rv = cluster_->NextRv();
    wl.json = RenderWorkload(key, wl, wl.rv);
  }
  dirty_.clear();
  // Deployments are few: each follows its ReplicaSets whenever any workload changed.
  for (auto& [key, dep] : deployments_) {
    if (RenderDeployment(dep, dep.rv) == dep.json) continue;
    dep.rv = cluster_->NextRv();
    dep.json = RenderDeployment(dep, dep.rv);
  }
}

ApiError PodStore::GetApps(const std::string& resource, const std::string& ns,
                           const std::string& name, std::string* out) const {
  const Resource* res = ResourceOf(resource);
  ds::MutexLock l(&mu_);
  const std::string key = Key(ns, name);
  if (resource == "deployments") {
    auto it = deployments_.find(key);
    if (it == deployments_.end()) return res->NotFound(name);
    *out = it->second.json;
    return {};
  }
  auto it = workloads_.find(key);
  if (res == nullptr || it == workloads_.end() || it->second.kind != KindOf(resource))
    return res != nullptr ? res->NotFound(name) : Err(404, "NotFound", "no such resource");
  *out = it->second.json;
  return {};
}

std::vector<std::string> PodStore::ListApps(const std::string& resource, const std::string& ns,
                                            const ds::LabelSelector& labels,
                                            const FieldSelector& fields, uint64_t* list_rv) const {
  const std::string kind = KindOf(resource);
  ds::MutexLock l(&mu_);
  *list_rv = cluster_->CurrentRv();
  std::vector<std::pair<std::string, const std::string*>> objects;  // key, json
  if (kind == "Deployment") {
    for (const auto& [k, d] : deployments_) objects.emplace_back(k, &d.json);
  } else {
    for (const auto& [k, w] : workloads_)
      if (w.kind == kind) objects.emplace_back(k, &w.json);
  }
  std::vector<std::string> out;
  for (const auto& [k, json] : objects) {
    PodKeys keys;
    keys.fields["metadata.namespace"] = k.substr(0, k.find('/'));
    keys.fields["metadata.name"] = k.substr(k.find('/') + 1);
    if (!ns.empty() && keys.fields["metadata.namespace"] != ns) continue;
    if (!fields.Matches(keys)) continue;
    Document d;
    d.Parse(json->c_str());
    if (const Value* l = rapidjson::Pointer("/metadata/labels").Get(d); l && l->IsObject())
      for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it)
        keys.labels.emplace_back(it->name.GetString(),
                                 it->value.IsString() ? it->value.GetString() : "");
    if (labels.Matches(keys.labels)) out.push_back(*json);
  }
  return out;
}

ApiError PodStore::SetRollout(const std::string& body, std::string* out) {
  Document d;
  d.Parse(body.c_str());
  if (d.HasParseError() || !d.IsObject()) return Err(400, "BadRequest", "invalid JSON body");
  const std::string kind = ds::JsonString(d, "kind", "Deployment");
  const std::string ns = ds::JsonString(d, "namespace", "default");
  const std::string name = ds::JsonString(d, "name");
  const Value* done = ds::JsonMember(d, "done");
  const Value* observed = ds::JsonMember(d, "observed");
  const Value* updated = ds::JsonMember(d, "updatedReplicas");
  if (kind != "Deployment" && kind != "StatefulSet" && kind != "DaemonSet")
    return Err(400, "BadRequest", "kind must be Deployment, StatefulSet or DaemonSet");
  ds::MutexLock l(&mu_);
  const std::string key = Key(ns, name);
  Rollout* rollout = nullptr;
  int64_t* generation = nullptr;
  if (kind == "Deployment") {
    auto it = deployments_.find(key);
    if (it == deployments_.end()) return kDeployments.NotFound(name);
    rollout = &it->second.rollout;
    generation = &it->second.generation;
  } else {
    auto it = workloads_.find(key);
    if (it == workloads_.end() || it->second.kind != kind)
      return (kind == "StatefulSet" ? kStatefulSets : kDaemonSets).NotFound(name);
    rollout = &it->second.rollout;
    generation = &it->second.generation;
  }
  if (done != nullptr && done->IsBool() && done->GetBool()) {
    *rollout = Rollout{};
  } else {
    if (!rollout->active) ++*generation;  // the spec change that starts it
    rollout->active = true;
    rollout->observed = !(observed != nullptr && observed->IsBool() && !observed->GetBool());
    rollout->updated = updated != nullptr && updated->IsInt() ? std::max(0, updated->GetInt()) : 0;
  }
  dirty_.insert(key);
  RecomputeApps();
  *out = kind == "Deployment" ? deployments_.at(key).json : workloads_.at(key).json;
  return {};
}

}  // namespace sim
