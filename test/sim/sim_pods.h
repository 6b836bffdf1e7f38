// Pods, policy/v1 PodDisruptionBudgets, the eviction subresource, and the controllers the
// simulator stands in for: workload emulations served as apps/v1 Deployments, ReplicaSets,
// StatefulSets and DaemonSets (sim_apps.cc), KubeVirt's eviction webhook for VM launchers, the
// scheduler (the pure model in test/sched/scheduler_model.h), the kubelet (binds -> Running/Ready
// after a start delay, graceful deletion ends after a simulated grace) and the disruption
// controller (PDB status). Semantics
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
  size_t window = 20000;         // pod watch events kept
  double grace_seconds = 1;      // simulated time a graceful deletion takes (0: at once)
  double start_seconds = 0.5;    // bound pod -> Running and Ready after this long
  double migration_seconds = 5;  // a VM launcher's live migration (background eviction) takes
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

  // --- Workloads (test admin API; the stand-ins for the apps/v1 controllers) ---
  // {"namespace","name","replicas","template":{"metadata":{"labels"},"spec":{...}}}: creates or
  // updates; its pods carry an ownerReference (ReplicaSet, controller: true) and a deleted or
  // evicted pod is replaced. Optional keys:
  //   "kind": "ReplicaSet" (default), "StatefulSet" (pods NAME-0..NAME-n-1, a gone pod comes back
  //     under its name) or "DaemonSet" (one pod per node the template can run on, pinned to it
  //     with a matchFields node affinity, as the DaemonSet controller does; "replicas" ignored);
  //   "deployment": "web" (ReplicaSets only): the ReplicaSet is owned by Deployment "web" (created
  //     when missing; its status sums its ReplicaSets', "updatedReplicas" being the newest one's);
  //     NAME defaults to web-<pod-template-hash>, and pods carry the pod-template-hash label.
  // The workload is served as the apps/v1 object of its kind (see GetApps), its status following
  // its pods. 400 for a malformed body, 409 when NAME exists as another kind, 422 for a template
  // that would not make a valid pod.
  ApiError ApplyWorkload(const std::string& body, std::string* out);
  // Deletes the workload and (gracefully) its pods; a Deployment left without ReplicaSets goes
  // too. `name` may also be a Deployment's (its ReplicaSets go with it).
  ApiError DeleteWorkload(const std::string& ns, const std::string& name);
  std::string WorkloadsJson() const;
  // A rollout of a Deployment, StatefulSet or DaemonSet (test admin API), frozen until ended:
  // {"kind","namespace","name","observed":true,"updatedReplicas":N}. Starting one bumps
  // metadata.generation (a spec change); "observed": false keeps status.observedGeneration
  // behind it ("waiting for the spec update to be observed"), otherwise the status shows
  // updatedReplicas (updatedNumberScheduled) N, default 0, below the replicas, and for a
  // StatefulSet an updateRevision other than its currentRevision. {..., "done": true} ends it:
  // observedGeneration catches up and every replica counts as updated. 404 when the object is
  // missing, 400 for another kind.
  ApiError SetRollout(const std::string& body, std::string* out);

  // --- apps/v1 objects: deployments, replicasets, statefulsets, daemonsets ---
  // `resource` is the plural. 404 NotFound `deployments.apps "NAME" not found`.
  ApiError GetApps(const std::string& resource, const std::string& ns, const std::string& name,
                   std::string* out) const;
  // Every object of the resource (ns "": all namespaces), in (namespace, name) order, matching
  // `labels` (their metadata.labels) and `fields` (metadata.name, metadata.namespace).
  std::vector<std::string> ListApps(const std::string& resource, const std::string& ns,
                                    const ds::LabelSelector& labels, const FieldSelector& fields,
                                    uint64_t* list_rv) const;

  // --- Background eviction of VM launchers (KubeVirt's eviction webhook) ---
  // A pod is a VM launcher when it has the label kubevirt.io=virt-launcher and the annotation
  // kubevirt.io/domain (the VMI's name), as KubeVirt's virt-api webhook checks, or the annotation
  // sim.dynamic-scheduler.io/live-migration-seconds (then the VMI is named by kubevirt.io/domain,
  // else by the pod). Evicting a running launcher is refused as KubeVirt's webhook refuses it:
  // 429, no reason, message `admission webhook "virt-launcher-eviction-interceptor.kubevirt.io"
  // denied the request: Eviction triggered evacuation of VMI "NS/VMI"` (prefixed "Evacuation in
  // progress: " while one runs); the pod gets the annotation
  // descheduler.alpha.kubernetes.io/eviction-in-progress: "true" and is deleted gracefully when
  // the migration ends (after the pod's sim.dynamic-scheduler.io/live-migration-seconds, else
  // PodStoreOptions::migration_seconds); its workload then replaces it. An eviction with
  // deleteOptions.dryRun ["All"] gets the same answer and starts nothing.
  // Ends a migration now (`abort`: without deleting the pod, taking the annotation off, as a
  // cancelled evacuation). 404 when no migration of that pod runs.
  ApiError EndMigration(const std::string& ns, const std::string& name, bool abort);
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
    std::string owner;       // workload "ns/name", "" for bare pods
    double gone_at = 0;      // steady seconds when a terminating pod disappears (0: not deleting)
    double running_at = 0;   // steady seconds when a bound pod becomes Running
    double migrated_at = 0;  // steady seconds when its live migration ends (0: none runs)
    bool ready = false;      // condition Ready is True
    bool terminal = false;   // phase Succeeded or Failed
  };
  // A rollout frozen by SetRollout.
  struct Rollout {
    bool active = false;
    bool observed = true;  // status.observedGeneration has caught up with the new generation
    int updated = 0;       // updatedReplicas while active and observed
  };
  struct Pdb {
    std::string json;
    uint64_t rv = 0;
  };
  struct Workload {
    std::string kind = "ReplicaSet";  // or StatefulSet, DaemonSet
    std::string ns, name, uid, template_json;
    int replicas = 0;        // spec.replicas; a DaemonSet's: the nodes it should run on
    uint64_t created = 0;    // pods created so far (name suffixes)
    std::string deployment;  // the owning Deployment's name (ReplicaSets), "" none
    std::string hash;        // pod-template-hash (controller-revision-hash)
    std::string created_at;  // metadata.creationTimestamp
    int64_t generation = 1;
    uint64_t applied = 0;  // order of the last ApplyWorkload (a Deployment's newest ReplicaSet)
    Rollout rollout;
    std::string json;  // the apps/v1 object as served ("" until first rendered)
    uint64_t rv = 0;
    std::map<std::string, std::string> pinned;  // DaemonSet: pod key -> its node
    bool deleted = false;                       // being deleted: no pods wanted
  };
  struct Deployment {
    std::string ns, name, uid, created_at;
    int64_t generation = 1;
    Rollout rollout;
    std::string json;
    uint64_t rv = 0;
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
  // `name`: the pod's name (StatefulSets), else the workload's name and a random suffix; `node`:
  // the node a DaemonSet pod is pinned to.
  std::string NewPodFromWorkload(Workload* w, const std::string& name = "",
                                 const std::string& node = "");
  // The workload controllers' step for one workload (creates and deletes pods).
  void ReconcileWorkload(const std::string& wkey, Workload* w) REQUIRES(mu_);
  // Re-renders the apps/v1 objects whose pods or spec changed (a new resourceVersion when their
  // JSON changed); dirty_ names the workloads to look at.
  void RecomputeApps() REQUIRES(mu_);
  std::string RenderWorkload(const std::string& wkey, const Workload& w, uint64_t rv) const
      REQUIRES(mu_);
  std::string RenderDeployment(const Deployment& d, uint64_t rv) const REQUIRES(mu_);
  // The replica counts of a workload's pods: active (not terminating, not terminal), ready.
  void CountPods(const std::string& wkey, int* active, int* ready) const REQUIRES(mu_);
  // The eviction answer of KubeVirt's webhook for a VM launcher pod; false when `pod` is none
  // (or not running: the webhook lets completed pods through).
  bool LauncherEviction(const std::string& key, const rapidjson::Value& pod, bool dry_run,
                        ApiError* answer) REQUIRES(mu_);

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
  std::map<std::string, Pdb> pdbs_ GUARDED_BY(mu_);                // "ns/name"
  std::map<std::string, Workload> workloads_ GUARDED_BY(mu_);      // "ns/name"
  std::map<std::string, Deployment> deployments_ GUARDED_BY(mu_);  // "ns/name"
  std::set<std::string> dirty_ GUARDED_BY(mu_);      // workloads whose object may have changed
  std::set<std::string> migrating_ GUARDED_BY(mu_);  // pods whose live migration runs
  uint64_t applies_ GUARDED_BY(mu_) = 0;
  std::deque<PodEvent> events_ GUARDED_BY(mu_);
  uint64_t last_rv_ GUARDED_BY(mu_) = 0;  // newest pod event's rv
  uint64_t compacted_rv_ GUARDED_BY(mu_) = 0;
  uint64_t uid_counter_ GUARDED_BY(mu_) = 0;
};

}  // namespace sim
