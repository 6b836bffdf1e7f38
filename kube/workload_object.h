// The slice of a pod's workload (apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet) and of its
// namespace's HorizontalPodAutoscalers (autoscaling/v2) that says whether someone else is already
// moving the workload's pods: a rollout in progress, or an autoscaler about to scale it down. An
// eviction on top of either adds disruption that nobody asked for (rebalance/disruptors.h).
// Decoders of the API's wire forms; pure functions of bytes.
//
// The rollout checks and the HPA's "scaling down" are inline: the pure decisions of rebalance/
// read them without the client's library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

// One workload object as GET returns it, reduced to what `kubectl rollout status` reads.
struct WorkloadStatus {
  std::string kind;  // Deployment, ReplicaSet, StatefulSet or DaemonSet
  std::string ns, name, uid;
  // The controller ownerReference (controller: true): a ReplicaSet's Deployment. Empty kind: none.
  std::string owner_kind, owner_name, owner_api_version;
  int64_t generation = 0;           // metadata.generation
  int64_t observed_generation = 0;  // status.observedGeneration (0: not observed yet)
  // spec.replicas; unset for a DaemonSet, and where the object leaves it out (kubectl then skips
  // the checks that compare with it).
  std::optional<int32_t> spec_replicas;
  // status of a Deployment, ReplicaSet or StatefulSet (an absent field is 0, as the API omits it).
  int32_t replicas = 0, updated_replicas = 0, ready_replicas = 0, available_replicas = 0;
  // Deployment: its Progressing condition says ProgressDeadlineExceeded (kubectl: a failed
  // rollout, never "done").
  bool progress_deadline_exceeded = false;
  // StatefulSet and DaemonSet: spec.updateStrategy.type; absent is RollingUpdate (the apps/v1
  // default). OnDelete: kubectl reports no rollout to wait for.
  std::string update_strategy = "RollingUpdate";
  // StatefulSet: spec.updateStrategy.rollingUpdate is present, and its partition (when set).
  bool rolling_update_set = false;
  std::optional<int32_t> partition;
  std::string current_revision, update_revision;  // StatefulSet status
  // DaemonSet status.
  int32_t desired_number_scheduled = 0, updated_number_scheduled = 0, number_available = 0;

  // "namespace/Kind/name", as PodInfo::Workload() names a pod's owner.
  std::string Key() const { return ns + "/" + kind + "/" + name; }

  // What the rollout is waiting for, "" when it is done (or there is none to wait for). Follows
  // kubectl's StatusViewer for each kind (kubernetes staging/src/k8s.io/kubectl/pkg/
  // polymorphichelpers/rollout_status.go); kubectl has none for a ReplicaSet, which is judged as
  // a Deployment's replicas are (its own spec observed, every replica there and available).
  // `availability` false: only what replaces pods (a template not observed or not rolled out to
  // every replica, old replicas still there, revisions apart), not replicas that are merely not
  // ready or available (a crash-looping pod, one just started): those are a
  // PodDisruptionBudget's business, and would keep the workload's pods in place for ever.
  std::string RolloutWaitingFor(bool availability = true) const {
    auto n = [](int64_t v) { return std::to_string(v); };
    if (kind == "Deployment") {
      if (generation > observed_generation) return "spec update to be observed";
      if (progress_deadline_exceeded) return "progress deadline exceeded";
      if (spec_replicas && updated_replicas < *spec_replicas)
        return n(updated_replicas) + " of " + n(*spec_replicas) + " new replicas updated";
      if (replicas > updated_replicas)
        return n(replicas - updated_replicas) + " old replicas pending termination";
      if (availability && available_replicas < updated_replicas)
        return n(available_replicas) + " of " + n(updated_replicas) + " updated replicas available";
      return "";
    }
    if (kind == "ReplicaSet") {
      if (generation > observed_generation) return "spec update to be observed";
      if (spec_replicas && replicas != *spec_replicas)
        return n(replicas) + " of " + n(*spec_replicas) + " replicas";
      if (availability && spec_replicas && available_replicas < *spec_replicas)
        return n(available_replicas) + " of " + n(*spec_replicas) + " replicas available";
      return "";
    }
    if (kind == "StatefulSet") {
      if (update_strategy != "RollingUpdate") return "";
      if (observed_generation == 0 || generation > observed_generation)
        return "spec update to be observed";
      if (availability && spec_replicas && ready_replicas < *spec_replicas)
        return n(*spec_replicas - ready_replicas) + " pods to be ready";
      if (rolling_update_set) {
        if (spec_replicas && partition && updated_replicas < *spec_replicas - *partition)
          return n(updated_replicas) + " of " + n(*spec_replicas - *partition) +
                 " new pods updated (partitioned)";
        return "";
      }
      if (update_revision != current_revision) return "pods at revision " + update_revision;
      return "";
    }
    if (kind == "DaemonSet") {
      if (update_strategy != "RollingUpdate") return "";
      if (generation > observed_generation) return "spec update to be observed";
      if (updated_number_scheduled < desired_number_scheduled)
        return n(updated_number_scheduled) + " of " + n(desired_number_scheduled) +
               " new pods updated";
      if (availability && number_available < desired_number_scheduled)
        return n(number_available) + " of " + n(desired_number_scheduled) +
               " updated pods available";
      return "";
    }
    return "";
  }
  bool RolloutInProgress() const { return !RolloutWaitingFor().empty(); }
  // A rollout that replaces pods is under way (RolloutWaitingFor(false)): the rebalancer leaves
  // the workload's pods to it.
  bool ReplacingPods() const { return !RolloutWaitingFor(false).empty(); }
};

// One HorizontalPodAutoscaler (autoscaling/v2).
struct Autoscaler {
  std::string ns, name;
  // spec.scaleTargetRef: what it scales (kind and name; apiVersion as written, e.g. apps/v1).
  std::string target_kind, target_name, target_api_version;
  // status.currentReplicas and status.desiredReplicas (0 when absent: not yet computed).
  int32_t current_replicas = 0, desired_replicas = 0;

  // The autoscaler has decided on fewer replicas than there are: the workload's controller is
  // about to delete some of its pods.
  bool ScalingDown() const { return desired_replicas < current_replicas; }
  // Does it scale the workload `kind`/`name` (of its own namespace)?
  bool Targets(const std::string& kind, const std::string& name) const {
    return target_kind == kind && target_name == name;
  }
};

// Decodes one Deployment, ReplicaSet, StatefulSet or DaemonSet (GET
// /apis/apps/v1/namespaces/NS/<plural>/NAME). `kind` is the kind asked for: a body that names
// another is an error, as is a field of the wrong type (the error names the field).
StatusOr<WorkloadStatus> DecodeWorkload(std::string body, const std::string& kind);
// Decodes a HorizontalPodAutoscalerList (GET
// /apis/autoscaling/v2/namespaces/NS/horizontalpodautoscalers). Errors name the field.
StatusOr<std::vector<Autoscaler>> DecodeAutoscalerList(std::string body);

// The resource (URL path segment) of a workload kind: "deployments", "replicasets",
// "statefulsets", "daemonsets"; "" for any other kind.
std::string WorkloadResource(const std::string& kind);

}  // namespace ds
