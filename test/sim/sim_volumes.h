// core/v1 PersistentVolumeClaims (namespaced) and PersistentVolumes (cluster-scoped) in the
// simulator, with the part of the PV controller (pkg/controller/volume/persistentvolume) that a
// scheduler and a rebalancer see: a claim whose spec.volumeName names an existing volume is bound
// (status.phase Bound, the annotation pv.kubernetes.io/bind-completed, status.accessModes and
// status.capacity from the volume) and its volume too (status.phase Bound, spec.claimRef when
// absent); a claim whose bound volume is gone is Lost, a volume whose claim is gone Released;
// the rest are Pending claims and Available volumes. Dynamic provisioning, matching claims to
// volumes by size and class, and StorageClasses are not modelled: a claim without
// spec.volumeName stays Pending.
//
// Objects keep their spec as given (no defaulting); the server fills metadata.uid,
// creationTimestamp and resourceVersion (the cluster-wide counter, Store::NextRv). Deletes take
// effect at once (the real server's kubernetes.io/pvc-protection and pv-protection finalizers,
// which hold a claim in use or a bound volume, are not modelled). No watches.
//
// Thread-safe. Lock order: PodStore::mu_ before VolumeStore::mu_ before Store's mutex. HTTP lives
// in sim_server_volumes.cc.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/label_selector.h"
#include "common/mutex.h"
#include "test/sched/scheduler_model.h"
#include "test/sim/sim_pods.h"
#include "test/sim/sim_store.h"

namespace sim {

class VolumeStore {
 public:
  explicit VolumeStore(Store* cluster) : cluster_(cluster) {}

  // The selectable fields of both kinds (the generic metadata.name and metadata.namespace).
  static const std::vector<std::string>& SelectableFields();

  // POST /api/v1/namespaces/NS/persistentvolumeclaims. On success *out is the stored object.
  // Errors in the API server's words: 400 (undecodable body, metadata.namespace other than NS),
  // 422 Invalid (metadata.name missing or not a DNS subdomain, labels, spec.accessModes empty,
  // spec.resources.requests.storage missing), 409 AlreadyExists.
  ApiError CreateClaim(const std::string& ns, const std::string& body, std::string* out);
  // 404 NotFound `persistentvolumeclaims "NAME" not found`.
  ApiError GetClaim(const std::string& ns, const std::string& name, std::string* out) const;
  // *out is the deleted object. 404 when missing.
  ApiError DeleteClaim(const std::string& ns, const std::string& name, std::string* out);
  // Matching claims (ns "": all namespaces) in (namespace, name) order.
  std::vector<std::string> ListClaims(const std::string& ns, const ds::LabelSelector& labels,
                                      const FieldSelector& fields, uint64_t* list_rv) const;

  // POST /api/v1/persistentvolumes: as CreateClaim, with the volume's checks (spec.accessModes,
  // spec.capacity, exactly one volume source); metadata.namespace is dropped (cluster-scoped).
  ApiError CreateVolume(const std::string& body, std::string* out);
  ApiError GetVolume(const std::string& name, std::string* out) const;
  ApiError DeleteVolume(const std::string& name, std::string* out);
  std::vector<std::string> ListVolumes(const ds::LabelSelector& labels, const FieldSelector& fields,
                                       uint64_t* list_rv) const;

  // Every claim and volume as the scheduler model reads them.
  SchedVolumes Snapshot() const;

 private:
  struct Stored {
    std::string json;
    PodKeys keys;  // metadata.name, metadata.namespace and labels, for selectors
  };

  // The PV controller's sync over every claim and volume; rewrites (with a new resourceVersion)
  // the objects whose binding state changed.
  void SyncLocked() REQUIRES(mu_);
  // Stores a new or changed object with the next resourceVersion.
  void Put(std::map<std::string, Stored>* objects, const std::string& key, rapidjson::Document* d)
      REQUIRES(mu_);

  Store* const cluster_;
  mutable ds::Mutex mu_;
  std::map<std::string, Stored> claims_ GUARDED_BY(mu_);   // "ns/name"
  std::map<std::string, Stored> volumes_ GUARDED_BY(mu_);  // name
  uint64_t uid_counter_ GUARDED_BY(mu_) = 0;
};

}  // namespace sim
