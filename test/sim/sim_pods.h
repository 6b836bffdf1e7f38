// Pods, policy/v1 PodDisruptionBudgets, the eviction subresource, and the controllers the
// simulator stands in for: a ReplicaSet-like workload emulation, the scheduler (the pure model in
// test/sched/scheduler_model.h), the kubelet (binds -> Running/Ready after a start delay, graceful
// deletion ends after a simulated grace) and the disruption controller (PDB status). Semantics
// follow kube-apiserver (pkg/registry/core/pod/storage/eviction.go) and kube-controller-manager
// (pkg/controller/disruption/disruption.go); see each method.
//
// Thread-safe. Shares the cluster-wide resourceVersion with the Node store (Store::NextRv). Lock
// order: PodStore::mu_ before Store's mutex. HTTP lives in sim_server_pods.cc.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/label_selector.h"
#include "common/mutex.h"
#include "test/sim/sim_store.h"

namespace sim {

// The fields a pod can be selected by (field selectors) and its labels.
struct PodKeys {
  std::map<std::string, std::string> fields;  // metadata.name, spec.nodeName, status.phase, ...
  ds::Labels labels;
};

// A parsed field selector: "spec.nodeName=n1,status.phase!=Failed" ("==" is "=").
struct FieldSelector {
  struct Req {
    std::string field, value;
    bool equal = true;
  };
  std::vector<Req> reqs;
  bool Matches(const PodKeys& k) const;
};
// Fails (with the API server's words) on syntax errors and fields pods cannot be selected by.
bool ParseFieldSelector(const std::string& text, FieldSelector* out, std::string* error);
// The same for another kind, whose selectable fields are `fields` (Events: sim_events.h).
bool ParseFieldSelector(const std::string& text, const std::vector<std::string>& fields,
                        FieldSelector* out, std::string* error);

struct PodEvent {
  uint64_t rv = 0;
  std::string type;  // ADDED, MODIFIED, DELETED
  std::string json;
  PodKeys old_keys, new_keys;
  bool had_old = false;  // MODIFIED/DELETED: old_keys are valid
};

class VolumeStore;

struct PodStoreOptions {
  size_t window = 20000;       // pod watch events kept
  double grace_seconds = 1;    // simulated time a graceful deletion takes (0: at once)
  double start_seconds = 0.5;  // bound pod -> Running and Ready after this long
};

class PodStore {
 public:
  PodStore(Store* cluster, PodStoreOptions options);

  // The claims and volumes the scheduler model reads (VolumeBinding); not owned. Without them a
  // pod with a persistentVolumeClaim volume stays Pending (its claim is not found).
  // REQUIRES: called before Tick or ExplainSchedule first runs.
  void UseVolumes(const VolumeStore* volumes) { volumes_ = volumes; }

  // --- Pods (ns "" in ListPods: all namespaces). Errors are the API server's Status. ---
  // A page of matching pods in etcd key order (namespace, name) after `after` ("ns/name").
  std::vector<std::string> ListPods(const std::string& ns, const ds::LabelSelector& labels,
                                    const FieldSelector& fields, size_t limit,
                                    const std::string& after, std::string* next, uint64_t* list_rv,
                                    size_t* remaining) const;
  ApiError GetPod(const std::string& ns, const std::string& name, std::string* out) const;
  // Validates (422 Invalid with causes), fills server defaults, stores as Pending; the scheduler
  // model binds it on the next Tick unless spec.nodeName is set.
  ApiError CreatePod(const std::string& ns, const std::string& body, std::string* out);
  // Graceful deletion: sets deletionTimestamp and deletionGracePeriodSeconds (MODIFIED); the pod
  // goes away (DELETED) after min(grace, grace_seconds). Grace 0, unbound and terminal pods go at
  // once. `body` is an optional DeleteOptions (gracePeriodSeconds, preconditions).
  ApiError DeletePod(const std::string& ns, const std::string& name, const std::string& body,
                     std::string* out);
  // POST pods/NAME/eviction: 201 Status on success, 429 when the one matching PDB allows no
  // disruption, 500 when several PDBs match, 404 for a missing pod. *code is the HTTP code to
  // answer with (also for the 500, which is a Status body without reason, as the real server's).
  ApiError Evict(const std::string& ns, const std::string& name, const std::string& body,
                 std::string* out, int* code);

  // --- PodDisruptionBudgets (ns "" in List: all namespaces) ---
  std::vector<std::string> ListPdbs(const std::string& ns, uint64_t* list_rv) const;
  ApiError GetPdb(const std::string& ns, const std::string& name, std::string* out) const;
  ApiError CreatePdb(const std::string& ns, const std::string& body, std::string* out);
  ApiError ReplacePdb(const std::string& ns, const std::string& name, const std::string& body,
                      std::string* out);
  ApiError DeletePdb(const std::string& ns, const std::string& name, std::string* out);

  // --- Workloads (test admin API; a ReplicaSet stand-in) ---
  // {"namespace","name","replicas","template":{"metadata":{"labels"},"spec":{...}}}: creates or
  // updates; its pods carry an ownerReference (ReplicaSet, controller: true) and a deleted or
  // evicted pod is replaced.
  ApiError ApplyWorkload(const std::string& body, std::string* out);
  ApiError DeleteWorkload(const std::string& ns, const std::string& name);
  std::string WorkloadsJson() const;
  // The scheduler model's verdict for a pod spec (JSON Pod), without binding: {"node", "scores"}.
  // Or, for {"pod": Pod, "bound": [Pod...]}, the verdict with the bound ones of `bound` (those
  // with a spec.nodeName) as the pods on the nodes instead of the stored pods.
  std::string ExplainSchedule(const std::string& pod_json) const;

  // Runs the controllers once: ends graceful deletions whose time has come, reconciles workloads,
  // schedules pending pods, starts bound pods, recomputes PDB status. Call every ~100 ms.
  void Tick();

  // Pod watch events with rv > from (waiting up to timeout_ms); *expired when `from` is older than
  // the window. Returns the newest resourceVersion.
  uint64_t EventsAfter(uint64_t from, int timeout_ms, std::vector<PodEvent>* out, bool* expired);
  void WakeAll();
  void Compact();  // forget pod events (every pod watch gets 410)
  uint64_t compacted_rv() const;
  size_t size() const;

 private:
  struct StoredPod {
    std::string json;
    PodKeys keys;
    uint64_t rv = 0;
    std::string owner;      // workload "ns/name", "" for bare pods
    double gone_at = 0;     // steady seconds when a terminating pod disappears (0: not deleting)
    double running_at = 0;  // steady seconds when a bound pod becomes Running
  };
  struct Pdb {
    std::string json;
    uint64_t rv = 0;
  };
  struct Workload {
    std::string ns, name, uid, template_json;
    int replicas = 0;
    uint64_t created = 0;  // pods created so far (name suffixes)
  };

  ApiError CreateLocked(const std::string& ns, const std::string& body, std::string* out)
      REQUIRES(mu_);
  void CommitPod(const std::string& key, const std::string& type, std::string json) REQUIRES(mu_);
  ApiError DeleteLocked(const std::string& key, double grace_override, bool has_override,
                        std::string* out) REQUIRES(mu_);
  void Reconcile() REQUIRES(mu_);
  // Sets a pod's workload and keeps by_owner_ in step.
  void SetOwner(const std::string& key, const std::string& owner) REQUIRES(mu_);
  // Keeps unbound_ and ticking_ in step with a stored pod (after its keys or gone_at change).
  void Index(const std::string& key, const StoredPod& p) REQUIRES(mu_);
  void RecomputePdbs() REQUIRES(mu_);
  std::string PdbStatus(const std::string& pdb_json, const std::string& ns) const REQUIRES(mu_);
  // Reads and counts in *w only: ApplyWorkload probes a template with it before taking mu_.
  std::string NewPodFromWorkload(Workload* w);

  Store* const cluster_;
  const PodStoreOptions options_;
  const VolumeStore* volumes_ = nullptr;  // set before the controllers run
  mutable ds::Mutex mu_;
  ds::CondVar cv_;
  std::map<std::string, StoredPod> pods_ GUARDED_BY(mu_);  // "ns/name"
  // Indexes of pods_ (keys, in pods_' order), so that a write or a Tick does not scan every pod:
  // at 300,000 pods that made creating them quadratic. by_owner_: workload "ns/name" -> its pods;
  // unbound_: spec.nodeName empty (the scheduler's candidates); ticking_: Pending or terminating
  // (what Tick looks at).
  std::map<std::string, std::set<std::string>> by_owner_ GUARDED_BY(mu_);
  std::set<std::string> unbound_ GUARDED_BY(mu_);
  std::set<std::string> ticking_ GUARDED_BY(mu_);
  std::map<std::string, Pdb> pdbs_ GUARDED_BY(mu_);            // "ns/name"
  std::map<std::string, Workload> workloads_ GUARDED_BY(mu_);  // "ns/name"
  std::deque<PodEvent> events_ GUARDED_BY(mu_);
  uint64_t last_rv_ GUARDED_BY(mu_) = 0;  // newest pod event's rv
  uint64_t compacted_rv_ GUARDED_BY(mu_) = 0;
  uint64_t uid_counter_ GUARDED_BY(mu_) = 0;
};

}  // namespace sim
